#include "kernels/attention_rows.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

namespace minfer::kernels {
namespace {

// Query rows up to which a tile reads q8_0 cells in place: the loops convert a row once per pass
// over the x's, and a prompt tile's rows (16 tokens × the group) take many passes, where
// converting each block once into scratch is faster (minfer_bench_attention Prefill/q8_0/4096
// measures it). A decode step's query heads of one KV head take one pass.
constexpr int64_t kQ8InPlaceRows = 8;

// The part [a, b) of a piece that a run's cells [from, from + n) cover (empty: a >= b).
std::pair<int64_t, int64_t> overlap(const CellPiece& p, const RowRun& run) {
  return {std::max(p.first, run.from), std::min(p.first + p.n, run.from + run.n)};
}

}  // namespace

CellRead cell_read(const KernelTable& table, GgmlType type, int64_t n_rows) {
  if (type == GgmlType::kF16 && table.dot_rows_f16 != nullptr &&
      table.weighted_sum_f16 != nullptr) {
    return CellRead::kF16;
  }
  if (type == GgmlType::kQ8_0 && table.dot_rows_q8_0 != nullptr &&
      table.weighted_sum_q8_0 != nullptr && n_rows <= kQ8InPlaceRows) {
    return CellRead::kQ8_0;
  }
  return CellRead::kF32;
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

void dot_cells(const KernelTable& table, CellRows keys, int64_t n, F32Rows x, float scale,
               float* out, int64_t out_stride) {
  switch (keys.read) {
    case CellRead::kF16:
      table.dot_rows_f16(keys.f16_rows(n), x, keys.dim, scale, out, out_stride);
      return;
    case CellRead::kQ8_0:
      table.dot_rows_q8_0(keys.q8_rows(n), x, keys.dim, scale, out, out_stride);
      return;
    case CellRead::kF32:
      table.dot_rows_f32(keys.f32_rows(n), x, keys.dim, scale, out, out_stride);
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
  const int64_t hd = data.pieces.front().keys.dim;
  const int64_t dv = data.pieces.front().values.dim;
  const int64_t stride = data.scores_stride;
  const int64_t r_begin = run.t_begin * n_heads;
  const int64_t n_rows = (run.t_end - run.t_begin) * n_heads;
  float* scores = data.scores + r_begin * stride;
  const F32Rows q{data.q + r_begin * hd, n_rows, hd};
  for (const CellPiece& p : data.pieces) {
    const auto [a, b] = overlap(p, run);
    if (a < b) {
      dot_cells(table, p.keys.from(a - p.first), b - a, q, scale, scores + (a - run.from), stride);
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

}  // namespace minfer::kernels
