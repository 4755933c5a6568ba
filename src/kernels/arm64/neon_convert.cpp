// ARMv8.0 NEON f16 / bf16 conversions (fcvt: exact to f32, round to nearest even from it) and
// the F16 / BF16 activation and KV cell wrappers, bit-identical to quant/fp16.h.
#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm64/neon_kernels.h"
#include "kernels/arm64/neon_math.h"

namespace minfer::kernels::neon {
namespace {

float16x4_t load_f16(const uint16_t* p) {
  return vreinterpret_f16_u16(vld1_u16(p));
}

}  // namespace

void f16_to_f32(const uint16_t* x, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vcvt_f32_f16(load_f16(x + i)));
  for (; i < n; ++i) {
    y[i] = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(x[i]))), 0);
  }
}

void f32_to_f16(const float* x, int64_t n, uint16_t* y) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(y + i, vreinterpret_u16_f16(vcvt_f16_f32(vld1q_f32(x + i))));
  for (; i < n; ++i) {
    y[i] = vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(x[i]))), 0);
  }
}

void bf16_to_f32(const uint16_t* x, int64_t n, float* y) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    vst1q_f32(y + i, vreinterpretq_f32_u32(vshll_n_u16(vld1_u16(x + i), 16)));
  }
  for (; i < n; ++i) {
    y[i] = vgetq_lane_f32(vreinterpretq_f32_u32(vshll_n_u16(vdup_n_u16(x[i]), 16)), 0);
  }
}

void f32_to_bf16(const float* x, int64_t n, uint16_t* y) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) vst1_u16(y + i, arm64::f32_to_bf16_4(vld1q_f32(x + i)));
  for (; i < n; ++i) y[i] = vget_lane_u16(arm64::f32_to_bf16_4(vdupq_n_f32(x[i])), 0);
}

void act_f16(const float* x, void* y, int64_t n) {
  f32_to_f16(x, n, static_cast<uint16_t*>(y));
}

void act_bf16(const float* x, void* y, int64_t n) {
  f32_to_bf16(x, n, static_cast<uint16_t*>(y));
}

void cells_to_f32_f16(const void* x, float* y, int64_t n) {
  f16_to_f32(static_cast<const uint16_t*>(x), n, y);
}

}  // namespace minfer::kernels::neon
