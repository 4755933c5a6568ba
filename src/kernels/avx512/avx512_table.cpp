#include "kernels/avx512/avx512_interleaved.h"
#include "kernels/avx512/avx512_kernels.h"
#include "quant/blocks.h"

#define MINFER_SIMD_KERNEL_NAMESPACE avx512
#include "kernels/simd_table_impl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE

namespace minfer::kernels {
namespace {

// The x16-layout tiles (kernels/interleave.h) and attention's f16 row loops: entries the ARM
// tables do not have.
constexpr KernelTable with_x86_kernels(KernelTable t) {
  avx512::set_cell_row_loops(t);
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ8_0)] = avx512::matmul_tile_x16<BlockQ8_0>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ4_0)] = avx512::matmul_tile_x16<BlockQ4_0>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ5_0)] = avx512::matmul_tile_x16<BlockQ5_0>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kMXFP4)] = avx512::matmul_tile_x16<BlockMxfp4>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ4_K)] = avx512::matmul_tile_x16<BlockQ4K>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ5_K)] = avx512::matmul_tile_x16<BlockQ5K>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ6_K)] = avx512::matmul_tile_x16<BlockQ6K>;
  return t;
}

// avx512's table with the AMX-INT8 tiles (kernels/amx) where they win: Q4_K and Q5_K.
constexpr KernelTable with_amx_tiles(KernelTable t) {
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ4_K)] = amx::matmul_tile_x16<BlockQ4K>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ5_K)] = amx::matmul_tile_x16<BlockQ5K>;
  return t;
}

}  // namespace

constinit const KernelTable avx512_table =
    with_x86_kernels(avx512::make_table(Isa::kAvx512, "avx512"));
constinit const KernelTable amx_table =
    with_amx_tiles(with_x86_kernels(avx512::make_table(Isa::kAmx, "amx")));

}  // namespace minfer::kernels
