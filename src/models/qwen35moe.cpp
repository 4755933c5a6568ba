// Qwen3.5-MoE (35B-A3B, 122B-A10B, 397B-A17B): Qwen3.5's hybrid blocks (models/qwen35.h) with
// Qwen3-MoE's experts (softmax router, the n_expert_used best renormalized) plus a shared expert
// in every block, gated per token: y = Σ w_e · SwiGLU_e(x) + sigmoid(ffn_gate_inp_shexp · x) ·
// SwiGLU_shared(x), the shared expert of width expert_shared_feed_forward_length (default n_ff).
#include <array>

#include "models/qwen35.h"

namespace minfer {

namespace {

void moe_with_shared_expert(const ModelConfig& c, TensorList& t) {
  moe_ffn_tensors(c, t);
  t.bias("ffn_gate_inp_shexp.weight", c.n_embd, layer_slot<&LayerWeights::shexp_gate_inp>);
  t.matrix("ffn_gate_shexp.weight", c.n_embd, c.n_ff_shexp, layer_slot<&LayerWeights::gate_shexp>);
  t.matrix("ffn_up_shexp.weight", c.n_embd, c.n_ff_shexp, layer_slot<&LayerWeights::up_shexp>);
  t.matrix("ffn_down_shexp.weight", c.n_ff_shexp, c.n_embd, layer_slot<&LayerWeights::down_shexp>);
}

std::vector<TensorSpec> qwen35moe_tensors(const ModelConfig& c) {
  return qwen35_tensors(c, moe_with_shared_expert);
}

constexpr std::array<const char*, 8> kMoeKeys = {
    "expert_count",
    "expert_used_count",
    "expert_feed_forward_length",
    "expert_gating_func",
    "expert_weights_scale",
    "expert_weights_norm",
    "expert_shared_count",
    "expert_shared_feed_forward_length",
};

constexpr auto kQwen35MoeKeys = [] {
  std::array<const char*, kQwen35Keys.size() + kMoeKeys.size()> keys{};
  for (size_t i = 0; i < kQwen35Keys.size(); ++i) keys[i] = kQwen35Keys[i];
  for (size_t i = 0; i < kMoeKeys.size(); ++i) keys[kQwen35Keys.size() + i] = kMoeKeys[i];
  return keys;
}();

Status read_qwen35moe_keys(const GgufFile& file, const std::string& p, ModelConfig& c) {
  MINFER_RETURN_IF_ERROR(read_qwen35_keys(file, p, c));
  MINFER_RETURN_IF_ERROR(read_moe_keys(file, p, c));
  MINFER_ASSIGN_OR_RETURN(c.n_ff_shexp,
                          read_positive_or(file, p + "expert_shared_feed_forward_length", c.n_ff));
  if (c.n_ff_shexp == 0) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': no '{}expert_shared_feed_forward_length' and no "
                      "feed_forward_length for the shared expert",
                      file.name(), p);
  }
  return Status::ok();
}

}  // namespace

const ArchSpec kQwen35MoeArch = {
    .name = "qwen35moe",
    .qkv_bias = false,
    .qk_norm = true,
    .rope_style = kernels::RopeStyle::kNeox,
    .tensors = qwen35moe_tensors,
    .read_keys = read_qwen35moe_keys,
    .own_keys = kQwen35MoeKeys,
    .tested_models = "Qwen3.5-MoE (tiny goldens)",
};

}  // namespace minfer
