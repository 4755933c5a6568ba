#include <cstddef>
#include <cstdint>

#include "kernels/ref/ref_kernels.h"
#include "quant/act_quant.h"
#include "quant/blocks.h"
#include "quant/fp16.h"
#include "quant/ggml_type.h"

namespace minfer::kernels {

void q8_0_act_lanes(void* row, int64_t n_blocks) {
  const auto* blocks = static_cast<const BlockQ8_0*>(row);
  const size_t n = static_cast<size_t>(n_blocks);
  auto* bytes = static_cast<uint8_t*>(row);
  int32_t* starts = reinterpret_cast<int32_t*>(bytes + q8_0_act_starts_offset(n));  // [n][8]
  float* scales = reinterpret_cast<float*>(bytes + q8_0_act_scales_offset(n));      // [n]
  for (size_t b = 0; b < n; ++b) {
    for (int l = 0; l < 8; ++l) {
      int32_t s = 0;
      for (int i = 4 * l; i < 4 * l + 4; ++i) s += blocks[b].qs[i];
      starts[8 * b + l] = kQ8_0LaneMagic - 128 * s;
    }
    scales[b] = fp16_to_fp32(blocks[b].d);
  }
}

namespace {

// The reference Q8_0 activation row: llama.cpp's x86 quantization, then the block sums, lane
// starts and f32 scales.
void quantize_act_q8_0_sums(const float* x, void* y, int64_t n) {
  quantize_act_q8_0(x, y, n);
  const auto* blocks = static_cast<const BlockQ8_0*>(y);
  const size_t n_blocks = static_cast<size_t>(n / kQK8_0);
  int32_t* sums = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(y) +  // [n_blocks]
                                             q8_0_act_sums_offset(n_blocks));
  for (size_t b = 0; b < n_blocks; ++b) {
    int32_t s = 0;
    for (int i = 0; i < kQK8_0; ++i) s += blocks[b].qs[i];
    sums[b] = s;
  }
  q8_0_act_lanes(y, n / kQK8_0);
}

constexpr int slot(GgmlType type) {
  return static_cast<int>(type);
}

constexpr KernelTable make_ref_table() {
  KernelTable t{};
  t.isa = Isa::kRef;
  t.name = "ref";
  ref::set_ops(t);
  namespace rd = minfer::ref;
  t.matmul_tile[slot(GgmlType::kF32)] = ref::matmul_tile<rd::vec_dot_f32>;
  t.matmul_tile[slot(GgmlType::kF16)] = ref::matmul_tile<rd::vec_dot_f16>;
  t.matmul_tile[slot(GgmlType::kBF16)] = ref::matmul_tile<rd::vec_dot_bf16>;
  t.matmul_tile[slot(GgmlType::kQ4_0)] = ref::matmul_tile<rd::vec_dot_q4_0_q8_0>;
  t.matmul_tile[slot(GgmlType::kQ4_1)] = ref::matmul_tile<rd::vec_dot_q4_1_q8_1>;
  t.matmul_tile[slot(GgmlType::kQ5_0)] = ref::matmul_tile<rd::vec_dot_q5_0_q8_0>;
  t.matmul_tile[slot(GgmlType::kQ5_1)] = ref::matmul_tile<rd::vec_dot_q5_1_q8_1>;
  t.matmul_tile[slot(GgmlType::kQ8_0)] = ref::matmul_tile<rd::vec_dot_q8_0_q8_0>;
  t.matmul_tile[slot(GgmlType::kMXFP4)] = ref::matmul_tile<rd::vec_dot_mxfp4_q8_0>;
  t.matmul_tile[slot(GgmlType::kQ2_K)] = ref::matmul_tile<rd::vec_dot_q2_K_q8_K>;
  t.matmul_tile[slot(GgmlType::kQ3_K)] = ref::matmul_tile<rd::vec_dot_q3_K_q8_K>;
  t.matmul_tile[slot(GgmlType::kQ4_K)] = ref::matmul_tile<rd::vec_dot_q4_K_q8_K>;
  t.matmul_tile[slot(GgmlType::kQ5_K)] = ref::matmul_tile<rd::vec_dot_q5_K_q8_K>;
  t.matmul_tile[slot(GgmlType::kQ6_K)] = ref::matmul_tile<rd::vec_dot_q6_K_q8_K>;
  // Q8_0 / Q8_1 activations as llama.cpp's x86 CPU backend makes them (quant/act_quant.h);
  // Q8_K, F16 and BF16 (nullptr here) use quant_traits' reference converters.
  t.quantize_act[slot(GgmlType::kQ8_0)] = quantize_act_q8_0;
  t.quantize_act[slot(GgmlType::kQ8_1)] = quantize_act_q8_1;
  t.quantize_act_q8_0_sums = quantize_act_q8_0_sums;
  t.cells_from_f32[slot(GgmlType::kF32)] = ref::cells_from_f32_f32;
  t.cells_to_f32[slot(GgmlType::kF32)] = ref::cells_to_f32_f32;
  t.cells_from_f32[slot(GgmlType::kF16)] = ref::cells_from_f32_f16;
  t.cells_to_f32[slot(GgmlType::kF16)] = ref::cells_to_f32_f16;
  t.cells_from_f32[slot(GgmlType::kQ8_0)] = ref::cells_from_f32_q8_0;
  t.cells_to_f32[slot(GgmlType::kQ8_0)] = ref::cells_to_f32_q8_0;
  t.cells_from_f32[slot(GgmlType::kBF16)] = ref::cells_from_f32_bf16;
  t.cells_to_f32[slot(GgmlType::kBF16)] = ref::cells_to_f32_bf16;
  t.dot_rows_bf16 = ref::dot_rows_bf16;
  t.weighted_sum_bf16 = ref::weighted_sum_bf16;
  return t;
}

}  // namespace

constinit const KernelTable ref_table = make_ref_table();

}  // namespace minfer::kernels
