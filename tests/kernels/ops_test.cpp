// Vector ops: every SIMD table against ref_table at every size in kSizes, plus hand-computed
// examples that pin the reference itself.
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "kernel_test_util.h"
#include "kernels/rope.h"
#include "quant/ggml_type.h"

namespace minfer::kernels {
namespace {

using test::all_near;
using test::all_tables;
using test::kSizes;
using test::random_floats;
using test::simd_tables;

// Named tolerances (relative, absolute) of each SIMD kernel against the reference.
struct Tolerance {
  float rel;
  float abs;
};
// Double accumulation in another order; the float steps are the same.
constexpr Tolerance kRmsNormTol = {1e-6f, 1e-7f};
// The SIMD exp is within ~2 ulp of expf.
constexpr Tolerance kSoftmaxTol = {2e-6f, 1e-12f};
constexpr Tolerance kSiluTol = {2e-6f, 1e-7f};
// Elementwise float ops are exactly the same operations.
constexpr Tolerance kExactTol = {0.0f, 0.0f};
// SIMD uses fma where the reference rounds the product first.
constexpr Tolerance kRopeTol = {1e-6f, 2e-7f};
constexpr Tolerance kAxpyTol = {1e-6f, 2e-7f};
// A float dot in another summation order: relative to Σ|a_i b_i|.
constexpr float kDotRelToAbsSum = 1e-5f;

void skip_without_simd() {
  if (simd_tables().empty()) GTEST_SKIP() << "this CPU runs no SIMD table";
}

TEST(Ops, RmsNormMatchesRef) {
  skip_without_simd();
  for (const KernelTable* t : simd_tables()) {
    for (int64_t n : kSizes) {
      const std::vector<float> x = random_floats(n, 1 + n, -3.0f, 3.0f);
      const std::vector<float> w = random_floats(n, 2 + n, 0.5f, 1.5f);
      std::vector<float> expected(n), actual(n);
      ref_table.rms_norm(x.data(), w.data(), 1e-6f, n, expected.data());
      t->rms_norm(x.data(), w.data(), 1e-6f, n, actual.data());
      EXPECT_TRUE(all_near(actual, expected, kRmsNormTol.rel, kRmsNormTol.abs))
          << t->name << " n=" << n;
    }
  }
}

TEST(Ops, RmsNormOfOneTwoThreeFour) {
  // mean(x²) = 30 / 4 = 7.5; 1 / sqrt(7.5 + 1e-6) = 0.36514834.
  const std::vector<float> x = {1, 2, 3, 4};
  const std::vector<float> w = {1, 1, 1, 2};
  const std::vector<float> expected = {0.36514834f, 0.73029668f, 1.09544503f, 2.92118672f};
  for (const KernelTable* t : all_tables()) {
    std::vector<float> y(4);
    t->rms_norm(x.data(), w.data(), 1e-6f, 4, y.data());
    EXPECT_TRUE(all_near(y, expected, 1e-6f, 0.0f)) << t->name;
  }
}

TEST(Ops, SoftmaxMatchesRef) {
  skip_without_simd();
  for (const KernelTable* t : simd_tables()) {
    for (int64_t n : kSizes) {
      const std::vector<float> x = random_floats(n, 3 + n, -20.0f, 20.0f);
      std::vector<float> expected(n), actual(n);
      ref_table.softmax(x.data(), n, expected.data());
      t->softmax(x.data(), n, actual.data());
      EXPECT_TRUE(all_near(actual, expected, kSoftmaxTol.rel, kSoftmaxTol.abs))
          << t->name << " n=" << n;
    }
  }
}

TEST(Ops, SoftmaxGivesMaskedEntriesExactlyZero) {
  const float kNegInf = -std::numeric_limits<float>::infinity();
  for (const KernelTable* t : all_tables()) {
    for (int64_t n : {int64_t{3}, int64_t{17}, int64_t{40}}) {
      std::vector<float> x = random_floats(n, 4, -5.0f, 5.0f);
      for (int64_t i = 1; i < n; i += 2) x[i] = kNegInf;
      std::vector<float> y(n);
      t->softmax(x.data(), n, y.data());
      double sum = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        if (i % 2 == 1) {
          EXPECT_EQ(y[i], 0.0f) << t->name << " n=" << n << " i=" << i;
        } else {
          EXPECT_GT(y[i], 0.0f) << t->name << " n=" << n << " i=" << i;
        }
        sum += y[i];
      }
      EXPECT_NEAR(sum, 1.0, 1e-5) << t->name;
    }
  }
}

TEST(Ops, ExpSumGivesShiftedExponentialsAndTheirSumInPlace) {
  // e^(x - shift) for every entry (-inf: exactly 0), the double sum returned, and y may be x.
  const float kNegInf = -std::numeric_limits<float>::infinity();
  for (const KernelTable* t : all_tables()) {
    for (int64_t n : kSizes) {
      std::vector<float> x = random_floats(n, 9 + n, -20.0f, 3.0f);
      if (n > 2) x[1] = kNegInf;
      std::vector<float> y = x;
      const double sum = t->exp_sum(y.data(), 3.0f, n, y.data());
      double expected_sum = 0.0;
      for (int64_t i = 0; i < n; ++i) {
        const double e = std::exp(static_cast<double>(x[i]) - 3.0);
        EXPECT_NEAR(y[i], e, 2e-6 * e) << t->name << " n=" << n << " i=" << i;
        if (x[i] == kNegInf) {
          EXPECT_EQ(y[i], 0.0f) << t->name;
        }
        expected_sum += y[i];
      }
      EXPECT_NEAR(sum, expected_sum, 1e-12 * expected_sum + 1e-30) << t->name << " n=" << n;
    }
  }
}

TEST(Ops, RowLoopsRepeatDotAndAxpyBitForBit) {
  // dot_rows_f32 / weighted_sum_f32 are attention's per-block loops over several query rows:
  // each pair must give exactly what dot_f32 / axpy_f32 give it, whatever the width (tails,
  // more than 64 floats, the head sizes AVX-512 holds in registers) and however many x / y rows
  // share the call.
  for (const KernelTable* t : all_tables()) {
    for (int64_t n : {int64_t{1}, int64_t{8}, int64_t{31}, int64_t{64}, int64_t{80}, int64_t{128},
                      int64_t{130}, int64_t{256}}) {
      // 37 rows: two groups of 16 (AVX-512 reduces 16 rows at once) and a tail. x rows: AVX-512
      // takes up to 8 in one pass (2, 5, 6, 7, 8), more in groups held in registers (4 of 64
      // floats, 2 of 128, 1 of 256) and the rest in one pass (9, 11); weighted sums take y rows 4
      // at a time and 1 to 3 in one pass, a 128-float row in one pass over the rows for 1 or 2.
      for (const int64_t n_x :
           {int64_t{2}, int64_t{5}, int64_t{6}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{11}}) {
        const int64_t n_rows = 37;
        const int64_t stride = n + 3;
        const int64_t out_stride = n_rows + 2;
        const std::vector<float> rows = random_floats(n_rows * stride, 11 + n, -2.0f, 2.0f);
        const std::vector<float> x = random_floats(n_x * stride, 12 + n, -2.0f, 2.0f);
        const std::vector<float> w = random_floats(n_x * out_stride, 13 + n, 0.0f, 1.0f);
        std::vector<float> dots(static_cast<size_t>(n_x * out_stride), -1.0f);
        t->dot_rows_f32({rows.data(), n_rows, stride}, {x.data(), n_x, stride}, n, 0.125f,
                        dots.data(), out_stride);
        std::vector<float> y = random_floats(n_x * stride, 14 + n, -1.0f, 1.0f);
        std::vector<float> y_expected = y;
        t->weighted_sum_f32({w.data(), n_x, out_stride}, {rows.data(), n_rows, stride}, n, y.data(),
                            stride);
        for (int64_t i = 0; i < n_x; ++i) {
          for (int64_t j = 0; j < n_rows; ++j) {
            EXPECT_EQ(dots[i * out_stride + j],
                      t->dot_f32(rows.data() + j * stride, x.data() + i * stride, n) * 0.125f)
                << t->name << " n=" << n << " x " << i << " of " << n_x << " row " << j;
            t->axpy_f32(w[i * out_stride + j], rows.data() + j * stride, n,
                        y_expected.data() + i * stride);
          }
          EXPECT_EQ(dots[i * out_stride + n_rows], -1.0f) << t->name << " wrote past its row";
        }
        EXPECT_EQ(0, std::memcmp(y.data(), y_expected.data(), y.size() * sizeof(float)))
            << t->name << " n=" << n << " x rows " << n_x;
      }
    }
  }
}

TEST(Ops, F16RowLoopsAreTheF32LoopsOnTheConvertedRows) {
  // dot_rows_f16 / weighted_sum_f16 read attention's f16 cells where they lie: bit for bit what
  // the f32 loops give on the rows converted, for the same widths, row counts and x counts.
  int tables_with_f16_loops = 0;
  for (const KernelTable* t : all_tables()) {
    if (t->dot_rows_f16 == nullptr || t->weighted_sum_f16 == nullptr) {
      EXPECT_EQ(t->dot_rows_f16, nullptr) << t->name << " has one f16 loop without the other";
      EXPECT_EQ(t->weighted_sum_f16, nullptr) << t->name << " has one f16 loop without the other";
      continue;
    }
    ++tables_with_f16_loops;
    for (int64_t n : {int64_t{1}, int64_t{8}, int64_t{31}, int64_t{64}, int64_t{80}, int64_t{128},
                      int64_t{130}, int64_t{256}}) {
      for (const int64_t n_rows : {int64_t{7}, int64_t{32}, int64_t{37}}) {
        for (const int64_t n_x : {int64_t{2}, int64_t{5}, int64_t{7}, int64_t{8}, int64_t{11}}) {
          const int64_t stride = n + 3;
          const int64_t out_stride = n_rows + 2;
          std::vector<uint16_t> rows16(static_cast<size_t>(n_rows * stride));
          t->f32_to_f16(random_floats(n_rows * stride, 21 + n, -2.0f, 2.0f).data(), n_rows * stride,
                        rows16.data());
          std::vector<float> rows(rows16.size());
          t->f16_to_f32(rows16.data(), n_rows * stride, rows.data());
          const std::vector<float> x = random_floats(n_x * stride, 22 + n, -2.0f, 2.0f);
          const std::vector<float> w = random_floats(n_x * out_stride, 23 + n, 0.0f, 1.0f);
          std::vector<float> dots(static_cast<size_t>(n_x * out_stride), -1.0f);
          std::vector<float> dots_expected = dots;
          t->dot_rows_f16({rows16.data(), n_rows, stride}, {x.data(), n_x, stride}, n, 0.125f,
                          dots.data(), out_stride);
          t->dot_rows_f32({rows.data(), n_rows, stride}, {x.data(), n_x, stride}, n, 0.125f,
                          dots_expected.data(), out_stride);
          EXPECT_EQ(0, std::memcmp(dots.data(), dots_expected.data(), dots.size() * sizeof(float)))
              << t->name << " dot_rows_f16 n=" << n << " rows " << n_rows << " x " << n_x;
          std::vector<float> y = random_floats(n_x * stride, 24 + n, -1.0f, 1.0f);
          std::vector<float> y_expected = y;
          t->weighted_sum_f16({w.data(), n_x, out_stride}, {rows16.data(), n_rows, stride}, n,
                              y.data(), stride);
          t->weighted_sum_f32({w.data(), n_x, out_stride}, {rows.data(), n_rows, stride}, n,
                              y_expected.data(), stride);
          EXPECT_EQ(0, std::memcmp(y.data(), y_expected.data(), y.size() * sizeof(float)))
              << t->name << " weighted_sum_f16 n=" << n << " rows " << n_rows << " y " << n_x;
          // Rows to prefetch (the next rows the caller reads) change nothing.
          const std::vector<uint16_t> next(rows16.size(), 0x3C00);
          std::vector<float> dots_prefetching(dots.size(), -1.0f);
          t->dot_rows_f16({rows16.data(), n_rows, stride, next.data()}, {x.data(), n_x, stride}, n,
                          0.125f, dots_prefetching.data(), out_stride);
          EXPECT_EQ(0,
                    std::memcmp(dots_prefetching.data(), dots.data(), dots.size() * sizeof(float)))
              << t->name << " dot_rows_f16 with prefetch n=" << n;
          std::vector<float> y_prefetching = random_floats(n_x * stride, 24 + n, -1.0f, 1.0f);
          t->weighted_sum_f16({w.data(), n_x, out_stride},
                              {rows16.data(), n_rows, stride, next.data()}, n, y_prefetching.data(),
                              stride);
          EXPECT_EQ(0, std::memcmp(y_prefetching.data(), y.data(), y.size() * sizeof(float)))
              << t->name << " weighted_sum_f16 with prefetch n=" << n;
        }
      }
    }
  }
  if (tables_with_f16_loops == 0) GTEST_SKIP() << "no table on this CPU has the f16 row loops";
}

TEST(Ops, Q8WeightedSumIsTheF32LoopOnTheConvertedRows) {
  // weighted_sum_q8_0 reads attention's q8_0 values where they lie: bit for bit what
  // weighted_sum_f32 gives on the rows converted by cells_to_f32, for widths that are multiples
  // of 32 (the head sizes held in registers and others), row counts with and without tails, rows
  // a block apart (stride past the row), with and without rows to prefetch.
  constexpr auto kQ8 = static_cast<size_t>(GgmlType::kQ8_0);
  constexpr int64_t kBlock = 34;  // bytes per 32 values
  int tables_with_q8_loop = 0;
  for (const KernelTable* t : all_tables()) {
    if (t->weighted_sum_q8_0 == nullptr) continue;
    ++tables_with_q8_loop;
    for (int64_t n :
         {int64_t{32}, int64_t{64}, int64_t{96}, int64_t{128}, int64_t{160}, int64_t{256}}) {
      for (const int64_t n_rows : {int64_t{7}, int64_t{32}, int64_t{37}}) {
        for (const int64_t n_x : {int64_t{1}, int64_t{2}, int64_t{5}, int64_t{7}, int64_t{11}}) {
          const int64_t stride = n / 32 * kBlock + kBlock;  // bytes: a spare block between rows
          const int64_t x_stride = n + 3;
          const int64_t out_stride = n_rows + 2;
          std::vector<uint8_t> cells(static_cast<size_t>(n_rows * stride), 0xEE);
          std::vector<float> rows(static_cast<size_t>(n_rows * n));
          const std::vector<float> source = random_floats(n_rows * n, 41 + n, -2.0f, 2.0f);
          for (int64_t j = 0; j < n_rows; ++j) {
            t->cells_from_f32[kQ8](source.data() + j * n, cells.data() + j * stride, n);
            t->cells_to_f32[kQ8](cells.data() + j * stride, rows.data() + j * n, n);
          }
          const std::vector<float> w = random_floats(n_x * out_stride, 43 + n, 0.0f, 1.0f);
          const std::vector<uint8_t> next(cells.size(), 0x11);
          for (const uint8_t* prefetch : {static_cast<const uint8_t*>(nullptr), next.data()}) {
            std::vector<float> y = random_floats(n_x * x_stride, 44 + n, -1.0f, 1.0f);
            std::vector<float> y_expected = y;
            t->weighted_sum_q8_0({w.data(), n_x, out_stride},
                                 {cells.data(), n_rows, stride, prefetch}, n, y.data(), x_stride);
            t->weighted_sum_f32({w.data(), n_x, out_stride}, {rows.data(), n_rows, n}, n,
                                y_expected.data(), x_stride);
            EXPECT_EQ(0, std::memcmp(y.data(), y_expected.data(), y.size() * sizeof(float)))
                << t->name << " weighted_sum_q8_0 n=" << n << " rows " << n_rows << " y " << n_x;
          }
        }
      }
    }
  }
  if (tables_with_q8_loop == 0) GTEST_SKIP() << "no table on this CPU has the q8_0 loop";
}

TEST(Ops, MaxPassesOverNaNs) {
  // Attention's running max of a row's scores: every table gives ref's max at every size (tails
  // included), NaNs in x never win, and init stands when nothing beats it.
  const float kNaN = std::numeric_limits<float>::quiet_NaN();
  for (int64_t n : kSizes) {
    std::vector<float> x = random_floats(n, 31 + n, -4.0f, 4.0f);
    for (int64_t i = 0; i < n; i += 5) x[static_cast<size_t>(i)] = kNaN;
    for (const float init : {-std::numeric_limits<float>::infinity(), 0.5f, 100.0f}) {
      const float expected = ref_table.max_f32(x.data(), n, init);
      EXPECT_FALSE(std::isnan(expected)) << "n=" << n;
      for (const KernelTable* t : all_tables()) {
        EXPECT_EQ(t->max_f32(x.data(), n, init), expected) << t->name << " n=" << n;
      }
    }
    EXPECT_EQ(ref_table.max_f32(x.data(), n, 100.0f), 100.0f) << "n=" << n;
  }
  const std::vector<float> x = {1.0f, kNaN, 3.0f, 2.0f};
  EXPECT_EQ(ref_table.max_f32(x.data(), 4, -1.0f), 3.0f);
}

TEST(Ops, SoftmaxSubtractsTheMax) {
  // Without subtracting the max, exp(1000) overflows to inf and the result is NaN.
  const std::vector<float> x = {1000.0f, 999.0f, 998.0f};
  const float e1 = std::exp(-1.0f), e2 = std::exp(-2.0f);
  const float s = 1.0f + e1 + e2;
  const std::vector<float> expected = {1.0f / s, e1 / s, e2 / s};
  for (const KernelTable* t : all_tables()) {
    std::vector<float> y(3);
    t->softmax(x.data(), 3, y.data());
    EXPECT_TRUE(all_near(y, expected, 1e-6f, 0.0f)) << t->name;
  }
}

TEST(Ops, SiluAndSwigluMatchRef) {
  skip_without_simd();
  for (const KernelTable* t : simd_tables()) {
    for (int64_t n : kSizes) {
      const std::vector<float> g = random_floats(n, 5 + n, -12.0f, 12.0f);
      const std::vector<float> u = random_floats(n, 6 + n, -2.0f, 2.0f);
      std::vector<float> expected(n), actual(n);
      ref_table.silu(g.data(), n, expected.data());
      t->silu(g.data(), n, actual.data());
      EXPECT_TRUE(all_near(actual, expected, kSiluTol.rel, kSiluTol.abs))
          << t->name << " silu n=" << n;
      ref_table.swiglu(g.data(), u.data(), n, expected.data());
      t->swiglu(g.data(), u.data(), n, actual.data());
      EXPECT_TRUE(all_near(actual, expected, kSiluTol.rel, kSiluTol.abs))
          << t->name << " swiglu n=" << n;
    }
  }
}

TEST(Ops, GegluMatchesRefExactly) {
  skip_without_simd();
  for (const KernelTable* t : simd_tables()) {
    for (int64_t n : kSizes) {
      // Past ±10 on both sides: the table's ends, the linear and the zero ranges.
      const std::vector<float> g = random_floats(n, 15 + n, -12.0f, 12.0f);
      const std::vector<float> u = random_floats(n, 16 + n, -2.0f, 2.0f);
      std::vector<float> expected(n), actual(n);
      ref_table.geglu(g.data(), u.data(), n, expected.data());
      t->geglu(g.data(), u.data(), n, actual.data());
      EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), actual.size() * sizeof(float)))
          << t->name << " geglu n=" << n;
      actual = g;  // in place: y is gate
      t->geglu(actual.data(), u.data(), n, actual.data());
      EXPECT_EQ(0, std::memcmp(actual.data(), expected.data(), actual.size() * sizeof(float)))
          << t->name << " geglu in place n=" << n;
    }
  }
}

// Infinities take the ends (0 and x), NaN stays NaN, on every table.
TEST(Ops, GegluSpecialValues) {
  const float inf = std::numeric_limits<float>::infinity();
  const std::vector<float> x = {-inf, inf, std::numeric_limits<float>::quiet_NaN(), -10.0f};
  const std::vector<float> up = {2.0f, 2.0f, 1.0f, 1.0f};
  for (const KernelTable* t : all_tables()) {
    std::vector<float> y(x.size());
    t->geglu(x.data(), up.data(), static_cast<int64_t>(x.size()), y.data());
    EXPECT_EQ(y[0], 0.0f) << t->name;
    EXPECT_EQ(y[1], inf) << t->name;
    EXPECT_TRUE(std::isnan(y[2])) << t->name;
    EXPECT_EQ(y[3], 0.0f) << t->name;
  }
}

TEST(Ops, GegluExample) {
  // gelu(x) = 0.5 x (1 + tanh(0.7978846 x (1 + 0.044715 x²))), rounded to f16 at x and after:
  // gelu(1) = 0.8411920 → f16 0.84130859; gelu(-1) = -0.1588080 → -0.15881348; gelu(0) = 0;
  // gelu(-10) = 0 and gelu(10) = 10 outside the table; the product with up is in float.
  const std::vector<float> x = {1.0f, -1.0f, 0.0f, -10.0f, 10.0f, 2.0f};
  const std::vector<float> up = {1.0f, 1.0f, 5.0f, 3.0f, 0.5f, -1.0f};
  const std::vector<float> expected = {0.84130859f, -0.15881348f, 0.0f, 0.0f, 5.0f, -1.9550781f};
  for (const KernelTable* t : all_tables()) {
    std::vector<float> y(x.size());
    t->geglu(x.data(), up.data(), static_cast<int64_t>(x.size()), y.data());
    EXPECT_TRUE(all_near(y, expected, 0.0f, 0.0f)) << t->name;
  }
}

TEST(Ops, SiluExample) {
  // silu(x) = x / (1 + e^-x): silu(0) = 0, silu(1) = 0.7310586, silu(-2) = -0.2384058.
  const std::vector<float> x = {0.0f, 1.0f, -2.0f};
  const std::vector<float> expected = {0.0f, 0.7310586f, -0.2384058f};
  for (const KernelTable* t : all_tables()) {
    std::vector<float> y(3);
    t->silu(x.data(), 3, y.data());
    EXPECT_TRUE(all_near(y, expected, 1e-6f, 0.0f)) << t->name;
  }
}

TEST(Ops, ElementwiseMatchRefExactly) {
  skip_without_simd();
  for (const KernelTable* t : simd_tables()) {
    for (int64_t n : kSizes) {
      const std::vector<float> a = random_floats(n, 7 + n), b = random_floats(n, 8 + n);
      std::vector<float> expected(n), actual(n);
      ref_table.add(a.data(), b.data(), n, expected.data());
      t->add(a.data(), b.data(), n, actual.data());
      EXPECT_TRUE(all_near(actual, expected, kExactTol.rel, kExactTol.abs)) << t->name;
      ref_table.mul(a.data(), b.data(), n, expected.data());
      t->mul(a.data(), b.data(), n, actual.data());
      EXPECT_TRUE(all_near(actual, expected, kExactTol.rel, kExactTol.abs)) << t->name;
      ref_table.scale(a.data(), 0.37f, n, expected.data());
      t->scale(a.data(), 0.37f, n, actual.data());
      EXPECT_TRUE(all_near(actual, expected, kExactTol.rel, kExactTol.abs)) << t->name;
      // In place (y aliases an input).
      actual = a;
      t->add(actual.data(), b.data(), n, actual.data());
      ref_table.add(a.data(), b.data(), n, expected.data());
      EXPECT_TRUE(all_near(actual, expected, 0.0f, 0.0f)) << t->name;
    }
  }
}

TEST(Ops, DotAndAxpyMatchRef) {
  skip_without_simd();
  for (const KernelTable* t : simd_tables()) {
    for (int64_t n : kSizes) {
      const std::vector<float> a = random_floats(n, 9 + n), b = random_floats(n, 10 + n);
      double abs_sum = 0.0;
      for (int64_t i = 0; i < n; ++i) abs_sum += std::fabs(a[i] * b[i]);
      EXPECT_NEAR(t->dot_f32(a.data(), b.data(), n), ref_table.dot_f32(a.data(), b.data(), n),
                  kDotRelToAbsSum * abs_sum)
          << t->name << " n=" << n;
      std::vector<float> expected = b, actual = b;
      ref_table.axpy_f32(-0.7f, a.data(), n, expected.data());
      t->axpy_f32(-0.7f, a.data(), n, actual.data());
      EXPECT_TRUE(all_near(actual, expected, kAxpyTol.rel, kAxpyTol.abs)) << t->name;
    }
  }
}

// Values that exercise rounding: ties, subnormals, overflow, infinities, NaN.
std::vector<float> conversion_inputs(int64_t n, uint32_t seed) {
  std::vector<float> v = random_floats(n, seed, -70000.0f, 70000.0f);
  const float specials[] = {0.0f,
                            -0.0f,
                            1.0f,
                            65504.0f,
                            65519.0f,
                            65520.0f,
                            1e-8f,
                            -3e-7f,
                            5.96e-8f,
                            std::numeric_limits<float>::infinity(),
                            -std::numeric_limits<float>::infinity(),
                            std::numeric_limits<float>::quiet_NaN(),
                            std::bit_cast<float>(0x3f808000u),   // bf16 tie, rounds to even
                            std::bit_cast<float>(0x3f818000u),   // bf16 tie, rounds up
                            std::bit_cast<float>(0x00000001u),   // smallest subnormal
                            std::bit_cast<float>(0x7f7fffffu)};  // max float: bf16 -> inf
  for (size_t i = 0; i < std::size(specials) && i < v.size(); ++i)
    v[i * 7 % v.size()] = specials[i];
  // Scale some to small magnitudes so f16 subnormals occur.
  for (size_t i = 3; i < v.size(); i += 5) v[i] *= 1e-9f;
  return v;
}

TEST(Ops, HalfConversionsMatchRefBitForBit) {
  skip_without_simd();
  for (const KernelTable* t : simd_tables()) {
    for (int64_t n : kSizes) {
      const std::vector<float> x = conversion_inputs(n, 11 + n);
      std::vector<uint16_t> h_ref(n), h(n), b_ref(n), b(n);
      ref_table.f32_to_f16(x.data(), n, h_ref.data());
      t->f32_to_f16(x.data(), n, h.data());
      EXPECT_EQ(h, h_ref) << t->name << " f32->f16 n=" << n;
      ref_table.f32_to_bf16(x.data(), n, b_ref.data());
      t->f32_to_bf16(x.data(), n, b.data());
      EXPECT_EQ(b, b_ref) << t->name << " f32->bf16 n=" << n;

      std::vector<float> f_ref(n), f(n);
      ref_table.f16_to_f32(h_ref.data(), n, f_ref.data());
      t->f16_to_f32(h_ref.data(), n, f.data());
      EXPECT_EQ(0, std::memcmp(f.data(), f_ref.data(), n * sizeof(float)))
          << t->name << " f16->f32 n=" << n;
      ref_table.bf16_to_f32(b_ref.data(), n, f_ref.data());
      t->bf16_to_f32(b_ref.data(), n, f.data());
      EXPECT_EQ(0, std::memcmp(f.data(), f_ref.data(), n * sizeof(float)))
          << t->name << " bf16->f32 n=" << n;
    }
  }
}

TEST(Ops, RopeMatchesRef) {
  skip_without_simd();
  for (const KernelTable* t : simd_tables()) {
    for (RopeStyle style : {RopeStyle::kNeox, RopeStyle::kAdjacent}) {
      // head_dim 64 fully rotated, 128 fully rotated, 80 with 32 rotated dims (partial), 6.
      for (auto [head_dim, n_rot] :
           {std::pair<int64_t, int64_t>{64, 64}, {128, 128}, {80, 32}, {6, 6}}) {
        const int64_t n_head = 3, n_tokens = 4;
        const std::vector<int32_t> pos = {0, 1, 17, 4000};
        const RopeConfig config{n_rot, 1000000.0f, 0.5f, style};
        std::vector<float> expected = random_floats(n_tokens * n_head * head_dim, 12 + head_dim);
        std::vector<float> actual = expected;
        apply_rope(ref_table, expected.data(), n_tokens, n_head, head_dim, pos.data(), config);
        apply_rope(*t, actual.data(), n_tokens, n_head, head_dim, pos.data(), config);
        EXPECT_TRUE(all_near(actual, expected, kRopeTol.rel, kRopeTol.abs))
            << t->name << " head_dim=" << head_dim << " n_rot=" << n_rot;
      }
    }
  }
}

TEST(Ops, RopeAtPosTwoDimFour) {
  // theta_0 = 2, theta_1 = 2 · 10000^(-2/4) = 0.02. cos 2 = -0.41614684, sin 2 = 0.90929743,
  // cos 0.02 = 0.99980001, sin 0.02 = 0.01999867.
  const std::vector<float> x = {1, 2, 3, 4};
  const int32_t pos = 2;
  // NeoX pairs (0, 2) at theta_0 and (1, 3) at theta_1.
  const std::vector<float> neox = {
      1 * -0.41614684f - 3 * 0.90929743f, 2 * 0.99980001f - 4 * 0.01999867f,
      1 * 0.90929743f + 3 * -0.41614684f, 2 * 0.01999867f + 4 * 0.99980001f};
  // Adjacent pairs (0, 1) at theta_0 and (2, 3) at theta_1.
  const std::vector<float> adjacent = {
      1 * -0.41614684f - 2 * 0.90929743f, 1 * 0.90929743f + 2 * -0.41614684f,
      3 * 0.99980001f - 4 * 0.01999867f, 3 * 0.01999867f + 4 * 0.99980001f};
  for (const KernelTable* t : all_tables()) {
    std::vector<float> y = x;
    apply_rope(*t, y.data(), 1, 1, 4, &pos, RopeConfig{4, 10000.0f, 1.0f, RopeStyle::kNeox});
    EXPECT_TRUE(all_near(y, neox, 1e-6f, 1e-6f)) << t->name << " neox";
    y = x;
    apply_rope(*t, y.data(), 1, 1, 4, &pos, RopeConfig{4, 10000.0f, 1.0f, RopeStyle::kAdjacent});
    EXPECT_TRUE(all_near(y, adjacent, 1e-6f, 1e-6f)) << t->name << " adjacent";
  }
}

TEST(Ops, RopeAnglesFollowLlamaCppsRecurrence) {
  // theta is (float)pos multiplied by theta_scale in float once per pair, not
  // pos * powf(base, -2i/d) — the two differ in the last bits for large pos.
  const RopeConfig config{128, 1000000.0f, 1.0f, RopeStyle::kNeox};
  const int64_t pos = 30000;
  std::vector<float> cos_sin(128);
  rope_angles(pos, config, cos_sin.data());
  const float theta_scale = std::pow(1000000.0f, -2.0f / 128.0f);
  float theta = static_cast<float>(pos);
  for (int i = 0; i < 64; ++i) {
    EXPECT_EQ(cos_sin[i], std::cos(theta)) << i;
    EXPECT_EQ(cos_sin[64 + i], std::sin(theta)) << i;
    theta *= theta_scale;
  }
  // Linear scaling multiplies each angle by freq_scale.
  const RopeConfig scaled{128, 1000000.0f, 0.25f, RopeStyle::kNeox};
  rope_angles(pos, scaled, cos_sin.data());
  EXPECT_EQ(cos_sin[0], std::cos(0.25f * static_cast<float>(pos)));
}

TEST(Ops, RopeFreqFactorsDivideEachPairsFrequency) {
  // Llama 3's rope_freqs: pair 0 at theta 3, pair 1 at 3 · 10000^(-2/4) = 0.03 divided by 4.
  // cos 3 = -0.98999250, sin 3 = 0.14112001; cos 0.0075 = 0.99997188, sin 0.0075 = 0.00749993.
  const float factors[2] = {1.0f, 4.0f};
  RopeConfig config{4, 10000.0f, 1.0f, RopeStyle::kAdjacent};
  config.freq_factors = factors;
  std::vector<float> cos_sin(4);
  rope_angles(3, config, cos_sin.data());
  EXPECT_TRUE(
      all_near(cos_sin, {-0.98999250f, 0.99997188f, 0.14112001f, 0.00749993f}, 1e-6f, 1e-7f));
  // Every ISA rotates with these angles: x = (1, 0, 1, 0) becomes (cos, sin) per pair.
  const int32_t pos = 3;
  for (const KernelTable* t : all_tables()) {
    std::vector<float> x = {1, 0, 1, 0};
    apply_rope(*t, x.data(), 1, 1, 4, &pos, config);
    EXPECT_TRUE(all_near(x, {-0.98999250f, 0.14112001f, 0.99997188f, 0.00749993f}, 1e-6f, 1e-7f))
        << t->name;
  }
}

TEST(Ops, YarnRampsBetweenExtrapolationAndInterpolation) {
  // n_rot 8, base 10000: theta_i = 5 · 10000^(-i/4) = 5, 0.5, 0.05, 0.005. Scale 1/4, ramp over
  // pairs [1, 3]: pairs 0 and 1 keep theta (ramp 1), pair 2 takes half of each (0.625 · theta),
  // pair 3 the scaled 0.25 · theta. Magnitude 1 + 0.1 ln 4 = 1.13862944.
  RopeConfig config{8, 10000.0f, 0.25f, RopeStyle::kNeox};
  config.ext_factor = 1.0f;
  config.yarn_low = 1.0f;
  config.yarn_high = 3.0f;
  std::vector<float> cos_sin(8);
  rope_angles(5, config, cos_sin.data());
  const float m = 1.13862944f;
  const std::vector<float> expected = {
      std::cos(5.0f) * m, std::cos(0.5f) * m, std::cos(0.03125f) * m, std::cos(0.00125f) * m,
      std::sin(5.0f) * m, std::sin(0.5f) * m, std::sin(0.03125f) * m, std::sin(0.00125f) * m};
  EXPECT_TRUE(all_near(cos_sin, expected, 1e-5f, 1e-7f));
}

TEST(Ops, YarnCorrectionDimsAsGgml) {
  // n_rot 64, original context 1024, base 1e6: 64 · ln(1024 / (32 · 2π)) / (2 ln 1e6) = 3.77
  // (floor 3) for beta_fast 32, 64 · ln(1024 / 2π) / (2 ln 1e6) = 11.80 (ceil 12) for beta_slow 1.
  RopeConfig config{64, 1000000.0f, 0.25f, RopeStyle::kNeox};
  set_yarn_corr_dims(config, 1024, 32.0f, 1.0f);
  EXPECT_EQ(config.yarn_low, 3.0f);
  EXPECT_EQ(config.yarn_high, 12.0f);
  // Clamped to [0, n_rot - 1].
  set_yarn_corr_dims(config, 4, 32.0f, 1e-15f);
  EXPECT_EQ(config.yarn_low, 0.0f);
  EXPECT_EQ(config.yarn_high, 63.0f);
}

TEST(Ops, RopeLeavesUnrotatedDimsAlone) {
  const int32_t pos = 5;
  for (const KernelTable* t : all_tables()) {
    std::vector<float> x = random_floats(2 * 80, 13);
    const std::vector<float> before = x;
    apply_rope(*t, x.data(), 1, 2, 80, &pos, RopeConfig{32, 10000.0f, 1.0f, RopeStyle::kNeox});
    for (int h = 0; h < 2; ++h) {
      for (int i = 32; i < 80; ++i) EXPECT_EQ(x[h * 80 + i], before[h * 80 + i]) << t->name;
      EXPECT_NE(x[h * 80 + 1], before[h * 80 + 1]) << t->name;
    }
  }
}

}  // namespace
}  // namespace minfer::kernels
