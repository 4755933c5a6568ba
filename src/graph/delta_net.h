// The gated delta net's two stateful ops (Qwen3.5's recurrent layers; the arithmetic is the
// kernels', kernel_table.h ssm_conv / l2_norm / delta_rule_step). Both walk each sequence's tokens
// of the batch in position order, starting from the state the cache holds for the sequence
// (kv/recurrent_state.h: zero before its first token) and leaving the state after its last one:
//
//   ssm_conv   y_t = SiLU(Σ_k taps[k] · in[t + k]) per channel, in = [conv state; x rows], the
//              last tap on the current token; the state becomes the last d_conv - 1 rows of in.
//   delta_net  per value head h (key head h mod n_k_heads): q, k L2-normalised (eps), q scaled
//              by 1/√d_state, β = sigmoid(beta), decay = exp(a · softplus(alpha + dt_bias)), then
//              the delta rule on the head's d_state × d_state state; out = the rule's output.
//
// A sequence with at least kDeltaChunkMinTokens tokens in the batch (prefill) runs the delta rule
// in chunks of kDeltaChunkTokens (kernel_table.h delta_rule_chunk: matrix products, one state
// update per chunk, the last chunk partial); fewer (decode, a short verify) step token by token.
// The two forms are the same rule in different float orders; the state either leaves is the one
// the next batch continues from.
//
// Work is split over tokens (conv) and over (sequence, value head) pairs (delta rule): each
// output is computed by one worker in a fixed order, bit-identical at any thread count.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/batch.h"
#include "graph/weight_tensor.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "kv/kv_cache.h"

namespace minfer {

// A sequence's run of at least kDeltaChunkMinTokens tokens in one batch (prefill) takes the
// chunked delta rule, kDeltaChunkTokens at a time (the size that measured best); shorter runs
// (decode, speculative verifies, small-budget pieces) take the token-by-token recurrence. The two
// sum in different orders, so a sequence's bits depend on where its tokens are cut into batches —
// never on what else a batch holds or on the thread count (tests/engine/recurrent_state_test.cpp).
inline constexpr int64_t kDeltaChunkTokens = 32;
inline constexpr int64_t kDeltaChunkMinTokens = 16;

// The longest conv kernel ssm_conv takes (models refuse longer ones at load).
inline constexpr int64_t kMaxConvTaps = 16;

struct SsmConvArgs {
  const float* x = nullptr;            // [n_tokens, channels]
  const WeightTensor* taps = nullptr;  // channels rows of d_conv taps (f32)
  int64_t channels = 0;
  int64_t il = 0;
  float* y = nullptr;  // [n_tokens, channels]; must not alias x
};

struct DeltaNetArgs {
  const float* qkv = nullptr;      // [n_tokens, (2 n_k_heads + n_v_heads) · d_state]: q | k | v
  const float* alpha = nullptr;    // [n_tokens, n_v_heads]
  const float* beta = nullptr;     // [n_tokens, n_v_heads]
  const float* dt_bias = nullptr;  // [n_v_heads]
  const float* a = nullptr;        // [n_v_heads]
  int64_t n_k_heads = 0;
  int64_t n_v_heads = 0;
  int64_t d_state = 0;
  float eps = 0.0f;
  int64_t il = 0;
  float* out = nullptr;  // [n_tokens, n_v_heads · d_state]
};

// Buffers reused across calls.
struct DeltaNetScratch {
  std::vector<float> taps;  // [d_conv][channels] the taps transposed
  std::vector<float> rows;  // [d_conv - 1][channels] a sequence's next conv state
};

void ssm_conv(const kernels::KernelTable& table, kernels::ThreadPool& pool, KvCache& cache,
              const Batch& batch, const SsmConvArgs& args, DeltaNetScratch& scratch);

void delta_net(const kernels::KernelTable& table, kernels::ThreadPool& pool, KvCache& cache,
               const Batch& batch, const DeltaNetArgs& args);

}  // namespace minfer
