// Speculative decoding: the prompt-lookup draft, a draft model's token and its distribution,
// the draft model's vocabulary check; sampled decoding with a draft model distributed as plain
// decoding (chi-square); and in the Scheduler, a request that verifies prompt-lookup drafts in
// the batch it shares with other sequences gives exactly the tokens (and log-probabilities, bit
// for bit) of plain decoding — greedy and sampled, on the shared tiny models, with drafts
// accepted and rejected — while the other sequence of the batch gives what it gives without it;
// stop strings, max_tokens, a full context, context shift, kept slots and cancellation still
// hold, the token budget counts the drafts, and no draft cell outlives its step. (The draft
// model in the scheduler: scheduler_draft_model_test.cpp.)
#include "engine/speculative.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "chi_square.h"
#include "engine/runtime.h"
#include "engine/scheduler.h"
#include "engine/setup.h"
#include "engine_test_util.h"
#include "models/model.h"
#include "scheduler_test_util.h"
#include "test_util.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {
namespace {

TEST(Speculative, LookupDraftsWhatFollowedTheLastEarlierOccurrence) {
  const std::vector<int32_t> h = {1, 2, 3, 4, 1, 2, 5, 6, 1, 2};
  // [1, 2] last occurred earlier at 4: 5, 6, 1, 2 followed it.
  EXPECT_EQ(lookup_draft(h, 2, 16), (std::vector<int32_t>{5, 6, 1, 2}));
  EXPECT_EQ(lookup_draft(h, 2, 3), (std::vector<int32_t>{5, 6, 1}));
  EXPECT_EQ(lookup_draft(h, 3, 16), (std::vector<int32_t>{}));     // 6, 1, 2 never occurred before
  EXPECT_EQ(lookup_draft(h, 1, 2), (std::vector<int32_t>{5, 6}));  // 2 at 5, then 5, 6
  EXPECT_EQ(lookup_draft(h, 0, 4), (std::vector<int32_t>{}));      // off
  EXPECT_EQ(lookup_draft({h.data(), 2}, 2, 4), (std::vector<int32_t>{}));  // nothing before
}

// Logits that favour the low ids: softmax(−id / 4) over n_vocab.
std::vector<float> falling_logits(int n_vocab) {
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  for (int i = 0; i < n_vocab; ++i) logits[static_cast<size_t>(i)] = -static_cast<float>(i) / 4;
  return logits;
}

// A draft token: greedy, the argmax; sampled, drawn with the distribution it came from (sorted by
// id, the token in it, summing to 1); none when the top token's probability is below p_min.
TEST(Speculative, ADraftTokenCarriesItsDistributionOrStopsBelowPMin) {
  const std::vector<float> logits = falling_logits(64);
  EXPECT_EQ(propose_draft_token(logits, 0.0f, nullptr, nullptr), 0);
  SamplerParams params;
  params.seed = 3;
  params.top_k = 0;
  params.top_p = 1.0f;
  params.min_p = 0.0f;
  Sampler sampler(params, 64);
  std::vector<DraftProposal> proposals;
  for (int i = 0; i < 5; ++i) {
    const int32_t token = propose_draft_token(logits, 0.0f, &sampler, &proposals);
    ASSERT_GE(token, 0);
    ASSERT_EQ(proposals.size(), static_cast<size_t>(i) + 1);
    const DraftProposal& d = proposals.back();
    EXPECT_EQ(d.token, token);
    EXPECT_TRUE(std::is_sorted(d.q.begin(), d.q.end(),
                               [](const Candidate& a, const Candidate& b) { return a.id < b.id; }));
    EXPECT_GT(probability_of(d.q, d.token), 0.0);
    double total = 0.0;
    for (const Candidate& c : d.q) total += c.p;
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  EXPECT_EQ(propose_draft_token(logits, 1.0f, &sampler, &proposals), -1);
  EXPECT_EQ(proposals.size(), 5u);
}

TEST(Speculative, ADraftModelOfAnotherVocabularyIsRefused) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded qwen = load_model_file("qwen2-tiny-q4_k_m.gguf");
  const Loaded stories = load_model_file("stories260K.gguf");
  ASSERT_NE(qwen.tokenizer, nullptr);
  ASSERT_NE(stories.tokenizer, nullptr);
  const Status s = check_draft_vocabulary(*qwen.tokenizer, *stories.tokenizer);
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("vocabulary"), std::string::npos) << s.message();
  EXPECT_TRUE(check_draft_vocabulary(*qwen.tokenizer, *qwen.tokenizer).is_ok());
}

// The first two tokens sampled after `prompt` under `params`, exactly: p(t1) · p(t2 | t1) from
// the sampler chain's distributions on the model's logits (index t1 * n_vocab + t2).
std::map<int64_t, double> exact_pairs(const Loaded& m, const std::vector<int32_t>& prompt,
                                      const SamplerParams& params) {
  const int32_t n_vocab = m.tokenizer->n_vocab();
  auto distribution = [&](const std::vector<int32_t>& history) {
    Sampler s(params, n_vocab);
    for (int32_t t : history) s.accept(t);
    RuntimeOptions o;
    o.n_ctx = 64;
    o.n_threads = 1;
    auto runtime = Runtime::create(*m.model, o);
    EXPECT_TRUE(runtime.is_ok());
    Batch batch;
    for (size_t p = 0; p < history.size(); ++p) {
      batch.add(history[p], static_cast<int32_t>(p), 0, p + 1 == history.size());
    }
    auto logits = (*runtime)->step(batch);
    EXPECT_TRUE(logits.is_ok());
    s.sample(logits.value());
    return s.last_candidates();
  };
  std::map<int64_t, double> pairs;
  for (const Candidate& first : distribution(prompt)) {
    std::vector<int32_t> history = prompt;
    history.push_back(first.id);
    for (const Candidate& second : distribution(history)) {
      pairs[int64_t{first.id} * n_vocab + second.id] = double{first.p} * second.p;
    }
  }
  return pairs;
}

// n seeded requests of three tokens (the second sampled from the verify forward's first row,
// through the accept/resample rule when a draft model drafts), eight at a time, against the
// exact distribution; `stats` gets the scheduler's draft counts.
test::ChiSquare pair_fit(const Loaded& m, const std::vector<int32_t>& prompt,
                         const SamplerParams& params, const Model* draft, int n,
                         SchedulerStats& stats) {
  const std::map<int64_t, double> exact = exact_pairs(m, prompt, params);
  SchedulerOptions o;
  o.n_parallel = 8;
  o.n_ctx = 64;
  o.n_threads = 1;  // thousands of tiny forwards: no barrier to wait at on a busy machine
  o.draft_model = draft;
  o.max_queue = -1;  // every request queued at once
  auto sched = Scheduler::create(*m.model, *m.tokenizer, o);
  EXPECT_TRUE(sched.is_ok()) << sched.status().message();
  if (!sched.is_ok()) return {};
  std::vector<RequestParams> requests;
  for (int i = 0; i < n; ++i) {
    RequestParams r;
    r.prompt = prompt;
    static_cast<SamplerParams&>(r.generate) = params;
    r.generate.seed = static_cast<uint64_t>(i) + 1;
    r.generate.max_tokens = 3;  // the third token is drawn after the first draft is accepted or not
    r.spec_draft_model = draft != nullptr;
    r.generate.draft_max = 3;
    requests.push_back(std::move(r));
  }
  std::vector<Collected> out = submit_collecting(**sched, std::move(requests));
  EXPECT_TRUE((*sched)->run_until_idle().is_ok());
  stats = (*sched)->stats();
  std::map<int64_t, int64_t> counts;
  int64_t outside = 0;
  for (const Collected& c : out) {
    EXPECT_EQ(c.tokens.size(), 3u);
    if (c.tokens.size() != 3) return {};
    const int64_t pair = int64_t{c.tokens[0]} * m.tokenizer->n_vocab() + c.tokens[1];
    if (exact.count(pair) == 0) ++outside;
    ++counts[pair];
  }
  std::vector<int64_t> observed = {outside};  // bin 0: pairs of probability 0
  std::vector<double> expected = {0.0};
  for (const auto& [pair, p] : exact) {
    observed.push_back(counts.count(pair) > 0 ? counts.at(pair) : 0);
    expected.push_back(p);
  }
  return test::chi_square(observed, expected);
}

// Sampled decoding with a draft model is distributed as plain decoding: the first two tokens'
// joint distribution, exact from the target's logits, fits plain and speculative draws alike
// (chi-square at the 0.001 level, seeded draws); with a quantized draft (q ≠ p) drafts are both
// accepted and rejected, with penalties and truncation in the chain.
TEST(Speculative, SampledTokensFollowTheTargetsDistribution) {
  MINFER_REQUIRE_TEST_DATA();
  const Loaded target = load_model_file("qwen2-tiny-f32.gguf");
  const Loaded draft = load_model_file("qwen2-tiny-q2_k.gguf");
  ASSERT_NE(target.tokenizer, nullptr);
  ASSERT_NE(draft.model, nullptr);
  const std::vector<int32_t> prompt = target.tokenizer->encode("Once upon a time", true, false);
  SamplerParams params;
  params.temperature = 1.0f;
  params.top_k = 4;
  params.top_p = 1.0f;
  params.min_p = 0.0f;
  params.repeat_penalty = 1.3f;
  for (int32_t id = 0; id < target.tokenizer->n_vocab(); ++id) {
    if (target.tokenizer->is_eog(id)) params.logit_bias.emplace_back(id, -INFINITY);
  }
  constexpr int kRuns = 800;
  SchedulerStats none, spec;
  const test::ChiSquare plain_fit = pair_fit(target, prompt, params, nullptr, kRuns, none);
  EXPECT_TRUE(plain_fit.fits()) << plain_fit.statistic << " > " << plain_fit.critical;
  const test::ChiSquare spec_fit = pair_fit(target, prompt, params, draft.model.get(), kRuns, spec);
  EXPECT_TRUE(spec_fit.fits()) << spec_fit.statistic << " > " << spec_fit.critical;
  EXPECT_GE(spec_fit.df, 3);

  // Both paths of the rule were taken.
  EXPECT_GT(spec.n_draft_accepted, kRuns / 10)
      << spec.n_draft_accepted << " of " << spec.n_draft_tokens;
  EXPECT_LT(spec.n_draft_accepted, spec.n_draft_tokens)
      << spec.n_draft_accepted << " of " << spec.n_draft_tokens;
}

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
  p.generate.temperature = temperature;
  p.generate.seed = 1234;
  p.generate.max_tokens = max_tokens;
  p.generate.top_logprobs = 0;
  p.generate.spec_ngram = spec_ngram;
  p.generate.draft_max = 6;
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
  p.generate.stop = {stop};
  const auto plain_stop = run_together(l, o, {p}, &max_step);
  p.generate.spec_ngram = 1;
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
    static_cast<SamplerParams&>(p.generate) =
        greedy_without_eog(*l.tokenizer, l.model->config().n_vocab);
    p.generate.context_shift = true;
    p.generate.n_keep = 4;
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
  p.generate.draft_max = 0;
  refused(p, "draft_max");
  p = request(prompt, 0.0f, 10, 2);
  p.generate.draft_min = 7;  // draft_max 6
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
