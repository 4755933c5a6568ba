#include "graph/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "quant/quantize.h"

namespace minfer {

namespace {

// Rows of one cache block as f32: the block itself for f32 cells, else converted into `scratch`.
const float* block_rows_f32(KvCellType type, const uint8_t* cells, int64_t n_rows, int64_t dim,
                            float* scratch) {
  switch (type) {
    case KvCellType::kF32:
      return reinterpret_cast<const float*>(cells);
    case KvCellType::kF16:
      fp16_to_fp32_row(reinterpret_cast<const uint16_t*>(cells), scratch, n_rows * dim);
      return scratch;
    case KvCellType::kQ8_0:
      dequantize_row_q8_0(reinterpret_cast<const BlockQ8_0*>(cells), scratch, n_rows * dim);
      return scratch;
  }
  return nullptr;
}

}  // namespace

void attention(const kernels::KernelTable& table, kernels::ThreadPool& pool, const KvCache& cache,
               const Batch& batch, const AttentionArgs& args) {
  const KvCacheConfig& c = cache.config();
  const int64_t n_tokens = batch.n_tokens();
  const int64_t head_dim = c.head_dim;
  const int64_t head_dim_v = c.head_dim_v;
  const int64_t group = args.n_head / c.n_head_kv;  // query heads per KV head
  const int64_t block_size = c.block_size;

  pool.run([&](int thread_id, int n_threads) {
    // Per-thread scratch: one block of keys and values as f32, the block's scores, and the
    // output accumulator.
    std::vector<float> k_tile(static_cast<size_t>(block_size * head_dim));    // [block_size, hd]
    std::vector<float> v_tile(static_cast<size_t>(block_size * head_dim_v));  // [block_size, dv]
    std::vector<float> scores(static_cast<size_t>(block_size));               // [block_size]
    std::vector<float> acc(static_cast<size_t>(head_dim_v));                  // [dv]
    const auto range =
        kernels::ThreadPool::task_range(n_tokens * args.n_head, thread_id, n_threads);
    for (int64_t task = range.begin; task < range.end; ++task) {
      const int64_t t = task / args.n_head;
      const int64_t h = task % args.n_head;
      const int64_t kv_head = h / group;
      const float* q = args.q + (t * args.n_head + h) * head_dim;
      const int64_t pos = batch.positions[static_cast<size_t>(t)];
      const std::vector<int32_t>& blocks = cache.block_table(batch.seq_ids[static_cast<size_t>(t)]);

      double max_score = -std::numeric_limits<double>::infinity();
      double sum = 0.0;
      std::fill(acc.begin(), acc.end(), 0.0f);
      const int64_t n_cells = pos + 1;  // the window: positions 0..pos
      for (int64_t b = 0; b * block_size < n_cells; ++b) {
        const int64_t n = std::min(block_size, n_cells - b * block_size);
        const int32_t block = blocks[static_cast<size_t>(b)];
        const float* keys = block_rows_f32(c.cell_type, cache.k_block(block, args.il, kv_head), n,
                                           head_dim, k_tile.data());
        double block_max = max_score;
        for (int64_t j = 0; j < n; ++j) {
          scores[static_cast<size_t>(j)] =
              table.dot_f32(q, keys + j * head_dim, head_dim) * args.scale;
          block_max = std::max(block_max, static_cast<double>(scores[static_cast<size_t>(j)]));
        }
        // Rescale what was accumulated under the old max.
        if (block_max > max_score) {
          const double rescale = std::exp(max_score - block_max);  // 0 on the first block
          sum *= rescale;
          table.scale(acc.data(), static_cast<float>(rescale), head_dim_v, acc.data());
          max_score = block_max;
        }
        const float* values = block_rows_f32(c.cell_type, cache.v_block(block, args.il, kv_head), n,
                                             head_dim_v, v_tile.data());
        for (int64_t j = 0; j < n; ++j) {
          const double w =
              std::exp(static_cast<double>(scores[static_cast<size_t>(j)]) - max_score);
          sum += w;
          table.axpy_f32(static_cast<float>(w), values + j * head_dim_v, head_dim_v, acc.data());
        }
      }
      float* out = args.out + (t * args.n_head + h) * head_dim_v;
      table.scale(acc.data(), static_cast<float>(1.0 / sum), head_dim_v, out);
    }
  });
}

}  // namespace minfer
