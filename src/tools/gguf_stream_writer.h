// A GGUF writer for files larger than memory: make-model and quantize stream tensors one at a
// time.
#pragma once

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_writer.h"
#include "quant/ggml_type.h"

namespace minfer {

// Writes a GGUF file tensor by tensor, so that only one tensor's data is in memory at a time
// (GgufWriter keeps every tensor until write()). The header — metadata from a GgufWriter that
// holds no tensors, then every tensor's info with offsets computed from type and shape — is
// written first; then each tensor's bytes, in the declared order, padded to the alignment.
class GgufStreamWriter {
 public:
  struct TensorLayout {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> shape;
  };
  GgufStreamWriter() = default;
  ~GgufStreamWriter();
  GgufStreamWriter(GgufStreamWriter&& other) noexcept;
  GgufStreamWriter& operator=(GgufStreamWriter&&) = delete;
  GgufStreamWriter(const GgufStreamWriter&) = delete;

  static Result<GgufStreamWriter> create(const std::string& path, const GgufWriter& metadata,
                                         std::vector<TensorLayout> tensors);
  // The next tensor's data (exactly its type and shape's bytes, checked).
  Status write_next(std::span<const uint8_t> data);
  // Checks that every tensor was written and closes the file.
  Status close();

  const std::vector<TensorLayout>& tensors() const { return tensors_; }

 private:
  std::string path_;
  FILE* file_ = nullptr;
  std::vector<TensorLayout> tensors_;
  size_t next_ = 0;
  uint32_t alignment_ = 32;
};

}  // namespace minfer
