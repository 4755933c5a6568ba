// Qwen2 / Qwen2.5: RoPE on NeoX pairs (i, i + d/2), biases on Wq, Wk, Wv.
#include "models/architectures.h"

namespace minfer {

namespace {

// f32 vectors of each projection's output width, added after the matmul.
void qkv_biases(const ModelConfig& c, TensorList& t) {
  t.bias("attn_q.bias", c.q_width(), layer_slot<&LayerWeights::bq>);
  t.bias("attn_k.bias", c.k_width(), layer_slot<&LayerWeights::bk>);
  t.bias("attn_v.bias", c.v_width(), layer_slot<&LayerWeights::bv>);
}

std::vector<TensorSpec> qwen2_tensors(const ModelConfig& c) {
  return decoder_tensors(c, qkv_biases);
}

}  // namespace

const ArchSpec kQwen2Arch = {
    .name = "qwen2",
    .qkv_bias = true,
    .qk_norm = false,
    .rope_style = kernels::RopeStyle::kNeox,
    .tensors = qwen2_tensors,
    .tested_models = "Qwen2, Qwen2.5 (YaRN long-context variants too)",
};

}  // namespace minfer
