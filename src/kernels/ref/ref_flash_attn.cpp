#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/ref/flash_attn_f16.h"
#include "quant/fp16.h"

namespace minfer::kernels::ref {
namespace {

constexpr int64_t kGgmlLanes = 16;  // floats per AVX-512 vector: the unit of every sum below

// Σ of 16 lanes in _mm512_reduce_add_ps's order: halves added pairwise (8, 4, 2, 1).
float lane_sum16(const float* x) {
  float a[8];
  for (int i = 0; i < 8; ++i) a[i] = x[i + 8] + x[i];
  float b[4];
  for (int i = 0; i < 4; ++i) b[i] = a[i + 4] + a[i];
  return (b[0] + b[2]) + (b[1] + b[3]);
}

}  // namespace

float dot_f16_ggml(const uint16_t* x, const uint16_t* y, int64_t n) {
  const int64_t np = n & ~int64_t{63};
  double sum = 0.0;
  if (np > 0) {
    float acc[4][kGgmlLanes] = {};
    for (int64_t i = 0; i < np; i += 64) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < kGgmlLanes; ++l) {
          const int64_t k = i + j * kGgmlLanes + l;
          acc[j][l] = std::fma(fp16_to_fp32(x[k]), fp16_to_fp32(y[k]), acc[j][l]);
        }
      }
    }
    float s[kGgmlLanes];
    for (int l = 0; l < kGgmlLanes; ++l) s[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    sum = static_cast<double>(lane_sum16(s));
  }
  for (int64_t k = np; k < n; ++k) {
    sum += static_cast<double>(fp16_to_fp32(x[k]) * fp16_to_fp32(y[k]));
  }
  return static_cast<float>(sum);
}

void flash_f16_start(FlashRowF16& row, const float* q) {
  for (int64_t d = 0; d < row.head_dim; ++d) row.q16[d] = fp32_to_fp16(q[d]);
  std::fill(row.vkq16, row.vkq16 + row.head_dim_v, uint16_t{0});
  row.sum = 0.0f;
  row.max = -std::numeric_limits<float>::infinity();
}

void flash_f16_cells(FlashRowF16& row, const uint16_t* keys, const uint16_t* values, int64_t n) {
  const int64_t dv = row.head_dim_v;
  uint16_t* vkq16 = row.vkq16;
  for (int64_t j = 0; j < n; ++j) {
    const uint16_t* value = values + j * dv;
    const float s = dot_f16_ggml(keys + j * row.head_dim, row.q16, row.head_dim) * row.scale;
    float ms = 1.0f;
    float vs = 1.0f;
    if (s > row.max) {
      const float m_old = row.max;
      row.max = s;
      ms = std::exp(m_old - row.max);
      for (int64_t d = 0; d < dv; ++d) vkq16[d] = fp32_to_fp16(fp16_to_fp32(vkq16[d]) * ms);
    } else {
      vs = std::exp(s - row.max);
    }
    for (int64_t d = 0; d < dv; ++d) {
      vkq16[d] = fp32_to_fp16(std::fma(fp16_to_fp32(value[d]), vs, fp16_to_fp32(vkq16[d])));
    }
    row.sum = std::fma(row.sum, ms, vs);
  }
}

void flash_f16_sink(FlashRowF16& row, float sink) {
  float ms = 1.0f;
  float vs = 1.0f;
  if (sink > row.max) {
    ms = std::exp(row.max - sink);
    for (int64_t d = 0; d < row.head_dim_v; ++d) {
      row.vkq16[d] = fp32_to_fp16(fp16_to_fp32(row.vkq16[d]) * ms);
    }
  } else {
    vs = std::exp(sink - row.max);
  }
  row.sum = row.sum * ms + vs;
}

void flash_f16_finish(const FlashRowF16& row, float* out) {
  const float s_inv = row.sum == 0.0f ? 0.0f : 1.0f / row.sum;
  for (int64_t d = 0; d < row.head_dim_v; ++d) out[d] = fp16_to_fp32(row.vkq16[d]) * s_inv;
}

}  // namespace minfer::kernels::ref
