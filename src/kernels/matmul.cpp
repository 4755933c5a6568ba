#include "kernels/matmul.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "quant/blocks.h"
#include "quant/quant_traits.h"

namespace minfer::kernels {
namespace {

// Rows a thread hands to one tile call, and the token block: a block of activations
// (64 tokens of Q8_K at n_in 4864 is ~350 KB) stays in L2 while the thread's weight rows stream
// past it once per token block.
constexpr int64_t kRowsPerTask = 16;
constexpr int64_t kTokenBlock = 64;
// Row tasks start at x16 row groups (interleave.h).
static_assert(kRowsPerTask % kInterleaveRows == 0);

// Whether threads split the tokens rather than the rows: for a matrix of few rows per thread
// (<= 128) and at least 8 tokens per thread, each thread converts its own tokens and multiplies
// them by all rows in one dispatch. Split by rows, every thread reads every token's activations,
// half of them converted on the other core, and those cross-core line transfers cost a fixed
// ~6 us per call: a 64-token 896 -> 128 Q8_0 GEMM took 40 us split by rows, 31 us by tokens
// (1024 -> 128 Q4_K: 54 and 43 us; 896 -> 512: about equal, so larger matrices keep rows).
bool split_tokens(const ThreadPool& pool, int64_t n_out, int64_t n_tokens) {
  const int64_t n = pool.n_threads();
  return n > 1 && n_out <= 128 * n && n_tokens >= 8 * n;
}

constexpr int slot(GgmlType type) {
  return static_cast<int>(type);
}

// Bytes of one converted activation row: the vec_dot_type blocks, then for Q8_0 the block sums,
// lane starts and f32 scales (see MatmulTileFn); rows are padded to a multiple of 4 bytes.
size_t act_row_bytes_for(GgmlType act_type, int64_t n_in) {
  const QuantTraits& act = *quant_traits(act_type);
  const size_t n_blocks = static_cast<size_t>(n_in / act.block_size);
  size_t bytes = n_blocks * act.bytes_per_block;
  if (act_type == GgmlType::kQ8_0) bytes = q8_0_act_row_bytes(n_blocks);
  return (bytes + 3) / 4 * 4;
}

}  // namespace

bool matmul_supports(GgmlType type) {
  return static_cast<uint32_t>(type) < kMatmulSlots &&
         ref_table.matmul_tile[slot(type)] != nullptr && quant_traits(type) != nullptr;
}

bool matmul_supports_layout(const KernelTable& table, GgmlType type, WeightLayout layout) {
  if (!matmul_supports(type)) return false;
  return layout == WeightLayout::kGguf || table.matmul_tile_x16[slot(type)] != nullptr;
}

size_t matmul_scratch_bytes(GgmlType type, int64_t n_tokens, int64_t n_in) {
  const QuantTraits* traits = quant_traits(type);
  if (traits == nullptr || type == GgmlType::kF32) return 0;
  return static_cast<size_t>(n_tokens) * act_row_bytes_for(traits->vec_dot_type, n_in);
}

namespace {

// How a matmul of w runs: its tile kernel and the activation rows it reads.
struct TilePlan {
  MatmulTileFn tile = nullptr;
  size_t w_row_bytes = 0;
  size_t act_row_bytes = 0;         // one activation row as the tile reads it
  QuantizeRowFn convert = nullptr;  // f32 → that row; nullptr for F32 weights (rows read as is)
  // x16 weights under a table without x16 tiles: each row group goes back to the GGUF layout
  // for `tile` (correct and bit-identical, but slow: repack only for tables that have them).
  bool deinterleave = false;
};

TilePlan plan_tiles(const KernelTable& table, const MatmulWeights& w) {
  MINFER_CHECK(matmul_supports(w.type), "matmul: unsupported weight type");
  const QuantTraits& traits = *quant_traits(w.type);
  MINFER_CHECK(w.n_in % traits.block_size == 0, "matmul: n_in is not a multiple of the block");
  TilePlan p;
  p.w_row_bytes = static_cast<size_t>(w.n_in / traits.block_size) * traits.bytes_per_block;
  p.tile = table.matmul_tile[slot(w.type)];
  if (p.tile == nullptr) p.tile = ref_table.matmul_tile[slot(w.type)];
  if (w.layout == WeightLayout::kRows16) {
    MINFER_CHECK(can_interleave(w.type, w.n_out, w.n_in),
                 "matmul: x16-layout weights of a type or shape the layout cannot take");
    if (table.matmul_tile_x16[slot(w.type)] != nullptr) {
      p.tile = table.matmul_tile_x16[slot(w.type)];
    } else {
      p.deinterleave = true;
    }
  }
  p.act_row_bytes = static_cast<size_t>(w.n_in) * sizeof(float);
  if (w.type != GgmlType::kF32) {
    const GgmlType act_type = traits.vec_dot_type;
    p.act_row_bytes = act_row_bytes_for(act_type, w.n_in);
    p.convert = table.quantize_act[slot(act_type)];
    if (p.convert == nullptr) p.convert = ref_table.quantize_act[slot(act_type)];
    if (p.convert == nullptr) p.convert = quant_traits(act_type)->from_float;
    if (act_type == GgmlType::kQ8_0) {
      p.convert = table.quantize_act_q8_0_sums != nullptr ? table.quantize_act_q8_0_sums
                                                          : ref_table.quantize_act_q8_0_sums;
    }
  }
  return p;
}

// Converts tokens [begin, end) of x into act (no-op for F32 weights).
void convert_rows(const TilePlan& p, const float* x, int64_t n_in, uint8_t* act, int64_t begin,
                  int64_t end) {
  if (p.convert == nullptr) return;
  for (int64_t t = begin; t < end; ++t) {
    p.convert(x + t * n_in, act + static_cast<size_t>(t) * p.act_row_bytes, n_in);
  }
}

// run_tiles of x16 weights without an x16 tile: each 16-row group of [row_begin, row_end)
// deinterleaved into a per-thread buffer, then the GGUF-layout tile on it.
void run_tiles_deinterleaved(const TilePlan& p, const MatmulWeights& w, const uint8_t* act,
                             float* y, int64_t row_begin, int64_t row_end, int64_t t_begin,
                             int64_t t_end) {
  thread_local std::vector<uint8_t> rows;  // [16][row bytes]
  rows.resize(static_cast<size_t>(kInterleaveRows) * p.w_row_bytes);
  const auto* w_bytes = static_cast<const uint8_t*>(w.data);
  for (int64_t g = row_begin; g < row_end; g += kInterleaveRows) {
    for (int64_t r = 0; r < kInterleaveRows; ++r) {
      deinterleave_row(w.type, w_bytes, w.n_in, g + r, rows.data() + r * p.w_row_bytes);
    }
    for (int64_t t0 = t_begin; t0 < t_end; t0 += kTokenBlock) {
      const int64_t nt = t_end - t0 < kTokenBlock ? t_end - t0 : kTokenBlock;
      p.tile(w.n_in, rows.data(), p.w_row_bytes, kInterleaveRows,
             act + static_cast<size_t>(t0) * p.act_row_bytes, p.act_row_bytes, nt,
             y + t0 * w.n_out + g, w.n_out);
    }
  }
}

// Rows [row_begin, row_end) for tokens [t_begin, t_end), kTokenBlock tokens per tile call.
void run_tiles(const TilePlan& p, const MatmulWeights& w, const uint8_t* act, float* y,
               int64_t row_begin, int64_t row_end, int64_t t_begin, int64_t t_end) {
  if (p.deinterleave) {
    run_tiles_deinterleaved(p, w, act, y, row_begin, row_end, t_begin, t_end);
    return;
  }
  const auto* w_bytes = static_cast<const uint8_t*>(w.data);
  for (int64_t t0 = t_begin; t0 < t_end; t0 += kTokenBlock) {
    const int64_t nt = t_end - t0 < kTokenBlock ? t_end - t0 : kTokenBlock;
    p.tile(w.n_in, w_bytes + static_cast<size_t>(row_begin) * p.w_row_bytes, p.w_row_bytes,
           row_end - row_begin, act + static_cast<size_t>(t0) * p.act_row_bytes, p.act_row_bytes,
           nt, y + t0 * w.n_out + row_begin, w.n_out);
  }
}

// Every row for every token of converted act, weight rows split over the pool.
void run_rows(ThreadPool& pool, const TilePlan& p, const MatmulWeights& w, const uint8_t* act,
              int64_t n_tokens, float* y) {
  const int64_t n_tasks = (w.n_out + kRowsPerTask - 1) / kRowsPerTask;
  pool.parallel_for(n_tasks, [&](int64_t begin, int64_t end) {
    run_tiles(p, w, act, y, begin * kRowsPerTask,
              end * kRowsPerTask < w.n_out ? end * kRowsPerTask : w.n_out, 0, n_tokens);
  });
}

}  // namespace

size_t matmul_act_row_bytes(GgmlType type, int64_t n_in) {
  const QuantTraits* traits = quant_traits(type);
  if (traits == nullptr || type == GgmlType::kF32) return static_cast<size_t>(n_in) * sizeof(float);
  return act_row_bytes_for(traits->vec_dot_type, n_in);
}

bool matmul_shares_act(GgmlType a, GgmlType b) {
  return matmul_supports(a) && matmul_supports(b) &&
         quant_traits(a)->vec_dot_type == quant_traits(b)->vec_dot_type;
}

void matmul_convert(const KernelTable& table, ThreadPool& pool, const MatmulWeights& w,
                    const float* x, int64_t n_tokens, std::span<uint8_t> act) {
  const TilePlan p = plan_tiles(table, w);
  MINFER_CHECK(act.size() >= static_cast<size_t>(n_tokens) * p.act_row_bytes,
               "matmul_convert: act too small");
  if (p.convert == nullptr) {
    std::memcpy(act.data(), x, static_cast<size_t>(n_tokens) * p.act_row_bytes);
    return;
  }
  pool.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
    convert_rows(p, x, w.n_in, act.data(), begin, end);
  });
}

void matmul_converted(const KernelTable& table, ThreadPool& pool, const MatmulWeights& w,
                      const uint8_t* act, int64_t n_tokens, float* y) {
  const TilePlan p = plan_tiles(table, w);
  if (n_tokens <= 0 || w.n_out <= 0) return;
  if (split_tokens(pool, w.n_out, n_tokens)) {
    pool.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
      run_tiles(p, w, act, y, 0, w.n_out, begin, end);
    });
    return;
  }
  run_rows(pool, p, w, act, n_tokens, y);
}

void matmul(const KernelTable& table, ThreadPool& pool, const MatmulWeights& w, const float* x,
            int64_t n_tokens, float* y, std::span<uint8_t> scratch) {
  const TilePlan p = plan_tiles(table, w);
  MINFER_CHECK(scratch.size() >= matmul_scratch_bytes(w.type, n_tokens, w.n_in),
               "matmul: scratch too small");
  if (n_tokens <= 0 || w.n_out <= 0) return;
  // Activations in the vec_dot_type: x itself for F32, else rows converted into scratch.
  const uint8_t* act = p.convert == nullptr ? reinterpret_cast<const uint8_t*>(x) : scratch.data();
  if (split_tokens(pool, w.n_out, n_tokens)) {
    pool.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
      convert_rows(p, x, w.n_in, scratch.data(), begin, end);
      run_tiles(p, w, act, y, 0, w.n_out, begin, end);
    });
    return;
  }
  if (p.convert != nullptr) {
    pool.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
      convert_rows(p, x, w.n_in, scratch.data(), begin, end);
    });
  }
  run_rows(pool, p, w, act, n_tokens, y);
}

void matmul_shared_input(const KernelTable& table, ThreadPool& pool,
                         std::span<const MatmulWeights> ws, const float* x, int64_t n_tokens,
                         std::span<float* const> ys, std::span<uint8_t> scratch) {
  const size_t n = ws.size();
  MINFER_CHECK(n >= 1 && n == ys.size() && n <= kMaxSharedInput,
               "matmul_shared_input: 1 to 4 weights, one output each");
  bool any_split = false;
  for (const MatmulWeights& w : ws) {
    MINFER_CHECK(w.n_in == ws[0].n_in && matmul_shares_act(w.type, ws[0].type),
                 "matmul_shared_input: weights must read the same converted rows");
    any_split = any_split || split_tokens(pool, w.n_out, n_tokens);
  }
  // Matrices whose threads split the tokens convert their own tokens: one matmul each.
  if (any_split || n == 1) {
    for (size_t i = 0; i < n; ++i) matmul(table, pool, ws[i], x, n_tokens, ys[i], scratch);
    return;
  }
  MINFER_CHECK(scratch.size() >= matmul_scratch_bytes(ws[0].type, n_tokens, ws[0].n_in),
               "matmul_shared_input: scratch too small");
  if (n_tokens <= 0) return;
  std::array<TilePlan, kMaxSharedInput> plans;
  // first_task[i]: matrix i's first task in the concatenation of every matrix's row tasks.
  std::array<int64_t, kMaxSharedInput + 1> first_task{};
  for (size_t i = 0; i < n; ++i) {
    plans[i] = plan_tiles(table, ws[i]);
    first_task[i + 1] = first_task[i] + (ws[i].n_out + kRowsPerTask - 1) / kRowsPerTask;
  }
  const TilePlan& p0 = plans[0];
  const uint8_t* act = p0.convert == nullptr ? reinterpret_cast<const uint8_t*>(x) : scratch.data();
  if (p0.convert != nullptr) {
    pool.parallel_for(n_tokens, [&](int64_t begin, int64_t end) {
      convert_rows(p0, x, ws[0].n_in, scratch.data(), begin, end);
    });
  }
  pool.parallel_for(first_task[n], [&](int64_t begin, int64_t end) {
    for (size_t i = 0; i < n; ++i) {
      const int64_t b = std::max(begin, first_task[i]) - first_task[i];
      const int64_t e = std::min(end, first_task[i + 1]) - first_task[i];
      if (b >= e) continue;
      run_tiles(plans[i], ws[i], act, ys[i], b * kRowsPerTask,
                std::min(e * kRowsPerTask, ws[i].n_out), 0, n_tokens);
    }
  });
}

}  // namespace minfer::kernels
