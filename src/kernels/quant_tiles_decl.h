// The quantized matmul tiles of a SIMD table, declared once (kernels/quant_tile_impl.h; VNNI on
// AVX-512 and avxvnni); bit-identical to the reference tiles. Not a header of its own:
// simd_kernels_decl.h and avx2/avxvnni_kernels.h define MINFER_QUANT_TILE_NAMESPACE and include
// it. Semantics: KernelTable::matmul_tile.

#include "kernels/kernel_table.h"

namespace minfer::kernels::MINFER_QUANT_TILE_NAMESPACE {

MatmulTile matmul_tile_q4_0;
MatmulTile matmul_tile_q4_1;
MatmulTile matmul_tile_q5_0;
MatmulTile matmul_tile_q5_1;
MatmulTile matmul_tile_q8_0;
MatmulTile matmul_tile_mxfp4;
MatmulTile matmul_tile_q2_K;
MatmulTile matmul_tile_q3_K;
MatmulTile matmul_tile_q4_K;
MatmulTile matmul_tile_q5_K;
MatmulTile matmul_tile_q6_K;

}  // namespace minfer::kernels::MINFER_QUANT_TILE_NAMESPACE
