// The AVX2 matmul tiles of the x16 row-interleaved layout (kernels/interleave.h), behind
// avx2_table's matmul_tile_x16 (declarations only: safe to include anywhere, but call them only
// on a CPU that runs AVX2, FMA and F16C). Semantics: KernelTable::matmul_tile_x16.
#pragma once

#include <cstddef>
#include <cstdint>

namespace minfer::kernels::avx2 {

// Instantiated for BlockQ8_0, BlockQ4_0, BlockQ5_0, BlockQ4K, BlockQ5K and BlockQ6K
// (quant/blocks.h).
template <class Block>
void matmul_tile_x16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride);

}  // namespace minfer::kernels::avx2
