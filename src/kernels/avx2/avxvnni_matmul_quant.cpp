// avxvnni_table's quantized matmul tiles on the GGUF layout: the tiles of
// kernels/quant_tile_impl.h on Vec256Vnni (avx2_quant_vec.h: vpdpbusd for maddubs + madd) for
// several tokens; one token takes avx2_table's row-run GEMV (avx2_gemv_quant.h). Compiled with
// -mavxvnni and called only on CPUs that have it. Bit-identical to the reference tiles.

// First: the reference's separate multiplies and adds for all that follows.
#include "kernels/fp_contract_off.h"

#include "kernels/avx2/avxvnni_kernels.h"

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_quant_vec.h"
#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::avxvnni {

namespace qt = quant_tile;
using V = avx2::Vec256Vnni;

#define MINFER_VNNI_TILE(name, kind)                                                       \
  void matmul_tile_##name(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, \
                          const void* act, size_t act_row_bytes, int64_t n_tok, float* y,  \
                          int64_t y_stride) {                                              \
    if (n_tok == 1) {                                                                      \
      avx2::matmul_tile_##name(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, \
                               y_stride);                                                  \
      return;                                                                              \
    }                                                                                      \
    qt::tile<V, qt::kind<V>>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y,   \
                             y_stride);                                                    \
  }
MINFER_VNNI_TILE(q8_0, KindQ8_0)
MINFER_VNNI_TILE(q4_0, KindQ4_0)
MINFER_VNNI_TILE(q5_0, KindQ5_0)
MINFER_VNNI_TILE(q4_1, KindQ4_1)
MINFER_VNNI_TILE(q5_1, KindQ5_1)
MINFER_VNNI_TILE(q4_K, KindQ4K)
MINFER_VNNI_TILE(q5_K, KindQ5K)
MINFER_VNNI_TILE(q2_K, KindQ2K)
MINFER_VNNI_TILE(q3_K, KindQ3K)
MINFER_VNNI_TILE(q6_K, KindQ6K)
MINFER_VNNI_TILE(mxfp4, KindMxfp4)
#undef MINFER_VNNI_TILE

}  // namespace minfer::kernels::avxvnni
