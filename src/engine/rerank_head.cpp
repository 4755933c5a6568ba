#include "engine/rerank_head.h"

#include <cmath>
#include <map>

#include <fmt/format.h>

#include "quant/quant_traits.h"

namespace minfer::engine {

namespace {

constexpr int64_t kRankPooling = 4;  // llama.cpp's LLAMA_POOLING_TYPE_RANK

struct HeadTensor {
  std::vector<float> values;  // [n_rows, n_cols] row-major
  int64_t n_cols = 0;
  int64_t n_rows = 0;
};

Result<HeadTensor> read_head_tensor(const GgufFile& file, const GgufTensorInfo& t) {
  if (t.shape.empty() || t.shape.size() > 2) {
    return make_error(ErrorCode::kUnsupported,
                      "[rerank] '{}': tensor '{}' has {} dimensions, expected 1 or 2", file.name(),
                      t.name, t.shape.size());
  }
  HeadTensor h;
  h.n_cols = static_cast<int64_t>(t.shape[0]);
  h.n_rows = static_cast<int64_t>(t.n_rows());
  h.values.resize(static_cast<size_t>(t.n_elements));
  const Status st = dequantize_checked(t.type, file.tensor_data(t), h.values);
  if (!st.is_ok()) {
    return make_error(ErrorCode::kUnsupported, "[rerank] '{}': tensor '{}': {}", file.name(),
                      t.name, st.message());
  }
  return h;
}

// Checks that a tensor of the head is [n_cols] (a vector) or [n_cols, n_rows] (a matrix).
Status check_head_shape(const GgufFile& file, std::string_view name, const HeadTensor& h,
                        int64_t n_cols, int64_t n_rows) {
  if (h.n_cols == n_cols && h.n_rows == n_rows) return Status::ok();
  return make_error(ErrorCode::kCorrupt,
                    "[rerank] '{}': tensor '{}' is [{}, {}], expected [{}, {}]", file.name(), name,
                    h.n_cols, h.n_rows, n_cols, n_rows);
}

// Whether <arch>.classifier.output_labels is ["yes", "no"]. The key is taken out of the file
// with the tensors: the model's loader refuses keys of its architecture it does not read.
Result<bool> take_yes_no_labels(GgufFile& file, const std::string& arch) {
  const std::string key = arch + ".classifier.output_labels";
  if (!file.has(key)) return false;
  MINFER_ASSIGN_OR_RETURN(const std::vector<std::string>* labels, file.get_string_array(key));
  const bool yes_no = labels->size() == 2 && (*labels)[0] == "yes" && (*labels)[1] == "no";
  file.drop(key);
  return yes_no;
}

// The head from the tensors taken (by name); checks that their shapes chain.
Result<RerankHead> build_head(const GgufFile& file, std::map<std::string, HeadTensor>& t,
                              int64_t n_embd, bool yes_no_labelled) {
  RerankHead head;
  head.n_embd = n_embd;
  int64_t n_in = n_embd;
  if (auto it = t.find("cls.weight"); it != t.end()) {
    head.n_inner = it->second.n_rows;
    MINFER_RETURN_IF_ERROR(check_head_shape(file, "cls.weight", it->second, n_embd, head.n_inner));
    head.dense = std::move(it->second.values);
    n_in = head.n_inner;
    if (auto b = t.find("cls.bias"); b != t.end()) {
      MINFER_RETURN_IF_ERROR(check_head_shape(file, "cls.bias", b->second, head.n_inner, 1));
      head.dense_bias = std::move(b->second.values);
    }
  } else if (t.contains("cls.bias")) {
    return make_error(ErrorCode::kCorrupt, "[rerank] '{}': cls.bias without cls.weight",
                      file.name());
  }
  if (auto it = t.find("cls.output.weight"); it != t.end()) {
    head.n_out = it->second.n_rows;
    MINFER_RETURN_IF_ERROR(
        check_head_shape(file, "cls.output.weight", it->second, n_in, head.n_out));
    head.out = std::move(it->second.values);
    if (auto b = t.find("cls.output.bias"); b != t.end()) {
      MINFER_RETURN_IF_ERROR(check_head_shape(file, "cls.output.bias", b->second, head.n_out, 1));
      head.out_bias = std::move(b->second.values);
    }
  } else if (t.contains("cls.output.bias")) {
    return make_error(ErrorCode::kCorrupt,
                      "[rerank] '{}': cls.output.bias without cls.output.weight", file.name());
  }
  if (head.n_inner == 0 && head.n_out == 0) {
    return make_error(ErrorCode::kCorrupt,
                      "[rerank] '{}': the classifier head has biases but no cls.weight or "
                      "cls.output.weight",
                      file.name());
  }
  const int64_t n_scores = head.n_out > 0 ? head.n_out : head.n_inner;
  head.yes_no = head.n_out == 2 && yes_no_labelled;
  if (n_scores != 1 && !head.yes_no) {
    return make_error(ErrorCode::kUnsupported,
                      "[rerank] '{}': the classifier head gives {} outputs; minfer reranks with "
                      "one score, or with two labelled yes and no (Qwen3-Reranker)",
                      file.name(), n_scores);
  }
  return head;
}

double dot_row(std::span<const float> row, std::span<const float> x) {
  double sum = 0.0;
  for (size_t i = 0; i < x.size(); ++i) sum += static_cast<double>(row[i]) * x[i];
  return sum;
}

}  // namespace

float RerankHead::score(std::span<const float> hidden) const {
  std::vector<float> x(hidden.begin(), hidden.end());  // [n_in]
  if (n_inner > 0) {
    std::vector<float> inner(static_cast<size_t>(n_inner));  // [n_inner]
    for (int64_t r = 0; r < n_inner; ++r) {
      const std::span<const float> row(dense.data() + r * n_embd, static_cast<size_t>(n_embd));
      double v = dot_row(row, x);
      if (!dense_bias.empty()) v += dense_bias[static_cast<size_t>(r)];
      inner[static_cast<size_t>(r)] = static_cast<float>(std::tanh(v));
    }
    x = std::move(inner);
  }
  if (n_out == 0) return x[0];
  std::vector<double> y(static_cast<size_t>(n_out));  // [n_out]
  for (int64_t r = 0; r < n_out; ++r) {
    const std::span<const float> row(out.data() + r * static_cast<int64_t>(x.size()), x.size());
    y[static_cast<size_t>(r)] =
        dot_row(row, x) + (out_bias.empty() ? 0.0 : out_bias[static_cast<size_t>(r)]);
  }
  return yes_no ? yes_probability(y[0], y[1]) : static_cast<float>(y[0]);
}

float yes_probability(double yes, double no) {
  return static_cast<float>(1.0 / (1.0 + std::exp(no - yes)));
}

std::string RerankHead::describe() const {
  std::string out_text = "classifier head (";
  if (n_inner > 0) out_text += fmt::format("cls {}→{} + tanh", n_embd, n_inner);
  if (n_out > 0) {
    if (n_inner > 0) out_text += ", ";
    out_text += fmt::format("cls.output {}→{}", n_inner > 0 ? n_inner : n_embd, n_out);
  }
  out_text += yes_no ? "; score P(yes))" : ")";
  return out_text;
}

Result<std::optional<RerankHead>> take_rerank_head(GgufFile& file) {
  if (!file.has("general.architecture")) return std::optional<RerankHead>();
  MINFER_ASSIGN_OR_RETURN(const std::string arch, file.get_string("general.architecture"));
  const std::string pooling_key = arch + ".pooling_type";
  if (!file.has(pooling_key)) return std::optional<RerankHead>();
  MINFER_ASSIGN_OR_RETURN(const int64_t pooling, file.get_integer(pooling_key));
  if (pooling != kRankPooling) return std::optional<RerankHead>();
  MINFER_ASSIGN_OR_RETURN(const int64_t n_embd, file.get_integer(arch + ".embedding_length"));
  std::map<std::string, HeadTensor> tensors;
  const std::vector<GgufTensorInfo> taken = file.take_tensors("cls.");
  // No head at all: the file loads as the generative model it also is (the reranker then tries
  // the yes/no method).
  if (taken.empty()) return std::optional<RerankHead>();
  for (const GgufTensorInfo& info : taken) {
    if (info.name != "cls.weight" && info.name != "cls.bias" && info.name != "cls.output.weight" &&
        info.name != "cls.output.bias") {
      return make_error(ErrorCode::kUnsupported,
                        "[rerank] '{}': tensor '{}' is not computed (minfer's classifier heads: "
                        "cls.weight, cls.bias, cls.output.weight, cls.output.bias)",
                        file.name(), info.name);
    }
    MINFER_ASSIGN_OR_RETURN(tensors[info.name], read_head_tensor(file, info));
  }
  MINFER_ASSIGN_OR_RETURN(const bool labelled, take_yes_no_labels(file, arch));
  MINFER_ASSIGN_OR_RETURN(RerankHead head, build_head(file, tensors, n_embd, labelled));
  return std::optional<RerankHead>(std::move(head));
}

}  // namespace minfer::engine
