// The quantized MatmulTileFn of a SIMD table: one token goes to the ISA's single-token kernel
// (avx2/avx2_gemv_quant.h, avx512/avx512_gemv_quant.h), more to the tile
// (quant_tile_impl.h). Include after quant_tile_impl.h, from SIMD translation units only.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::quant_tile {
namespace {

// `gemv` is called as gemv(n_in, w, w_row_bytes, n_rows, a, y), `a` the activation row decoded
// as kind K's (ActQ8_0, ActQ8_1 or ActQ8K).
template <class V, class K, class Gemv>
void gemv_or_tile(const Gemv& gemv, int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                  const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                  int64_t y_stride) {
  if (n_tok == 1) {
    const typename K::Act a = K::Act::of(static_cast<const uint8_t*>(act), n_in / K::kBlock);
    gemv(n_in, static_cast<const uint8_t*>(w), w_row_bytes, n_rows, a, y);
    return;
  }
  tile<V, K>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

}  // namespace
}  // namespace minfer::kernels::quant_tile

// Defines matmul_tile_<name> (simd_kernels_decl.h) for kind quant_tile::<kind> on policy V,
// with the single-token functor type given last (it may hold commas).
#define MINFER_GEMV_OR_TILE(name, V, kind, ...)                                               \
  void matmul_tile_##name(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,    \
                          const void* act, size_t act_row_bytes, int64_t n_tok, float* y,     \
                          int64_t y_stride) {                                                 \
    ::minfer::kernels::quant_tile::gemv_or_tile<V, ::minfer::kernels::quant_tile::kind<V>>(   \
        __VA_ARGS__{}, n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride); \
  }
