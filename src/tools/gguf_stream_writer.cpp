#include "tools/gguf_stream_writer.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

#include <fmt/format.h>

#include "core/check.h"
#include "gguf/gguf_file.h"

namespace minfer {

GgufStreamWriter::~GgufStreamWriter() {
  if (file_ != nullptr) std::fclose(file_);
}

GgufStreamWriter::GgufStreamWriter(GgufStreamWriter&& other) noexcept
    : path_(std::move(other.path_)),
      file_(other.file_),
      tensors_(std::move(other.tensors_)),
      next_(other.next_),
      alignment_(other.alignment_) {
  other.file_ = nullptr;
}

namespace {

uint64_t tensor_bytes(const GgufStreamWriter::TensorLayout& t) {
  uint64_t n_rows = 1;
  for (size_t d = 1; d < t.shape.size(); ++d) n_rows *= t.shape[d];
  return *ggml_row_bytes(t.type, t.shape[0]) * n_rows;
}

template <typename T>
void put(std::vector<uint8_t>& out, T value) {
  const size_t at = out.size();
  out.resize(at + sizeof(T));
  std::memcpy(out.data() + at, &value, sizeof(T));
}

}  // namespace

Result<GgufStreamWriter> GgufStreamWriter::create(const std::string& path,
                                                  const GgufWriter& metadata,
                                                  std::vector<TensorLayout> tensors) {
  // The metadata-only image is: "GGUF", u32 version, u64 tensor_count (0 here), u64 kv_count,
  // the key/value pairs (GGUF spec). We fill in the count and append the tensor infos.
  MINFER_ASSIGN_OR_RETURN(std::vector<uint8_t> header, metadata.serialize());
  MINFER_CHECK(header.size() >= 24, "GGUF header too short");
  uint64_t n_tensors_in_header = 0;
  std::memcpy(&n_tensors_in_header, header.data() + 8, sizeof(uint64_t));
  if (n_tensors_in_header != 0) {
    return make_error(ErrorCode::kInternal,
                      "[gguf-writer] streaming writer: the metadata writer holds {} tensors, "
                      "expected 0",
                      n_tensors_in_header);
  }
  GgufStreamWriter w;
  w.path_ = path;
  // The reader follows general.alignment; so do we (GgufWriter keeps it in step the same way).
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GgufFile> parsed, GgufFile::parse(header, path));
  w.alignment_ = parsed->alignment();
  const uint64_t n_tensors = tensors.size();
  std::memcpy(header.data() + 8, &n_tensors, sizeof(uint64_t));
  uint64_t offset = 0;
  for (const TensorLayout& t : tensors) {
    if (t.shape.empty() || t.shape.size() > kGgufMaxDims || !ggml_row_bytes(t.type, t.shape[0])) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[gguf-writer] tensor '{}': shape [{}] does not fit type {}", t.name,
                        fmt::join(t.shape, ", "), ggml_type_info(t.type).name);
    }
    put<uint64_t>(header, t.name.size());
    header.insert(header.end(), t.name.begin(), t.name.end());
    put<uint32_t>(header, static_cast<uint32_t>(t.shape.size()));
    for (uint64_t d : t.shape) put<uint64_t>(header, d);
    put<uint32_t>(header, static_cast<uint32_t>(t.type));
    put<uint64_t>(header, offset);
    offset += (tensor_bytes(t) + w.alignment_ - 1) / w.alignment_ * w.alignment_;
  }
  while (header.size() % w.alignment_ != 0) header.push_back(0);
  w.tensors_ = std::move(tensors);
  w.file_ = std::fopen(path.c_str(), "wb");
  if (w.file_ == nullptr) {
    return make_error(ErrorCode::kIo, "[gguf-writer] cannot create '{}': {}", path,
                      std::strerror(errno));
  }
  if (std::fwrite(header.data(), 1, header.size(), w.file_) != header.size()) {
    return make_error(ErrorCode::kIo, "[gguf-writer] short write to '{}'", path);
  }
  return w;
}

Status GgufStreamWriter::write_next(std::span<const uint8_t> data) {
  if (file_ == nullptr || next_ >= tensors_.size()) {
    return make_error(ErrorCode::kInternal, "[gguf-writer] '{}': no tensor left to write", path_);
  }
  const TensorLayout& t = tensors_[next_];
  const uint64_t expected = tensor_bytes(t);
  if (data.size() != expected) {
    return make_error(ErrorCode::kInternal,
                      "[gguf-writer] tensor '{}': {} bytes of data, expected {} for {}", t.name,
                      data.size(), expected, ggml_type_info(t.type).name);
  }
  static constexpr uint8_t kZeros[64] = {};
  const size_t pad = (alignment_ - data.size() % alignment_) % alignment_;
  if (std::fwrite(data.data(), 1, data.size(), file_) != data.size()) {
    return make_error(ErrorCode::kIo, "[gguf-writer] short write to '{}'", path_);
  }
  for (size_t left = pad; left > 0;) {
    const size_t n = std::min(left, sizeof(kZeros));
    if (std::fwrite(kZeros, 1, n, file_) != n) {
      return make_error(ErrorCode::kIo, "[gguf-writer] short write to '{}'", path_);
    }
    left -= n;
  }
  ++next_;
  return Status::ok();
}

Status GgufStreamWriter::close() {
  if (file_ == nullptr) return make_error(ErrorCode::kInternal, "[gguf-writer] already closed");
  if (next_ != tensors_.size()) {
    return make_error(ErrorCode::kInternal, "[gguf-writer] '{}': {} of {} tensors written", path_,
                      next_, tensors_.size());
  }
  const int rc = std::fclose(file_);
  file_ = nullptr;
  if (rc != 0) {
    return make_error(ErrorCode::kIo, "[gguf-writer] cannot finish '{}': {}", path_,
                      std::strerror(errno));
  }
  return Status::ok();
}

}  // namespace minfer
