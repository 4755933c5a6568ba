// Attention over the paged KV cache: for each token and query head, softmax(q·kᵀ · scale) · v over
// the cells of the token's own sequence with position ≤ the token's position (the causal window,
// invariant 3), and > position - window in a sliding-window layer (AttentionArgs::window). Query
// head h reads KV head h / (n_head / n_head_kv) (grouped-query attention).
//
// The window is walked one cache block at a time with an online softmax: the row arithmetic
// (scores, softmax steps, weighted values, folding pieces, how cells are read) is the kernels'
// (kernels/attention_rows.h); this file plans it. The walk starts afresh at every 512 positions
// (a piece), and the pieces' states are folded in order: a decode step's pieces are tasks that
// the threads share (split-KV), with the bits of one thread walking them all.
//
// q8_0 cells are scored as llama.cpp's CPU flash attention scores them: each query row quantized
// to q8_0 once per call, int8 dot products with the cells (the Q8_0 matmul tile), times the scale;
// the values are summed in f32 over the dequantized cells.
//
// f16 cells with AttentionOptions::flash_attn_numerics set take llama.cpp's CPU flash attention
// instead (kernels/ref/flash_attn_f16.h) — what llama-perplexity runs by default.
#pragma once

#include <cstdint>

#include "graph/batch.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "kv/kv_cache.h"

namespace minfer {

// How attention computes, chosen by whoever builds the step runner (Executor holds it).
struct AttentionOptions {
  // Over f16 cells, reproduce llama.cpp's CPU flash-attention arithmetic (llama-perplexity's
  // default); other cell types ignore it.
  bool flash_attn_numerics = false;
};

struct AttentionArgs {
  const float* q;  // [n_tokens, n_head * head_dim]
  float* out;      // [n_tokens, n_head * head_dim_v]
  int64_t il;      // layer
  int64_t n_head;
  float scale;  // usually 1 / sqrt(head_dim)
  // Sliding window: a token at position p sees only positions > p - window (llama.cpp's
  // LLAMA_SWA_TYPE_STANDARD); 0: every position ≤ p.
  int64_t window = 0;
  // Attention sinks ([n_head], gpt-oss): head h's softmax is e^(s_j - m) / (Σ_k e^(s_k - m) +
  // e^(sinks[h] - m)), m = max(max_k s_k, sinks[h]); the sink carries no value (llama.cpp's
  // soft_max with sinks). nullptr: none.
  const float* sinks = nullptr;
};

// Parallel over (token, head) pairs, and in a small batch over the pieces of each pair's cells:
// each output head row is computed from the same sequence of operations at any thread count and
// however the batch was formed (invariant 5).
void attention(const kernels::KernelTable& table, kernels::ThreadPool& pool, const KvCache& cache,
               const Batch& batch, const AttentionArgs& args, const AttentionOptions& options = {});

}  // namespace minfer
