// The AVX-512 kernels behind avx512_table (declarations only: safe to include anywhere, but
// call them only on a CPU that runs AVX-512 F/BW/VL/DQ/VNNI). Semantics: kernel_table.h.
#pragma once

#define MINFER_SIMD_KERNEL_NAMESPACE avx512
#include "kernels/cell_row_loops_decl.h"
#include "kernels/simd_kernels_decl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE
