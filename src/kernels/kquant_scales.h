// The packed sub-block scales of K-quant blocks unpacked, for the single-token kernels of every
// SIMD table (avx2/avx2_gemv_quant.h, avx512/avx512_gemv_quant.h): scalar, SSE and AVX2 code, for
// the AVX2 and AVX-512 translation units. Everything is in an anonymous namespace so each ISA's
// translation unit keeps its own copy (see quant_tile_impl.h).
#pragma once

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "quant/blocks.h"

namespace minfer::kernels {
namespace {

// A Q4_K block's 8 six-bit scales and 8 mins, one per byte, unpacked from its 12 packed bytes
// (see BlockQ4K: scale / min j < 4 are the low 6 bits of bytes j / j + 4; for j >= 4 their low
// 4 bits are the nibbles of byte j + 4, their top 2 bits the top 2 of bytes j - 4 / j). Plain
// integer registers: the vector ports are the kernels' bottleneck.
struct Q4KScalesMins {
  uint64_t scales;  // byte j: scale j
  uint64_t mins;    // byte j: min j
};

inline Q4KScalesMins q4k_scales_mins(const uint8_t* packed) {
  uint32_t a, b, c;
  std::memcpy(&a, packed, 4);
  std::memcpy(&b, packed + 4, 4);
  std::memcpy(&c, packed + 8, 4);
  const uint64_t sc_lo = a & 0x3f3f3f3fu;
  const uint64_t m_lo = b & 0x3f3f3f3fu;
  const uint64_t sc_hi = (c & 0x0f0f0f0fu) | ((a >> 2) & 0x30303030u);
  const uint64_t m_hi = ((c >> 4) & 0x0f0f0f0fu) | ((b >> 2) & 0x30303030u);
  return {sc_lo | (sc_hi << 32), m_lo | (m_hi << 32)};
}

// Byte j: the signed 6-bit scale of sub-block j of a Q3_K block (-32..31): low 4 bits from byte
// j (j < 8, low nibble) or j - 8 (high nibble), top 2 bits from bits 2 (j / 4) of byte
// 8 + j % 4; minus 32 (see BlockQ3K).
inline __m128i q3k_scales(const BlockQ3K& w) {
  uint64_t a;
  uint32_t b;
  std::memcpy(&a, w.scales, 8);
  std::memcpy(&b, w.scales + 8, 4);
  constexpr uint64_t kNibbles = 0x0f0f0f0f0f0f0f0fULL;
  const __m128i low =
      _mm_set_epi64x(static_cast<int64_t>((a >> 4) & kNibbles), static_cast<int64_t>(a & kNibbles));
  const __m128i high =
      _mm_and_si128(_mm_set_epi32(static_cast<int>(b >> 6), static_cast<int>(b >> 4),
                                  static_cast<int>(b >> 2), static_cast<int>(b)),
                    _mm_set1_epi8(3));
  return _mm_sub_epi8(_mm_or_si128(low, _mm_slli_epi16(high, 4)), _mm_set1_epi8(32));
}

// Byte j: the 4-bit scale (kMins: min) of sub-block j of a Q2_K block (see BlockQ2K).
template <bool kMins>
__m128i q2k_scales(const BlockQ2K& w) {
  const __m128i s = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales));
  return _mm_and_si128(kMins ? _mm_srli_epi16(s, 4) : s, _mm_set1_epi8(0x0f));
}

// int16 j: the scale of sub-block j (128-bit lane 0: 0-7, lane 1: 8-15).
inline __m256i k16_scales(const BlockQ6K& w) {
  return _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
}

inline __m256i k16_scales(const BlockQ3K& w) {
  return _mm256_cvtepi8_epi16(q3k_scales(w));
}

inline __m256i k16_scales(const BlockQ2K& w) {
  return _mm256_cvtepu8_epi16(q2k_scales<false>(w));
}

}  // namespace
}  // namespace minfer::kernels
