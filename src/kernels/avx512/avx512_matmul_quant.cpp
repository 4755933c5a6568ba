// AVX-512 VNNI matmul tiles for every quantized weight type: the kinds of
// kernels/quant_tile_impl.h on the 16-lane policy (avx512_quant_vec.h), and for one token the
// row-run GEMVs of avx512_gemv_quant.h. Bit-identical to the reference tiles (see
// quant_tile_impl.h for why).

// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Separate multiplies and adds, as the reference: GCC contracts them to fma by default for C++
// when FMA is enabled.
#pragma GCC optimize("fp-contract=off")

#include <type_traits>

#include "kernels/avx512/avx512_gemv_quant.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/avx512_quant_vec.h"
#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::avx512 {

namespace qt = quant_tile;

// Every quantized type: one token reads the rows in their stored order
// (avx512_gemv_quant.h); more share the tile's transposed blocks.
template <class Kind, auto kGemv>
void gemv_or_tile(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, const void* act,
                  size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  if (n_tok == 1) {
    const auto* w_bytes = static_cast<const uint8_t*>(w);
    if constexpr (std::is_same_v<typename Kind::Act, qt::ActQ8_0>) {
      const qt::ActQ8_0 a = qt::ActQ8_0::of(static_cast<const uint8_t*>(act), n_in / kQK8_0);
      kGemv(n_in, w_bytes, w_row_bytes, n_rows, a.blocks, a.sums, y);
    } else if constexpr (std::is_same_v<typename Kind::Act, qt::ActQ8_1>) {
      kGemv(n_in, w_bytes, w_row_bytes, n_rows, static_cast<const BlockQ8_1*>(act), y);
    } else {
      kGemv(n_in, w_bytes, w_row_bytes, n_rows, static_cast<const BlockQ8K*>(act), y);
    }
    return;
  }
  qt::tile<Vec512, Kind>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

#define MINFER_AVX512_GEMV_OR_TILE(name, kind, gemv)                                              \
  void matmul_tile_##name(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,        \
                          const void* act, size_t act_row_bytes, int64_t n_tok, float* y,         \
                          int64_t y_stride) {                                                     \
    gemv_or_tile<qt::kind<Vec512>, gemv>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, \
                                         y, y_stride);                                            \
  }

MINFER_AVX512_GEMV_OR_TILE(q8_0, KindQ8_0, gemv_q32<BlockQ8_0>)
MINFER_AVX512_GEMV_OR_TILE(q4_0, KindQ4_0, gemv_q32<BlockQ4_0>)
MINFER_AVX512_GEMV_OR_TILE(q5_0, KindQ5_0, gemv_q32<BlockQ5_0>)
MINFER_AVX512_GEMV_OR_TILE(q4_1, KindQ4_1, gemv_min32<BlockQ4_1>)
MINFER_AVX512_GEMV_OR_TILE(q5_1, KindQ5_1, gemv_min32<BlockQ5_1>)
MINFER_AVX512_GEMV_OR_TILE(q4_K, KindQ4K, gemv_k4<BlockQ4K>)
MINFER_AVX512_GEMV_OR_TILE(q5_K, KindQ5K, gemv_k4<BlockQ5K>)
MINFER_AVX512_GEMV_OR_TILE(q2_K, KindQ2K, gemv_k16<BlockQ2K>)
MINFER_AVX512_GEMV_OR_TILE(q3_K, KindQ3K, gemv_k16<BlockQ3K>)
MINFER_AVX512_GEMV_OR_TILE(q6_K, KindQ6K, gemv_k16<BlockQ6K>)

#undef MINFER_AVX512_GEMV_OR_TILE

}  // namespace minfer::kernels::avx512
