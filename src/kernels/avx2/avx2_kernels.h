// The AVX2 kernels behind avx2_table (declarations only: safe to include anywhere, but call
// them only on a CPU that runs AVX2, FMA and F16C). Semantics: kernel_table.h.
#pragma once

#define MINFER_SIMD_KERNEL_NAMESPACE avx2
#include "kernels/cell_row_loops_decl.h"
#include "kernels/simd_kernels_decl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE
