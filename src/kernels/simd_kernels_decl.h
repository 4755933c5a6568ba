// The functions behind every SIMD kernel table, declared once for all ISAs. Not a header of its
// own: an ISA's header (avx2/avx2_kernels.h, avx512/avx512_kernels.h) defines
// MINFER_SIMD_KERNEL_NAMESPACE and includes this inside its include guard, so each ISA gets the
// same declarations in its own namespace. Semantics: kernel_table.h.

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"

#define MINFER_KERNEL_NAMESPACE MINFER_SIMD_KERNEL_NAMESPACE
#include "kernels/ops_decl.h"
#undef MINFER_KERNEL_NAMESPACE

namespace minfer::kernels::MINFER_SIMD_KERNEL_NAMESPACE {

// QuantizeRow wrappers of f32_to_f16 / f32_to_bf16 for the F16 / BF16 activations.
QuantizeRow act_f16;
QuantizeRow act_bf16;
// Q8_0 / Q8_1 activations with llama.cpp's x86 semantics (quant/act_quant.h) and Q8_K as
// quantize_row_q8_K, bit for bit.
QuantizeRow act_q8_0;
// act_q8_0, then each block's int32 quant sum (KernelTable::quantize_act_q8_0_sums).
QuantizeRow act_q8_0_sums;
QuantizeRow act_q8_1;
QuantizeRow act_q8_K;
// KV cells (KernelTable::cells_from_f32 / cells_to_f32; F16 / BF16 cells are written by act_f16 /
// act_bf16).
DequantizeRow cells_to_f32_f16;
DequantizeRow cells_to_f32_bf16;
QuantizeRow cells_from_f32_q8_0;
DequantizeRow cells_to_f32_q8_0;
// Attention's row loops over bf16 cells (KernelTable::dot_rows_bf16 / weighted_sum_bf16): the
// scores by the ISA's *_bf16_cells.cpp, the values by ops_impl.h's MINFER_DEFINE_BF16_CELL_LOOPS.
void dot_rows_bf16(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                   int64_t out_stride);
void weighted_sum_bf16(F32Rows w, BF16Rows rows, int64_t n, float* y, int64_t y_stride);

MatmulTile matmul_tile_f32;
MatmulTile matmul_tile_f16;
MatmulTile matmul_tile_bf16;

}  // namespace minfer::kernels::MINFER_SIMD_KERNEL_NAMESPACE

#define MINFER_QUANT_TILE_NAMESPACE MINFER_SIMD_KERNEL_NAMESPACE
#include "kernels/quant_tiles_decl.h"
#undef MINFER_QUANT_TILE_NAMESPACE
