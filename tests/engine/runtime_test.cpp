// The runtime: one options struct builds kernels, pool, KV cache, step runner and observers; the
// cache-type rule (flag, else MINFER_CACHE_TYPE, else the command's default) lives in one place;
// the step runner's graph cache is bounded and an evicted shape computes the same logits again;
// a prompt gives the same logits whatever the steps it is cut into.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <vector>

#include "engine/runtime.h"
#include "engine_test_util.h"
#include "models/model.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

TEST(ResolveCacheType, FlagThenEnvironmentThenDefault) {
  EXPECT_EQ(*resolve_cache_type("q8_0", "f16", GgmlType::kF32), GgmlType::kQ8_0);
  EXPECT_EQ(*resolve_cache_type("bf16", "f16", GgmlType::kF32), GgmlType::kBF16);
  EXPECT_EQ(*resolve_cache_type("", "bf16", GgmlType::kF16), GgmlType::kBF16);
  EXPECT_EQ(*resolve_cache_type("", "f16", GgmlType::kF32), GgmlType::kF16);
  EXPECT_EQ(*resolve_cache_type("", nullptr, GgmlType::kF16), GgmlType::kF16);
  EXPECT_EQ(*resolve_cache_type("", "", GgmlType::kF32), GgmlType::kF32);
  auto bad_flag = resolve_cache_type("q4_0", nullptr, GgmlType::kF32);
  ASSERT_FALSE(bad_flag.is_ok());
  EXPECT_NE(bad_flag.status().message().find("q4_0"), std::string::npos);
  auto bad_env = resolve_cache_type("", "f8", GgmlType::kF32);
  ASSERT_FALSE(bad_env.is_ok());
  EXPECT_NE(bad_env.status().message().find("MINFER_CACHE_TYPE"), std::string::npos)
      << bad_env.status().message();
}

std::unique_ptr<Model> load_tiny_f32() {
  auto model = Model::load(test::test_data_path("models/qwen2-tiny-f32.gguf"));
  EXPECT_TRUE(model.is_ok()) << model.status().message();
  return model.is_ok() ? std::move(model).value() : nullptr;
}

TEST(ResolveNCtx, TheTrainingContextReducedToTheKvBudget) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/qwen2-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  // f32 cells: K and V rows of every KV head in every layer.
  const uint64_t position =
      static_cast<uint64_t>(c.n_layer * c.n_head_kv * (c.head_dim + c.head_dim_v)) * 4;
  const uint64_t whole = position * static_cast<uint64_t>(c.n_ctx_train);
  auto fits = resolve_n_ctx(**model, 0, GgmlType::kF32, 1, whole);
  ASSERT_TRUE(fits.is_ok()) << fits.status().message();
  EXPECT_EQ(fits->n_ctx, c.n_ctx_train);
  EXPECT_NE(fits->why.find("training context"), std::string::npos) << fits->why;
  // Room for 300 positions: the multiple of 256 below, said why.
  auto reduced = resolve_n_ctx(**model, 0, GgmlType::kF32, 1, position * 300);
  ASSERT_TRUE(reduced.is_ok());
  EXPECT_EQ(reduced->n_ctx, std::min<int64_t>(256, c.n_ctx_train));
  EXPECT_NE(reduced->why.find("reduced"), std::string::npos) << reduced->why;
  // f16 cells take half: twice the positions; two sequences halve it again.
  auto f16 = resolve_n_ctx(**model, 0, GgmlType::kF16, 1, position * 600);
  ASSERT_TRUE(f16.is_ok());
  auto two = resolve_n_ctx(**model, 0, GgmlType::kF16, 2, position * 600);
  ASSERT_TRUE(two.is_ok());
  if (c.n_ctx_train >= 1280) {
    EXPECT_EQ(f16->n_ctx, 1024);
    EXPECT_EQ(two->n_ctx, 512);
  }
  // A context asked for is used as it is; a negative one is an error.
  EXPECT_EQ(resolve_n_ctx(**model, 77, GgmlType::kF32)->n_ctx, 77);
  EXPECT_FALSE(resolve_n_ctx(**model, -1, GgmlType::kF32).is_ok());
}

TEST(Runtime, BuildsWhatTheOptionsAsk) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_tiny_f32();
  ASSERT_NE(model, nullptr);
  RuntimeOptions o;
  o.isa = "ref";
  o.n_threads = 3;
  o.cache_type = GgmlType::kF16;
  o.n_ctx = 100;
  o.n_ctx_total = 300;
  o.block_size = 16;
  auto runtime = Runtime::create(*model, o);
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().message();
  EXPECT_STREQ((*runtime)->isa_name(), "ref");
  EXPECT_EQ((*runtime)->n_threads(), 3);
  EXPECT_EQ((*runtime)->cache().config().cell_type, GgmlType::kF16);
  EXPECT_EQ((*runtime)->cache().config().n_ctx, 100);
  EXPECT_EQ((*runtime)->cache().config().block_size, 16);
  EXPECT_EQ((*runtime)->cache().config().max_blocks, 19);  // ceil(300 / 16)
  EXPECT_EQ((*runtime)->trace(), nullptr);
  EXPECT_EQ((*runtime)->profile_table(), "");
}

TEST(Runtime, BadOptionsAreErrorsNamingThem) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_tiny_f32();
  ASSERT_NE(model, nullptr);
  RuntimeOptions isa;
  isa.isa = "sse9";
  auto r = Runtime::create(*model, isa);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("RuntimeOptions::isa='sse9'"), std::string::npos)
      << r.status().message();
  RuntimeOptions budget;
  budget.n_ctx = 64;
  budget.n_ctx_total = 32;
  r = Runtime::create(*model, budget);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("smaller than one sequence's context"), std::string::npos);
  RuntimeOptions trace;
  trace.observe.trace_path = "/nonexistent-dir/trace.jsonl";
  r = Runtime::create(*model, trace);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("/nonexistent-dir/trace.jsonl"), std::string::npos);
}

// Logits of ids 0..n-1 fed in one step to a fresh sequence `seq`.
std::vector<float> prompt_logits(StepRunner& runner, int32_t seq, int32_t n) {
  Batch batch;
  for (int32_t p = 0; p < n; ++p) batch.add((p * 37 + 11) % 1000, p, seq, true);
  auto logits = runner.step(batch);
  EXPECT_TRUE(logits.is_ok()) << logits.status().message();
  return logits.is_ok() ? std::vector<float>(logits->begin(), logits->end()) : std::vector<float>{};
}

// A step that wants no logits (a prompt chunk before its last token) computes the cache and
// returns no rows; its empty output nodes have no buffer and are not run.
TEST(StepRunner, AStepWithNoOutputRowsFillsTheCacheAndReturnsNothing) {
  MINFER_REQUIRE_TEST_DATA();
  for (const char* name : {"qwen2-tiny-f32.gguf", "gemma3-tiny-f32.gguf"}) {
    auto model = Model::load(test::test_data_path(std::string("models/") + name));
    ASSERT_TRUE(model.is_ok()) << model.status().message();
    RuntimeOptions o;
    o.n_threads = 2;
    o.n_ctx = 64;
    auto runtime = Runtime::create(**model, o);
    ASSERT_TRUE(runtime.is_ok());
    Batch chunk;
    for (int32_t p = 0; p < 5; ++p) chunk.add(1 + p, p, 0, /*want_logits=*/false);
    auto none = (*runtime)->step(chunk);
    ASSERT_TRUE(none.is_ok()) << none.status().message();
    EXPECT_TRUE(none->empty()) << name;
    EXPECT_EQ((*runtime)->cache().length(0), 5) << name;
    // The next token continues from the cached positions like a whole prompt would.
    Batch next;
    next.add(6, 5, 0, true);
    auto after_chunk = (*runtime)->step(next);
    ASSERT_TRUE(after_chunk.is_ok());
    const std::vector<float> chunked(after_chunk->begin(), after_chunk->end());
    auto whole_runtime = Runtime::create(**model, o);
    ASSERT_TRUE(whole_runtime.is_ok());
    Batch whole;
    for (int32_t p = 0; p < 6; ++p) whole.add(1 + p, p, 0, p == 5);
    auto all = (*whole_runtime)->step(whole);
    ASSERT_TRUE(all.is_ok());
    EXPECT_EQ(chunked, std::vector<float>(all->begin(), all->end())) << name;
  }
}

// The logits after the last of `tokens`, fed to a fresh runtime's sequence 0 in steps of `chunk`
// tokens (each wanting only its last row's logits).
std::vector<float> logits_in_chunks(const Model& model, const std::vector<int32_t>& tokens,
                                    size_t chunk) {
  RuntimeOptions o;
  o.n_threads = 2;
  o.n_ctx = 64;
  auto runtime = Runtime::create(model, o);
  EXPECT_TRUE(runtime.is_ok()) << runtime.status().message();
  if (!runtime.is_ok()) return {};
  std::vector<float> last;
  for (size_t begin = 0; begin < tokens.size(); begin += chunk) {
    const size_t end = std::min(tokens.size(), begin + chunk);
    Batch batch;
    for (size_t p = begin; p < end; ++p) {
      batch.add(tokens[p], static_cast<int32_t>(p), 0, p + 1 == end);
    }
    auto logits = (*runtime)->step(batch);
    EXPECT_TRUE(logits.is_ok()) << logits.status().message();
    if (!logits.is_ok()) return {};
    last.assign(logits->begin(), logits->end());
  }
  return last;
}

// A prompt computed in chunks, in one step or a token at a time gives the same logits bit for
// bit: the scheduler's token budget (n_batch for `run`) never changes a reply.
class ChunkedPrompts : public ::testing::TestWithParam<const char*> {};

TEST_P(ChunkedPrompts, GiveTheLogitsOfOneStep) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path(std::string("models/") + GetParam()));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const std::vector<int32_t> p = some_tokens(37, (*model)->config().n_vocab, 6);
  const std::vector<float> whole = logits_in_chunks(**model, p, p.size());
  ASSERT_FALSE(whole.empty());
  EXPECT_EQ(logits_in_chunks(**model, p, 8), whole);  // 8 + 8 + 8 + 8 + 5
  EXPECT_EQ(logits_in_chunks(**model, p, 1), whole);
}

INSTANTIATE_TEST_SUITE_P(Models, ChunkedPrompts,
                         ::testing::Values("stories260K.gguf", "qwen2-tiny-q8_0.gguf",
                                           "qwen3-tiny-q4_k_m.gguf", "llama-tiny-f32.gguf"),
                         [](const auto& param_info) {
                           std::string name = param_info.param;
                           for (char& c : name) {
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           }
                           return name;
                         });

TEST(StepRunner, GraphCacheIsBoundedAndEvictedShapesComputeTheSame) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_tiny_f32();
  ASSERT_NE(model, nullptr);
  RuntimeOptions o;
  o.n_threads = 2;
  o.n_ctx = 64;
  o.n_ctx_total = 64 * 64;
  auto runtime = Runtime::create(*model, o);
  ASSERT_TRUE(runtime.is_ok()) << runtime.status().message();
  StepRunner& runner = (*runtime)->runner();
  const std::vector<float> first = prompt_logits(runner, 0, 5);
  // More shapes than the cache holds: the 5-token graph is evicted along the way.
  const int32_t n_shapes = static_cast<int32_t>(StepRunner::kMaxCachedGraphs) + 8;
  for (int32_t n = 6; n < 6 + n_shapes; ++n) {
    prompt_logits(runner, n, n);
    EXPECT_LE(runner.n_cached_graphs(), StepRunner::kMaxCachedGraphs);
  }
  EXPECT_EQ(runner.n_cached_graphs(), StepRunner::kMaxCachedGraphs);
  const std::vector<float> again = prompt_logits(runner, 1, 5);
  ASSERT_EQ(first.size(), again.size());
  EXPECT_EQ(std::memcmp(first.data(), again.data(), first.size() * sizeof(float)), 0);
}

}  // namespace
}  // namespace minfer::engine
