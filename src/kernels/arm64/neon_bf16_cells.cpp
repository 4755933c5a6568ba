// NEON scores of bf16 KV cells (KernelTable::dot_rows_bf16): ref::dot_bf16_cells' operations,
// VDPBF16PS's fused multiply-adds emulated on 4-lane vectors, so the scores are ref's bits (and
// those of the x86 tables). ARMv8.0: every ARM64 CPU runs it.
#include <arm_neon.h>

#include <cstdint>

#include "kernels/arm64/neon_kernels.h"
#include "kernels/bf16_rows_impl.h"
#include "kernels/ref/ref_kernels.h"

namespace minfer::kernels::neon {
namespace {

constexpr int64_t kStep = 64;  // elements per step of the two 16-lane accumulators

// 8 bf16s as 4 dwords: element 2l in the low half of dword l, 2l + 1 in the high half.
uint32x4_t load8(const uint16_t* p) {
  return vreinterpretq_u32_u16(vld1q_u16(p));
}

// The high halves (elements 2l + 1) as f32, those with exponent 0 as zero.
float32x4_t high(uint32x4_t v) {
  const uint32x4_t normal = vtstq_u32(v, vdupq_n_u32(0x7F800000u));
  return vreinterpretq_f32_u32(vandq_u32(vandq_u32(v, vdupq_n_u32(0xFFFF0000u)), normal));
}

// The low halves (elements 2l) likewise.
float32x4_t low(uint32x4_t v) {
  const uint32x4_t normal = vtstq_u32(v, vdupq_n_u32(0x7F80u));
  return vreinterpretq_f32_u32(vandq_u32(vshlq_n_u32(v, 16), normal));
}

// acc with the lanes below FLT_MIN in magnitude set to zero (NaNs kept).
float32x4_t flush(float32x4_t acc) {
  const uint32x4_t tiny = vcaltq_f32(acc, vdupq_n_f32(0x1p-126f));
  return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(acc), tiny));
}

// 4 lanes of a VDPBF16PS step (ref::dpbf16_step on each pair): 8 bf16s of a and b. kExact: the
// operands hold no subnormals and no sum can fall below FLT_MIN (ref::bf16_steps_exact), so the
// steps are the fused multiply-adds alone.
template <bool kExact>
float32x4_t step(float32x4_t acc, uint32x4_t a, uint32x4_t b) {
  if constexpr (kExact) {
    const uint32x4_t high_half = vdupq_n_u32(0xFFFF0000u);
    acc = vfmaq_f32(acc, vreinterpretq_f32_u32(vandq_u32(a, high_half)),
                    vreinterpretq_f32_u32(vandq_u32(b, high_half)));
    return vfmaq_f32(acc, vreinterpretq_f32_u32(vshlq_n_u32(a, 16)),
                     vreinterpretq_f32_u32(vshlq_n_u32(b, 16)));
  }
  acc = flush(vfmaq_f32(acc, high(a), high(b)));
  return flush(vfmaq_f32(acc, low(a), low(b)));
}

// hsum16 of a 16-lane accumulator held as lanes 0..3, 4..7, 8..11, 12..15: lanes i + i+8, then
// i + i+4, then (0 + 2) + (1 + 3).
float hsum16(const float32x4_t* q) {
  const float32x4_t s = vaddq_f32(vaddq_f32(q[0], q[2]), vaddq_f32(q[1], q[3]));
  return (vgetq_lane_f32(s, 0) + vgetq_lane_f32(s, 2)) +
         (vgetq_lane_f32(s, 1) + vgetq_lane_f32(s, 3));
}

template <bool kExact>
float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  const int64_t steps_end = n / kStep * kStep;
  float32x4_t c[8];  // the two accumulators' lanes, 4 at a time
  for (float32x4_t& v : c) v = vdupq_n_f32(0.0f);
  for (int64_t i = 0; i < steps_end; i += kStep) {
    for (int64_t k = 0; k < 8; ++k) {
      c[k] = step<kExact>(c[k], load8(a + i + 8 * k), load8(b + i + 8 * k));
    }
  }
  double sum = 0.0;
  sum += static_cast<double>(hsum16(c));
  sum += static_cast<double>(hsum16(c + 4));
  return static_cast<float>(ref::dot_bf16_tail(sum, a, b, steps_end, n));
}

// The smallest exponent field (in place: bits 7..14) among the nonzero bf16s a[0, n), n a multiple
// of 8: 0 where one is subnormal, 0x7F80 where all are zero.
int min_exponent(const uint16_t* a, int64_t n) {
  const uint16x8_t exponent = vdupq_n_u16(0x7F80);
  uint16x8_t m = exponent;
  for (int64_t i = 0; i < n; i += 8) {
    const uint16x8_t v = vld1q_u16(a + i);
    const uint16x8_t zero = vceqq_u16(vandq_u16(v, vdupq_n_u16(0x7FFF)), vdupq_n_u16(0));
    m = vminq_u16(m, vandq_u16(vorrq_u16(v, zero), exponent));
  }
  return vminvq_u16(m);
}

}  // namespace

void dot_rows_bf16(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                   int64_t out_stride) {
  bf16_dot_rows<kStep, min_exponent, dot_bf16<true>, dot_bf16<false>>(rows, x, n, scale, out,
                                                                      out_stride);
}

}  // namespace minfer::kernels::neon
