// GELU as llama.cpp's CPU backend computes it for f32 (ggml_vec_gelu_f32 / ggml_vec_geglu_f32
// with GGML_GELU_FP16, ggml-cpu/vec.h): x rounded to f16 indexes a table of the tanh-form GELU
// of every f16 value, each result rounded to f16. Shared by every kernel table, so every ISA
// reads the same numbers.
#pragma once

#include <cstdint>

namespace minfer::kernels {

// [65536] f32: entry h is f16(gelu(f32(h))), gelu(x) = 0.5·x·(1 + tanh(√(2/π)·x·(1 + 0.044715·x²)))
// (Hendrycks & Gimpel 2016, the tanh approximation). Filled on the first call (thread-safe).
const float* gelu_f16_table();

// Outside (-10, 10) the table is not used: gelu(x) is 0 at x <= -10 and x at x >= 10.
inline constexpr float kGeluTableLow = -10.0f;
inline constexpr float kGeluTableHigh = 10.0f;

}  // namespace minfer::kernels
