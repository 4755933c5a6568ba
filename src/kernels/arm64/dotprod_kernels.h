// The ARMv8.2 dotprod kernels behind dotprod_table (declarations only: call them only on a CPU
// with asimddp). Only the quantized matmul tiles (matmul_tile_q*) are defined for dotprod: the
// table takes every other slot from neon_table (arm64_tables.cpp). Semantics: kernel_table.h.
#pragma once

#define MINFER_SIMD_KERNEL_NAMESPACE dotprod
#include "kernels/simd_kernels_decl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE
