// Helpers for the AVX2 translation units only, and the AVX-512 ones (which are compiled with
// AVX2 too, avx512_math.h): include nowhere else, they compile to AVX2.
// Every function is `static inline` so each TU keeps its own copy: an inline function with
// external linkage compiled with -mavx2 could be chosen by the linker for non-AVX2 callers.
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace minfer::kernels::avx2 {

// One float to f16 bits, rounding to nearest even. Written with _mm_cvtps_ph because clang's
// _cvtss_sh macro expands to a compound literal, which -Wpedantic rejects in C++.
static inline uint16_t f32_to_f16_scalar(float f) {
  return static_cast<uint16_t>(
      _mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}

static inline float hsum_ps(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

static inline float hmax_ps(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// 8 floats to bf16 with round-to-nearest-even; NaN stays a quiet NaN (as quant/fp16.h).
static inline __m128i f32_to_bf16_8(__m256 v) {
  const __m256i bits = _mm256_castps_si256(v);
  const __m256i magnitude = _mm256_and_si256(bits, _mm256_set1_epi32(0x7fffffff));
  const __m256i is_nan = _mm256_cmpgt_epi32(magnitude, _mm256_set1_epi32(0x7f800000));
  const __m256i odd = _mm256_and_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(1));
  const __m256i rounded = _mm256_srli_epi32(
      _mm256_add_epi32(bits, _mm256_add_epi32(odd, _mm256_set1_epi32(0x7fff))), 16);
  const __m256i nan = _mm256_or_si256(_mm256_srli_epi32(bits, 16), _mm256_set1_epi32(0x40));
  const __m256i out = _mm256_blendv_epi8(rounded, nan, is_nan);
  // packus works per 128-bit lane: [a0..a3 b0..b3 | a4..a7 b4..b7] -> fix the order.
  const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(out, out), 0xD8);
  return _mm256_castsi256_si128(packed);
}

}  // namespace minfer::kernels::avx2
