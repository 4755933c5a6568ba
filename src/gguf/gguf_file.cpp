#include "gguf/gguf_file.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace minfer {

// Reads the GGUF image front to back. Every read is bounds-checked against the image size;
// every error names what was being read and says expected vs actual.
class GgufParser {
 public:
  GgufParser(GgufFile& file) : file_(file), bytes_(file.bytes_) {}

  Status parse() {
    MINFER_RETURN_IF_ERROR(parse_header());
    for (uint64_t i = 0; i < kv_count_; ++i) MINFER_RETURN_IF_ERROR(parse_key_value(i));
    MINFER_RETURN_IF_ERROR(read_alignment());
    for (uint64_t i = 0; i < tensor_count_; ++i) MINFER_RETURN_IF_ERROR(parse_tensor_info(i));
    return place_data_section();
  }

 private:
  template <typename... Args>
  Status fail(fmt::format_string<Args...> format, Args&&... args) const {
    return Status(ErrorCode::kCorrupt,
                  fmt::format("[gguf] '{}': {}", file_.name_,
                              fmt::format(format, std::forward<Args>(args)...)));
  }

  uint64_t remaining() const { return bytes_.size() - pos_; }

  // Reads `n` raw bytes for `what`.
  Status read_bytes(void* out, uint64_t n, std::string_view what) {
    if (n > remaining()) {
      return fail("{} needs {} bytes at offset {}, but the file ends {} bytes later ({} bytes)",
                  what, n, pos_, remaining(), bytes_.size());
    }
    if (n > 0) std::memcpy(out, bytes_.data() + pos_, n);
    pos_ += n;
    return Status::ok();
  }

  template <typename T>
  Status read(T& out, std::string_view what) {
    return read_bytes(&out, sizeof(T), what);
  }

  Status read_string(std::string& out, std::string_view what) {
    return read_string_labelled(out, [what] { return std::string(what); });
  }

  // `label()` names the string for an error message; it is only called on failure, so reading
  // a 150 K-entry vocabulary formats no per-entry names.
  template <typename Label>
  Status read_string_labelled(std::string& out, const Label& label) {
    uint64_t length = 0;
    if (remaining() < sizeof(length)) {
      return read(length, fmt::format("{} (string length)", label()));
    }
    MINFER_RETURN_IF_ERROR(read(length, "string length"));
    if (length > kGgufMaxStringLength || length > remaining()) {
      const std::string what = label();
      if (length > kGgufMaxStringLength) {
        return fail("{}: string length {} exceeds the cap of {} bytes", what, length,
                    kGgufMaxStringLength);
      }
      return fail("{}: string length {} at offset {} is past the end of the file ({} bytes left)",
                  what, length, pos_ - 8, remaining());
    }
    out.assign(reinterpret_cast<const char*>(bytes_.data() + pos_), length);
    pos_ += length;
    return Status::ok();
  }

  Status parse_header() {
    char magic[4];
    MINFER_RETURN_IF_ERROR(read_bytes(magic, 4, "the magic"));
    if (std::memcmp(magic, "GGUF", 4) != 0) {
      return fail("not a GGUF file: magic is {:02x} {:02x} {:02x} {:02x}, expected 'GGUF'",
                  static_cast<uint8_t>(magic[0]), static_cast<uint8_t>(magic[1]),
                  static_cast<uint8_t>(magic[2]), static_cast<uint8_t>(magic[3]));
    }
    uint32_t version = 0;
    MINFER_RETURN_IF_ERROR(read(version, "the version"));
    if (version == 1) {
      return Status(ErrorCode::kUnsupported,
                    fmt::format("[gguf] '{}': GGUF version 1 is not supported (expected 2 or 3)",
                                file_.name_));
    }
    if ((version & 0xFFFF) == 0 && version != 0) {
      return Status(ErrorCode::kUnsupported,
                    fmt::format("[gguf] '{}': version field 0x{:08x} looks big-endian; only "
                                "little-endian GGUF is supported",
                                file_.name_, version));
    }
    if (version != 2 && version != 3) {
      return Status(ErrorCode::kUnsupported,
                    fmt::format("[gguf] '{}': unsupported GGUF version {} (expected 2 or 3)",
                                file_.name_, version));
    }
    file_.version_ = version;
    MINFER_RETURN_IF_ERROR(read(tensor_count_, "the tensor count"));
    MINFER_RETURN_IF_ERROR(read(kv_count_, "the metadata key/value count"));
    // Smallest possible records: a key/value is a u64 key length, a u32 type and a 1-byte value;
    // a tensor info is a u64 name length, u32 n_dims, one u64 dim, u32 type and u64 offset.
    constexpr uint64_t kMinKeyValueBytes = 8 + 4 + 1;
    constexpr uint64_t kMinTensorInfoBytes = 8 + 4 + 8 + 4 + 8;
    if (kv_count_ > remaining() / kMinKeyValueBytes) {
      return fail("metadata key/value count {} cannot fit in the {} bytes after the header",
                  kv_count_, remaining());
    }
    if (tensor_count_ > remaining() / kMinTensorInfoBytes) {
      return fail("tensor count {} cannot fit in the {} bytes after the header", tensor_count_,
                  remaining());
    }
    return Status::ok();
  }

  Status read_value_type(GgufType& out, std::string_view what) {
    uint32_t id = 0;
    MINFER_RETURN_IF_ERROR(read(id, what));
    if (!gguf_type_is_valid(id)) {
      return fail("{}: unknown value type id {} (expected 0..12)", what, id);
    }
    out = static_cast<GgufType>(id);
    return Status::ok();
  }

  Status parse_value(GgufType type, GgufValue& out, const std::string& what, int depth) {
    if (type == GgufType::kString) {
      std::string s;
      MINFER_RETURN_IF_ERROR(read_string(s, what));
      out = GgufValue::string(std::move(s));
      return Status::ok();
    }
    if (type == GgufType::kArray) return parse_array(out, what, depth);
    uint64_t bits = 0;
    MINFER_RETURN_IF_ERROR(read_bytes(&bits, gguf_scalar_size(type), what));
    if (type == GgufType::kBool && bits > 1) {
      return fail("{}: bool value {} (expected 0 or 1)", what, bits);
    }
    out = make_scalar(type, bits);
    return Status::ok();
  }

  static GgufValue make_scalar(GgufType type, uint64_t bits) {
    switch (type) {
      case GgufType::kUint8:
        return GgufValue::scalar(static_cast<uint8_t>(bits));
      case GgufType::kInt8:
        return GgufValue::scalar(static_cast<int8_t>(bits));
      case GgufType::kUint16:
        return GgufValue::scalar(static_cast<uint16_t>(bits));
      case GgufType::kInt16:
        return GgufValue::scalar(static_cast<int16_t>(bits));
      case GgufType::kUint32:
        return GgufValue::scalar(static_cast<uint32_t>(bits));
      case GgufType::kInt32:
        return GgufValue::scalar(static_cast<int32_t>(bits));
      case GgufType::kBool:
        return GgufValue::scalar(bits != 0);
      case GgufType::kUint64:
        return GgufValue::scalar(bits);
      case GgufType::kInt64:
        return GgufValue::scalar(static_cast<int64_t>(bits));
      case GgufType::kFloat32: {
        float f;
        const auto b32 = static_cast<uint32_t>(bits);
        std::memcpy(&f, &b32, 4);
        return GgufValue::scalar(f);
      }
      case GgufType::kFloat64: {
        double d;
        std::memcpy(&d, &bits, 8);
        return GgufValue::scalar(d);
      }
      default:
        return {};
    }
  }

  Status parse_array(GgufValue& out, const std::string& what, int depth) {
    if (depth >= kGgufMaxArrayDepth) {
      return fail("{}: arrays nested deeper than {} levels", what, kGgufMaxArrayDepth);
    }
    GgufType element_type{};
    MINFER_RETURN_IF_ERROR(read_value_type(element_type, what + " (array element type)"));
    uint64_t length = 0;
    MINFER_RETURN_IF_ERROR(read(length, what + " (array length)"));
    if (length > kGgufMaxArrayLength) {
      return fail("{}: array length {} exceeds the cap of {}", what, length, kGgufMaxArrayLength);
    }
    // Each element takes at least this many bytes, so a length the file cannot hold is rejected
    // before anything is allocated.
    const uint64_t min_element_bytes = element_type == GgufType::kString ? 8
                                       : element_type == GgufType::kArray
                                           ? 12
                                           : gguf_scalar_size(element_type);
    if (length > remaining() / min_element_bytes) {
      return fail("{}: array of {} {} values cannot fit in the {} bytes left at offset {}", what,
                  length, gguf_type_name(element_type), remaining(), pos_);
    }
    if (element_type == GgufType::kString) {
      std::vector<std::string> strings(length);
      for (uint64_t i = 0; i < length; ++i) {
        MINFER_RETURN_IF_ERROR(
            read_string_labelled(strings[i], [&] { return fmt::format("{}[{}]", what, i); }));
      }
      out = GgufValue::string_array(std::move(strings));
    } else if (element_type == GgufType::kArray) {
      std::vector<GgufValue> arrays(length);
      for (uint64_t i = 0; i < length; ++i) {
        MINFER_RETURN_IF_ERROR(parse_array(arrays[i], fmt::format("{}[{}]", what, i), depth + 1));
      }
      out = GgufValue::array_of_arrays(std::move(arrays));
    } else {
      std::vector<uint8_t> raw(length * min_element_bytes);
      MINFER_RETURN_IF_ERROR(read_bytes(raw.data(), raw.size(), what));
      if (element_type == GgufType::kBool) {
        for (uint64_t i = 0; i < length; ++i) {
          if (raw[i] > 1) return fail("{}[{}]: bool value {} (expected 0 or 1)", what, i, raw[i]);
        }
      }
      out = GgufValue::scalar_array_from_bytes(element_type, std::move(raw));
    }
    return Status::ok();
  }

  Status parse_key_value(uint64_t index) {
    GgufKeyValue kv;
    MINFER_RETURN_IF_ERROR(read_string(kv.key, fmt::format("metadata key #{}", index)));
    const std::string what = fmt::format("key '{}'", gguf_escape(kv.key));
    if (auto it = file_.key_index_.find(kv.key); it != file_.key_index_.end()) {
      return fail("duplicate metadata {}: key #{} repeats key #{} (expected unique keys)", what,
                  index, it->second);
    }
    GgufType type{};
    MINFER_RETURN_IF_ERROR(read_value_type(type, what));
    MINFER_RETURN_IF_ERROR(parse_value(type, kv.value, what, 0));
    MINFER_RETURN_IF_ERROR(check_string_cap(kv, what));
    file_.key_index_.emplace(kv.key, file_.metadata_.size());
    file_.metadata_.push_back(std::move(kv));
    return Status::ok();
  }

  // Strings that name something, and chat templates, have caps of their own: a file is not
  // trusted to make an error message quote a megabyte, or a template run for a gigabyte.
  Status check_string_cap(const GgufKeyValue& kv, const std::string& what) const {
    const std::string* s = kv.value.as_string();
    if (s == nullptr) return Status::ok();
    const bool is_template =
        kv.key == "tokenizer.chat_template" || kv.key.rfind("tokenizer.chat_template.", 0) == 0;
    const bool is_identifier = kv.key == "general.architecture" || kv.key == "general.type" ||
                               kv.key == "tokenizer.ggml.model" || kv.key == "tokenizer.ggml.pre";
    if (is_template && s->size() > kGgufMaxChatTemplateLength) {
      return fail("{}: a chat template of {} bytes exceeds the cap of {} bytes", what, s->size(),
                  kGgufMaxChatTemplateLength);
    }
    if (is_identifier && s->size() > kGgufMaxIdentifierLength) {
      return fail("{}: a string of {} bytes, expected an identifier of at most {} bytes", what,
                  s->size(), kGgufMaxIdentifierLength);
    }
    return Status::ok();
  }

  Status read_alignment() {
    const GgufValue* v = file_.find("general.alignment");
    if (v == nullptr) return Status::ok();
    const std::optional<uint32_t> alignment = v->as<uint32_t>();
    if (!alignment) {
      return fail("key 'general.alignment' has type {}, expected uint32",
                  gguf_type_name(v->type()));
    }
    if (*alignment == 0 || (*alignment & (*alignment - 1)) != 0 || *alignment > kGgufMaxAlignment) {
      return fail("key 'general.alignment' is {}, expected a power of two between 1 and {}",
                  *alignment, kGgufMaxAlignment);
    }
    file_.alignment_ = *alignment;
    return Status::ok();
  }

  Status parse_tensor_info(uint64_t index) {
    GgufTensorInfo t;
    MINFER_RETURN_IF_ERROR(read_string(t.name, fmt::format("tensor #{} name", index)));
    const std::string what = fmt::format("tensor '{}'", gguf_escape(t.name));
    if (auto it = file_.tensor_index_.find(t.name); it != file_.tensor_index_.end()) {
      return fail("duplicate {}: tensor #{} repeats tensor #{} (expected unique names)", what,
                  index, it->second);
    }
    uint32_t n_dims = 0;
    MINFER_RETURN_IF_ERROR(read(n_dims, what + " n_dims"));
    if (n_dims == 0 || n_dims > kGgufMaxDims) {
      return fail("{}: n_dims is {}, expected 1..{}", what, n_dims, kGgufMaxDims);
    }
    t.shape.resize(n_dims);
    uint64_t n_elements = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      MINFER_RETURN_IF_ERROR(read(t.shape[d], fmt::format("{} dimension {}", what, d)));
      if (t.shape[d] == 0) return fail("{}: dimension {} is 0, expected at least 1", what, d);
      if (t.shape[d] > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / n_elements) {
        return fail("{}: element count overflows at dimension {}: {} x {} exceeds {}", what, d,
                    n_elements, t.shape[d], std::numeric_limits<int64_t>::max());
      }
      n_elements *= t.shape[d];
    }
    t.n_elements = n_elements;
    uint32_t type_id = 0;
    MINFER_RETURN_IF_ERROR(read(type_id, what + " type"));
    const std::optional<GgmlTypeInfo> info = ggml_type_info(type_id);
    if (!info) {
      return fail(
          "{}: unknown tensor type id {} (expected a ggml type id, e.g. 0 = f32 .. 39 = "
          "mxfp4)",
          what, type_id);
    }
    t.type = info->type;
    if (t.shape[0] % info->block_size != 0) {
      return fail("{}: row length {} is not a multiple of the {} block size {}", what, t.shape[0],
                  info->name, info->block_size);
    }
    const uint64_t n_blocks = n_elements / info->block_size;
    if (n_blocks > std::numeric_limits<uint64_t>::max() / info->bytes_per_block) {
      return fail("{}: byte size of {} {} elements overflows", what, n_elements, info->name);
    }
    t.n_bytes = n_blocks * info->bytes_per_block;
    MINFER_RETURN_IF_ERROR(read(t.offset, what + " offset"));
    if (t.offset % file_.alignment_ != 0) {
      return fail("{}: data offset {} is not a multiple of the alignment {}", what, t.offset,
                  file_.alignment_);
    }
    file_.tensor_index_.emplace(t.name, file_.tensors_.size());
    file_.tensors_.push_back(std::move(t));
    return Status::ok();
  }

  Status place_data_section() {
    const uint64_t alignment = file_.alignment_;
    const uint64_t data_offset = (pos_ + alignment - 1) / alignment * alignment;
    file_.data_offset_ = data_offset;
    if (file_.tensors_.empty()) return Status::ok();
    if (data_offset > bytes_.size()) {
      return fail("the data section would start at offset {}, past the end of the file ({} bytes)",
                  data_offset, bytes_.size());
    }
    const uint64_t data_size = bytes_.size() - data_offset;
    for (const GgufTensorInfo& t : file_.tensors_) {
      if (t.offset > data_size || t.n_bytes > data_size - t.offset) {
        return fail(
            "tensor '{}': data at offset {} + {} bytes is past the end of the data section "
            "({} bytes)",
            gguf_escape(t.name), t.offset, t.n_bytes, data_size);
      }
    }
    std::vector<const GgufTensorInfo*> by_offset;
    by_offset.reserve(file_.tensors_.size());
    for (const GgufTensorInfo& t : file_.tensors_) by_offset.push_back(&t);
    std::sort(
        by_offset.begin(), by_offset.end(),
        [](const GgufTensorInfo* a, const GgufTensorInfo* b) { return a->offset < b->offset; });
    for (size_t i = 1; i < by_offset.size(); ++i) {
      const GgufTensorInfo& prev = *by_offset[i - 1];
      const GgufTensorInfo& cur = *by_offset[i];
      if (prev.offset + prev.n_bytes > cur.offset) {
        return fail(
            "tensor '{}' (offset {}, {} bytes) overlaps tensor '{}': expected it to start at "
            "offset {} or later, got {}",
            gguf_escape(prev.name), prev.offset, prev.n_bytes, gguf_escape(cur.name),
            prev.offset + prev.n_bytes, cur.offset);
      }
    }
    return Status::ok();
  }

  GgufFile& file_;
  std::span<const uint8_t> bytes_;
  uint64_t pos_ = 0;
  uint64_t tensor_count_ = 0;
  uint64_t kv_count_ = 0;
};

Result<std::unique_ptr<GgufFile>> GgufFile::open(const std::string& path, const MapOptions& map) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> file, open_one(path, map));
  MINFER_RETURN_IF_ERROR(file->open_split_parts(map));
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::open_one(const std::string& path,
                                                     const MapOptions& map) {
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<MappedFile> mapped, MappedFile::open(path, map));
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->bytes_ = mapped->bytes();
  file->file_ = std::move(mapped);
  file->name_ = path;
  MINFER_RETURN_IF_ERROR(GgufParser(*file).parse());
  return file;
}

Result<std::unique_ptr<GgufFile>> GgufFile::parse(std::span<const uint8_t> bytes,
                                                  std::string name) {
  std::unique_ptr<GgufFile> file(new GgufFile());
  file->bytes_ = bytes;
  file->name_ = std::move(name);
  MINFER_RETURN_IF_ERROR(GgufParser(*file).parse());
  return file;
}

const GgufValue* GgufFile::find(std::string_view key) const {
  auto it = key_index_.find(std::string(key));
  return it == key_index_.end() ? nullptr : &metadata_[it->second].value;
}

void GgufFile::drop(std::string_view key) {
  auto it = key_index_.find(std::string(key));
  if (it == key_index_.end()) return;
  metadata_.erase(metadata_.begin() + static_cast<std::ptrdiff_t>(it->second));
  key_index_.clear();
  for (size_t i = 0; i < metadata_.size(); ++i) key_index_.emplace(metadata_[i].key, i);
}

Status GgufFile::missing_key(std::string_view key) const {
  return make_error(ErrorCode::kNotFound, "[gguf] '{}': key '{}' is missing", name_, key);
}

Status GgufFile::type_error(std::string_view key, std::string_view expected,
                            const GgufValue& v) const {
  std::string actual(gguf_type_name(v.type()));
  if (v.is_array()) actual = fmt::format("array of {}", gguf_type_name(v.element_type()));
  return make_error(ErrorCode::kInvalidArgument, "[gguf] '{}': key '{}' holds {}, expected {}",
                    name_, key, actual, expected);
}

Result<std::string> GgufFile::get_string(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  if (const std::string* s = v->as_string()) return *s;
  return type_error(key, "string", *v);
}

Result<int64_t> GgufFile::get_integer(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  if (std::optional<int64_t> i = v->as_integer()) return *i;
  return type_error(key, "an integer", *v);
}

Result<double> GgufFile::get_floating(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  if (std::optional<double> d = v->as_floating()) return *d;
  return type_error(key, "float32 or float64", *v);
}

Result<const std::vector<std::string>*> GgufFile::get_string_array(std::string_view key) const {
  const GgufValue* v = find(key);
  if (v == nullptr) return missing_key(key);
  if (const std::vector<std::string>* s = v->as_string_array()) return s;
  return type_error(key, "array of string", *v);
}

const GgufTensorInfo* GgufFile::find_tensor(std::string_view name) const {
  auto it = tensor_index_.find(std::string(name));
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::vector<GgufTensorInfo> GgufFile::take_tensors(std::string_view prefix) {
  std::vector<GgufTensorInfo> taken;
  std::vector<GgufTensorInfo> kept;
  for (GgufTensorInfo& t : tensors_) {
    (t.name.starts_with(prefix) ? taken : kept).push_back(std::move(t));
  }
  tensors_ = std::move(kept);
  tensor_index_.clear();
  for (size_t i = 0; i < tensors_.size(); ++i) tensor_index_.emplace(tensors_[i].name, i);
  return taken;
}

uint64_t GgufFile::file_size() const {
  uint64_t total = bytes_.size();
  for (const auto& part : parts_) total += part->bytes_.size();
  return total;
}

std::span<const uint8_t> GgufFile::tensor_data(const GgufTensorInfo& tensor) const {
  const GgufFile& holder =
      tensor.part == 0 || tensor.part > parts_.size() ? *this : *parts_[tensor.part - 1];
  return holder.bytes_.subspan(holder.data_offset_ + tensor.offset, tensor.n_bytes);
}

}  // namespace minfer
