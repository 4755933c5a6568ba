// The AVX2 matmul tiles of the x16 row-interleaved layout (kernels/interleave.h), behind
// avx2_table's matmul_tile_x16, and the same tiles with AVX-VNNI's dot (avxvnni_table)
// (declarations only: safe to include anywhere, but call them only on a CPU that runs AVX2, FMA
// and F16C, and for avxvnni:: AVX-VNNI). Semantics: KernelTable::matmul_tile_x16.
#pragma once

#include <cstddef>
#include <cstdint>

// Instantiated for BlockQ8_0, BlockQ4_0, BlockQ5_0, BlockQ4K, BlockQ5K and BlockQ6K
// (quant/blocks.h); avxvnni::'s is the same with AVX-VNNI's dot.
#define MINFER_DECLARE_X16_TILE                                                         \
  template <class Block>                                                                \
  void matmul_tile_x16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, \
                       const void* act, size_t act_row_bytes, int64_t n_tok, float* y,  \
                       int64_t y_stride);
namespace minfer::kernels::avx2 {
MINFER_DECLARE_X16_TILE
}  // namespace minfer::kernels::avx2
namespace minfer::kernels::avxvnni {
MINFER_DECLARE_X16_TILE
}  // namespace minfer::kernels::avxvnni
#undef MINFER_DECLARE_X16_TILE

// The explicit instantiations of matmul_tile_x16 for its block types, written inside the
// namespace of the translation unit that defines it.
#define MINFER_INSTANTIATE_X16_TILE(Block)                                                         \
  template void matmul_tile_x16<Block>(int64_t, const void*, size_t, int64_t, const void*, size_t, \
                                       int64_t, float*, int64_t);
#define MINFER_INSTANTIATE_X16_TILES      \
  MINFER_INSTANTIATE_X16_TILE(BlockQ8_0)  \
  MINFER_INSTANTIATE_X16_TILE(BlockQ4_0)  \
  MINFER_INSTANTIATE_X16_TILE(BlockQ5_0)  \
  MINFER_INSTANTIATE_X16_TILE(BlockMxfp4) \
  MINFER_INSTANTIATE_X16_TILE(BlockQ4K)   \
  MINFER_INSTANTIATE_X16_TILE(BlockQ5K)   \
  MINFER_INSTANTIATE_X16_TILE(BlockQ6K)
