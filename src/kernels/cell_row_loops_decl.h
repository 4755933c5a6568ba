// Attention's row loops over f16 and q8_0 cells (KernelTable::dot_rows_f16, weighted_sum_f16,
// dot_rows_q8_0, weighted_sum_q8_0), declared once for the x86 tables (the ARM tables leave them
// null). Not a header of its own: avx2/avx2_kernels.h and avx512/avx512_kernels.h define
// MINFER_SIMD_KERNEL_NAMESPACE and include this after simd_kernels_decl.h, so each ISA gets the
// same declarations and table filler in its own namespace. Defined by ops_impl.h's
// MINFER_DEFINE_CELL_ROW_LOOPS.

#include <cstdint>

#include "kernels/kernel_table.h"

namespace minfer::kernels::MINFER_SIMD_KERNEL_NAMESPACE {

void dot_rows_f16(F16Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride);
void weighted_sum_f16(F32Rows w, F16Rows rows, int64_t n, float* y, int64_t y_stride);
void dot_rows_q8_0(Q8Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride);
void weighted_sum_q8_0(F32Rows w, Q8Rows rows, int64_t n, float* y, int64_t y_stride);

// Points the table's entries for the functions above at this ISA's.
constexpr void set_cell_row_loops(KernelTable& t) {
  t.dot_rows_f16 = dot_rows_f16;
  t.weighted_sum_f16 = weighted_sum_f16;
  t.dot_rows_q8_0 = dot_rows_q8_0;
  t.weighted_sum_q8_0 = weighted_sum_q8_0;
}

}  // namespace minfer::kernels::MINFER_SIMD_KERNEL_NAMESPACE
