// The quantized matmul tiles of a SIMD table, declared once (kernels/quant_tile_impl.h; VNNI on
// AVX-512 and avxvnni); bit-identical to the reference tiles. Not a header of its own:
// simd_kernels_decl.h and avx2/avxvnni_kernels.h define MINFER_QUANT_TILE_NAMESPACE and include
// it. Semantics: KernelTable::matmul_tile.

#include <cstddef>
#include <cstdint>

namespace minfer::kernels::MINFER_QUANT_TILE_NAMESPACE {

void matmul_tile_q4_0(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);
void matmul_tile_q4_1(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);
void matmul_tile_q5_0(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);
void matmul_tile_q5_1(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);
void matmul_tile_q8_0(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);
void matmul_tile_mxfp4(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                       const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                       int64_t y_stride);
void matmul_tile_q2_K(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);
void matmul_tile_q3_K(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);
void matmul_tile_q4_K(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);
void matmul_tile_q5_K(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);
void matmul_tile_q6_K(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride);

}  // namespace minfer::kernels::MINFER_QUANT_TILE_NAMESPACE
