// Pearson's chi-square goodness-of-fit test, for the statistical tests of sampling (speculative
// decoding's accept/resample rule): do the counts of seeded draws fit the expected distribution?
// The draws are seeded, so a test's statistic is the same on every run.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <span>

#include "core/check.h"

namespace minfer::test {

struct ChiSquare {
  double statistic = 0.0;
  int df = 0;             // degrees of freedom: bins after pooling, less one
  double critical = 0.0;  // the statistic exceeded with probability 0.001 when the counts fit
  bool fits() const { return statistic <= critical; }
};

// The upper 0.001 quantile of the chi-square distribution with df degrees of freedom
// (Wilson–Hilferty 1931: (X/df)^(1/3) is close to normal; within 1% for df ≥ 3).
inline double chi_square_critical(int df) {
  constexpr double kZ = 3.0902;  // the standard normal's upper 0.001 quantile
  const double k = df;
  const double a = 2.0 / (9.0 * k);
  return k * std::pow(1.0 - a + kZ * std::sqrt(a), 3.0);
}

// counts[i] draws of outcome i, expected with probability probs[i] (summing to ~1). Outcomes
// expected fewer than 5 times are pooled into one bin (added to the smallest other bin when the
// pool is still below 5). A draw of an outcome of probability 0 gives an infinite statistic.
inline ChiSquare chi_square(std::span<const int64_t> counts, std::span<const double> probs) {
  MINFER_CHECK(counts.size() == probs.size(), "chi_square: counts and probs differ in size");
  int64_t n = 0;
  for (int64_t c : counts) n += c;
  ChiSquare out;
  double pooled_expected = 0.0;
  double pooled_observed = 0.0;
  int bins = 0;
  double smallest_expected = std::numeric_limits<double>::infinity();
  double smallest_observed = 0.0;
  for (size_t i = 0; i < counts.size(); ++i) {
    const double expected = probs[i] * static_cast<double>(n);
    const double observed = static_cast<double>(counts[i]);
    if (probs[i] <= 0.0) {
      if (observed > 0.0) out.statistic = std::numeric_limits<double>::infinity();
      continue;
    }
    if (expected < 5.0) {
      pooled_expected += expected;
      pooled_observed += observed;
      continue;
    }
    out.statistic += (observed - expected) * (observed - expected) / expected;
    ++bins;
    if (expected < smallest_expected) {
      smallest_expected = expected;
      smallest_observed = observed;
    }
  }
  if (pooled_expected >= 5.0 || (pooled_expected > 0.0 && bins == 0)) {
    out.statistic +=
        (pooled_observed - pooled_expected) * (pooled_observed - pooled_expected) / pooled_expected;
    ++bins;
  } else if (pooled_expected > 0.0) {
    // Into the smallest bin: take its term out and put the merged one in.
    const double e = smallest_expected, o = smallest_observed;
    out.statistic -= (o - e) * (o - e) / e;
    const double me = e + pooled_expected, mo = o + pooled_observed;
    out.statistic += (mo - me) * (mo - me) / me;
  }
  out.df = bins - 1;
  out.critical = out.df > 0 ? chi_square_critical(out.df) : 0.0;
  return out;
}

}  // namespace minfer::test
