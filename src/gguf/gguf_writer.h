// Writes GGUF v3 files: metadata of every type and tensors at aligned offsets. Tests, make-model
// and quantize build their files with it; write → read round-trips exactly.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "gguf/gguf_value.h"
#include "quant/ggml_type.h"

namespace minfer {

class GgufWriter {
 public:
  // Sets (or replaces) a metadata key. Keys keep the order of their first set.
  void set(const std::string& key, GgufValue value);
  template <typename T>
  void set_scalar(const std::string& key, T value) {
    set(key, GgufValue::scalar(value));
  }
  void set_string(const std::string& key, std::string value) {
    set(key, GgufValue::string(std::move(value)));
  }

  // Adds a tensor; `data` must hold exactly the bytes its type and shape take (checked).
  // shape is in ggml order (shape[0] = row length).
  Status add_tensor(const std::string& name, GgmlType type, std::vector<uint64_t> shape,
                    std::vector<uint8_t> data);

  // The alignment of tensor data (general.alignment; written when not the default 32).
  void set_alignment(uint32_t alignment);

  // The whole file image.
  Result<std::vector<uint8_t>> serialize() const;
  Status write(const std::string& path) const;

 private:
  struct Tensor {
    std::string name;
    GgmlType type;
    std::vector<uint64_t> shape;
    std::vector<uint8_t> data;
  };
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<Tensor> tensors_;
  uint32_t alignment_ = 32;
};

}  // namespace minfer
