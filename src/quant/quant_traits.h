// One row per type minfer computes with: how to turn a row of it into floats and back, and which
// activation type its dot product pairs with (ggml-cpu's type_traits_cpu vec_dot_type), so that
// callers never switch on the type. The dot kernels themselves live one layer up
// (kernels/ref/ref_dot.h: ref::vec_dot_for).
#pragma once

#include <cstdint>
#include <span>

#include "core/status.h"
#include "quant/ggml_type.h"

namespace minfer {

// Converts n elements (n a multiple of the block size) of a row; no allocation, no checks.
using ToFloatFn = void (*)(const void* src, float* dst, int64_t n);
using FromFloatFn = void (*)(const float* src, void* dst, int64_t n);

struct QuantTraits {
  GgmlType type;
  uint32_t block_size;       // elements per block
  uint32_t bytes_per_block;  // bytes of one block
  ToFloatFn to_float;        // dequantize a row
  FromFloatFn from_float;    // quantize a row (llama.cpp's reference algorithm)
  // The type the other operand of the dot product is converted to: Q8_0 for Q4_0/Q5_0/Q8_0,
  // Q8_1 for Q4_1/Q5_1, Q8_K for the K-quants, the type itself for F32/F16/BF16. Q8_1 and
  // Q8_K (activation-only types) name themselves; they have no dot kernel.
  GgmlType vec_dot_type;
};

// The row for a type, or nullptr when minfer cannot convert that type.
const QuantTraits* quant_traits(GgmlType type);

// Type-generic row conversions. Preconditions (checked, aborting on violation: a caller bug):
// the type has traits and n is a multiple of its block size.
void dequantize_row(GgmlType type, const void* src, float* dst, int64_t n);
void quantize_row(GgmlType type, const float* src, void* dst, int64_t n);

// Checked entry points for data from outside (files, user input): verify the type is supported,
// the element count is a multiple of the block size and both buffers have exactly the sizes the
// count implies (and, for quantize, that every input is finite); then convert.
Status dequantize_checked(GgmlType type, std::span<const uint8_t> src, std::span<float> dst);
Status quantize_checked(GgmlType type, std::span<const float> src, std::span<uint8_t> dst);

}  // namespace minfer
