// AVX2 matmul tiles for every quantized weight type: the kinds of kernels/quant_tile_impl.h on
// the 8-lane policy (avx2_quant_vec.h), and for one token the row-run GEMVs of
// avx2_gemv_quant.h. Bit-identical to the reference tiles (see quant_tile_impl.h for why).

// Separate multiplies and adds, as the reference: GCC contracts them to fma by default for C++
// when FMA is enabled.
#pragma GCC optimize("fp-contract=off")

#include <type_traits>

#include "kernels/avx2/avx2_gemv_quant.h"
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_quant_vec.h"
#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::avx2 {

namespace qt = quant_tile;

// Every type: one token reads the rows in their stored order
// (avx2_gemv_quant.h); more share the tile's transposed blocks.
template <class Kind, class Gemv>
void gemv_or_tile(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, const void* act,
                  size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  if (n_tok == 1) {
    const auto* w_bytes = static_cast<const uint8_t*>(w);
    if constexpr (std::is_same_v<typename Kind::Act, qt::ActQ8_0>) {
      const qt::ActQ8_0 a = qt::ActQ8_0::of(static_cast<const uint8_t*>(act), n_in / kQK8_0);
      gemv_rows<Gemv>(n_in, w_bytes, w_row_bytes, n_rows, ActQ32{a.blocks, a.sums}, y);
    } else {
      gemv_rows<Gemv>(n_in, w_bytes, w_row_bytes, n_rows, static_cast<typename Gemv::Act>(act), y);
    }
    return;
  }
  qt::tile<Vec256, Kind>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

#define MINFER_AVX2_GEMV_OR_TILE(name, kind, gemv)                                                \
  void matmul_tile_##name(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,        \
                          const void* act, size_t act_row_bytes, int64_t n_tok, float* y,         \
                          int64_t y_stride) {                                                     \
    gemv_or_tile<qt::kind<Vec256>, gemv>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, \
                                         y, y_stride);                                            \
  }

MINFER_AVX2_GEMV_OR_TILE(q8_0, KindQ8_0, GemvQ32<BlockQ8_0>)
MINFER_AVX2_GEMV_OR_TILE(q4_0, KindQ4_0, GemvQ32<BlockQ4_0>)
MINFER_AVX2_GEMV_OR_TILE(q5_0, KindQ5_0, GemvQ32<BlockQ5_0>)
MINFER_AVX2_GEMV_OR_TILE(q4_K, KindQ4K, GemvK4<BlockQ4K>)
MINFER_AVX2_GEMV_OR_TILE(q5_K, KindQ5K, GemvK4<BlockQ5K>)
MINFER_AVX2_GEMV_OR_TILE(q4_1, KindQ4_1, GemvMin32<BlockQ4_1>)
MINFER_AVX2_GEMV_OR_TILE(q5_1, KindQ5_1, GemvMin32<BlockQ5_1>)
MINFER_AVX2_GEMV_OR_TILE(q2_K, KindQ2K, GemvK16<BlockQ2K>)
MINFER_AVX2_GEMV_OR_TILE(q3_K, KindQ3K, GemvK16<BlockQ3K>)
MINFER_AVX2_GEMV_OR_TILE(q6_K, KindQ6K, GemvK16<BlockQ6K>)

#undef MINFER_AVX2_GEMV_OR_TILE

}  // namespace minfer::kernels::avx2
