#include "models/model_config.h"

#include <array>
#include <cmath>

#include "models/architectures.h"

namespace minfer {

namespace {

const std::array<const ArchSpec*, 4>& all_archs() {
  static const std::array<const ArchSpec*, 4> archs = {&kLlamaArch, &kQwen2Arch, &kQwen3Arch,
                                                       &kQwen3MoeArch};
  return archs;
}

// Reads a positive integer hyperparameter.
Result<int64_t> read_positive(const GgufFile& file, const std::string& key) {
  MINFER_ASSIGN_OR_RETURN(int64_t v, file.get_integer(key));
  if (v <= 0) {
    return make_error(ErrorCode::kCorrupt, "[model] '{}': key '{}' is {}, expected > 0",
                      file.name(), key, v);
  }
  return v;
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

}  // namespace

Result<ArchSpec> find_arch(const std::string& name) {
  std::string known;
  for (const ArchSpec* spec : all_archs()) {
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
  MINFER_ASSIGN_OR_RETURN(c.n_head_kv,
                          read_positive_or(file, p + "attention.head_count_kv", c.n_head));
  MINFER_ASSIGN_OR_RETURN(c.n_ff, read_positive(file, p + "feed_forward_length"));
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
  // Rope scaling: none or linear (positions divided by the factor). Other kinds (yarn, longrope)
  // change the angles in ways we do not implement: refuse them rather than run wrong.
  std::string scaling = "none";
  if (file.has(p + "rope.scaling.type")) {
    MINFER_ASSIGN_OR_RETURN(scaling, file.get_string(p + "rope.scaling.type"));
  }
  MINFER_ASSIGN_OR_RETURN(float factor, read_float_or(file, p + "rope.scaling.factor", 1.0f));
  if (scaling == "linear") {
    if (factor <= 0.0f) {
      return make_error(ErrorCode::kCorrupt, "[model] '{}': rope.scaling.factor {} must be > 0",
                        file.name(), factor);
    }
    c.rope_freq_scale = 1.0f / factor;
  } else if (scaling != "none" && factor != 1.0f) {
    return make_error(ErrorCode::kUnsupported,
                      "[model] '{}': rope scaling '{}' (factor {}) is not supported (none, linear)",
                      file.name(), scaling, factor);
  }

  MINFER_ASSIGN_OR_RETURN(const std::vector<std::string>* tokens,
                          file.get_string_array("tokenizer.ggml.tokens"));
  c.n_vocab = static_cast<int64_t>(tokens->size());
  c.tied_output = file.find_tensor("output.weight") == nullptr;
  if (arch.read_keys != nullptr) MINFER_RETURN_IF_ERROR(arch.read_keys(file, p, c));
  return c;
}

}  // namespace minfer
