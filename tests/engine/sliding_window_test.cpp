// Gemma 3's sliding-window layers (gemma3-tiny, window 8): the window pool gives back the blocks
// no later token sees, so a sliding layer holds at most window / block_size + 1 blocks while a
// sequence ten times its window runs, and the logits are bit for bit those of a cache that keeps
// every position; a slot whose kept prefix's window is gone recomputes it; sequences far longer
// than the window, batched, chunked under a small token budget, preempted when the pool runs
// short and with the prefix cache on give exactly what each gives alone.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "engine/setup.h"
#include "engine/step_runner.h"
#include "kernels/dispatch.h"
#include "kernels/thread_pool.h"
#include "kv/kv_cache.h"
#include "models/model.h"
#include "scheduler_test_util.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {
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
  StepRunner windowed_runner(**model, **windowed, table, pool);
  StepRunner full_runner(**model, **full, table, pool);

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

RequestParams greedy_window(std::vector<int32_t> prompt, int64_t max_tokens = 30) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.generate.temperature = 0.0f;
  p.generate.max_tokens = max_tokens;
  p.generate.top_logprobs = 0;
  return p;
}

std::vector<Collected> run(const Model& model, const Tokenizer& tok,
                           const std::vector<std::vector<int32_t>>& prompts,
                           const SchedulerOptions& o) {
  auto sched = Scheduler::create(model, tok, o);
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  std::vector<Collected> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_TRUE((*sched)->submit(greedy_window(prompts[i]), collect_into(out[i])).is_ok());
  }
  EXPECT_TRUE((*sched)->run_until_idle().is_ok());
  return out;
}

// A new prompt that shares only a prefix whose window is released: the slot recomputes it from the
// start (the cache keeps nothing it cannot serve) and replies as a fresh one; a prompt that
// continues the held tokens computes only the new one.
TEST(SlidingWindow, ASlotRecomputesWhenTheKeptPrefixesWindowIsGone) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/gemma3-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  auto tok = Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  SchedulerOptions o;
  o.n_parallel = 1;
  o.n_ctx = 128;
  o.block_size = kBlock;
  o.keep_slots = true;
  o.prefix_cache = false;
  o.n_threads = 2;
  std::vector<int32_t> first(40), second(36);
  for (size_t i = 0; i < first.size(); ++i) first[i] = static_cast<int32_t>(10 + i);
  for (size_t i = 0; i < second.size(); ++i) second[i] = static_cast<int32_t>(10 + i);
  for (size_t i = 30; i < second.size(); ++i) second[i] = static_cast<int32_t>(500 + i);
  auto stats_of = [](Scheduler& sched, RequestParams p) {
    RequestStats stats;
    Collected c;
    EventSink collect = collect_into(c);
    EXPECT_TRUE(sched
                    .submit(std::move(p),
                            [&](RequestEvent&& e) {
                              if (e.done) stats = e.stats;
                              collect(std::move(e));
                            })
                    .is_ok());
    EXPECT_TRUE(sched.run_until_idle().is_ok());
    return std::make_pair(stats, c);
  };

  auto sched = Scheduler::create(**model, **tok, o);
  ASSERT_TRUE(sched.is_ok());
  stats_of(**sched, greedy_window(first, 0));
  // 30 tokens in common, but position 30 would see 23..29, released once 40 were held.
  const auto [again, reply] = stats_of(**sched, greedy_window(second, 1));
  EXPECT_EQ(again.n_cached, 0);
  auto fresh = Scheduler::create(**model, **tok, o);
  ASSERT_TRUE(fresh.is_ok());
  const auto [want_stats, want] = stats_of(**fresh, greedy_window(second, 1));
  EXPECT_EQ(reply.tokens, want.tokens);
  EXPECT_EQ(reply.logprobs, want.logprobs);

  // Continuing what is held keeps it: only the new token is computed.
  std::vector<int32_t> longer = second;
  longer.push_back(77);
  EXPECT_EQ(stats_of(**sched, greedy_window(longer, 0)).first.n_cached,
            static_cast<int64_t>(second.size()));
}

TEST(SlidingWindow, DescribeModelNamesTheWindow) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/gemma3-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  const std::string text = describe_model(**model);
  EXPECT_NE(text.find("n_swa:        8 (4 of 6 layers slide, rope base 10000)\n"),
            std::string::npos)
      << text;
}

TEST(SlidingWindowScheduler, BatchedChunkedPreemptedAndPrefixCachedGiveWhatEachGivesAlone) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = Model::load(test::test_data_path("models/gemma3-tiny-f32.gguf"));
  ASSERT_TRUE(model.is_ok()) << model.status().message();
  auto tok = Tokenizer::from_gguf((*model)->file());
  ASSERT_TRUE(tok.is_ok()) << tok.status().message();
  // Two prompts share a 24-token prefix (three blocks of 8).
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < 3; ++i) {
    std::vector<int32_t> p;
    for (int j = 0; j < 24 + 5 * i; ++j) p.push_back(100 + (i == 2 ? 3 * j : j) % 800);
    prompts.push_back(p);
  }

  std::vector<Collected> alone;
  for (const auto& p : prompts) {
    SchedulerOptions o;
    o.n_parallel = 1;
    o.n_ctx = 128;
    o.block_size = 8;
    o.prefix_cache = false;
    o.n_threads = 2;
    alone.push_back(run(**model, **tok, {p}, o)[0]);
  }
  SchedulerOptions o;
  o.n_parallel = 3;
  o.n_ctx = 64;
  o.n_ctx_total = 128;  // 16 blocks of 8 for three sequences of up to 64 positions
  o.block_size = 8;
  o.token_budget = 16;  // prefill in chunks
  o.prefix_cache = true;
  o.n_threads = 2;
  auto sched = Scheduler::create(**model, **tok, o);
  ASSERT_TRUE(sched.is_ok());
  std::vector<Collected> together(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    ASSERT_TRUE((*sched)->submit(greedy_window(prompts[i]), collect_into(together[i])).is_ok());
  }
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  EXPECT_GT((*sched)->stats().n_preemptions, 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(together[i].done && alone[i].done);
    EXPECT_EQ(together[i].tokens, alone[i].tokens);
    EXPECT_EQ(together[i].logprobs, alone[i].logprobs);
  }
}

}  // namespace
}  // namespace minfer::engine
