#include "graph/attention.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdint>
#include <limits>
#include <memory>
#include <utility>
#include <vector>

#include "core/aligned_vector.h"
#include "core/check.h"
#include "kernels/attention_rows.h"
#include "kernels/hadamard.h"
#include "kernels/ref/flash_attn_f16.h"

namespace minfer {

namespace {

using kernels::CellPiece;
using kernels::CellRead;
using kernels::CellReads;
using kernels::CellRows;
using kernels::QueryRows;
using kernels::RowState;

// Cells of the cache per softmax step: several blocks at once, on a grid fixed by the absolute
// positions (chunk c holds positions [c·kChunkCells, (c+1)·kChunkCells)), so a row's steps do
// not depend on which tokens share its tile. A step per block was a softmax step per row for
// every 32 cells, whose fixed costs outweighed its arithmetic in a decode step at depth.
constexpr int64_t kChunkCells = 128;

// Cells per piece of a row's walk: on this grid of absolute positions (piece p holds positions
// [p·kPieceCells, (p+1)·kPieceCells)) a row's online softmax starts afresh, and the pieces'
// states are folded in order (fold_state). A row of one piece is computed as if there were no
// pieces; a longer one the same way whether one thread walks its pieces in turn or several
// threads take a piece each (split-KV, attention_split): the bits do not depend on which.
constexpr int64_t kPieceCells = 4 * kChunkCells;

// Token t of the tile sees cells first_of(pos(t)) .. pos(t): first = 0 unless the layer slides.
int64_t first_cell(const AttentionArgs& args, int64_t pos) {
  return args.window > 0 ? std::max<int64_t>(0, pos - args.window + 1) : int64_t{0};
}

// The query rows one task computes: tokens [t_begin, t_end) of one sequence at consecutive
// positions, query heads [h_begin, h_end) of one KV head. Each cache block of the tile's window
// is read (and converted, for f16 / q8_0 cells) once for all of them, instead of once per row.
struct QueryTile {
  int64_t t_begin, t_end;
  int64_t h_begin, h_end;
};

constexpr int64_t kTileTokens = 16;

// The pieces [begin, end) whose cells some token of the tile sees (positions rise by one along
// the tile).
std::pair<int64_t, int64_t> tile_pieces(const Batch& batch, const AttentionArgs& args,
                                        const QueryTile& tile) {
  const int64_t pos0 = batch.positions[static_cast<size_t>(tile.t_begin)];
  const int64_t pos_last = batch.positions[static_cast<size_t>(tile.t_end - 1)];
  return {first_cell(args, pos0) / kPieceCells, pos_last / kPieceCells + 1};
}

// One piece of one tile: a task of split-KV.
struct PieceTask {
  size_t tile;
  int64_t piece;
  int64_t first_piece, n_pieces;  // the tile's pieces
  size_t first_row;               // where the task's row states are kept (PieceStates)
  int64_t work;                   // rows × cells: what the task costs
};

// How attention's work is dealt to the threads: query tiles, and with `split` each tile's
// pieces as tasks of their own (split-KV), folded by whichever thread finishes a tile's last one.
struct AttentionPlan {
  std::vector<QueryTile> tiles;
  std::vector<PieceTask> tasks;  // with split: every tile's pieces, tile by tile

  // Tiles of one piece each need no folding across threads.
  bool split() const { return tasks.size() > tiles.size(); }
};

// Runs of up to kTileTokens tokens of one sequence at consecutive positions.
std::vector<std::pair<int64_t, int64_t>> token_runs(const Batch& batch) {
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
  return runs;
}

// The tasks of split-KV: every piece of every tile, with the cells each piece's tokens see.
std::vector<PieceTask> piece_tasks(const Batch& batch, const AttentionArgs& args,
                                   const std::vector<QueryTile>& tiles) {
  std::vector<PieceTask> tasks;
  size_t first_row = 0;
  for (size_t i = 0; i < tiles.size(); ++i) {
    const QueryTile& tile = tiles[i];
    const auto [p_begin, p_end] = tile_pieces(batch, args, tile);
    const int64_t lo = first_cell(args, batch.positions[static_cast<size_t>(tile.t_begin)]);
    const int64_t hi = batch.positions[static_cast<size_t>(tile.t_end - 1)] + 1;
    const int64_t rows = (tile.t_end - tile.t_begin) * (tile.h_end - tile.h_begin);
    for (int64_t p = p_begin; p < p_end; ++p) {
      const int64_t cells = std::min(hi, (p + 1) * kPieceCells) - std::max(lo, p * kPieceCells);
      tasks.push_back({i, p, p_begin, p_end - p_begin, first_row, rows * cells});
      first_row += static_cast<size_t>(rows);
    }
  }
  return tasks;
}

// Tiles: the token runs times the KV heads. Where these are fewer than the threads (a decode
// step of a model with fewer KV heads than threads), each tile is split along its cells into
// pieces; only where that still leaves a thread without a task are a KV head's query heads split
// too, as each head's tile then reads the head's cells again.
AttentionPlan plan_attention(const Batch& batch, const AttentionArgs& args, int64_t group,
                             int n_threads) {
  const std::vector<std::pair<int64_t, int64_t>> runs = token_runs(batch);
  const int64_t n_kv = args.n_head / group;
  AttentionPlan plan;
  const bool split = static_cast<int64_t>(runs.size()) * n_kv < n_threads;
  int64_t pieces = 0;  // over the runs of one KV head
  for (const auto& [t_begin, t_end] : runs) {
    const auto [p_begin, p_end] = tile_pieces(batch, args, {t_begin, t_end, 0, 1});
    pieces += split ? p_end - p_begin : 1;
  }
  int64_t n_split = 1;
  while (n_split < group && pieces * n_kv * n_split < n_threads) ++n_split;
  const int64_t heads_per_tile = (group + n_split - 1) / n_split;
  for (const auto& [t_begin, t_end] : runs) {
    for (int64_t kv = 0; kv < n_kv; ++kv) {
      const int64_t group_end = (kv + 1) * group;
      for (int64_t h = kv * group; h < group_end; h += heads_per_tile) {
        plan.tiles.push_back({t_begin, t_end, h, std::min(h + heads_per_tile, group_end)});
      }
    }
  }
  if (split) plan.tasks = piece_tasks(batch, args, plan.tiles);
  return plan;
}

// Thread i's tasks of split-KV: [bounds[i], bounds[i + 1]), consecutive pieces (one thread's
// pieces of a tile are adjacent cells, read as one stream), with as nearly equal work as whole
// tasks allow: a task goes to the thread whose share holds the middle of its work.
std::vector<size_t> thread_bounds(const std::vector<PieceTask>& tasks, int n_threads) {
  int64_t total = 0;
  for (const PieceTask& task : tasks) total += task.work;
  std::vector<size_t> bounds(static_cast<size_t>(n_threads) + 1, tasks.size());
  bounds[0] = 0;
  int64_t before = 0;  // work of the tasks before task k
  size_t k = 0;
  for (int i = 1; i < n_threads; ++i) {
    // Task k belongs to a thread before i while the middle of its work lies before i's share.
    while (k < tasks.size() && 2 * before + tasks[k].work < 2 * total * i / n_threads) {
      before += tasks[k].work;
      ++k;
    }
    bounds[static_cast<size_t>(i)] = k;
  }
  return bounds;
}

// Rows' states with their accumulators.
struct RowStates {
  std::vector<RowState> rows;  // [rows]
  AlignedVector<float> acc;    // [rows, dv]

  // n_rows empty states.
  void reset(size_t n_rows, int64_t dv) {
    acc.assign(n_rows * static_cast<size_t>(dv), 0.0f);
    rows.resize(n_rows);
    for (size_t r = 0; r < n_rows; ++r) {
      rows[r] = {-std::numeric_limits<float>::infinity(), 0.0,
                 acc.data() + r * static_cast<size_t>(dv)};
    }
  }
};

// Per-thread buffers of attend_tile.
struct TileScratch {
  // [kChunkCells, hd] / [kChunkCells, dv] converted cells; left uninitialized, as cells read in
  // place never touch them (zeroing them cost each thread 64 KB of stores a layer).
  AlignedArray<float> k_tile;
  AlignedArray<float> v_tile;
  AlignedVector<float> q_tile;     // [rows, hd] the tile's query rows (f32 and f16 keys)
  AlignedVector<uint16_t> q_bf16;  // [rows, hd] the same rounded to bf16 (bf16 keys)
  AlignedVector<uint8_t> q8_tile;  // [rows, q8_0_query_row_bytes(hd)] the same, q8_0 keys
  AlignedVector<float> scores;     // [rows, kChunkCells]
  RowStates state;                 // [rows] the rows' softmax over the walk so far
  std::vector<CellPiece> pieces;   // the chunk's blocks
  std::vector<int64_t> seen;       // [tokens] cells of the chunk each token sees
  std::vector<float> rotated;      // [heads, hd] a token's query rows rotated (k_rotation)
};

// Where one tile reads the cache: its sequence's blocks in one layer, one KV head.
struct TileCells {
  const KvCache& cache;
  const std::vector<int32_t>& blocks;
  int64_t il, kv_head;
  kernels::DequantizeRowFn to_f32;  // the table's cells_to_f32 for the cell type; null for f32
  CellReads reads;                  // how the kernels read the keys and values (block_rows)
  int64_t end;                      // 1 + the last cell any token of the tile sees
};

// What every tile of one attention call reads besides the cache: the layer's arguments, the
// batch's query rows ([n_tokens · n_head] rows of hd; for q8_0 and bf16 cells in a split plan
// also converted, batch_queries) and the table's conversion of the cells (cells_to_f32 for the
// cell type; null for f32).
struct CallInputs {
  const AttentionArgs& args;
  QueryRows q;
  kernels::DequantizeRowFn to_f32;
  int64_t k_rotation, v_rotation;  // KvCache::k_rotation / v_rotation
};

// n query rows of hd floats quantized for q8_0 keys into `out`: Hadamard-rotated first (in
// `rotated`, [n, hd]) where the keys are (k_rotation), as llama.cpp rotates Q with K.
void quantize_rows(const kernels::KernelTable& table, const float* q, int64_t n, int64_t hd,
                   int64_t k_rotation, std::vector<float>& rotated, uint8_t* out) {
  if (k_rotation > 0) q = kernels::hadamard_rotated(q, n * hd, k_rotation, rotated);
  kernels::quantize_queries(table, q, n, hd, out);
}

// Where the kernels read cells in place, each piece's rows ask for the same rows one chunk
// on while they are read (CellRows::ahead), spread over the arithmetic; q8_0 keys are left to the
// Q8_0 tile's own prefetches (kernels::dot_cells). Converted cells: the next block's are asked for
// at once (prefetch_cells) as each block is converted.
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
  return cells + (pos % bs) * static_cast<int64_t>(keys ? tc.cache.k_row_bytes(tc.il)
                                                        : tc.cache.v_row_bytes(tc.il));
}

// Whether rows b begin where a's first n rows end (same kind of rows).
bool rows_follow(const CellRows& a, int64_t n, const CellRows& b) {
  const CellRows end = a.from(n);
  return end.data == b.data;
}

// Appends `next` to `last` when its cells follow last's in memory, keys and values (the next
// block of a sequence is usually the next block of the pool, whose cells follow in each KV
// head's stripe, and converted cells follow in the scratch): one kernel call then reads both.
// The rows read ahead must follow too, else the merged piece reads none ahead. Each row's
// arithmetic is the same in one call or two (the kernels' rows are independent, and values are
// summed in order of the cells).
bool extend_piece(CellPiece& last, const CellPiece& next) {
  if (!rows_follow(last.keys, last.n, next.keys) ||
      !rows_follow(last.values, last.n, next.values)) {
    return false;
  }
  for (auto [rows, next_rows] : {std::pair{&last.keys, &next.keys}, {&last.values, &next.values}}) {
    if (rows->from(last.n).ahead != next_rows->ahead) rows->ahead = nullptr;
  }
  last.n += next.n;
  return true;
}

// The pieces of cells [lo, hi) in sc.pieces, converted into the scratch where the kernels
// cannot read the cells in place.
void chunk_pieces(const TileCells& tc, int64_t lo, int64_t hi, TileScratch& sc) {
  const KvCacheConfig& c = tc.cache.config();
  const int64_t bs = c.block_size;
  const auto k_row = static_cast<int64_t>(tc.cache.k_row_bytes(tc.il));
  const auto v_row = static_cast<int64_t>(tc.cache.v_row_bytes(tc.il));
  const int64_t hd = tc.cache.head_dim(tc.il);
  const int64_t dv = tc.cache.head_dim_v(tc.il);
  sc.pieces.clear();
  for (int64_t b = lo / bs; b * bs < hi; ++b) {
    MINFER_CHECK(tc.blocks[static_cast<size_t>(b)] >= 0, "attention reads a released KV block");
    const int64_t next = (b + 1) * bs;
    for (const bool keys : {true, false}) {
      if ((keys ? tc.reads.keys : tc.reads.values) != CellRead::kF32) continue;
      const uint8_t* cells = cells_at(tc, next, std::min(bs, tc.end - next), keys);
      const auto row_bytes = keys ? k_row : v_row;
      if (cells != nullptr) kernels::prefetch_cells(cells, bs * row_bytes);
    }
    const int64_t from = std::max(lo, b * bs);
    const int64_t n = std::min(hi, (b + 1) * bs) - from;
    const int64_t ahead = from + kChunkCells;
    const CellPiece piece{
        from, n,
        kernels::block_rows(tc.to_f32, tc.reads.keys, cells_at(tc, from, n, true),
                            cells_at(tc, ahead, n, true), n, hd, k_row,
                            sc.k_tile.get() + (from - lo) * hd),
        kernels::block_rows(tc.to_f32, tc.reads.values, cells_at(tc, from, n, false),
                            cells_at(tc, ahead, n, false), n, dv, v_row,
                            sc.v_tile.get() + (from - lo) * dv)};
    if (!sc.pieces.empty() && extend_piece(sc.pieces.back(), piece)) continue;
    sc.pieces.push_back(piece);
  }
}

// The tile's query rows as its keys' dots read them, in the scratch: row
// r = (t - t_begin) · n_heads + (h - h_begin), a token's heads consecutive rows. f32 rows for f32
// and f16 cells, bf16 rows for bf16 cells; for q8_0 cells the rows quantized
// (kernels::quantize_queries). Where the call converted the batch's rows already (in.q.q8_0 /
// in.q.bf16: split-KV, a tile's pieces on several threads) they are copied, so either way each
// row is converted once per call.
QueryRows tile_queries(const kernels::KernelTable& table, const CallInputs& in, GgmlType cells,
                       const QueryTile& tile, TileScratch& sc) {
  const int64_t n_head = in.args.n_head;
  const int64_t n_heads = tile.h_end - tile.h_begin;
  const auto n_rows = static_cast<size_t>((tile.t_end - tile.t_begin) * n_heads);
  const int64_t hd = in.q.dim;
  if (cells == GgmlType::kQ8_0) {
    const int64_t row_bytes = kernels::q8_0_query_row_bytes(hd);
    sc.q8_tile.resize(n_rows * static_cast<size_t>(row_bytes));
    for (int64_t t = tile.t_begin; t < tile.t_end; ++t) {
      const int64_t row = t * n_head + tile.h_begin;  // of the batch
      uint8_t* out = sc.q8_tile.data() + (t - tile.t_begin) * n_heads * row_bytes;
      if (in.q.q8_0 == nullptr) {
        quantize_rows(table, in.q.f32 + row * hd, n_heads, hd, in.k_rotation, sc.rotated, out);
      } else {
        std::copy(in.q.q8_0 + row * row_bytes, in.q.q8_0 + (row + n_heads) * row_bytes, out);
      }
    }
    return {nullptr, sc.q8_tile.data(), nullptr, hd, row_bytes};
  }
  if (cells == GgmlType::kBF16) {
    sc.q_bf16.resize(n_rows * static_cast<size_t>(hd));
    for (int64_t t = tile.t_begin; t < tile.t_end; ++t) {
      const int64_t row = t * n_head + tile.h_begin;  // of the batch
      uint16_t* out = sc.q_bf16.data() + (t - tile.t_begin) * n_heads * hd;
      if (in.q.bf16 == nullptr) {
        table.f32_to_bf16(in.q.f32 + row * hd, n_heads * hd, out);
      } else {
        std::copy(in.q.bf16 + row * hd, in.q.bf16 + (row + n_heads) * hd, out);
      }
    }
    return {nullptr, nullptr, sc.q_bf16.data(), hd, 0};
  }
  sc.q_tile.resize(n_rows * static_cast<size_t>(hd));
  for (int64_t t = tile.t_begin; t < tile.t_end; ++t) {
    const float* rows = in.q.f32 + (t * n_head + tile.h_begin) * hd;
    std::copy(rows, rows + n_heads * hd, sc.q_tile.data() + (t - tile.t_begin) * n_heads * hd);
  }
  return {sc.q_tile.data(), nullptr, nullptr, hd, 0};
}

// Starts every row's softmax of the tile.
void start_rows(const AttentionArgs& args, const QueryTile& tile, int64_t dv, TileScratch& sc) {
  const int64_t n_heads = tile.h_end - tile.h_begin;
  const auto n_rows = static_cast<size_t>((tile.t_end - tile.t_begin) * n_heads);
  sc.scores.resize(n_rows * static_cast<size_t>(kChunkCells));
  sc.state.reset(n_rows, dv);
  if (args.sinks != nullptr) {
    // llama.cpp's soft_max takes the sink into the row max before any weight is made, so every
    // e^(s_j - m) is computed against it from the start (no rescale afterwards).
    for (size_t r = 0; r < n_rows; ++r) {
      sc.state.rows[r].max_score = args.sinks[tile.h_begin + static_cast<int64_t>(r) % n_heads];
    }
  }
}

// Each token's rows of the tile through one chunk: runs of tokens that see it from the same
// first cell share one attend_rows. Token t sees the chunk's cells cells_of(t) = [from, to).
template <typename CellsOf>
void attend_chunk(const kernels::KernelTable& table, const QueryTile& tile, const QueryRows& q,
                  float scale, CellsOf cells_of, TileScratch& sc) {
  const int64_t n_heads = tile.h_end - tile.h_begin;
  std::vector<int64_t>& seen = sc.seen;
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
    kernels::attend_rows(
        table, {from, n, t - tile.t_begin, t_run - tile.t_begin, seen.data() + (t - tile.t_begin)},
        scale, n_heads,
        {sc.pieces, q, sc.scores.data(), kChunkCells, sc.state.rows.data(), sc.state.acc.data()});
    t = t_run;
  }
}

// Every row's softmax state over the cells of piece `piece` (in sc.state; rows that see none of
// them keep the empty state: max -inf, sum 0), for the tile's query rows q (tile_queries).
void attend_piece(const kernels::KernelTable& table, const KvCache& cache, const Batch& batch,
                  const CallInputs& in, const QueryTile& tile, const QueryRows& q, int64_t piece,
                  TileScratch& sc) {
  const AttentionArgs& args = in.args;
  const CellReads reads = kernels::cell_reads(
      table, cache.config().cell_type, (tile.t_end - tile.t_begin) * (tile.h_end - tile.h_begin));
  start_rows(args, tile, cache.head_dim_v(args.il), sc);
  const int64_t pos0 = batch.positions[static_cast<size_t>(tile.t_begin)];
  const int64_t pos_last = batch.positions[static_cast<size_t>(tile.t_end - 1)];
  const TileCells tc{
      cache,       cache.block_table(batch.seq_ids[static_cast<size_t>(tile.t_begin)], args.il),
      args.il,     tile.h_begin / (args.n_head / cache.n_head_kv(args.il)),
      in.to_f32,   reads,
      pos_last + 1};
  sc.seen.resize(static_cast<size_t>(tile.t_end - tile.t_begin));
  const int64_t lo = std::max(first_cell(args, pos0), piece * kPieceCells);
  const int64_t hi = std::min(pos_last + 1, (piece + 1) * kPieceCells);
  for (int64_t c0 = lo / kChunkCells * kChunkCells; c0 < hi; c0 += kChunkCells) {
    const int64_t c1 = c0 + kChunkCells;
    // The chunk's cells any token of the tile sees: [lo, hi).
    chunk_pieces(tc, std::max(c0, lo), std::min(c1, hi), sc);
    auto cells_of = [&](int64_t t) {
      const int64_t pos = batch.positions[static_cast<size_t>(t)];
      return std::pair{std::max(c0, first_cell(args, pos)), std::min(c1, pos + 1)};
    };
    attend_chunk(table, tile, q, args.scale, cells_of, sc);
  }
}

// 1 / the row's softmax denominator: 1 / sum; with a sink s (AttentionArgs::sinks) e^(s - m)
// joins the sum. The row max m already took the sink in (start_rows), so nothing is rescaled.
double row_factor(const RowState& row, const float* sink) {
  if (sink == nullptr) return 1.0 / row.sum;
  // The sink's term as llama.cpp adds it: a float e^x, summed in double.
  return 1.0 / (row.sum + static_cast<double>(std::exp(*sink - row.max_score)));
}

// The tile's output rows: each accumulator over its sum (with the head's sink, if any), turned
// back from the values' Hadamard rotation where the cells hold them rotated (v_rotation).
void finish_rows(const kernels::KernelTable& table, const CallInputs& in, const QueryTile& tile,
                 int64_t dv, const std::vector<RowState>& rows) {
  const AttentionArgs& args = in.args;
  const int64_t n_heads = tile.h_end - tile.h_begin;
  for (size_t r = 0; r < rows.size(); ++r) {
    const int64_t t = tile.t_begin + static_cast<int64_t>(r) / n_heads;
    const int64_t h = tile.h_begin + static_cast<int64_t>(r) % n_heads;
    const float* sink = args.sinks != nullptr ? args.sinks + h : nullptr;
    float* out = args.out + (t * args.n_head + h) * dv;
    table.scale(rows[r].acc, static_cast<float>(row_factor(rows[r], sink)), dv, out);
  }
  if (in.v_rotation == 0) return;
  for (int64_t t = tile.t_begin; t < tile.t_end; ++t) {  // a token's heads: consecutive rows
    float* out = args.out + (t * args.n_head + tile.h_begin) * dv;
    kernels::hadamard_rotate(out, n_heads * dv / in.v_rotation, in.v_rotation);
  }
}

// One thread walks every piece of the tile in turn, folding each into `folded`; a tile of one
// piece is finished from the walk's own states.
void attend_tile(const kernels::KernelTable& table, const KvCache& cache, const Batch& batch,
                 const CallInputs& in, const QueryTile& tile, TileScratch& sc, RowStates& folded) {
  const AttentionArgs& args = in.args;
  const int64_t dv = cache.head_dim_v(args.il);
  const auto [p_begin, p_end] = tile_pieces(batch, args, tile);
  const QueryRows q = tile_queries(table, in, cache.config().cell_type, tile, sc);
  if (p_end - p_begin == 1) {
    attend_piece(table, cache, batch, in, tile, q, p_begin, sc);
    finish_rows(table, in, tile, dv, sc.state.rows);
    return;
  }
  const auto n_rows =
      static_cast<size_t>((tile.t_end - tile.t_begin) * (tile.h_end - tile.h_begin));
  folded.reset(n_rows, dv);
  for (int64_t p = p_begin; p < p_end; ++p) {
    attend_piece(table, cache, batch, in, tile, q, p, sc);
    for (size_t r = 0; r < n_rows; ++r)
      kernels::fold_state(table, sc.state.rows[r], dv, folded.rows[r]);
  }
  finish_rows(table, in, tile, dv, folded.rows);
}

// llama.cpp's flash-attention numerics over f16 cells (kernels/ref/flash_attn_f16.h), one
// (token, head) row per task, walked a block's run of cells at a time.
void attention_flash_f16(kernels::ThreadPool& pool, const KvCache& cache, const Batch& batch,
                         const AttentionArgs& args) {
  const int64_t group = args.n_head / cache.n_head_kv(args.il);
  const int64_t bs = cache.config().block_size;
  const int64_t hd = cache.head_dim(args.il);
  const int64_t dv = cache.head_dim_v(args.il);
  pool.run([&](int thread_id, int n_threads) {
    std::vector<uint16_t> q16(static_cast<size_t>(hd));    // [hd] f16
    std::vector<uint16_t> vkq16(static_cast<size_t>(dv));  // [dv] f16
    kernels::ref::FlashRowF16 row{q16.data(), vkq16.data(), hd, dv, args.scale, 0.0f, 0.0f};
    const auto range =
        kernels::ThreadPool::task_range(batch.n_tokens() * args.n_head, thread_id, n_threads);
    for (int64_t task = range.begin; task < range.end; ++task) {
      const int64_t t = task / args.n_head;
      const int64_t kv_head = task % args.n_head / group;
      const int64_t pos = batch.positions[static_cast<size_t>(t)];
      const std::vector<int32_t>& blocks =
          cache.block_table(batch.seq_ids[static_cast<size_t>(t)], args.il);
      kernels::ref::flash_f16_start(row, args.q + task * hd);
      for (int64_t j = first_cell(args, pos); j <= pos; j = (j / bs + 1) * bs) {
        const int32_t block = blocks[static_cast<size_t>(j / bs)];
        const int64_t n = std::min(pos + 1, (j / bs + 1) * bs) - j;
        const auto* keys =
            reinterpret_cast<const uint16_t*>(cache.k_block(block, args.il, kv_head));
        const auto* values =
            reinterpret_cast<const uint16_t*>(cache.v_block(block, args.il, kv_head));
        kernels::ref::flash_f16_cells(row, keys + j % bs * hd, values + j % bs * dv, n);
      }
      if (args.sinks != nullptr) kernels::ref::flash_f16_sink(row, args.sinks[task % args.n_head]);
      kernels::ref::flash_f16_finish(row, args.out + task * dv);
    }
  });
}

// Where attend_row_llama_order reads one KV head's f32 cells of one layer.
struct HeadCells {
  const KvCache* cache;
  int64_t il, kv_head;
};

const float* head_keys(const void* ctx, int32_t block) {
  const auto* h = static_cast<const HeadCells*>(ctx);
  return reinterpret_cast<const float*>(h->cache->k_block(block, h->il, h->kv_head));
}

const float* head_values(const void* ctx, int32_t block) {
  const auto* h = static_cast<const HeadCells*>(ctx);
  return reinterpret_cast<const float*>(h->cache->v_block(block, h->il, h->kv_head));
}

// Sink layers over f32 cells: each (token, head) row in llama.cpp's non-flash order
// (kernels::attend_row_llama_order: the softmax normalised before the values, its sums in
// llama.cpp's lanes), one row per task. gpt-oss's attention matrices feed top-k routing, which
// turns a last-bit difference here into another expert.
void attention_llama_order(kernels::ThreadPool& pool, const KvCache& cache, const Batch& batch,
                           const AttentionArgs& args) {
  const int64_t group = args.n_head / cache.n_head_kv(args.il);
  const int64_t hd = cache.head_dim(args.il);
  const int64_t dv = cache.head_dim_v(args.il);
  int64_t max_pos = 0;
  for (const int32_t p : batch.positions) max_pos = std::max<int64_t>(max_pos, p);
  pool.run([&](int thread_id, int n_threads) {
    std::vector<float> scores(static_cast<size_t>(max_pos + 1));
    std::vector<float> lanes(static_cast<size_t>(16 * dv));
    const auto range =
        kernels::ThreadPool::task_range(batch.n_tokens() * args.n_head, thread_id, n_threads);
    for (int64_t task = range.begin; task < range.end; ++task) {
      const int64_t t = task / args.n_head;
      const int64_t h = task % args.n_head;
      const int64_t pos = batch.positions[static_cast<size_t>(t)];
      const HeadCells head{&cache, args.il, h / group};
      const kernels::PagedF32Cells cells{
          cache.block_table(batch.seq_ids[static_cast<size_t>(t)], args.il).data(),
          cache.config().block_size,
          head_keys,
          head_values,
          &head,
          hd,
          dv};
      kernels::attend_row_llama_order(cells, first_cell(args, pos), pos, args.q + task * hd,
                                      args.scale, args.sinks + h, {scores.data(), lanes.data()},
                                      args.out + task * dv);
    }
  });
}

// The per-thread scratch of the tile walk over layer il's cells.
TileScratch make_scratch(const KvCache& cache, int64_t il) {
  TileScratch sc;
  sc.k_tile = make_aligned_array_for_overwrite<float>(
      static_cast<size_t>(kChunkCells * cache.head_dim(il)));
  sc.v_tile = make_aligned_array_for_overwrite<float>(
      static_cast<size_t>(kChunkCells * cache.head_dim_v(il)));
  return sc;
}

// Every task's rows' states over its piece (task k's rows from tasks[k].first_row on), kept
// until the tile's last piece is done.
struct PieceStates {
  RowStates states;

  PieceStates(const std::vector<PieceTask>& tasks, const std::vector<QueryTile>& tiles,
              int64_t dv) {
    const QueryTile& last = tiles[tasks.back().tile];
    states.reset(tasks.back().first_row +
                     static_cast<size_t>((last.t_end - last.t_begin) * (last.h_end - last.h_begin)),
                 dv);
  }

  // Keeps the walk's states of a task.
  void keep(const PieceTask& task, const RowStates& walk, int64_t dv) {
    for (size_t r = 0; r < walk.rows.size(); ++r) {
      RowState& kept = states.rows[task.first_row + r];
      kept.max_score = walk.rows[r].max_score;
      kept.sum = walk.rows[r].sum;
      std::copy(walk.rows[r].acc, walk.rows[r].acc + dv, kept.acc);
    }
  }

  // Folds tasks [first, first + n) (a tile's pieces, in order) into `into`.
  void fold(const kernels::KernelTable& table, const PieceTask* first, int64_t n, int64_t dv,
            RowStates& into) const {
    for (const PieceTask* task = first; task < first + n; ++task) {
      for (size_t r = 0; r < into.rows.size(); ++r) {
        kernels::fold_state(table, states.rows[task->first_row + r], dv, into.rows[r]);
      }
    }
  }
};

// Split-KV: each thread computes its share of the plan's tasks (thread_bounds); the thread that
// finishes a tile's last piece folds the tile's pieces in order and writes its rows. Which thread
// computes or folds a piece changes no bit.
void attention_split(const kernels::KernelTable& table, kernels::ThreadPool& pool,
                     const KvCache& cache, const Batch& batch, const CallInputs& in,
                     const AttentionPlan& plan) {
  const AttentionArgs& args = in.args;
  const int64_t dv = cache.head_dim_v(args.il);
  PieceStates states(plan.tasks, plan.tiles, dv);
  const std::vector<size_t> bounds = thread_bounds(plan.tasks, pool.n_threads());
  const auto done = std::make_unique<std::atomic<int64_t>[]>(plan.tiles.size());  // pieces done
  pool.run([&](int thread_id, int /*n_threads*/) {
    TileScratch sc = make_scratch(cache, args.il);
    RowStates folded;
    const auto id = static_cast<size_t>(thread_id);
    for (size_t k = bounds[id]; k < bounds[id + 1]; ++k) {
      const PieceTask& task = plan.tasks[k];
      const QueryTile& tile = plan.tiles[task.tile];
      const QueryRows q = tile_queries(table, in, cache.config().cell_type, tile, sc);
      attend_piece(table, cache, batch, in, tile, q, task.piece, sc);
      states.keep(task, sc.state, dv);
      // The last piece's thread sees every other piece's states (acquire-release on `done`).
      if (done[task.tile].fetch_add(1, std::memory_order_acq_rel) + 1 < task.n_pieces) continue;
      folded.reset(sc.state.rows.size(), dv);
      states.fold(table, &task - (task.piece - task.first_piece), task.n_pieces, dv, folded);
      finish_rows(table, in, tile, dv, folded.rows);
    }
  });
}

// The batch's query rows converted once for a call's split-KV tiles (batch_queries).
struct BatchQueries {
  AlignedVector<uint8_t> q8_0;   // [n_tokens · n_head, q8_0_query_row_bytes(hd)], q8_0 keys
  AlignedVector<uint16_t> bf16;  // [n_tokens · n_head, hd], bf16 keys
};

// The batch's query rows ([n_tokens · n_head] rows of hd). llama.cpp converts every Q row once
// before its q8_0 or bf16 dots; so does minfer, in each tile (tile_queries) unless the plan
// splits tiles into pieces on several threads: then here, on the calling thread (a split plan's
// batch is a few tokens), into `out`.
QueryRows batch_queries(const kernels::KernelTable& table, const KvCache& cache, const Batch& batch,
                        const AttentionArgs& args, bool split, BatchQueries& out) {
  const int64_t hd = cache.head_dim(args.il);
  const int64_t n_rows = batch.n_tokens() * args.n_head;
  const GgmlType cells = cache.config().cell_type;
  if (split && cells == GgmlType::kQ8_0) {
    const int64_t row_bytes = kernels::q8_0_query_row_bytes(hd);
    out.q8_0.resize(static_cast<size_t>(n_rows * row_bytes));
    std::vector<float> rotated;
    quantize_rows(table, args.q, n_rows, hd, cache.k_rotation(), rotated, out.q8_0.data());
    return {args.q, out.q8_0.data(), nullptr, hd, row_bytes};
  }
  if (split && cells == GgmlType::kBF16) {
    out.bf16.resize(static_cast<size_t>(n_rows * hd));
    table.f32_to_bf16(args.q, n_rows * hd, out.bf16.data());
    return {args.q, nullptr, out.bf16.data(), hd, 0};
  }
  return {args.q, nullptr, nullptr, hd, 0};
}

}  // namespace

void attention(const kernels::KernelTable& table, kernels::ThreadPool& pool, const KvCache& cache,
               const Batch& batch, const AttentionArgs& args, const AttentionOptions& options) {
  const KvCacheConfig& c = cache.config();
  if (c.cell_type == GgmlType::kF16 && options.flash_attn_numerics) {
    attention_flash_f16(pool, cache, batch, args);
    return;
  }
  if (c.cell_type == GgmlType::kF32 && args.sinks != nullptr) {
    attention_llama_order(pool, cache, batch, args);
    return;
  }
  const kernels::DequantizeRowFn to_f32 =
      c.cell_type == GgmlType::kF32 ? nullptr
                                    : table.cells_to_f32[static_cast<size_t>(c.cell_type)];
  const AttentionPlan plan =
      plan_attention(batch, args, args.n_head / cache.n_head_kv(args.il), pool.n_threads());
  BatchQueries converted;
  const CallInputs in{args, batch_queries(table, cache, batch, args, plan.split(), converted),
                      to_f32, cache.k_rotation(), cache.v_rotation()};
  if (plan.split()) {
    attention_split(table, pool, cache, batch, in, plan);
    return;
  }
  pool.run([&](int thread_id, int n_threads) {
    TileScratch sc = make_scratch(cache, args.il);
    RowStates folded;
    // Tiles dealt round-robin: a causal prompt's later tiles see more cells, so contiguous
    // ranges would leave the last thread most of the work.
    for (size_t i = static_cast<size_t>(thread_id); i < plan.tiles.size();
         i += static_cast<size_t>(n_threads)) {
      attend_tile(table, cache, batch, in, plan.tiles[i], sc, folded);
    }
  });
}

}  // namespace minfer
