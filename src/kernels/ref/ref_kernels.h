// The reference (plain C++) kernels behind ref_table. Semantics: kernel_table.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/ref/ref_dot.h"

#define MINFER_KERNEL_NAMESPACE ref
#include "kernels/ops_decl.h"
#undef MINFER_KERNEL_NAMESPACE

namespace minfer::kernels::ref {

// KV cells (KernelTable::cells_from_f32 / cells_to_f32). The F32 pair is every table's.
QuantizeRow cells_from_f32_f32;
DequantizeRow cells_to_f32_f32;
QuantizeRow cells_from_f32_f16;
DequantizeRow cells_to_f32_f16;
QuantizeRow cells_from_f32_q8_0;
DequantizeRow cells_to_f32_q8_0;

// The reference matmul tile (MatmulTileFn) of a weight type: its reference dot product
// (ref_dot.h) for every (weight row, token).
template <minfer::ref::VecDotFn Dot>
void matmul_tile(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, const void* act,
                 size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  const auto* w_bytes = static_cast<const uint8_t*>(w);
  const auto* a_bytes = static_cast<const uint8_t*>(act);
  for (int64_t t = 0; t < n_tok; ++t) {
    for (int64_t r = 0; r < n_rows; ++r) {
      Dot(static_cast<int>(n_in), &y[t * y_stride + r], w_bytes + r * w_row_bytes,
          a_bytes + t * act_row_bytes);
    }
  }
}

}  // namespace minfer::kernels::ref
