#include "models/model_weights.h"

#include <fmt/format.h>

#include <string>

namespace minfer {

namespace {

class WeightLoader {
 public:
  WeightLoader(const GgufFile& file) : file_(file) {}

  // A matrix of n_rows rows of n_cols (any type minfer computes with).
  Result<WeightTensor> matrix(const std::string& name, int64_t n_cols, int64_t n_rows) {
    return get(name, n_cols, n_rows, /*f32_only=*/false);
  }
  // A vector (norm weight or bias): f32 in every file llama.cpp writes.
  Result<WeightTensor> vector(const std::string& name, int64_t n) {
    return get(name, n, 1, /*f32_only=*/true);
  }

 private:
  Result<WeightTensor> get(const std::string& name, int64_t n_cols, int64_t n_rows, bool f32_only) {
    const GgufTensorInfo* info = file_.find_tensor(name);
    if (info == nullptr) {
      return make_error(ErrorCode::kCorrupt, "[model] '{}': tensor '{}' is missing", file_.name(),
                        name);
    }
    const std::vector<uint64_t> expected =
        n_rows == 1
            ? std::vector<uint64_t>{static_cast<uint64_t>(n_cols)}
            : std::vector<uint64_t>{static_cast<uint64_t>(n_cols), static_cast<uint64_t>(n_rows)};
    // A trailing dimension of 1 is the same shape.
    std::vector<uint64_t> actual = info->shape;
    while (actual.size() > expected.size() && actual.back() == 1) actual.pop_back();
    if (actual != expected) {
      return make_error(ErrorCode::kCorrupt,
                        "[model] '{}': tensor '{}' has shape [{}], expected [{}]", file_.name(),
                        name, fmt::join(info->shape, ", "), fmt::join(expected, ", "));
    }
    const GgmlTypeInfo& type = ggml_type_info(info->type);
    if (f32_only ? info->type != GgmlType::kF32
                 : !type.computable || info->type == GgmlType::kQ8_K) {
      return make_error(ErrorCode::kUnsupported,
                        "[model] '{}': tensor '{}' has type {}, which minfer cannot compute with{}",
                        file_.name(), name, type.name, f32_only ? " here (expected f32)" : "");
    }
    WeightTensor w;
    w.name = info->name.c_str();
    w.type = info->type;
    w.n_cols = n_cols;
    w.n_rows = n_rows;
    w.data = file_.tensor_data(*info).data();
    w.row_bytes = *ggml_row_bytes(info->type, static_cast<uint64_t>(n_cols));
    return w;
  }

  const GgufFile& file_;
};

}  // namespace

Result<ModelWeights> load_model_weights(const GgufFile& file, const ModelConfig& c) {
  WeightLoader load(file);
  ModelWeights m;
  MINFER_ASSIGN_OR_RETURN(m.token_embd, load.matrix("token_embd.weight", c.n_embd, c.n_vocab));
  MINFER_ASSIGN_OR_RETURN(m.output_norm, load.vector("output_norm.weight", c.n_embd));
  if (c.tied_output) {
    m.output = m.token_embd;
  } else {
    MINFER_ASSIGN_OR_RETURN(m.output, load.matrix("output.weight", c.n_embd, c.n_vocab));
  }
  m.layers.resize(static_cast<size_t>(c.n_layer));
  for (int64_t il = 0; il < c.n_layer; ++il) {
    LayerWeights& l = m.layers[static_cast<size_t>(il)];
    const std::string p = fmt::format("blk.{}.", il);
    MINFER_ASSIGN_OR_RETURN(l.attn_norm, load.vector(p + "attn_norm.weight", c.n_embd));
    MINFER_ASSIGN_OR_RETURN(l.wq, load.matrix(p + "attn_q.weight", c.n_embd, c.q_width()));
    MINFER_ASSIGN_OR_RETURN(l.wk, load.matrix(p + "attn_k.weight", c.n_embd, c.k_width()));
    MINFER_ASSIGN_OR_RETURN(l.wv, load.matrix(p + "attn_v.weight", c.n_embd, c.v_width()));
    if (c.qkv_bias) {
      MINFER_ASSIGN_OR_RETURN(l.bq, load.vector(p + "attn_q.bias", c.q_width()));
      MINFER_ASSIGN_OR_RETURN(l.bk, load.vector(p + "attn_k.bias", c.k_width()));
      MINFER_ASSIGN_OR_RETURN(l.bv, load.vector(p + "attn_v.bias", c.v_width()));
    }
    if (c.qk_norm) {
      MINFER_ASSIGN_OR_RETURN(l.q_norm, load.vector(p + "attn_q_norm.weight", c.head_dim));
      MINFER_ASSIGN_OR_RETURN(l.k_norm, load.vector(p + "attn_k_norm.weight", c.head_dim));
    }
    MINFER_ASSIGN_OR_RETURN(
        l.wo, load.matrix(p + "attn_output.weight", c.n_head * c.head_dim_v, c.n_embd));
    MINFER_ASSIGN_OR_RETURN(l.ffn_norm, load.vector(p + "ffn_norm.weight", c.n_embd));
    MINFER_ASSIGN_OR_RETURN(l.gate, load.matrix(p + "ffn_gate.weight", c.n_embd, c.n_ff));
    MINFER_ASSIGN_OR_RETURN(l.up, load.matrix(p + "ffn_up.weight", c.n_embd, c.n_ff));
    MINFER_ASSIGN_OR_RETURN(l.down, load.matrix(p + "ffn_down.weight", c.n_ff, c.n_embd));
  }
  return m;
}

}  // namespace minfer
