// The reference KV cell converters (KernelTable::cells_from_f32 / cells_to_f32): quant/'s row
// conversions, which define the cell formats' arithmetic.
#include <cstdint>
#include <cstring>

#include "kernels/ref/ref_kernels.h"
#include "quant/blocks.h"
#include "quant/quantize.h"

namespace minfer::kernels::ref {

void cells_from_f32_f32(const float* x, void* y, int64_t n) {
  std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

void cells_to_f32_f32(const void* x, float* y, int64_t n) {
  std::memcpy(y, x, static_cast<size_t>(n) * sizeof(float));
}

void cells_from_f32_f16(const float* x, void* y, int64_t n) {
  f32_to_f16(x, n, static_cast<uint16_t*>(y));
}

void cells_to_f32_f16(const void* x, float* y, int64_t n) {
  f16_to_f32(static_cast<const uint16_t*>(x), n, y);
}

void cells_from_f32_q8_0(const float* x, void* y, int64_t n) {
  quantize_row_q8_0(x, static_cast<BlockQ8_0*>(y), n);
}

void cells_to_f32_q8_0(const void* x, float* y, int64_t n) {
  dequantize_row_q8_0(static_cast<const BlockQ8_0*>(x), y, n);
}

}  // namespace minfer::kernels::ref
