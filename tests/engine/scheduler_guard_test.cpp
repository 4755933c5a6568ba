// The scheduler's guard (DESIGN.md invariant 13): an exception in a step fails the requests it
// concerns — one request when it came while that request's logits were applied, the step's
// requests when it came in the forward — with an error event and their blocks freed; every other
// request in the batch completes exactly as it would have, and the scheduler keeps serving.
#include <gtest/gtest.h>

#include <new>
#include <stdexcept>
#include <vector>

#include "engine/scheduler.h"
#include "engine_test_util.h"
#include "scheduler_test_util.h"
#include "test_util.h"

namespace minfer::engine {
namespace {

// What one request streamed, with its error.
struct Outcome {
  Collected reply;
  Status error;
};

std::unique_ptr<Scheduler> make_scheduler(const Loaded& l) {
  SchedulerOptions o;
  o.n_parallel = 4;
  o.n_ctx = 256;
  o.token_budget = 16;
  o.prefix_cache = false;
  o.n_threads = 2;
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  return std::move(sched).value();
}

// Runs the prompts together; `hook` is the scheduler's fault hook.
std::vector<Outcome> run_together(const Loaded& l, const std::vector<std::vector<int32_t>>& prompts,
                                  std::function<void(int64_t)> hook,
                                  std::vector<int64_t>* ids = nullptr,
                                  SchedulerStats* stats = nullptr) {
  std::unique_ptr<Scheduler> sched = make_scheduler(l);
  sched->set_fault_hook(std::move(hook));
  std::vector<Outcome> out(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    EventSink collect = collect_into(out[i].reply);
    auto h = sched->submit(greedy_request(prompts[i], 24), [&out, i, collect](RequestEvent&& e) {
      if (e.done) out[i].error = e.error;
      collect(std::move(e));
    });
    EXPECT_TRUE(h.is_ok()) << h.status().message();
    if (ids != nullptr && h.is_ok()) ids->push_back((*h)->id());
  }
  EXPECT_TRUE(sched->run_until_idle().is_ok());
  EXPECT_EQ(sched->cache().n_blocks_used(), 0);  // the failed requests' blocks too
  if (stats != nullptr) *stats = sched->stats();
  return out;
}

std::vector<std::vector<int32_t>> three_prompts(const Tokenizer& tok) {
  return {tok.encode("Once upon a time", true, false),
          tok.encode("The little dog ran to the park and", true, false),
          tok.encode("Lily had a red ball", true, false)};
}

TEST(SchedulerGuard, AThrowWhileOneRequestsLogitsAreAppliedFailsOnlyThatRequest) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  const auto prompts = three_prompts(*l.tokenizer);
  const std::vector<Outcome> plain = run_together(l, prompts, nullptr);

  for (const bool bad_alloc : {false, true}) {
    std::vector<int64_t> ids;
    int calls = 0;
    SchedulerStats stats;
    // The second request fails at its fifth token.
    const std::vector<Outcome> faulty = run_together(
        l, prompts,
        [&](int64_t id) {
          if (id != ids.at(1) || ++calls != 5) return;
          if (bad_alloc) throw std::bad_alloc();
          throw std::runtime_error("injected fault");
        },
        &ids, &stats);
    EXPECT_EQ(stats.n_step_errors, 1);
    for (const size_t i : {size_t{0}, size_t{2}}) {
      EXPECT_TRUE(faulty[i].error.is_ok()) << faulty[i].error.message();
      expect_same_reply(faulty[i].reply, plain[i].reply);
    }
    const Outcome& failed = faulty[1];
    EXPECT_TRUE(failed.reply.done);
    EXPECT_EQ(failed.error.code(), ErrorCode::kInternal);
    EXPECT_EQ(failed.error.message(),
              fmt::format("[scheduler] request {} failed: {}", ids[1],
                          bad_alloc ? std::bad_alloc().what() : "injected fault"));
    EXPECT_EQ(failed.reply.tokens.size(), 4u);  // the tokens sampled before the fault
  }
}

TEST(SchedulerGuard, AThrowInTheForwardFailsTheStepsRequestsAndTheSchedulerGoesOn) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_tiny();
  const auto prompts = three_prompts(*l.tokenizer);
  std::unique_ptr<Scheduler> sched = make_scheduler(l);
  int forwards = 0;
  sched->set_fault_hook([&](int64_t id) {
    if (id == -1 && ++forwards == 3) throw std::runtime_error("forward failed");
  });
  std::vector<Outcome> first(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    auto h = sched->submit(greedy_request(prompts[i], 24), [&first, i](RequestEvent&& e) {
      if (e.done) {
        first[i].error = e.error;
        first[i].reply.done = true;
      }
    });
    ASSERT_TRUE(h.is_ok());
  }
  EXPECT_TRUE(sched->run_until_idle().is_ok());
  for (const Outcome& o : first) {
    EXPECT_TRUE(o.reply.done);
    EXPECT_NE(o.error.message().find("failed: forward failed"), std::string::npos)
        << o.error.message();
  }
  EXPECT_EQ(sched->cache().n_blocks_used(), 0);
  EXPECT_EQ(sched->stats().n_step_errors, 1);
  EXPECT_EQ(sched->stats().n_running, 0);

  // The next request runs as if nothing happened.
  const std::vector<Outcome> plain = run_together(l, {prompts[0]}, nullptr);
  Collected again;
  ASSERT_TRUE(sched->submit(greedy_request(prompts[0], 24), collect_into(again)).is_ok());
  EXPECT_TRUE(sched->run_until_idle().is_ok());
  expect_same_reply(again, plain[0].reply);
}

}  // namespace
}  // namespace minfer::engine
