// The ARMv8.0 NEON kernels behind neon_table (declarations only; every ARM64 CPU runs them).
// Semantics: kernel_table.h.
#pragma once

#define MINFER_SIMD_KERNEL_NAMESPACE neon
#include "kernels/simd_kernels_decl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE
