// A weight matrix or vector of the model, viewed in place in the GGUF memory map.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/interleave.h"
#include "quant/ggml_type.h"

namespace minfer {

// A 1-D or 2-D weight: n_rows rows of n_cols elements each (ggml order: shape = [n_cols, n_rows]).
// A 3-D weight (a mixture of experts' [n_cols, n_rows, n_mats]) is n_mats such matrices one after
// the other; matrix(e) views one of them.
struct WeightTensor {
  const char* name = nullptr;  // owned by the GgufFile
  GgmlType type = GgmlType::kF32;
  int64_t n_cols = 0;  // the row length: n_in of a matrix
  int64_t n_rows = 0;  // n_out of a matrix; 1 for a vector
  const uint8_t* data = nullptr;
  size_t row_bytes = 0;
  int64_t n_mats = 1;  // matrices stacked along the third dimension (experts)
  // kRows16: repacked at load into the x16 row-interleaved layout (models/repack.h); row(r) then
  // is not row r's bytes (kernels::deinterleave_row gives them).
  kernels::WeightLayout layout = kernels::WeightLayout::kGguf;

  // Matrix e of a 3-D weight (0 <= e < n_mats): the same row bytes, rows offset by e · n_rows.
  WeightTensor matrix(int64_t e) const {
    WeightTensor m = *this;
    m.data = row(e * n_rows);
    m.n_mats = 1;
    return m;
  }

  const uint8_t* row(int64_t r) const { return data + static_cast<size_t>(r) * row_bytes; }
  const float* f32() const { return reinterpret_cast<const float*>(data); }
};

}  // namespace minfer
