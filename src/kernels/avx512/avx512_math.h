// Helpers for the AVX-512 translation units only (include nowhere else: they compile to
// AVX-512). Every function is `static inline` so each TU keeps its own copy: an inline function
// with external linkage compiled with AVX-512 flags could be chosen by the linker for callers
// on CPUs without it. The AVX-512 TUs are compiled with AVX2, FMA and F16C too, so avx2_math.h's
// helpers serve them as well.
#pragma once

#include <immintrin.h>

#include <cstdint>

#include "kernels/avx2/avx2_math.h"

namespace minfer::kernels::avx512 {

using avx2::f32_to_f16_scalar;

// The lanes [0, n) of a 16-lane vector, n in [0, 16].
static inline __mmask16 lane_mask(int64_t n) {
  return n >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n) - 1u);
}

// e^x for 16 floats by llama.cpp's AVX-512 ggml_v_expf algorithm, step for step (its SiLU and
// softmax use it on whole vectors, so matching logits need it): n = round(x / ln 2) via the
// 1.5 · 2^23 shift, b = x - n ln 2 in two fused steps, a degree-5 polynomial in b (Horner on
// b and b²), scaled by 2^n; |n| > 192 gives 0 (x < 0) or +inf.
static inline __m512 exp_ps_ggml(__m512 x) {
  const __m512 shift = _mm512_set1_ps(0x1.8p23f);
  const __m512 z = _mm512_fmadd_ps(x, _mm512_set1_ps(0x1.715476p+0f), shift);
  const __m512 n = _mm512_sub_ps(z, shift);
  const __m512 b = _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.7f7d1cp-20f),
                                    _mm512_fnmadd_ps(n, _mm512_set1_ps(0x1.62e4p-1f), x));
  const __m512 u = _mm512_mul_ps(b, b);
  const __m512 j = _mm512_fmadd_ps(
      _mm512_fmadd_ps(
          _mm512_fmadd_ps(_mm512_set1_ps(0x1.0e4020p-7f), b, _mm512_set1_ps(0x1.573e2ep-5f)), u,
          _mm512_fmadd_ps(_mm512_set1_ps(0x1.555e66p-3f), b, _mm512_set1_ps(0x1.fffdb6p-2f))),
      u, _mm512_fmadd_ps(_mm512_set1_ps(0x1.ffffecp-1f), b, _mm512_set1_ps(1.0f)));
  const __m512 res = _mm512_scalef_ps(j, n);
  const __mmask16 out_of_range =
      _mm512_cmp_ps_mask(_mm512_abs_ps(n), _mm512_set1_ps(192.0f), _CMP_GT_OQ);
  if (out_of_range == 0) return res;
  const __m512 limit = _mm512_mask_blend_ps(_mm512_cmp_ps_mask(n, _mm512_setzero_ps(), _CMP_LE_OQ),
                                            _mm512_set1_ps(__builtin_inff()), _mm512_setzero_ps());
  return _mm512_mask_blend_ps(out_of_range, res, limit);
}

// A fixed-order horizontal sum (the reduction order is part of every kernel's result).
// Lanes i + (i + 8), then avx2::hsum_ps of those 8.
static inline float hsum_ps(__m512 v) {
  return avx2::hsum_ps(_mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1)));
}

// The first step of hsum_ps for two vectors a and b: lanes i + i+8 of a in the low half, of b in
// the high half ([a_lo, b_hi] + [a_hi, b_lo]: one shuffle and a blend; float adds commute).
static inline __m512 hsum_pair_ps(__m512 a, __m512 b) {
  return _mm512_add_ps(_mm512_mask_blend_ps(0xFF00, a, b), _mm512_shuffle_f32x4(a, b, 0x4E));
}

// The rest of hsum16_ps from the first steps w[p] = hsum_pair_ps(v[2p], v[2p + 1]).
static inline __m512 hsum16_from_pairs_ps(const __m512* w) {
  __m512 x[4];  // x[r]: rows 4r..4r+3 in its quarters, 4 partial sums each
  for (int r = 0; r < 4; ++r) {
    x[r] = _mm512_add_ps(_mm512_shuffle_f32x4(w[2 * r], w[2 * r + 1], 0x88),
                         _mm512_shuffle_f32x4(w[2 * r], w[2 * r + 1], 0xDD));
  }
  __m512 y[2];  // y[u], quarter L: rows 8u + L and 8u + 4 + L, 2 partial sums each
  for (int u = 0; u < 2; ++u) {
    y[u] = _mm512_add_ps(_mm512_shuffle_ps(x[2 * u], x[2 * u + 1], _MM_SHUFFLE(1, 0, 1, 0)),
                         _mm512_shuffle_ps(x[2 * u], x[2 * u + 1], _MM_SHUFFLE(3, 2, 3, 2)));
  }
  return _mm512_add_ps(_mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(2, 0, 2, 0)),
                       _mm512_shuffle_ps(y[0], y[1], _MM_SHUFFLE(3, 1, 3, 1)));
}

// hsum_ps of 16 vectors at once, each sum in hsum_ps's order (lanes i + i+8, then i + i+4,
// then 0+2 and 1+3, then those two): lane 4L + k of the result is the sum of v[4k + L].
static inline __m512 hsum16_ps(const __m512* v) {
  __m512 w[8];  // w[p]: rows 2p and 2p+1, 8 partial sums each
  for (int p = 0; p < 8; ++p) w[p] = hsum_pair_ps(v[2 * p], v[2 * p + 1]);
  return hsum16_from_pairs_ps(w);
}

// hsum16_ps's lanes in order of the vectors: lane r is hsum_ps(v[r]).
static inline __m512 rows_in_order_ps(__m512 sums) {
  const __m512i order = _mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15);
  return _mm512_permutexvar_ps(order, sums);
}

// Lane r: hsum_ps(v[r]), r < 16.
static inline __m512 hsum_rows_ps(const __m512* v) {
  return rows_in_order_ps(hsum16_ps(v));
}

// 16 floats to bf16: avx2::f32_to_bf16_8 on each half (round-to-nearest-even, NaN a quiet NaN).
static inline __m256i f32_to_bf16_16(__m512 v) {
  const __m128i lo = avx2::f32_to_bf16_8(_mm512_castps512_ps256(v));
  const __m128i hi = avx2::f32_to_bf16_8(_mm512_extractf32x8_ps(v, 1));
  return _mm256_inserti128_si256(_mm256_castsi128_si256(lo), hi, 1);
}

}  // namespace minfer::kernels::avx512
