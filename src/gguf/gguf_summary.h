// What `minfer info` reports about a GGUF file, read once from its metadata and tensor table:
// architecture, hyperparameters, tokenizer, tensor counts per type, parameters and bytes.
// Keys that are absent stay absent (std::nullopt); a key present with the wrong type is an error.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "quant/ggml_type.h"

namespace minfer {

struct GgufTypeCount {
  GgmlType type;
  uint64_t n_tensors = 0;
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
};

struct GgufRopeScaling {
  std::optional<std::string> type;                 // <arch>.rope.scaling.type: none|linear|yarn…
  std::optional<double> factor;                    // <arch>.rope.scaling.factor
  std::optional<int64_t> original_context_length;  // <arch>.rope.scaling.original_context_length
  std::optional<double> attn_factor;               // <arch>.rope.scaling.attn_factor
};

struct GgufSummary {
  // The file.
  std::string path;
  uint32_t version = 0;
  uint32_t alignment = 0;
  uint64_t file_size = 0;  // all parts together for a split model
  uint64_t n_parts = 1;    // the files of a split model (gguf/gguf_split.h), else 1
  uint64_t data_offset = 0;
  uint64_t n_metadata = 0;

  std::optional<std::string> architecture;  // general.architecture
  std::optional<std::string> name;          // general.name

  // Hyperparameters (<arch>.* keys; absent when the architecture is unknown).
  std::optional<int64_t> n_embd;   // embedding_length
  std::optional<int64_t> n_layer;  // block_count
  // n_head, n_head_kv and n_ff may be given per layer: then these hold the largest, and
  // per_layer each layer's under the field's name ("n_head_kv").
  std::optional<int64_t> n_head;     // attention.head_count
  std::optional<int64_t> n_head_kv;  // attention.head_count_kv
  std::optional<int64_t> head_dim;   // attention.key_length, else n_embd / n_head
  bool head_dim_from_key = false;    // true when attention.key_length gave head_dim
  std::optional<int64_t> n_ff;       // feed_forward_length
  std::map<std::string, std::vector<int64_t>> per_layer;
  std::optional<int64_t> n_ctx_train;    // context_length
  std::optional<int64_t> n_rot;          // rope.dimension_count
  std::optional<double> rope_freq_base;  // rope.freq_base
  GgufRopeScaling rope_scaling;
  std::optional<double> rms_eps;  // attention.layer_norm_rms_epsilon

  // Tokenizer.
  std::optional<int64_t> n_vocab;               // length of tokenizer.ggml.tokens
  std::optional<std::string> tokenizer_model;   // tokenizer.ggml.model
  std::optional<std::string> tokenizer_pre;     // tokenizer.ggml.pre
  bool has_chat_template = false;               // tokenizer.chat_template
  std::optional<int64_t> chat_template_length;  // its length in bytes

  // Tensors.
  uint64_t n_tensors = 0;
  uint64_t n_params = 0;               // sum of element counts
  uint64_t n_tensor_bytes = 0;         // sum of data bytes
  std::vector<GgufTypeCount> by_type;  // types present, in type-id order
};

// Reads the summary of an open file. Fails (naming the key, expected vs actual type) when a key
// the summary reads holds the wrong type or a negative count.
Result<GgufSummary> summarize_gguf(const GgufFile& file);

}  // namespace minfer
