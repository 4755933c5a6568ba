// The AVX2 kernels behind avx2_table (declarations only: safe to include anywhere, but call
// them only on a CPU that runs AVX2, FMA and F16C). Semantics: kernel_table.h.
#pragma once

#define MINFER_SIMD_KERNEL_NAMESPACE avx2
#include "kernels/simd_kernels_decl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE

namespace minfer::kernels::avx2 {

// Attention's row loops over f16 cells (KernelTable::dot_rows_f16 / weighted_sum_f16; the x86
// tables only).
void dot_rows_f16(F16Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride);
void weighted_sum_f16(F32Rows w, F16Rows rows, int64_t n, float* y, int64_t y_stride);
// The same over q8_0 cells (KernelTable::dot_rows_q8_0 / weighted_sum_q8_0).
void dot_rows_q8_0(Q8Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride);
void weighted_sum_q8_0(F32Rows w, Q8Rows rows, int64_t n, float* y, int64_t y_stride);

}  // namespace minfer::kernels::avx2
