// The AVX-512 matmul tiles of the x16 row-interleaved layout (kernels/interleave.h), behind
// avx512_table's matmul_tile_x16, and the AMX-INT8 ones behind amx_table's (declarations only: safe
// to include anywhere, but call them only on a CPU that runs AVX-512 F/BW/VL/DQ/VNNI, and the amx::
// ones where CpuFeatures::can_run_amx). Semantics: KernelTable::matmul_tile_x16.
#pragma once

#include <cstddef>
#include <cstdint>

// avx512:: instantiated for BlockQ8_0, BlockQ4_0, BlockQ5_0, BlockMxfp4, BlockQ4K, BlockQ5K and
// BlockQ6K (quant/blocks.h); amx:: for BlockQ4K and BlockQ5K, 16 tokens at a time on the tiles and
// the rest (and calls of 16 tokens or fewer) on avx512::'s.
#define MINFER_DECLARE_X16_TILE                                                         \
  template <class Block>                                                                \
  void matmul_tile_x16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, \
                       const void* act, size_t act_row_bytes, int64_t n_tok, float* y,  \
                       int64_t y_stride);
namespace minfer::kernels::avx512 {
MINFER_DECLARE_X16_TILE
}  // namespace minfer::kernels::avx512
namespace minfer::kernels::amx {
MINFER_DECLARE_X16_TILE
}  // namespace minfer::kernels::amx
#undef MINFER_DECLARE_X16_TILE
