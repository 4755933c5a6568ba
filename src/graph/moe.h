// The mixture-of-experts FFN (Qwen3-MoE; llama.cpp's build_moe_ffn with softmax gating and
// normalized weights; gpt-oss's variant below), in llama.cpp's float order:
//   probs = softmax(router_logits[t]) (the reference kernel's)     [n_expert]
//   chosen = the n_used largest probs, largest first (ties: lower expert id first)
//   w_j = probs[chosen_j] / max(Σ_j probs[chosen_j], 2^-14)        (the sum in double, as
//         ggml_sum_rows, rounded to float; the clamp is llama.cpp's)
//   y[t] = Σ_j w_j · down_e(silu(gate_e · x[t]) · (up_e · x[t])),  e = chosen_j, summed in
//          order of j: ((e_0 · w_0) + e_1 · w_1) + …
// gpt-oss (MoeVariant): chosen = the n_used largest logits (ties: lower id first), w = the
// reference softmax of those n_used logits in that order; gate, up and down each add expert e's
// bias to its output; the activation is the clamped SwiGLU (ggml's swiglu_oai:
// g' / (1 + e^(-1.702 g')) · (u' + 1)).
// Work is grouped by expert: each expert that any token chose runs one matmul over the rows of
// the tokens that chose it (gather → gate, up → SwiGLU → down → scatter), so a decode step reads
// only the chosen experts' rows. x is converted for gate / up once for all experts. Every
// output element is computed by a fixed sequence of operations whatever the batch and the
// thread count (the matmul tiles' promise, kernels/matmul.h): bit-identical for any split.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "graph/weight_tensor.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"

namespace minfer {

struct MoeArgs {
  const float* x = nullptr;              // [n_tokens, n_embd]
  const float* router_logits = nullptr;  // [n_tokens, n_expert]
  const WeightTensor* gate = nullptr;    // n_expert × [n_embd → n_ff_exp]
  const WeightTensor* up = nullptr;      // n_expert × [n_embd → n_ff_exp]
  const WeightTensor* down = nullptr;    // n_expert × [n_ff_exp → n_embd]
  int64_t n_tokens = 0;
  int64_t n_used = 0;  // experts per token
  float* y = nullptr;  // [n_tokens, n_embd]; must not alias x
  MoeVariant variant;  // gpt-oss's routing, activation and biases (graph/graph.h)
  // Gemma 4's experts: gate and up in one matrix per expert (gate's rows first; `gate` then
  // points at it, n_expert × [n_embd → 2 n_ff_exp], and `up` is null), GELU in place of SiLU,
  // and each expert's down output multiplied by expert_scale[e] before its routing weight.
  bool gelu = false;
  const float* expert_scale = nullptr;  // [n_expert] or null
};

// Buffers reused across calls (grown as needed).
struct MoeScratch {
  std::vector<int32_t> chosen;       // [n_tokens, n_used] expert ids
  std::vector<float> weights;        // [n_tokens, n_used]
  std::vector<float> probs;          // [n_expert]
  std::vector<int32_t> rows;         // (token · n_used + j) of each expert's rows, by expert
  std::vector<int32_t> tokens;       // [m] the tokens of one expert's rows
  std::vector<int64_t> first_row;    // [n_expert + 1] offsets into rows
  std::vector<uint8_t> act_gate;     // [n_tokens] x converted for gate
  std::vector<uint8_t> act_up;       // [n_tokens] x converted for up (when its type differs)
  std::vector<uint8_t> gathered;     // [m] one expert's rows of act_gate
  std::vector<uint8_t> gathered_up;  // [m] one expert's rows of act_up
  std::vector<float> gate_out;       // [m, n_ff_exp], then the SwiGLU
  std::vector<float> up_out;         // [m, n_ff_exp]
  std::vector<float> down_out;       // [m, n_embd]
  std::vector<uint8_t> down_act;     // down's activation scratch
  std::vector<float> expert_out;     // [n_tokens, n_used, n_embd]
};

// The routing alone: chosen [n_tokens, n_used] expert ids and their weights (normalized; with
// softmax_chosen the softmax of the chosen logits, MoeVariant).
void moe_route(const float* router_logits, int64_t n_tokens, int64_t n_expert, int64_t n_used,
               MoeScratch& scratch, bool softmax_chosen = false);

void moe_ffn(const kernels::KernelTable& table, kernels::ThreadPool& pool, const MoeArgs& args,
             MoeScratch& scratch);

}  // namespace minfer
