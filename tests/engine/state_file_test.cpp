// KV state files (engine/state_file.h): a restored sequence continues bit for bit as one that
// never stopped (f32, f16 and q8_0 cells), a scheduler slot restored from a state serves the
// longest common prefix of a new prompt, and a state from another model or cell type, a corrupt,
// truncated or foreign file is refused with an error naming why.
#include "engine/state_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "core/hash.h"
#include "engine/runtime.h"
#include "engine/scheduler.h"
#include "engine_test_util.h"
#include "models/model.h"
#include "scheduler_test_util.h"
#include "test_util.h"
#include "tools/model_maker.h"

namespace minfer::engine {
namespace {

std::unique_ptr<Model> load_path(const std::string& path) {
  auto model = Model::load(path);
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

std::unique_ptr<Model> load_model(const std::string& name) {
  return load_path(test::test_data_path("models/" + name));
}

// One sequence (id 0) over a runtime of its own: the tokens its cells hold.
struct Sequence {
  std::unique_ptr<Runtime> runtime;
  std::vector<int32_t> tokens;

  // Appends `more` in one step; the logits after the last ([n_vocab]).
  std::vector<float> feed(const std::vector<int32_t>& more) {
    Batch batch;
    for (size_t i = 0; i < more.size(); ++i) {
      batch.add(more[i], static_cast<int32_t>(tokens.size() + i), 0, i + 1 == more.size());
    }
    auto logits = runtime->step(batch);
    EXPECT_TRUE(logits.is_ok()) << logits.status().message();
    tokens.insert(tokens.end(), more.begin(), more.end());
    return logits.is_ok() ? std::vector<float>(logits->begin(), logits->end())
                          : std::vector<float>{};
  }
  KvState capture(std::string app_data = {}) const {
    return capture_state(model_fingerprint(runtime->model()), runtime->cache(), 0, tokens,
                         std::move(app_data));
  }
  Status restore(const KvState& state) {
    MINFER_RETURN_IF_ERROR(restore_state(runtime->cache(), 0, state));
    tokens = state.tokens;
    return Status::ok();
  }
};

Sequence make_sequence(const Model& model, GgmlType cells, int64_t n_ctx = 256) {
  RuntimeOptions options;
  options.n_threads = 2;
  options.n_ctx = n_ctx;
  options.cache_type = cells;
  auto runtime = Runtime::create(model, options);
  EXPECT_TRUE(runtime.is_ok()) << runtime.status().message();
  return {runtime.is_ok() ? std::move(runtime).value() : nullptr, {}};
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// A sequence that took `prompt` and decoded `n_decode` greedy tokens; `next` is the token it
// would feed next.
struct Ran {
  Sequence seq;
  int32_t next = 0;
};

Ran run_greedy(const Model& model, GgmlType cells, const std::vector<int32_t>& prompt,
               int n_decode) {
  Ran r{make_sequence(model, cells), 0};
  r.next = argmax(r.seq.feed(prompt));
  for (int i = 0; i < n_decode; ++i) r.next = argmax(r.seq.feed({r.next}));
  return r;
}

Result<KvState> save_and_read(const Sequence& seq, const std::string& path) {
  MINFER_RETURN_IF_ERROR(write_state_file(path, seq.capture("app")).status());
  return read_state_file(path);
}

// A new sequence with `state` (saved from a.seq) restored decodes four greedy tokens with the
// logits a.seq gives, bit for bit.
void expect_restored_continues(const Model& model, GgmlType cells, const KvState& state, Ran& a) {
  Sequence b = make_sequence(model, cells);
  ASSERT_TRUE(check_state_fits(state, model_fingerprint(model), b.runtime->cache(), "s").is_ok());
  ASSERT_TRUE(b.restore(state).is_ok());
  int32_t next = a.next;
  for (int step = 0; step < 4; ++step) {
    const std::vector<float> expected = a.seq.feed({next});
    ASSERT_TRUE(b.feed({next}) == expected) << "step " << step;
    next = argmax(expected);
  }
}

class StateCells : public ::testing::TestWithParam<GgmlType> {};

TEST_P(StateCells, ARestoredSequenceContinuesBitForBitAsOneThatNeverStopped) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_model("qwen2-tiny-f32.gguf");
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> prompt = some_tokens(45, model->config().n_vocab, 7);
  Ran a = run_greedy(*model, GetParam(), prompt, 6);
  test::TempDir dir;
  auto state = save_and_read(a.seq, dir.file("s.state"));
  ASSERT_TRUE(state.is_ok()) << state.status().message();
  EXPECT_EQ(state->tokens, a.seq.tokens);
  EXPECT_EQ(state->app_data, "app");
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.state.tmp")));

  // A new sequence (as after a restart) with the state restored decodes what the first one does.
  expect_restored_continues(*model, GetParam(), *state, a);
}

// A slot restored from a state keeps the prefix a new prompt shares with it: 30 tokens, then it
// diverges; the reply is a fresh scheduler's, log-probabilities bit for bit.
TEST_P(StateCells, ARestoredSlotServesTheLongestCommonPrefixOfANewPrompt) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_model("qwen2-tiny-f32.gguf");
  ASSERT_NE(model, nullptr);
  auto tokenizer = Tokenizer::from_gguf(model->file());
  ASSERT_TRUE(tokenizer.is_ok());
  const int64_t n_vocab = model->config().n_vocab;
  const std::vector<int32_t> prompt = some_tokens(40, n_vocab, 3);
  const KvState state = run_greedy(*model, GetParam(), prompt, 0).seq.capture();
  std::vector<int32_t> diverging(prompt.begin(), prompt.begin() + 30);
  for (int32_t t : some_tokens(12, n_vocab, 99)) diverging.push_back(t);

  SchedulerOptions o;
  o.n_parallel = 1;
  o.n_ctx = 256;
  o.n_threads = 2;
  o.cache_type = GetParam();
  o.keep_slots = true;
  o.prefix_cache = false;
  std::vector<Collected> replies;
  std::vector<RequestStats> stats;
  for (const bool restored : {false, true}) {
    auto sched = Scheduler::create(*model, **tokenizer, o);
    ASSERT_TRUE(sched.is_ok()) << sched.status().message();
    if (restored) {
      ASSERT_TRUE((*sched)->slot_table().restore(0, state, "s").is_ok());
    }
    replies.emplace_back();
    stats.emplace_back();
    EventSink collect = collect_into(replies.back());
    ASSERT_TRUE((*sched)
                    ->submit(greedy_request(diverging, 4),
                             [&, collect](RequestEvent&& e) {
                               if (e.done) stats.back() = e.stats;
                               collect(std::move(e));
                             })
                    .is_ok());
    ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  }
  EXPECT_EQ(stats[0].n_cached, 0);
  EXPECT_EQ(stats[1].n_cached, 30);
  expect_same_reply(replies[1], replies[0]);
}

INSTANTIATE_TEST_SUITE_P(CellTypes, StateCells,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16,
                                           GgmlType::kQ8_0),
                         [](const auto& param_info) {
                           return std::string(kv_cell_type_name(param_info.param));
                         });

TEST(StateFile, SlidingWindowModelRoundTripsBitForBit) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_model("gemma3-tiny-f32.gguf");
  ASSERT_NE(model, nullptr);
  // Longer than the window (8), so some window blocks are released when the state is saved.
  const std::vector<int32_t> prompt = some_tokens(37, model->config().n_vocab, 5);
  Ran a = run_greedy(*model, GgmlType::kF32, prompt, 3);
  test::TempDir dir;
  auto state = save_and_read(a.seq, dir.file("g.state"));
  ASSERT_TRUE(state.is_ok()) << state.status().message();
  Sequence b = make_sequence(*model, GgmlType::kF32);
  ASSERT_TRUE(b.restore(*state).is_ok());
  EXPECT_TRUE(b.feed({a.next}) == a.seq.feed({a.next}));
}

// Qwen3.5 (gated delta-net layers beside attention): the file holds the recurrent state too, and
// a restored sequence continues bit for bit.
TEST(StateFile, HybridRecurrentModelRoundTripsBitForBit) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* name : {"qwen35-tiny-f32.gguf", "qwen35moe-tiny-q4_k_m.gguf"}) {
    SCOPED_TRACE(name);
    auto model = load_model(name);
    ASSERT_NE(model, nullptr);
    Ran a = run_greedy(*model, GgmlType::kF32, some_tokens(37, model->config().n_vocab, 5), 3);
    test::TempDir dir;
    auto state = save_and_read(a.seq, dir.file("h.state"));
    ASSERT_TRUE(state.is_ok()) << state.status().message();
    EXPECT_EQ(state->recurrent.size(), static_cast<size_t>(a.seq.runtime->cache().state_floats()));
    expect_restored_continues(*model, GgmlType::kF32, *state, a);
  }
}

// The bytes of a version 2 file `bytes` of a state without a recurrent state (shape 0, no
// floats), as version 1 wrote them.
std::vector<uint8_t> as_version_1(std::vector<uint8_t> bytes, const KvState& state) {
  // After the header (24 bytes), the fingerprint and the cell fields: the recurrent shape.
  const size_t shape_at = 24 + 4 + state.model.arch.size() + 7 * 8 + 8 + 4 + 4 + 8;
  bytes.erase(bytes.begin() + static_cast<std::ptrdiff_t>(shape_at),
              bytes.begin() + static_cast<std::ptrdiff_t>(shape_at + 3 * 8));
  bytes.erase(bytes.end() - 8 - 8, bytes.end() - 8);  // the float count, 0
  bytes[8] = 1;
  const uint64_t file_bytes = bytes.size();
  std::memcpy(bytes.data() + 16, &file_bytes, sizeof(file_bytes));
  const uint64_t checksum = hash64(std::span<const uint8_t>(bytes).first(bytes.size() - 8));
  std::memcpy(bytes.data() + bytes.size() - 8, &checksum, sizeof(checksum));
  return bytes;
}

// A hybrid model's state without its recurrent part is refused naming it, one of another
// recurrent shape naming both; a version 1 file (no recurrent part) of a model without recurrent
// layers still loads.
TEST(StateFile, AStateWithoutTheRecurrentStateIsRefusedForAHybridModel) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_model("qwen35-tiny-f32.gguf");
  ASSERT_NE(model, nullptr);
  Ran a = run_greedy(*model, GgmlType::kF32, some_tokens(20, model->config().n_vocab, 2), 1);
  KvState state = a.seq.capture();
  state.recurrent.clear();
  auto decoded = decode_state(encode_state(state), "old");
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().message();
  Sequence b = make_sequence(*model, GgmlType::kF32);
  const Status st =
      check_state_fits(*decoded, model_fingerprint(*model), b.runtime->cache(), "old");
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("holds no recurrent state"), std::string::npos) << st.message();
  // A state of another recurrent shape is refused naming both.
  KvState other = a.seq.capture();
  other.recurrent_shape.conv_floats += 1;
  other.recurrent.resize(static_cast<size_t>(other.recurrent_shape.floats()));
  auto reread = decode_state(encode_state(other), "other");
  ASSERT_TRUE(reread.is_ok()) << reread.status().message();
  const Status shape =
      check_state_fits(*reread, model_fingerprint(*model), b.runtime->cache(), "o");
  ASSERT_FALSE(shape.is_ok());
  EXPECT_NE(shape.message().find("recurrent state of"), std::string::npos) << shape.message();
  // Its length must match its shape.
  other.recurrent.pop_back();
  EXPECT_FALSE(decode_state(encode_state(other), "short").is_ok());

  // Version 1 of a model without recurrent layers still loads.
  auto plain = load_model("qwen2-tiny-f32.gguf");
  ASSERT_NE(plain, nullptr);
  Ran p = run_greedy(*plain, GgmlType::kF32, some_tokens(20, plain->config().n_vocab, 1), 1);
  const KvState plain_state = p.seq.capture();
  auto old = decode_state(as_version_1(encode_state(plain_state), plain_state), "v1");
  ASSERT_TRUE(old.is_ok()) << old.status().message();
  Sequence c = make_sequence(*plain, GgmlType::kF32);
  EXPECT_TRUE(check_state_fits(*old, model_fingerprint(*plain), c.runtime->cache(), "v1").is_ok());
  ASSERT_TRUE(c.restore(*old).is_ok());
  EXPECT_TRUE(c.feed({p.next}) == p.seq.feed({p.next}));
}

// A saved state of qwen2-tiny-f32 (f32 cells) and its file's bytes.
struct Saved {
  std::unique_ptr<Model> model;
  KvState state;
  std::vector<uint8_t> bytes;
};

Saved saved_state() {
  Saved s;
  s.model = load_model("qwen2-tiny-f32.gguf");
  if (s.model == nullptr) return s;
  Ran a = run_greedy(*s.model, GgmlType::kF32, some_tokens(20, s.model->config().n_vocab, 1), 2);
  s.state = a.seq.capture();
  s.bytes = encode_state(s.state);
  return s;
}

std::string refusal(const KvState& state, const Model& model, GgmlType cells) {
  const Sequence seq = make_sequence(model, cells);
  const Status st = check_state_fits(state, model_fingerprint(model), seq.runtime->cache(), "s");
  return st.is_ok() ? "" : st.message();
}

TEST(StateFile, AnotherModelsStateIsRefusedNamingTheField) {
  MINFER_REQUIRE_TEST_DATA();
  Saved s = saved_state();
  ASSERT_NE(s.model, nullptr);
  EXPECT_EQ(refusal(s.state, *s.model, GgmlType::kF32), "");
  // Another architecture.
  auto llama = load_model("llama-tiny-f32.gguf");
  ASSERT_NE(llama, nullptr);
  EXPECT_NE(refusal(s.state, *llama, GgmlType::kF32).find("architecture is qwen2 in the file"),
            std::string::npos);
  // The same shape with its weights in f16.
  auto f16 = load_model("qwen2-tiny-f16.gguf");
  ASSERT_NE(f16, nullptr);
  EXPECT_NE(refusal(s.state, *f16, GgmlType::kF32).find("tensor hash"), std::string::npos);
}

TEST(StateFile, TwoModelsOfTheSameShapeAndTypesHaveDifferentFingerprints) {
  test::TempDir dir;
  std::unique_ptr<Model> models[2];
  for (int i = 0; i < 2; ++i) {
    MakeModelOptions o;
    o.arch = "qwen2";
    o.seed = 42 + static_cast<uint64_t>(i);
    o.n_threads = 2;
    o.progress = ProgressStyle::kQuiet;
    o.output = dir.file(i == 0 ? "m0.gguf" : "m1.gguf");
    auto made = make_model(o);
    ASSERT_TRUE(made.is_ok()) << made.status().message();
    models[i] = load_path(o.output);
    ASSERT_NE(models[i], nullptr);
  }
  const ModelFingerprint a = model_fingerprint(*models[0]);
  const ModelFingerprint b = model_fingerprint(*models[1]);
  EXPECT_EQ(a.shape, b.shape);  // the same shape in every field
  EXPECT_NE(a.tensor_hash, b.tensor_hash);
  EXPECT_EQ(a.tensor_hash, model_fingerprint(*models[0]).tensor_hash);  // deterministic
  Ran r = run_greedy(*models[0], GgmlType::kF16, {5, 6, 7, 8}, 0);
  const KvState state = r.seq.capture();
  EXPECT_NE(refusal(state, *models[1], GgmlType::kF16).find("tensor hash"), std::string::npos);
}

// The fingerprint is the file's, whatever holds the weights: mapped, or read into memory (where
// repacking releases the copied matrices' pages, which would then read back as zeros), with or
// without repacking. A state saved by one is restored by the others.
TEST(StateFile, FingerprintIsTheSameMappedOrReadIntoMemory) {
  MINFER_REQUIRE_TEST_DATA();
  const std::string path = test::test_data_path("models/qwen2-tiny-q8_0.gguf");
  auto mapped = Model::load(path);
  MapOptions read_options;
  read_options.use_mmap = false;
  auto read = Model::load(path, read_options);
  ASSERT_TRUE(mapped.is_ok() && read.is_ok());
  const ModelFingerprint a = model_fingerprint(**mapped);
  EXPECT_EQ(a.tensor_hash, model_fingerprint(**read).tensor_hash);
  Ran r = run_greedy(**read, GgmlType::kF16, {5, 6, 7, 8}, 0);
  const KvState state = r.seq.capture();
  EXPECT_EQ(refusal(state, **mapped, GgmlType::kF16), "");
}

// A version 2 file's q8_0 cells were stored unrotated: a cache that Hadamard-rotates its q8_0
// cells (qwen2-tiny: head dim 64) refuses them, naming why; its f32 cells still load.
TEST(StateFile, AnUnrotatedQ8StateIsRefusedByARotatingCache) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_model("qwen2-tiny-f32.gguf");
  ASSERT_NE(model, nullptr);
  for (const GgmlType cells : {GgmlType::kQ8_0, GgmlType::kF32}) {
    Ran a = run_greedy(*model, cells, some_tokens(20, model->config().n_vocab, 1), 1);
    std::vector<uint8_t> bytes = encode_state(a.seq.capture());
    bytes[8] = 2;  // the version
    const uint64_t checksum = hash64(std::span<const uint8_t>(bytes).first(bytes.size() - 8));
    std::memcpy(bytes.data() + bytes.size() - 8, &checksum, sizeof(checksum));
    auto old = decode_state(bytes, "v2");
    ASSERT_TRUE(old.is_ok()) << old.status().message();
    const std::string why = refusal(*old, *model, cells);
    if (cells == GgmlType::kF32) {
      EXPECT_EQ(why, "");
    } else {
      EXPECT_NE(why.find("version 2, whose q8_0 cells are not Hadamard-rotated"), std::string::npos)
          << why;
    }
  }
}

TEST(StateFile, AnotherCellTypeIsRefused) {
  MINFER_REQUIRE_TEST_DATA();
  Saved s = saved_state();
  ASSERT_NE(s.model, nullptr);
  const std::string why = refusal(s.state, *s.model, GgmlType::kF16);
  EXPECT_NE(why.find("holds f32 KV cells, this cache holds f16"), std::string::npos) << why;
  // bf16 and f16 cells are both two bytes a value: the cell type, not the size, tells them apart.
  Ran bf16 =
      run_greedy(*s.model, GgmlType::kBF16, some_tokens(20, s.model->config().n_vocab, 1), 2);
  const KvState state = bf16.seq.capture();
  EXPECT_EQ(refusal(state, *s.model, GgmlType::kBF16), "");
  const std::string into_f16 = refusal(state, *s.model, GgmlType::kF16);
  EXPECT_NE(into_f16.find("holds bf16 KV cells, this cache holds f16 (--cache-type bf16)"),
            std::string::npos)
      << into_f16;
  // Written and read back, the file says the same.
  auto decoded = decode_state(encode_state(state), "bf16");
  ASSERT_TRUE(decoded.is_ok()) << decoded.status().message();
  EXPECT_EQ(decoded->cell_type, GgmlType::kBF16);
  EXPECT_NE(refusal(*decoded, *s.model, GgmlType::kF16).find("holds bf16"), std::string::npos);
}

std::string decode_error(const std::vector<uint8_t>& bytes) {
  auto decoded = decode_state(bytes, "s");
  return decoded.is_ok() ? "" : decoded.status().message();
}

TEST(StateFile, ACorruptByteAnywhereIsAChecksumError) {
  MINFER_REQUIRE_TEST_DATA();
  Saved s = saved_state();
  ASSERT_NE(s.model, nullptr);
  ASSERT_EQ(decode_error(s.bytes), "");
  // A byte of the fingerprint, of the tokens, of the cells, of the checksum itself.
  for (const size_t at : {size_t{40}, size_t{150}, s.bytes.size() / 2, s.bytes.size() - 3}) {
    std::vector<uint8_t> bad = s.bytes;
    bad[at] ^= 0x10;
    EXPECT_NE(decode_error(bad).find("checksum"), std::string::npos) << "byte " << at;
  }
}

TEST(StateFile, TruncatedForeignAndNewerFilesAreRefused) {
  MINFER_REQUIRE_TEST_DATA();
  Saved s = saved_state();
  ASSERT_NE(s.model, nullptr);
  for (const size_t keep : {size_t{0}, size_t{5}, size_t{20}, s.bytes.size() - 1}) {
    const std::vector<uint8_t> cut(s.bytes.begin(),
                                   s.bytes.begin() + static_cast<std::ptrdiff_t>(keep));
    const std::string why = decode_error(cut);
    EXPECT_TRUE(why.find("truncated") != std::string::npos ||
                why.find("not a minfer state file") != std::string::npos)
        << keep << ": " << why;
    if (keep >= 8) {
      EXPECT_NE(why.find("truncated"), std::string::npos) << keep << ": " << why;
    }
  }
  std::vector<uint8_t> gguf = s.bytes;
  std::memcpy(gguf.data(), "GGUF", 4);
  EXPECT_NE(decode_error(gguf).find("not a minfer state file"), std::string::npos);
  std::vector<uint8_t> newer = s.bytes;
  newer[8] = 4;  // the version
  EXPECT_NE(decode_error(newer).find("version 4, this build reads versions 1 to 3"),
            std::string::npos);
  // A missing file.
  auto missing = read_state_file("/nonexistent/dir/state.bin");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("cannot read"), std::string::npos);
}

TEST(StateFile, AStateLongerThanTheContextIsRefused) {
  MINFER_REQUIRE_TEST_DATA();
  Saved s = saved_state();
  ASSERT_NE(s.model, nullptr);
  const Sequence small = make_sequence(*s.model, GgmlType::kF32, /*n_ctx=*/8);
  const Status st =
      check_state_fits(s.state, model_fingerprint(*s.model), small.runtime->cache(), "s");
  EXPECT_NE(st.message().find("past this context of 8"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace minfer::engine
