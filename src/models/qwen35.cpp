// Qwen3.5 (dense: 0.8B .. 27B): a hybrid of gated delta-net layers and attention layers, every
// full_attention_interval-th layer (default 4) attention. Every block is
//   h = x + mixer(rms(x) · attn_norm);   x' = h + FFN(rms(h) · post_attention_norm)
// The attention mixer is Qwen3's (per-head RMSNorm of q and k, NeoX rope on the first n_rot
// dims — IMROPE with every stream the text position) whose Wq also gives a gate per head:
// attn_output(attention · sigmoid(gate)). The delta-net mixer (graph/delta_net.h) projects q|k|v
// (attn_qkv), the gate z (attn_gate), β and α (ssm_beta, ssm_alpha), runs a causal depthwise
// conv with SiLU over q|k|v, L2-normalises q and k, updates a d_state × d_state state per value
// head by the gated delta rule and gives ssm_out(rms_head(o) · ssm_norm · silu(z)). Norm weights
// are used as stored (the converter adds Qwen's 1 to every one but ssm_norm).
#include "models/qwen35.h"

#include <algorithm>
#include <array>

#include "graph/delta_net.h"

namespace minfer {

namespace {

// The IMROPE sections [t, h, w, e] rotate pair i (of n_rot / 2) by stream t, h, w or e (ggml's
// interleaved M-RoPE: sector i mod Σ sections; t when the sector is 0 mod 3 and below 3 t, h for
// 1 mod 3 below 3 h, w for 2 mod 3 below 3 w, else e). Text positions put the token's position
// in t, h and w and 0 in e: the rope is NeoX rope exactly when no pair falls to e.
Status check_rope_sections(const GgufFile& file, const std::string& key, const ModelConfig& c) {
  MINFER_ASSIGN_OR_RETURN(const std::vector<int32_t> s, file.get_array<int32_t>(key));
  const int64_t sum = s.size() == 4 ? int64_t{s[0]} + s[1] + s[2] + s[3] : 0;
  if (s.size() != 4 || std::any_of(s.begin(), s.end(), [](int32_t v) { return v < 0; }) ||
      sum <= 0 || sum > c.head_dim) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': key '{}' must be 4 sections >= 0 with a sum in 1..head_dim "
                      "{}",
                      file.name(), key, c.head_dim);
  }
  for (int64_t i = 0; i < c.n_rot / 2; ++i) {
    const int64_t sector = i % sum;
    const bool text = (sector % 3 == 0 && sector < 3 * s[0]) ||
                      (sector % 3 == 1 && sector < 3 * s[1]) ||
                      (sector % 3 == 2 && sector < 3 * s[2]);
    if (!text) {
      return make_error(ErrorCode::kUnsupported,
                        "[model] '{}': key '{}' turns rotated pair {} by the fourth position "
                        "stream, which minfer does not implement (text-only IMROPE)",
                        file.name(), key, i);
    }
  }
  return Status::ok();
}

Result<int64_t> read_size(const GgufFile& file, const std::string& key) {
  MINFER_ASSIGN_OR_RETURN(const int64_t v, file.get_integer(key));
  constexpr int64_t kMax = int64_t{1} << 20;
  if (v < 1 || v > kMax) {
    return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' is {}, expected 1 to {}",
                      file.name(), key, v, kMax);
  }
  return v;
}

Status read_delta_net_shape(const GgufFile& file, const std::string& p, ModelConfig& c) {
  MINFER_ASSIGN_OR_RETURN(c.ssm_d_conv, read_size(file, p + "ssm.conv_kernel"));
  MINFER_ASSIGN_OR_RETURN(c.ssm_d_state, read_size(file, p + "ssm.state_size"));
  MINFER_ASSIGN_OR_RETURN(c.ssm_n_k_heads, read_size(file, p + "ssm.group_count"));
  MINFER_ASSIGN_OR_RETURN(c.ssm_n_v_heads, read_size(file, p + "ssm.time_step_rank"));
  MINFER_ASSIGN_OR_RETURN(const int64_t d_inner, read_size(file, p + "ssm.inner_size"));
  if (c.ssm_d_conv < 2 || c.ssm_d_conv > kMaxConvTaps || c.ssm_n_v_heads % c.ssm_n_k_heads != 0 ||
      d_inner != c.ssm_v_width()) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': delta-net shape: conv_kernel {} (expected 2 to 16), "
                      "time_step_rank {} (a multiple of group_count {}), inner_size {} (expected "
                      "state_size · time_step_rank = {})",
                      file.name(), c.ssm_d_conv, c.ssm_n_v_heads, c.ssm_n_k_heads, d_inner,
                      c.ssm_v_width());
  }
  return Status::ok();
}

// Layer il is attention when (il + 1) % interval == 0, else a delta-net layer.
Status read_layer_pattern(const GgufFile& file, const std::string& p, ModelConfig& c) {
  int64_t interval = 4;
  if (file.has(p + "full_attention_interval")) {
    MINFER_ASSIGN_OR_RETURN(interval, read_size(file, p + "full_attention_interval"));
  }
  c.recurrent_layers.assign(static_cast<size_t>(c.n_layer), false);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    c.recurrent_layers[static_cast<size_t>(il)] = (il + 1) % interval != 0;
  }
  return Status::ok();
}

}  // namespace

Status read_qwen35_keys(const GgufFile& file, const std::string& p, ModelConfig& c) {
  MINFER_RETURN_IF_ERROR(check_rope_sections(file, p + "rope.dimension_sections", c));
  MINFER_RETURN_IF_ERROR(read_delta_net_shape(file, p, c));
  MINFER_RETURN_IF_ERROR(read_layer_pattern(file, p, c));
  if (file.has(p + "nextn_predict_layers")) {
    MINFER_ASSIGN_OR_RETURN(const int64_t nextn, file.get_integer(p + "nextn_predict_layers"));
    if (nextn != 0) {
      return make_error(ErrorCode::kUnsupported,
                        "[model] '{}': key '{}nextn_predict_layers' is {}: multi-token prediction "
                        "blocks are not implemented (expected 0)",
                        file.name(), p, nextn);
    }
  }
  if (c.head_dim_v != c.head_dim) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': the attention output gate needs value_length {} = "
                      "key_length {}",
                      file.name(), c.head_dim_v, c.head_dim);
  }
  c.attn_output_gate = true;
  return Status::ok();
}

namespace {

void delta_net_tensors(const ModelConfig& c, TensorList& t) {
  using D = LayerWeights::DeltaNet;
  const int64_t cd = c.ssm_conv_channels();
  const int64_t vd = c.ssm_v_width();
  t.matrix("attn_qkv.weight", c.n_embd, cd, delta_net_slot<&D::qkv>);
  t.matrix("attn_gate.weight", c.n_embd, vd, delta_net_slot<&D::gate>);
  t.conv("ssm_conv1d.weight", c.ssm_d_conv, cd, delta_net_slot<&D::conv>);
  t.bias("ssm_dt.bias", c.ssm_n_v_heads, delta_net_slot<&D::dt_bias>);
  t.bias("ssm_a", c.ssm_n_v_heads, delta_net_slot<&D::a>);
  t.matrix("ssm_alpha.weight", c.n_embd, c.ssm_n_v_heads, delta_net_slot<&D::alpha>);
  t.matrix("ssm_beta.weight", c.n_embd, c.ssm_n_v_heads, delta_net_slot<&D::beta>);
  t.norm("ssm_norm.weight", c.ssm_d_state, delta_net_slot<&D::norm>);
  t.matrix("ssm_out.weight", vd, c.n_embd, delta_net_slot<&D::out>);
}

// Wq gives each head's query then its output gate.
void gated_attention_tensors(const ModelConfig& c, TensorList& t) {
  t.matrix("attn_q.weight", c.n_embd, 2 * c.q_width(), layer_slot<&LayerWeights::wq>);
  t.matrix("attn_k.weight", c.n_embd, c.k_width(), layer_slot<&LayerWeights::wk>);
  t.matrix("attn_v.weight", c.n_embd, c.v_width(), layer_slot<&LayerWeights::wv>);
  qk_norm_tensors(c, t);
  t.matrix("attn_output.weight", c.n_head * c.head_dim_v, c.n_embd, layer_slot<&LayerWeights::wo>);
}

}  // namespace

std::vector<TensorSpec> qwen35_tensors(const ModelConfig& c, FfnTensors ffn) {
  std::vector<TensorSpec> specs;
  TensorList t(specs);
  global_tensors(c, t);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    t.begin_layer(il);
    t.norm("attn_norm.weight", c.n_embd, layer_slot<&LayerWeights::attn_norm>);
    if (c.is_recurrent(il)) {
      delta_net_tensors(c, t);
    } else {
      gated_attention_tensors(c, t);
    }
    // The FFN's pre-norm (llama.cpp's name for it in these models).
    t.norm("post_attention_norm.weight", c.n_embd, layer_slot<&LayerWeights::ffn_norm>);
    (ffn != nullptr ? ffn : dense_ffn_tensors)(c, t);
  }
  return specs;
}

namespace {

std::vector<TensorSpec> dense_tensors(const ModelConfig& c) {
  return qwen35_tensors(c, nullptr);
}

}  // namespace

const ArchSpec kQwen35Arch = {
    .name = "qwen35",
    .qkv_bias = false,
    .qk_norm = true,
    .rope_style = kernels::RopeStyle::kNeox,
    .tensors = dense_tensors,
    .read_keys = read_qwen35_keys,
    .own_keys = kQwen35Keys,
    .tested_models = "Qwen3.5 dense (tiny goldens)",
};

}  // namespace minfer
