// A weight matrix or vector of the model, viewed in place in the GGUF memory map.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/ggml_type.h"

namespace minfer {

// A 1-D or 2-D weight: n_rows rows of n_cols elements each (ggml order: shape = [n_cols, n_rows]).
struct WeightTensor {
  const char* name = nullptr;  // owned by the GgufFile
  GgmlType type = GgmlType::kF32;
  int64_t n_cols = 0;  // the row length: n_in of a matrix
  int64_t n_rows = 0;  // n_out of a matrix; 1 for a vector
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  const float* f32() const { return reinterpret_cast<const float*>(data); }
};

}  // namespace minfer
