// Row quantizers and dequantizers for every type minfer computes with, one pair per type.
//
// Quantizers are llama.cpp's reference (non-imatrix) algorithms, written here from the
// description of those algorithms, operation for operation so they give the same bytes:
//   Q4_0, Q5_0      d = signed absmax / -(2^(b-1)), q = trunc(x / d + 2^(b-1) + 0.5) clamped
//   Q4_1, Q5_1      d = (max - min) / (2^b - 1), m = min, q = trunc((x - min) / d + 0.5)
//   Q8_0, Q8_1      d = absmax / 127, q = round-half-away-from-zero(x / d)
//   MXFP4           e = floor(log2(absmax)) - 2 + 127 (0 for an all-zero block), each element the
//                   nearest table value times 2^(e - 128) (the first on a tie)
//   Q8_K            d = signed absmax / -127 (float32), q = round-half-even(x / d) (<= 127)
//   Q2_K, Q4_K, Q5_K  per sub-block (scale, min) by a weighted least-squares search over trial
//                   scales (ggml's make_qkx2_quants), then 4-/6-bit quantized scales and mins
//                   and a final requantization with them
//   Q3_K, Q6_K      per sub-block signed scale by an error-minimizing search (make_q3_quants,
//                   make_qx_quants), then 6-/8-bit quantized scales and a requantization
//
// Every function takes n elements, n a multiple of the type's block size (a precondition: the
// caller checks it; see quantize_row_checked in quant_traits.h for the checked entry point),
// and reads/writes exactly n elements / (n / block) blocks. Quantizer inputs must be finite
// (NaN or inf make the float-to-integer conversions undefined; quantize_checked rejects them).
// No allocation, no I/O, no throwing.
#pragma once

#include <cstdint>

#include "quant/blocks.h"

namespace minfer {

// Plain float formats (n arbitrary).
void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n);
void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n);
void fp32_to_bf16_row(const float* x, uint16_t* y, int64_t n);
void bf16_to_fp32_row(const uint16_t* x, float* y, int64_t n);

// 32-element block types (n % 32 == 0).
void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n);
void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n);
void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n);
void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n);
void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n);
void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n);

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n);
void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n);
void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n);
void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n);
void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n);
void dequantize_row_q8_1(const BlockQ8_1* x, float* y, int64_t n);
void quantize_row_mxfp4(const float* x, BlockMxfp4* y, int64_t n);
void dequantize_row_mxfp4(const BlockMxfp4* x, float* y, int64_t n);

// 256-element super-block types (n % 256 == 0).
void quantize_row_q2_K(const float* x, BlockQ2K* y, int64_t n);
void quantize_row_q3_K(const float* x, BlockQ3K* y, int64_t n);
void quantize_row_q4_K(const float* x, BlockQ4K* y, int64_t n);
void quantize_row_q5_K(const float* x, BlockQ5K* y, int64_t n);
void quantize_row_q6_K(const float* x, BlockQ6K* y, int64_t n);
void quantize_row_q8_K(const float* x, BlockQ8K* y, int64_t n);

void dequantize_row_q2_K(const BlockQ2K* x, float* y, int64_t n);
void dequantize_row_q3_K(const BlockQ3K* x, float* y, int64_t n);
void dequantize_row_q4_K(const BlockQ4K* x, float* y, int64_t n);
void dequantize_row_q5_K(const BlockQ5K* x, float* y, int64_t n);
void dequantize_row_q6_K(const BlockQ6K* x, float* y, int64_t n);
void dequantize_row_q8_K(const BlockQ8K* x, float* y, int64_t n);

// The 6-bit (scale, min) pair of sub-block j (0..7) of a Q4_K / Q5_K block (see BlockQ4K).
struct ScaleMin {
  uint8_t scale;
  uint8_t min;
};
inline ScaleMin k4_scale_min(int j, const uint8_t* scales) {
  if (j < 4) {
    return {static_cast<uint8_t>(scales[j] & 63), static_cast<uint8_t>(scales[j + 4] & 63)};
  }
  return {static_cast<uint8_t>((scales[j + 4] & 0xf) | ((scales[j - 4] >> 6) << 4)),
          static_cast<uint8_t>((scales[j + 4] >> 4) | ((scales[j] >> 6) << 4))};
}

// The 6-bit scale of sub-block j (0..15) of a Q3_K block, minus its bias 32 (see BlockQ3K).
inline int q3k_scale(int j, const uint8_t* scales) {
  const int low = j < 8 ? (scales[j] & 0xf) : (scales[j - 8] >> 4);
  const int high = (scales[8 + j % 4] >> (2 * (j / 4))) & 3;
  return (low | (high << 4)) - 32;
}

}  // namespace minfer
