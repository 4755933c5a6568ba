// The reference of bf16 KV cells: their converters, and their scores as llama.cpp's CPU flash
// attention makes them on an AVX512-BF16 host (ggml_vec_dot_bf16 over the cells and the query
// row converted to bf16). Plain C++ that every table's kernels match bit for bit.
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <vector>

#include "kernels/ref/ref_kernels.h"
#include "quant/fp16.h"

namespace minfer::kernels::ref {
namespace {

// A bf16 as VDPBF16PS reads it: a subnormal (exponent 0) as zero.
float bf16_daz(uint16_t h) {
  return (h & 0x7F80u) == 0 ? 0.0f : bf16_to_fp32(h);
}

constexpr int64_t kLanes16 = 16;
constexpr int64_t kStep = 4 * kLanes16;  // elements per step of the two accumulators

}  // namespace

void cells_from_f32_bf16(const float* x, void* y, int64_t n) {
  f32_to_bf16(x, n, static_cast<uint16_t*>(y));
}

void cells_to_f32_bf16(const void* x, float* y, int64_t n) {
  bf16_to_f32(static_cast<const uint16_t*>(x), n, y);
}

float dpbf16_step(float acc, uint16_t a, uint16_t b) {
  const float r = std::fma(bf16_daz(a), bf16_daz(b), acc);
  return std::fabs(r) < FLT_MIN ? 0.0f : r;
}

float hsum16(const float* lanes) {
  float h[8];
  for (int i = 0; i < 8; ++i) h[i] = lanes[i] + lanes[i + 8];
  float s[4];
  for (int i = 0; i < 4; ++i) s[i] = h[i] + h[i + 4];
  return (s[0] + s[2]) + (s[1] + s[3]);
}

float dot_bf16_cells(const uint16_t* a, const uint16_t* b, int64_t n) {
  const int64_t steps_end = n / kStep * kStep;
  float acc[2][kLanes16] = {};
  for (int64_t i = 0; i < steps_end; i += kStep) {
    for (int64_t half = 0; half < 2; ++half) {
      for (int64_t l = 0; l < kLanes16; ++l) {
        const int64_t e = i + 2 * kLanes16 * half + 2 * l;
        acc[half][l] = dpbf16_step(dpbf16_step(acc[half][l], a[e + 1], b[e + 1]), a[e], b[e]);
      }
    }
  }
  double sum = 0.0;
  sum += static_cast<double>(hsum16(acc[0]));
  sum += static_cast<double>(hsum16(acc[1]));
  return static_cast<float>(dot_bf16_tail(sum, a, b, steps_end, n));
}

double dot_bf16_tail(double sum, const uint16_t* a, const uint16_t* b, int64_t from, int64_t n) {
  for (int64_t e = from; e < n; ++e) {
    sum += static_cast<double>(bf16_to_fp32(a[e]) * bf16_to_fp32(b[e]));
  }
  return sum;
}

bool bf16_steps_exact(int ea, int eb) {
  return ea != 0 && eb != 0 && ea + eb >= (142 << 7);
}

void dot_rows_bf16_by(float (*dot)(const uint16_t*, const uint16_t*, int64_t), BF16Rows rows,
                      BF16Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  for (int64_t i = 0; i < x.n; ++i) {
    for (int64_t j = 0; j < rows.n; ++j)
      out[i * out_stride + j] = dot(rows.row(j), x.row(i), n) * scale;
  }
}

void dot_rows_bf16(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                   int64_t out_stride) {
  dot_rows_bf16_by(dot_bf16_cells, rows, x, n, scale, out, out_stride);
}

void weighted_sum_bf16(F32Rows w, BF16Rows rows, int64_t n, float* y, int64_t y_stride) {
  std::vector<float> values(static_cast<size_t>(n));  // [n] row j converted
  for (int64_t j = 0; j < rows.n; ++j) {
    bf16_to_f32(rows.row(j), n, values.data());
    for (int64_t i = 0; i < w.n; ++i) axpy_f32(w.row(i)[j], values.data(), n, y + i * y_stride);
  }
}

}  // namespace minfer::kernels::ref
