// Helpers shared by the quant tests: seeded data, whole-row quantize/dequantize into vectors,
// and the nominal-step error model the per-type bounds are expressed in.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "quant/ggml_type.h"
#include "quant/quant_traits.h"

namespace minfer::test {

enum class Distribution { kNormal, kUniform };

inline std::vector<float> random_data(Distribution dist, size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<float> x(n);  // [n]
  if (dist == Distribution::kNormal) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    for (float& v : x) v = d(rng);
  } else {
    std::uniform_real_distribution<float> d(-1.0f, 1.0f);
    for (float& v : x) v = d(rng);
  }
  return x;
}

inline std::vector<uint8_t> quantize_vec(GgmlType type, const std::vector<float>& x) {
  const QuantTraits* t = quant_traits(type);
  std::vector<uint8_t> q(x.size() / t->block_size * t->bytes_per_block);  // [bytes]
  quantize_row(type, x.data(), q.data(), static_cast<int64_t>(x.size()));
  return q;
}

inline std::vector<float> dequantize_vec(GgmlType type, const std::vector<uint8_t>& q, size_t n) {
  std::vector<float> x(n);  // [n]
  dequantize_row(type, q.data(), x.data(), static_cast<int64_t>(n));
  return x;
}

inline double rms(const std::vector<float>& a) {
  double s = 0.0;
  for (float v : a) s += static_cast<double>(v) * v;
  return std::sqrt(s / static_cast<double>(a.size()));
}

inline double rms_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double s = 0.0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double d = static_cast<double>(a[i]) - b[i];
    s += d * d;
  }
  return std::sqrt(s / static_cast<double>(a.size()));
}

// The error model behind every per-type bound: a round-to-nearest quantizer with step D makes
// errors spread evenly over [-D/2, D/2], whose RMS is D / sqrt(12). Each type's nominal step
// follows from how it picks its scale from the group it quantizes:
//   Q8_0, Q8_1, Q8_K   absmax / 127 (group 32 / 32 / 256)
//   Q4_0, Q5_0         absmax / 8, absmax / 16 (the signed extreme maps to the end level)
//   Q4_1, Q5_1         (max - min) / 15, / 31
//   Q6_K, Q3_K         absmax / 32, absmax / 4 over each 16-element sub-block (nmax of the
//                      symmetric search that starts the scale search)
//   Q2_K, Q4_K, Q5_K   (max - min(min, 0)) / 3, / 15, / 31 over each 16 / 32 / 32 sub-block
//   F16, BF16          the spacing of representable values at x: 2^(e - 10), 2^(e - 7)
// The returned value is sqrt(mean over elements of D^2 / 12): the RMS error the model predicts
// for this very data. Tests then allow a per-type factor over it (see each test's comment).
double nominal_error_rms(GgmlType type, const std::vector<float>& x);

// Allowed RMS error as a multiple of nominal_error_rms, per type:
//  * Round-to-nearest types whose scale comes straight from the group (Q8_0, Q8_1, Q8_K,
//    Q4_1, Q5_1, Q5_0, F16, BF16) meet the model up to the f16 rounding of the scale (2^-11
//    relative), the finite sample (65536 elements: ~0.3% standard error) and the departure of
//    the in-bin error from uniform on peaked data with few levels (a few %): 1.10.
//  * Q4_0 and Q5_0 map the signed extreme to level -L (L = 8, 16) but the other side stops at
//    L - 1, so elements in ((L - 1/2) D, L D] on the opposite side are clipped with errors in
//    (D/2, D]: on uniform data a fraction 1/(4L) of the elements, mean square 7 D^2 / 12
//    instead of D^2 / 12, i.e. mean square x (1 + 1.5 / L): RMS x 1.09 for Q4_0, x 1.046 for
//    Q5_0; with the 5% above: 1.15 for Q4_0 (Q5_0 stays within 1.10).
//  * The K-quants store their sub-block scales with 4 (Q2_K), 6 (Q3_K, Q4_K, Q5_K) or 8 (Q6_K)
//    bits relative to the super-block's largest, which enlarges a sub-block's step by up to
//    half a scale level (for 6 bits 1/126 of the largest sub-block scale, for Q2_K 1/30), and
//    their searches minimize a weighted error (weights x^2, |x| or rms + |x|), trading RMS on
//    small elements for accuracy on large ones; against that, the search usually finds a
//    smaller step than the model's (Q2_K even clips outliers on purpose): 1.25.
double allowed_error_factor(GgmlType type);

}  // namespace minfer::test
