// Weights repacked at load into the layout their kernels read fastest: Q8_0 / Q4_0 / Q5_0 / MXFP4
// and Q4_K / Q5_K / Q6_K matrices into the x16 row-interleaved layout (kernels/interleave.h) when
// the kernel table has its tiles. The copies live in anonymous memory made once at load; the file
// stays as it is, and the mapped pages of every repacked tensor are released (MADV_DONTNEED), so
// resident memory does not grow. MINFER_REPACK=0 keeps every weight in the GGUF layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "core/non_copyable.h"
#include "core/status.h"
#include "kernels/kernel_table.h"
#include "models/model_weights.h"

namespace minfer {

// The anonymous memory the repacked weights live in (unmapped when destroyed: keep it as long
// as the ModelWeights that point into it).
class RepackedWeights : NonCopyable {
 public:
  RepackedWeights(uint8_t* data, size_t bytes, int n_tensors)
      : data_(data), bytes_(bytes), n_tensors_(n_tensors) {}
  ~RepackedWeights();
  size_t bytes() const { return bytes_; }
  int n_tensors() const { return n_tensors_; }

 private:
  uint8_t* data_;
  size_t bytes_;
  int n_tensors_;
};

// Whether loading repacks weights for `table`: it has x16 tiles and MINFER_REPACK is not "0".
bool repack_enabled(const kernels::KernelTable& table);

// Repacks every matrix of `w` that `table` multiplies faster in another layout (Q8_0 / Q4_0 /
// Q5_0 / MXFP4 / Q4_K / Q5_K / Q6_K matmul weights that can_interleave, a MoE's experts
// included; a token_embd tied to the output goes with it, and its row lookups read the new
// layout) and points those WeightTensors at the copies. Returns nullptr when nothing qualifies.
// Errors: the anonymous memory cannot be mapped (kIo, with the bytes asked for).
Result<std::unique_ptr<RepackedWeights>> repack_weights(ModelWeights& w,
                                                        const kernels::KernelTable& table);

}  // namespace minfer
