// The gated delta net's reference kernels (KernelTable::ssm_conv, l2_norm, delta_rule_step,
// delta_rule_chunk): the lane sums and matrix products every table reproduces bit for bit.
#include <algorithm>
#include <cmath>

#include "kernels/delta_chunk_impl.h"
#include "kernels/ref/ref_kernels.h"

namespace minfer::kernels::ref {

namespace {

constexpr int kLanes = 16;

// The 16 lanes folded in halves: lane l + 8 into l, then + 4, + 2, + 1.
float fold_lanes(float (&acc)[kLanes]) {
  for (int width = kLanes / 2; width >= 1; width /= 2) {
    for (int l = 0; l < width; ++l) acc[l] = acc[l] + acc[l + width];
  }
  return acc[0];
}

float lane_dot(const float* a, const float* b, int64_t n) {
  float acc[kLanes] = {};
  for (int64_t i = 0; i < n; ++i) acc[i % kLanes] = std::fma(a[i], b[i], acc[i % kLanes]);
  return fold_lanes(acc);
}

// delta_chunk_impl.h's matrix product: each C element's fused multiply-adds in order of p.
void gemm(int64_t m_rows, int64_t n_cols, int64_t p_len, const float* a, int64_t a_row,
          int64_t a_col, const float* b, int64_t ldb, float* c, int64_t ldc) {
  for (int64_t m = 0; m < m_rows; ++m) {
    for (int64_t j = 0; j < n_cols; ++j) {
      float sum = c[m * ldc + j];
      for (int64_t p = 0; p < p_len; ++p)
        sum = std::fma(a[m * a_row + p * a_col], b[p * ldb + j], sum);
      c[m * ldc + j] = sum;
    }
  }
}

}  // namespace

void ssm_conv(const float* const* rows, const float* taps, int64_t d_conv, int64_t n, float* y) {
  for (int64_t c = 0; c < n; ++c) {
    float sum = 0.0f;
    for (int64_t k = 0; k < d_conv; ++k) sum = std::fma(taps[k * n + c], rows[k][c], sum);
    y[c] = sum;
  }
}

void l2_norm(const float* x, float eps, int64_t n, float* y) {
  const float scale = 1.0f / std::max(std::sqrt(lane_dot(x, x, n)), eps);
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * scale;
}

void delta_rule_step(float* state, const float* q, const float* k, const float* v, float decay,
                     float beta, int64_t dk, int64_t dv, float* out) {
  for (int64_t j = 0; j < dv; ++j) {
    float* s = state + j * dk;
    for (int64_t i = 0; i < dk; ++i) s[i] = s[i] * decay;
    const float delta = (v[j] - lane_dot(s, k, dk)) * beta;
    for (int64_t i = 0; i < dk; ++i) s[i] = std::fma(k[i], delta, s[i]);
    out[j] = lane_dot(s, q, dk);
  }
}

void delta_rule_chunk(float* state, const DeltaChunk& c) {
  chunk::delta_rule_chunk(state, c, gemm);
}

}  // namespace minfer::kernels::ref
