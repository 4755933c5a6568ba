#include "graph/attention.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "core/check.h"
#include "quant/fp16.h"

namespace minfer {

namespace {

// Rows of one cache block as f32: f32 cells read in place, others converted into `scratch` by
// to_f32 (the kernel table's cells_to_f32 for the cell type; nullptr for f32 cells).
const float* block_rows_f32(kernels::DequantizeRowFn to_f32, const uint8_t* cells, int64_t n_rows,
                            int64_t dim, float* scratch) {
  if (to_f32 == nullptr) return reinterpret_cast<const float*>(cells);
  to_f32(cells, scratch, n_rows * dim);
  return scratch;
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

}  // namespace

void attention(const kernels::KernelTable& table, kernels::ThreadPool& pool, const KvCache& cache,
               const Batch& batch, const AttentionArgs& args, const AttentionOptions& options) {
  const KvCacheConfig& c = cache.config();
  const int64_t n_tokens = batch.n_tokens();
  const int64_t head_dim = c.head_dim;
  const int64_t head_dim_v = c.head_dim_v;
  const int64_t group = args.n_head / c.n_head_kv;  // query heads per KV head
  const int64_t block_size = c.block_size;
  const int64_t k_row_bytes = static_cast<int64_t>(cache.k_row_bytes());
  const int64_t v_row_bytes = static_cast<int64_t>(cache.v_row_bytes());
  const bool flash_f16 = c.cell_type == GgmlType::kF16 && options.flash_attn_numerics;
  const kernels::DequantizeRowFn to_f32 =
      c.cell_type == GgmlType::kF32 ? nullptr
                                    : table.cells_to_f32[static_cast<size_t>(c.cell_type)];

  pool.run([&](int thread_id, int n_threads) {
    std::vector<float> k_tile(static_cast<size_t>(block_size * head_dim));    // [block_size, hd]
    std::vector<float> v_tile(static_cast<size_t>(block_size * head_dim_v));  // [block_size, dv]
    std::vector<float> scores(static_cast<size_t>(block_size));               // [block_size]
    std::vector<float> acc(static_cast<size_t>(head_dim_v));                  // [dv]
    std::vector<uint16_t> q16(static_cast<size_t>(head_dim));                 // [hd] f16
    std::vector<uint16_t> vkq16(static_cast<size_t>(head_dim_v));             // [dv] f16
    const auto range =
        kernels::ThreadPool::task_range(n_tokens * args.n_head, thread_id, n_threads);
    for (int64_t task = range.begin; task < range.end; ++task) {
      const int64_t t = task / args.n_head;
      const int64_t h = task % args.n_head;
      const int64_t kv_head = h / group;
      const float* q = args.q + (t * args.n_head + h) * head_dim;
      const int64_t pos = batch.positions[static_cast<size_t>(t)];
      const std::vector<int32_t>& blocks =
          cache.block_table(batch.seq_ids[static_cast<size_t>(t)], args.il);
      // The window: positions first..pos (first = 0 unless the layer slides).
      const int64_t n_cells = pos + 1;
      const int64_t first = args.window > 0 ? std::max<int64_t>(0, pos - args.window + 1) : 0;
      float* out = args.out + (t * args.n_head + h) * head_dim_v;

      if (flash_f16) {
        flash_attn_f16_row(cache, blocks, args.il, kv_head, q, first, n_cells, args.scale, out,
                           q16.data(), vkq16.data());
        continue;
      }
      // Online softmax over the window's blocks: scores of a block, the running max raised if
      // needed (rescaling what is summed so far), then the block's weights and values at once.
      // The first block may start inside the window: its rows before `first` are skipped.
      float max_score = -std::numeric_limits<float>::infinity();
      double sum = 0.0;
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t b = first / block_size; b * block_size < n_cells; ++b) {
        const int64_t skip = std::max<int64_t>(0, first - b * block_size);  // rows before first
        const int64_t n = std::min(block_size, n_cells - b * block_size) - skip;
        const int32_t block = blocks[static_cast<size_t>(b)];
        MINFER_CHECK(block >= 0, "attention reads a released KV block");
        const float* keys =
            block_rows_f32(to_f32, cache.k_block(block, args.il, kv_head) + skip * k_row_bytes, n,
                           head_dim, k_tile.data());
        float block_max = max_score;
        table.dot_rows_f32(keys, n, head_dim, q, head_dim, args.scale, scores.data());
        for (int64_t j = 0; j < n; ++j)
          block_max = std::max(block_max, scores[static_cast<size_t>(j)]);
        if (block_max > max_score) {
          const float rescale = std::exp(max_score - block_max);  // 0 on the first block
          sum *= rescale;
          table.scale(acc.data(), rescale, head_dim_v, acc.data());
          max_score = block_max;
        }
        const float* values =
            block_rows_f32(to_f32, cache.v_block(block, args.il, kv_head) + skip * v_row_bytes, n,
                           head_dim_v, v_tile.data());
        // The block's weights e^(score - max), in place of the scores.
        sum += table.exp_sum(scores.data(), max_score, n, scores.data());
        table.weighted_sum_f32(scores.data(), values, n, head_dim_v, head_dim_v, acc.data());
      }
      table.scale(acc.data(), static_cast<float>(1.0 / sum), head_dim_v, out);
    }
  });
}

}  // namespace minfer
