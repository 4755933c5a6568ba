// gpt-oss (gpt-oss-20b, gpt-oss-120b; llama.cpp's "gpt-oss", src/models/openai-moe.cpp): biases
// on q, k, v and the attention output, a learned attention sink per head, sliding-window layers
// alternating with global ones (layer il slides when il is even, the pattern's default 2), NeoX
// RoPE with YaRN, and in every block a mixture of experts with biases: the router's top
// expert_used_count logits (plus its bias), weighted by the softmax of those alone, each expert a
// clamped SwiGLU (graph/graph.h MoeVariant). The FFN's RMSNorm weight is stored as
// post_attention_norm. Experts ship in MXFP4, the other matrices in whatever the file holds.
#include <array>

#include "models/architectures.h"

namespace minfer {

namespace {

constexpr std::array<const char*, 6> kGptOssOwnKeys = {
    "expert_count",
    "expert_used_count",
    "expert_feed_forward_length",
    "attention.sliding_window",
    "attention.sliding_window_pattern",
    "rope.freq_base_swa",
};

// llama.cpp's swiglu_oai limit for gpt-oss (build_moe_ffn's caller, openai-moe.cpp).
constexpr float kSwigluLimit = 7.0f;

// A block's attention: q, k, v with biases, the output matrix with its bias, and the sinks.
void attention_tensors(const ModelConfig& c, TensorList& t) {
  t.norm("attn_norm.weight", c.n_embd, layer_slot<&LayerWeights::attn_norm>);
  t.matrix("attn_q.weight", c.n_embd, c.q_width(), layer_slot<&LayerWeights::wq>);
  t.bias("attn_q.bias", c.q_width(), layer_slot<&LayerWeights::bq>);
  t.matrix("attn_k.weight", c.n_embd, c.k_width(), layer_slot<&LayerWeights::wk>);
  t.bias("attn_k.bias", c.k_width(), layer_slot<&LayerWeights::bk>);
  t.matrix("attn_v.weight", c.n_embd, c.v_width(), layer_slot<&LayerWeights::wv>);
  t.bias("attn_v.bias", c.v_width(), layer_slot<&LayerWeights::bv>);
  t.matrix("attn_output.weight", c.n_head * c.head_dim_v, c.n_embd, layer_slot<&LayerWeights::wo>);
  t.bias("attn_output.bias", c.n_embd, layer_slot<&LayerWeights::bo>);
  t.bias("attn_sinks.weight", c.n_head, layer_slot<&LayerWeights::attn_sinks>);
}

std::vector<TensorSpec> gptoss_tensors(const ModelConfig& c) {
  std::vector<TensorSpec> specs;
  TensorList t(specs);
  global_tensors(c, t);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    t.begin_layer(il);
    attention_tensors(c, t);
    t.norm("post_attention_norm.weight", c.n_embd, layer_slot<&LayerWeights::ffn_norm>);
    moe_ffn_tensors(c, t);
    t.bias("ffn_gate_inp.bias", c.n_expert, layer_slot<&LayerWeights::ffn_gate_inp_b>);
    t.biases("ffn_gate_exps.bias", c.n_ff_exp, c.n_expert, layer_slot<&LayerWeights::gate_exps_b>);
    t.biases("ffn_up_exps.bias", c.n_ff_exp, c.n_expert, layer_slot<&LayerWeights::up_exps_b>);
    t.biases("ffn_down_exps.bias", c.n_embd, c.n_expert, layer_slot<&LayerWeights::down_exps_b>);
  }
  return specs;
}

Status gptoss_keys(const GgufFile& file, const std::string& p, ModelConfig& c) {
  MINFER_RETURN_IF_ERROR(read_moe_keys(file, p, c));
  // llama.cpp requires the window (openai-moe's load_hparams).
  if (!file.has(p + "attention.sliding_window")) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': key '{}attention.sliding_window' is missing", file.name(), p);
  }
  // Every other layer slides (even il), with the global layers' rope base unless the file says.
  MINFER_RETURN_IF_ERROR(read_sliding_window(file, p, c, 2, c.rope_freq_base));
  c.moe_softmax_chosen = true;
  c.moe_swiglu_limit = kSwigluLimit;
  return Status::ok();
}

}  // namespace

const ArchSpec kGptOssArch = {
    .name = "gpt-oss",
    .qkv_bias = true,
    .qk_norm = false,
    .rope_style = kernels::RopeStyle::kNeox,
    .tensors = gptoss_tensors,
    .read_keys = gptoss_keys,
    .own_keys = kGptOssOwnKeys,
    .tested_models = "gpt-oss (tiny MXFP4 and f32 files against llama.cpp)",
};

}  // namespace minfer
