// The quantized matmul tiles of avxvnni_table (declarations only: safe to include anywhere, but
// call them only on a CPU that runs AVX2, FMA, F16C and AVX-VNNI). Semantics:
// KernelTable::matmul_tile. The rest of avxvnni_table is avx2_table's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace minfer::kernels::avxvnni {

#define MINFER_DECLARE_VNNI_TILE(name)                                                     \
  void matmul_tile_##name(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, \
                          const void* act, size_t act_row_bytes, int64_t n_tok, float* y,  \
                          int64_t y_stride);
MINFER_DECLARE_VNNI_TILE(q4_0)
MINFER_DECLARE_VNNI_TILE(q4_1)
MINFER_DECLARE_VNNI_TILE(q5_0)
MINFER_DECLARE_VNNI_TILE(q5_1)
MINFER_DECLARE_VNNI_TILE(q8_0)
MINFER_DECLARE_VNNI_TILE(q2_K)
MINFER_DECLARE_VNNI_TILE(q3_K)
MINFER_DECLARE_VNNI_TILE(q4_K)
MINFER_DECLARE_VNNI_TILE(q5_K)
MINFER_DECLARE_VNNI_TILE(q6_K)
#undef MINFER_DECLARE_VNNI_TILE

}  // namespace minfer::kernels::avxvnni
