// The quantized matmul tiles of avxvnni_table (declarations only: safe to include anywhere, but
// call them only on a CPU that runs AVX2, FMA, F16C and AVX-VNNI). Semantics:
// KernelTable::matmul_tile. The rest of avxvnni_table is avx2_table's.
#pragma once

#define MINFER_QUANT_TILE_NAMESPACE avxvnni
#include "kernels/quant_tiles_decl.h"
#undef MINFER_QUANT_TILE_NAMESPACE
