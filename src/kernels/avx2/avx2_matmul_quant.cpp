// AVX2 matmul tiles for every quantized weight type: the kinds of kernels/quant_tile_impl.h on
// the 8-lane policy (avx2_quant_vec.h), and for one token the row-run GEMVs of
// avx2_gemv_quant.h. Bit-identical to the reference tiles (see quant_tile_impl.h for why).

// First: the reference's separate multiplies and adds for all that follows.
#include "kernels/fp_contract_off.h"

#include "kernels/avx2/avx2_gemv_quant.h"
#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_quant_vec.h"
#include "kernels/gemv_or_tile_impl.h"
#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::avx2 {

namespace qt = quant_tile;

// Every type: one token reads the rows in their stored order (avx2_gemv_quant.h); more share
// the tile's transposed blocks. Gemv<G> passes the activation row to gemv_rows<G>.
template <class G>
struct Gemv {
  void operator()(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
                  const qt::ActQ8_0& a, float* y) const {
    gemv_rows<G>(n_in, w, w_row_bytes, n_rows, ActQ32{a.blocks, a.sums}, y);
  }
  template <class Act>
  void operator()(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows, const Act& a,
                  float* y) const {
    gemv_rows<G>(n_in, w, w_row_bytes, n_rows, a.blocks, y);
  }
};

MINFER_GEMV_OR_TILE(q8_0, Vec256, KindQ8_0, Gemv<GemvLanes<BlockQ8_0>>)
MINFER_GEMV_OR_TILE(q4_0, Vec256, KindQ4_0, Gemv<GemvQ32<BlockQ4_0>>)
MINFER_GEMV_OR_TILE(q5_0, Vec256, KindQ5_0, Gemv<GemvQ32<BlockQ5_0>>)
MINFER_GEMV_OR_TILE(q4_1, Vec256, KindQ4_1, Gemv<GemvLanes<BlockQ4_1>>)
MINFER_GEMV_OR_TILE(q5_1, Vec256, KindQ5_1, Gemv<GemvLanes<BlockQ5_1>>)
MINFER_GEMV_OR_TILE(q4_K, Vec256, KindQ4K, Gemv<GemvK4<BlockQ4K>>)
MINFER_GEMV_OR_TILE(q5_K, Vec256, KindQ5K, Gemv<GemvK4<BlockQ5K>>)
MINFER_GEMV_OR_TILE(q2_K, Vec256, KindQ2K, Gemv<GemvK16<BlockQ2K>>)
MINFER_GEMV_OR_TILE(q3_K, Vec256, KindQ3K, Gemv<GemvK16<BlockQ3K>>)
MINFER_GEMV_OR_TILE(q6_K, Vec256, KindQ6K, Gemv<GemvK16<BlockQ6K>>)

// MXFP4: the tile for every token count.
void matmul_tile_mxfp4(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                       const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                       int64_t y_stride) {
  qt::tile<Vec256, qt::KindMxfp4<Vec256>>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok,
                                          y, y_stride);
}

}  // namespace minfer::kernels::avx2
