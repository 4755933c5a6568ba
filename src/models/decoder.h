// The decoder-only transformer shared by every supported architecture (DESIGN.md §1). Per-model
// differences are fields of ModelConfig (QKV bias, QK-norm, rope style, tied output), not
// branches on the architecture name.
#pragma once

#include "graph/graph.h"
#include "models/model_config.h"
#include "models/model_weights.h"

namespace minfer {

// The rope of layer il's queries and keys (model_config.h rope_config): a sliding-window layer
// has a base of its own, and rope_freqs.weight gives the frequency factors where present.
kernels::RopeConfig layer_rope(const ModelConfig& c, const LayerWeights& w, int64_t il);

// h → RMSNorm → Wq Wk Wv (+bias) → [per-head RMSNorm of q, k] → RoPE → KV store → [q scale]
//   → attention (over the layer's window) → Wo → [RMSNorm] → + h.   On the last layer only the
//   output rows continue (`select_outputs`).
NodeId attention_block(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, int64_t il,
                       NodeId h, bool select_outputs);

// A gated delta-net block (Qwen3.5's recurrent layers; graph/delta_net.h): h → RMSNorm →
//   qkv, z, β, α → causal conv + SiLU → delta rule (state per sequence) → RMSNorm per head ·
//   silu(z) → ssm_out → + h.
NodeId delta_net_block(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, int64_t il,
                       NodeId h, bool select_outputs);

// h → RMSNorm → FFN → [RMSNorm] → + h. The FFN is down(act(gate(x)) * up(x)) with act SiLU or
// GELU, or with n_expert > 0 a mixture of experts (router ffn_gate_inp, then graph/moe.h).
NodeId ffn_block(GraphBuilder& g, const ModelConfig& c, const LayerWeights& w, int64_t il,
                 NodeId h);

// The whole forward: embedding [× scale], n_layer blocks, final RMSNorm, the output matrix
// [and the logit softcap]. `hidden`: stops after the final RMSNorm ([n_outputs, n_embd], what
// embeddings pool) — the nodes before it are the same as the logits graph's.
NodeId build_decoder(GraphBuilder& g, const ModelConfig& c, const ModelWeights& w,
                     bool hidden = false);

}  // namespace minfer
