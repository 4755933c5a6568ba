// Attention over the paged KV cache against a hand-computed example: grouped-query heads
// (n_head 4, n_head_kv 2), two sequences in one batch, blocks of 4 positions cut by the causal
// window, for every cell type and every kernel table this CPU runs.
#include "graph/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <random>
#include <vector>

#include "kernels/kernel_test_util.h"
#include "minfer/defaults.h"
#include "quant/act_quant.h"
#include "quant/fp16.h"
#include "quant/quantize.h"

namespace minfer {
namespace {

constexpr int64_t kHeadDim = 32;  // one q8_0 block per row
constexpr int64_t kNHead = 4;
constexpr int64_t kNHeadKv = 2;  // query heads 0, 1 read KV head 0; heads 2, 3 KV head 1
constexpr int64_t kBlockSize = 4;
// The cell types every path is checked on.
constexpr GgmlType kCellTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16,
                                   GgmlType::kQ8_0};

// The batch: sequence 0's positions 3, 4, 5 (its window crosses from block 0 into block 1) and
// sequence 1's positions 0, 1, interleaved. Sequence 0 also holds cells 0..2 from an earlier
// step and cells 6, 7 (the rest of block 1), sequence 1 cells 2, 3 (the rest of its block 0):
// left over from a rolled-back draft, behind every window of this batch.
struct Token {
  int32_t seq;
  int32_t pos;
};
constexpr Token kTokens[] = {{0, 3}, {1, 0}, {0, 4}, {1, 1}, {0, 5}};
constexpr int64_t kNTokens = std::size(kTokens);
constexpr int32_t kCells[] = {8, 4};    // cells stored per sequence
constexpr int32_t kLastPos[] = {5, 1};  // the last position per sequence in the batch

// With scale 1, query dim 0 = c (1 for heads 0 and 2, 2 for heads 1 and 3, 0 elsewhere) and key
// dim 0 = ln(pos + 1) on KV head 0, -ln(pos + 1) on KV head 1, the score of cell j is
// ±c·ln(j + 1): weights ∝ (j + 1)^c for heads 0, 1 and (j + 1)^-c for heads 2, 3. Value dim 0 is
// the position, plus 10 in sequence 1, so output dim 0 is (10 +) Σ j w_j / Σ w_j:
constexpr double kHandDim0[kNTokens][kNHead] = {
    {2.0, 7.0 / 3, 23.0 / 25, 19.0 / 41},              // seq 0, pos 3: cells 0..3
    {10.0, 10.0, 10.0, 10.0},                          // seq 1, pos 0: cell 0 alone
    {8.0 / 3, 34.0 / 11, 163.0 / 137, 2951.0 / 5269},  // seq 0, pos 4: cells 0..4
    {10 + 2.0 / 3, 10 + 4.0 / 5, 10 + 1.0 / 3, 10.2},  // seq 1, pos 1: cells 0, 1
    {10.0 / 3, 50.0 / 13, 71.0 / 49, 493.0 / 767},     // seq 0, pos 5: cells 0..5
};
// The other key dims are noise the queries do not see; the other value dims are noise the
// reference follows. The left-over cells' keys score 50 · c (they would take all the weight)
// and their values are NaN (1000 for q8_0, which holds finite values only): a weight that is
// not exactly 0 would show.

struct Example {
  std::vector<float> q;               // [n_tokens, n_head * head_dim]
  std::vector<std::vector<float>> k;  // [seq] -> [cells, n_head_kv * head_dim]
  std::vector<std::vector<float>> v;  // [seq] -> [cells, n_head_kv * head_dim]
};

Example make_example(GgmlType cell_type) {
  std::mt19937 rng(42);
  std::uniform_real_distribution<float> noise(-0.5f, 0.5f);
  Example e;
  e.q.assign(static_cast<size_t>(kNTokens * kNHead * kHeadDim), 0.0f);
  for (int64_t t = 0; t < kNTokens; ++t) {
    for (int64_t h = 0; h < kNHead; ++h)
      e.q[static_cast<size_t>((t * kNHead + h) * kHeadDim)] = h % 2 == 0 ? 1.0f : 2.0f;
  }
  const float poison =
      cell_type == GgmlType::kQ8_0 ? 1000.0f : std::numeric_limits<float>::quiet_NaN();
  for (int32_t seq = 0; seq < 2; ++seq) {
    std::vector<float>& k =
        e.k.emplace_back(static_cast<size_t>(kCells[seq] * kNHeadKv * kHeadDim));
    std::vector<float>& v = e.v.emplace_back(k.size());
    for (int32_t pos = 0; pos < kCells[seq]; ++pos) {
      const bool left_over = pos > kLastPos[seq];
      for (int64_t kv = 0; kv < kNHeadKv; ++kv) {
        float* key = k.data() + (pos * kNHeadKv + kv) * kHeadDim;
        float* value = v.data() + (pos * kNHeadKv + kv) * kHeadDim;
        for (int64_t d = 0; d < kHeadDim; ++d) {
          key[d] = noise(rng);
          value[d] = left_over ? poison : noise(rng);
        }
        const float log_pos = std::log(static_cast<float>(pos + 1));
        key[0] = left_over ? 50.0f : (kv == 0 ? log_pos : -log_pos);
        if (!left_over) value[0] = static_cast<float>(pos + 10 * seq);
      }
    }
  }
  return e;
}

// A row as the cells hold it: f16-, bf16- or q8_0-rounded by quant/'s reference conversions.
std::vector<float> as_cells(GgmlType type, const float* x) {
  std::vector<float> out(x, x + kHeadDim);
  if (type == GgmlType::kF16) {
    for (float& y : out) y = fp16_to_fp32(fp32_to_fp16(y));
  } else if (type == GgmlType::kBF16) {
    for (float& y : out) y = bf16_to_fp32(fp32_to_bf16(y));
  } else if (type == GgmlType::kQ8_0) {
    BlockQ8_0 block;
    quantize_row_q8_0(x, &block, kHeadDim);
    dequantize_row_q8_0(&block, out.data(), kHeadDim);
  }
  return out;
}

// A query row as the keys' dots see it: over q8_0 cells quantized as llama.cpp quantizes Q for its
// int8 dots (quant/act_quant.h), over bf16 cells rounded to bf16 (their dot products take the
// query rows converted, as llama.cpp's), else as it is.
std::vector<float> as_query(GgmlType type, const float* q) {
  if (type == GgmlType::kBF16) return as_cells(type, q);
  std::vector<float> out(q, q + kHeadDim);
  if (type == GgmlType::kQ8_0) {
    BlockQ8_0 block;
    quantize_act_q8_0(q, &block, kHeadDim);
    dequantize_row_q8_0(&block, out.data(), kHeadDim);
  }
  return out;
}

// softmax(q·kᵀ) · v over cells 0..pos of the token's sequence (only those > pos - window when
// window > 0), in double, on the rounded cells and query (as_query); with sinks, e^(sinks[h] -
// max) joins the sum.
std::vector<double> reference(const Example& e, GgmlType type, int64_t t, int64_t h,
                              int64_t window = 0, const float* sinks = nullptr) {
  const Token token = kTokens[t];
  const int64_t kv = h / (kNHead / kNHeadKv);
  const std::vector<float> q = as_query(type, e.q.data() + (t * kNHead + h) * kHeadDim);
  std::vector<double> scores;
  std::vector<std::vector<float>> values;
  const int32_t first = window > 0 ? std::max(0, token.pos - static_cast<int32_t>(window) + 1) : 0;
  for (int32_t j = first; j <= token.pos; ++j) {
    const size_t row = static_cast<size_t>((j * kNHeadKv + kv) * kHeadDim);
    const std::vector<float> key = as_cells(type, e.k[static_cast<size_t>(token.seq)].data() + row);
    values.push_back(as_cells(type, e.v[static_cast<size_t>(token.seq)].data() + row));
    double s = 0.0;
    for (int64_t d = 0; d < kHeadDim; ++d)
      s += static_cast<double>(q[static_cast<size_t>(d)]) * key[static_cast<size_t>(d)];
    scores.push_back(s);
  }
  double max = -std::numeric_limits<double>::infinity();
  for (const double s : scores) max = std::max(max, s);
  if (sinks != nullptr) max = std::max(max, static_cast<double>(sinks[h]));
  std::vector<double> out(kHeadDim, 0.0);
  double sum = sinks != nullptr ? std::exp(sinks[h] - max) : 0.0;
  for (size_t j = 0; j < scores.size(); ++j) {
    const double w = std::exp(scores[j] - max);
    sum += w;
    for (int64_t d = 0; d < kHeadDim; ++d)
      out[static_cast<size_t>(d)] += w * values[j][static_cast<size_t>(d)];
  }
  for (double& x : out) x /= sum;
  return out;
}

// One layer of kNHeadKv heads of kHeadDim, n_ctx positions in blocks of block_size.
KvCacheConfig cache_config(GgmlType type, int64_t block_size, int64_t n_ctx) {
  KvCacheConfig c;
  c.n_layer = 1;
  c.n_head_kv = kNHeadKv;
  c.head_dim = kHeadDim;
  c.head_dim_v = kHeadDim;
  c.cell_type = type;
  c.block_size = block_size;
  c.n_ctx = n_ctx;
  c.max_blocks = n_ctx / block_size;
  return c;
}

// Stores the example through `table` into a fresh cache and runs attention over the batch on
// n_threads threads: [n_tokens, n_head * head_dim].
std::vector<float> run_attention(const Example& e, GgmlType type, const kernels::KernelTable& table,
                                 int n_threads, const AttentionOptions& options = {},
                                 int64_t window = 0, const float* sinks = nullptr) {
  auto cache = KvCache::create(cache_config(type, kBlockSize, 16));
  EXPECT_TRUE(cache.is_ok()) << cache.status().message();
  KvCache& kv = **cache;
  for (int32_t seq = 0; seq < 2; ++seq) {
    EXPECT_TRUE(kv.reserve(seq, kCells[seq]).is_ok());
    for (int32_t pos = 0; pos < kCells[seq]; ++pos) {
      const size_t row = static_cast<size_t>(pos * kNHeadKv * kHeadDim);
      kv.store(table, 0, seq, pos, e.k[static_cast<size_t>(seq)].data() + row,
               e.v[static_cast<size_t>(seq)].data() + row);
    }
  }
  Batch batch;
  for (const Token& token : kTokens) batch.add(0, token.pos, token.seq, true);
  std::vector<float> out(static_cast<size_t>(kNTokens * kNHead * kHeadDim));
  kernels::ThreadPool pool(n_threads);
  attention(table, pool, kv, batch, {e.q.data(), out.data(), 0, kNHead, 1.0f, window, sinks},
            options);
  return out;
}

// Every output element within `tol` of the double reference (tol · (1 + |ref|)).
void expect_matches_reference(const std::vector<float>& out, const Example& e, GgmlType type,
                              double tol, const char* what, int64_t window = 0,
                              const float* sinks = nullptr) {
  for (int64_t t = 0; t < kNTokens; ++t) {
    for (int64_t h = 0; h < kNHead; ++h) {
      const std::vector<double> want = reference(e, type, t, h, window, sinks);
      for (int64_t d = 0; d < kHeadDim; ++d) {
        const double got = out[static_cast<size_t>((t * kNHead + h) * kHeadDim + d)];
        const double ref = want[static_cast<size_t>(d)];
        ASSERT_NEAR(got, ref, tol * (1.0 + std::fabs(ref)))
            << what << " " << ggml_type_info(type).name << ": token " << t << " (seq "
            << kTokens[t].seq << ", pos " << kTokens[t].pos << ") head " << h << " dim " << d;
      }
    }
  }
}

TEST(Attention, F32CellsGiveTheHandComputedWeights) {
  const Example e = make_example(GgmlType::kF32);
  for (const kernels::KernelTable* table : kernels::test::all_tables()) {
    const std::vector<float> out = run_attention(e, GgmlType::kF32, *table, 3);
    for (int64_t t = 0; t < kNTokens; ++t) {
      for (int64_t h = 0; h < kNHead; ++h) {
        // ln(j + 1) rounded to float and a few float steps: a few ulps of the result.
        EXPECT_NEAR(out[static_cast<size_t>((t * kNHead + h) * kHeadDim)], kHandDim0[t][h],
                    2e-6 * (1.0 + kHandDim0[t][h]))
            << table->name << " token " << t << " head " << h;
      }
    }
    expect_matches_reference(out, e, GgmlType::kF32, 1e-6, table->name);
  }
}

// f16, bf16 and q8_0 cells: the same attention on the rounded keys and values (and, for bf16, the
// query rounded as it is scored). Left-over cells (NaN
// values for f32 / f16) never reach an output: their weight is exactly 0.
TEST(Attention, EveryCellTypeMatchesTheReferenceOnItsRoundedCells) {
  for (const GgmlType type : kCellTypes) {
    const Example e = make_example(type);
    for (const kernels::KernelTable* table : kernels::test::all_tables()) {
      const std::vector<float> out = run_attention(e, type, *table, 3);
      expect_matches_reference(out, e, type, 1e-6, table->name);
      // One worker per (token, head): the thread count changes no bit (invariant 5).
      const std::vector<float> one_thread = run_attention(e, type, *table, 1);
      EXPECT_EQ(0, std::memcmp(out.data(), one_thread.data(), out.size() * sizeof(float)))
          << table->name << " " << ggml_type_info(type).name;
    }
  }
}

// llama.cpp's flash-attention numerics (an f16 accumulator) over f16 cells: the same attention
// within the f16 accumulator's rounding, left-over cells excluded; other cell types ignore it.
TEST(Attention, FlashAttentionNumericsIsAnOptionForF16Cells) {
  const AttentionOptions flash{.flash_attn_numerics = true};
  const Example e16 = make_example(GgmlType::kF16);
  const std::vector<float> out = run_attention(e16, GgmlType::kF16, kernels::ref_table, 2, flash);
  expect_matches_reference(out, e16, GgmlType::kF16, 4e-3, "flash");
  const std::vector<float> plain = run_attention(e16, GgmlType::kF16, kernels::ref_table, 2);
  EXPECT_NE(0, std::memcmp(out.data(), plain.data(), out.size() * sizeof(float)));

  const Example e32 = make_example(GgmlType::kF32);
  const std::vector<float> f32_flash =
      run_attention(e32, GgmlType::kF32, kernels::ref_table, 2, flash);
  const std::vector<float> f32_plain = run_attention(e32, GgmlType::kF32, kernels::ref_table, 2);
  EXPECT_EQ(0, std::memcmp(f32_flash.data(), f32_plain.data(), f32_flash.size() * sizeof(float)));
}

// Attention sinks (gpt-oss): head h's logit sinks[h] joins every softmax denominator of the head
// and carries no value, in the plain paths (every cell type and table) and the flash one. Over
// f16 / q8_0 cells a sink far below every score changes no bit of the plain path; over f32 cells
// sinks take llama.cpp's order (kernels::attend_row_llama_order, plain C++): the same bits on
// every table and at every thread count.
TEST(Attention, SinksJoinTheSoftmaxDenominator) {
  const float sinks[kNHead] = {0.5f, 3.0f, -1.0f, 60.0f};
  const float no_weight[kNHead] = {-1e30f, -1e30f, -1e30f, -1e30f};
  for (const GgmlType type : kCellTypes) {
    const Example e = make_example(type);
    std::vector<float> first_table;  // f32 cells: the first table's output with sinks
    for (const kernels::KernelTable* table : kernels::test::all_tables()) {
      const std::vector<float> out = run_attention(e, type, *table, 2, {}, 0, sinks);
      expect_matches_reference(out, e, type, 1e-6, table->name, 0, sinks);
      const std::vector<float> windowed = run_attention(e, type, *table, 3, {}, 3, sinks);
      expect_matches_reference(windowed, e, type, 1e-6, table->name, 3, sinks);
      const std::vector<float> unseen = run_attention(e, type, *table, 2, {}, 0, no_weight);
      if (type != GgmlType::kF32) {
        const std::vector<float> plain = run_attention(e, type, *table, 2);
        EXPECT_EQ(0, std::memcmp(plain.data(), unseen.data(), plain.size() * sizeof(float)))
            << table->name << " " << ggml_type_info(type).name;
        continue;
      }
      expect_matches_reference(unseen, e, type, 1e-6, table->name);
      const std::vector<float> one_thread = run_attention(e, type, *table, 1, {}, 0, sinks);
      EXPECT_EQ(0, std::memcmp(out.data(), one_thread.data(), out.size() * sizeof(float)))
          << table->name;
      if (first_table.empty()) first_table = out;
      EXPECT_EQ(0, std::memcmp(out.data(), first_table.data(), out.size() * sizeof(float)))
          << table->name;
    }
  }
  const AttentionOptions flash{.flash_attn_numerics = true};
  const Example e16 = make_example(GgmlType::kF16);
  const std::vector<float> out =
      run_attention(e16, GgmlType::kF16, kernels::ref_table, 2, flash, 0, sinks);
  expect_matches_reference(out, e16, GgmlType::kF16, 4e-3, "flash", 0, sinks);
}

// A sliding window of 3: the token at position p sees p-2..p only (seq 0's positions 3, 4, 5
// start their window inside block 0 or at block 1's first cell), in the plain and the flash path.
TEST(Attention, SlidingWindowSeesOnlyTheLastWindowPositions) {
  constexpr int64_t kWindow = 3;
  for (const GgmlType type : kCellTypes) {
    const Example e = make_example(type);
    for (const kernels::KernelTable* table : kernels::test::all_tables()) {
      const std::vector<float> out = run_attention(e, type, *table, 2, {}, kWindow);
      expect_matches_reference(out, e, type, 1e-6, table->name, kWindow);
      // The window changes what the later tokens see.
      const std::vector<float> full = run_attention(e, type, *table, 2);
      EXPECT_NE(0, std::memcmp(out.data(), full.data(), out.size() * sizeof(float)));
    }
  }
  const AttentionOptions flash{.flash_attn_numerics = true};
  const Example e16 = make_example(GgmlType::kF16);
  const std::vector<float> out =
      run_attention(e16, GgmlType::kF16, kernels::ref_table, 2, flash, kWindow);
  expect_matches_reference(out, e16, GgmlType::kF16, 4e-3, "flash", kWindow);
}

// ---------------------------------------------------------------------------------------------
// Long windows: many cache blocks of the default size (32 positions), chunks of the walk (128
// cells each) and three pieces (512 cells each), so a softmax step spans blocks, the walk crosses
// chunk and piece edges, prefetches the block ahead and raises the running max in later chunks,
// the tokens of one tile share a chunk's call with their own last cells (the later cells masked),
// and a decode step's pieces go to several threads (split-KV) and are folded.
// ---------------------------------------------------------------------------------------------

constexpr int64_t kLongCells[] = {1100, 100};  // positions stored per sequence
constexpr int64_t kLongNHead = 14;             // Qwen2.5-0.5B's grouping: 7 query heads per KV head

struct LongCache {
  std::unique_ptr<KvCache> cache;
  std::vector<std::vector<float>> k, v;  // [seq] -> [cells, n_head_kv * head_dim], as stored
};

// Keys drawn with a scale that grows along the positions, so later chunks hold higher scores
// and the running max rises chunk after chunk. Reserved one sequence after the other, each
// sequence's blocks are consecutive (one run per KV head, read in one call per chunk); with
// `interleaved`, block by block in turn, sequence 0's first blocks are every other one.
LongCache long_cache(GgmlType type, const kernels::KernelTable& table, bool interleaved = false) {
  auto cache = KvCache::create(cache_config(type, kDefaultBlockSize, 2048));
  EXPECT_TRUE(cache.is_ok()) << cache.status().message();
  LongCache out{std::move(*cache), {}, {}};
  const int64_t bs = out.cache->config().block_size;
  for (int64_t n = bs; interleaved && n < kLongCells[0] + bs; n += bs) {
    for (int32_t seq = 0; seq < 2; ++seq) {
      EXPECT_TRUE(out.cache->reserve(seq, std::min(n, kLongCells[seq])).is_ok());
    }
  }
  for (int32_t seq = 0; seq < 2; ++seq) {
    const int64_t n = kLongCells[seq] * kNHeadKv * kHeadDim;
    std::vector<float>& k = out.k.emplace_back(kernels::test::random_floats(n, 10 + seq));
    std::vector<float>& v = out.v.emplace_back(kernels::test::random_floats(n, 20 + seq));
    for (int64_t i = 0; i < n; ++i) k[static_cast<size_t>(i)] *= 0.2f + 0.004f * (i / kHeadDim);
    EXPECT_TRUE(out.cache->reserve(seq, kLongCells[seq]).is_ok());
    for (int32_t pos = 0; pos < kLongCells[seq]; ++pos) {
      const size_t row = static_cast<size_t>(pos * kNHeadKv * kHeadDim);
      out.cache->store(table, 0, seq, pos, k.data() + row, v.data() + row);
    }
  }
  return out;
}

// Attention of the given (seq, pos) tokens in one batch: [tokens, n_head * head_dim].
std::vector<float> run_long(const kernels::KernelTable& table, const LongCache& lc,
                            const std::vector<Token>& tokens, const std::vector<float>& q,
                            int n_threads, int64_t window) {
  Batch batch;
  for (const Token& token : tokens) batch.add(0, token.pos, token.seq, true);
  std::vector<float> out(tokens.size() * static_cast<size_t>(kLongNHead * kHeadDim));
  kernels::ThreadPool pool(n_threads);
  attention(table, pool, *lc.cache, batch, {q.data(), out.data(), 0, kLongNHead, 0.125f, window});
  return out;
}

// softmax(q·kᵀ · scale) · v in double on the cells as stored (and the query as_query), for one
// output row.
std::vector<double> long_reference(GgmlType type, const LongCache& lc, Token token,
                                   const float* q_row, int64_t kv, int64_t window) {
  const std::vector<float> q = as_query(type, q_row);
  const int64_t first = window > 0 ? std::max<int64_t>(0, token.pos - window + 1) : 0;
  std::vector<double> scores;
  double max = -std::numeric_limits<double>::infinity();
  for (int64_t j = first; j <= token.pos; ++j) {
    const size_t row = static_cast<size_t>((j * kNHeadKv + kv) * kHeadDim);
    const std::vector<float> key =
        as_cells(type, lc.k[static_cast<size_t>(token.seq)].data() + row);
    double s = 0.0;
    for (int64_t d = 0; d < kHeadDim; ++d)
      s += static_cast<double>(q[static_cast<size_t>(d)]) * key[static_cast<size_t>(d)];
    scores.push_back(s * 0.125);
    max = std::max(max, scores.back());
  }
  std::vector<double> out(kHeadDim, 0.0);
  double sum = 0.0;
  for (int64_t j = first; j <= token.pos; ++j) {
    const double w = std::exp(scores[static_cast<size_t>(j - first)] - max);
    const size_t row = static_cast<size_t>((j * kNHeadKv + kv) * kHeadDim);
    const std::vector<float> value =
        as_cells(type, lc.v[static_cast<size_t>(token.seq)].data() + row);
    sum += w;
    for (int64_t d = 0; d < kHeadDim; ++d)
      out[static_cast<size_t>(d)] += w * value[static_cast<size_t>(d)];
  }
  for (double& x : out) x /= sum;
  return out;
}

// A prompt chunk of sequence 0 (positions 1030..1099, crossing blocks 32..34 and the edge of the
// third piece at 1024, in runs of up to 7 tokens) interleaved with sequence 1's last positions
// 90..99.
std::vector<Token> long_batch() {
  std::vector<Token> tokens;
  for (int32_t pos = 1030; pos < 1100; ++pos) {
    tokens.push_back({0, pos});
    if (pos % 7 == 0 && 90 + (pos - 1030) / 7 < 100) tokens.push_back({1, 90 + (pos - 1030) / 7});
  }
  return tokens;
}

// Every row matches the double reference; the same rows computed one token at a time (as
// decode steps) and at 1, 2 or 3 threads give the same bits (DESIGN.md invariant 5): a row's
// result does not depend on how the batch was formed.
void check_long_window(GgmlType type, const kernels::KernelTable& table, int64_t window) {
  const LongCache lc = long_cache(type, table);
  const std::vector<Token> tokens = long_batch();
  const std::vector<float> q =
      kernels::test::random_floats(static_cast<int64_t>(tokens.size()) * kLongNHead * kHeadDim, 3);
  const std::vector<float> out = run_long(table, lc, tokens, q, 2, window);
  const int64_t row = kLongNHead * kHeadDim;
  for (size_t t = 0; t < tokens.size(); ++t) {
    const std::vector<float> q_t(q.begin() + static_cast<int64_t>(t) * row,
                                 q.begin() + static_cast<int64_t>(t + 1) * row);
    const std::vector<float> alone =
        run_long(table, lc, {tokens[t]}, q_t, 1 + static_cast<int>(t % 3), window);
    ASSERT_EQ(0, std::memcmp(alone.data(), out.data() + static_cast<int64_t>(t) * row,
                             alone.size() * sizeof(float)))
        << table.name << " " << ggml_type_info(type).name << " token " << t;
    for (int64_t h = 0; h < kLongNHead; h += 5) {
      const std::vector<double> want =
          long_reference(type, lc, tokens[t], q_t.data() + h * kHeadDim, h / 7, window);
      for (int64_t d = 0; d < kHeadDim; ++d) {
        ASSERT_NEAR(alone[static_cast<size_t>(h * kHeadDim + d)], want[static_cast<size_t>(d)],
                    1e-5 * (1.0 + std::fabs(want[static_cast<size_t>(d)])))
            << table.name << " token " << t << " head " << h << " dim " << d;
      }
    }
  }
  const std::vector<float> three = run_long(table, lc, tokens, q, 3, window);
  EXPECT_EQ(0, std::memcmp(three.data(), out.data(), out.size() * sizeof(float))) << table.name;
}

// Where a sequence's blocks lie in the pool changes no bit: the cells of consecutive blocks are
// read in one call, of scattered ones in a call per block.
TEST(Attention, ScatteredBlocksGiveTheBitsOfConsecutiveOnes) {
  for (const GgmlType type : kCellTypes) {
    for (const kernels::KernelTable* table : kernels::test::all_tables()) {
      const LongCache consecutive = long_cache(type, *table);
      const LongCache scattered = long_cache(type, *table, true);
      ASSERT_EQ(scattered.cache->block_table(0)[1], 2);  // the blocks are scattered
      ASSERT_EQ(consecutive.cache->block_table(0)[1], 1);
      const std::vector<Token> tokens = long_batch();
      const std::vector<float> q = kernels::test::random_floats(
          static_cast<int64_t>(tokens.size()) * kLongNHead * kHeadDim, 3);
      for (const int64_t window : {int64_t{0}, int64_t{100}}) {
        const std::vector<float> want = run_long(*table, consecutive, tokens, q, 2, window);
        const std::vector<float> got = run_long(*table, scattered, tokens, q, 2, window);
        EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size() * sizeof(float)))
            << table->name << " " << ggml_type_info(type).name << " window " << window;
      }
    }
  }
}

TEST(Attention, LongWindowsAreTheSameHoweverTheBatchIsFormed) {
  for (const GgmlType type : kCellTypes) {
    for (const kernels::KernelTable* table : kernels::test::all_tables()) {
      check_long_window(type, *table, 0);
      check_long_window(type, *table, 100);  // a sliding window starting mid-block
    }
  }
}

}  // namespace
}  // namespace minfer
