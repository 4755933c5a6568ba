// ARMv8.0 NEON activation quantizers, bit-identical to their references: Q8_0 / Q8_1 to
// quant/act_quant.h (llama.cpp's x86 semantics), Q8_K to quant/quantize.h's quantize_row_q8_K.
// The max is exact in any order, each quant is one multiply and one rounding as in the
// reference (fcvtns: to nearest even; fcvtas: halfway away from zero, roundf), and the sums are
// integer sums. Also the Q8_0 KV cells (quantize_row_q8_0 / dequantize_row_q8_0).
#include <arm_neon.h>

#include <cstring>

#include "kernels/arm64/neon_kernels.h"
#include "kernels/kernel_table.h"
#include "quant/blocks.h"

namespace minfer::kernels::neon {
namespace {

// Loads 32 floats and returns the largest magnitude.
float load32_amax(const float* x, float32x4_t v[8]) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int k = 0; k < 8; ++k) {
    v[k] = vld1q_f32(x + 4 * k);
    m = vmaxq_f32(m, vabsq_f32(v[k]));
  }
  return vmaxvq_f32(m);
}

// Stores 8 × 4 int32 (each in [-128, 127]) as 32 int8 in order; returns their sum.
int store_i8x32(const int32x4_t q[8], int8_t* out) {
  int32x4_t sum = vdupq_n_s32(0);
  for (int k = 0; k < 8; k += 4) {
    const int16x8_t a = vcombine_s16(vqmovn_s32(q[k]), vqmovn_s32(q[k + 1]));
    const int16x8_t b = vcombine_s16(vqmovn_s32(q[k + 2]), vqmovn_s32(q[k + 3]));
    vst1q_s8(out + 4 * k, vcombine_s8(vqmovn_s16(a), vqmovn_s16(b)));
    sum = vaddq_s32(sum, vaddq_s32(vaddq_s32(q[k], q[k + 1]), vaddq_s32(q[k + 2], q[k + 3])));
  }
  return vaddvq_s32(sum);
}

float quantize_block32(const float* x, int8_t* q, int* sum) {
  float32x4_t v[8];
  const float amax = load32_amax(x, v);
  const float d = amax / 127.0f;
  const float32x4_t id = vdupq_n_f32(amax != 0.0f ? 127.0f / amax : 0.0f);
  int32x4_t qi[8];
  for (int k = 0; k < 8; ++k) qi[k] = vcvtnq_s32_f32(vmulq_f32(v[k], id));
  *sum = store_i8x32(qi, q);
  return d;
}

uint16_t to_f16(float f) {
  return vget_lane_u16(vreinterpret_u16_f16(vcvt_f16_f32(vdupq_n_f32(f))), 0);
}

float from_f16(uint16_t h) {
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// The first element of x[0, 256) whose magnitude is amax, with its sign (the reference's max).
float first_of_magnitude(const float* x, float amax) {
  for (int i = 0; i < kQKK; ++i) {
    if (__builtin_fabsf(x[i]) == amax) return x[i];
  }
  return amax;
}

void quantize_block_q8_K(const float* x, BlockQ8K& block) {
  float32x4_t m = vdupq_n_f32(0.0f);
  for (int k = 0; k < kQKK / 4; ++k) m = vmaxq_f32(m, vabsq_f32(vld1q_f32(x + 4 * k)));
  const float amax = vmaxvq_f32(m);
  if (amax == 0.0f) {
    std::memset(&block, 0, sizeof(BlockQ8K));
    return;
  }
  const float iscale = -127.0f / first_of_magnitude(x, amax);
  const float32x4_t is = vdupq_n_f32(iscale);
  const int32x4_t top = vdupq_n_s32(127);
  for (int k = 0; k < kQKK / 32; ++k) {
    int32x4_t q[8];
    for (int l = 0; l < 8; ++l) {
      q[l] = vminq_s32(vcvtnq_s32_f32(vmulq_f32(vld1q_f32(x + 32 * k + 4 * l), is)), top);
    }
    store_i8x32(q, block.qs + 32 * k);
    for (int h = 0; h < 2; ++h) {
      const int32x4_t s =
          vaddq_s32(vaddq_s32(q[4 * h], q[4 * h + 1]), vaddq_s32(q[4 * h + 2], q[4 * h + 3]));
      block.bsums[2 * k + h] = static_cast<int16_t>(vaddvq_s32(s));
    }
  }
  block.d = 1.0f / iscale;
}

}  // namespace

void act_q8_0(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  for (int64_t i = 0; i < n / 32; ++i) {
    int sum;
    blocks[i].d = to_f16(quantize_block32(x + 32 * i, blocks[i].qs, &sum));
  }
}

void act_q8_0_sums(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  const size_t n_blocks = static_cast<size_t>(n / 32);
  auto* sums = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(y) +  // [n_blocks]
                                          q8_0_act_sums_offset(n_blocks));
  for (size_t i = 0; i < n_blocks; ++i) {
    int sum;
    blocks[i].d = to_f16(quantize_block32(x + 32 * i, blocks[i].qs, &sum));
    sums[i] = sum;
  }
  q8_0_act_lanes(y, static_cast<int64_t>(n_blocks));
}

void act_q8_1(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_1*>(y);
  for (int64_t i = 0; i < n / 32; ++i) {
    int sum;
    const float d = quantize_block32(x + 32 * i, blocks[i].qs, &sum);
    blocks[i].d = to_f16(d);
    blocks[i].s = to_f16(d * static_cast<float>(sum));
  }
}

void act_q8_K(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8K*>(y);
  for (int64_t i = 0; i < n / kQKK; ++i) quantize_block_q8_K(x + kQKK * i, blocks[i]);
}

void cells_from_f32_q8_0(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    float32x4_t v[8];
    // As quantize_row_q8_0: d = amax / 127 and the quants from x · (1 / d), not x · (127 / amax).
    const float d = load32_amax(x, v) / 127.0f;
    const float32x4_t id = vdupq_n_f32(d != 0.0f ? 1.0f / d : 0.0f);
    int32x4_t q[8];
    for (int k = 0; k < 8; ++k) q[k] = vcvtaq_s32_f32(vmulq_f32(v[k], id));
    store_i8x32(q, blocks[i].qs);
    blocks[i].d = to_f16(d);
  }
}

void cells_to_f32_q8_0(const void* x, float* y, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_0*>(x);
  for (int64_t i = 0; i < n / 32; ++i, y += 32) {
    const float32x4_t d = vdupq_n_f32(from_f16(blocks[i].d));
    for (int k = 0; k < 4; ++k) {
      const int16x8_t q = vmovl_s8(vld1_s8(blocks[i].qs + 8 * k));
      vst1q_f32(y + 8 * k, vmulq_f32(vcvtq_f32_s32(vmovl_s16(vget_low_s16(q))), d));
      vst1q_f32(y + 8 * k + 4, vmulq_f32(vcvtq_f32_s32(vmovl_high_s16(q)), d));
    }
  }
}

}  // namespace minfer::kernels::neon
