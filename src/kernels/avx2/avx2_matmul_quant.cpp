// AVX2 matmul tiles for every quantized weight type: the kinds of kernels/quant_tile_impl.h on
// the 8-lane policy (avx2_quant_vec.h). Bit-identical to the reference tiles (see
// quant_tile_impl.h for why).

// Separate multiplies and adds, as the reference: GCC contracts them to fma by default for C++
// when FMA is enabled.
#pragma GCC optimize("fp-contract=off")

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_quant_vec.h"
#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::avx2 {

namespace qt = quant_tile;

#define MINFER_AVX2_QUANT_TILE(name, kind)                                                         \
  void matmul_tile_##name(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,         \
                          const void* act, size_t act_row_bytes, int64_t n_tok, float* y,          \
                          int64_t y_stride) {                                                      \
    qt::tile<Vec256, qt::kind<Vec256>>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, \
                                       y_stride);                                                  \
  }

MINFER_AVX2_QUANT_TILE(q4_0, KindQ4_0)
MINFER_AVX2_QUANT_TILE(q4_1, KindQ4_1)
MINFER_AVX2_QUANT_TILE(q5_0, KindQ5_0)
MINFER_AVX2_QUANT_TILE(q5_1, KindQ5_1)
MINFER_AVX2_QUANT_TILE(q8_0, KindQ8_0)
MINFER_AVX2_QUANT_TILE(q2_K, KindQ2K)
MINFER_AVX2_QUANT_TILE(q3_K, KindQ3K)
MINFER_AVX2_QUANT_TILE(q4_K, KindQ4K)
MINFER_AVX2_QUANT_TILE(q5_K, KindQ5K)
MINFER_AVX2_QUANT_TILE(q6_K, KindQ6K)

#undef MINFER_AVX2_QUANT_TILE

}  // namespace minfer::kernels::avx2
