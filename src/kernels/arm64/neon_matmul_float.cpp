// ARMv8.0 NEON matmul tiles for F32, F16 and BF16 weights against activations of the same type
// (llama.cpp's vec_dot_type). A micro-tile of R weight rows × T tokens keeps R·T accumulators of
// 4 lanes; each loaded weight vector is used for T tokens. Every (row, token) accumulator sees
// the same fma sequence whatever the tile shape, then the same horizontal sum, so results do
// not depend on how work is split (the AVX2 tiles' structure, avx2/avx2_matmul_float.cpp).
#include <arm_neon.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/arm64/neon_kernels.h"
#include "kernels/arm64/neon_math.h"

namespace minfer::kernels::neon {
namespace {

constexpr int kRows = 4;  // R
constexpr int kToks = 2;  // T

// Loads 4 elements as floats; load_partial reads only the first n (< 4) and zero-fills.
struct F32Weights {
  using Elem = float;
  static float32x4_t load(const float* p) { return vld1q_f32(p); }
  static float32x4_t load_partial(const float* p, int64_t n) { return arm64::load_partial(p, n); }
};

// The 16-bit types: exact widening of 4 elements (fcvt for F16, a shift for BF16).
template <bool kBf16>
struct Half16Weights {
  using Elem = uint16_t;
  static float32x4_t load(const uint16_t* p) {
    const uint16x4_t v = vld1_u16(p);
    if constexpr (kBf16) {
      return vreinterpretq_f32_u32(vshll_n_u16(v, 16));
    } else {
      return vcvt_f32_f16(vreinterpret_f16_u16(v));
    }
  }
  static float32x4_t load_partial(const uint16_t* p, int64_t n) {
    uint16_t buf[4] = {};
    std::memcpy(buf, p, static_cast<size_t>(n) * sizeof(uint16_t));
    return load(buf);
  }
};

template <typename W, int R, int T>
void micro(int64_t n_in, const uint8_t* w, size_t w_row_bytes, const uint8_t* act,
           size_t act_row_bytes, float* y, int64_t y_stride) {
  using Elem = typename W::Elem;
  const Elem* rows[R];  // [R][n_in]
  const Elem* toks[T];  // [T][n_in]
  for (int r = 0; r < R; ++r) rows[r] = reinterpret_cast<const Elem*>(w + r * w_row_bytes);
  for (int t = 0; t < T; ++t) toks[t] = reinterpret_cast<const Elem*>(act + t * act_row_bytes);
  float32x4_t acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = vdupq_n_f32(0.0f);
  }
  for (int64_t k = 0; k < n_in; k += 4) {
    const int64_t left = n_in - k;
    float32x4_t x[T];
    for (int t = 0; t < T; ++t) {
      x[t] = left >= 4 ? W::load(toks[t] + k) : W::load_partial(toks[t] + k, left);
    }
    for (int r = 0; r < R; ++r) {
      const float32x4_t wv = left >= 4 ? W::load(rows[r] + k) : W::load_partial(rows[r] + k, left);
      for (int t = 0; t < T; ++t) acc[r][t] = vfmaq_f32(acc[r][t], wv, x[t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = vaddvq_f32(acc[r][t]);
  }
}

using MicroFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, int64_t);

template <typename W>
void tile(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, const void* act,
          size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  static constexpr MicroFn kMicro[kRows][kToks] = {
      {micro<W, 1, 1>, micro<W, 1, 2>},
      {micro<W, 2, 1>, micro<W, 2, 2>},
      {micro<W, 3, 1>, micro<W, 3, 2>},
      {micro<W, 4, 1>, micro<W, 4, 2>},
  };
  const auto* w_bytes = static_cast<const uint8_t*>(w);
  const auto* a_bytes = static_cast<const uint8_t*>(act);
  for (int64_t r = 0; r < n_rows; r += kRows) {
    const int64_t nr = n_rows - r < kRows ? n_rows - r : kRows;
    for (int64_t t = 0; t < n_tok; t += kToks) {
      const int64_t nt = n_tok - t < kToks ? n_tok - t : kToks;
      kMicro[nr - 1][nt - 1](n_in, w_bytes + r * w_row_bytes, w_row_bytes,
                             a_bytes + t * act_row_bytes, act_row_bytes, y + t * y_stride + r,
                             y_stride);
    }
  }
}

}  // namespace

void matmul_tile_f32(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  tile<F32Weights>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

void matmul_tile_f16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  tile<Half16Weights<false>>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

void matmul_tile_bf16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride) {
  tile<Half16Weights<true>>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

}  // namespace minfer::kernels::neon
