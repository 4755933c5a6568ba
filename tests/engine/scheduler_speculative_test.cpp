// Speculative decoding in the Scheduler (RequestParams::spec_ngram): a request that verifies
// prompt-lookup drafts in the batch it shares with other sequences gives exactly the tokens (and
// log-probabilities, bit for bit) of plain decoding — greedy and sampled, on the shared tiny
// models, with drafts accepted and rejected — while the other sequence of the batch gives what
// it gives without it; stop strings, max_tokens, a full context, context shift, kept slots and
// cancellation still hold, the token budget counts the drafts, and no draft cell outlives its step.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "engine/scheduler.h"
#include "engine_test_util.h"
#include "models/model.h"
#include "scheduler_test_util.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {
namespace {

// Random weights whose greedy reply to repeating_prompt soon loops: prompt lookup drafts are
// accepted.
constexpr const char* kLooping = "qwen2.5-qwentok-tiny-q8_0.gguf";

// A prompt that replies tend to repeat: one sentence four times.
std::vector<int32_t> repeating_prompt(const Tokenizer& tok) {
  std::string text;
  for (int i = 0; i < 4; ++i) text += "Once upon a time there was a little cat. ";
  return tok.encode(text, /*add_special=*/true, /*parse_special=*/false);
}

RequestParams request(std::vector<int32_t> prompt, float temperature, int64_t max_tokens,
                      int32_t spec_ngram) {
  RequestParams p;
  p.prompt = std::move(prompt);
  p.sampling.temperature = temperature;
  p.sampling.seed = 1234;
  p.max_tokens = max_tokens;
  p.top_logprobs = 0;
  p.spec_ngram = spec_ngram;
  p.draft_max = 6;
  return p;
}

SchedulerOptions options(int n_parallel, int64_t n_ctx) {
  SchedulerOptions o;
  o.n_parallel = n_parallel;
  o.n_ctx = n_ctx;
  o.n_threads = 2;
  return o;
}

// A model and a scheduler of options(1, 256) over it (null when either fails).
struct OneSequence {
  Loaded l;
  std::unique_ptr<Scheduler> sched;  // destroyed before the model it holds
};

OneSequence one_sequence(const char* file) {
  OneSequence s{load_model_file(file), nullptr};
  if (s.l.tokenizer == nullptr) return s;
  auto sched = Scheduler::create(*s.l.model, *s.l.tokenizer, options(1, 256));
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  if (sched.is_ok()) s.sched = std::move(sched).value();
  return s;
}

// Runs the requests together to the end; returns what each streamed, and the largest step.
std::vector<Collected> run_together(const Loaded& l, const SchedulerOptions& o,
                                    std::vector<RequestParams> requests, int64_t* max_step,
                                    SchedulerStats* stats = nullptr) {
  auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  if (!sched.is_ok()) return std::vector<Collected>(requests.size());
  std::vector<Collected> out = submit_collecting(**sched, std::move(requests));
  *max_step = 0;
  while (true) {
    auto worked = (*sched)->step();
    EXPECT_TRUE(worked.is_ok()) << worked.status().message();
    if (!worked.is_ok() || !worked.value()) break;
    *max_step = std::max(*max_step, (*sched)->last_step_tokens());
    // No draft cell outlives its step: a sequence holds the cells of its prompt and sampled
    // tokens but the last (computed by the next step), fewer after a context shift.
    for (const SlotState& s : (*sched)->slots()) {
      if (s.busy) {
        EXPECT_LT(s.n_cached, s.n_prompt + std::max<int64_t>(s.n_generated, 1));
      }
    }
  }
  expect_all_done(**sched, out, stats);
  return out;
}

TEST(SchedulerSpeculative, GivesPlainDecodingsTokensAndLeavesTheOtherSequenceAlone) {
  MINFER_REQUIRE_TEST_DATA();
  int64_t accepted = 0;
  int64_t rejected = 0;
  int64_t widest = 0;
  for (const char* file : {"stories260K.gguf", "qwen2.5-qwentok-tiny-q8_0.gguf",
                           "qwen2-tiny-q4_k_m.gguf", "llama3-tiny-q4_k_m.gguf"}) {
    const Loaded l = load_model_file(file);
    ASSERT_NE(l.tokenizer, nullptr) << file;
    const std::vector<int32_t> prompt = repeating_prompt(*l.tokenizer);
    const std::vector<int32_t> other = l.tokenizer->encode("The sea and the stars", true, false);
    for (float temperature : {0.0f, 0.9f}) {
      for (int64_t budget : {int64_t{512}, int64_t{5}}) {
        SCOPED_TRACE(std::string(file) + " temperature " + std::to_string(temperature) +
                     " budget " + std::to_string(budget));
        SchedulerOptions o = options(2, 256);
        o.token_budget = budget;
        int64_t max_step = 0;
        // The other request alone, then both plain, then the first speculating.
        const auto alone = run_together(l, o, {request(other, temperature, 40, 0)}, &max_step);
        const auto plain = run_together(
            l, o, {request(prompt, temperature, 60, 0), request(other, temperature, 40, 0)},
            &max_step);
        SchedulerStats stats;
        const auto spec = run_together(
            l, o, {request(prompt, temperature, 60, 2), request(other, temperature, 40, 0)},
            &max_step, &stats);
        EXPECT_LE(max_step, budget);  // the drafts count in the budget
        widest = std::max(widest, max_step);
        expect_same_reply(spec[0], plain[0]);
        expect_same_reply(spec[1], plain[1]);
        expect_same_reply(spec[1], alone[0]);
        const RequestStats& st = spec[0].stats;
        EXPECT_LE(st.n_draft_accepted, st.n_drafted);
        EXPECT_EQ(spec[1].stats.n_drafted, 0);
        EXPECT_EQ(stats.n_draft_tokens, st.n_drafted);
        EXPECT_EQ(stats.n_draft_accepted, st.n_draft_accepted);
        EXPECT_EQ(stats.n_spec_steps > 0, st.n_drafted > 0);
        accepted += st.n_draft_accepted;
        rejected += st.n_drafted - st.n_draft_accepted;
      }
    }
  }
  // Both paths were taken, and drafts were batched beside the other sequence's token.
  EXPECT_GT(accepted, 0);
  EXPECT_GT(rejected, 0);
  EXPECT_GT(widest, 3);
}

TEST(SchedulerSpeculative, StopStringsMaxTokensAndAFullContextEndAsInPlainDecoding) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_model_file("stories260K.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  const std::vector<int32_t> prompt = repeating_prompt(*l.tokenizer);
  int64_t max_step = 0;
  // A full context (64 positions), no max_tokens, on a model whose reply soon loops (its drafts
  // are accepted up to the end).
  const Loaded q = load_model_file(kLooping);
  ASSERT_NE(q.tokenizer, nullptr);
  const std::vector<int32_t> q_prompt = repeating_prompt(*q.tokenizer);
  const SchedulerOptions small = options(1, 64);
  const auto plain_ctx = run_together(q, small, {request(q_prompt, 0.0f, -1, 0)}, &max_step);
  const auto spec_ctx = run_together(q, small, {request(q_prompt, 0.0f, -1, 1)}, &max_step);
  expect_same_reply(spec_ctx[0], plain_ctx[0]);
  EXPECT_EQ(spec_ctx[0].finish, FinishReason::kContext);
  EXPECT_GT(spec_ctx[0].stats.n_draft_accepted, 0);
  // max_tokens in the middle of what the drafts would give.
  const SchedulerOptions o = options(1, 256);
  for (int64_t max_tokens : {1, 2, 7, 23}) {
    const auto plain = run_together(l, o, {request(prompt, 0.0f, max_tokens, 0)}, &max_step);
    const auto spec = run_together(l, o, {request(prompt, 0.0f, max_tokens, 1)}, &max_step);
    expect_same_reply(spec[0], plain[0]);
    EXPECT_EQ(static_cast<int64_t>(spec[0].tokens.size()), max_tokens);
  }
  // A stop string from the reply (which repeats itself: drafts are accepted around it).
  const auto full = run_together(l, o, {request(prompt, 0.0f, 60, 0)}, &max_step);
  ASSERT_GT(full[0].text.size(), 40u);
  const std::string stop = full[0].text.substr(30, 6);
  RequestParams p = request(prompt, 0.0f, 60, 0);
  p.stops = {stop};
  const auto plain_stop = run_together(l, o, {p}, &max_step);
  p.spec_ngram = 1;
  const auto spec_stop = run_together(l, o, {p}, &max_step);
  expect_same_reply(spec_stop[0], plain_stop[0]);
  EXPECT_EQ(spec_stop[0].finish, FinishReason::kStop);
  EXPECT_EQ(spec_stop[0].stop, stop);
}

TEST(SchedulerSpeculative, ContextShiftGoesOnAsInPlainDecoding) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_model_file("stories260K.gguf");
  ASSERT_NE(l.tokenizer, nullptr);
  SchedulerOptions o = options(2, 64);
  o.cache_type = GgmlType::kF32;
  auto shifting = [&](int32_t ngram) {
    RequestParams p = request(repeating_prompt(*l.tokenizer), 0.0f, 150, ngram);
    p.sampling = greedy_without_eog(*l.tokenizer, l.model->config().n_vocab);
    p.context_shift = true;
    p.n_keep = 4;
    return p;
  };
  int64_t max_step = 0;
  const auto plain = run_together(l, o, {shifting(0)}, &max_step);
  const auto spec = run_together(l, o, {shifting(2)}, &max_step);
  expect_same_reply(spec[0], plain[0]);
  EXPECT_EQ(spec[0].tokens.size(), 150u);
  EXPECT_GT(spec[0].stats.n_shifts, 0);
  EXPECT_EQ(spec[0].stats.n_shifts, plain[0].stats.n_shifts);
  EXPECT_GT(spec[0].stats.n_draft_accepted, 0);
}

TEST(SchedulerSpeculative, AKeptSlotHoldsOnlyTheSampledTokensCells) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded l = load_model_file(kLooping);
  ASSERT_NE(l.tokenizer, nullptr);
  const std::vector<int32_t> prompt = repeating_prompt(*l.tokenizer);
  std::vector<SlotState> kept[2];
  for (int32_t ngram : {0, 1}) {
    SchedulerOptions o = options(1, 256);
    o.keep_slots = true;
    auto sched = Scheduler::create(*l.model, *l.tokenizer, o);
    ASSERT_TRUE(sched.is_ok()) << sched.status().message();
    Collected c;
    ASSERT_TRUE((*sched)->submit(request(prompt, 0.0f, 30, ngram), collect_into(c)).is_ok());
    ASSERT_TRUE((*sched)->run_until_idle().is_ok());
    ASSERT_TRUE(c.done);
    if (ngram > 0) {
      EXPECT_GT(c.stats.n_draft_accepted, 0);
    }
    kept[ngram] = (*sched)->slots();
  }
  ASSERT_EQ(kept[0].size(), 1u);
  ASSERT_EQ(kept[1].size(), 1u);
  EXPECT_GT(kept[1][0].n_cached, 0);
  EXPECT_EQ(kept[1][0].n_cached, kept[0][0].n_cached);
}

TEST(SchedulerSpeculative, CancellationFreesTheBlocksOfASpeculatingRequest) {
  MINFER_REQUIRE_TEST_DATA();
  OneSequence one = one_sequence("stories260K.gguf");
  ASSERT_NE(one.sched, nullptr);
  Scheduler& sched = *one.sched;
  Collected c;
  auto h = sched.submit(request(repeating_prompt(*one.l.tokenizer), 0.0f, 100, 1), collect_into(c));
  ASSERT_TRUE(h.is_ok()) << h.status().message();
  for (int i = 0; i < 6; ++i) ASSERT_TRUE(sched.step().is_ok());
  EXPECT_GT(sched.cache().n_blocks_used(), 0);
  (*h)->cancel();
  ASSERT_TRUE(sched.run_until_idle().is_ok());
  EXPECT_TRUE(c.done);
  EXPECT_EQ(c.finish, FinishReason::kCancelled);
  EXPECT_EQ(sched.cache().n_blocks_used(), 0);
}

TEST(SchedulerSpeculative, RefusesBadSettingsAndSlidingWindowModels) {
  MINFER_REQUIRE_TEST_DATA();
  OneSequence one = one_sequence("stories260K.gguf");
  ASSERT_NE(one.sched, nullptr);
  const std::vector<int32_t> prompt = repeating_prompt(*one.l.tokenizer);
  Scheduler& sched = *one.sched;
  auto refused = [&](RequestParams p, const char* expected) {
    auto h = sched.submit(std::move(p), nullptr);
    ASSERT_FALSE(h.is_ok());
    EXPECT_EQ(h.status().code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(h.status().message().find(expected), std::string::npos) << h.status().message();
  };
  RequestParams p = request(prompt, 0.0f, 10, kMaxSpecNgram + 1);
  refused(p, "spec_ngram");
  p = request(prompt, 0.0f, 10, 2);
  p.draft_max = 0;
  refused(p, "draft_max");
  p = request(prompt, 0.0f, 10, 2);
  p.draft_min = 7;  // draft_max 6
  refused(p, "draft_min");

  const Loaded g = load_model_file("gemma3-tiny-q8_0.gguf");
  ASSERT_NE(g.tokenizer, nullptr);
  auto windowed = Scheduler::create(*g.model, *g.tokenizer, options(1, 128));
  ASSERT_TRUE(windowed.is_ok()) << windowed.status().message();
  auto h = (*windowed)->submit(request(repeating_prompt(*g.tokenizer), 0.0f, 10, 2), nullptr);
  ASSERT_FALSE(h.is_ok());
  EXPECT_NE(h.status().message().find("sliding-window"), std::string::npos);
}

}  // namespace
}  // namespace minfer::engine
