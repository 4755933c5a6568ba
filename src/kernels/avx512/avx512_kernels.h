// The AVX-512 kernels behind avx512_table (declarations only: safe to include anywhere, but
// call them only on a CPU that runs AVX-512 F/BW/VL/DQ/VNNI). Semantics: kernel_table.h.
#pragma once

#define MINFER_SIMD_KERNEL_NAMESPACE avx512
#include "kernels/cell_row_loops_decl.h"
#include "kernels/simd_kernels_decl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE

#include <cstdint>

#include "kernels/kernel_table.h"

namespace minfer::kernels::avx512 {

// dot_rows_bf16 (the table's entry) takes the first of these where the CPU has AVX512-BF16
// (cpu_has_avx512bf16), else the second: ref::dot_bf16_cells' operations on VDPBF16PS, or the
// same operations emulated (both tested against ref on a CPU that has it).
void dot_rows_bf16_vdp(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                       int64_t out_stride);
void dot_rows_bf16_emulated(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                            int64_t out_stride);

// Whether this CPU runs AVX512-BF16 (CpuFeatures::avx512bf16; defined in a TU compiled without
// AVX-512, dispatch.cpp).
bool cpu_has_avx512bf16();

}  // namespace minfer::kernels::avx512
