// The reference (plain C++) kernels behind ref_table. Semantics: kernel_table.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/ref/ref_dot.h"

#define MINFER_KERNEL_NAMESPACE ref
#include "kernels/ops_decl.h"
#undef MINFER_KERNEL_NAMESPACE

namespace minfer::kernels::ref {

// KV cells (KernelTable::cells_from_f32 / cells_to_f32). The F32 pair is every table's.
QuantizeRow cells_from_f32_f32;
DequantizeRow cells_to_f32_f32;
QuantizeRow cells_from_f32_f16;
DequantizeRow cells_to_f32_f16;
QuantizeRow cells_from_f32_q8_0;
DequantizeRow cells_to_f32_q8_0;
QuantizeRow cells_from_f32_bf16;
DequantizeRow cells_to_f32_bf16;

// ---- bf16 cells scored as llama.cpp scores them (KernelTable::dot_rows_bf16) ----

// One step of VDPBF16PS (Intel SDM): acc + a · b as one fused multiply-add, rounded to nearest
// even (a product of two bf16s is exact in f32), with the instruction's own flushing whatever
// MXCSR says: an input with exponent 0 (a bf16 subnormal) reads as zero, and a result below
// FLT_MIN in magnitude after rounding becomes zero (a Sapphire Rapids host's VDPBF16PS agrees on
// 32M random steps with tiny operands, and at a result that only rounds up to FLT_MIN). The
// signs of zeros are left open: they reach no score, whose double sum starts at +0.
float dpbf16_step(float acc, uint16_t a, uint16_t b);

// The 16 lanes summed in _mm512_reduce_add_ps's order: lanes i and i + 8, then i and i + 4, then
// (0 + 2) + (1 + 3).
float hsum16(const float* lanes);

// ggml_vec_dot_bf16 as llama.cpp's AVX512-BF16 build computes it (its x86 score of bf16 KV
// cells): two 16-lane accumulators over steps of 64 elements, the first taking the step's
// elements [0, 32), the second [32, 64), lane l the pair (2l, 2l + 1) by two dpbf16_steps
// (element 2l + 1 first, as the instruction); each accumulator's lanes summed by hsum16 and
// added to a double from 0, the first then the second; the elements after the last whole step
// added to that double one by one, each as the float product of the two; the double rounded to
// float.
float dot_bf16_cells(const uint16_t* a, const uint16_t* b, int64_t n);

// The last part of dot_bf16_cells' double sum, for every table's: `sum` plus the float products
// of the elements [from, n) of a and b, one by one.
double dot_bf16_tail(double sum, const uint16_t* a, const uint16_t* b, int64_t from, int64_t n);

// Whether two rows whose smallest exponent fields among their nonzero elements (in place: bits
// 7..14; 0 where one is subnormal) are ea and eb make VDPBF16PS's flushing a no-op: no subnormal
// in either, and biased exponents summing to at least 142, so that every product of two 8-bit
// significands is a multiple of 2^-126 (of 2^(ea + eb - 268)), and so is every sum, exactly so
// after rounding: none nonzero falls below FLT_MIN. The emulating tables then take plain fused
// multiply-adds for the steps, with the same bits.
bool bf16_steps_exact(int ea, int eb);

// dot_rows_bf16 pair by pair with `dot` (a table's dot_bf16_cells):
// out[i · out_stride + j] = dot(rows_j, x_i, n) · scale.
void dot_rows_bf16_by(float (*dot)(const uint16_t*, const uint16_t*, int64_t), BF16Rows rows,
                      BF16Rows x, int64_t n, float scale, float* out, int64_t out_stride);

// KernelTable::dot_rows_bf16 / weighted_sum_bf16 (kernel_table.h).
void dot_rows_bf16(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                   int64_t out_stride);
void weighted_sum_bf16(F32Rows w, BF16Rows rows, int64_t n, float* y, int64_t y_stride);

// The reference matmul tile (MatmulTileFn) of a weight type: its reference dot product
// (ref_dot.h) for every (weight row, token).
template <minfer::ref::VecDotFn Dot>
void matmul_tile(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, const void* act,
                 size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  const auto* w_bytes = static_cast<const uint8_t*>(w);
  const auto* a_bytes = static_cast<const uint8_t*>(act);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < n_rows; ++r) {
      Dot(static_cast<int>(n_in), &y[t * y_stride + r], w_bytes + r * w_row_bytes,
          a_bytes + t * act_row_bytes);
    }
  }
}

}  // namespace minfer::kernels::ref
