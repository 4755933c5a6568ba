// AVX-512 activation quantizers, bit-identical to their references: Q8_0 / Q8_1 to
// quant/act_quant.h (llama.cpp's x86 semantics), Q8_K to quant/quantize.h's quantize_row_q8_K.
// The max is exact in any order, each quant is one multiply and one round-to-nearest-even as in
// the reference, and the sums are integer sums.
// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <immintrin.h>

#include <cstring>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/kernel_table.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx512 {
namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

__m512 abs_ps(__m512 v) {
  return _mm512_castsi512_ps(
      _mm512_and_si512(_mm512_castps_si512(v), _mm512_set1_epi32(0x7fffffff)));
}

// One block of 32: q (int32 lanes of two vectors, stored as int8) and the float d.
float quantize_block32(const float* x, int8_t* q, __m512i* sum) {
  const __m512 v0 = _mm512_loadu_ps(x);
  const __m512 v1 = _mm512_loadu_ps(x + 16);
  const float amax = _mm512_reduce_max_ps(_mm512_max_ps(abs_ps(v0), abs_ps(v1)));
  const float d = amax / 127.0f;
  const __m512 id = _mm512_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  const __m512i q0 = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(v0, id), kRound));
  const __m512i q1 = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(v1, id), kRound));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q), _mm512_cvtsepi32_epi8(q0));
  _mm_storeu_si128(reinterpret_cast<__m128i*>(q + 16), _mm512_cvtsepi32_epi8(q1));
  *sum = _mm512_add_epi32(q0, q1);
  return d;
}

uint16_t to_f16(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

}  // namespace

void act_q8_0(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  for (int64_t i = 0; i < n / 32; ++i) {
    __m512i sum;
    blocks[i].d = to_f16(quantize_block32(x + 32 * i, blocks[i].qs, &sum));
  }
}

void act_q8_0_sums(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  const size_t n_blocks = static_cast<size_t>(n / 32);
  int32_t* sums = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(y) +  // [n_blocks]
                                             q8_0_act_sums_offset(n_blocks));
  for (size_t i = 0; i < n_blocks; ++i) {
    __m512i sum;
    blocks[i].d = to_f16(quantize_block32(x + 32 * i, blocks[i].qs, &sum));
    sums[i] = _mm512_reduce_add_epi32(sum);
  }
}

void act_q8_1(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_1*>(y);
  for (int64_t i = 0; i < n / 32; ++i) {
    __m512i sum;
    const float d = quantize_block32(x + 32 * i, blocks[i].qs, &sum);
    blocks[i].d = to_f16(d);
    blocks[i].s = to_f16(d * static_cast<float>(_mm512_reduce_add_epi32(sum)));
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
    for (int k = 0; k < 16; ++k) {
      __m512i q = _mm512_cvtps_epi32(_mm512_roundscale_ps(_mm512_mul_ps(v[k], is), kRound));
      q = _mm512_min_epi32(q, top);
      _mm_storeu_si128(reinterpret_cast<__m128i*>(blocks[i].qs + 16 * k), _mm512_cvtsepi32_epi8(q));
      blocks[i].bsums[k] = static_cast<int16_t>(_mm512_reduce_add_epi32(q));
    }
    blocks[i].d = 1.0f / iscale;
  }
}

}  // namespace minfer::kernels::avx512
