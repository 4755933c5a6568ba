// A checked GGUF (v2, v3) reader. The file is hostile input: every count, length, offset and
// dimension is checked against the file size and for overflow before use. Tensor data stays in
// the read-only memory map (zero-copy).
//
// Layout (GGUF spec): magic "GGUF", u32 version, u64 tensor_count, u64 kv_count, the key/value
// pairs, the tensor infos (name, u32 n_dims, u64 ne[n_dims], u32 type, u64 offset), padding to
// `general.alignment` (default 32), then the data section; tensor offsets are relative to it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/input_limits.h"
#include "core/mapped_file.h"
#include "core/status.h"
#include "gguf/gguf_value.h"
#include "quant/ggml_type.h"

namespace minfer {

inline constexpr uint32_t kGgufDefaultAlignment = 32;
inline constexpr size_t kGgufMaxDims = 4;
// Caps on what one file may declare, far above any real model, so a crafted count or length is
// rejected before anything is allocated for it.
inline constexpr uint64_t kGgufMaxStringLength = 64ull << 20;  // the longest chat template ~100 KB
inline constexpr uint64_t kGgufMaxArrayLength = 1ull << 26;    // vocabularies reach ~260 K entries
// Per-key caps, far above real files: a chat template (tokenizer.chat_template[.NAME]) and an
// identifier (general.architecture, general.type, tokenizer.ggml.model, tokenizer.ggml.pre).
inline constexpr uint64_t kGgufMaxChatTemplateLength = limits::kMaxTemplateBytes;
inline constexpr uint64_t kGgufMaxIdentifierLength = 256;
inline constexpr uint32_t kGgufMaxAlignment = 1u << 20;
inline constexpr int kGgufMaxArrayDepth = 2;

struct GgufKeyValue {
  std::string key;
  GgufValue value;
};

struct GgufTensorInfo {
  std::string name;
  GgmlType type;
  std::vector<uint64_t> shape;  // ggml order: shape[0] is the row length (contiguous)
  uint64_t offset = 0;          // from the start of the data section
  uint64_t n_elements = 0;
  uint64_t n_bytes = 0;
  uint16_t part = 0;  // the file of a split model that holds the data (0: the first, opened one)

  uint64_t n_rows() const { return shape.empty() ? 0 : n_elements / shape[0]; }
};

class GgufFile {
 public:
  // Opens and validates a file; tensor data is mapped, not read. The first part of a split model
  // (`<prefix>-00001-of-0000N.gguf` with split.count N > 1, gguf/gguf_split.h) opens with all its
  // siblings: the metadata is the first part's, tensors() lists every part's tensors, and each
  // tensor's data comes from its own part. Another part alone is refused, naming the first.
  // `map` says how the bytes are held (mapped or read; locked or not) — for every part.
  static Result<std::unique_ptr<GgufFile>> open(const std::string& path,
                                                const MapOptions& map = {});
  // Validates a GGUF image held in memory; `bytes` must outlive the result. `name` appears in
  // error messages. Used by the fuzzer and tests.
  static Result<std::unique_ptr<GgufFile>> parse(std::span<const uint8_t> bytes, std::string name);

  uint32_t version() const { return version_; }
  uint32_t alignment() const { return alignment_; }
  const std::string& name() const { return name_; }
  // The bytes of every part together (of the one file when the model is not split).
  uint64_t file_size() const;
  // 1, or split.count for a split model opened from its first part.
  size_t n_parts() const { return 1 + parts_.size(); }
  uint64_t data_offset() const { return data_offset_; }

  const std::vector<GgufKeyValue>& metadata() const { return metadata_; }
  // Forgets the key and its value (nothing when absent): for big values their reader has copied,
  // such as a vocabulary the tokenizer holds. Readers of the key see it missing afterwards.
  void drop(std::string_view key);
  const GgufValue* find(std::string_view key) const;
  bool has(std::string_view key) const { return find(key) != nullptr; }

  // Typed access: the key must exist and hold exactly T's type.
  template <typename T>
  Result<T> get(std::string_view key) const;
  // Like get, but returns `fallback` when the key is absent (a wrong type is still an error).
  template <typename T>
  Result<T> get_or(std::string_view key, T fallback) const;
  Result<std::string> get_string(std::string_view key) const;
  // Any integer type, widened to int64 (never narrowed, never from a float or string).
  Result<int64_t> get_integer(std::string_view key) const;
  // float32 or float64.
  Result<double> get_floating(std::string_view key) const;
  Result<const std::vector<std::string>*> get_string_array(std::string_view key) const;
  template <typename T>
  Result<std::vector<T>> get_array(std::string_view key) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(std::string_view name) const;
  // The tensor's bytes inside the map (validated at open).
  std::span<const uint8_t> tensor_data(const GgufTensorInfo& tensor) const;
  // Removes the tensors whose names start with `prefix` from tensors() and returns them, for a
  // reader that uses them apart from the model's own list (a reranker's classifier head); their
  // tensor_data stays valid while the file lives.
  std::vector<GgufTensorInfo> take_tensors(std::string_view prefix);

 private:
  GgufFile() = default;
  Status type_error(std::string_view key, std::string_view expected, const GgufValue& v) const;
  Status missing_key(std::string_view key) const;
  static Result<std::unique_ptr<GgufFile>> open_one(const std::string& path, const MapOptions& map);
  // Opens parts 2…N of a split model whose first part this is (gguf_split.cpp).
  Status open_split_parts(const MapOptions& map);

  friend class GgufParser;
  std::unique_ptr<MappedFile> file_;  // null when parsing caller-owned bytes
  std::span<const uint8_t> bytes_;
  std::string name_;
  uint32_t version_ = 0;
  uint32_t alignment_ = kGgufDefaultAlignment;
  uint64_t data_offset_ = 0;
  std::vector<GgufKeyValue> metadata_;
  std::unordered_map<std::string, size_t> key_index_;
  std::vector<GgufTensorInfo> tensors_;
  std::unordered_map<std::string, size_t> tensor_index_;
  std::vector<std::unique_ptr<GgufFile>> parts_;  // parts 2…N of a split model
};

template <typename T>
Result<T> GgufFile::get(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  std::optional<T> out = v->as<T>();
  if (!out) return type_error(key, gguf_type_name(gguf_type_of<T>()), *v);
  return *out;
}

template <typename T>
Result<T> GgufFile::get_or(std::string_view key, T fallback) const {
  if (!has(key)) return fallback;
  return get<T>(key);
}

template <typename T>
Result<std::vector<T>> GgufFile::get_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  std::optional<std::vector<T>> out = v->array_as<T>();
  if (!out) {
    return type_error(key, fmt::format("array of {}", gguf_type_name(gguf_type_of<T>())), *v);
  }
  return std::move(*out);
}

}  // namespace minfer
