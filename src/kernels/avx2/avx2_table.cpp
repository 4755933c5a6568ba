#include "kernels/avx2/avx2_interleaved.h"
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avxvnni_kernels.h"
#include "quant/blocks.h"

#define MINFER_SIMD_KERNEL_NAMESPACE avx2
#include "kernels/simd_table_impl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE

namespace minfer::kernels {
namespace {

// The x16-layout tiles (kernels/interleave.h; a 16-row group as two 8-row halves) and attention's
// f16 row loops: entries the ARM tables do not have.
constexpr KernelTable with_x86_kernels(KernelTable t) {
  avx2::set_cell_row_loops(t);
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ8_0)] = avx2::matmul_tile_x16<BlockQ8_0>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ4_0)] = avx2::matmul_tile_x16<BlockQ4_0>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ5_0)] = avx2::matmul_tile_x16<BlockQ5_0>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kMXFP4)] = avx2::matmul_tile_x16<BlockMxfp4>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ4_K)] = avx2::matmul_tile_x16<BlockQ4K>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ5_K)] = avx2::matmul_tile_x16<BlockQ5K>;
  t.matmul_tile_x16[static_cast<int>(GgmlType::kQ6_K)] = avx2::matmul_tile_x16<BlockQ6K>;
  return t;
}

// avx2_table with AVX-VNNI's quantized tiles (avxvnni_kernels.h, avx2_interleaved.h).
constexpr KernelTable with_vnni_tiles(KernelTable t) {
  constexpr auto slot = [](GgmlType type) { return static_cast<int>(type); };
  t.matmul_tile[slot(GgmlType::kQ4_0)] = avxvnni::matmul_tile_q4_0;
  t.matmul_tile[slot(GgmlType::kQ4_1)] = avxvnni::matmul_tile_q4_1;
  t.matmul_tile[slot(GgmlType::kQ5_0)] = avxvnni::matmul_tile_q5_0;
  t.matmul_tile[slot(GgmlType::kQ5_1)] = avxvnni::matmul_tile_q5_1;
  t.matmul_tile[slot(GgmlType::kQ8_0)] = avxvnni::matmul_tile_q8_0;
  t.matmul_tile[slot(GgmlType::kQ2_K)] = avxvnni::matmul_tile_q2_K;
  t.matmul_tile[slot(GgmlType::kQ3_K)] = avxvnni::matmul_tile_q3_K;
  t.matmul_tile[slot(GgmlType::kQ4_K)] = avxvnni::matmul_tile_q4_K;
  t.matmul_tile[slot(GgmlType::kQ5_K)] = avxvnni::matmul_tile_q5_K;
  t.matmul_tile[slot(GgmlType::kQ6_K)] = avxvnni::matmul_tile_q6_K;
  t.matmul_tile[slot(GgmlType::kMXFP4)] = avxvnni::matmul_tile_mxfp4;
  t.matmul_tile_x16[slot(GgmlType::kQ8_0)] = avxvnni::matmul_tile_x16<BlockQ8_0>;
  t.matmul_tile_x16[slot(GgmlType::kQ4_0)] = avxvnni::matmul_tile_x16<BlockQ4_0>;
  t.matmul_tile_x16[slot(GgmlType::kQ5_0)] = avxvnni::matmul_tile_x16<BlockQ5_0>;
  t.matmul_tile_x16[slot(GgmlType::kMXFP4)] = avxvnni::matmul_tile_x16<BlockMxfp4>;
  t.matmul_tile_x16[slot(GgmlType::kQ4_K)] = avxvnni::matmul_tile_x16<BlockQ4K>;
  t.matmul_tile_x16[slot(GgmlType::kQ5_K)] = avxvnni::matmul_tile_x16<BlockQ5K>;
  t.matmul_tile_x16[slot(GgmlType::kQ6_K)] = avxvnni::matmul_tile_x16<BlockQ6K>;
  return t;
}

}  // namespace

constinit const KernelTable avx2_table = with_x86_kernels(avx2::make_table(Isa::kAvx2, "avx2"));
constinit const KernelTable avxvnni_table =
    with_vnni_tiles(with_x86_kernels(avx2::make_table(Isa::kAvxVnni, "avxvnni")));

}  // namespace minfer::kernels
