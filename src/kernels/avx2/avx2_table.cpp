#include "kernels/avx2/avx2_kernels.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/ggml_type.h"

namespace minfer::kernels {
namespace {

constexpr int slot(GgmlType type) {
  return static_cast<int>(type);
}

constexpr KernelTable make_avx2_table() {
  KernelTable t{};
  t.isa = Isa::kAvx2;
  t.name = "avx2";
  t.rms_norm = avx2::rms_norm;
  t.softmax = avx2::softmax;
  t.exp_sum = avx2::exp_sum;
  t.silu = avx2::silu;
  t.swiglu = avx2::swiglu;
  t.add = avx2::add;
  t.mul = avx2::mul;
  t.scale = avx2::scale;
  t.rope = avx2::rope;
  t.dot_f32 = avx2::dot_f32;
  t.axpy_f32 = avx2::axpy_f32;
  t.dot_rows_f32 = avx2::dot_rows_f32;
  t.weighted_sum_f32 = avx2::weighted_sum_f32;
  t.f16_to_f32 = avx2::f16_to_f32;
  t.f32_to_f16 = avx2::f32_to_f16;
  t.bf16_to_f32 = avx2::bf16_to_f32;
  t.f32_to_bf16 = avx2::f32_to_bf16;
  t.matmul_tile[slot(GgmlType::kF32)] = avx2::matmul_tile_f32;
  t.matmul_tile[slot(GgmlType::kF16)] = avx2::matmul_tile_f16;
  t.matmul_tile[slot(GgmlType::kBF16)] = avx2::matmul_tile_bf16;
  t.matmul_tile[slot(GgmlType::kQ4_0)] = avx2::matmul_tile_q4_0;
  t.matmul_tile[slot(GgmlType::kQ4_1)] = avx2::matmul_tile_q4_1;
  t.matmul_tile[slot(GgmlType::kQ5_0)] = avx2::matmul_tile_q5_0;
  t.matmul_tile[slot(GgmlType::kQ5_1)] = avx2::matmul_tile_q5_1;
  t.matmul_tile[slot(GgmlType::kQ8_0)] = avx2::matmul_tile_q8_0;
  t.matmul_tile[slot(GgmlType::kQ2_K)] = avx2::matmul_tile_q2_K;
  t.matmul_tile[slot(GgmlType::kQ3_K)] = avx2::matmul_tile_q3_K;
  t.matmul_tile[slot(GgmlType::kQ4_K)] = avx2::matmul_tile_q4_K;
  t.matmul_tile[slot(GgmlType::kQ5_K)] = avx2::matmul_tile_q5_K;
  t.matmul_tile[slot(GgmlType::kQ6_K)] = avx2::matmul_tile_q6_K;
  t.quantize_act[slot(GgmlType::kF16)] = avx2::act_f16;
  t.quantize_act[slot(GgmlType::kBF16)] = avx2::act_bf16;
  t.quantize_act[slot(GgmlType::kQ8_0)] = avx2::act_q8_0;
  t.quantize_act_q8_0_sums = avx2::act_q8_0_sums;
  t.quantize_act[slot(GgmlType::kQ8_1)] = avx2::act_q8_1;
  t.quantize_act[slot(GgmlType::kQ8_K)] = avx2::act_q8_K;
  // F32 cells are a copy either way: the reference's memcpy.
  t.cells_from_f32[slot(GgmlType::kF32)] = ref::cells_from_f32_f32;
  t.cells_to_f32[slot(GgmlType::kF32)] = ref::cells_to_f32_f32;
  t.cells_from_f32[slot(GgmlType::kF16)] = avx2::act_f16;
  t.cells_to_f32[slot(GgmlType::kF16)] = avx2::cells_to_f32_f16;
  t.cells_from_f32[slot(GgmlType::kQ8_0)] = avx2::cells_from_f32_q8_0;
  t.cells_to_f32[slot(GgmlType::kQ8_0)] = avx2::cells_to_f32_q8_0;
  return t;
}

}  // namespace

constinit const KernelTable avx2_table = make_avx2_table();

}  // namespace minfer::kernels
