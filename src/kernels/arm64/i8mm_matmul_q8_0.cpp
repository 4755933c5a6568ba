// The ARMv8.6 i8mm Q8_0 matmul tile: smmla multiplies a 2 × 8 block of weight quants (two rows)
// by an 8 × 2 block of activation quants (two tokens), so one instruction adds 4 (row, token)
// dot products of 8 quants each. Each block's integer sums are exact, and the float steps per
// (row, token) are the reference's (acc + (float)sumi · (d_w d_x), from 0, block by block, with
// separate multiplies and adds), so the result is the reference's bit for bit; one token goes to
// the dotprod tile, which computes the same bits. Compiled with -march=armv8.6-a+i8mm
// (src/CMakeLists.txt): called only through i8mm_table after dispatch has checked the CPU.

// Separate multiplies and adds, as the reference.
#pragma GCC optimize("fp-contract=off")

#include <arm_neon.h>

#include <cstddef>
#include <cstdint>

#include "kernels/arm64/dotprod_kernels.h"
#include "kernels/arm64/i8mm_kernels.h"
#include "quant/blocks.h"

namespace minfer::kernels::i8mm {
namespace {

float from_f16(uint16_t h) {
  return vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(h))), 0);
}

// Lanes [w0·x0, w0·x1, w1·x0, w1·x1] of Σ_b (float)sumi_b · (d_w d_x) over n_blocks blocks.
float32x4_t dot_2x2(const BlockQ8_0* w0, const BlockQ8_0* w1, const BlockQ8_0* x0,
                    const BlockQ8_0* x1, int64_t n_blocks) {
  float32x4_t acc = vdupq_n_f32(0.0f);
  for (int64_t b = 0; b < n_blocks; ++b) {
    int32x4_t s = vdupq_n_s32(0);
    for (int k = 0; k < kQK8_0; k += 8) {
      const int8x16_t w = vcombine_s8(vld1_s8(w0[b].qs + k), vld1_s8(w1[b].qs + k));
      const int8x16_t x = vcombine_s8(vld1_s8(x0[b].qs + k), vld1_s8(x1[b].qs + k));
      s = vmmlaq_s32(s, w, x);
    }
    const float dw0 = from_f16(w0[b].d), dw1 = from_f16(w1[b].d);
    const float dx0 = from_f16(x0[b].d), dx1 = from_f16(x1[b].d);
    const float dw_lanes[4] = {dw0, dw0, dw1, dw1};
    const float dx_lanes[4] = {dx0, dx1, dx0, dx1};
    const float32x4_t scale = vmulq_f32(vld1q_f32(dw_lanes), vld1q_f32(dx_lanes));
    acc = vaddq_f32(acc, vmulq_f32(vcvtq_f32_s32(s), scale));
  }
  return acc;
}

const BlockQ8_0* row_at(const void* base, size_t row_bytes, int64_t i) {
  return reinterpret_cast<const BlockQ8_0*>(static_cast<const uint8_t*>(base) +
                                            static_cast<size_t>(i) * row_bytes);
}

}  // namespace

void matmul_tile_q8_0(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride) {
  if (n_tok == 1) {
    dotprod::matmul_tile_q8_0(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
    return;
  }
  const int64_t n_blocks = n_in / kQK8_0;
  // A missing second row or token repeats the first; its lanes are not stored.
  for (int64_t r = 0; r < n_rows; r += 2) {
    const bool two_rows = r + 1 < n_rows;
    const BlockQ8_0* w0 = row_at(w, w_row_bytes, r);
    const BlockQ8_0* w1 = row_at(w, w_row_bytes, two_rows ? r + 1 : r);
    for (int64_t t = 0; t < n_tok; t += 2) {
      const bool two_toks = t + 1 < n_tok;
      const BlockQ8_0* x0 = row_at(act, act_row_bytes, t);
      const BlockQ8_0* x1 = row_at(act, act_row_bytes, two_toks ? t + 1 : t);
      float out[4];
      vst1q_f32(out, dot_2x2(w0, w1, x0, x1, n_blocks));
      y[t * y_stride + r] = out[0];
      if (two_toks) y[(t + 1) * y_stride + r] = out[1];
      if (two_rows) y[t * y_stride + r + 1] = out[2];
      if (two_rows && two_toks) y[(t + 1) * y_stride + r + 1] = out[3];
    }
  }
}

}  // namespace minfer::kernels::i8mm
