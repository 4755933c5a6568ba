// The row loops of the Q8_0 / Q8_1 activation quantizers, written once over an ISA's quantizer of
// one block of 32 (the AVX2 and NEON tables; AVX-512 quantizes 16 blocks at once instead).
// Include only from one ISA's act_quant TU: everything is in an anonymous namespace, so each TU
// keeps its own copy, compiled for its ISA.
#pragma once

#include <cstddef>
#include <cstdint>

#include "kernels/kernel_table.h"
#include "quant/blocks.h"

namespace minfer::kernels::act_quant {
namespace {

// Block32(x, q, &sum) quantizes x[0, 32) into q as quant/act_quant.h does, sets sum to the sum of
// the quants and returns d; ToF16(f) is f as f16 bits, rounded to nearest even. sums, when not
// null, receives each block's quant sum ([n / 32]).
template <auto Block32, auto ToF16>
void q8_0(const float* x, BlockQ8_0* blocks, int64_t n, int32_t* sums) {
  for (int64_t i = 0; i < n / 32; ++i) {
    int sum;
    blocks[i].d = ToF16(Block32(x + 32 * i, blocks[i].qs, &sum));
    if (sums != nullptr) sums[i] = sum;
  }
}

// Q8_1: as Q8_0, and s = d · Σ q rounded to f32 and then to f16, as the reference.
template <auto Block32, auto ToF16>
void q8_1(const float* x, BlockQ8_1* blocks, int64_t n) {
  for (int64_t i = 0; i < n / 32; ++i) {
    int sum;
    const float d = Block32(x + 32 * i, blocks[i].qs, &sum);
    blocks[i].d = ToF16(d);
    blocks[i].s = ToF16(d * static_cast<float>(sum));
  }
}

}  // namespace
}  // namespace minfer::kernels::act_quant

// Defines act_q8_0, act_q8_0_sums (with the row's lane starts and scales, kernel_table.h) and
// act_q8_1 of simd_kernels_decl.h on Block32 and ToF16 (see act_quant::q8_0), in the namespace
// where it stands.
#define MINFER_DEFINE_ACT_Q8_BLOCKWISE(Block32, ToF16)                                             \
  void act_q8_0(const float* x, void* y, int64_t n) {                                              \
    ::minfer::kernels::act_quant::q8_0<Block32, ToF16>(x, static_cast<BlockQ8_0*>(y), n, nullptr); \
  }                                                                                                \
  void act_q8_0_sums(const float* x, void* y, int64_t n) {                                         \
    const size_t n_blocks = static_cast<size_t>(n / 32);                                           \
    ::minfer::kernels::act_quant::q8_0<Block32, ToF16>(                                            \
        x, static_cast<BlockQ8_0*>(y), n,                                                          \
        reinterpret_cast<int32_t*>(static_cast<uint8_t*>(y) + /* [n_blocks] */                     \
                                   q8_0_act_sums_offset(n_blocks)));                               \
    q8_0_act_lanes(y, static_cast<int64_t>(n_blocks));                                             \
  }                                                                                                \
  void act_q8_1(const float* x, void* y, int64_t n) {                                              \
    ::minfer::kernels::act_quant::q8_1<Block32, ToF16>(x, static_cast<BlockQ8_1*>(y), n);          \
  }
