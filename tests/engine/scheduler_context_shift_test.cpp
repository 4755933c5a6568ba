// Context shift in the Scheduler: requests that run past n_ctx go on to max_tokens, shifting at
// the same points as a Session does (so greedy output is the Session's token for token), and two
// requests sharing a prefix block shift without touching each other's cells (the block is copied
// before a shift writes into it).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <vector>

#include "engine/generate.h"
#include "engine/scheduler.h"
#include "engine/session.h"
#include "engine_test_util.h"
#include "scheduler_test_util.h"

namespace minfer::engine {
namespace {

constexpr int64_t kCtx = 64;
constexpr int64_t kMaxTokens = 150;  // more than twice the context
constexpr int64_t kKeep = 4;

struct ShiftReply {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;  // [n_generated] of the sampled tokens
  bool done = false;
  FinishReason finish = FinishReason::kCancelled;
  RequestStats stats;
};

TEST(SchedulerContextShift, RequestsGoOnPastTheContextAsASessionDoes) {
  const Loaded l = load_tiny();
  ASSERT_NE(l.model, nullptr);
  const int64_t n_vocab = l.model->config().n_vocab;
  const SamplerParams sampling = greedy_without_eog(*l.tokenizer, n_vocab);
  // 20 tokens: the first block of 16 is shared by the two requests through the prefix cache.
  const std::vector<int32_t> prompt = some_tokens(20, 1000, 5);

  SessionOptions so;
  so.n_ctx = kCtx;
  so.n_threads = 1;
  so.cache_type = GgmlType::kF32;
  auto session = Session::create(*l.model, so);
  ASSERT_TRUE(session.is_ok()) << session.status().message();
  GenerateOptions g;
  g.sampling = sampling;
  g.n_predict = kMaxTokens;
  g.context_shift = true;
  g.n_keep = kKeep;
  auto alone = generate(**session, *l.tokenizer, prompt, g, nullptr);
  ASSERT_TRUE(alone.is_ok()) << alone.status().message();
  ASSERT_EQ(alone.value().tokens.size(), static_cast<size_t>(kMaxTokens));

  SchedulerOptions o;
  o.n_parallel = 2;
  o.n_ctx = kCtx;
  o.n_threads = 1;
  o.cache_type = GgmlType::kF32;
  o.block_size = 16;  // the prompt's first block, shared, ends before its last tokens
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok()) << sched.status().message();
  ShiftReply replies[2];
  for (ShiftReply& reply : replies) {
    // The second request comes once the first has computed (and registered) its first block:
    // it attaches that block, which both then hold while they shift.
    if (&reply != &replies[0]) {
      for (int i = 0; i < 3; ++i) ASSERT_TRUE((*sched)->step().is_ok());
    }
    RequestParams p;
    p.prompt = prompt;
    p.sampling = sampling;
    p.max_tokens = kMaxTokens;
    p.context_shift = true;
    p.n_keep = kKeep;
    p.top_logprobs = 0;  // the sampled token's logprob: a bit-exact view of the logits
    auto handle = (*sched)->submit(p, [&reply](RequestEvent&& e) {
      for (const SampledToken& t : e.tokens) {
        reply.tokens.push_back(t.token);
        reply.logprobs.push_back(t.logprob);
      }
      if (e.done) {
        reply.done = true;
        reply.finish = e.finish;
        reply.stats = e.stats;
      }
    });
    ASSERT_TRUE(handle.is_ok()) << handle.status().message();
  }
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  for (const ShiftReply& reply : replies) {
    ASSERT_TRUE(reply.done);
    EXPECT_EQ(reply.finish, FinishReason::kLength);
    EXPECT_GE(reply.stats.n_shifts, 3);
    EXPECT_EQ(reply.tokens, alone.value().tokens);
  }
  EXPECT_EQ(replies[0].stats.n_shifts, alone.value().metrics.n_shifts);
  EXPECT_EQ(replies[1].stats.n_cached, 16);
  // Bit for bit: the first request's shift did not write into the block the second still reads.
  EXPECT_EQ(replies[0].logprobs, replies[1].logprobs);
  EXPECT_EQ((*sched)->cache().n_blocks_used(), 0);
}

TEST(SchedulerContextShift, AKeepBeyondTheContextIsRefusedAtSubmit) {
  const Loaded l = load_tiny();
  ASSERT_NE(l.model, nullptr);
  SchedulerOptions o;
  o.n_parallel = 1;
  o.n_ctx = kCtx;
  o.n_threads = 1;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok()) << sched.status().message();
  RequestParams p;
  p.prompt = some_tokens(8, 1000, 5);
  p.context_shift = true;
  p.n_keep = kCtx - 1;
  auto refused = (*sched)->submit(p, nullptr);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kInvalidArgument);
  EXPECT_NE(refused.status().message().find("expected at most 62"), std::string::npos)
      << refused.status().message();
}

}  // namespace
}  // namespace minfer::engine
