// AVX-512 matmul tiles for F32, F16 and BF16 weights against activations of the
// same type (llama.cpp's vec_dot_type): micro-tiles of
// R = 4 weight rows × T = 4 tokens, 16 accumulators of 16 lanes; each loaded weight vector
// serves T tokens and each activation vector R rows. Every (row, token) accumulator sees the
// same fma sequence (the tail through masked, zero-filled loads) and the same horizontal sum
// whatever the tile shape, so results do not depend on how work is split.
// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

#include <immintrin.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/avx512/avx512_gemv_prefetch.h"
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

// Σ a[k] b[k] in the order of llama.cpp's ggml_vec_dot_f32 (AVX-512 build), which its CPU backend
// uses for an f32 matmul whose row length is not a multiple of 16 (tinyBLAS takes the others,
// in micro()'s order): four 16-lane accumulators over steps of 64, folded (0 + 2) + (1 + 3),
// summed across lanes, then the leftover elements added one by one with a fused multiply-add.
// stories260K's ffn_down rows (172 long) go through it.
float dot_f32_ggml_order(const float* a, const float* b, int64_t n) {
  const int64_t np = n & ~int64_t{63};
  __m512 sum[4] = {_mm512_setzero_ps(), _mm512_setzero_ps(), _mm512_setzero_ps(),
                   _mm512_setzero_ps()};
  for (int64_t k = 0; k < np; k += 64) {
    for (int j = 0; j < 4; ++j) {
      sum[j] =
          _mm512_fmadd_ps(_mm512_loadu_ps(a + k + 16 * j), _mm512_loadu_ps(b + k + 16 * j), sum[j]);
    }
  }
  const __m512 folded = _mm512_add_ps(_mm512_add_ps(sum[0], sum[2]), _mm512_add_ps(sum[1], sum[3]));
  float r = hsum_ps(folded);
  for (int64_t k = np; k < n; ++k) r = std::fma(a[k], b[k], r);
  return r;
}

void tile_f32_unaligned(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
                        const uint8_t* act, size_t act_row_bytes, int64_t n_tok, float* y,
                        int64_t y_stride) {
  for (int64_t t = 0; t < n_tok; ++t) {
    const auto* x = reinterpret_cast<const float*>(act + t * act_row_bytes);  // [n_in]
    for (int64_t r = 0; r < n_rows; ++r) {
      y[t * y_stride + r] =
          dot_f32_ggml_order(reinterpret_cast<const float*>(w + r * w_row_bytes), x, n_in);
    }
  }
}

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
  // One token reads each weight once: f16 / bf16 ask for the weights ahead (0.70 -> 0.85 of the
  // stream at 896 -> 151936). f32, with no conversion per load, streams at the full rate
  // without, and asking cost it 0.13 of the stream.
  constexpr bool kPrefetch = !std::is_same_v<W, F32Weights>;
  GemvPrefetch prefetch(w_bytes, static_cast<size_t>(n_rows) * w_row_bytes);
  for (int64_t r = 0; r < n_rows; r += kRows) {
    const int64_t nr = n_rows - r < kRows ? n_rows - r : kRows;
    if (kPrefetch && n_tok == 1) prefetch.advance(w_bytes + (r + nr) * w_row_bytes);
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
  if (n_in % 16 != 0) {
    tile_f32_unaligned(n_in, static_cast<const uint8_t*>(w), w_row_bytes, n_rows,
                       static_cast<const uint8_t*>(act), act_row_bytes, n_tok, y, y_stride);
    return;
  }
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
