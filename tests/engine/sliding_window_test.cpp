// Gemma 3's sliding-window layers on a long sequence: the window pool gives back the blocks no
// later token sees, so a sliding layer holds at most window / block_size + 1 blocks while a
// sequence ten times its window runs, and the logits are bit for bit those of a cache that
// keeps every position.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "engine/session.h"
#include "engine/step_runner.h"
#include "kernels/dispatch.h"
#include "kernels/thread_pool.h"
#include "kv/kv_cache.h"
#include "models/model.h"
#include "test_util.h"

namespace minfer {
namespace {

constexpr int64_t kBlock = 4;

KvCacheConfig cache_config(const ModelConfig& c, bool evict) {
  KvCacheConfig kv;
  kv.n_layer = c.n_layer;
  kv.n_head_kv = c.n_head_kv;
  kv.head_dim = c.head_dim;
  kv.head_dim_v = c.head_dim_v;
  kv.cell_type = GgmlType::kF32;
  kv.block_size = kBlock;
  kv.n_ctx = 256;
  kv.max_blocks = 256 / kBlock;
  if (evict) {
    kv.swa_layers = c.swa_layers;
    kv.window = c.n_swa;
  }
  return kv;
}

TEST(SlidingWindow, LayerCacheStaysWithinItsWindowAndLogitsMatchAFullCache) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/gemma3-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const ModelConfig& c = (*model)->config();
  ASSERT_EQ(c.n_swa, 8);
  ASSERT_FALSE(c.swa_layers.empty());
  const int64_t n_tokens = 10 * c.n_swa + 3;

  kernels::ThreadPool pool(2);
  const kernels::KernelTable& table = kernels::active_table();
  auto windowed = KvCache::create(cache_config(c, /*evict=*/true));
  auto full = KvCache::create(cache_config(c, /*evict=*/false));
  ASSERT_TRUE(windowed.is_ok() && full.is_ok());
  ASSERT_TRUE((*windowed)->has_window());
  ASSERT_FALSE((*full)->has_window());
  engine::StepRunner windowed_runner(**model, **windowed, table, pool);
  engine::StepRunner full_runner(**model, **full, table, pool);

  for (int64_t pos = 0; pos < n_tokens; ++pos) {
    Batch batch;
    batch.add(static_cast<int32_t>((pos * 37 + 11) % c.n_vocab), static_cast<int32_t>(pos), 0,
              true);
    auto a = windowed_runner.step(batch);
    ASSERT_TRUE(a.is_ok()) << a.status().message();
    const std::vector<float> logits(a->begin(), a->end());
    auto b = full_runner.step(batch);
    ASSERT_TRUE(b.is_ok()) << b.status().message();
    ASSERT_EQ(0, std::memcmp(logits.data(), b->data(), b->size_bytes())) << "position " << pos;
    EXPECT_LE((*windowed)->n_window_blocks_held(0), c.n_swa / kBlock + 1) << "position " << pos;
  }
  EXPECT_LE((*windowed)->n_window_blocks_allocated(), c.n_swa / kBlock + 1);
  // The full cache held every position of every layer.
  EXPECT_EQ((*full)->block_table(0).size(), static_cast<size_t>((n_tokens + kBlock - 1) / kBlock));
}

// A new prompt that shares only a prefix whose window is released: the session recomputes it
// from the start (the cache keeps nothing it cannot serve) and gives a fresh session's logits;
// one that continues the held tokens prefills only the new ones.
TEST(SlidingWindow, SessionRecomputesWhenTheKeptPrefixesWindowIsGone) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/gemma3-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  engine::SessionOptions options;
  options.n_ctx = 128;
  options.block_size = kBlock;
  options.n_threads = 2;
  std::vector<int32_t> first(40), second(36);
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int32_t>(10 + i);
  for (size_t i = 0; i < second.size(); ++i) second[i] = static_cast<int32_t>(10 + i);
  for (size_t i = 30; i < second.size(); ++i) second[i] = static_cast<int32_t>(500 + i);

  auto session = engine::Session::create(**model, options);
  ASSERT_TRUE(session.is_ok());
  ASSERT_TRUE((*session)->set_prompt(first).is_ok());
  // 30 tokens in common, but position 30 would see 23..29, released once 40 were held.
  auto again = (*session)->set_prompt(second);
  ASSERT_TRUE(again.is_ok()) << again.status().message();
  const std::vector<float> logits(again->begin(), again->end());
  EXPECT_EQ((*session)->n_past(), static_cast<int64_t>(second.size()));
  EXPECT_EQ((*session)->last_prefill().n_reused, 0);
  EXPECT_EQ((*session)->last_prefill().n_prefilled, static_cast<int64_t>(second.size()));

  auto fresh = engine::Session::create(**model, options);
  ASSERT_TRUE(fresh.is_ok());
  auto want = (*fresh)->set_prompt(second);
  ASSERT_TRUE(want.is_ok());
  ASSERT_EQ(0, std::memcmp(logits.data(), want->data(), want->size_bytes()));

  // Continuing what is held keeps it: only the new token is computed.
  std::vector<int32_t> longer = second;
  longer.push_back(77);
  ASSERT_TRUE((*session)->set_prompt(longer).is_ok());
  EXPECT_EQ((*session)->last_prefill().n_prefilled, 1);
  EXPECT_EQ((*session)->last_prefill().n_reused, static_cast<int64_t>(second.size()));
}

TEST(SlidingWindow, DescribeModelNamesTheWindow) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/gemma3-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const std::string text = engine::describe_model(**model);
  EXPECT_NE(text.find("n_swa:        8 (4 of 6 layers slide, rope base 10000)\n"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace minfer
