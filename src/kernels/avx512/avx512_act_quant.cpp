// AVX-512 activation quantizers, bit-identical to their references: Q8_0 / Q8_1 to
// quant/act_quant.h (llama.cpp's x86 semantics), Q8_K to quant/quantize.h's quantize_row_q8_K.
// The max is exact in any order, each quant is one multiply and one round-to-nearest-even as in
// the reference, and the sums are integer sums. Also the Q8_0 KV cells, bit-identical to
// quantize_row_q8_0 / dequantize_row_q8_0 (their quants round halfway cases away from zero).

#include <immintrin.h>

#include <cstdint>
#include <cstring>

#include "kernels/avx512/avx512_fold.h"
#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/avx512_math.h"
#include "kernels/kernel_table.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx512 {
namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

__m512 abs_ps(__m512 v) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}

// Up to 16 consecutive blocks of 32 (n_blocks) at once, each as the reference does it: d =
// amax / 127, every quant one multiply by 127 / amax (0 for an all-zero block) and one
// round-to-nearest-even. The maxima and the block sums of all 16 come out of one fold each (lane
// b: block b) instead of a horizontal reduction per block, and d and 1/d are one vector division
// each. qs_of(b): where block b's quants go; lanes past n_blocks are meaningless.
struct Blocks16 {
  __m512 d;      // lane b: block b's scale
  __m512i sums;  // lane b: the sum of block b's quants
};

template <class QsOf>
Blocks16 quantize_blocks32(const float* x, int n_blocks, QsOf&& qs_of) {
  __m512i amax_bits[16];  // [block] |x| maxima per lane, as bits (non-negative floats order
                          // as their bit patterns)
  for (int b = n_blocks; b < 16; ++b) amax_bits[b] = _mm512_setzero_si512();
  for (int b = 0; b < n_blocks; ++b) {
    const __m512 m = _mm512_max_ps(abs_ps(_mm512_loadu_ps(x + 32 * b)),
                                   abs_ps(_mm512_loadu_ps(x + 32 * b + 16)));
    amax_bits[b] = _mm512_castps_si512(m);
  }
  const __m512 amax =
      _mm512_castsi512_ps(fold_16_rows([&](int b) { return amax_bits[b]; }, MaxI32{}));
  Blocks16 out;
  out.d = _mm512_div_ps(amax, _mm512_set1_ps(127.0f));
  const __mmask16 nonzero = _mm512_cmp_ps_mask(amax, _mm512_setzero_ps(), _CMP_NEQ_OQ);
  alignas(64) float ids[16];  // [block] 127 / amax, 0 for an all-zero block
  _mm512_store_ps(ids, _mm512_maskz_div_ps(nonzero, _mm512_set1_ps(127.0f), amax));
  __m512i sums[16];  // [block] per-lane sums of its quants
  for (int b = n_blocks; b < 16; ++b) sums[b] = _mm512_setzero_si512();
  for (int b = 0; b < n_blocks; ++b) {
    const __m512 id = _mm512_set1_ps(ids[b]);
    const __m512i q0 =
        _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * b), id), kRound);
    const __m512i q1 =
        _mm512_cvt_roundps_epi32(_mm512_mul_ps(_mm512_loadu_ps(x + 32 * b + 16), id), kRound);
    int8_t* q = qs_of(b);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtsepi32_epi8(q1));
    sums[b] = _mm512_add_epi32(q0, q1);
  }
  out.sums = fold_16_rows([&](int b) { return sums[b]; });
  return out;
}

// roundf of each lane: halfway cases away from zero. |v| - trunc|v| is exact, so comparing it
// with 0.5 decides the rounding as roundf does.
__m512 round_half_away(__m512 v) {
  const __m512i sign = _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(INT32_MIN));
  const __m512 a = abs_ps(v);
  const __m512 t = _mm512_roundscale_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __mmask16 up = _mm512_cmp_ps_mask(_mm512_sub_ps(a, t), _mm512_set1_ps(0.5f), _CMP_GE_OQ);
  const __m512 r = _mm512_mask_add_ps(t, up, t, _mm512_set1_ps(1.0f));
  return _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(r), sign));
}

// The 16 lanes of v as f16, rounded to nearest even.
void to_f16x16(__m512 v, uint16_t out[16]) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out),
                      _mm512_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

// Q8_0 blocks of x, and each block's quant sum into sums when it is not null.
void quantize_q8_0(const float* x, BlockQ8_0* blocks, int64_t n, int32_t* sums) {
  const int64_t n_blocks = n / 32;
  for (int64_t i = 0; i < n_blocks; i += 16) {
    const int nb = static_cast<int>(n_blocks - i < 16 ? n_blocks - i : 16);
    const Blocks16 g = quantize_blocks32(x + 32 * i, nb, [&](int b) { return blocks[i + b].qs; });
    uint16_t d[16];  // [block]
    to_f16x16(g.d, d);
    for (int b = 0; b < nb; ++b) blocks[i + b].d = d[b];
    if (sums != nullptr) {
      _mm512_mask_storeu_epi32(sums + i, static_cast<__mmask16>((1u << nb) - 1), g.sums);
    }
  }
}

// The lane starts and f32 scales of a Q8_0 activation row whose blocks are written (as
// q8_0_act_lanes): 128 · Σ of each 4 quants is one vpdpbusd of 0x80 bytes with them.
void q8_0_lanes(void* row, int64_t n_blocks) {
  const auto* blocks = static_cast<const BlockQ8_0*>(row);
  const size_t n = static_cast<size_t>(n_blocks);
  auto* bytes = static_cast<uint8_t*>(row);
  auto* starts = reinterpret_cast<__m256i*>(bytes + q8_0_act_starts_offset(n));  // [n]
  float* scales = reinterpret_cast<float*>(bytes + q8_0_act_scales_offset(n));   // [n]
  const __m256i magic = _mm256_set1_epi32(kQ8_0LaneMagic);
  const __m256i k128 = _mm256_set1_epi8(static_cast<char>(0x80));
  for (size_t b = 0; b < n; ++b) {
    const __m256i q = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(blocks[b].qs));
    const __m256i excess = _mm256_dpbusd_epi32(_mm256_setzero_si256(), k128, q);
    _mm256_storeu_si256(starts + b, _mm256_sub_epi32(magic, excess));
    scales[b] = _cvtsh_ss(blocks[b].d);
  }
}

}  // namespace

void act_q8_0(const float* x, void* y, int64_t n) {
  quantize_q8_0(x, static_cast<BlockQ8_0*>(y), n, nullptr);
}

void act_q8_0_sums(const float* x, void* y, int64_t n) {
  const size_t n_blocks = static_cast<size_t>(n / 32);
  quantize_q8_0(x, static_cast<BlockQ8_0*>(y), n,
                reinterpret_cast<int32_t*>(static_cast<uint8_t*>(y) +  // [n_blocks]
                                           q8_0_act_sums_offset(n_blocks)));
  q8_0_lanes(y, n / 32);
}

void act_q8_1(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_1*>(y);
  const int64_t n_blocks = n / 32;
  for (int64_t i = 0; i < n_blocks; i += 16) {
    const int nb = static_cast<int>(n_blocks - i < 16 ? n_blocks - i : 16);
    const Blocks16 g = quantize_blocks32(x + 32 * i, nb, [&](int b) { return blocks[i + b].qs; });
    uint16_t d[16], s[16];  // [block]
    to_f16x16(g.d, d);
    // s = d · Σ q, rounded to f32 and then to f16, as the reference.
    to_f16x16(_mm512_mul_ps(g.d, _mm512_cvtepi32_ps(g.sums)), s);
    for (int b = 0; b < nb; ++b) {
      blocks[i + b].d = d[b];
      blocks[i + b].s = s[b];
    }
  }
}

void cells_from_f32_q8_0(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    const __m512 v0 = _mm512_loadu_ps(x);
    const __m512 v1 = _mm512_loadu_ps(x + 16);
    // As quantize_row_q8_0: d = amax / 127 and the quants from x · (1 / d), not x · (127 / amax).
    const float d = _mm512_reduce_max_ps(_mm512_max_ps(abs_ps(v0), abs_ps(v1))) / 127.0f;
    const __m512 id = _mm512_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    const __m512i q0 = _mm512_cvtps_epi32(round_half_away(_mm512_mul_ps(v0, id)));
    const __m512i q1 = _mm512_cvtps_epi32(round_half_away(_mm512_mul_ps(v1, id)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(blocks[i].qs), _mm512_cvtsepi32_epi8(q0));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(blocks[i].qs + 16), _mm512_cvtsepi32_epi8(q1));
    blocks[i].d = f32_to_f16_scalar(d);
  }
}

void cells_to_f32_q8_0(const void* x, float* y, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_0*>(x);
  for (int64_t i = 0; i < n / 32; ++i, y += 32) {
    const __m512 d = _mm512_set1_ps(_cvtsh_ss(blocks[i].d));
    for (int k = 0; k < 2; ++k) {
      const __m128i q = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks[i].qs + 16 * k));
      _mm512_storeu_ps(y + 16 * k, _mm512_mul_ps(_mm512_cvtepi32_ps(_mm512_cvtepi8_epi32(q)), d));
    }
  }
}

void act_q8_K(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8K*>(y);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    __m512 v[16];
    __m512 m = _mm512_setzero_ps();
    for (int k = 0; k < 16; ++k) {
      v[k] = _mm512_loadu_ps(x + 16 * k);
      m = _mm512_max_ps(m, abs_ps(v[k]));
    }
    const float amax = _mm512_reduce_max_ps(m);
    if (amax == 0.0f) {
      std::memset(&blocks[i], 0, sizeof(BlockQ8K));
      continue;
    }
    // The reference keeps the first element of largest magnitude (with its sign).
    float max = 0.0f;
    const __m512 am = _mm512_set1_ps(amax);
    for (int k = 0; k < 16; ++k) {
      const __mmask16 hit = _mm512_cmp_ps_mask(abs_ps(v[k]), am, _CMP_EQ_OQ);
      if (hit != 0) {
        max = x[16 * k + __builtin_ctz(hit)];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m512 is = _mm512_set1_ps(iscale);
    const __m512i top = _mm512_set1_epi32(127);
    __m512i q[16];  // [sub-block of 16] quants
    for (int k = 0; k < 16; ++k) {
      q[k] = _mm512_min_epi32(_mm512_cvt_roundps_epi32(_mm512_mul_ps(v[k], is), kRound), top);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(blocks[i].qs + 16 * k),
                       _mm512_cvtsepi32_epi8(q[k]));
    }
    // |bsum| <= 16 * 128: exact as int16.
    _mm256_storeu_si256(reinterpret_cast<__m256i*>(blocks[i].bsums),
                        _mm512_cvtepi32_epi16(fold_16_rows([&](int k) { return q[k]; })));
    blocks[i].d = 1.0f / iscale;
  }
}

}  // namespace minfer::kernels::avx512
