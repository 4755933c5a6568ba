// AVX2 matmul tiles for F32, F16 and BF16 weights against activations of the same type (llama.cpp's
// vec_dot_type). A micro-tile of R weight rows × T tokens keeps R·T accumulators of 8 lanes; each
// loaded weight vector is used for T tokens. Every (row, token) accumulator sees the same fma
// sequence whatever the tile shape, then the same horizontal sum, so results do not depend on how
// work is split.
#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_math.h"

namespace minfer::kernels::avx2 {
namespace {

constexpr int kRows = 4;  // R: 4·2 accumulators + 4 weights + 2 activations of 16 ymm
constexpr int kToks = 2;  // T

__m256i lane_mask(int64_t n) {
  const __m256i index = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n)), index);
}

// Loads 8 weights as floats; load_partial reads only the first n (< 8) and zero-fills.
struct F32Weights {
  using Elem = float;
  static __m256 load(const float* p) { return _mm256_loadu_ps(p); }
  static __m256 load_partial(const float* p, int64_t n) {
    return _mm256_maskload_ps(p, lane_mask(n));
  }
};

struct F16Weights {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static __m256 load_partial(const uint16_t* p, int64_t n) {
    alignas(16) uint16_t buf[8] = {};
    for (int64_t i = 0; i < n; ++i) buf[i] = p[i];
    return load(buf);
  }
};

struct BF16Weights {
  using Elem = uint16_t;
  static __m256 load(const uint16_t* p) {
    const __m256i v = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(v, 16));
  }
  static __m256 load_partial(const uint16_t* p, int64_t n) {
    alignas(16) uint16_t buf[8] = {};
    for (int64_t i = 0; i < n; ++i) buf[i] = p[i];
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
  __m256 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm256_setzero_ps();
  }
  int64_t k = 0;
  for (; k + 8 <= n_in; k += 8) {
    __m256 x[T];
    for (int t = 0; t < T; ++t) x[t] = W::load(toks[t] + k);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = W::load(rows[r] + k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, x[t], acc[r][t]);
    }
  }
  if (k < n_in) {
    const int64_t left = n_in - k;
    __m256 x[T];
    for (int t = 0; t < T; ++t) x[t] = W::load_partial(toks[t] + k, left);
    for (int r = 0; r < R; ++r) {
      const __m256 wv = W::load_partial(rows[r] + k, left);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm256_fmadd_ps(wv, x[t], acc[r][t]);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = hsum_ps(acc[r][t]);
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
  tile<F16Weights>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

void matmul_tile_bf16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride) {
  tile<BF16Weights>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

}  // namespace minfer::kernels::avx2
