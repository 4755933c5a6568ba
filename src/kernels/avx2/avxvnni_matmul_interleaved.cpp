// The AVX2 x16-layout tiles (avx2_matmul_interleaved.cpp) with AVX-VNNI's one-instruction dot
// (Vec256Vnni, avx2_quant_vec.h): avxvnni_table's matmul_tile_x16. Compiled with -mavxvnni and
// called only on CPUs that have it. Bit-identical to the reference, as the AVX2 tiles.

// First: the reference's separate multiplies and adds for all that follows.
#include "kernels/fp_contract_off.h"

#include "kernels/avx2/avx2_interleaved.h"
#include "kernels/avx2/avx2_quant_vec.h"
#include "kernels/quant_tile_impl.h"
#include "kernels/x16_tile_impl.h"
// After the tile headers: the policy uses them.
#include "kernels/avx2/avx2_x16_policy.h"

namespace minfer::kernels::avxvnni {

template <class Block>
void matmul_tile_x16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  x16_tile::matmul<avx2::X16<avx2::Vec256Vnni>, Block>(n_in, w, w_row_bytes, n_rows, act,
                                                       act_row_bytes, n_tok, y, y_stride);
}

MINFER_INSTANTIATE_X16_TILES

}  // namespace minfer::kernels::avxvnni
