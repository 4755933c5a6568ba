// The ARMv8.6 i8mm kernels behind i8mm_table (declarations only: call them only on a CPU with
// asimddp and i8mm). Only matmul_tile_q8_0 is defined for i8mm: the table takes every other slot
// from dotprod_table (arm64_tables.cpp). Semantics: kernel_table.h.
#pragma once

#define MINFER_SIMD_KERNEL_NAMESPACE i8mm
#include "kernels/simd_kernels_decl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE
