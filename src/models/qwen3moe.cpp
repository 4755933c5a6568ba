// Qwen3-MoE (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B): Qwen3's attention (NeoX RoPE, per-head RMSNorm
// of q and k, head_dim from attention.key_length) and, in every block, a mixture of experts in
// place of the dense FFN: a router (ffn_gate_inp) scores n_expert experts, softmax, the
// n_expert_used best are kept and their weights renormalized to sum 1, and the output is the
// weighted sum of those experts' SwiGLUs (ffn_{gate,up,down}_exps, one 3-D tensor each). No
// shared expert. As llama.cpp's qwen3moe graph (build_moe_ffn with softmax gating, norm_w on, no
// weight scale); graph/moe.h computes it.
#include <array>

#include "models/architectures.h"

namespace minfer {

// The router [n_embd → n_expert] and the experts, ggml shapes [n_embd, n_ff_exp, n_expert] for
// gate and up and [n_ff_exp, n_embd, n_expert] for down (llama.cpp's LLM_TENSOR_FFN_*_EXPS).
void moe_ffn_tensors(const ModelConfig& c, TensorList& t) {
  t.matrix("ffn_gate_inp.weight", c.n_embd, c.n_expert, layer_slot<&LayerWeights::ffn_gate_inp>);
  t.matrices("ffn_gate_exps.weight", c.n_embd, c.n_ff_exp, c.n_expert,
             layer_slot<&LayerWeights::gate_exps>);
  t.matrices("ffn_up_exps.weight", c.n_embd, c.n_ff_exp, c.n_expert,
             layer_slot<&LayerWeights::up_exps>);
  t.matrices("ffn_down_exps.weight", c.n_ff_exp, c.n_embd, c.n_expert,
             layer_slot<&LayerWeights::down_exps>);
}

namespace {

std::vector<TensorSpec> qwen3moe_tensors(const ModelConfig& c) {
  return decoder_tensors(c, qk_norm_tensors, moe_ffn_tensors);
}

constexpr std::array<const char*, 7> kQwen3MoeOwnKeys = {
    "expert_count",        "expert_used_count",    "expert_feed_forward_length",
    "expert_gating_func",  "expert_weights_scale", "expert_weights_norm",
    "expert_shared_count",
};

Status unsupported(const GgufFile& file, const std::string& key, const std::string& value,
                   const char* supported) {
  return make_error(ErrorCode::kUnsupported,
                    "[model] '{}': key '{}' is {}, which minfer does not implement (supported: {})",
                    file.name(), key, value, supported);
}

// The routing variants other MoE models use (sigmoid gating, unnormalized or scaled weights,
// shared experts): a file that asks for one is refused rather than run with Qwen3's routing.
Status check_routing_keys(const GgufFile& file, const std::string& p) {
  if (file.has(p + "expert_gating_func")) {
    // llama.cpp's llama_expert_gating_func_type: 1 = softmax.
    MINFER_ASSIGN_OR_RETURN(int64_t func, file.get_integer(p + "expert_gating_func"));
    if (func != 1) {
      return unsupported(file, p + "expert_gating_func", std::to_string(func), "1 (softmax)");
    }
  }
  if (file.has(p + "expert_weights_scale")) {
    MINFER_ASSIGN_OR_RETURN(double scale, file.get_floating(p + "expert_weights_scale"));
    // llama.cpp scales the weights unless the value is 0 or 1.
    if (scale != 0.0 && scale != 1.0) {
      return unsupported(file, p + "expert_weights_scale", std::to_string(scale), "1");
    }
  }
  if (file.has(p + "expert_weights_norm")) {
    MINFER_ASSIGN_OR_RETURN(bool norm, file.get<bool>(p + "expert_weights_norm"));
    if (!norm) return unsupported(file, p + "expert_weights_norm", "false", "true");
  }
  if (file.has(p + "expert_shared_count")) {
    MINFER_ASSIGN_OR_RETURN(int64_t shared, file.get_integer(p + "expert_shared_count"));
    if (shared != 0) {
      return unsupported(file, p + "expert_shared_count", std::to_string(shared), "0");
    }
  }
  return Status::ok();
}

Result<int64_t> read_count(const GgufFile& file, const std::string& key, int64_t min, int64_t max) {
  MINFER_ASSIGN_OR_RETURN(int64_t v, file.get_integer(key));
  if (v < min || v > max) {
    return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' is {}, expected {} to {}",
                      file.name(), key, v, min, max);
  }
  return v;
}

}  // namespace

Status read_moe_keys(const GgufFile& file, const std::string& p, ModelConfig& c) {
  // At most llama.cpp's LLAMA_MAX_EXPERTS.
  constexpr int64_t kMaxExperts = 512;
  MINFER_ASSIGN_OR_RETURN(c.n_expert, read_count(file, p + "expert_count", 1, kMaxExperts));
  MINFER_ASSIGN_OR_RETURN(c.n_expert_used,
                          read_count(file, p + "expert_used_count", 1, c.n_expert));
  // Absent: n_ff / n_expert_used, as llama.cpp.
  if (file.has(p + "expert_feed_forward_length")) {
    MINFER_ASSIGN_OR_RETURN(
        c.n_ff_exp, read_count(file, p + "expert_feed_forward_length", 1, int64_t{1} << 24));
  } else {
    c.n_ff_exp = c.n_ff / c.n_expert_used;
    if (c.n_ff_exp == 0) {
      return make_error(ErrorCode::kCorrupt,
                        "[model] '{}': no '{}expert_feed_forward_length' and n_ff {} < "
                        "expert_used_count {}",
                        file.name(), p, c.n_ff, c.n_expert_used);
    }
  }
  return check_routing_keys(file, p);
}

const ArchSpec kQwen3MoeArch = {
    .name = "qwen3moe",
    .qkv_bias = false,
    .qk_norm = true,
    .rope_style = kernels::RopeStyle::kNeox,
    .tensors = qwen3moe_tensors,
    .read_keys = read_moe_keys,
    .own_keys = kQwen3MoeOwnKeys,
    .tested_models = "Qwen3-MoE (Qwen3-30B-A3B, Qwen3-Coder-30B-A3B)",
};

}  // namespace minfer
