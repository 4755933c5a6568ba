// Block layouts of the ggml quantized types as GGUF stores them (ggml-common.h: block_q4_0 …
// block_q8_K). A row of n elements is n / block_size consecutive blocks. All multi-byte fields
// are little-endian; f16 fields hold IEEE binary16 bits (see quant/fp16.h). The static_asserts
// pin the sizes to the bytes-per-block of the GGUF type table, so a layout change fails to
// compile instead of misreading a file.
#pragma once

#include <bit>
#include <cstddef>
#include <cstdint>

namespace minfer {

inline constexpr int kQK4_0 = 32;
inline constexpr int kQK4_1 = 32;
inline constexpr int kQK5_0 = 32;
inline constexpr int kQK5_1 = 32;
inline constexpr int kQK8_0 = 32;
inline constexpr int kQK8_1 = 32;
inline constexpr int kQKK = 256;         // super-block size of every K-quant
inline constexpr int kKScaleBytes = 12;  // packed 6-bit scales/mins of Q4_K, Q5_K (and Q3_K)

// Q4_0: x = d * (q - 8), q in [0, 15]. qs[j] holds element j (low nibble) and j + 16 (high).
struct BlockQ4_0 {
  uint16_t d;              // f16 scale
  uint8_t qs[kQK4_0 / 2];  // [32] 4-bit quants
};
static_assert(sizeof(BlockQ4_0) == 18);

// Q4_1: x = d * q + m, q in [0, 15]; same nibble order as Q4_0.
struct BlockQ4_1 {
  uint16_t d;              // f16 scale
  uint16_t m;              // f16 minimum
  uint8_t qs[kQK4_1 / 2];  // [32] 4-bit quants
};
static_assert(sizeof(BlockQ4_1) == 20);

// Q5_0: x = d * (q - 16), q in [0, 31]: low 4 bits as in Q4_0, bit 4 of element j in bit j of
// the little-endian u32 qh.
struct BlockQ5_0 {
  uint16_t d;              // f16 scale
  uint8_t qh[4];           // [32] fifth bits
  uint8_t qs[kQK5_0 / 2];  // [32] low 4 bits
};
static_assert(sizeof(BlockQ5_0) == 22);

// Q5_1: x = d * q + m, q in [0, 31]; bits as in Q5_0.
struct BlockQ5_1 {
  uint16_t d;              // f16 scale
  uint16_t m;              // f16 minimum
  uint8_t qh[4];           // [32] fifth bits
  uint8_t qs[kQK5_1 / 2];  // [32] low 4 bits
};
static_assert(sizeof(BlockQ5_1) == 24);

// Q8_0: x = d * q, q in [-127, 127].
struct BlockQ8_0 {
  uint16_t d;         // f16 scale
  int8_t qs[kQK8_0];  // [32] quants
};
static_assert(sizeof(BlockQ8_0) == 34);

// Q8_1: x = d * q; s = d * sum(q) (f16), which lets Q4_1/Q5_1 dot products add their minimum
// term without touching the quants.
struct BlockQ8_1 {
  uint16_t d;         // f16 scale
  uint16_t s;         // f16 d * sum(qs)
  int8_t qs[kQK8_1];  // [32] quants
};
static_assert(sizeof(BlockQ8_1) == 36);

// Q2_K: 16 sub-blocks of 16. x = d * (scales[j] & 15) * q - dmin * (scales[j] >> 4), q in
// [0, 3]. qs: for each 128-element half h, byte qs[32h + l] holds elements 128h + l + 32k in
// bits 2k..2k+1 (k = 0..3).
struct BlockQ2K {
  uint8_t scales[kQKK / 16];  // [16] 4-bit scale (low) and 4-bit min (high) per sub-block
  uint8_t qs[kQKK / 4];       // [256] 2-bit quants
  uint16_t d;                 // f16 super-block scale of the scales
  uint16_t dmin;              // f16 super-block scale of the mins
};
static_assert(sizeof(BlockQ2K) == 84);

// Q3_K: 16 sub-blocks of 16. x = d * (s_j - 32) * (q - 4), q in [0, 7]: low 2 bits in qs (same
// order as Q2_K), bit 2 of element 32k + l (k = 0..7, l = 0..31) in bit k of hmask[l].
// scales: 16 6-bit values s_j; low nibbles of s_0..7 in the low nibbles of bytes 0..7, of
// s_8..15 in the high nibbles of bytes 0..7; the top 2 bits of s_j in bits 2(j/4)..+1 of
// byte 8 + j % 4.
struct BlockQ3K {
  uint8_t hmask[kQKK / 8];       // [256] high bits
  uint8_t qs[kQKK / 4];          // [256] low 2 bits
  uint8_t scales[kKScaleBytes];  // [16] packed 6-bit sub-block scales
  uint16_t d;                    // f16 super-block scale
};
static_assert(sizeof(BlockQ3K) == 110);

// Q4_K: 8 sub-blocks of 32. x = d * sc_j * q - dmin * m_j, q in [0, 15]; sc_j, m_j 6-bit,
// packed in scales[12]: for j < 4, sc_j = scales[j] & 63, m_j = scales[j + 4] & 63; for j >= 4,
// sc_j = (scales[j + 4] & 15) | (scales[j - 4] >> 6) << 4 and
// m_j = (scales[j + 4] >> 4) | (scales[j] >> 6) << 4. qs: 64-element chunks c, byte
// qs[32c + l] holds element 64c + l (low nibble) and 64c + 32 + l (high nibble).
struct BlockQ4K {
  uint16_t d;                    // f16 super-block scale of the scales
  uint16_t dmin;                 // f16 super-block scale of the mins
  uint8_t scales[kKScaleBytes];  // [8 + 8] packed 6-bit scales and mins
  uint8_t qs[kQKK / 2];          // [256] 4-bit quants
};
static_assert(sizeof(BlockQ4K) == 144);

// Q5_K: Q4_K plus a fifth bit: bit 4 of element 32k + l (k = 0..7) in bit k of qh[l].
struct BlockQ5K {
  uint16_t d;                    // f16 super-block scale of the scales
  uint16_t dmin;                 // f16 super-block scale of the mins
  uint8_t scales[kKScaleBytes];  // [8 + 8] packed 6-bit scales and mins
  uint8_t qh[kQKK / 8];          // [256] fifth bits
  uint8_t qs[kQKK / 2];          // [256] low 4 bits
};
static_assert(sizeof(BlockQ5K) == 176);

// Q6_K: 16 sub-blocks of 16. x = d * scales[j] * (q - 32), q in [0, 63]. For each 128-element
// half h (ql += 64h, qh += 32h), element 128h + 32k + l (k = 0..3, l = 0..31) has its low 4
// bits in ql[l + 32 (k & 1)] (low nibble for k < 2, high for k >= 2) and its top 2 bits in bits
// 2k..2k+1 of qh[l].
struct BlockQ6K {
  uint8_t ql[kQKK / 2];      // [256] low 4 bits
  uint8_t qh[kQKK / 4];      // [256] high 2 bits
  int8_t scales[kQKK / 16];  // [16] 8-bit sub-block scales
  uint16_t d;                // f16 super-block scale
};
static_assert(sizeof(BlockQ6K) == 210);

// Q8_K: the activation type of the K-quant dot products. x = d * q; d is a float32 here, and
// bsums[j] = sum of qs[16j .. 16j + 15] lets the dot products apply the weights' per-sub-block
// minimum (Q2_K, Q4_K, Q5_K) without a pass over the quants.
struct BlockQ8K {
  float d;                   // f32 scale
  int8_t qs[kQKK];           // [256] quants
  int16_t bsums[kQKK / 16];  // [16] sums of 16 quants
};
static_assert(sizeof(BlockQ8K) == 292);

// MXFP4 (OCP microscaling FP4, as gpt-oss ships its experts): x = kMxfp4Values[q] * 2^(e - 128),
// q in [0, 15] an E2M1 code whose values the table doubles to integers (so the block's scale is
// half the E8M0 power 2^(e - 127)). qs[j] holds element j (low nibble) and j + 16 (high), as
// Q4_0.
inline constexpr int kQKMxfp4 = 32;
inline constexpr int8_t kMxfp4Values[16] = {0, 1,  2,  3,  4,  6,  8,  12,
                                            0, -1, -2, -3, -4, -6, -8, -12};

struct BlockMxfp4 {
  uint8_t e;                 // E8M0 exponent: the block scale is 2^(e - 128)
  uint8_t qs[kQKMxfp4 / 2];  // [32] 4-bit E2M1 codes
};
static_assert(sizeof(BlockMxfp4) == 17);

// 2^(e - 128) as a float, exactly (a subnormal for e < 2): ggml's "E8M0 to fp32 half".
inline float e8m0_to_fp32_half(uint8_t e) {
  const uint32_t bits = e < 2 ? 0x00200000u << e : static_cast<uint32_t>(e - 1) << 23;
  return std::bit_cast<float>(bits);
}

// Field offsets that differ from "in declaration order with no padding" would be a layout bug.
static_assert(offsetof(BlockQ2K, d) == 80 && offsetof(BlockQ3K, d) == 108);
static_assert(offsetof(BlockQ5K, qs) == 48 && offsetof(BlockQ6K, d) == 208);
static_assert(offsetof(BlockQ8K, bsums) == 260);

}  // namespace minfer
