#include "graph/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "core/check.h"
#include "quant/fp16.h"

namespace minfer {

namespace {

// One block's keys or values as the kernels read them: f32 rows, or f16 cells read in place
// where the table has the f16 loops (KernelTable::dot_rows_f16), with the f16 rows the walk reads
// next (f16_ahead, or null) asked for while these are read.
struct CellRows {
  const float* f32;
  const uint16_t* f16;
  const uint16_t* f16_ahead;
  int64_t dim;  // floats per row
  // The rows from row `row` on.
  CellRows from(int64_t row) const {
    if (f32 != nullptr) return {f32 + row * dim, nullptr, nullptr, dim};
    return {nullptr, f16 + row * dim, f16_ahead != nullptr ? f16_ahead + row * dim : nullptr, dim};
  }
  kernels::F16Rows f16_rows(int64_t n) const { return {f16, n, dim, f16_ahead}; }
};

// n_rows rows of one cache block: f32 cells and (with a table that reads them) f16 cells in
// place, with `ahead` the cells read next; others converted into `scratch` by to_f32 (the
// table's cells_to_f32 for the cell type).
CellRows block_rows(kernels::DequantizeRowFn to_f32, bool f16_in_place, const uint8_t* cells,
                    const uint8_t* ahead, int64_t n_rows, int64_t dim, float* scratch) {
  if (f16_in_place) {
    return {nullptr, reinterpret_cast<const uint16_t*>(cells),
            reinterpret_cast<const uint16_t*>(ahead), dim};
  }
  if (to_f32 == nullptr) return {reinterpret_cast<const float*>(cells), nullptr, nullptr, dim};
  to_f32(cells, scratch, n_rows * dim);
  return {scratch, nullptr, nullptr, dim};
}

// Asks for a block's `bytes` of cells (one KV head's keys or values) into L2, a line at a time.
// A sequence's blocks lie apart in the pool, and one layer's cells of a block are a few KB
// between other layers' cells: the hardware prefetchers start again at every block, and a
// long window's walk waited on memory at each one. Asked for one block ahead, they arrive
// while the block before is computed. Changes no arithmetic.
void prefetch_cells(const uint8_t* cells, int64_t bytes) {
  for (int64_t off = 0; off < bytes; off += 64) __builtin_prefetch(cells + off, 0, 2);
}

// ---------------------------------------------------------------------------------------------
// llama.cpp's CPU flash attention on an AVX-512 machine, operation for operation.
// ---------------------------------------------------------------------------------------------
constexpr int64_t kLanes = 16;  // floats per AVX-512 vector: the unit of every sum below

// Σ of 16 lanes in _mm512_reduce_add_ps's order: halves added pairwise (8, 4, 2, 1).
float lane_sum(const float* x) {
  float a[8];
  for (int i = 0; i < 8; ++i) a[i] = x[i + 8] + x[i];
  float b[4];
  for (int i = 0; i < 4; ++i) b[i] = a[i + 4] + a[i];
  return (b[0] + b[2]) + (b[1] + b[3]);
}

// ggml_vec_dot_f16 on AVX-512 (f16 · f16): steps of 64 in 4 accumulators of 16 f32 lanes,
// reduced (0+2)+(1+3) then across lanes into a double; the tail adds each exact f32 product in
// double. One rounding to float at the end.
float dot_f16_ggml(const uint16_t* x, const uint16_t* y, int64_t n) {
  const int64_t np = n & ~int64_t{63};
  double sum = 0.0;
  if (np > 0) {
    float acc[4][kLanes] = {};
    for (int64_t i = 0; i < np; i += 64) {
      for (int j = 0; j < 4; ++j) {
        for (int l = 0; l < kLanes; ++l) {
          const int64_t k = i + j * kLanes + l;
          acc[j][l] = std::fma(fp16_to_fp32(x[k]), fp16_to_fp32(y[k]), acc[j][l]);
        }
      }
    }
    float s[kLanes];
    for (int l = 0; l < kLanes; ++l) s[l] = (acc[0][l] + acc[2][l]) + (acc[1][l] + acc[3][l]);
    sum = static_cast<double>(lane_sum(s));
  }
  for (int64_t k = np; k < n; ++k) {
    sum += static_cast<double>(fp16_to_fp32(x[k]) * fp16_to_fp32(y[k]));
  }
  return static_cast<float>(sum);
}

// llama.cpp's CPU flash attention for f16 cells, one query row
// (ggml_compute_forward_flash_attn_ext_f16_one_chunk): q rounded to f16; cells first..n_cells-1
// walked in order, masked cells skipped; online softmax with expf, the f16 accumulator rescaled by
// ggml_vec_scale_f16 and updated by ggml_vec_mad_f16 (one fused multiply-add in f32, rounded
// to f16); S = S·ms + vs fused in float; at the end VKQ (as f32) times 1/S.
void flash_attn_f16_row(const KvCache& cache, const std::vector<int32_t>& blocks, int64_t il,
                        int64_t kv_head, const float* q, int64_t first, int64_t n_cells,
                        float scale, float* out, uint16_t* q16, uint16_t* vkq16) {
  const KvCacheConfig& c = cache.config();
  const int64_t head_dim = c.head_dim;
  const int64_t head_dim_v = c.head_dim_v;
  for (int64_t d = 0; d < head_dim; ++d) q16[d] = fp32_to_fp16(q[d]);
  std::fill(vkq16, vkq16 + head_dim_v, uint16_t{0});
  float S = 0.0f;
  float M = -std::numeric_limits<float>::infinity();
  for (int64_t j = first; j < n_cells; ++j) {
    const int32_t block = blocks[static_cast<size_t>(j / c.block_size)];
    const auto* key = reinterpret_cast<const uint16_t*>(cache.k_block(block, il, kv_head)) +
                      (j % c.block_size) * head_dim;
    const auto* value = reinterpret_cast<const uint16_t*>(cache.v_block(block, il, kv_head)) +
                        (j % c.block_size) * head_dim_v;
    const float s = dot_f16_ggml(key, q16, head_dim) * scale;
    float ms = 1.0f;
    float vs = 1.0f;
    if (s > M) {
      const float m_old = M;
      M = s;
      ms = std::exp(m_old - M);
      for (int64_t d = 0; d < head_dim_v; ++d) vkq16[d] = fp32_to_fp16(fp16_to_fp32(vkq16[d]) * ms);
    } else {
      vs = std::exp(s - M);
    }
    for (int64_t d = 0; d < head_dim_v; ++d) {
      vkq16[d] = fp32_to_fp16(std::fma(fp16_to_fp32(value[d]), vs, fp16_to_fp32(vkq16[d])));
    }
    S = std::fma(S, ms, vs);
  }
  const float s_inv = S == 0.0f ? 0.0f : 1.0f / S;
  for (int64_t d = 0; d < head_dim_v; ++d) out[d] = fp16_to_fp32(vkq16[d]) * s_inv;
}

// The query rows one task computes: tokens [t_begin, t_end) of one sequence at consecutive
// positions, query heads [h_begin, h_end) of one KV head. Each cache block of the tile's window
// is read (and converted, for f16 / q8_0 cells) once for all of them, instead of once per row.
struct QueryTile {
  int64_t t_begin, t_end;
  int64_t h_begin, h_end;
};

constexpr int64_t kTileTokens = 16;

// Runs of up to kTileTokens tokens of one sequence at consecutive positions, times the KV heads;
// a KV head's query heads are split too when that is what gives every thread a task (one
// token's decode step of a model with few KV heads).
std::vector<QueryTile> plan_query_tiles(const Batch& batch, int64_t n_head, int64_t group,
                                        int n_threads) {
  std::vector<std::pair<int64_t, int64_t>> runs;
  for (int64_t t = 0; t < batch.n_tokens(); ++t) {
    const auto i = static_cast<size_t>(t);
    const bool extends = !runs.empty() && t - runs.back().first < kTileTokens &&
                         batch.seq_ids[i] == batch.seq_ids[i - 1] &&
                         batch.positions[i] == batch.positions[i - 1] + 1;
    if (extends) {
      runs.back().second = t + 1;
    } else {
      runs.emplace_back(t, t + 1);
    }
  }
  const int64_t n_kv = n_head / group;
  int64_t n_split = 1;
  while (n_split < group && static_cast<int64_t>(runs.size()) * n_kv * n_split < n_threads) {
    ++n_split;
  }
  const int64_t heads_per_tile = (group + n_split - 1) / n_split;
  std::vector<QueryTile> tiles;
  for (const auto& [t_begin, t_end] : runs) {
    for (int64_t kv = 0; kv < n_kv; ++kv) {
      const int64_t group_end = (kv + 1) * group;
      for (int64_t h = kv * group; h < group_end; h += heads_per_tile) {
        tiles.push_back({t_begin, t_end, h, std::min(h + heads_per_tile, group_end)});
      }
    }
  }
  return tiles;
}

// One query row's online softmax: the running max, the running sum and the output accumulator.
struct RowState {
  float max_score;
  double sum;
  float* acc;  // [dv]
};

// A row's scores of a chunk ([n]) become its weights e^(score - max); the running max is raised
// first if the chunk holds a higher score, rescaling what the row has summed so far.
void softmax_step(const kernels::KernelTable& table, float* scores, int64_t n, int64_t head_dim_v,
                  RowState& row) {
  const float chunk_max = table.max_f32(scores, n, row.max_score);
  if (chunk_max > row.max_score) {
    const float rescale = std::exp(row.max_score - chunk_max);  // 0 on the first chunk
    row.sum *= rescale;
    table.scale(row.acc, rescale, head_dim_v, row.acc);
    row.max_score = chunk_max;
  }
  row.sum += table.exp_sum(scores, row.max_score, n, scores);
}

// Cells of the cache per softmax step: several blocks at once, on a grid fixed by the absolute
// positions (chunk c holds positions [c·kChunkCells, (c+1)·kChunkCells)), so a row's steps do
// not depend on which tokens share its tile. A step per block was a softmax step per row for
// every 32 cells, whose fixed costs outweighed its arithmetic in a decode step at depth.
constexpr int64_t kChunkCells = 128;

// One block's part of a chunk: cells [first, first + n) (positions) as the kernels read them.
struct ChunkPiece {
  int64_t first, n;
  CellRows keys, values;
};

// Per-thread buffers of attend_tile.
struct TileScratch {
  // [kChunkCells, hd] / [kChunkCells, dv] converted cells; left uninitialized, as cells read in
  // place never touch them (zeroing them cost each thread 64 KB of stores a layer).
  std::unique_ptr<float[]> k_tile;
  std::unique_ptr<float[]> v_tile;
  std::vector<float> q_tile;       // [rows, hd] the tile's query rows
  std::vector<float> scores;       // [rows, kChunkCells]
  std::vector<float> acc;          // [rows, dv]
  std::vector<RowState> rows;      // [rows]
  std::vector<ChunkPiece> pieces;  // the chunk's blocks
};

// Where one tile reads the cache: its sequence's blocks in one layer, one KV head.
struct TileCells {
  const KvCache& cache;
  const std::vector<int32_t>& blocks;
  int64_t il, kv_head;
  kernels::DequantizeRowFn to_f32;  // the table's cells_to_f32 for the cell type; null for f32
  bool f16_in_place;                // f16 cells read where they lie (block_rows)
  int64_t end;                      // 1 + the last cell any token of the tile sees
};

// Where the kernels read f16 cells in place, each piece's rows ask for the same rows one chunk
// on while they are read (CellRows::f16_ahead), spread over the arithmetic. Otherwise the next
// block's cells are asked for at once (prefetch_cells) as each block is converted.
//
// The cells [pos, pos + n) of the walk, keys or values, where they lie in one block before the
// tile's end; else nullptr.
const uint8_t* cells_at(const TileCells& tc, int64_t pos, int64_t n, bool keys) {
  const int64_t bs = tc.cache.config().block_size;
  if (n <= 0 || pos + n > tc.end || pos / bs != (pos + n - 1) / bs) return nullptr;
  const int32_t block = tc.blocks[static_cast<size_t>(pos / bs)];
  if (block < 0) return nullptr;
  const uint8_t* cells = keys ? tc.cache.k_block(block, tc.il, tc.kv_head)
                              : tc.cache.v_block(block, tc.il, tc.kv_head);
  return cells +
         (pos % bs) * static_cast<int64_t>(keys ? tc.cache.k_row_bytes() : tc.cache.v_row_bytes());
}

// Whether rows b begin where a's first n rows end (same kind of rows).
bool rows_follow(const CellRows& a, int64_t n, const CellRows& b) {
  const CellRows end = a.from(n);
  return end.f32 == b.f32 && end.f16 == b.f16;
}

// Appends `next` to `last` when its cells follow last's in memory, keys and values (the next
// block of a sequence is usually the next block of the pool, whose cells follow in each KV
// head's stripe, and converted cells follow in the scratch): one kernel call then reads both.
// The rows read ahead must follow too, else the merged piece reads none ahead. Each row's
// arithmetic is the same in one call or two (the kernels' rows are independent, and values are
// summed in order of the cells).
bool extend_piece(ChunkPiece& last, const ChunkPiece& next) {
  if (!rows_follow(last.keys, last.n, next.keys) ||
      !rows_follow(last.values, last.n, next.values)) {
    return false;
  }
  for (auto [rows, next_rows] : {std::pair{&last.keys, &next.keys}, {&last.values, &next.values}}) {
    if (rows->from(last.n).f16_ahead != next_rows->f16_ahead) rows->f16_ahead = nullptr;
  }
  last.n += next.n;
  return true;
}

// The pieces of cells [lo, hi) in sc.pieces, converted into the scratch where the kernels
// cannot read the cells in place.
void chunk_pieces(const TileCells& tc, int64_t lo, int64_t hi, TileScratch& sc) {
  const KvCacheConfig& c = tc.cache.config();
  const int64_t bs = c.block_size;
  sc.pieces.clear();
  for (int64_t b = lo / bs; b * bs < hi; ++b) {
    MINFER_CHECK(tc.blocks[static_cast<size_t>(b)] >= 0, "attention reads a released KV block");
    if (!tc.f16_in_place) {
      const int64_t next = (b + 1) * bs;
      for (const bool keys : {true, false}) {
        const uint8_t* cells = cells_at(tc, next, std::min(bs, tc.end - next), keys);
        const auto row_bytes = keys ? tc.cache.k_row_bytes() : tc.cache.v_row_bytes();
        if (cells != nullptr) prefetch_cells(cells, bs * static_cast<int64_t>(row_bytes));
      }
    }
    const int64_t from = std::max(lo, b * bs);
    const int64_t n = std::min(hi, (b + 1) * bs) - from;
    const int64_t ahead = from + kChunkCells;
    const ChunkPiece piece{from, n,
                           block_rows(tc.to_f32, tc.f16_in_place, cells_at(tc, from, n, true),
                                      cells_at(tc, ahead, n, true), n, c.head_dim,
                                      sc.k_tile.get() + (from - lo) * c.head_dim),
                           block_rows(tc.to_f32, tc.f16_in_place, cells_at(tc, from, n, false),
                                      cells_at(tc, ahead, n, false), n, c.head_dim_v,
                                      sc.v_tile.get() + (from - lo) * c.head_dim_v)};
    if (!sc.pieces.empty() && extend_piece(sc.pieces.back(), piece)) continue;
    sc.pieces.push_back(piece);
  }
}

// The rows of tokens [t_begin, t_end) of a tile (n_heads rows each) that see the same first
// cell of a chunk, `from`, and n cells on. Token t sees seen[t - t_begin] of them (at least 1):
// its scores past those are set to -inf, so their weights are exactly 0 and the row's arithmetic
// is that of its own cells alone, whatever tokens share the call.
struct RowRun {
  int64_t from, n;
  int64_t t_begin, t_end;
  const int64_t* seen;
};

// The part [a, b) of a piece that a run's cells [from, from + n) cover (empty: a >= b).
std::pair<int64_t, int64_t> overlap(const ChunkPiece& p, const RowRun& run) {
  return {std::max(p.first, run.from), std::min(p.first + p.n, run.from + run.n)};
}

// out[i · out_stride + j] = x_i · keys_j · scale for n keys (dot_rows_f32 / dot_rows_f16).
void dot_cells(const kernels::KernelTable& table, CellRows keys, int64_t n, kernels::F32Rows x,
               float scale, float* out, int64_t out_stride) {
  if (keys.f16 != nullptr) {
    table.dot_rows_f16(keys.f16_rows(n), x, keys.dim, scale, out, out_stride);
  } else {
    table.dot_rows_f32({keys.f32, n, keys.dim}, x, keys.dim, scale, out, out_stride);
  }
}

// y_i += Σ_j w_i[j] · values_j for n values (weighted_sum_f32 / weighted_sum_f16).
void weighted_cells(const kernels::KernelTable& table, kernels::F32Rows w, CellRows values,
                    int64_t n, float* y, int64_t y_stride) {
  if (values.f16 != nullptr) {
    table.weighted_sum_f16(w, values.f16_rows(n), values.dim, y, y_stride);
  } else {
    table.weighted_sum_f32(w, {values.f32, n, values.dim}, values.dim, y, y_stride);
  }
}

// Adds a run's cells to its rows: every row's scores (a call per piece), each row's softmax
// step, then every row's weighted values (a call per piece, in order of the cells, so each
// row's sum is the one a single call would make).
void attend_rows(const kernels::KernelTable& table, const RowRun& run, float scale, int64_t n_heads,
                 TileScratch& sc) {
  const int64_t hd = sc.pieces.front().keys.dim;
  const int64_t dv = sc.pieces.front().values.dim;
  const int64_t r_begin = run.t_begin * n_heads;
  const int64_t n_rows = (run.t_end - run.t_begin) * n_heads;
  float* scores = sc.scores.data() + r_begin * kChunkCells;
  const kernels::F32Rows q{sc.q_tile.data() + r_begin * hd, n_rows, hd};
  for (const ChunkPiece& p : sc.pieces) {
    const auto [a, b] = overlap(p, run);
    if (a < b) {
      dot_cells(table, p.keys.from(a - p.first), b - a, q, scale, scores + (a - run.from),
                kChunkCells);
    }
  }
  for (int64_t r = 0; r < n_rows; ++r) {
    float* row = scores + r * kChunkCells;
    std::fill(row + run.seen[r / n_heads], row + run.n, -std::numeric_limits<float>::infinity());
    softmax_step(table, row, run.n, dv, sc.rows[static_cast<size_t>(r_begin + r)]);
  }
  for (const ChunkPiece& p : sc.pieces) {
    const auto [a, b] = overlap(p, run);
    if (a < b) {
      weighted_cells(table, {scores + (a - run.from), n_rows, kChunkCells},
                     p.values.from(a - p.first), b - a, sc.acc.data() + r_begin * dv, dv);
    }
  }
}

// Copies the tile's query rows into the scratch and starts every row's softmax.
void start_rows(const AttentionArgs& args, const QueryTile& tile, int64_t hd, int64_t dv,
                TileScratch& sc) {
  const int64_t n_heads = tile.h_end - tile.h_begin;
  const auto n_rows = static_cast<size_t>((tile.t_end - tile.t_begin) * n_heads);
  // Row r = (t - t_begin) · n_heads + (h - h_begin): a token's heads are consecutive rows.
  sc.q_tile.resize(n_rows * static_cast<size_t>(hd));
  sc.scores.resize(n_rows * static_cast<size_t>(kChunkCells));
  sc.acc.assign(n_rows * static_cast<size_t>(dv), 0.0f);
  sc.rows.resize(n_rows);
  for (int64_t t = tile.t_begin; t < tile.t_end; ++t) {
    const float* q = args.q + (t * args.n_head + tile.h_begin) * hd;
    std::copy(q, q + n_heads * hd, sc.q_tile.data() + (t - tile.t_begin) * n_heads * hd);
  }
  for (size_t r = 0; r < n_rows; ++r) {
    sc.rows[r] = {-std::numeric_limits<float>::infinity(), 0.0, sc.acc.data() + r * dv};
  }
}

// Each token's rows of the tile through one chunk: runs of tokens that see it from the same
// first cell share one attend_rows. Token t sees the chunk's cells cells_of(t) = [from, to).
template <typename CellsOf>
void attend_chunk(const kernels::KernelTable& table, const QueryTile& tile, float scale,
                  CellsOf cells_of, std::vector<int64_t>& seen, TileScratch& sc) {
  const int64_t n_heads = tile.h_end - tile.h_begin;
  for (int64_t t = tile.t_begin; t < tile.t_end;) {
    const int64_t from = cells_of(t).first;
    int64_t t_run = t;
    for (; t_run < tile.t_end && cells_of(t_run).first == from && cells_of(t_run).second > from;
         ++t_run) {
      seen[static_cast<size_t>(t_run - tile.t_begin)] = cells_of(t_run).second - from;
    }
    if (t_run == t) {  // the chunk lies outside this token's window
      ++t;
      continue;
    }
    const int64_t n = cells_of(t_run - 1).second - from;  // ends rise along the tile
    attend_rows(table,
                {from, n, t - tile.t_begin, t_run - tile.t_begin, seen.data() + (t - tile.t_begin)},
                scale, n_heads, sc);
    t = t_run;
  }
}

void attend_tile(const kernels::KernelTable& table, const KvCache& cache, const Batch& batch,
                 const AttentionArgs& args, kernels::DequantizeRowFn to_f32, const QueryTile& tile,
                 TileScratch& sc) {
  const KvCacheConfig& c = cache.config();
  const int64_t dv = c.head_dim_v;
  const int64_t n_heads = tile.h_end - tile.h_begin;
  start_rows(args, tile, c.head_dim, dv, sc);
  // Token t sees cells first(t) .. pos(t) (first = 0 unless the layer slides); positions rise
  // by one along the tile.
  auto first_of = [&](int64_t pos) {
    return args.window > 0 ? std::max<int64_t>(0, pos - args.window + 1) : int64_t{0};
  };
  const int64_t pos0 = batch.positions[static_cast<size_t>(tile.t_begin)];
  const int64_t pos_last = batch.positions[static_cast<size_t>(tile.t_end - 1)];
  const bool f16_in_place = c.cell_type == GgmlType::kF16 && table.dot_rows_f16 != nullptr &&
                            table.weighted_sum_f16 != nullptr;
  const TileCells tc{
      cache,       cache.block_table(batch.seq_ids[static_cast<size_t>(tile.t_begin)], args.il),
      args.il,     tile.h_begin / (args.n_head / c.n_head_kv),
      to_f32,      f16_in_place,
      pos_last + 1};
  std::vector<int64_t> seen(static_cast<size_t>(tile.t_end - tile.t_begin));
  for (int64_t c0 = first_of(pos0) / kChunkCells * kChunkCells; c0 <= pos_last; c0 += kChunkCells) {
    const int64_t c1 = c0 + kChunkCells;
    // The chunk's cells any token of the tile sees: [lo, hi).
    chunk_pieces(tc, std::max(c0, first_of(pos0)), std::min(c1, pos_last + 1), sc);
    auto cells_of = [&](int64_t t) {
      const int64_t pos = batch.positions[static_cast<size_t>(t)];
      return std::pair{std::max(c0, first_of(pos)), std::min(c1, pos + 1)};
    };
    attend_chunk(table, tile, args.scale, cells_of, seen, sc);
  }
  for (int64_t r = 0; r < static_cast<int64_t>(sc.rows.size()); ++r) {
    const int64_t t = tile.t_begin + r / n_heads;
    const int64_t h = tile.h_begin + r % n_heads;
    const RowState& row = sc.rows[static_cast<size_t>(r)];
    table.scale(row.acc, static_cast<float>(1.0 / row.sum), dv,
                args.out + (t * args.n_head + h) * dv);
  }
}

// llama.cpp's flash-attention numerics over f16 cells, one (token, head) row per task.
void attention_flash_f16(kernels::ThreadPool& pool, const KvCache& cache, const Batch& batch,
                         const AttentionArgs& args) {
  const KvCacheConfig& c = cache.config();
  const int64_t group = args.n_head / c.n_head_kv;
  pool.run([&](int thread_id, int n_threads) {
    std::vector<uint16_t> q16(static_cast<size_t>(c.head_dim));      // [hd] f16
    std::vector<uint16_t> vkq16(static_cast<size_t>(c.head_dim_v));  // [dv] f16
    const auto range =
        kernels::ThreadPool::task_range(batch.n_tokens() * args.n_head, thread_id, n_threads);
    for (int64_t task = range.begin; task < range.end; ++task) {
      const int64_t t = task / args.n_head;
      const int64_t h = task % args.n_head;
      const int64_t pos = batch.positions[static_cast<size_t>(t)];
      const int64_t first = args.window > 0 ? std::max<int64_t>(0, pos - args.window + 1) : 0;
      flash_attn_f16_row(cache, cache.block_table(batch.seq_ids[static_cast<size_t>(t)], args.il),
                         args.il, h / group, args.q + (t * args.n_head + h) * c.head_dim, first,
                         pos + 1, args.scale, args.out + (t * args.n_head + h) * c.head_dim_v,
                         q16.data(), vkq16.data());
    }
  });
}

}  // namespace

void attention(const kernels::KernelTable& table, kernels::ThreadPool& pool, const KvCache& cache,
               const Batch& batch, const AttentionArgs& args, const AttentionOptions& options) {
  const KvCacheConfig& c = cache.config();
  if (c.cell_type == GgmlType::kF16 && options.flash_attn_numerics) {
    attention_flash_f16(pool, cache, batch, args);
    return;
  }
  const kernels::DequantizeRowFn to_f32 =
      c.cell_type == GgmlType::kF32 ? nullptr
                                    : table.cells_to_f32[static_cast<size_t>(c.cell_type)];
  const std::vector<QueryTile> tiles =
      plan_query_tiles(batch, args.n_head, args.n_head / c.n_head_kv, pool.n_threads());
  pool.run([&](int thread_id, int n_threads) {
    TileScratch sc;
    sc.k_tile =
        std::make_unique_for_overwrite<float[]>(static_cast<size_t>(kChunkCells * c.head_dim));
    sc.v_tile =
        std::make_unique_for_overwrite<float[]>(static_cast<size_t>(kChunkCells * c.head_dim_v));
    // Tiles dealt round-robin: a causal prompt's later tiles see more cells, so contiguous
    // ranges would leave the last thread most of the work.
    for (size_t i = static_cast<size_t>(thread_id); i < tiles.size();
         i += static_cast<size_t>(n_threads)) {
      attend_tile(table, cache, batch, args, to_f32, tiles[i], sc);
    }
  });
}

}  // namespace minfer
