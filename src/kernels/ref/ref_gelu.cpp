// The GELU table (kernels/gelu_table.h) and the reference GEGLU kernel.
#include <cmath>
#include <cstdint>

#include "kernels/gelu_table.h"
#include "kernels/ref/ref_kernels.h"
#include "quant/fp16.h"

namespace minfer::kernels {

namespace {

// ggml_gelu_f32 as ggml-cpu.c's table initialisation evaluates it on an FMA host: the compiler
// contracts 1 + a·x·x into one fused multiply-add.
float gelu_tanh(float x) {
  constexpr float kCoefA = 0.044715f;
  constexpr float kSqrt2OverPi = 0.79788456080286535587989211986876f;
  const float inner = std::fma(kCoefA * x, x, 1.0f);
  return 0.5f * x * (1.0f + std::tanh(kSqrt2OverPi * x * inner));
}

struct GeluTable {
  float values[1 << 16];  // [65536] indexed by f16 bits
  GeluTable() {
    for (uint32_t h = 0; h < (1u << 16); ++h) {
      const float x = fp16_to_fp32(static_cast<uint16_t>(h));
      values[h] = fp16_to_fp32(fp32_to_fp16(gelu_tanh(x)));
    }
  }
};

}  // namespace

const float* gelu_f16_table() {
  static const GeluTable table;
  return table.values;
}

namespace ref {

void geglu(const float* gate, const float* up, int64_t n, float* y) {
  const float* table = gelu_f16_table();
  for (int64_t i = 0; i < n; ++i) {
    // ggml's order of tests: a NaN fails both and reads the table (NaN).
    const float x = gate[i];
    float g = 0.0f;
    if (x <= kGeluTableLow) {
      g = 0.0f;
    } else if (x >= kGeluTableHigh) {
      g = x;
    } else {
      g = table[fp32_to_fp16(x)];
    }
    y[i] = g * up[i];
  }
}

}  // namespace ref

}  // namespace minfer::kernels
