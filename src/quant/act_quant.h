// Activation quantizers with the semantics of llama.cpp's x86 CPU backend (ggml-cpu
// arch/x86/quants.c quantize_row_q8_0 / quantize_row_q8_1, AVX path), which is what its matmuls
// pair with Q4_0 … Q8_0 weights on x86. They differ from the `_ref` quantizers of quantize.h
// (which `quantize` uses for weights and which reproduce llama.cpp's files byte for byte):
//   d = amax / 127 (stored as f16, round to nearest even), as the reference, but
//   q = round-half-to-even(x · (127 / amax))   (the reference: round-half-away(x · (1 / d)))
//   Q8_1: s = f16(d · Σq) with the unrounded float d, as the reference.
// 127 / amax and 1 / (amax / 127) differ in the last bit for some amax, and x · id lands exactly
// on .5 for some inputs; either changes a quant by one. An all-zero block gives d = 0, q = 0.
// Q8_K activations on x86 use the reference quantize_row_q8_K (llama.cpp has no x86 version).
//
// These are the reference (ref_table) activation converters of kernels/kernel_table.h; the SIMD
// tables carry bit-identical vector versions. Precondition: finite inputs, n a multiple of 32.
#pragma once

#include <cstdint>

namespace minfer {

// y: BlockQ8_0[n / 32] (QuantizeRowFn signature).
void quantize_act_q8_0(const float* x, void* y, int64_t n);
// y: BlockQ8_1[n / 32].
void quantize_act_q8_1(const float* x, void* y, int64_t n);

}  // namespace minfer
