// The ARM64 kernel tables: neon (ARMv8.0, every ARM64 CPU), dotprod (ARMv8.2 sdot: neon's
// table with its own quantized matmul tiles) and i8mm (ARMv8.6: dotprod's table for now; smmla's
// 8-quant sums cannot give Q8_0's 4-quant lanes, llama.cpp's x86 order, so its Q8_0 tile went).
#include "kernels/arm64/dotprod_kernels.h"
#include "kernels/arm64/neon_kernels.h"

#define MINFER_SIMD_KERNEL_NAMESPACE neon
#include "kernels/simd_table_impl.h"
#undef MINFER_SIMD_KERNEL_NAMESPACE

namespace minfer::kernels {
namespace {

constexpr KernelTable make_dotprod_table() {
  constexpr auto slot = [](GgmlType type) { return static_cast<int>(type); };
  KernelTable t = neon::make_table(Isa::kDotprod, "dotprod");
  t.matmul_tile[slot(GgmlType::kQ4_0)] = dotprod::matmul_tile_q4_0;
  t.matmul_tile[slot(GgmlType::kQ4_1)] = dotprod::matmul_tile_q4_1;
  t.matmul_tile[slot(GgmlType::kQ5_0)] = dotprod::matmul_tile_q5_0;
  t.matmul_tile[slot(GgmlType::kQ5_1)] = dotprod::matmul_tile_q5_1;
  t.matmul_tile[slot(GgmlType::kQ8_0)] = dotprod::matmul_tile_q8_0;
  t.matmul_tile[slot(GgmlType::kQ2_K)] = dotprod::matmul_tile_q2_K;
  t.matmul_tile[slot(GgmlType::kQ3_K)] = dotprod::matmul_tile_q3_K;
  t.matmul_tile[slot(GgmlType::kQ4_K)] = dotprod::matmul_tile_q4_K;
  t.matmul_tile[slot(GgmlType::kQ5_K)] = dotprod::matmul_tile_q5_K;
  t.matmul_tile[slot(GgmlType::kQ6_K)] = dotprod::matmul_tile_q6_K;
  t.matmul_tile[slot(GgmlType::kMXFP4)] = dotprod::matmul_tile_mxfp4;
  return t;
}

constexpr KernelTable make_i8mm_table() {
  KernelTable t = make_dotprod_table();
  t.isa = Isa::kI8mm;
  t.name = "i8mm";
  return t;
}

}  // namespace

constinit const KernelTable neon_table = neon::make_table(Isa::kNeon, "neon");
constinit const KernelTable dotprod_table = make_dotprod_table();
constinit const KernelTable i8mm_table = make_i8mm_table();

}  // namespace minfer::kernels
