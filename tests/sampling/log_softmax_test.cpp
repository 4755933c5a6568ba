// Log-softmax of a row of logits in its two arithmetics (sampling/log_softmax.h): hand-computed
// values, no overflow for large logits (the max is subtracted first), and a uniform row.
#include "sampling/log_softmax.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

namespace minfer {
namespace {

TEST(LogSoftmax, LargeLogitsMatchTheHandComputedValue) {
  const std::vector<float> logits = {1000.0f, 999.0f, 998.0f};
  // log Σ exp = 1000 + log(1 + e⁻¹ + e⁻²): exp(1000) alone would overflow.
  const double lse = 1000.0 + std::log(1.0 + std::exp(-1.0) + std::exp(-2.0));
  EXPECT_NEAR(log_softmax_at(logits, 0), 1000.0 - lse, 1e-6);
  EXPECT_NEAR(log_softmax_at(logits, 2), 998.0 - lse, 1e-6);
  EXPECT_NEAR(log_normalizer(logits), lse, 1e-12);
}

TEST(LogSoftmax, AUniformRowGivesMinusLogN) {
  const std::vector<float> logits(512, -3.5f);
  EXPECT_DOUBLE_EQ(log_softmax_at(logits, 7), -std::log(512.0));
  EXPECT_DOUBLE_EQ(log_normalizer(logits), -3.5 + std::log(512.0));
}

}  // namespace
}  // namespace minfer
