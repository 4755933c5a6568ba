// The gated delta net's kernels (kernel_table.h: ssm_conv, l2_norm, delta_rule_step,
// delta_rule_chunk): every SIMD table bit for bit against ref_table at the sizes in kSizes (tails
// included), the chunked form against the token-by-token rule, and hand-computed examples that
// pin the reference.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_util.h"

namespace minfer::kernels {
namespace {

using test::all_near;
using test::all_tables;
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

// The operands of chunks of one head: L2-normalised q (scaled by 1/√dk) and k, gates in the
// ranges Qwen3.5 gives them (log decays in [-2, -0.01), write strengths in (0, 1)).
struct ChunkInputs {
  int64_t n_tokens, dk, dv;
  std::vector<float> q, k, v, g, beta;

  ChunkInputs(int64_t n, int64_t dk_, int64_t dv_, uint32_t seed)
      : n_tokens(n),
        dk(dk_),
        dv(dv_),
        q(random_floats(n * dk_, seed)),
        k(random_floats(n * dk_, seed + 1)),
        v(random_floats(n * dv_, seed + 2)),
        g(random_floats(n, seed + 3, -2.0f, -0.01f)),
        beta(random_floats(n, seed + 4, 0.05f, 1.0f)) {
    for (int64_t t = 0; t < n; ++t) {
      ref_table.l2_norm(q.data() + t * dk, 1e-6f, dk, q.data() + t * dk);
      ref_table.scale(q.data() + t * dk, 1.0f / std::sqrt(static_cast<float>(dk)), dk,
                      q.data() + t * dk);
      ref_table.l2_norm(k.data() + t * dk, 1e-6f, dk, k.data() + t * dk);
    }
  }
};

// Runs tokens [0, n_tokens) through delta_rule_chunk in chunks of `chunk`, out rows out_stride
// apart (the rest of each row left as it was).
std::vector<float> run_chunks(const KernelTable& t, const ChunkInputs& in, int64_t chunk,
                              int64_t out_stride, std::vector<float>& state) {
  std::vector<float> out(static_cast<size_t>(in.n_tokens * out_stride), -7.0f);
  std::vector<float> work(static_cast<size_t>(delta_chunk_work_floats(chunk, in.dk, in.dv)));
  for (int64_t c0 = 0; c0 < in.n_tokens; c0 += chunk) {
    DeltaChunk c;
    c.q = in.q.data() + c0 * in.dk;
    c.k = in.k.data() + c0 * in.dk;
    c.v = in.v.data() + c0 * in.dv;
    c.v_stride = in.dv;
    c.g = in.g.data() + c0;
    c.beta = in.beta.data() + c0;
    c.n = std::min(chunk, in.n_tokens - c0);
    c.dk = in.dk;
    c.dv = in.dv;
    c.out = out.data() + c0 * out_stride;
    c.out_stride = out_stride;
    c.work = work.data();
    t.delta_rule_chunk(state.data(), c);
  }
  return out;
}

// The same tokens one delta_rule_step at a time.
std::vector<float> run_steps(const ChunkInputs& in, std::vector<float>& state) {
  std::vector<float> out(static_cast<size_t>(in.n_tokens * in.dv));
  for (int64_t t = 0; t < in.n_tokens; ++t) {
    ref_table.delta_rule_step(state.data(), in.q.data() + t * in.dk, in.k.data() + t * in.dk,
                              in.v.data() + t * in.dv, std::exp(in.g[t]), in.beta[t], in.dk, in.dv,
                              out.data() + t * in.dv);
  }
  return out;
}

TEST(DeltaNetKernels, DeltaRuleChunkMatchesRefBitForBit) {
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
  struct Shape {
    int64_t n_tokens, chunk, dk, dv;
  };
  // Whole and partial chunks, chunk sizes below, at and above the vector widths, and head sizes
  // with tails (dk, dv not multiples of 4, 8 or 16) and Qwen3.5's 128.
  for (const Shape sh : {Shape{1, 64, 16, 16}, Shape{5, 4, 31, 17}, Shape{37, 16, 33, 40},
                         Shape{70, 64, 128, 128}, Shape{40, 33, 129, 7}}) {
    const ChunkInputs in(sh.n_tokens, sh.dk, sh.dv, 40);
    const int64_t out_stride = sh.dv + 3;
    const std::vector<float> state0 = random_floats(sh.dk * sh.dv, 41);
    std::vector<float> state_ref = state0;
    const std::vector<float> out_ref = run_chunks(ref_table, in, sh.chunk, out_stride, state_ref);
    for (const KernelTable* t : simd_tables()) {
      std::vector<float> state = state0;
      const std::vector<float> out = run_chunks(*t, in, sh.chunk, out_stride, state);
      EXPECT_TRUE(same_bits(out, out_ref)) << t->name << " n=" << sh.n_tokens << " dk=" << sh.dk;
      EXPECT_TRUE(same_bits(state, state_ref))
          << t->name << " n=" << sh.n_tokens << " dk=" << sh.dk;
    }
  }
}

TEST(DeltaNetKernels, DeltaRuleChunkIsTheRuleTokenByToken) {
  // The chunked form is the same recurrence in another float order: outputs and the state
  // left after several chunks (the last partial) agree with the steps to float rounding.
  for (const int64_t chunk : {int64_t{1}, int64_t{16}, int64_t{64}}) {
    const ChunkInputs in(150, 64, 48, 50);
    const std::vector<float> state0 = random_floats(in.dk * in.dv, 51, -0.5f, 0.5f);
    std::vector<float> state_steps = state0;
    const std::vector<float> expected = run_steps(in, state_steps);
    for (const KernelTable* t : all_tables()) {
      std::vector<float> state = state0;
      const std::vector<float> out = run_chunks(*t, in, chunk, in.dv, state);
      EXPECT_TRUE(all_near(out, expected, 1e-4f, 1e-5f)) << t->name << " chunk=" << chunk;
      EXPECT_TRUE(all_near(state, state_steps, 1e-4f, 1e-5f)) << t->name << " chunk=" << chunk;
    }
  }
}

TEST(DeltaNetKernels, DeltaRuleChunkByHand) {
  // One key, one value, no decay (g = 0), β = 0.5, v = 2, q = k = 1, S₀ = 0: the steps give
  // δ = 1, S = 1, out 1, then δ = 0.5 (2 − 1), S = 1.5, out 1.5. The chunk gets there by
  // Δ = (1, 1 − 0.5 · 1) and out = M Δ with M = [[1, 0], [1, 1]], exactly.
  const float one[2] = {1, 1}, v[2] = {2, 2}, g[2] = {0, 0}, beta[2] = {0.5f, 0.5f};
  float out[2] = {}, state = 0.0f;
  std::vector<float> work(static_cast<size_t>(delta_chunk_work_floats(2, 1, 1)));
  DeltaChunk c;
  c.q = one;
  c.k = one;
  c.v = v;
  c.v_stride = 1;
  c.g = g;
  c.beta = beta;
  c.n = 2;
  c.dk = 1;
  c.dv = 1;
  c.out = out;
  c.out_stride = 1;
  c.work = work.data();
  ref_table.delta_rule_chunk(&state, c);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.5f);
  EXPECT_EQ(state, 1.5f);
}

}  // namespace
}  // namespace minfer::kernels
