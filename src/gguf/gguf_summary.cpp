#include "gguf/gguf_summary.h"

#include <algorithm>
#include <map>

namespace minfer {

namespace {

// Each reader returns nullopt for an absent key and an error for a present key of the wrong
// type (get_* name the key and both types).
Result<std::optional<std::string>> optional_string(const GgufFile& file, const std::string& key) {
  if (!file.has(key)) return std::optional<std::string>();
  MINFER_ASSIGN_OR_RETURN(std::string value, file.get_string(key));
  return std::optional<std::string>(std::move(value));
}

// A count: any integer type, but not negative.
Result<std::optional<int64_t>> optional_count(const GgufFile& file, const std::string& key) {
  if (!file.has(key)) return std::optional<int64_t>();
  MINFER_ASSIGN_OR_RETURN(int64_t value, file.get_integer(key));
  if (value < 0) {
    return make_error(ErrorCode::kCorrupt,
                      "[gguf] '{}': key '{}' is {}, expected a non-negative integer", file.name(),
                      key, value);
  }
  return std::optional<int64_t>(value);
}

// A count a file may give per layer (llama.cpp reads attention.head_count, head_count_kv and
// feed_forward_length as one integer or an array of one per layer, as Gemma 4's files do): the
// largest; each layer's into `per_layer` when given so.
Result<std::optional<int64_t>> optional_layer_count(const GgufFile& file, const std::string& key,
                                                    std::vector<int64_t>& per_layer) {
  const GgufValue* v = file.find(key);
  if (v == nullptr || !v->is_array()) return optional_count(file, key);
  std::vector<int64_t> values;
  if (const auto i32 = v->array_as<int32_t>()) values.assign(i32->begin(), i32->end());
  if (const auto u32 = v->array_as<uint32_t>()) values.assign(u32->begin(), u32->end());
  if (values.empty() ||
      std::any_of(values.begin(), values.end(), [](int64_t x) { return x < 0; })) {
    return make_error(ErrorCode::kCorrupt,
                      "[gguf] '{}': key '{}' holds {}, expected a non-negative integer or a "
                      "non-empty array of them (one per layer)",
                      file.name(), key, v->describe());
  }
  per_layer = std::move(values);
  return std::optional<int64_t>(*std::max_element(per_layer.begin(), per_layer.end()));
}

Result<std::optional<double>> optional_floating(const GgufFile& file, const std::string& key) {
  if (!file.has(key)) return std::optional<double>();
  MINFER_ASSIGN_OR_RETURN(double value, file.get_floating(key));
  return std::optional<double>(value);
}

Status read_hparams(const GgufFile& file, const std::string& arch, GgufSummary& s) {
  const std::string p = arch + ".";
  MINFER_ASSIGN_OR_RETURN(s.n_embd, optional_count(file, p + "embedding_length"));
  MINFER_ASSIGN_OR_RETURN(s.n_layer, optional_count(file, p + "block_count"));
  MINFER_ASSIGN_OR_RETURN(
      s.n_head, optional_layer_count(file, p + "attention.head_count", s.per_layer["n_head"]));
  MINFER_ASSIGN_OR_RETURN(s.n_head_kv, optional_layer_count(file, p + "attention.head_count_kv",
                                                            s.per_layer["n_head_kv"]));
  MINFER_ASSIGN_OR_RETURN(s.head_dim, optional_count(file, p + "attention.key_length"));
  s.head_dim_from_key = s.head_dim.has_value();
  // Without attention.key_length, llama.cpp takes head_dim = n_embd / n_head (Qwen3 sets the key
  // because its head_dim differs from that).
  if (!s.head_dim && s.n_embd && s.n_head && *s.n_head > 0) s.head_dim = *s.n_embd / *s.n_head;
  MINFER_ASSIGN_OR_RETURN(
      s.n_ff, optional_layer_count(file, p + "feed_forward_length", s.per_layer["n_ff"]));
  std::erase_if(s.per_layer, [](const auto& kv) { return kv.second.empty(); });
  MINFER_ASSIGN_OR_RETURN(s.n_ctx_train, optional_count(file, p + "context_length"));
  MINFER_ASSIGN_OR_RETURN(s.n_rot, optional_count(file, p + "rope.dimension_count"));
  MINFER_ASSIGN_OR_RETURN(s.rope_freq_base, optional_floating(file, p + "rope.freq_base"));
  MINFER_ASSIGN_OR_RETURN(s.rope_scaling.type, optional_string(file, p + "rope.scaling.type"));
  MINFER_ASSIGN_OR_RETURN(s.rope_scaling.factor,
                          optional_floating(file, p + "rope.scaling.factor"));
  MINFER_ASSIGN_OR_RETURN(s.rope_scaling.original_context_length,
                          optional_count(file, p + "rope.scaling.original_context_length"));
  MINFER_ASSIGN_OR_RETURN(s.rope_scaling.attn_factor,
                          optional_floating(file, p + "rope.scaling.attn_factor"));
  MINFER_ASSIGN_OR_RETURN(s.rms_eps,
                          optional_floating(file, p + "attention.layer_norm_rms_epsilon"));
  return Status::ok();
}

Status read_tokenizer(const GgufFile& file, GgufSummary& s) {
  if (file.has("tokenizer.ggml.tokens")) {
    MINFER_ASSIGN_OR_RETURN(const std::vector<std::string>* tokens,
                            file.get_string_array("tokenizer.ggml.tokens"));
    s.n_vocab = static_cast<int64_t>(tokens->size());
  }
  MINFER_ASSIGN_OR_RETURN(s.tokenizer_model, optional_string(file, "tokenizer.ggml.model"));
  MINFER_ASSIGN_OR_RETURN(s.tokenizer_pre, optional_string(file, "tokenizer.ggml.pre"));
  MINFER_ASSIGN_OR_RETURN(std::optional<std::string> chat_template,
                          optional_string(file, "tokenizer.chat_template"));
  s.has_chat_template = chat_template.has_value();
  if (chat_template) s.chat_template_length = static_cast<int64_t>(chat_template->size());
  return Status::ok();
}

}  // namespace

Result<GgufSummary> summarize_gguf(const GgufFile& file) {
  GgufSummary s;
  s.path = file.name();
  s.version = file.version();
  s.alignment = file.alignment();
  s.file_size = file.file_size();
  s.n_parts = file.n_parts();
  s.data_offset = file.data_offset();
  s.n_metadata = file.metadata().size();

  MINFER_ASSIGN_OR_RETURN(s.architecture, optional_string(file, "general.architecture"));
  MINFER_ASSIGN_OR_RETURN(s.name, optional_string(file, "general.name"));
  if (s.architecture) MINFER_RETURN_IF_ERROR(read_hparams(file, *s.architecture, s));
  MINFER_RETURN_IF_ERROR(read_tokenizer(file, s));

  // The reader has bounded every tensor by the file size, so these sums cannot overflow.
  std::map<uint32_t, GgufTypeCount> by_type;  // type id -> totals, ordered by id
  for (const GgufTensorInfo& t : file.tensors()) {
    GgufTypeCount& c =
        by_type.try_emplace(static_cast<uint32_t>(t.type), GgufTypeCount{t.type}).first->second;
    c.n_tensors += 1;
    c.n_elements += t.n_elements;
    c.n_bytes += t.n_bytes;
    s.n_params += t.n_elements;
    s.n_tensor_bytes += t.n_bytes;
  }
  s.n_tensors = file.tensors().size();
  for (const auto& [id, count] : by_type) s.by_type.push_back(count);
  return s;
}

}  // namespace minfer
