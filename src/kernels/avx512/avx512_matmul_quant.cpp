// AVX-512 VNNI matmul tiles for every quantized weight type: the kinds of
// kernels/quant_tile_impl.h on the 16-lane policy (avx512_quant_vec.h), and for one token the
// row-run GEMVs of avx512_gemv_quant.h. Bit-identical to the reference tiles (see
// quant_tile_impl.h for why).

// First: the reference's separate multiplies and adds for all that follows.
#include "kernels/fp_contract_off.h"

#include <type_traits>

#include "kernels/avx512/avx512_gemv_quant.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/avx512_quant_vec.h"
#include "kernels/gemv_or_tile_impl.h"
#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::avx512 {

namespace qt = quant_tile;

// Every quantized type: one token reads the rows in their stored order (avx512_gemv_quant.h);
// more share the tile's transposed blocks. Gemv<kGemv> passes the activation row to kGemv.
template <auto kGemv>
struct Gemv {
  void operator()(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
                  const qt::ActQ8_0& a, float* y) const {
    kGemv(n_in, w, w_row_bytes, n_rows, a.blocks, a.sums, y);
  }
  template <class Act>
  void operator()(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows, const Act& a,
                  float* y) const {
    if constexpr (std::is_same_v<Act, qt::ActQ8_1>) {
      kGemv(n_in, w, w_row_bytes, n_rows, a.blocks, nullptr, y);
    } else {
      kGemv(n_in, w, w_row_bytes, n_rows, a.blocks, y);
    }
  }
};

MINFER_GEMV_OR_TILE(q8_0, Vec512, KindQ8_0, Gemv<gemv_q32<BlockQ8_0, BlockQ8_0>>)
MINFER_GEMV_OR_TILE(q4_0, Vec512, KindQ4_0, Gemv<gemv_q32<BlockQ4_0, BlockQ8_0>>)
MINFER_GEMV_OR_TILE(q5_0, Vec512, KindQ5_0, Gemv<gemv_q32<BlockQ5_0, BlockQ8_0>>)
MINFER_GEMV_OR_TILE(q4_1, Vec512, KindQ4_1, Gemv<gemv_q32<BlockQ4_1, BlockQ8_1>>)
MINFER_GEMV_OR_TILE(q5_1, Vec512, KindQ5_1, Gemv<gemv_q32<BlockQ5_1, BlockQ8_1>>)
MINFER_GEMV_OR_TILE(q4_K, Vec512, KindQ4K, Gemv<gemv_k4<BlockQ4K>>)
MINFER_GEMV_OR_TILE(q5_K, Vec512, KindQ5K, Gemv<gemv_k4<BlockQ5K>>)
MINFER_GEMV_OR_TILE(q2_K, Vec512, KindQ2K, Gemv<gemv_k16<BlockQ2K>>)
MINFER_GEMV_OR_TILE(q3_K, Vec512, KindQ3K, Gemv<gemv_k16<BlockQ3K>>)
MINFER_GEMV_OR_TILE(q6_K, Vec512, KindQ6K, Gemv<gemv_k16<BlockQ6K>>)

// MXFP4: the tile for every token count.
void matmul_tile_mxfp4(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                       const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                       int64_t y_stride) {
  qt::tile<Vec512, qt::KindMxfp4<Vec512>>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok,
                                          y, y_stride);
}

}  // namespace minfer::kernels::avx512
