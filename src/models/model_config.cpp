#include "models/model_config.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "models/architectures.h"

namespace minfer {

namespace {

// Reads a positive integer hyperparameter.
Result<int64_t> read_positive(const GgufFile& file, const std::string& key) {
  MINFER_ASSIGN_OR_RETURN(int64_t v, file.get_integer(key));
  if (v <= 0) {
    return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' is {}, expected > 0",
                      file.name(), key, v);
  }
  return v;
}

}  // namespace

int64_t ModelConfig::n_recurrent_layers() const {
  return static_cast<int64_t>(std::count(recurrent_layers.begin(), recurrent_layers.end(), true));
}

uint64_t ModelConfig::recurrent_state_bytes() const {
  return static_cast<uint64_t>(n_recurrent_layers() *
                               (conv_state_floats() + delta_state_floats())) *
         sizeof(float);
}

int64_t ModelConfig::kv_source(int64_t il) const {
  const int64_t n_kv = n_cache_layers();
  if (il < n_kv) return il;
  return is_swa(il) ? n_kv - 2 : n_kv - 1;
}

std::string describe_recurrent(const ModelConfig& c) {
  if (c.recurrent_layers.empty()) return "";
  std::vector<int64_t> recurrent, attention;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    (c.is_recurrent(il) ? recurrent : attention).push_back(il);
  }
  const auto kib = [](int64_t floats) { return static_cast<double>(floats) * 4.0 / 1024.0; };
  return fmt::format(
      "layers:       {} gated delta-net ({}), {} attention ({})\n"
      "state:        {:.1f} KiB per sequence: per delta-net layer a conv state of {:.1f} KiB "
      "and a delta state of {:.1f} KiB (f32)\n",
      recurrent.size(), fmt::join(recurrent, " "), attention.size(), fmt::join(attention, " "),
      static_cast<double>(c.recurrent_state_bytes()) / 1024.0, kib(c.conv_state_floats()),
      kib(c.delta_state_floats()));
}

std::string describe_layer_kinds(const ModelConfig& c) {
  std::string out;
  if (c.head_dim_swa > 0) {
    out +=
        fmt::format("sliding:      head_dim {}, n_head_kv {}, n_rot {} (full layers: {}, {}, {})\n",
                    c.head_dim_swa, c.n_head_kv_swa, c.n_rot_swa, c.head_dim, c.n_head_kv, c.n_rot);
  }
  if (c.n_layer_kv > 0) {
    std::vector<std::string> shared;
    for (int64_t il = c.n_layer_kv; il < c.n_layer; ++il) {
      shared.push_back(fmt::format("{}<-{}", il, c.kv_source(il)));
    }
    out += fmt::format("shared KV:    {} (layer<-cells of layer; no cells of their own)\n",
                       fmt::join(shared, " "));
  }
  if (c.n_embd_per_layer > 0) {
    out += fmt::format("per-layer:    input embeddings of {} per layer\n", c.n_embd_per_layer);
  }
  return out;
}

Result<int64_t> read_positive_or(const GgufFile& file, const std::string& key, int64_t fallback) {
  if (!file.has(key)) return fallback;
  return read_positive(file, key);
}

Result<float> read_float_or(const GgufFile& file, const std::string& key, float fallback) {
  if (!file.has(key)) return fallback;
  MINFER_ASSIGN_OR_RETURN(double v, file.get_floating(key));
  if (!std::isfinite(v)) {
    return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' is {}, expected a finite number",
                      file.name(), key, v);
  }
  return static_cast<float>(v);
}

namespace {

// The "<arch>." keys read_model_config reads for every architecture (here and in
// read_rope_scaling).
constexpr std::array<std::string_view, 21> kSharedKeys = {
    "embedding_length",
    "block_count",
    "attention.head_count",
    "attention.head_count_kv",
    "feed_forward_length",
    "context_length",
    "attention.key_length",
    "attention.value_length",
    "rope.dimension_count",
    "rope.freq_base",
    "attention.layer_norm_rms_epsilon",
    "rope.scaling.type",
    "rope.scaling.factor",
    "rope.scale_linear",
    "rope.scaling.attn_factor",
    "rope.scaling.original_context_length",
    "rope.scaling.yarn_ext_factor",
    "rope.scaling.yarn_attn_factor",
    "rope.scaling.yarn_beta_fast",
    "rope.scaling.yarn_beta_slow",
    "pooling_type",
};

// "<arch>." keys that llama.cpp's converters write and that do not change the arithmetic.
constexpr std::array<std::string_view, 3> kInertKeys = {
    "vocab_size",              // n_vocab is the tokenizer's token count
    "rope.scaling.finetuned",  // how the model was trained; llama.cpp reads it and never uses it
    "tensor_data_layout",      // early Llama converters' note; llama.cpp ignores it
};

// Refuses a file with an "<arch>." key that nothing reads (softcapping, sliding windows, expert
// gating, …): minfer would ignore it and compute something else than the model means.
Status check_keys_understood(const GgufFile& file, const std::string& p, const ArchSpec& arch) {
  for (const GgufKeyValue& kv : file.metadata()) {
    if (!kv.key.starts_with(p)) continue;
    const std::string_view suffix = std::string_view(kv.key).substr(p.size());
    auto listed = [suffix](const auto& keys) {
      return std::find(keys.begin(), keys.end(), suffix) != keys.end();
    };
    if (listed(kSharedKeys) || listed(kInertKeys) || listed(arch.own_keys)) continue;
    return make_error(ErrorCode::kUnsupported,
                      "[model] '{}': key '{}' is not read by architecture '{}' (minfer would "
                      "ignore it and compute something else)",
                      file.name(), kv.key, arch.name);
  }
  return Status::ok();
}

// Rope scaling as llama.cpp reads it (llama-model.cpp, then llama-context.cpp's cparams): the
// kind defaults to linear, the factor (rope.scaling.factor, else the older rope.scale_linear; 0
// or absent: none) divides the frequencies; YaRN mixes in extrapolation (ext_factor 1 unless
// set) with a magnitude of (0.1 ln factor + 1) / (1 + 0.1 ln factor), which ggml's rope
// multiplies by (1 + 0.1 ln factor) again. Kinds other than none, linear and yarn (longrope, …)
// are refused: minfer would compute other angles than the model's.
Status read_rope_scaling(const GgufFile& file, const std::string& p, ModelConfig& c) {
  const std::string type_key = p + "rope.scaling.type";
  std::string type = "linear";
  if (file.has(type_key)) {
    MINFER_ASSIGN_OR_RETURN(type, file.get_string(type_key));
  }
  if (type != "none" && type != "linear" && type != "yarn") {
    return make_error(
        ErrorCode::kUnsupported,
        "[model] '{}': key '{}' is rope scaling '{}', which minfer does not implement "
        "(none, linear, yarn)",
        file.name(), type_key, type);
  }
  const std::string factor_key =
      file.has(p + "rope.scaling.factor") ? p + "rope.scaling.factor" : p + "rope.scale_linear";
  MINFER_ASSIGN_OR_RETURN(const float factor, read_float_or(file, factor_key, 0.0f));
  if (factor < 0.0f) {
    return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' is {}, expected >= 0",
                      file.name(), factor_key, factor);
  }
  c.rope_freq_scale = type == "none" || factor == 0.0f ? 1.0f : 1.0f / factor;
  MINFER_ASSIGN_OR_RETURN(
      c.rope_n_ctx_orig,
      read_positive_or(file, p + "rope.scaling.original_context_length", c.n_ctx_train));
  MINFER_ASSIGN_OR_RETURN(float ext_factor,
                          read_float_or(file, p + "rope.scaling.yarn_ext_factor", -1.0f));
  MINFER_ASSIGN_OR_RETURN(float magnitude,
                          read_float_or(file, p + "rope.scaling.yarn_attn_factor", 1.0f));
  MINFER_ASSIGN_OR_RETURN(c.rope_yarn_beta_fast,
                          read_float_or(file, p + "rope.scaling.yarn_beta_fast", 32.0f));
  MINFER_ASSIGN_OR_RETURN(c.rope_yarn_beta_slow,
                          read_float_or(file, p + "rope.scaling.yarn_beta_slow", 1.0f));
  MINFER_ASSIGN_OR_RETURN(const float attn_factor,
                          read_float_or(file, p + "rope.scaling.attn_factor", 1.0f));
  if (ext_factor < 0.0f) ext_factor = type == "yarn" ? 1.0f : 0.0f;
  if (ext_factor != 0.0f) {
    const float scale = 1.0f / c.rope_freq_scale;
    magnitude = scale <= 1.0f ? 1.0f : 0.1f * std::log(scale) + 1.0f;
    magnitude *= 1.0f / (1.0f + 0.1f * std::log(scale));
  }
  c.rope_ext_factor = ext_factor;
  c.rope_attn_factor = magnitude * attn_factor;
  return Status::ok();
}

}  // namespace

kernels::RopeConfig rope_config(const ModelConfig& c, const float* freq_factors, float freq_base) {
  kernels::RopeConfig rope;
  rope.n_rot = c.n_rot;
  rope.freq_base = freq_base;
  rope.freq_scale = c.rope_freq_scale;
  rope.style = c.rope_style;
  rope.freq_factors = freq_factors;
  rope.ext_factor = c.rope_ext_factor;
  rope.attn_factor = c.rope_attn_factor;
  if (rope.ext_factor != 0.0f) {
    kernels::set_yarn_corr_dims(rope, c.rope_n_ctx_orig, c.rope_yarn_beta_fast,
                                c.rope_yarn_beta_slow);
  }
  return rope;
}

std::span<const ArchSpec* const> supported_archs() {
  static const std::array<const ArchSpec*, 9> archs = {&kLlamaArch,     &kQwen2Arch,  &kQwen3Arch,
                                                       &kQwen3MoeArch,  &kGemma3Arch, &kQwen35Arch,
                                                       &kQwen35MoeArch, &kGptOssArch, &kGemma4Arch};
  return archs;
}

Result<ArchSpec> find_arch(const std::string& name) {
  std::string known;
  for (const ArchSpec* spec : supported_archs()) {
    if (name == spec->name) return *spec;
    known += known.empty() ? spec->name : std::string(", ") + spec->name;
  }
  return make_error(ErrorCode::kUnsupported, "[model] unknown architecture '{}' (supported: {})",
                    name, known);
}

void apply_arch(const ArchSpec& arch, ModelConfig& c) {
  c.arch = arch.name;
  c.qkv_bias = arch.qkv_bias;
  c.qk_norm = arch.qk_norm;
  c.rope_style = arch.rope_style;
}

Result<ModelConfig> read_model_config(const GgufFile& file) {
  ModelConfig c;
  MINFER_ASSIGN_OR_RETURN(const std::string arch_name, file.get_string("general.architecture"));
  MINFER_ASSIGN_OR_RETURN(ArchSpec arch, find_arch(arch_name));
  apply_arch(arch, c);

  const std::string p = c.arch + ".";
  MINFER_ASSIGN_OR_RETURN(c.n_embd, read_positive(file, p + "embedding_length"));
  MINFER_ASSIGN_OR_RETURN(c.n_layer, read_positive(file, p + "block_count"));
  MINFER_ASSIGN_OR_RETURN(c.n_head, read_positive(file, p + "attention.head_count"));
  // Per-layer arrays (Gemma 4) are the architecture's to read (ArchSpec::per_layer_widths).
  const auto per_layer = [&](const char* key) {
    const GgufValue* v = file.find(p + key);
    return arch.per_layer_widths && v != nullptr && v->is_array();
  };
  c.n_head_kv = c.n_head;
  if (!per_layer("attention.head_count_kv")) {
    MINFER_ASSIGN_OR_RETURN(c.n_head_kv,
                            read_positive_or(file, p + "attention.head_count_kv", c.n_head));
  }
  // A mixture of experts may leave the dense width out (Qwen3.5-MoE): its experts' widths are
  // keys of their own, checked by the architecture.
  if (!per_layer("feed_forward_length")) {
    MINFER_ASSIGN_OR_RETURN(c.n_ff, file.has(p + "expert_count")
                                        ? read_positive_or(file, p + "feed_forward_length", 0)
                                        : read_positive(file, p + "feed_forward_length"));
  }
  MINFER_ASSIGN_OR_RETURN(c.n_ctx_train, read_positive_or(file, p + "context_length", 2048));
  if (c.n_embd % c.n_head != 0 && !file.has(p + "attention.key_length")) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': n_embd {} is not a multiple of n_head {} and there is no "
                      "attention.key_length",
                      file.name(), c.n_embd, c.n_head);
  }
  MINFER_ASSIGN_OR_RETURN(c.head_dim,
                          read_positive_or(file, p + "attention.key_length", c.n_embd / c.n_head));
  MINFER_ASSIGN_OR_RETURN(c.head_dim_v,
                          read_positive_or(file, p + "attention.value_length", c.head_dim));
  MINFER_ASSIGN_OR_RETURN(c.n_rot, read_positive_or(file, p + "rope.dimension_count", c.head_dim));
  if (c.n_head % c.n_head_kv != 0) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': n_head {} is not a multiple of n_head_kv {}", file.name(),
                      c.n_head, c.n_head_kv);
  }
  if (c.n_rot > c.head_dim || c.n_rot % 2 != 0 || c.n_rot > kernels::kMaxRopeDims) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': rope.dimension_count {} must be even and at most head_dim {}",
                      file.name(), c.n_rot, c.head_dim);
  }
  MINFER_ASSIGN_OR_RETURN(c.rope_freq_base, read_float_or(file, p + "rope.freq_base", 10000.0f));
  MINFER_ASSIGN_OR_RETURN(c.rms_eps,
                          read_float_or(file, p + "attention.layer_norm_rms_epsilon", 1e-5f));
  MINFER_RETURN_IF_ERROR(read_rope_scaling(file, p, c));
  if (file.has(p + "pooling_type")) {
    MINFER_ASSIGN_OR_RETURN(const int64_t pooling, file.get_integer(p + "pooling_type"));
    if (pooling < 0 || pooling > 4) {
      return make_error(ErrorCode::kCorrupt,
                        "[model] '{}': key '{}pooling_type' is {}, expected 0..4 (none, mean, "
                        "cls, last, rank)",
                        file.name(), p, pooling);
    }
    c.pooling_type = static_cast<int32_t>(pooling);
  }

  MINFER_ASSIGN_OR_RETURN(const std::vector<std::string>* tokens,
                          file.get_string_array("tokenizer.ggml.tokens"));
  c.n_vocab = static_cast<int64_t>(tokens->size());
  c.tied_output = file.find_tensor("output.weight") == nullptr;
  c.rope_freq_factors = file.find_tensor("rope_freqs.weight") != nullptr;
  if (arch.read_keys != nullptr) MINFER_RETURN_IF_ERROR(arch.read_keys(file, p, c));
  MINFER_RETURN_IF_ERROR(check_keys_understood(file, p, arch));
  return c;
}

}  // namespace minfer
