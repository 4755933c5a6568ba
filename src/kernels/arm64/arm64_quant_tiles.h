// The quantized matmul tiles of an ARM64 table, for one vector policy (neon_quant_vec.h):
// quant_tile::tile for every token count, the single token (GEMV) included. Not a header of
// its own: neon_matmul_quant.cpp and dotprod_matmul_quant.cpp include it inside their ISA's
// namespace after quant_tile_impl.h, with MINFER_ARM64_VEC naming their policy.

#define MINFER_ARM64_TILE(name, kind)                                                           \
  void matmul_tile_##name(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,      \
                          const void* act, size_t act_row_bytes, int64_t n_tok, float* y,       \
                          int64_t y_stride) {                                                   \
    ::minfer::kernels::quant_tile::tile<MINFER_ARM64_VEC,                                       \
                                        ::minfer::kernels::quant_tile::kind<MINFER_ARM64_VEC>>( \
        n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);                  \
  }

MINFER_ARM64_TILE(q8_0, KindQ8_0)
MINFER_ARM64_TILE(q4_0, KindQ4_0)
MINFER_ARM64_TILE(q5_0, KindQ5_0)
MINFER_ARM64_TILE(q4_1, KindQ4_1)
MINFER_ARM64_TILE(q5_1, KindQ5_1)
MINFER_ARM64_TILE(q4_K, KindQ4K)
MINFER_ARM64_TILE(q5_K, KindQ5K)
MINFER_ARM64_TILE(q2_K, KindQ2K)
MINFER_ARM64_TILE(q3_K, KindQ3K)
MINFER_ARM64_TILE(q6_K, KindQ6K)
MINFER_ARM64_TILE(mxfp4, KindMxfp4)

#undef MINFER_ARM64_TILE
