#include "gguf/gguf_writer.h"

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>

namespace minfer {

namespace {

class ByteSink {
 public:
  template <typename T>
  void put(T value) {
    const size_t at = bytes_.size();
    bytes_.resize(at + sizeof(T));
    std::memcpy(bytes_.data() + at, &value, sizeof(T));
  }
  void put_bytes(const void* data, size_t n) {
    if (n == 0) return;
    const size_t at = bytes_.size();
    bytes_.resize(at + n);
    std::memcpy(bytes_.data() + at, data, n);
  }
  void put_string(const std::string& s) {
    put<uint64_t>(s.size());
    put_bytes(s.data(), s.size());
  }
  void pad_to(uint64_t alignment) {
    while (bytes_.size() % alignment != 0) bytes_.push_back(0);
  }
  std::vector<uint8_t>& bytes() { return bytes_; }

 private:
  std::vector<uint8_t> bytes_;
};

void put_array_body(ByteSink& sink, const GgufValue& v);

void put_value_body(ByteSink& sink, const GgufValue& v) {
  if (v.type() == GgufType::kString) {
    sink.put_string(*v.as_string());
  } else if (v.is_array()) {
    put_array_body(sink, v);
  } else {
    const uint64_t bits = v.raw_bits();
    sink.put_bytes(&bits, gguf_scalar_size(v.type()));  // little-endian host
  }
}

void put_array_body(ByteSink& sink, const GgufValue& v) {
  sink.put<uint32_t>(static_cast<uint32_t>(v.element_type()));
  sink.put<uint64_t>(v.array_size());
  if (const std::vector<std::string>* strings = v.as_string_array()) {
    for (const std::string& s : *strings) sink.put_string(s);
  } else if (v.element_type() == GgufType::kArray) {
    for (const GgufValue& inner : v.nested()) put_array_body(sink, inner);
  } else {
    sink.put_bytes(v.array_bytes().data(), v.array_bytes().size());
  }
}

}  // namespace

void GgufWriter::set(const std::string& key, GgufValue value) {
  // Keep the data layout in step with the key the reader will follow.
  if (key == "general.alignment") {
    if (std::optional<uint32_t> a = value.as<uint32_t>()) alignment_ = *a;
  }
  for (auto& [k, v] : metadata_) {
    if (k == key) {
      v = std::move(value);
      return;
    }
  }
  metadata_.emplace_back(key, std::move(value));
}

void GgufWriter::set_alignment(uint32_t alignment) {
  set_scalar<uint32_t>("general.alignment", alignment);
}

Status GgufWriter::add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> shape,
                              std::vector<uint8_t> data) {
  if (shape.empty() || shape.size() > 4) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[gguf-writer] tensor '{}': {} dimensions, "
                      "expected 1..4",
                      name, shape.size());
  }
  // The reader rejects empty and overflowing shapes; refuse to write them.
  uint64_t n_elements = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 || shape[d] > static_cast<uint64_t>(INT64_MAX) / n_elements) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[gguf-writer] tensor '{}': dimension {} is {}, expected 1.. with an "
                        "element count below 2^63",
                        name, d, shape[d]);
    }
    n_elements *= shape[d];
  }
  const GgmlTypeInfo& info = ggml_type_info(type);
  const std::optional<uint64_t> row_bytes = ggml_row_bytes(type, shape[0]);
  if (!row_bytes) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[gguf-writer] tensor '{}': row length {} is not a multiple of the {} block "
                      "size {}",
                      name, shape[0], info.name, info.block_size);
  }
  const uint64_t expected = *row_bytes * (n_elements / shape[0]);
  if (data.size() != expected) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[gguf-writer] tensor '{}': {} bytes of data, expected {} for {} {}", name,
                      data.size(), expected, info.name, n_elements);
  }
  for (const Tensor& t : tensors_) {
    if (t.name == name) {
      return make_error(ErrorCode::kInvalidArgument, "[gguf-writer] duplicate tensor '{}'", name);
    }
  }
  tensors_.push_back({name, type, std::move(shape), std::move(data)});
  return Status::ok();
}

Result<std::vector<uint8_t>> GgufWriter::serialize() const {
  if (alignment_ == 0 || (alignment_ & (alignment_ - 1)) != 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[gguf-writer] alignment is {}, expected a power of two", alignment_);
  }
  ByteSink sink;
  sink.put_bytes("GGUF", 4);
  sink.put<uint32_t>(3);
  sink.put<uint64_t>(tensors_.size());
  sink.put<uint64_t>(metadata_.size());
  for (const auto& [key, value] : metadata_) {
    sink.put_string(key);
    sink.put<uint32_t>(static_cast<uint32_t>(value.type()));
    put_value_body(sink, value);
  }
  uint64_t offset = 0;
  for (const Tensor& t : tensors_) {
    sink.put_string(t.name);
    sink.put<uint32_t>(static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) sink.put<uint64_t>(d);
    sink.put<uint32_t>(static_cast<uint32_t>(t.type));
    sink.put<uint64_t>(offset);
    offset += (t.data.size() + alignment_ - 1) / alignment_ * alignment_;
  }
  if (!tensors_.empty()) sink.pad_to(alignment_);
  for (const Tensor& t : tensors_) {
    sink.put_bytes(t.data.data(), t.data.size());
    sink.pad_to(alignment_);
  }
  return std::move(sink.bytes());
}

Status GgufWriter::write(const std::string& path) const {
  MINFER_ASSIGN_OR_RETURN(std::vector<uint8_t> image, serialize());
  std::unique_ptr<FILE, int (*)(FILE*)> out(std::fopen(path.c_str(), "wb"), &std::fclose);
  if (!out) {
    return make_error(ErrorCode::kIo, "[gguf-writer] cannot create '{}': {}", path,
                      std::strerror(errno));
  }
  if (std::fwrite(image.data(), 1, image.size(), out.get()) != image.size()) {
    return make_error(ErrorCode::kIo, "[gguf-writer] short write to '{}'", path);
  }
  return Status::ok();
}

}  // namespace minfer
