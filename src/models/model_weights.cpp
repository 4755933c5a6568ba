#include "models/model_weights.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "models/tensor_spec.h"

namespace minfer {

namespace {

// Finds one tensor of the spec and checks its shape and type.
Result<WeightTensor> load_tensor(const GgufFile& file, const TensorSpec& spec) {
  const std::string& name = spec.name;
  const GgufTensorInfo* info = file.find_tensor(name);
  if (info == nullptr) {
    return make_error(ErrorCode::kCorrupt, "[model] '{}': tensor '{}' is missing", file.name(),
                      name);
  }
  const std::vector<uint64_t> expected = spec.shape();
  // A trailing dimension of 1 is the same shape (a one-row matrix is a vector).
  auto trimmed = [](std::vector<uint64_t> shape) {
    while (shape.size() > 1 && shape.back() == 1) shape.pop_back();
    return shape;
  };
  if (trimmed(info->shape) != trimmed(expected)) {
    return make_error(ErrorCode::kCorrupt,
                      "[model] '{}': tensor '{}' has shape [{}], expected [{}]", file.name(), name,
                      fmt::join(info->shape, ", "), fmt::join(expected, ", "));
  }
  // Vectors (norm weights, biases) are f32 in every file llama.cpp writes; matrices may be any
  // type minfer computes with.
  const bool f32_only = spec.f32_only();
  const GgmlTypeInfo& type = ggml_type_info(info->type);
  if (f32_only ? info->type != GgmlType::kF32 : !type.computable || info->type == GgmlType::kQ8_K) {
    return make_error(ErrorCode::kUnsupported,
                      "[model] '{}': tensor '{}' has type {}, which minfer cannot compute with{}",
                      file.name(), name, type.name, f32_only ? " here (expected f32)" : "");
  }
  WeightTensor w;
  w.name = info->name.c_str();
  w.type = info->type;
  w.n_cols = spec.n_cols;
  w.n_rows = spec.n_rows;
  w.n_mats = spec.n_mats;
  w.data = file.tensor_data(*info).data();
  w.row_bytes = *ggml_row_bytes(info->type, static_cast<uint64_t>(spec.n_cols));
  return w;
}

// Refuses a file holding a tensor that the architecture's list does not name: a model that
// needs it (a Mixtral's experts in a "llama" file, a Llama 3 rope_freqs in a "qwen2" one) would
// run without it.
Status check_tensors_read(const GgufFile& file, const ModelConfig& c,
                          const std::vector<TensorSpec>& specs) {
  std::unordered_set<std::string_view> listed;
  for (const TensorSpec& spec : specs) listed.insert(spec.name);
  for (const GgufTensorInfo& info : file.tensors()) {
    if (listed.contains(info.name)) continue;
    return make_error(ErrorCode::kUnsupported,
                      "[model] '{}': tensor '{}' is not read by architecture '{}' (minfer would "
                      "ignore it and compute something else)",
                      file.name(), info.name, c.arch);
  }
  return Status::ok();
}

// Llama 3's frequency divisors must be positive and finite (a 0 would make every angle of its
// pair infinite).
Status check_rope_freqs(const GgufFile& file, const WeightTensor& w) {
  for (int64_t i = 0; i < w.n_cols; ++i) {
    const float f = w.f32()[i];
    if (!(std::isfinite(f) && f > 0.0f)) {
      return make_error(ErrorCode::kCorrupt,
                        "[model] '{}': tensor '{}' value {} is {}, expected a finite number > 0",
                        file.name(), w.name, i, f);
    }
  }
  return Status::ok();
}

// The all-ones weights of V's per-head norm (ModelConfig::v_norm), one view per layer of its
// head_dim_v into m.ones.
void add_unit_v_norms(const ModelConfig& c, ModelWeights& m) {
  int64_t widest = 0;
  for (int64_t il = 0; il < c.n_layer; ++il) widest = std::max(widest, c.layer_head_dim_v(il));
  m.ones.assign(static_cast<size_t>(widest), 1.0f);
  for (int64_t il = 0; il < c.n_layer; ++il) {
    WeightTensor w;
    w.name = "v_norm (ones)";
    w.n_cols = c.layer_head_dim_v(il);
    w.n_rows = 1;
    w.data = reinterpret_cast<const uint8_t*>(m.ones.data());
    w.row_bytes = static_cast<size_t>(w.n_cols) * sizeof(float);
    m.layers[static_cast<size_t>(il)].v_norm = w;
  }
}

}  // namespace

Result<ModelWeights> load_model_weights(const GgufFile& file, const ModelConfig& c) {
  MINFER_ASSIGN_OR_RETURN(const std::vector<TensorSpec> specs, model_tensors(c));
  MINFER_RETURN_IF_ERROR(check_tensors_read(file, c, specs));
  ModelWeights m;
  m.layers.resize(static_cast<size_t>(c.n_layer));
  for (const TensorSpec& spec : specs) {
    MINFER_ASSIGN_OR_RETURN(spec.slot(m, spec.il), load_tensor(file, spec));
  }
  if (c.tied_output) m.output = m.token_embd;
  if (m.rope_freqs) {
    MINFER_RETURN_IF_ERROR(check_rope_freqs(file, *m.rope_freqs));
    for (LayerWeights& layer : m.layers) layer.rope_freqs = m.rope_freqs;
  }
  if (c.v_norm) add_unit_v_norms(c, m);
  return m;
}

}  // namespace minfer
