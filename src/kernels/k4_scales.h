// The scales and mins of a Q4_K / Q5_K block unpacked into plain integer registers, for the
// single-token kernels of every SIMD table (avx2/avx2_gemv_quant.h, avx512/avx512_gemv_quant.h).
// Scalar code only; everything is in an anonymous namespace so each ISA's translation unit
// keeps its own copy (see quant_tile_impl.h).
#pragma once

#include <cstdint>
#include <cstring>

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

}  // namespace
}  // namespace minfer::kernels
