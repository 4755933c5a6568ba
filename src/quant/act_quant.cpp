#include "quant/act_quant.h"

#include <cmath>

#include "quant/blocks.h"
#include "quant/fp16.h"

namespace minfer {
namespace {

// Quantizes one block of 32 to q (round half to even, as vroundps with imm 0 in the default
// rounding mode) and returns the float d = amax / 127.
float quantize_block(const float* x, int8_t* q) {
  float amax = 0.0f;
  for (int j = 0; j < 32; ++j) amax = std::fmax(amax, std::fabs(x[j]));
  const float d = amax / 127.0f;
  const float id = amax != 0.0f ? 127.0f / amax : 0.0f;
  for (int j = 0; j < 32; ++j) q[j] = static_cast<int8_t>(std::nearbyint(x[j] * id));
  return d;
}

}  // namespace

void quantize_act_q8_0(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  for (int64_t i = 0; i < n / 32; ++i) {
    blocks[i].d = fp32_to_fp16(quantize_block(x + 32 * i, blocks[i].qs));
  }
}

void quantize_act_q8_1(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_1*>(y);
  for (int64_t i = 0; i < n / 32; ++i) {
    const float d = quantize_block(x + 32 * i, blocks[i].qs);
    int sum = 0;
    for (int j = 0; j < 32; ++j) sum += blocks[i].qs[j];
    blocks[i].d = fp32_to_fp16(d);
    blocks[i].s = fp32_to_fp16(d * static_cast<float>(sum));
  }
}

}  // namespace minfer
