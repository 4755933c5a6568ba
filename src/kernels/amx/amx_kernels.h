// The AMX-INT8 kernels behind amx_table (declarations only: safe to include anywhere, but call
// them only on a CPU and OS that run AMX: CpuFeatures::can_run_amx).
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

namespace minfer::kernels::amx {

// Q4_K and Q5_K (BlockQ4K, BlockQ5K) weights in the x16 layout (kernels/interleave.h),
// KernelTable::matmul_tile_x16's contract: 16 tokens at a time on the tiles, the rest (and calls
// of 16 tokens or fewer) on avx512's x16 kernels. Bit-identical to the reference.
template <class Block>
void matmul_tile_x16_k(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                       const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                       int64_t y_stride);

}  // namespace minfer::kernels::amx
