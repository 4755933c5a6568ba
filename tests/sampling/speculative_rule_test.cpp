// Speculative sampling's accept/resample rule (accept_or_resample, Sampler::sample with a
// DraftProposal) on an 8-token vocabulary: seeded drafts from a draft distribution q, each put
// through the rule against the target's p, must be distributed as p (Pearson's chi-square at
// the 0.001 level; the draws are seeded, so the statistic is the same on every run), under
// several sampler settings — while the drafts themselves (what a rule that accepts every draft
// would give) must not fit p. Greedy rows give the argmax.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "chi_square.h"
#include "sampling/sampler.h"
#include "sampling_test_util.h"

namespace minfer {
namespace {

constexpr int32_t kVocab = 8;
// The target's and the draft's logits: different shapes, different most likely tokens.
const std::vector<float> kTarget = {2.0f, 1.5f, 1.0f, 0.5f, 0.0f, -0.5f, -1.0f, 2.5f};
const std::vector<float> kDraft = {0.0f, 2.5f, -1.0f, 1.0f, 2.0f, 0.5f, 1.5f, 0.0f};

// The chain's distribution of `logits` under `params` after `history`, by token id.
std::vector<double> distribution(const SamplerParams& params, const std::vector<float>& logits,
                                 const std::vector<int32_t>& history) {
  Sampler s(params, kVocab);
  for (int32_t t : history) s.accept(t);
  s.sample(logits);
  std::vector<double> p(kVocab, 0.0);
  for (const Candidate& c : s.last_candidates()) p[static_cast<size_t>(c.id)] = c.p;
  return p;
}

struct Outcome {
  std::vector<int64_t> rule;    // [kVocab] tokens the rule gave
  std::vector<int64_t> drafts;  // [kVocab] the drafts (an accept-everything rule's tokens)
  int64_t accepted = 0;
};

// n rows: a draft drawn from the draft sampler (its distribution recorded as a real draft
// model's is), then the target sampler's rule.
Outcome run_rule(const SamplerParams& params, const std::vector<int32_t>& history, int n) {
  SamplerParams draft_params = params;
  draft_params.seed = params.seed + 1000;
  Sampler draft(draft_params, kVocab);
  Sampler target(params, kVocab);
  for (int32_t t : history) {
    draft.accept(t);
    target.accept(t);
  }
  Outcome out{std::vector<int64_t>(kVocab, 0), std::vector<int64_t>(kVocab, 0), 0};
  for (int i = 0; i < n; ++i) {
    DraftProposal proposal{draft.sample(kDraft), draft.last_candidates()};
    std::sort(proposal.q.begin(), proposal.q.end(),
              [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
    const int32_t token = target.sample(kTarget, proposal);
    ++out.rule[static_cast<size_t>(token)];
    ++out.drafts[static_cast<size_t>(proposal.token)];
    if (token == proposal.token) ++out.accepted;
  }
  return out;
}

struct Case {
  std::string name;
  SamplerParams params;
  std::vector<int32_t> history;  // penalty history of both samplers
};

std::vector<Case> cases() {
  const SamplerParams plain = test::untruncated_sampling(7);
  SamplerParams truncated;  // the supports of p and q differ
  truncated.temperature = 0.7f;
  truncated.top_k = 5;
  truncated.top_p = 0.95f;
  truncated.min_p = 0.05f;
  truncated.seed = 8;
  SamplerParams penalized = plain;  // penalties at the same history on both sides
  penalized.repeat_penalty = 1.5f;
  penalized.presence_penalty = 0.5f;
  penalized.logit_bias = {{3, 1.0f}};
  penalized.seed = 9;
  return {{"plain", plain, {}}, {"truncated", truncated, {}}, {"penalized", penalized, {0, 7, 7}}};
}

TEST(SpeculativeRule, TokensAreDistributedAsTheTargetAndAcceptedDraftsAreNot) {
  constexpr int kRows = 20000;
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<double> p = distribution(c.params, kTarget, c.history);
    const std::vector<double> q = distribution(c.params, kDraft, c.history);
    const Outcome o = run_rule(c.params, c.history, kRows);
    const test::ChiSquare fit = test::chi_square(o.rule, p);
    EXPECT_TRUE(fit.fits()) << "chi-square " << fit.statistic << " > " << fit.critical << " (df "
                            << fit.df << ")";
    EXPECT_GE(fit.df, 1);
    // Accepting every draft gives q: far outside p (the test can fail).
    const test::ChiSquare wrong = test::chi_square(o.drafts, p);
    EXPECT_GT(wrong.statistic, 10.0 * wrong.critical) << wrong.statistic;
    // The drafts are distributed as q, and the rule keeps sum_t min(p(t), q(t)) of them — more
    // than the sum_t p(t) q(t) of comparing the draft with an independent sample from p.
    EXPECT_TRUE(test::chi_square(o.drafts, q).fits());
    double overlap = 0.0, coincide = 0.0;
    for (size_t t = 0; t < p.size(); ++t) {
      overlap += std::min(p[t], q[t]);
      coincide += p[t] * q[t];
    }
    const double rate = static_cast<double>(o.accepted) / kRows;
    EXPECT_NEAR(rate, overlap, 0.02);
    EXPECT_GT(overlap, coincide + 0.05);
  }
}

TEST(SpeculativeRule, RejectedDraftsAreNeverTheToken) {
  // q puts all its mass on token 1: rejected whenever p(1) < 1, then drawn from p without 1.
  DraftProposal point{1, {{1, 0.0f, 1.0f}}};
  std::vector<Candidate> p = {{0, 0.0f, 0.5f}, {1, 0.0f, 0.3f}, {2, 0.0f, 0.2f}};
  SeededRandom random(3);
  std::vector<int64_t> counts(3, 0);
  for (int i = 0; i < 10000; ++i)
    ++counts[static_cast<size_t>(accept_or_resample(p, point, random))];
  EXPECT_TRUE(test::chi_square(counts, std::vector<double>{0.5, 0.3, 0.2}).fits());
  // p(x) ≥ q(x): always x.
  DraftProposal spread{0, {{0, 0.0f, 0.25f}, {1, 0.0f, 0.75f}}};
  for (int i = 0; i < 100; ++i) EXPECT_EQ(accept_or_resample(p, spread, random), 0);
  // p(x) = 0: never x.
  DraftProposal outside{5, {{5, 0.0f, 1.0f}}};
  for (int i = 0; i < 100; ++i) EXPECT_NE(accept_or_resample(p, outside, random), 5);
}

TEST(SpeculativeRule, GreedyRowsGiveTheArgmax) {
  SamplerParams greedy;
  greedy.temperature = 0.0f;
  Sampler target(greedy, kVocab);
  for (int32_t draft = 0; draft < kVocab; ++draft) {
    const DraftProposal proposal{draft, {{draft, 0.0f, 1.0f}}};
    EXPECT_EQ(target.sample(kTarget, proposal), 7);  // kTarget's argmax
  }
}

}  // namespace
}  // namespace minfer
