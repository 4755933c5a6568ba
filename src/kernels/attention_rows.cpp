#include "kernels/attention_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "kernels/ref/ref_kernels.h"

namespace minfer::kernels {
namespace {

// Query rows up to which a tile reads q8_0 values in place: weighted_sum_q8_0 converts a row once
// per pass over the y's, and a prompt tile's rows (16 tokens × the group) take many passes, where
// converting each block once into scratch is faster (minfer_bench_attention Prefill/q8_0/4096
// measures it). A decode step's query heads of one KV head take one pass.
constexpr int64_t kQ8ValuesInPlaceRows = 8;

constexpr auto kQ8_0Slot = static_cast<size_t>(GgmlType::kQ8_0);

// The part [a, b) of a piece that a run's cells [from, from + n) cover (empty: a >= b).
std::pair<int64_t, int64_t> overlap(const CellPiece& p, const RowRun& run) {
  return {std::max(p.first, run.from), std::min(p.first + p.n, run.from + run.n)};
}

// The 16 lanes summed in _mm512_reduce_add_ps's order (avx512::hsum_ps).
using ref::hsum16;

constexpr int64_t kLanes16 = 16;

}  // namespace

CellReads cell_reads(const KernelTable& table, GgmlType type, int64_t n_rows) {
  if (type == GgmlType::kF16 && table.dot_rows_f16 != nullptr &&
      table.weighted_sum_f16 != nullptr) {
    return {CellRead::kF16, CellRead::kF16};
  }
  if (type == GgmlType::kBF16) return {CellRead::kBF16, CellRead::kBF16};
  if (type == GgmlType::kQ8_0) {
    const bool in_place = table.weighted_sum_q8_0 != nullptr && n_rows <= kQ8ValuesInPlaceRows;
    return {CellRead::kQ8_0, in_place ? CellRead::kQ8_0 : CellRead::kF32};
  }
  return {CellRead::kF32, CellRead::kF32};
}

int64_t q8_0_query_row_bytes(int64_t dim) {
  return static_cast<int64_t>(q8_0_act_row_bytes(static_cast<size_t>(dim / 32)));
}

void quantize_queries(const KernelTable& table, const float* q, int64_t n, int64_t dim,
                      uint8_t* out) {
  const QuantizeRowFn quantize = table.quantize_act_q8_0_sums != nullptr
                                     ? table.quantize_act_q8_0_sums
                                     : ref_table.quantize_act_q8_0_sums;
  const int64_t row_bytes = q8_0_query_row_bytes(dim);
  for (int64_t i = 0; i < n; ++i) quantize(q + i * dim, out + i * row_bytes, dim);
}

CellRows block_rows(DequantizeRowFn to_f32, CellRead read, const uint8_t* cells,
                    const uint8_t* ahead, int64_t n_rows, int64_t dim, int64_t row_bytes,
                    float* scratch) {
  const auto f32_bytes = static_cast<int64_t>(sizeof(float)) * dim;
  if (read != CellRead::kF32) return {read, cells, ahead, dim, row_bytes};
  if (to_f32 == nullptr) return {read, cells, nullptr, dim, f32_bytes};
  to_f32(cells, scratch, n_rows * dim);
  return {read, reinterpret_cast<const uint8_t*>(scratch), nullptr, dim, f32_bytes};
}

void prefetch_cells(const uint8_t* cells, int64_t bytes) {
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(cells + off, 0, 2);
}

void dot_cells(const KernelTable& table, CellRows keys, int64_t n, QueryRows x, int64_t n_x,
               float scale, float* out, int64_t out_stride) {
  const F32Rows x_f32{x.f32, n_x, x.dim};
  switch (keys.read) {
    case CellRead::kBF16:
      table.dot_rows_bf16(keys.bf16_rows(n), {x.bf16, n_x, x.dim}, keys.dim, scale, out,
                          out_stride);
      return;
    case CellRead::kF16:
      table.dot_rows_f16(keys.f16_rows(n), x_f32, keys.dim, scale, out, out_stride);
      return;
    case CellRead::kQ8_0: {
      // The cells are a Q8_0 weight matrix's rows (34-byte blocks), the quantized queries its
      // activation rows: out[i][j] = vec_dot_q8_0_q8_0(cells_j, x_i), then · scale as llama.cpp
      // scales each score. The tile asks for its next rows itself; asking here for the next
      // chunk's keys all at once (keys.ahead) made decode at depth slower (Qwen3/Decode/q8_0/4096
      // of minfer_bench_attention: ~410 against ~365 us of CPU), so they are not.
      const MatmulTileFn tile = table.matmul_tile[kQ8_0Slot] != nullptr
                                    ? table.matmul_tile[kQ8_0Slot]
                                    : ref_table.matmul_tile[kQ8_0Slot];
      tile(keys.dim, keys.data, static_cast<size_t>(keys.row_bytes), n, x.q8_0,
           static_cast<size_t>(x.q8_0_row_bytes), n_x, out, out_stride);
      for (int64_t i = 0; i < n_x; ++i)
        table.scale(out + i * out_stride, scale, n, out + i * out_stride);
      return;
    }
    case CellRead::kF32:
      table.dot_rows_f32(keys.f32_rows(n), x_f32, keys.dim, scale, out, out_stride);
      return;
  }
}

void weighted_cells(const KernelTable& table, F32Rows w, CellRows values, int64_t n, float* y,
                    int64_t y_stride) {
  switch (values.read) {
    case CellRead::kF16:
      table.weighted_sum_f16(w, values.f16_rows(n), values.dim, y, y_stride);
      return;
    case CellRead::kQ8_0:
      table.weighted_sum_q8_0(w, values.q8_rows(n), values.dim, y, y_stride);
      return;
    case CellRead::kBF16:
      table.weighted_sum_bf16(w, values.bf16_rows(n), values.dim, y, y_stride);
      return;
    case CellRead::kF32:
      table.weighted_sum_f32(w, values.f32_rows(n), values.dim, y, y_stride);
      return;
  }
}

void softmax_step(const KernelTable& table, float* scores, int64_t n, int64_t head_dim_v,
                  RowState& row) {
  const float chunk_max = table.max_f32(scores, n, row.max_score);
  if (chunk_max > row.max_score) {
    if (row.sum > 0.0) {  // before the row's first cells there is nothing to rescale
      const float rescale = std::exp(row.max_score - chunk_max);
      row.sum *= rescale;
      table.scale(row.acc, rescale, head_dim_v, row.acc);
    }
    row.max_score = chunk_max;
  }
  row.sum += table.exp_sum(scores, row.max_score, n, scores);
}

void fold_state(const KernelTable& table, const RowState& piece, int64_t dv, RowState& into) {
  if (piece.sum == 0.0) return;
  if (into.sum == 0.0) {
    into.max_score = piece.max_score;
    into.sum = piece.sum;
    std::copy(piece.acc, piece.acc + dv, into.acc);
  } else if (piece.max_score <= into.max_score) {
    const float b = std::exp(piece.max_score - into.max_score);
    into.sum += piece.sum * b;
    table.axpy_f32(b, piece.acc, dv, into.acc);
  } else {
    const float a = std::exp(into.max_score - piece.max_score);
    into.max_score = piece.max_score;
    into.sum = into.sum * a + piece.sum;
    table.scale(into.acc, a, dv, into.acc);
    table.add(into.acc, piece.acc, dv, into.acc);
  }
}

void attend_rows(const KernelTable& table, const RowRun& run, float scale, int64_t n_heads,
                 const RowRunData& data) {
  const int64_t dv = data.pieces.front().values.dim;
  const int64_t stride = data.scores_stride;
  const int64_t r_begin = run.t_begin * n_heads;
  const int64_t n_rows = (run.t_end - run.t_begin) * n_heads;
  float* scores = data.scores + r_begin * stride;
  const QueryRows q = data.q.from(r_begin);
  for (const CellPiece& p : data.pieces) {
    const auto [a, b] = overlap(p, run);
    if (a < b) {
      dot_cells(table, p.keys.from(a - p.first), b - a, q, n_rows, scale, scores + (a - run.from),
                stride);
    }
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    float* row = scores + r * stride;
    std::fill(row + run.seen[r / n_heads], row + run.n, -std::numeric_limits<float>::infinity());
    softmax_step(table, row, run.n, dv, data.states[r_begin + r]);
  }
  for (const CellPiece& p : data.pieces) {
    const auto [a, b] = overlap(p, run);
    if (a < b) {
      weighted_cells(table, {scores + (a - run.from), n_rows, stride}, p.values.from(a - p.first),
                     b - a, data.acc + r_begin * dv, dv);
    }
  }
}

float expf_ggml(float x) {
  // Step for step as avx512::exp_ps_ggml: n = round(x / ln 2) by the 1.5 · 2^23 shift,
  // b = x - n ln 2 in two fused steps, a degree-5 polynomial (Horner on b and b²), times 2^n
  // (scalef: exact, or rounded once where the result is subnormal, as ldexp); |n| > 192 gives 0
  // (n <= 0) or +inf.
  const float shift = 0x1.8p23f;
  const float n = std::fma(x, 0x1.715476p+0f, shift) - shift;
  const float b = std::fma(-n, 0x1.7f7d1cp-20f, std::fma(-n, 0x1.62e4p-1f, x));
  const float u = b * b;
  const float j = std::fma(std::fma(std::fma(0x1.0e4020p-7f, b, 0x1.573e2ep-5f), u,
                                    std::fma(0x1.555e66p-3f, b, 0x1.fffdb6p-2f)),
                           u, std::fma(0x1.ffffecp-1f, b, 1.0f));
  if (!(std::fabs(n) <= 192.0f)) return n <= 0.0f ? 0.0f : std::numeric_limits<float>::infinity();
  return std::ldexp(j, static_cast<int>(n));
}

float dot_f32_ggml_vec_order(const float* a, const float* b, int64_t n) {
  const int64_t np = n & ~int64_t{63};
  float sum[4][kLanes16] = {};
  for (int64_t k = 0; k < np; k += 64) {
    for (int64_t j = 0; j < 4; ++j) {
      for (int64_t l = 0; l < kLanes16; ++l) {
        const int64_t e = k + kLanes16 * j + l;
        sum[j][l] = std::fma(a[e], b[e], sum[j][l]);
      }
    }
  }
  float folded[kLanes16];
  for (int64_t l = 0; l < kLanes16; ++l) {
    folded[l] = (sum[0][l] + sum[2][l]) + (sum[1][l] + sum[3][l]);
  }
  float r = hsum16(folded);
  for (int64_t k = np; k < n; ++k) r = std::fma(a[k], b[k], r);
  return r;
}

void attend_row_llama_order(const PagedF32Cells& cells, int64_t first, int64_t last, const float* q,
                            float scale, const float* sink, const LlamaRowScratch& scratch,
                            float* out) {
  const int64_t bs = cells.block_size;
  const int64_t hd = cells.head_dim;
  const int64_t dv = cells.head_dim_v;
  float* e = scratch.scores;
  // Scores, and the row max with the sink.
  float max = sink != nullptr ? *sink : -std::numeric_limits<float>::infinity();
  for (int64_t j = first; j <= last; ++j) {
    const float* k = cells.keys(cells.ctx, cells.blocks[j / bs]) + j % bs * hd;
    e[j] = dot_f32_ggml_vec_order(k, q, hd) * scale;
    max = e[j] > max ? e[j] : max;
  }
  // e_j, summed a 16-cell vector at a time (vectors on the grid of cell 0; the cells outside
  // [first, last] are masked, e = 0).
  double sum = 0.0;
  for (int64_t g = first / kLanes16 * kLanes16; g <= last; g += kLanes16) {
    float lanes[kLanes16];
    for (int64_t l = 0; l < kLanes16; ++l) {
      const int64_t j = g + l;
      lanes[l] = j >= first && j <= last ? (e[j] = expf_ggml(e[j] - max)) : 0.0f;
    }
    sum += static_cast<double>(hsum16(lanes));
  }
  if (sink != nullptr) sum += static_cast<double>(std::exp(*sink - max));
  const auto inv = static_cast<float>(1.0 / sum);
  // The weighted values: lane j % 16 of each output, in order of the cells.
  float* lanes = scratch.lanes;  // [16][dv]
  std::fill(lanes, lanes + kLanes16 * dv, 0.0f);
  for (int64_t j = first; j <= last; ++j) {
    const float w = e[j] * inv;
    const float* v = cells.values(cells.ctx, cells.blocks[j / bs]) + j % bs * dv;
    float* acc = lanes + j % kLanes16 * dv;
    for (int64_t d = 0; d < dv; ++d) acc[d] = std::fma(w, v[d], acc[d]);
  }
  for (int64_t d = 0; d < dv; ++d) {
    float l16[kLanes16];
    for (int64_t l = 0; l < kLanes16; ++l) l16[l] = lanes[l * dv + d];
    out[d] = hsum16(l16);
  }
}

}  // namespace minfer::kernels
