// The scheduler over a model with sliding-window layers (gemma3-tiny, window 8): sequences far
// longer than the window, batched together, chunked under a small token budget, preempted when
// the pool runs short and with the prefix cache on, give exactly what each gives alone.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "engine/scheduler.h"
#include "models/model.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {
namespace {

struct Collected {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;
  bool done = false;
};

EventSink collect_into(Collected& r) {
  return [&r](RequestEvent&& e) {
    for (const SampledToken& t : e.tokens) {
      r.tokens.push_back(t.token);
      r.logprobs.push_back(t.logprob);
    }
    if (e.done) r.done = true;
  };
}

RequestParams greedy(std::vector<int32_t> prompt) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.sampling.temperature = 0.0f;
  p.max_tokens = 30;
  p.top_logprobs = 0;
  return p;
}

std::vector<Collected> run(const Model& model, const Tokenizer& tok,
                           const std::vector<std::vector<int32_t>>& prompts,
                           const SchedulerOptions& o) {
  auto sched = Scheduler::create(model, tok, o);
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  std::vector<Collected> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_TRUE((*sched)->submit(greedy(prompts[i]), collect_into(out[i])).is_ok());
  }
  EXPECT_TRUE((*sched)->run_until_idle().is_ok());
  return out;
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
    ASSERT_TRUE((*sched)->submit(greedy(prompts[i]), collect_into(together[i])).is_ok());
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
