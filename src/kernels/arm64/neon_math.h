// Helpers for the ARM64 NEON translation units only. Everything is in an anonymous namespace so
// that each TU keeps its own copy (as the x86 tables' helpers).
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

namespace minfer::kernels::arm64 {
namespace {

// The first n (< 4) floats at p, the other lanes 0.
inline float32x4_t load_partial(const float* p, int64_t n) {
  float buf[4] = {};
  std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(float));
  return vld1q_f32(buf);
}

// Stores the first n (< 4) lanes of v at p.
inline void store_partial(float* p, float32x4_t v, int64_t n) {
  float buf[4];
  vst1q_f32(buf, v);
  std::memcpy(p, buf, static_cast<size_t>(n) * sizeof(float));
}

// 4 floats to bf16 with round-to-nearest-even; NaN stays a quiet NaN (as quant/fp16.h).
inline uint16x4_t f32_to_bf16_4(float32x4_t v) {
  const uint32x4_t bits = vreinterpretq_u32_f32(v);
  const uint32x4_t magnitude = vandq_u32(bits, vdupq_n_u32(0x7fffffff));
  const uint32x4_t is_nan = vcgtq_u32(magnitude, vdupq_n_u32(0x7f800000));
  const uint32x4_t odd = vandq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(1));
  const uint32x4_t rounded = vshrq_n_u32(vaddq_u32(bits, vaddq_u32(odd, vdupq_n_u32(0x7fff))), 16);
  const uint32x4_t nan = vorrq_u32(vshrq_n_u32(bits, 16), vdupq_n_u32(0x40));
  return vmovn_u32(vbslq_u32(is_nan, nan, rounded));
}

}  // namespace
}  // namespace minfer::kernels::arm64
