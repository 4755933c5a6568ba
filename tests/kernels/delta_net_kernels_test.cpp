// The gated delta net's kernels (kernel_table.h: ssm_conv, l2_norm, delta_rule_step): every SIMD
// table bit for bit against ref_table at the sizes in kSizes (tails included), and hand-computed
// examples that pin the reference.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_util.h"

namespace minfer::kernels {
namespace {

using test::kSizes;
using test::random_floats;
using test::simd_tables;

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

std::vector<float> conv(const KernelTable& t, const std::vector<float>& in,
                        const std::vector<float>& taps, int64_t d_conv, int64_t n) {
  std::vector<const float*> rows;
  for (int64_t k = 0; k < d_conv; ++k) rows.push_back(in.data() + k * n);
  std::vector<float> y(static_cast<size_t>(n), -1.0f);
  t.ssm_conv(rows.data(), taps.data(), d_conv, n, y.data());
  return y;
}

TEST(DeltaNetKernels, ConvMatchesRefBitForBit) {
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  for (const int64_t d_conv : {2, 4}) {
    for (const int64_t n : kSizes) {
      const std::vector<float> in = random_floats(d_conv * n, 1);
      const std::vector<float> taps = random_floats(d_conv * n, 2);
      const std::vector<float> expected = conv(ref_table, in, taps, d_conv, n);
      for (const KernelTable* t : simd_tables()) {
        EXPECT_TRUE(same_bits(conv(*t, in, taps, d_conv, n), expected))
            << t->name << " d_conv=" << d_conv << " n=" << n;
      }
    }
  }
}

TEST(DeltaNetKernels, ConvOfKnownTaps) {
  // Two channels, taps (1, 2, 3) and (0.5, 0, -1), inputs oldest first.
  const std::vector<float> in = {1, 10, 2, 20, 3, 30};     // [3][2]
  const std::vector<float> taps = {1, 0.5f, 2, 0, 3, -1};  // [3][2]
  const std::vector<float> y = conv(ref_table, in, taps, 3, 2);
  EXPECT_EQ(y[0], 1 * 1 + 2 * 2 + 3 * 3);
  EXPECT_EQ(y[1], 0.5f * 10 + 0 * 20 - 1 * 30);
}

TEST(DeltaNetKernels, L2NormMatchesRefBitForBitInPlace) {
  for (const int64_t n : kSizes) {
    const std::vector<float> x = random_floats(n, 3);
    std::vector<float> expected(static_cast<size_t>(n));
    ref_table.l2_norm(x.data(), 1e-6f, n, expected.data());
    double norm = 0;
    for (const float v : expected) norm += static_cast<double>(v) * v;
    EXPECT_NEAR(norm, 1.0, 1e-5) << "n=" << n;
    for (const KernelTable* t : simd_tables()) {
      std::vector<float> y = x;
      t->l2_norm(y.data(), 1e-6f, n, y.data());
      EXPECT_TRUE(same_bits(y, expected)) << t->name << " n=" << n;
    }
  }
}

TEST(DeltaNetKernels, L2NormOfThreeFourAndOfZeros) {
  const std::vector<float> x = {3, 4};
  std::vector<float> y(2);
  ref_table.l2_norm(x.data(), 1e-6f, 2, y.data());
  EXPECT_FLOAT_EQ(y[0], 0.6f);
  EXPECT_FLOAT_EQ(y[1], 0.8f);
  // A zero vector is divided by eps, not by 0.
  const std::vector<float> zeros(5, 0.0f);
  std::vector<float> z(5, 1.0f);
  ref_table.l2_norm(zeros.data(), 1e-6f, 5, z.data());
  for (const float v : z) EXPECT_EQ(v, 0.0f);
}

TEST(DeltaNetKernels, DeltaRuleStepMatchesRefBitForBitOverSteps) {
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  for (const int64_t dk : {int64_t{1}, int64_t{16}, int64_t{31}, int64_t{128}, int64_t{129}}) {
    const int64_t dv = dk == 1 ? 3 : 17;
    const std::vector<float> state0 = random_floats(dk * dv, 4);
    for (const KernelTable* t : simd_tables()) {
      std::vector<float> s_ref = state0, s = state0;
      for (int step = 0; step < 3; ++step) {
        const std::vector<float> q = random_floats(dk, 10 + step);
        const std::vector<float> k = random_floats(dk, 20 + step);
        const std::vector<float> v = random_floats(dv, 30 + step);
        std::vector<float> out_ref(static_cast<size_t>(dv)), out(static_cast<size_t>(dv));
        ref_table.delta_rule_step(s_ref.data(), q.data(), k.data(), v.data(), 0.9f, 0.7f, dk, dv,
                                  out_ref.data());
        t->delta_rule_step(s.data(), q.data(), k.data(), v.data(), 0.9f, 0.7f, dk, dv, out.data());
        EXPECT_TRUE(same_bits(out, out_ref)) << t->name << " dk=" << dk << " step " << step;
        EXPECT_TRUE(same_bits(s, s_ref)) << t->name << " dk=" << dk << " step " << step;
      }
    }
  }
}

TEST(DeltaNetKernels, DeltaRuleStepByHand) {
  // One key, one value: S = decay · S; δ = β (v − S k); S += k δ; out = S q.
  float state = 0.0f;
  const float q = 1.0f, k = 1.0f, v = 2.0f;
  float out = 0.0f;
  ref_table.delta_rule_step(&state, &q, &k, &v, 0.5f, 0.5f, 1, 1, &out);
  EXPECT_EQ(state, 1.0f);  // δ = 0.5 · (2 − 0)
  EXPECT_EQ(out, 1.0f);
  ref_table.delta_rule_step(&state, &q, &k, &v, 0.5f, 0.5f, 1, 1, &out);
  EXPECT_EQ(state, 1.25f);  // S = 0.5, δ = 0.5 · (2 − 0.5) = 0.75
  EXPECT_EQ(out, 1.25f);
}

}  // namespace
}  // namespace minfer::kernels
