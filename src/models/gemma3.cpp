// Gemma 3 (1B/4B/12B/27B): RoPE on NeoX pairs, per-head RMSNorm of q and k, RMSNorm of the
// attention and FFN outputs before each residual add (post_attention_norm, post_ffw_norm), a
// GEGLU FFN with the tanh-form GELU, embeddings scaled by √n_embd, q scaled by 1/√key_length
// before attention, and sliding-window layers (every `sliding_window_pattern`-th layer global)
// with their own rope base. The output is tied to the embedding. The RMSNorm weights are used as
// stored: llama.cpp's converter already adds Gemma's 1 to them.
#include <cmath>

#include "models/architectures.h"

namespace minfer {

namespace {

constexpr const char* kGemma3OwnKeys[] = {
    "attention.sliding_window", "attention.sliding_window_pattern", "rope.freq_base_swa",
    "final_logit_softcapping",  "attn_logit_softcapping",
};

// Norms of attention's and the FFN's outputs, one [n_embd] weight each per block.
std::vector<TensorSpec> gemma3_tensors(const ModelConfig& c) {
  std::vector<TensorSpec> specs = decoder_tensors(c, qk_norm_tensors);
  TensorList t(specs);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    t.begin_layer(il);
    t.norm("post_attention_norm.weight", c.n_embd, layer_slot<&LayerWeights::attn_post_norm>);
    t.norm("post_ffw_norm.weight", c.n_embd, layer_slot<&LayerWeights::ffn_post_norm>);
  }
  return specs;
}

}  // namespace

Status read_sliding_window(const GgufFile& file, const std::string& p, ModelConfig& c,
                           int64_t default_pattern, float default_freq_base_swa) {
  const std::string window_key = p + "attention.sliding_window";
  if (!file.has(window_key)) return Status::ok();
  MINFER_ASSIGN_OR_RETURN(const int64_t window, file.get_integer(window_key));
  if (window < 0) {
    return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' is {}, expected >= 0",
                      file.name(), window_key, window);
  }
  if (window == 0) return Status::ok();
  const std::string pattern_key = p + "attention.sliding_window_pattern";
  int64_t pattern = default_pattern;
  if (file.has(pattern_key)) {
    MINFER_ASSIGN_OR_RETURN(pattern, file.get_integer(pattern_key));
    if (pattern < 0) {
      return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' is {}, expected >= 0",
                        file.name(), pattern_key, pattern);
    }
  }
  c.n_swa = window;
  c.swa_layers.assign(static_cast<size_t>(c.n_layer), false);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    c.swa_layers[static_cast<size_t>(il)] = pattern == 0 || il % pattern < pattern - 1;
  }
  MINFER_ASSIGN_OR_RETURN(c.rope_freq_base_swa,
                          read_float_or(file, p + "rope.freq_base_swa", default_freq_base_swa));
  return Status::ok();
}

namespace {

Status gemma3_keys(const GgufFile& file, const std::string& p, ModelConfig& c) {
  // llama.cpp's gemma3 graph never applies an attention logit cap: a file that asks for one
  // means something we (and it) do not compute.
  MINFER_ASSIGN_OR_RETURN(const float attn_cap,
                          read_float_or(file, p + "attn_logit_softcapping", 0.0f));
  if (attn_cap != 0.0f) {
    return make_error(ErrorCode::kUnsupported,
                      "[model] '{}': key '{}attn_logit_softcapping' is {}: attention logit "
                      "softcapping is not implemented for gemma3 (expected absent or 0)",
                      file.name(), p, attn_cap);
  }
  MINFER_ASSIGN_OR_RETURN(c.final_logit_softcap,
                          read_float_or(file, p + "final_logit_softcapping", 0.0f));
  if (c.final_logit_softcap < 0.0f) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': key '{}final_logit_softcapping' is {}, expected >= 0",
                      file.name(), p, c.final_logit_softcap);
  }
  // Five local layers, then a global one; local layers' rope base 10000 unless the file says.
  MINFER_RETURN_IF_ERROR(read_sliding_window(file, p, c, 6, 10000.0f));
  c.embd_scale = std::sqrt(static_cast<float>(c.n_embd));
  c.post_norms = true;
  c.ffn_act = FfnActivation::kGelu;
  // 1/√head_dim, except Gemma 3 27B (62 layers), whose query_pre_attn_scalar is
  // n_embd / n_head (as llama.cpp decides it, from the layer count).
  const int64_t q_scalar = c.n_layer == 62 ? c.n_embd / c.n_head : c.head_dim;
  c.attn_q_scale = 1.0f / std::sqrt(static_cast<float>(q_scalar));
  return Status::ok();
}

}  // namespace

const ArchSpec kGemma3Arch = {
    .name = "gemma3",
    .qkv_bias = false,
    .qk_norm = true,
    .rope_style = kernels::RopeStyle::kNeox,
    .tensors = gemma3_tensors,
    .read_keys = gemma3_keys,
    .own_keys = kGemma3OwnKeys,
    .tested_models = "Gemma 3 (text)",
};

}  // namespace minfer
