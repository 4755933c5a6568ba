// Attention's arithmetic over rows of KV cells, apart from the planning that deals it out
// (graph/attention.cpp: token runs, tiles, pieces, threads). A query row's online softmax
// (Milakov & Gimelshein 2018) keeps a running max, a running sum and an accumulator, rescaled
// when the max grows; the cells of one cache block are read in place by the table's row loops
// where it has them for the cell type, else converted into scratch by its cells_to_f32.
// Everything here takes plain pointers, strides and spans: no cache, no allocation.
#pragma once

#include <cstdint>
#include <span>

#include "kernels/kernel_table.h"
#include "quant/ggml_type.h"

namespace minfer::kernels {

// How the kernels read a block's keys or values: as f32 rows (f32 cells, or cells converted into
// scratch), or f16 / q8_0 / bf16 cells in place. In place, f16 keys and values take the table's
// f16 loops (KernelTable::dot_rows_f16, weighted_sum_f16), bf16 ones its bf16 loops (the keys
// scored against the query rows in bf16, dot_rows_bf16), q8_0 values weighted_sum_q8_0, and q8_0
// keys the table's Q8_0 matmul tile against the query rows quantized to q8_0 (QueryRows).
enum class CellRead { kF32, kF16, kQ8_0, kBF16 };

struct CellReads {
  CellRead keys, values;
};

// How `table` reads cells of `type` for a tile of n_rows query rows. q8_0 keys: always in place,
// scored with int8 dot products as llama.cpp's CPU flash attention scores them (Q quantized to
// q8_0, K's vec_dot_type, then ggml_vec_dot_q8_0_q8_0 per cell). Values, and f16 keys: in place
// where the table has the loops (q8_0 values only in a decode step's tile, see
// kQ8ValuesInPlaceRows), else converted; the bits are the same either way.
CellReads cell_reads(const KernelTable& table, GgmlType type, int64_t n_rows);

// A tile's query rows as the keys' dot products read them, row i of each form at i times its
// stride: f32 rows ([n, dim]) for f32 and f16 keys; for bf16 keys the rows rounded to bf16 once
// ([n, dim], f32_to_bf16, as llama.cpp converts Q to K's vec_dot_type); for q8_0 keys the rows
// quantized once to Q8_0 activation rows (quantize_queries; `q8_0_row_bytes` apart), what the Q8_0
// matmul tile reads.
struct QueryRows {
  const float* f32;
  const uint8_t* q8_0;
  const uint16_t* bf16;
  int64_t dim;
  int64_t q8_0_row_bytes;
  // The rows from row `row` on.
  QueryRows from(int64_t row) const {
    return {f32 != nullptr ? f32 + row * dim : nullptr,
            q8_0 != nullptr ? q8_0 + row * q8_0_row_bytes : nullptr,
            bf16 != nullptr ? bf16 + row * dim : nullptr, dim, q8_0_row_bytes};
  }
};

// Bytes of one query row of `dim` floats quantized for q8_0 keys (q8_0_act_row_bytes).
int64_t q8_0_query_row_bytes(int64_t dim);

// Quantizes n query rows ([n, dim], dim a multiple of 32) for q8_0 keys into `out` (n rows of
// q8_0_query_row_bytes(dim)): the table's quantize_act_q8_0_sums (ref_table's where it has
// none), which is llama.cpp's x86 quantize_row_q8_0, the converter its flash attention applies to
// each Q row before the q8_0 dots.
void quantize_queries(const KernelTable& table, const float* q, int64_t n, int64_t dim,
                      uint8_t* out);

// One block's keys or values as the kernels read them, with the rows the walk reads next (ahead,
// or null; in place only) asked for while these are read by the loops that take them (f16 keys
// and values, q8_0 values).
struct CellRows {
  CellRead read;
  const uint8_t* data;
  const uint8_t* ahead;
  int64_t dim;        // floats per row
  int64_t row_bytes;  // bytes per row as read
  // The rows from row `row` on.
  CellRows from(int64_t row) const {
    const int64_t off = row * row_bytes;
    return {read, data + off, ahead != nullptr ? ahead + off : nullptr, dim, row_bytes};
  }
  F32Rows f32_rows(int64_t n) const { return {reinterpret_cast<const float*>(data), n, dim}; }
  F16Rows f16_rows(int64_t n) const {
    return {reinterpret_cast<const uint16_t*>(data), n, dim,
            reinterpret_cast<const uint16_t*>(ahead)};
  }
  Q8Rows q8_rows(int64_t n) const { return {data, n, row_bytes, ahead}; }
  BF16Rows bf16_rows(int64_t n) const { return f16_rows(n); }
};

// n_rows rows of one cache block: f32 cells and cells read in place (`read`), with `ahead` the
// cells read next; others converted into `scratch` ([n_rows, dim]) by to_f32 (the table's
// cells_to_f32 for the cell type).
CellRows block_rows(DequantizeRowFn to_f32, CellRead read, const uint8_t* cells,
                    const uint8_t* ahead, int64_t n_rows, int64_t dim, int64_t row_bytes,
                    float* scratch);

// Asks for `bytes` of cells (one KV head's keys or values of a block) into L2, a line at a time.
// A sequence's blocks lie apart in the pool, and one layer's cells of a block are a few KB
// between other layers' cells: the hardware prefetchers start again at every block, and a
// long window's walk waited on memory at each one. Asked for one block ahead, they arrive
// while the block before is computed. Changes no arithmetic.
void prefetch_cells(const uint8_t* cells, int64_t bytes);

// out[i · out_stride + j] = x_i · keys_j · scale for n keys and the n_x query rows of x: the
// table's dot_rows for f32, f16 and bf16 keys (bf16: against x's bf16 rows); for q8_0 keys the Q8_0
// matmul tile's dot of the cells and the quantized rows (ref::vec_dot_q8_0_q8_0, the same bits on
// every table), then times scale.
void dot_cells(const KernelTable& table, CellRows keys, int64_t n, QueryRows x, int64_t n_x,
               float scale, float* out, int64_t out_stride);

// y_i += Σ_j w_i[j] · values_j for n values (its weighted_sum for how they are read).
void weighted_cells(const KernelTable& table, F32Rows w, CellRows values, int64_t n, float* y,
                    int64_t y_stride);

// One query row's online softmax: the running max, the running sum and the output accumulator.
// Empty (no cells yet): max -inf, sum 0, acc 0.
struct RowState {
  float max_score;
  double sum;
  float* acc;  // [dv]
};

// A row's scores of a chunk ([n]) become its weights e^(score - max); the running max is raised
// first if the chunk holds a higher score, rescaling what the row has summed so far.
void softmax_step(const KernelTable& table, float* scores, int64_t n, int64_t head_dim_v,
                  RowState& row);

// Folds a piece's state of a row into `into` (the state of the row's pieces before it): the one
// of the two with the lower max rescaled to the higher (the other's factor is exactly 1, so it is
// left as it is). A piece with no cells for the row changes nothing; into the empty state the
// piece is copied.
void fold_state(const KernelTable& table, const RowState& piece, int64_t dv, RowState& into);

// One block's part of a chunk: cells [first, first + n) (positions) as the kernels read them.
struct CellPiece {
  int64_t first, n;
  CellRows keys, values;
};

// The rows of tokens [t_begin, t_end) of a tile (n_heads rows each) that see the same first
// cell of a chunk, `from`, and n cells on. Token t sees seen[t - t_begin] of them (at least 1):
// its scores past those are set to -inf, so their weights are exactly 0 and the row's arithmetic
// is that of its own cells alone, whatever tokens share the call.
struct RowRun {
  int64_t from, n;
  int64_t t_begin, t_end;
  const int64_t* seen;
};

// What attend_rows reads and updates: a chunk's pieces, the tile's query rows (a token's heads
// consecutive), its score rows ([rows, scores_stride]) and its rows' states.
struct RowRunData {
  std::span<const CellPiece> pieces;
  QueryRows q;
  float* scores;
  int64_t scores_stride;
  RowState* states;
  float* acc;  // [rows, dv] the states' accumulators
};

// Adds a run's cells to its rows: every row's scores (a call per piece), each row's softmax
// step, then every row's weighted values (a call per piece, in order of the cells, so each
// row's sum is the one a single call would make).
void attend_rows(const KernelTable& table, const RowRun& run, float scale, int64_t n_heads,
                 const RowRunData& data);

// ---- llama.cpp's non-flash CPU order (f32 cells) ----
//
// One query row's attention as llama.cpp's CPU backend computes it without flash attention over
// f32 cells (its x86 AVX-512 build, which made the goldens): the scores are kq = mul_mat(k, q),
// one ggml_vec_dot_f32 per cell (q is a permuted view, so tinyBLAS does not take it), times the
// scale; soft_max then takes the row max (and the sink), e_j by ggml_v_expf, their sum as the
// 16-cell vectors' float sums (lanes added in _mm512_reduce_add_ps's order) added in double, the
// sink's e^x as libm's expf, and every e_j times (float) 1/sum before the values; kqv =
// mul_mat(v, kq) goes through tinyBLAS, one 16-lane accumulator per output, cell j in lane j % 16
// (the cell index is the position for a single sequence), fused multiply-adds in order of the
// cells, the lanes summed in the same order. Plain code with fused multiply-adds (std::fma), so
// every kernel table gives the same bits. (llama.cpp's one-token steps sum kqv in
// ggml_vec_dot_f32's order instead; a row here is computed one way whatever the batch.)

// The f32 cells of one KV head of one layer, a cache block at a time: block b of the row's
// position table holds positions [b · block_size, (b + 1) · block_size).
struct PagedF32Cells {
  const int32_t* blocks;  // block id of each block_size positions
  int64_t block_size;
  // Keys / values of `block` for the head: [block_size, dim] floats.
  const float* (*keys)(const void* ctx, int32_t block);
  const float* (*values)(const void* ctx, int32_t block);
  const void* ctx;
  int64_t head_dim, head_dim_v;
};

// Scratch of attend_row_llama_order: scores [last + 1], lanes [16 · head_dim_v].
struct LlamaRowScratch {
  float* scores;
  float* lanes;
};

// out ([head_dim_v]) = Σ_j p_j v_j over positions j in [first, last], p the softmax of
// q · k_j · scale with the sink (`sink`: a pointer to the head's, or null) as llama.cpp computes
// it (above).
void attend_row_llama_order(const PagedF32Cells& cells, int64_t first, int64_t last, const float* q,
                            float scale, const float* sink, const LlamaRowScratch& scratch,
                            float* out);

// ggml_v_expf (AVX-512) for one float: llama.cpp's soft_max exponential, lane for lane.
float expf_ggml(float x);

// ggml_vec_dot_f32's sum on an AVX-512 build: four 16-lane accumulators over steps of 64
// elements, folded (0 + 2) + (1 + 3), the lanes summed in _mm512_reduce_add_ps's order, then
// the leftover elements one by one with a fused multiply-add.
float dot_f32_ggml_vec_order(const float* a, const float* b, int64_t n);

}  // namespace minfer::kernels
