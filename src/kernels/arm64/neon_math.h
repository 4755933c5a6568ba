// Helpers for the ARM64 NEON translation units only. Everything is in an anonymous namespace so
// that each TU keeps its own copy (as the x86 tables' helpers).
#pragma once

#include <arm_neon.h>

#include <cstdint>
#include <cstring>

namespace minfer::kernels::arm64 {
namespace {

// e^x for 4 floats, within ~2 ulp of expf (the AVX2 table's method, avx2/avx2_math.h): x =
// n ln2 + r with |r| <= ln2/2, e^r by its degree-7 Taylor polynomial, 2^n applied in two halves
// so that results down to the subnormal range come out right. x below -103.5 gives exactly 0
// (so exp(-inf) = 0); x above 88.73 gives +inf.
inline float32x4_t exp_ps(float32x4_t x) {
  const float32x4_t lo_limit = vdupq_n_f32(-103.5f);
  const float32x4_t xc = vminq_f32(vmaxq_f32(x, lo_limit), vdupq_n_f32(89.0f));
  const float32x4_t n = vrndnq_f32(vmulq_f32(xc, vdupq_n_f32(1.44269504088896341f)));
  // ln2 split so that n * kLn2Hi is exact for |n| < 2^9.
  float32x4_t r = vfmsq_f32(xc, n, vdupq_n_f32(0.693145751953125f));
  r = vfmsq_f32(r, n, vdupq_n_f32(1.428606765330187e-06f));
  static constexpr float kCoef[] = {1.0f / 720.0f, 1.0f / 120.0f, 1.0f / 24.0f, 1.0f / 6.0f,
                                    0.5f,          1.0f,          1.0f};
  float32x4_t p = vdupq_n_f32(1.0f / 5040.0f);
  for (float c : kCoef) p = vfmaq_f32(vdupq_n_f32(c), p, r);
  const int32x4_t ni = vcvtq_s32_f32(n);
  const int32x4_t n1 = vshrq_n_s32(ni, 1);
  const int32x4_t n2 = vsubq_s32(ni, n1);
  const int32x4_t bias = vdupq_n_s32(127);
  const float32x4_t s1 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n1, bias), 23));
  const float32x4_t s2 = vreinterpretq_f32_s32(vshlq_n_s32(vaddq_s32(n2, bias), 23));
  const float32x4_t result = vmulq_f32(vmulq_f32(p, s1), s2);
  const uint32x4_t below = vcltq_f32(x, lo_limit);
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(result), below));
}

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
