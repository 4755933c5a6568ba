#include "sampling/sampler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "sampling_test_util.h"

namespace minfer {
namespace {

std::vector<Candidate> make(std::vector<float> logits) {
  std::vector<Candidate> out;
  for (size_t i = 0; i < logits.size(); ++i) out.push_back({static_cast<int32_t>(i), logits[i], 0});
  return out;
}

std::vector<int32_t> ids(const std::vector<Candidate>& c) {
  std::vector<int32_t> out;
  for (const Candidate& x : c) out.push_back(x.id);
  return out;
}

TEST(Sampler, LogitBiasAddsToTheNamedTokens) {
  auto c = make({1, 2, 3});
  const std::vector<std::pair<int32_t, float>> bias = {{0, 5.0f}, {2, -1.0f}};
  apply_logit_bias(c, bias);
  EXPECT_FLOAT_EQ(c[0].logit, 6.0f);
  EXPECT_FLOAT_EQ(c[1].logit, 2.0f);
  EXPECT_FLOAT_EQ(c[2].logit, 2.0f);
}

TEST(Sampler, RepeatPenaltyDividesPositiveAndMultipliesNegativeLogits) {
  auto c = make({2.0f, -2.0f, 4.0f});
  const std::vector<int32_t> recent = {0, 1, 1};
  apply_penalties(c, recent, 2.0f, 0.0f, 0.0f);
  EXPECT_FLOAT_EQ(c[0].logit, 1.0f);
  EXPECT_FLOAT_EQ(c[1].logit, -4.0f);
  EXPECT_FLOAT_EQ(c[2].logit, 4.0f);  // not in the window
}

TEST(Sampler, FrequencyAndPresencePenaltiesSubtractPerCountAndOnce) {
  auto c = make({10.0f, 10.0f, 10.0f});
  const std::vector<int32_t> recent = {0, 0, 0, 1};
  apply_penalties(c, recent, 1.0f, 0.5f, 0.25f);
  EXPECT_FLOAT_EQ(c[0].logit, 10.0f - 3 * 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(c[1].logit, 10.0f - 0.5f - 0.25f);
  EXPECT_FLOAT_EQ(c[2].logit, 10.0f);
}

TEST(Sampler, TopKKeepsTheKHighestSorted) {
  auto c = make({0.1f, 3.0f, -1.0f, 2.0f, 2.5f});
  apply_top_k(c, 3);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{1, 4, 3}));
  auto all = make({1, 2});
  apply_top_k(all, 0);
  EXPECT_EQ(all.size(), 2u);
}

// Top-k off the row keeps what top-k of the whole list keeps, in the same order: ties (broken by
// the lower id), infinities, signed zeros, slices of unequal length, k from 1 to n - 1.
TEST(Sampler, TopKOffTheRowIsTopKOfTheWholeList) {
  std::mt19937 rng(7);
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> values = {-inf, -1.0f, -0.0f, 0.0f, 0.5f, 2.0f, inf};
  for (size_t n : {2u, 3u, 41u, 97u, 1000u}) {
    for (int round = 0; round < 4; ++round) {
      std::vector<float> logits(n);
      for (float& x : logits) {
        x = round == 0 ? std::uniform_real_distribution<float>(-5.0f, 5.0f)(rng)
                       : values[std::uniform_int_distribution<size_t>(0, round)(rng)];
      }
      for (size_t k : {size_t{1}, size_t{2}, size_t{40}, n - 1}) {
        if (k >= n) continue;
        std::vector<Candidate> whole = make(logits);
        apply_top_k(whole, static_cast<int32_t>(k));
        std::vector<Candidate> off_row;
        ASSERT_TRUE(top_k_of_row(logits, static_cast<int32_t>(k), off_row));
        ASSERT_EQ(ids(off_row), ids(whole)) << "n " << n << " k " << k << " round " << round;
      }
    }
  }
  std::vector<Candidate> out;
  EXPECT_FALSE(top_k_of_row(std::vector<float>{1.0f, std::nanf(""), 0.0f}, 1, out));
  EXPECT_FALSE(top_k_of_row(std::vector<float>{1.0f, 2.0f}, 2, out));
  EXPECT_FALSE(top_k_of_row(std::vector<float>{1.0f, 2.0f}, 0, out));
  EXPECT_TRUE(out.empty());
}

// A sampler whose logit bias of 0 sends it through the whole list draws what the default chain
// draws off the row, with the same distribution.
TEST(Sampler, TheChainOffTheRowDrawsWhatTheWholeListDraws) {
  const int32_t n_vocab = 3000;
  std::mt19937 rng(11);
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  SamplerParams defaults;  // top-k 40, top-p 0.95, min-p 0.05, temperature 0.8
  defaults.seed = 42;
  SamplerParams biased = defaults;
  biased.logit_bias = {{5, 0.0f}};
  Sampler row(defaults, n_vocab);
  Sampler whole(biased, n_vocab);
  for (int token = 0; token < 50; ++token) {
    for (float& x : logits) x = std::round(std::normal_distribution<float>(0.0f, 3.0f)(rng) * 4.0f);
    ASSERT_EQ(row.sample(logits), whole.sample(logits));
    const std::vector<Candidate>& a = row.last_candidates();
    const std::vector<Candidate>& b = whole.last_candidates();
    ASSERT_EQ(ids(a), ids(b));
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i].p, b[i].p);
  }
}

TEST(Sampler, SoftmaxSubtractsTheMaxAndSumsToOne) {
  auto c = make({1000.0f, 1000.0f, -1000.0f});  // would overflow without the max subtracted
  softmax_candidates(c);
  EXPECT_FLOAT_EQ(c[0].p, 0.5f);
  EXPECT_FLOAT_EQ(c[1].p, 0.5f);
  EXPECT_EQ(c[2].p, 0.0f);
}

TEST(Sampler, TopPKeepsTheSmallestSetReachingP) {
  // probabilities ∝ e^(ln 0.5), e^(ln 0.3), e^(ln 0.2) → 0.5, 0.3, 0.2
  auto c = make({std::log(0.5f), std::log(0.3f), std::log(0.2f)});
  apply_top_p(c, 0.75f);
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1}));
  auto d = make({std::log(0.5f), std::log(0.3f), std::log(0.2f)});
  apply_top_p(d, 0.4f);
  EXPECT_EQ(ids(d), (std::vector<int32_t>{0}));
}

TEST(Sampler, MinPDropsTokensBelowAFractionOfTheBest) {
  auto c = make({std::log(0.6f), std::log(0.3f), std::log(0.05f), std::log(0.05f)});
  apply_min_p(c, 0.1f);  // threshold 0.06
  EXPECT_EQ(ids(c), (std::vector<int32_t>{0, 1}));
}

// The chain filters its vocabulary-sized list in place: a sampler keeps the list's memory from one
// token to the next (a new list each token cost ~400 fresh pages per token under the server).
TEST(Sampler, TheDefaultChainKeepsItsCandidateListBetweenTokens) {
  const int32_t n_vocab = 4096;
  std::vector<float> logits(static_cast<size_t>(n_vocab));
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = static_cast<float>(i % 97) * 0.05f;
  Sampler s(SamplerParams{}, n_vocab);  // top-k 40, top-p 0.95, min-p 0.05, temperature 0.8
  for (int token = 0; token < 3; ++token) {
    s.sample(logits);
    EXPECT_LE(s.last_candidates().size(), 40u);
    EXPECT_GE(s.last_candidates().capacity(), static_cast<size_t>(n_vocab));
  }
}

TEST(Sampler, TemperatureScalesLogits) {
  auto c = make({2.0f, -4.0f});
  apply_temperature(c, 0.5f);
  EXPECT_FLOAT_EQ(c[0].logit, 4.0f);
  EXPECT_FLOAT_EQ(c[1].logit, -8.0f);
}

// Greedy sampling with nothing that changes a logit reads the row directly (argmax_logits): the
// same id as argmax over the candidates, ties, signed zeros, infinities and NaNs included, and the
// same id as a greedy sampler whose logit bias of 0 sends it through the candidates.
TEST(Sampler, GreedyOnTheRowPicksWhatArgmaxOverTheCandidatesPicks) {
  const float nan = std::nanf("");
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<std::vector<float>> rows = {{1, 3, 3, 2},          {nan, 5, 1},  {-0.0f, 0.0f, -1},
                                          {0.0f, -0.0f},         {-inf, -inf}, {1, nan, 7, nan, 7},
                                          {-inf, nan, -3, -inf}, {2}};
  std::mt19937 rng(3);
  for (int n : {17, 33, 151936}) {
    std::vector<float> row(static_cast<size_t>(n));
    std::uniform_int_distribution<int> level(-4, 4);  // few values: many ties
    for (float& x : row) x = static_cast<float>(level(rng));
    row[static_cast<size_t>(n / 3)] = nan;
    rows.push_back(row);
    row[static_cast<size_t>(n - 1)] = 9;  // the maximum last, past the lanes' whole rounds
    rows.push_back(row);
  }
  for (const std::vector<float>& row : rows) {
    const size_t want = argmax(make(row));
    EXPECT_EQ(argmax_logits(row), want) << "row of " << row.size();
    SamplerParams plain;
    plain.temperature = 0.0f;
    SamplerParams biased = plain;
    biased.logit_bias = {{0, 0.0f}};  // changes nothing, but takes the candidates' path
    Sampler a(plain, static_cast<int32_t>(row.size()));
    Sampler b(biased, static_cast<int32_t>(row.size()));
    EXPECT_EQ(a.sample(row), static_cast<int32_t>(want));
    EXPECT_EQ(b.sample(row), static_cast<int32_t>(want));
  }
}

TEST(Sampler, GreedyAtTemperatureZeroPicksArgmaxLowestIdOnTies) {
  SamplerParams params;
  params.temperature = 0.0f;
  Sampler sampler(params, 4);
  const std::vector<float> logits = {1.0f, 5.0f, 5.0f, -2.0f};
  EXPECT_EQ(sampler.sample(logits), 1);
}

TEST(Sampler, TheSameSeedGivesTheSameDraws) {
  SamplerParams params = test::untruncated_sampling();
  const std::vector<float> logits = {0.0f, 0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f, 0.7f};
  auto run = [&](uint64_t seed) {
    params.seed = seed;
    Sampler s(params, 8);
    std::vector<int32_t> out;
    for (int i = 0; i < 64; ++i) out.push_back(s.sample(logits));
    return out;
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

TEST(Sampler, DrawsFollowTheDistribution) {
  Sampler s(test::untruncated_sampling(), 3);
  const std::vector<float> logits = {std::log(0.7f), std::log(0.2f), std::log(0.1f)};
  std::map<int32_t, int> counts;
  const int n = 20000;
  for (int i = 0; i < n; ++i) ++counts[s.sample(logits)];
  EXPECT_NEAR(counts[0] / double(n), 0.7, 0.02);
  EXPECT_NEAR(counts[1] / double(n), 0.2, 0.02);
  EXPECT_NEAR(counts[2] / double(n), 0.1, 0.02);
}

TEST(Sampler, PenaltyHistoryKeepsTheLastN) {
  SamplerParams params;
  params.temperature = 0.0f;
  params.repeat_penalty = 100.0f;
  params.repeat_last_n = 2;
  Sampler s(params, 3);
  const std::vector<float> logits = {3.0f, 2.0f, 1.0f};
  s.accept(0);
  EXPECT_EQ(s.sample(logits), 1);  // 0 is penalised to 0.03
  s.accept(1);
  s.accept(2);  // 0 left the window of 2
  EXPECT_EQ(s.sample(logits), 0);
}

TEST(Sampler, ValidateNamesTheBadField) {
  SamplerParams params;
  params.top_p = 1.5f;
  Status st = validate(params, 10);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("top_p"), std::string::npos);
  params.top_p = 0.9f;
  params.logit_bias = {{10, 1.0f}};
  st = validate(params, 10);
  ASSERT_FALSE(st.is_ok());
  EXPECT_NE(st.message().find("token id 10"), std::string::npos);
}

}  // namespace
}  // namespace minfer
