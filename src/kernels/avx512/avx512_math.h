// Helpers for the AVX-512 translation units only (include nowhere else: they compile to
// AVX-512). Every function is `static inline` so each TU keeps its own copy: an inline function
// with external linkage compiled with AVX-512 flags could be chosen by the linker for callers
// on CPUs without it.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace minfer::kernels::avx512 {

// One float to f16 bits, rounding to nearest even. Written with _mm_cvtps_ph because clang's
// _cvtss_sh macro expands to a compound literal, which -Wpedantic rejects in C++.
static inline uint16_t f32_to_f16_scalar(float f) {
  return static_cast<uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

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

// e^x for 16 floats, the same algorithm as the AVX2 exp_ps (see avx2_math.h): x = n ln2 + r,
// degree-7 Taylor polynomial for e^r, 2^n applied in two halves; x < -103.5 gives exactly 0,
// x > 88.73 gives +inf.
static inline __m512 exp_ps(__m512 x) {
  const __m512 lo_limit = _mm512_set1_ps(-103.5f);
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo_limit), _mm512_set1_ps(89.0f));
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693145751953125f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(1.428606765330187e-06f), r);
  __m512 p = _mm512_set1_ps(1.0f / 5040.0f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 720.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 120.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 24.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f / 6.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(0.5f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.0f));
  const __m512i ni = _mm512_cvtps_epi32(n);
  const __m512i n1 = _mm512_srai_epi32(ni, 1);
  const __m512i n2 = _mm512_sub_epi32(ni, n1);
  const __m512i bias = _mm512_set1_epi32(127);
  const __m512 s1 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n1, bias), 23));
  const __m512 s2 = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n2, bias), 23));
  const __m512 result = _mm512_mul_ps(_mm512_mul_ps(p, s1), s2);
  const __mmask16 underflow = _mm512_cmp_ps_mask(x, lo_limit, _CMP_LT_OQ);
  return _mm512_mask_blend_ps(underflow, result, _mm512_setzero_ps());
}

// A fixed-order horizontal sum (the reduction order is part of every kernel's result).
static inline float hsum_ps(__m512 v) {
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(v), _mm512_extractf32x8_ps(v, 1));
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(h), _mm256_extractf128_ps(h, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 16 floats to bf16 with round-to-nearest-even; NaN stays a quiet NaN (as quant/fp16.h).
static inline __m256i f32_to_bf16_16(__m512 v) {
  const __m512i bits = _mm512_castps_si512(v);
  const __m512i magnitude = _mm512_and_si512(bits, _mm512_set1_epi32(0x7fffffff));
  const __mmask16 is_nan = _mm512_cmpgt_epi32_mask(magnitude, _mm512_set1_epi32(0x7f800000));
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(
      _mm512_add_epi32(bits, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  const __m512i nan = _mm512_or_si512(_mm512_srli_epi32(bits, 16), _mm512_set1_epi32(0x40));
  return _mm512_cvtepi32_epi16(_mm512_mask_blend_epi32(is_nan, rounded, nan));
}

}  // namespace minfer::kernels::avx512
