// The plain float rows and the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q8_1).
// Every float operation below is written in the order llama.cpp's reference quantizers
// (ggml-quants.c, quantize_row_*_ref) perform it, so that the bytes are identical; the
// comments say where a choice (truncation, clamping, the rounding rule) matters.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "quant/block_stats.h"
#include "quant/fp16.h"
#include "quant/quantize.h"

namespace minfer {

void fp32_to_fp16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_fp16(x[i]);
}
void fp16_to_fp32_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp16_to_fp32(x[i]);
}
void fp32_to_bf16_row(const float* x, uint16_t* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = fp32_to_bf16(x[i]);
}
void bf16_to_fp32_row(const uint16_t* x, float* y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = bf16_to_fp32(x[i]);
}

namespace {

using quant_util::signed_absmax;

struct MinMax {
  float min = FLT_MAX;
  float max = -FLT_MAX;
};
MinMax min_max(const float* x, int n) {
  MinMax m;
  for (int j = 0; j < n; ++j) {
    m.min = std::min(m.min, x[j]);
    m.max = std::max(m.max, x[j]);
  }
  return m;
}

float absmax(const float* x, int n) {
  float amax = 0.0f;
  for (int j = 0; j < n; ++j) amax = std::max(amax, std::fabs(x[j]));
  return amax;
}

uint32_t load_u32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

}  // namespace

namespace {

// Packs the levels of elements j and j + 16 of a 32-element block: the low nibbles into qs[j]
// and, for 5-bit types, the fifth bits into bit j and j + 16 of qh.
template <int kBits>
void pack_pair(int j, int q0, int q1, uint8_t* qs, uint32_t& qh) {
  qs[j] = static_cast<uint8_t>((q0 & 0xf) | ((q1 & 0xf) << 4));
  if constexpr (kBits == 5) {
    qh |= static_cast<uint32_t>(q0 >> 4) << j;
    qh |= static_cast<uint32_t>(q1 >> 4) << (j + 16);
  }
}

// Q4_0 and Q5_0: d = signed extreme / -2^(b-1), so the full 2^b levels are used on its side.
template <int kBits, typename Block>
void quantize_row_symmetric(const float* x, Block* y, int64_t n) {
  constexpr int kBlock = 32;
  constexpr int kHalf = 1 << (kBits - 1);  // 8 or 16
  constexpr int kTop = (1 << kBits) - 1;   // 15 or 31
  constexpr float kOffset = kHalf + 0.5f;  // 8.5f or 16.5f
  const int64_t nb = n / kBlock;
  for (int64_t i = 0; i < nb; ++i, x += kBlock) {
    const float d = signed_absmax(x, kBlock).value / -kHalf;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    uint32_t qh = 0;
    for (int j = 0; j < kBlock / 2; ++j) {
      // x * id lies in [-2^(b-1), 2^(b-1)]; adding 2^(b-1) + 0.5 then truncating rounds half up
      // (values are >= 0).
      const int q0 = std::min(kTop, static_cast<int>(x[j] * id + kOffset));
      const int q1 = std::min(kTop, static_cast<int>(x[j + kBlock / 2] * id + kOffset));
      pack_pair<kBits>(j, q0, q1, y[i].qs, qh);
    }
    if constexpr (kBits == 5) std::memcpy(y[i].qh, &qh, sizeof(qh));
  }
}

// Q4_1 and Q5_1: x ~ d * q + m over the block's [min, max] in 2^b - 1 steps.
template <int kBits, typename Block>
void quantize_row_asymmetric(const float* x, Block* y, int64_t n) {
  constexpr int kBlock = 32;
  constexpr int kTop = (1 << kBits) - 1;  // 15 or 31
  const int64_t nb = n / kBlock;
  for (int64_t i = 0; i < nb; ++i, x += kBlock) {
    const MinMax mm = min_max(x, kBlock);
    const float d = (mm.max - mm.min) / kTop;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    y[i].m = fp32_to_fp16(mm.min);
    uint32_t qh = 0;
    for (int j = 0; j < kBlock / 2; ++j) {
      // (x - min) * id <= 2^b - 1 up to rounding, so the clamp never changes a value; it only
      // guards the packing.
      const int q0 = std::min(kTop, static_cast<int>((x[j] - mm.min) * id + 0.5f));
      const int q1 = std::min(kTop, static_cast<int>((x[j + kBlock / 2] - mm.min) * id + 0.5f));
      pack_pair<kBits>(j, q0, q1, y[i].qs, qh);
    }
    if constexpr (kBits == 5) std::memcpy(y[i].qh, &qh, sizeof(qh));
  }
}

static_assert(kQK4_0 == 32 && kQK4_1 == 32 && kQK5_0 == 32 && kQK5_1 == 32);

}  // namespace

void quantize_row_q4_0(const float* x, BlockQ4_0* y, int64_t n) {
  quantize_row_symmetric<4>(x, y, n);
}

void quantize_row_q4_1(const float* x, BlockQ4_1* y, int64_t n) {
  quantize_row_asymmetric<4>(x, y, n);
}

void quantize_row_q5_0(const float* x, BlockQ5_0* y, int64_t n) {
  quantize_row_symmetric<5>(x, y, n);
}

void quantize_row_q5_1(const float* x, BlockQ5_1* y, int64_t n) {
  quantize_row_asymmetric<5>(x, y, n);
}

namespace {

// Q8_0 and Q8_1: d = absmax / 127; Q8_1 also stores s = d * (sum of the quants).
template <typename Block>
void quantize_row_q8(const float* x, Block* y, int64_t n) {
  constexpr int kBlock = 32;
  const int64_t nb = n / kBlock;
  for (int64_t i = 0; i < nb; ++i, x += kBlock) {
    const float d = absmax(x, kBlock) / 127;
    const float id = d != 0.0f ? 1.0f / d : 0.0f;
    y[i].d = fp32_to_fp16(d);
    int sum = 0;
    for (int j = 0; j < kBlock; ++j) {
      // C's roundf: halfway cases away from zero (llama.cpp's reference; its AVX path rounds
      // halfway cases to even, which differs only on exact ties).
      y[i].qs[j] = static_cast<int8_t>(std::round(x[j] * id));
      sum += y[i].qs[j];
    }
    // s uses the unrounded float d, as llama.cpp's reference does.
    if constexpr (std::is_same_v<Block, BlockQ8_1>) {
      y[i].s = fp32_to_fp16(static_cast<float>(sum) * d);
    }
  }
}

static_assert(kQK8_0 == 32 && kQK8_1 == 32);

}  // namespace

void quantize_row_q8_0(const float* x, BlockQ8_0* y, int64_t n) {
  quantize_row_q8(x, y, n);
}

void quantize_row_q8_1(const float* x, BlockQ8_1* y, int64_t n) {
  quantize_row_q8(x, y, n);
}

namespace {

// Q4_0, Q4_1, Q5_0, Q5_1: 32 elements, element j in the low nibble of qs[j] and element j + 16 in
// the high one; the 5-bit types add bit j of qh as the fifth bit of element j. The _0 types are
// x = (q - 2^(b-1)) * d, the _1 types x = q * d + m.
template <typename Block>
void dequantize_row_32(const Block* x, float* y, int64_t n) {
  constexpr int kBlock = 32;
  constexpr int kBits = requires {
    x->qh;
  }
  ? 5 : 4;
  constexpr int kHalf = 1 << (kBits - 1);
  constexpr bool kHasMin = requires {
    x->m;
  };
  const int64_t nb = n / kBlock;
  for (int64_t i = 0; i < nb; ++i, y += kBlock) {
    const float d = fp16_to_fp32(x[i].d);
    float m = 0.0f;
    if constexpr (kHasMin) m = fp16_to_fp32(x[i].m);
    uint32_t qh = 0;
    if constexpr (kBits == 5) qh = load_u32(x[i].qh);
    for (int j = 0; j < kBlock / 2; ++j) {
      const int q0 = (x[i].qs[j] & 0xf) | (static_cast<int>((qh >> j) & 1u) << 4);
      const int q1 = (x[i].qs[j] >> 4) | (static_cast<int>((qh >> (j + kBlock / 2)) & 1u) << 4);
      if constexpr (kHasMin) {
        y[j] = static_cast<float>(q0) * d + m;
        y[j + kBlock / 2] = static_cast<float>(q1) * d + m;
      } else {
        y[j] = static_cast<float>(q0 - kHalf) * d;
        y[j + kBlock / 2] = static_cast<float>(q1 - kHalf) * d;
      }
    }
  }
}

}  // namespace

void dequantize_row_q4_0(const BlockQ4_0* x, float* y, int64_t n) {
  dequantize_row_32(x, y, n);
}

void dequantize_row_q4_1(const BlockQ4_1* x, float* y, int64_t n) {
  dequantize_row_32(x, y, n);
}

void dequantize_row_q5_0(const BlockQ5_0* x, float* y, int64_t n) {
  dequantize_row_32(x, y, n);
}

void dequantize_row_q5_1(const BlockQ5_1* x, float* y, int64_t n) {
  dequantize_row_32(x, y, n);
}

void dequantize_row_q8_0(const BlockQ8_0* x, float* y, int64_t n) {
  const int64_t nb = n / kQK8_0;
  for (int64_t i = 0; i < nb; ++i, y += kQK8_0) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK8_0; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

void dequantize_row_q8_1(const BlockQ8_1* x, float* y, int64_t n) {
  const int64_t nb = n / kQK8_1;
  for (int64_t i = 0; i < nb; ++i, y += kQK8_1) {
    const float d = fp16_to_fp32(x[i].d);
    for (int j = 0; j < kQK8_1; ++j) y[j] = static_cast<float>(x[i].qs[j]) * d;
  }
}

namespace {

// The code whose value times d is nearest x; the lowest code on a tie.
uint8_t nearest_mxfp4(float x, float d) {
  uint8_t best = 0;
  float best_err = std::fabs(static_cast<float>(kMxfp4Values[0]) * d - x);
  for (uint8_t q = 1; q < 16; ++q) {
    const float err = std::fabs(static_cast<float>(kMxfp4Values[q]) * d - x);
    if (err < best_err) {
      best = q;
      best_err = err;
    }
  }
  return best;
}

}  // namespace

void quantize_row_mxfp4(const float* x, BlockMxfp4* y, int64_t n) {
  const int64_t nb = n / kQKMxfp4;
  for (int64_t i = 0; i < nb; ++i, x += kQKMxfp4) {
    float amax = 0.0f;
    for (int j = 0; j < kQKMxfp4; ++j) amax = std::max(amax, std::fabs(x[j]));
    // The largest code (6, doubled to 12) lands at amax's power of two: 12 · 2^(e - 128) =
    // 1.5 · 2^floor(log2 amax). Blocks below 2^-125 (where e would go negative) get e = 0.
    const float e_f = amax > 0.0f ? std::floor(std::log2(amax)) - 2.0f + 127.0f : 0.0f;
    const uint8_t e = static_cast<uint8_t>(std::clamp(e_f, 0.0f, 255.0f));
    const float d = e8m0_to_fp32_half(e);
    y[i].e = e;
    for (int j = 0; j < kQKMxfp4 / 2; ++j) {
      const uint8_t q0 = nearest_mxfp4(x[j], d);
      const uint8_t q1 = nearest_mxfp4(x[j + kQKMxfp4 / 2], d);
      y[i].qs[j] = static_cast<uint8_t>(q0 | (q1 << 4));
    }
  }
}

void dequantize_row_mxfp4(const BlockMxfp4* x, float* y, int64_t n) {
  const int64_t nb = n / kQKMxfp4;
  for (int64_t i = 0; i < nb; ++i, y += kQKMxfp4) {
    const float d = e8m0_to_fp32_half(x[i].e);
    for (int j = 0; j < kQKMxfp4 / 2; ++j) {
      y[j] = static_cast<float>(kMxfp4Values[x[i].qs[j] & 0xf]) * d;
      y[j + kQKMxfp4 / 2] = static_cast<float>(kMxfp4Values[x[i].qs[j] >> 4]) * d;
    }
  }
}

}  // namespace minfer
