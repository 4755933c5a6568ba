// Qwen3 (dense): RoPE on NeoX pairs, no biases, per-head RMSNorm of q and k (attn_q_norm,
// attn_k_norm, weights of head_dim) before RoPE; head_dim is its own key, not n_embd / n_head.
#include "models/architectures.h"

namespace minfer {

namespace {

std::vector<TensorSpec> qwen3_tensors(const ModelConfig& c) {
  return decoder_tensors(c, qk_norm_tensors);
}

}  // namespace

const ArchSpec kQwen3Arch = {
    .name = "qwen3",
    .qkv_bias = false,
    .qk_norm = true,
    .rope_style = kernels::RopeStyle::kNeox,
    .tensors = qwen3_tensors,
};

}  // namespace minfer
