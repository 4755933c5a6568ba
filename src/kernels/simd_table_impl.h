// The SIMD kernel tables (avx2, avx512) point at the same kernels of their own ISA, so one
// definition makes both. Not a header of its own: an ISA's *_table.cpp defines
// MINFER_SIMD_KERNEL_NAMESPACE and includes this after its kernels' header.

#include "kernels/ref/ref_kernels.h"
#include "quant/ggml_type.h"

namespace minfer::kernels::MINFER_SIMD_KERNEL_NAMESPACE {

// The table of this ISA's kernels.
constexpr KernelTable make_table(Isa isa, const char* name) {
  constexpr auto slot = [](GgmlType type) { return static_cast<int>(type); };
  KernelTable t{};
  t.isa = isa;
  t.name = name;
  set_ops(t);
  t.matmul_tile[slot(GgmlType::kF32)] = matmul_tile_f32;
  t.matmul_tile[slot(GgmlType::kF16)] = matmul_tile_f16;
  t.matmul_tile[slot(GgmlType::kBF16)] = matmul_tile_bf16;
  t.matmul_tile[slot(GgmlType::kQ4_0)] = matmul_tile_q4_0;
  t.matmul_tile[slot(GgmlType::kQ4_1)] = matmul_tile_q4_1;
  t.matmul_tile[slot(GgmlType::kQ5_0)] = matmul_tile_q5_0;
  t.matmul_tile[slot(GgmlType::kQ5_1)] = matmul_tile_q5_1;
  t.matmul_tile[slot(GgmlType::kQ8_0)] = matmul_tile_q8_0;
  t.matmul_tile[slot(GgmlType::kQ2_K)] = matmul_tile_q2_K;
  t.matmul_tile[slot(GgmlType::kQ3_K)] = matmul_tile_q3_K;
  t.matmul_tile[slot(GgmlType::kQ4_K)] = matmul_tile_q4_K;
  t.matmul_tile[slot(GgmlType::kQ5_K)] = matmul_tile_q5_K;
  t.matmul_tile[slot(GgmlType::kQ6_K)] = matmul_tile_q6_K;
  t.matmul_tile[slot(GgmlType::kMXFP4)] = matmul_tile_mxfp4;
  t.quantize_act[slot(GgmlType::kF16)] = act_f16;
  t.quantize_act[slot(GgmlType::kBF16)] = act_bf16;
  t.quantize_act[slot(GgmlType::kQ8_0)] = act_q8_0;
  t.quantize_act_q8_0_sums = act_q8_0_sums;
  t.quantize_act[slot(GgmlType::kQ8_1)] = act_q8_1;
  t.quantize_act[slot(GgmlType::kQ8_K)] = act_q8_K;
  // F32 cells are a copy either way: the reference's memcpy.
  t.cells_from_f32[slot(GgmlType::kF32)] = ref::cells_from_f32_f32;
  t.cells_to_f32[slot(GgmlType::kF32)] = ref::cells_to_f32_f32;
  t.cells_from_f32[slot(GgmlType::kF16)] = act_f16;
  t.cells_to_f32[slot(GgmlType::kF16)] = cells_to_f32_f16;
  t.cells_from_f32[slot(GgmlType::kQ8_0)] = cells_from_f32_q8_0;
  t.cells_to_f32[slot(GgmlType::kQ8_0)] = cells_to_f32_q8_0;
  t.cells_from_f32[slot(GgmlType::kBF16)] = act_bf16;
  t.cells_to_f32[slot(GgmlType::kBF16)] = cells_to_f32_bf16;
  t.dot_rows_bf16 = dot_rows_bf16;
  t.weighted_sum_bf16 = weighted_sum_bf16;
  return t;
}

}  // namespace minfer::kernels::MINFER_SIMD_KERNEL_NAMESPACE
