// The float matmul tiles of every SIMD table (F32, F16 and BF16 weights against activations of
// the same type, llama.cpp's vec_dot_type), written once over a vector policy V whose logical
// vector V::F is 16 float lanes: one __m512 on AVX-512 (avx512/avx512_matmul_float.cpp), two
// __m256 on AVX2 (avx2/avx2_matmul_float.cpp), four float32x4_t on NEON
// (arm64/neon_matmul_float.cpp). Lane j of a logical vector is element k + j of a step, so every
// lane-wise fused multiply-add is the same on every ISA, and V::hsum adds the 16 lanes in the
// order of avx512::hsum_ps (lanes j and j + 8, then j and j + 4, then j and j + 2, then 0 and 1).
// The results are therefore the AVX-512 table's bit for bit on every ISA: the order of
// llama.cpp's AVX-512 build, which made the goldens.
//
// Include only from a SIMD translation unit, after it defines MINFER_SIMD_KERNEL_NAMESPACE and
// its policy `FloatVec` in minfer::kernels::MINFER_SIMD_KERNEL_NAMESPACE: the header defines that
// namespace's matmul_tile_f32 / f16 / bf16 on it. The generic code sits in an anonymous
// namespace so that each ISA's TU keeps its own copies (see quant_tile_impl.h).
//
// V provides:
//   F, zero(), fma(a, b, acc) (acc + a·b, fused), add(a, b), hsum(v);
//   load_f32 / load_f16 / load_bf16(p): 16 elements as floats;
//   kMaskEveryStep: true to load every step through mask(n_in - k) (AVX-512's masked loads, with
//   Mask, mask(n) (the first min(n, 16) lanes) and load_*(mask, p), lanes outside the mask 0),
//   false to load whole steps and the tail from zero-filled copies;
//   kRows × kToks: the micro-tile (weight rows × tokens) that fits the ISA's registers;
//   Prefetch(w, bytes) with advance(read_end): asks for single-token weights ahead, or nothing.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <utility>

namespace minfer::kernels::float_tile {
namespace {

// The weight types, each a load through V and whether a single-token pass asks for its weights
// ahead through V::Prefetch. On AVX-512, f16 / bf16 gain from it (0.70 -> 0.85 of the stream at
// 896 -> 151936); f32, with no conversion per load, streams at the full rate without, and asking
// cost it 0.13 of the stream.
struct F32W {
  using Elem = float;
  static constexpr bool kPrefetch = false;
  template <class V, class... M>
  static typename V::F load(const float* p, M... m) {
    return V::load_f32(m..., p);
  }
};
struct F16W {
  using Elem = uint16_t;
  static constexpr bool kPrefetch = true;
  template <class V, class... M>
  static typename V::F load(const uint16_t* p, M... m) {
    return V::load_f16(m..., p);
  }
};
struct BF16W {
  using Elem = uint16_t;
  static constexpr bool kPrefetch = true;
  template <class V, class... M>
  static typename V::F load(const uint16_t* p, M... m) {
    return V::load_bf16(m..., p);
  }
};

// One step of 16 elements at k for every (row, token) accumulator of a micro-tile.
template <class V, class W, int R, int T, class... M>
inline void step(const typename W::Elem* const* rows, const typename W::Elem* const* toks,
                 int64_t k, typename V::F (&acc)[R][T], M... m) {
  typename V::F x[T];
  for (int t = 0; t < T; ++t) x[t] = W::template load<V>(toks[t] + k, m...);
  for (int r = 0; r < R; ++r) {
    const typename V::F wv = W::template load<V>(rows[r] + k, m...);
    for (int t = 0; t < T; ++t) acc[r][t] = V::fma(wv, x[t], acc[r][t]);
  }
}

// R weight rows × T tokens: each loaded weight vector serves T tokens and each activation vector
// R rows. Every (row, token) accumulator sees the same fma sequence (the tail through zero-filled
// lanes) and the same horizontal sum whatever the tile shape, so results do not depend on how
// work is split.
template <class V, class W, int R, int T>
void micro(int64_t n_in, const uint8_t* w, size_t w_row_bytes, const uint8_t* act,
           size_t act_row_bytes, float* y, int64_t y_stride) {
  using Elem = typename W::Elem;
  const Elem* rows[R];  // [R][n_in]
  const Elem* toks[T];  // [T][n_in]
  for (int r = 0; r < R; ++r) rows[r] = reinterpret_cast<const Elem*>(w + r * w_row_bytes);
  for (int t = 0; t < T; ++t) toks[t] = reinterpret_cast<const Elem*>(act + t * act_row_bytes);
  typename V::F acc[R][T];
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) acc[r][t] = V::zero();
  }
  if constexpr (V::kMaskEveryStep) {
    for (int64_t k = 0; k < n_in; k += 16) step<V, W>(rows, toks, k, acc, V::mask(n_in - k));
  } else {
    int64_t k = 0;
    for (; k + 16 <= n_in; k += 16) step<V, W>(rows, toks, k, acc);
    if (k < n_in) {  // the tail, copied to zero-filled buffers of 16 and loaded whole
      const size_t tail_bytes = static_cast<size_t>(n_in - k) * sizeof(Elem);
      Elem buf[R + T][16] = {};
      const Elem* tails[R + T];
      for (int i = 0; i < R + T; ++i) {
        std::memcpy(buf[i], (i < R ? rows[i] : toks[i - R]) + k, tail_bytes);
        tails[i] = buf[i];
      }
      step<V, W>(tails, tails + R, 0, acc);
    }
  }
  for (int r = 0; r < R; ++r) {
    for (int t = 0; t < T; ++t) y[t * y_stride + r] = V::hsum(acc[r][t]);
  }
}

using MicroFn = void (*)(int64_t, const uint8_t*, size_t, const uint8_t*, size_t, float*, int64_t);

// kMicro<V, W>[R - 1][T - 1] is micro<V, W, R, T>.
template <class V, class W, int R, int... Ts>
constexpr auto micro_row(std::integer_sequence<int, Ts...>) {
  return std::array<MicroFn, sizeof...(Ts)>{micro<V, W, R, Ts + 1>...};
}
template <class V, class W, int... Rs>
constexpr auto micro_grid(std::integer_sequence<int, Rs...>) {
  return std::array<std::array<MicroFn, V::kToks>, sizeof...(Rs)>{
      micro_row<V, W, Rs + 1>(std::make_integer_sequence<int, V::kToks>{})...};
}
template <class V, class W>
constexpr auto kMicro = micro_grid<V, W>(std::make_integer_sequence<int, V::kRows>{});

template <class V, class W>
void tile(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, const void* act,
          size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  constexpr int kRows = V::kRows;
  constexpr int kToks = V::kToks;
  const auto* w_bytes = static_cast<const uint8_t*>(w);
  const auto* a_bytes = static_cast<const uint8_t*>(act);
  typename V::Prefetch prefetch(w_bytes, static_cast<size_t>(n_rows) * w_row_bytes);
  for (int64_t r = 0; r < n_rows; r += kRows) {
    const int64_t nr = n_rows - r < kRows ? n_rows - r : kRows;
    if (W::kPrefetch && n_tok == 1) prefetch.advance(w_bytes + (r + nr) * w_row_bytes);
    for (int64_t t = 0; t < n_tok; t += kToks) {
      const int64_t nt = n_tok - t < kToks ? n_tok - t : kToks;
      kMicro<V, W>[nr - 1][nt - 1](n_in, w_bytes + r * w_row_bytes, w_row_bytes,
                                   a_bytes + t * act_row_bytes, act_row_bytes, y + t * y_stride + r,
                                   y_stride);
    }
  }
}

// Σ a[k] b[k] in the order of llama.cpp's ggml_vec_dot_f32 (AVX-512 build), which its CPU backend
// uses for an f32 matmul whose row length is not a multiple of 16 (tinyBLAS takes the others,
// in micro()'s order): four 16-lane accumulators over steps of 64, folded (0 + 2) + (1 + 3),
// summed across lanes, then the leftover elements added one by one with a fused multiply-add.
// stories260K's ffn_down rows (172 long) go through it.
template <class V>
float dot_f32_ggml_order(const float* a, const float* b, int64_t n) {
  const int64_t np = n & ~int64_t{63};
  typename V::F sum[4] = {V::zero(), V::zero(), V::zero(), V::zero()};
  for (int64_t k = 0; k < np; k += 64) {
    for (int j = 0; j < 4; ++j) {
      sum[j] = V::fma(V::load_f32(a + k + 16 * j), V::load_f32(b + k + 16 * j), sum[j]);
    }
  }
  float r = V::hsum(V::add(V::add(sum[0], sum[2]), V::add(sum[1], sum[3])));
  for (int64_t k = np; k < n; ++k) r = std::fma(a[k], b[k], r);
  return r;
}

template <class V>
void tile_f32_unaligned(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
                        const uint8_t* act, size_t act_row_bytes, int64_t n_tok, float* y,
                        int64_t y_stride) {
  for (int64_t t = 0; t < n_tok; ++t) {
    const auto* x = reinterpret_cast<const float*>(act + t * act_row_bytes);  // [n_in]
    for (int64_t r = 0; r < n_rows; ++r) {
      y[t * y_stride + r] =
          dot_f32_ggml_order<V>(reinterpret_cast<const float*>(w + r * w_row_bytes), x, n_in);
    }
  }
}

}  // namespace
}  // namespace minfer::kernels::float_tile

namespace minfer::kernels::MINFER_SIMD_KERNEL_NAMESPACE {

void matmul_tile_f32(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  if (n_in % 16 != 0) {
    float_tile::tile_f32_unaligned<FloatVec>(n_in, static_cast<const uint8_t*>(w), w_row_bytes,
                                             n_rows, static_cast<const uint8_t*>(act),
                                             act_row_bytes, n_tok, y, y_stride);
    return;
  }
  float_tile::tile<FloatVec, float_tile::F32W>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes,
                                               n_tok, y, y_stride);
}

void matmul_tile_f16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  float_tile::tile<FloatVec, float_tile::F16W>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes,
                                               n_tok, y, y_stride);
}

void matmul_tile_bf16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride) {
  float_tile::tile<FloatVec, float_tile::BF16W>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes,
                                                n_tok, y, y_stride);
}

}  // namespace minfer::kernels::MINFER_SIMD_KERNEL_NAMESPACE
