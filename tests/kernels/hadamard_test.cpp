// The Walsh-Hadamard rotation around quantized KV cells (kernels/hadamard.h).
#include "kernels/hadamard.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "kernel_test_util.h"

namespace minfer::kernels {
namespace {

// H_n[i][j] = (-1)^popcount(i & j) / sqrt(n): the Sylvester construction of ggml_gen_hadamard.
double hadamard_entry(int64_t n, int64_t i, int64_t j) {
  return (__builtin_popcountll(static_cast<uint64_t>(i & j)) % 2 == 0 ? 1.0 : -1.0) /
         std::sqrt(static_cast<double>(n));
}

TEST(Hadamard, RotatesEachRunByTheSylvesterMatrix) {
  for (const int64_t n : {int64_t{1}, int64_t{2}, int64_t{64}, int64_t{128}, int64_t{256}}) {
    const int64_t runs = 3;
    const std::vector<float> x =
        test::random_floats(runs * n, static_cast<uint32_t>(n), -2.0f, 2.0f);
    std::vector<float> y = x;
    hadamard_rotate(y.data(), runs, n);
    for (int64_t r = 0; r < runs; ++r) {
      for (int64_t i = 0; i < n; ++i) {
        double want = 0.0;
        for (int64_t j = 0; j < n; ++j)
          want += hadamard_entry(n, i, j) * x[static_cast<size_t>(r * n + j)];
        // log2(n) rounded additions of values of size |x| · sqrt(n) at most.
        ASSERT_NEAR(y[static_cast<size_t>(r * n + i)], want,
                    1e-6 * std::sqrt(static_cast<double>(n)) * 8)
            << "n " << n << " run " << r << " element " << i;
      }
    }
    // H H = I up to rounding: the rotation turns itself back.
    hadamard_rotate(y.data(), runs, n);
    EXPECT_TRUE(test::all_near(y, x, 1e-5f, 1e-5f)) << "n " << n;
  }
}

// ggml_compute_forward_fwht_f32's steps, one run at a time: every element times 1 / sqrtf(n),
// then the butterflies over spans 1, 2, 4, ..., n / 2.
void ggml_order_rotate(float* run, int64_t n) {
  const float scale = 1.0f / std::sqrt(static_cast<float>(n));
  for (int64_t i = 0; i < n; ++i) run[i] *= scale;
  for (int64_t span = 1; span < n; span *= 2) {
    for (int64_t i = 0; i < n; i += 2 * span) {
      for (int64_t j = i; j < i + span; ++j) {
        const float u = run[j];
        const float v = run[j + span];
        run[j] = u + v;
        run[j + span] = u - v;
      }
    }
  }
}

// The runs are rotated several at a time (their columns on the heap past 512 floats): the same bits
// as ggml's run-by-run walk for any number of runs.
TEST(Hadamard, ManyRunsGiveTheBitsOfGgmlsRunByRunOrder) {
  for (const int64_t n :
       {int64_t{1}, int64_t{4}, int64_t{64}, int64_t{128}, int64_t{512}, int64_t{1024}}) {
    for (const int64_t runs : {int64_t{1}, int64_t{7}, int64_t{8}, int64_t{9}, int64_t{17}}) {
      const std::vector<float> x =
          test::random_floats(runs * n, static_cast<uint32_t>(n + runs), -3.0f, 3.0f);
      std::vector<float> want = x;
      for (int64_t r = 0; r < runs; ++r) ggml_order_rotate(want.data() + r * n, n);
      std::vector<float> got = x;
      hadamard_rotate(got.data(), runs, n);
      ASSERT_EQ(0, std::memcmp(got.data(), want.data(), got.size() * sizeof(float)))
          << "n " << n << " runs " << runs;
    }
  }
}

TEST(Hadamard, SpreadsAUnitVectorEvenly) {
  // e_0 becomes the first column of H_64: every entry 1 / 8, exactly.
  std::vector<float> x(64, 0.0f);
  x[0] = 1.0f;
  hadamard_rotate(x.data(), 1, 64);
  for (const float v : x) EXPECT_EQ(v, 0.125f);
  // e_1: entries alternate +1/8, -1/8.
  std::vector<float> e1(64, 0.0f);
  e1[1] = 1.0f;
  hadamard_rotate(e1.data(), 1, 64);
  for (int64_t i = 0; i < 64; ++i)
    EXPECT_EQ(e1[static_cast<size_t>(i)], i % 2 == 0 ? 0.125f : -0.125f);
}

}  // namespace
}  // namespace minfer::kernels
