// AVX-512 matmul tiles for F32, F16 and BF16 weights against activations of the
// same type (llama.cpp's vec_dot_type): micro-tiles of
// R = 4 weight rows × T = 4 tokens, 16 accumulators of 16 lanes; each loaded weight vector
// serves T tokens and each activation vector R rows. Every (row, token) accumulator sees the
// same fma sequence (the tail through masked, zero-filled loads) and the same horizontal sum
// whatever the tile shape, so results do not depend on how work is split.
// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/avx512_math.h"

namespace minfer::kernels::avx512 {
namespace {

constexpr int kRows = 4;
constexpr int kToks = 4;

// Loads 16 weights as floats, lanes outside the mask as 0.
struct F32Weights {
  using Elem = float;
  static __m512 load(__mmask16 m, const float* p) { return _mm512_maskz_loadu_ps(m, p); }
};

struct F16Weights {
  using Elem = uint16_t;
  static __m512 load(__mmask16 m, const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_maskz_loadu_epi16(m, p));
  }
};

struct BF16Weights {
  using Elem = uint16_t;
  static __m512 load(__mmask16 m, const uint16_t* p) {
    const __m512i v = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(m, p));
    return _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
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
  __m512 acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = _mm512_setzero_ps();
  }
  for (int64_t k = 0; k < n_in; k += 16) {
    const __mmask16 m = lane_mask(n_in - k);
    __m512 x[T];
    for (int t = 0; t < T; ++t) x[t] = W::load(m, toks[t] + k);
    for (int r = 0; r < R; ++r) {
      const __m512 wv = W::load(m, rows[r] + k);
      for (int t = 0; t < T; ++t) acc[r][t] = _mm512_fmadd_ps(wv, x[t], acc[r][t]);
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
      {micro<W, 1, 1>, micro<W, 1, 2>, micro<W, 1, 3>, micro<W, 1, 4>},
      {micro<W, 2, 1>, micro<W, 2, 2>, micro<W, 2, 3>, micro<W, 2, 4>},
      {micro<W, 3, 1>, micro<W, 3, 2>, micro<W, 3, 3>, micro<W, 3, 4>},
      {micro<W, 4, 1>, micro<W, 4, 2>, micro<W, 4, 3>, micro<W, 4, 4>},
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

}  // namespace minfer::kernels::avx512
