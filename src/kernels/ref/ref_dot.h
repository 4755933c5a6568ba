// Reference dot products: the definition every SIMD kernel in src/kernels/{avx2,avx512} is
// tested against. Each pairs a weight row x with an activation row y already converted to the
// weight type's vec_dot_type (quant_traits.h), exactly as llama.cpp's CPU backend pairs them:
//   F32 x F32, F16 x F16, BF16 x BF16          products in float, summed in double
//   Q4_0, Q5_0, Q8_0 x Q8_0                    integer sum per 32-block, * d_x * d_y
//   MXFP4 x Q8_0                               integer sum per block (table values) fma'd
//                                              by 2^(e_x - 128) d_y into one float, as
//                                              llama.cpp's x86 repacked MXFP4 gemv
//   Q4_1, Q5_1 x Q8_1                          integer sums of 4 elements fma'd into 8 float
//                                              lanes by d_x d_y, m_x * s_y summed apart, as
//                                              llama.cpp's x86 dots (ref_dot.cpp)
//   Q2_K … Q5_K x Q8_K                         integer sums per sub-block times the integer
//                                              sub-block scales, summed per super-block, then
//                                              * d_x d_y (minus dmin_x d_y * sum(bsums * mins))
//   Q6_K x Q8_K                                8 integer lanes per super-block fma'd into 8
//                                              float lanes by d_x d_y, as llama.cpp's x86 dot
//                                              (ref_dot_k.cpp)
// Signature: n elements (a multiple of both types' block size: a precondition, unchecked),
// *s receives the dot product, x and y point at n elements' worth of blocks. No allocation, no
// I/O, no throwing.
#pragma once

#include "quant/ggml_type.h"

namespace minfer::ref {

using VecDotFn = void (*)(int n, float* s, const void* x, const void* y);

// The sum of 8 float lanes in the order of llama.cpp's x86 hsum_float_8 (arch/x86/quants.c: the
// 128-bit halves added, then their high pair onto the low, then lane 1 onto lane 0):
// ((l0 + l4) + (l2 + l6)) + ((l1 + l5) + (l3 + l7)). The dots that keep 8 lanes end with it.
inline float hsum_float_8(const float lane[8]) {
  const float lo = (lane[0] + lane[4]) + (lane[2] + lane[6]);
  const float hi = (lane[1] + lane[5]) + (lane[3] + lane[7]);
  return lo + hi;
}

void vec_dot_f32(int n, float* s, const void* x, const void* y);   // float[n] . float[n]
void vec_dot_f16(int n, float* s, const void* x, const void* y);   // f16[n] . f16[n]
void vec_dot_bf16(int n, float* s, const void* x, const void* y);  // bf16[n] . bf16[n]

void vec_dot_q4_0_q8_0(int n, float* s, const void* x, const void* y);
void vec_dot_q4_1_q8_1(int n, float* s, const void* x, const void* y);
void vec_dot_q5_0_q8_0(int n, float* s, const void* x, const void* y);
void vec_dot_q5_1_q8_1(int n, float* s, const void* x, const void* y);
void vec_dot_q8_0_q8_0(int n, float* s, const void* x, const void* y);
void vec_dot_mxfp4_q8_0(int n, float* s, const void* x, const void* y);

void vec_dot_q2_K_q8_K(int n, float* s, const void* x, const void* y);
void vec_dot_q3_K_q8_K(int n, float* s, const void* x, const void* y);
void vec_dot_q4_K_q8_K(int n, float* s, const void* x, const void* y);
void vec_dot_q5_K_q8_K(int n, float* s, const void* x, const void* y);
void vec_dot_q6_K_q8_K(int n, float* s, const void* x, const void* y);

// The reference dot product for a weight type (its y operand is quant_traits(type)->
// vec_dot_type), or nullptr for a type with none (Q8_1, Q8_K and the types minfer does not
// compute with).
VecDotFn vec_dot_for(GgmlType weight_type);

}  // namespace minfer::ref
