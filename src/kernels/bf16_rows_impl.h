// The row loop of the tables that emulate VDPBF16PS for KernelTable::dot_rows_bf16 (AVX2, NEON),
// written once over the ISA's functions, given as template arguments:
//   kStep: the elements of one step of the dot (n / kStep · kStep of a row are stepped);
//   min_exponent(a, n): the smallest exponent among a's first n bf16s (zeros left out);
//   dot_exact / dot_flushing(a, b, n): ref::dot_bf16_cells' score of a and b, by the plain fused
//   multiply-adds (valid where ref::bf16_steps_exact) or by the emulated flushing steps.
// Each row's exponent is found once for a chunk of key rows and once per query row. Include
// only from a SIMD translation unit: everything here sits in an anonymous namespace so each
// ISA's TU keeps its own copy (see quant_tile_impl.h).
#pragma once

#include <cstdint>

#include "kernels/kernel_table.h"
#include "kernels/ref/ref_kernels.h"

namespace minfer::kernels {
namespace {

using Bf16MinExponentFn = int (*)(const uint16_t* a, int64_t n);
using Bf16DotFn = float (*)(const uint16_t* a, const uint16_t* b, int64_t n);

template <int64_t kStep, Bf16MinExponentFn min_exponent, Bf16DotFn dot_exact,
          Bf16DotFn dot_flushing>
void bf16_dot_rows(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                   int64_t out_stride) {
  constexpr int64_t kKeyChunk = 64;             // key rows whose exponents are found at once
  const int64_t steps_end = n / kStep * kStep;  // the elements the steps read
  for (int64_t j0 = 0; j0 < rows.n; j0 += kKeyChunk) {
    const int64_t j1 = rows.n < j0 + kKeyChunk ? rows.n : j0 + kKeyChunk;
    int key_exponent[kKeyChunk];
    for (int64_t j = j0; j < j1; ++j) {
      key_exponent[j - j0] = min_exponent(rows.row(j), steps_end);
    }
    for (int64_t i = 0; i < x.n; ++i) {
      const int q_exponent = min_exponent(x.row(i), steps_end);
      for (int64_t j = j0; j < j1; ++j) {
        const bool exact = ref::bf16_steps_exact(key_exponent[j - j0], q_exponent);
        const float dot =
            exact ? dot_exact(rows.row(j), x.row(i), n) : dot_flushing(rows.row(j), x.row(i), n);
        out[i * out_stride + j] = dot * scale;
      }
    }
  }
}

}  // namespace
}  // namespace minfer::kernels
