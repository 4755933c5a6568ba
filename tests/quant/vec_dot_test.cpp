// Reference dot products against the double-precision dot product of the dequantized operands.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "kernels/ref/ref_dot.h"
#include "quant/blocks.h"
#include "quant/quant_traits.h"
#include "quant_test_util.h"

namespace minfer {
namespace {

using test::Distribution;

// The part of each dequantized element that does not depend on its quant: the block minimum
// of the offset types (found by dequantizing with the quant bits zeroed), 0 for the others.
std::vector<float> offsets(GgmlType type, std::vector<uint8_t> q, size_t n) {
  const QuantTraits* t = quant_traits(type);
  const size_t nb = n / t->block_size;
  auto clear = [&](size_t block_offset, size_t bytes) {
    for (size_t b = 0; b < nb; ++b)
      std::memset(&q[b * t->bytes_per_block + block_offset], 0, bytes);
  };
  switch (type) {
    case GgmlType::kQ4_1:
      clear(offsetof(BlockQ4_1, qs), sizeof(BlockQ4_1::qs));
      break;
    case GgmlType::kQ5_1:
      clear(offsetof(BlockQ5_1, qh), sizeof(BlockQ5_1::qh) + sizeof(BlockQ5_1::qs));
      break;
    case GgmlType::kQ2_K:
      clear(offsetof(BlockQ2K, qs), sizeof(BlockQ2K::qs));
      break;
    case GgmlType::kQ4_K:
      clear(offsetof(BlockQ4K, qs), sizeof(BlockQ4K::qs));
      break;
    case GgmlType::kQ5_K:
      clear(offsetof(BlockQ5K, qh), sizeof(BlockQ5K::qh) + sizeof(BlockQ5K::qs));
      break;
    default:
      return std::vector<float>(n, 0.0f);
  }
  return test::dequantize_vec(type, q, n);
}

// Tolerance on |vec_dot - sum x^_i y^_i| (double), as gamma * sum (|x^_i| + |o_i|) |y^_i|
// where o_i is the offset part of x^_i (so that the separately rounded scale and minimum terms
// of the offset types are covered even when they cancel). Derivation, with u = 2^-24 the
// float32 unit roundoff:
//  * F32: each product is rounded once (u), the double sum is exact enough, the result is
//    rounded once more (u): gamma = 2u. F16, BF16: products exact, same final rounding.
//  * Block types: the integer block sums are exact; each block's float term takes at most 4
//    roundings (scale products, the multiply, the min term, their sum) and the float running
//    sum over nb blocks adds one rounding per block, each bounded by u times the sum of the
//    absolute block terms: gamma = (nb + 4) u. Q8_K's dequantized y^ = d * q is itself rounded
//    (u) and so are the K-quants' x^ = d * sc * q - dmin * m (2u): + 3u.
//  * Q4_1, Q5_1 with Q8_1: the kernel uses Q8_1's s = f16(d * sum q), computed from the f32 d,
//    instead of sum y^ = f16(d) * sum q: two f16 roundings of 2^-11 each on the min term:
//    + 2^-10.
double gamma_for(GgmlType type, int n) {
  const double u = std::ldexp(1.0, -24);
  const QuantTraits* t = quant_traits(type);
  switch (type) {
    case GgmlType::kF32:
    case GgmlType::kF16:
    case GgmlType::kBF16:
      return 2 * u;
    default:
      break;
  }
  const double nb = static_cast<double>(n) / t->block_size;
  double gamma = (nb + 4) * u;
  if (t->vec_dot_type == GgmlType::kQ8_K) gamma += 3 * u;
  if (t->vec_dot_type == GgmlType::kQ8_1) gamma += std::ldexp(1.0, -10);
  return gamma;
}

const GgmlType kWeightTypes[] = {GgmlType::kF32,  GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0,
                                 GgmlType::kQ4_1, GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ8_0,
                                 GgmlType::kQ2_K, GgmlType::kQ3_K, GgmlType::kQ4_K, GgmlType::kQ5_K,
                                 GgmlType::kQ6_K, GgmlType::kMXFP4};

TEST(RefVecDot, MatchesDoubleDotOfDequantizedOperands) {
  uint32_t seed = 7;
  for (GgmlType type : kWeightTypes) {
    const GgmlType act_type = quant_traits(type)->vec_dot_type;
    const ref::VecDotFn dot = ref::vec_dot_for(type);
    ASSERT_NE(dot, nullptr);
    for (int n : {256, 512, 4096}) {
      for (Distribution dist : {Distribution::kNormal, Distribution::kUniform}) {
        const std::vector<float> x = test::random_data(dist, n, ++seed);
        std::vector<float> y = test::random_data(Distribution::kNormal, n, ++seed);
        // A positive mean on the activations makes the min terms of the offset types count.
        for (float& v : y) v += 0.5f;
        const std::vector<uint8_t> xq = test::quantize_vec(type, x);
        const std::vector<uint8_t> yq = test::quantize_vec(act_type, y);
        const std::vector<float> xd = test::dequantize_vec(type, xq, n);
        const std::vector<float> yd = test::dequantize_vec(act_type, yq, n);
        const std::vector<float> xo = offsets(type, xq, n);
        double exact = 0.0;
        double magnitude = 0.0;
        for (int i = 0; i < n; ++i) {
          exact += static_cast<double>(xd[i]) * yd[i];
          magnitude +=
              (std::fabs(static_cast<double>(xd[i])) + std::fabs(xo[i])) * std::fabs(yd[i]);
        }
        float got = NAN;
        dot(n, &got, xq.data(), yq.data());
        const double tol = gamma_for(type, n) * magnitude;
        EXPECT_NEAR(got, exact, tol) << ggml_type_info(type).name << " n=" << n
                                     << (dist == Distribution::kNormal ? " normal" : " uniform");
      }
    }
  }
}

TEST(RefVecDot, QuantizedDotApproximatesFloatDot) {
  // End to end: quantizing both sides keeps the dot product close to the f32 one. The error of
  // sum x_i y_i from independent per-element errors e_i is ~ sqrt(n) * rms(e) * rms(y), far
  // below the n * rms(x) * rms(y) scale of |x||y|: check against 6 sigma of that estimate.
  constexpr int kN = 4096;
  const std::vector<float> x = test::random_data(Distribution::kNormal, kN, 99);
  const std::vector<float> y = test::random_data(Distribution::kNormal, kN, 100);
  double want = 0.0;
  for (int i = 0; i < kN; ++i) want += static_cast<double>(x[i]) * y[i];
  for (GgmlType type : kWeightTypes) {
    const GgmlType act_type = quant_traits(type)->vec_dot_type;
    const std::vector<uint8_t> xq = test::quantize_vec(type, x);
    const std::vector<uint8_t> yq = test::quantize_vec(act_type, y);
    const double ex = test::rms_diff(x, test::dequantize_vec(type, xq, kN));
    const double ey = test::rms_diff(y, test::dequantize_vec(act_type, yq, kN));
    const double sigma =
        std::sqrt(static_cast<double>(kN)) * (ex * test::rms(y) + ey * test::rms(x));
    float got = NAN;
    ref::vec_dot_for(type)(kN, &got, xq.data(), yq.data());
    EXPECT_NEAR(got, want, 6 * sigma + 1e-3) << ggml_type_info(type).name;
  }
}

}  // namespace
}  // namespace minfer
