// The Scheduler: many sequences in one batch give exactly what each gives alone (same tokens, same
// log-probabilities bit for bit), chunked prefill under a small budget, cancellation frees the
// blocks, prefix reuse skips work and changes nothing, the queue limit, preemption when the KV
// pool runs short, and the threaded step loop.
#include "engine/scheduler.h"

#include <gtest/gtest.h>

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "engine_test_util.h"
#include "models/model.h"
#include "scheduler_test_util.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {
namespace {

std::vector<std::vector<int32_t>> prompts(const Tokenizer& tok) {
  const char* texts[] = {
      "Hello there, how are you today?",
      "The quick brown fox jumps over the lazy dog, again and again and again.",
      "1 2 3 4 5",
      ("Once upon a time, in a land far away, there lived a small dragon who loved to read books "
       "about the sea and the stars and the mountains."),
      "a",
      "Paris is the capital of France; Berlin is the capital of Germany; Rome is",
  };
  std::vector<std::vector<int32_t>> out;
  for (const char* t : texts) out.push_back(tok.encode(t, true, false));
  return out;
}

Collected run_alone(const Loaded& l, const std::vector<int32_t>& prompt, int64_t max_tokens) {
  SchedulerOptions o;
  o.n_parallel = 1;
  o.n_ctx = 512;
  o.prefix_cache = false;
  o.n_threads = 2;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  Collected c;
  EXPECT_TRUE((*sched)->submit(greedy_request(prompt, max_tokens), collect_into(c)).is_ok());
  EXPECT_TRUE((*sched)->run_until_idle().is_ok());
  EXPECT_TRUE(c.done);
  return c;
}

TEST(Scheduler, ManySequencesInOneBatchGiveWhatEachGivesAlone) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  const auto ps = prompts(*l.tokenizer);
  std::vector<Collected> alone;
  for (const auto& p : ps) alone.push_back(run_alone(l, p, 20));

  SchedulerOptions o;
  o.n_parallel = static_cast<int>(ps.size());
  o.n_ctx = 512;
  o.token_budget = 9;  // prefill chunks of a few tokens mixed with decode tokens
  o.prefix_cache = false;
  o.n_threads = 2;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok()) << sched.status().message();
  std::vector<Collected> together(ps.size());
  for (size_t i = 0; i < ps.size(); ++i) {
    ASSERT_TRUE((*sched)->submit(greedy_request(ps[i], 20), collect_into(together[i])).is_ok());
  }
  int64_t max_step = 0;
  while (true) {
    auto worked = (*sched)->step();
    ASSERT_TRUE(worked.is_ok()) << worked.status().message();
    if (!worked.value()) break;
    max_step = std::max(max_step, (*sched)->last_step_tokens());
  }
  EXPECT_LE(max_step, 9);
  for (size_t i = 0; i < ps.size(); ++i) {
    SCOPED_TRACE(i);
    ASSERT_TRUE(together[i].done);
    EXPECT_EQ(together[i].tokens, alone[i].tokens);
    EXPECT_EQ(together[i].logprobs, alone[i].logprobs);  // bit-identical logits
    EXPECT_EQ(together[i].text, alone[i].text);
    EXPECT_EQ(together[i].finish, alone[i].finish);
    EXPECT_EQ(together[i].stats.n_prompt, static_cast<int64_t>(ps[i].size()));
  }
  EXPECT_EQ((*sched)->cache().n_blocks_used(), 0);
}

// Two slots of 512 positions, prefix cache on.
Result<std::unique_ptr<Scheduler>> two_slots(const Loaded& l) {
  SchedulerOptions o;
  o.n_parallel = 2;
  o.n_ctx = 512;
  o.n_threads = 2;
  return Scheduler::create(*l.model, *l.tokenizer, o);
}

TEST(Scheduler, CancellationEndsTheRequestAndFreesItsBlocks) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  auto sched = two_slots(l);
  ASSERT_TRUE(sched.is_ok());
  Collected a, b;
  auto ha = (*sched)->submit(greedy_request(prompts(*l.tokenizer)[3], 400), collect_into(a));
  auto hb = (*sched)->submit(greedy_request(prompts(*l.tokenizer)[1], 400), collect_into(b));
  ASSERT_TRUE(ha.is_ok() && hb.is_ok());
  for (int i = 0; i < 5; ++i) ASSERT_TRUE((*sched)->step().is_ok());
  EXPECT_GT((*sched)->cache().n_blocks_used(), 0);
  (*ha)->cancel();
  (*hb)->cancel();
  ASSERT_TRUE((*sched)->step().is_ok());  // one step later both are gone
  EXPECT_TRUE(a.done);
  EXPECT_TRUE(b.done);
  EXPECT_EQ(a.finish, FinishReason::kCancelled);
  EXPECT_EQ((*sched)->cache().n_blocks_used(), 0);
  EXPECT_EQ((*sched)->stats().n_running, 0);
}

// slots() and the KV memory of stats(): a running request shows in its slot (prompt, sampled
// tokens, cached positions, its id), and the bytes in use are the held blocks' cells.
TEST(Scheduler, SlotStatesAndKvBytesFollowTheRunningRequest) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  auto sched = two_slots(l);
  ASSERT_TRUE(sched.is_ok());
  const std::vector<int32_t> prompt = prompts(*l.tokenizer)[3];
  Collected a;
  auto ha = (*sched)->submit(greedy_request(prompt, 400), collect_into(a));
  ASSERT_TRUE(ha.is_ok());
  for (int i = 0; i < 3; ++i) ASSERT_TRUE((*sched)->step().is_ok());
  const std::vector<SlotState> slots = (*sched)->slots();
  ASSERT_EQ(slots.size(), 2u);
  const SlotState& busy = slots[0].busy ? slots[0] : slots[1];
  const SlotState& idle = slots[0].busy ? slots[1] : slots[0];
  ASSERT_TRUE(busy.busy);
  EXPECT_FALSE(idle.busy);
  EXPECT_EQ(idle.request_id, -1);
  EXPECT_EQ(busy.request_id, (*ha)->id());
  EXPECT_EQ(busy.n_prompt, static_cast<int64_t>(prompt.size()));
  EXPECT_EQ(busy.n_generated, static_cast<int64_t>(a.tokens.size()));
  EXPECT_GE(busy.n_cached, static_cast<int64_t>(prompt.size()));
  const SchedulerStats st = (*sched)->stats();
  const KvCache& kv = (*sched)->cache();
  EXPECT_EQ(st.kv_bytes_per_position,
            static_cast<int64_t>(kv.block_bytes()) / kv.config().block_size);
  EXPECT_EQ(st.kv_bytes_used, kv.n_blocks_used() * static_cast<int64_t>(kv.block_bytes()));
  EXPECT_GT(st.kv_bytes_used, 0);
  EXPECT_FALSE(st.kv_cell_type.empty());
  (*ha)->cancel();
  ASSERT_TRUE((*sched)->step().is_ok());
  EXPECT_EQ((*sched)->stats().kv_bytes_used, 0);
  EXPECT_FALSE((*sched)->slots()[static_cast<size_t>(busy.id)].busy);
}

TEST(Scheduler, PrefixReuseSkipsCachedBlocksAndKeepsTheOutput) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  std::string system;
  for (int i = 0; i < 12; ++i) system += "You are a helpful assistant who answers briefly. ";
  const auto first = l.tokenizer->encode(system + "Question one?", true, false);
  const auto second = l.tokenizer->encode(system + "Another question, two?", true, false);
  ASSERT_GT(first.size(), 100u);
  const Collected expected = run_alone(l, second, 16);

  SchedulerOptions o;
  o.n_parallel = 2;
  o.n_ctx = 512;
  o.block_size = 16;
  o.n_threads = 2;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok());
  Collected a, b;
  ASSERT_TRUE((*sched)->submit(greedy_request(first, 16), collect_into(a)).is_ok());
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  EXPECT_EQ(a.stats.n_cached, 0);
  EXPECT_GT((*sched)->cache().n_blocks_cached(), 0);  // kept after the request left

  ASSERT_TRUE((*sched)->submit(greedy_request(second, 16), collect_into(b)).is_ok());
  int64_t computed = 0;
  while (true) {
    auto worked = (*sched)->step();
    ASSERT_TRUE(worked.is_ok());
    if (!worked.value()) break;
    computed += (*sched)->last_step_tokens();
  }
  // The shared prefix's full blocks were attached, not computed.
  size_t common = 0;
  while (common < first.size() && first[common] == second[common]) ++common;
  EXPECT_EQ(b.stats.n_cached, static_cast<int64_t>(common / 16 * 16));
  EXPECT_GE(b.stats.n_cached, 96);
  EXPECT_EQ(computed, static_cast<int64_t>(second.size()) - b.stats.n_cached +
                          static_cast<int64_t>(b.tokens.size()) - 1);
  EXPECT_EQ(b.tokens, expected.tokens);
  EXPECT_EQ(b.logprobs, expected.logprobs);

  // The same prompt again: everything but the block holding the last token is reused.
  Collected c;
  ASSERT_TRUE((*sched)->submit(greedy_request(second, 16), collect_into(c)).is_ok());
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  EXPECT_EQ(c.stats.n_cached, static_cast<int64_t>((second.size() - 1) / 16 * 16));
  EXPECT_EQ(c.tokens, expected.tokens);
}

TEST(Scheduler, PreemptedSequencesAreRecomputedWithTheSameOutput) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  const auto ps = prompts(*l.tokenizer);
  std::vector<Collected> alone;
  for (size_t i = 0; i < 3; ++i) alone.push_back(run_alone(l, ps[i], 40));
  SchedulerOptions o;
  o.n_parallel = 3;
  o.n_ctx = 64;
  o.n_ctx_total = 64;  // 4 blocks of 16 for three sequences that each need 2-4
  o.block_size = 16;
  o.n_threads = 2;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok());
  std::vector<Collected> together(3);
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_TRUE((*sched)->submit(greedy_request(ps[i], 40), collect_into(together[i])).is_ok());
  }
  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  EXPECT_GT((*sched)->stats().n_preemptions, 0);
  for (size_t i = 0; i < 3; ++i) {
    SCOPED_TRACE(i);
    EXPECT_EQ(together[i].tokens, alone[i].tokens);
    EXPECT_EQ(together[i].logprobs, alone[i].logprobs);
  }
}

// Options a runtime cannot take (too many threads, a budget below one context) are errors from
// create(), and the half-made scheduler goes away cleanly.
TEST(Scheduler, BadOptionsAreErrorsNotCrashes) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  SchedulerOptions threads;
  threads.n_ctx = 32;
  threads.n_threads = 100000;
  auto r = Scheduler::create(*l.model, *l.tokenizer, threads);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("[threads] 100000 threads asked for"), std::string::npos)
      << r.status().message();
  SchedulerOptions budget;
  budget.n_ctx = 64;
  budget.n_ctx_total = 32;
  r = Scheduler::create(*l.model, *l.tokenizer, budget);
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("smaller than one sequence's context"), std::string::npos);
}

TEST(Scheduler, RefusesPastTheQueueAndBadRequests) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  SchedulerOptions o;
  o.n_parallel = 1;
  o.n_ctx = 32;
  o.max_queue = 1;
  o.n_threads = 1;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok());
  Collected a, b, c;
  EXPECT_TRUE((*sched)->submit(greedy_request({1, 2, 3}, 4), collect_into(a)).is_ok());  // runs
  EXPECT_TRUE((*sched)->submit(greedy_request({1, 2, 3}, 4), collect_into(b)).is_ok());  // waits
  auto refused = (*sched)->submit(greedy_request({1, 2, 3}, 4), collect_into(c));
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.status().code(), ErrorCode::kResourceExhausted);
  EXPECT_EQ((*sched)->stats().n_waiting, 2);

  auto empty = (*sched)->submit(greedy_request({}, 4), nullptr);
  EXPECT_EQ(empty.status().code(), ErrorCode::kInvalidArgument);
  auto bad_id = (*sched)->submit(greedy_request({-1}, 4), nullptr);
  EXPECT_EQ(bad_id.status().code(), ErrorCode::kInvalidArgument);
  auto too_long = (*sched)->submit(greedy_request(std::vector<int32_t>(33, 5), 4), nullptr);
  EXPECT_EQ(too_long.status().code(), ErrorCode::kOutOfRange);

  ASSERT_TRUE((*sched)->run_until_idle().is_ok());
  EXPECT_EQ(a.finish, FinishReason::kLength);
  EXPECT_EQ(a.tokens.size(), 4u);
  EXPECT_EQ(b.tokens, a.tokens);
}

TEST(Scheduler, ThreadedLoopServesConcurrentSubmissions) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  const auto ps = prompts(*l.tokenizer);
  const Collected expected = run_alone(l, ps[0], 12);
  SchedulerOptions o;
  o.n_parallel = 4;
  o.n_ctx = 256;
  o.n_threads = 2;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  ASSERT_TRUE(sched.is_ok());
  (*sched)->start();
  std::mutex mu;
  std::condition_variable cv;
  int n_done = 0;
  std::vector<Collected> got(8);
  for (auto& g : got) {
    auto sink = [&, inner = collect_into(g)](RequestEvent&& e) {
      const bool done = e.done;
      inner(std::move(e));
      if (done) {
        std::lock_guard<std::mutex> lock(mu);
        ++n_done;
        cv.notify_all();
      }
    };
    ASSERT_TRUE((*sched)->submit(greedy_request(ps[0], 12), sink).is_ok());
  }
  std::unique_lock<std::mutex> lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return n_done == 8; }));
  for (const auto& g : got) EXPECT_EQ(g.tokens, expected.tokens);
  lock.unlock();
  (*sched)->stop();
}

}  // namespace
}  // namespace minfer::engine
