// KV state files (engine/state_file.h): a restored session continues bit for bit as one that never
// stopped (f32, f16 and q8_0 cells), the longest common prefix is reused, and a state from another
// model or cell type, a corrupt, truncated or foreign file is refused with an error naming why.
#include "engine/state_file.h"

#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/session.h"
#include "engine_test_util.h"
#include "models/model.h"
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

std::unique_ptr<Session> make_session(const Model& model, GgmlType cells, int64_t n_ctx = 256) {
  SessionOptions options;
  options.n_threads = 2;
  options.n_ctx = n_ctx;
  options.cache_type = cells;
  auto session = Session::create(model, options);
  EXPECT_TRUE(session.is_ok()) << session.status().message();
  return session.is_ok() ? std::move(session).value() : nullptr;
}

int32_t argmax(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

bool bit_identical(std::span<const float> a, std::span<const float> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// A session that prefilled `prompt` and decoded `n_decode` greedy tokens; `next` is the token
// it would feed next.
struct Ran {
  std::unique_ptr<Session> session;
  int32_t next = 0;
};

Ran run_greedy(const Model& model, GgmlType cells, const std::vector<int32_t>& prompt,
               int n_decode) {
  Ran r{make_session(model, cells), 0};
  auto logits = r.session->set_prompt(prompt);
  EXPECT_TRUE(logits.is_ok()) << logits.status().message();
  r.next = argmax(*logits);
  for (int i = 0; i < n_decode; ++i) {
    logits = r.session->decode(r.next);
    EXPECT_TRUE(logits.is_ok()) << logits.status().message();
    r.next = argmax(*logits);
  }
  return r;
}

Result<KvState> save_and_read(const Session& session, const std::string& path) {
  const KvState state = session.capture(model_fingerprint(session.model()), "app");
  MINFER_RETURN_IF_ERROR(write_state_file(path, state).status());
  return read_state_file(path);
}

class StateCells : public ::testing::TestWithParam<GgmlType> {};

TEST_P(StateCells, RestoredSessionContinuesBitForBitAsOneThatNeverStopped) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_model("qwen2-tiny-f32.gguf");
  ASSERT_NE(model, nullptr);
  const std::vector<int32_t> prompt = some_tokens(45, model->config().n_vocab, 7);
  Ran a = run_greedy(*model, GetParam(), prompt, 6);
  test::TempDir dir;
  auto state = save_and_read(*a.session, dir.file("s.state"));
  ASSERT_TRUE(state.is_ok()) << state.status().message();
  EXPECT_EQ(state->tokens, a.session->tokens());
  EXPECT_EQ(state->app_data, "app");
  EXPECT_FALSE(std::filesystem::exists(dir.file("s.state.tmp")));

  // A new session (as after a restart) with the state restored decodes what the first one does.
  auto b = make_session(*model, GetParam());
  ASSERT_TRUE(check_state_fits(*state, model_fingerprint(*model), b->cache(), "s").is_ok());
  ASSERT_TRUE(b->restore(*state).is_ok());
  EXPECT_EQ(b->tokens(), a.session->tokens());
  int32_t next = a.next;
  for (int step = 0; step < 4; ++step) {
    auto la = a.session->decode(next);
    ASSERT_TRUE(la.is_ok());
    const std::vector<float> expected(la->begin(), la->end());
    auto lb = b->decode(next);
    ASSERT_TRUE(lb.is_ok());
    ASSERT_TRUE(bit_identical(expected, *lb)) << "step " << step;
    next = argmax(expected);
  }
}

TEST_P(StateCells, RestoredStateServesTheLongestCommonPrefixOfANewPrompt) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_model("qwen2-tiny-f32.gguf");
  ASSERT_NE(model, nullptr);
  const int64_t n_vocab = model->config().n_vocab;
  const std::vector<int32_t> prompt = some_tokens(40, n_vocab, 3);
  Ran a = run_greedy(*model, GetParam(), prompt, 0);
  test::TempDir dir;
  auto state = save_and_read(*a.session, dir.file("s.state"));
  ASSERT_TRUE(state.is_ok()) << state.status().message();

  // The new prompt shares 30 tokens with the state, then diverges.
  std::vector<int32_t> diverging(prompt.begin(), prompt.begin() + 30);
  for (int32_t t : some_tokens(12, n_vocab, 99)) diverging.push_back(t);
  auto fresh = make_session(*model, GetParam());
  auto expected = fresh->set_prompt(diverging);
  ASSERT_TRUE(expected.is_ok());
  const std::vector<float> want(expected->begin(), expected->end());

  auto b = make_session(*model, GetParam());
  ASSERT_TRUE(b->restore(*state).is_ok());
  auto got = b->set_prompt(diverging);
  ASSERT_TRUE(got.is_ok());
  EXPECT_EQ(b->last_prefill().n_reused, 30);
  EXPECT_EQ(b->last_prefill().n_prefilled, 12);
  EXPECT_TRUE(bit_identical(want, *got));
}

INSTANTIATE_TEST_SUITE_P(CellTypes, StateCells,
                         ::testing::Values(GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0),
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
  auto state = save_and_read(*a.session, dir.file("g.state"));
  ASSERT_TRUE(state.is_ok()) << state.status().message();
  auto b = make_session(*model, GgmlType::kF32);
  ASSERT_TRUE(b->restore(*state).is_ok());
  auto la = a.session->decode(a.next);
  ASSERT_TRUE(la.is_ok());
  const std::vector<float> expected(la->begin(), la->end());
  auto lb = b->decode(a.next);
  ASSERT_TRUE(lb.is_ok());
  EXPECT_TRUE(bit_identical(expected, *lb));
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
  s.state = a.session->capture(model_fingerprint(*s.model));
  s.bytes = encode_state(s.state);
  return s;
}

std::string refusal(const KvState& state, const Model& model, GgmlType cells) {
  auto session = make_session(model, cells);
  const Status st = check_state_fits(state, model_fingerprint(model), session->cache(), "s");
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
  const KvState state = r.session->capture(a);
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
  const KvState state = r.session->capture(model_fingerprint(**read));
  EXPECT_EQ(refusal(state, **mapped, GgmlType::kF16), "");
}

TEST(StateFile, AnotherCellTypeIsRefused) {
  MINFER_REQUIRE_TEST_DATA();
  Saved s = saved_state();
  ASSERT_NE(s.model, nullptr);
  const std::string why = refusal(s.state, *s.model, GgmlType::kF16);
  EXPECT_NE(why.find("holds f32 KV cells, this cache holds f16"), std::string::npos) << why;
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
  newer[8] = 2;  // the version
  EXPECT_NE(decode_error(newer).find("version 2, this build reads version 1"), std::string::npos);
  // A missing file.
  auto missing = read_state_file("/nonexistent/dir/state.bin");
  ASSERT_FALSE(missing.is_ok());
  EXPECT_NE(missing.status().message().find("cannot read"), std::string::npos);
}

TEST(StateFile, AStateLongerThanTheContextIsRefused) {
  MINFER_REQUIRE_TEST_DATA();
  Saved s = saved_state();
  ASSERT_NE(s.model, nullptr);
  auto small = make_session(*s.model, GgmlType::kF32, /*n_ctx=*/8);
  const Status st = check_state_fits(s.state, model_fingerprint(*s.model), small->cache(), "s");
  EXPECT_NE(st.message().find("past this context of 8"), std::string::npos) << st.message();
}

}  // namespace
}  // namespace minfer::engine
