// The AVX-512 matmul tiles of the x16 row-interleaved layout (kernels/interleave.h), behind
// avx512_table's matmul_tile_x16 (declarations only: safe to include anywhere, but call them only
// on a CPU that runs AVX-512 F/BW/VL/DQ/VNNI). Semantics: KernelTable::matmul_tile_x16.
#pragma once

#include <cstddef>
#include <cstdint>

namespace minfer::kernels::avx512 {

// Instantiated for BlockQ8_0, BlockQ4_0 and BlockQ5_0 (quant/blocks.h).
template <class Block>
void matmul_tile_x16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride);

}  // namespace minfer::kernels::avx512
