// The reference vector ops: plain C++ that defines what every SIMD version must compute.
// Where llama.cpp's CPU backend fixes an order of operations that changes results (rms_norm's
// float scale, softmax's double sum scaled in float), these follow it.
#include <cmath>
#include <cstdint>
#include <limits>

#include "kernels/ref/ref_kernels.h"
#include "quant/fp16.h"

namespace minfer::kernels::ref {

void rms_norm(const float* x, const float* w, float eps, int64_t n, float* y) {
  // As ggml (ggml_compute_forward_rms_norm_f32): each square rounded to float, summed in double;
  // the mean rounded to float, the scale computed in float, then x * scale * w. (Exact double
  // squares flip the float mean now and then, enough to move stories260K's perplexity by 2e-4.)
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) sum += static_cast<double>(x[i] * x[i]);
  const float mean = static_cast<float>(sum / static_cast<double>(n));
  const float scale = 1.0f / std::sqrt(mean + eps);
  for (int64_t i = 0; i < n; ++i) y[i] = (x[i] * scale) * w[i];
}

double exp_sum(const float* x, float shift, int64_t n, float* y) {
  double sum = 0.0;
  for (int64_t i = 0; i < n; ++i) {
    const float e = std::exp(x[i] - shift);
    y[i] = e;
    sum += e;
  }
  return sum;
}

float max_f32(const float* x, int64_t n, float init) {
  float m = init;
  for (int64_t i = 0; i < n; ++i) m = x[i] > m ? x[i] : m;
  return m;
}

void softmax(const float* x, int64_t n, float* y) {
  float max = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i) max = x[i] > max ? x[i] : max;
  // exp(-inf) is exactly 0, so masked entries get weight 0. (All -inf: max is -inf and
  // -inf - -inf is NaN; callers never mask a whole row, a token always sees itself.)
  const double sum = exp_sum(x, max, n, y);
  const float inv = static_cast<float>(1.0 / sum);
  for (int64_t i = 0; i < n; ++i) y[i] *= inv;
}

void silu(const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] / (1.0f + std::exp(-x[i]));
}

void swiglu(const float* gate, const float* up, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = gate[i] / (1.0f + std::exp(-gate[i])) * up[i];
}

void add(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

void mul(const float* a, const float* b, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = a[i] * b[i];
}

void scale(const float* x, float s, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = x[i] * s;
}

void rope(float* x, int64_t n_head, int64_t head_dim, int64_t n_rot, const float* cos_sin,
          RopeStyle style) {
  const int64_t half = n_rot / 2;
  // NeoX rotates (i, i + n_rot/2); adjacent rotates (2i, 2i + 1). Pair i uses angle i.
  const int64_t stride = style == RopeStyle::kNeox ? 1 : 2;
  const int64_t partner = style == RopeStyle::kNeox ? half : 1;
  for (int64_t h = 0; h < n_head; ++h) {
    float* head = x + h * head_dim;
    for (int64_t i = 0; i < half; ++i) {
      const float c = cos_sin[i];
      const float s = cos_sin[half + i];
      float* p = head + i * stride;
      const float x0 = p[0];
      const float x1 = p[partner];
      p[0] = x0 * c - x1 * s;
      p[partner] = x0 * s + x1 * c;
    }
  }
}

float dot_f32(const float* a, const float* b, int64_t n) {
  float sum = 0.0f;
  for (int64_t i = 0; i < n; ++i) sum += a[i] * b[i];
  return sum;
}

void axpy_f32(float a, const float* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] += a * x[i];
}
void dot_rows_f32(F32Rows rows, F32Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  for (int64_t i = 0; i < x.n; ++i) {
    for (int64_t j = 0; j < rows.n; ++j) {
      out[i * out_stride + j] = dot_f32(rows.row(j), x.row(i), n) * scale;
    }
  }
}

void weighted_sum_f32(F32Rows w, F32Rows rows, int64_t n, float* y, int64_t y_stride) {
  for (int64_t i = 0; i < w.n; ++i) {
    for (int64_t j = 0; j < rows.n; ++j) axpy_f32(w.row(i)[j], rows.row(j), n, y + i * y_stride);
  }
}

void f16_to_f32(const uint16_t* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}

void f32_to_f16(const float* x, int64_t n, uint16_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}

void bf16_to_f32(const uint16_t* x, int64_t n, float* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(x[i]);
}

void f32_to_bf16(const float* x, int64_t n, uint16_t* y) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}

}  // namespace minfer::kernels::ref
