// AVX2 matmul tiles for Q8_0 / Q4_0 / Q5_0 / Q4_K / Q5_K / Q6_K weights in the x16
// row-interleaved layout (kernels/interleave.h), the structure of the AVX-512 ones
// (avx512/avx512_matmul_interleaved.cpp) on 8 lanes (the policy: avx2_x16_policy.h): every
// (row, token) result is the reference's, bit for bit.

// First: the reference's separate multiplies and adds for all that follows.
#include "kernels/fp_contract_off.h"

#include "kernels/avx2/avx2_interleaved.h"

#include "kernels/avx2/avx2_quant_vec.h"
#include "kernels/quant_tile_impl.h"
#include "kernels/x16_tile_impl.h"
// After the tile headers: the policy uses them.
#include "kernels/avx2/avx2_x16_policy.h"

namespace minfer::kernels::avx2 {

template <class Block>
void matmul_tile_x16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  x16_tile::matmul<X16<Vec256>, Block>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y,
                                       y_stride);
}

MINFER_INSTANTIATE_X16_TILES

}  // namespace minfer::kernels::avx2
