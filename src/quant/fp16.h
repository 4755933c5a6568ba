// Scalar conversions between float32 and the two 16-bit float formats GGUF stores: IEEE 754
// binary16 ("f16": 1 sign, 5 exponent, 10 mantissa bits) and bfloat16 ("bf16": the top 16 bits
// of a float32). Values are passed as raw bits (uint16_t) because C++20 has no portable 16-bit
// float type. These are the definitions the SIMD converters in src/kernels must reproduce bit
// for bit.
#pragma once

#include <bit>
#include <cstdint>

namespace minfer {

// binary16 -> float32. Exact for every input (f32 holds every f16 value); subnormals become
// normal floats, inf stays inf, NaN stays NaN with its sign and payload (shifted into the top
// of the f32 mantissa), as x86 F16C's vcvtph2ps does.
inline float fp16_to_fp32(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu;
  const uint32_t mantissa = h & 0x3ffu;
  if (exponent == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mantissa << 13));
  if (exponent == 0) {
    // Zero or subnormal: mantissa * 2^-24, exact in float.
    const float magnitude = static_cast<float>(mantissa) * 0x1p-24f;
    return sign ? -magnitude : magnitude;
  }
  // Rebias the exponent: f16 bias 15, f32 bias 127.
  return std::bit_cast<float>(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// float32 -> binary16 with IEEE round-to-nearest-even, as F16C's vcvtps2ph with imm 0 and
// ggml's GGML_FP32_TO_FP16 do: values from 65520 up become inf, values below 2^-14 become
// subnormals (or zero, below 2^-25 and at exactly 2^-25, the tie rounding to even 0), NaN stays
// a NaN, quieted (mantissa bit 9 set) with its sign and the top 9 payload bits kept.
inline uint16_t fp32_to_fp16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  const uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  const uint32_t magnitude = bits & 0x7fffffffu;
  if (magnitude > 0x7f800000u) {
    return static_cast<uint16_t>(sign | 0x7e00u | ((magnitude >> 13) & 0x3ffu));
  }
  // 65520 = 0x477ff000 is halfway between the largest f16 (65504, odd mantissa) and 2^16.
  if (magnitude >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);
  const uint32_t exponent = magnitude >> 23;  // biased, f32
  if (exponent < 113) {
    // Result is subnormal (or the smallest normal after rounding up): round
    // m * 2^(exponent - 150) to a multiple of 2^-24, i.e. shift m right by 126 - exponent.
    const uint32_t m = (magnitude & 0x7fffffu) | (exponent ? 0x800000u : 0u);
    const uint32_t shift = 126 - (exponent ? exponent : 1);
    if (shift > 24) return sign;  // below 2^-25: rounds to zero
    uint32_t r = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1);
    const uint32_t half = 1u << (shift - 1);
    if (rest > half || (rest == half && (r & 1u))) ++r;
    return static_cast<uint16_t>(sign | r);
  }
  // Normal: rebias, keep the top 10 mantissa bits, round on the 13 dropped ones. A carry out of
  // the mantissa correctly bumps the exponent.
  uint32_t r = ((exponent - 112) << 10) | ((magnitude >> 13) & 0x3ffu);
  const uint32_t rest = magnitude & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (r & 1u))) ++r;
  return static_cast<uint16_t>(sign | r);
}

// bf16 -> float32: exact (bf16 is the top half of a float32).
inline float bf16_to_fp32(uint16_t h) {
  return std::bit_cast<float>(static_cast<uint32_t>(h) << 16);
}

// float32 -> bf16 with round-to-nearest-even on the 16 dropped bits, as ggml's
// ggml_compute_fp32_to_bf16 and the converters' numpy code do. NaN is kept a quiet NaN (bit 6 of
// the bf16 mantissa forced on) with its sign and top payload bits; subnormals are rounded, not
// flushed; a value that rounds past the largest finite bf16 becomes inf.
inline uint16_t fp32_to_bf16(float f) {
  const uint32_t bits = std::bit_cast<uint32_t>(f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x40u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}

}  // namespace minfer
