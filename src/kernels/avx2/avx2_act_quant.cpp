// AVX2 activation quantizers, bit-identical to their references: Q8_0 / Q8_1 to
// quant/act_quant.h (llama.cpp's x86 semantics), Q8_K to quant/quantize.h's quantize_row_q8_K.
// The max is exact in any order, each quant is one multiply and one round-to-nearest-even as in
// the reference, and the sums are integer sums. Also the Q8_0 KV cells, bit-identical to
// quantize_row_q8_0 / dequantize_row_q8_0 (their quants round halfway cases away from zero).
#include <immintrin.h>

#include <cstring>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_math.h"
#include "kernels/kernel_table.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx2 {
namespace {

constexpr int kRound = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;

__m256 abs_ps(__m256 v) {
  return _mm256_and_ps(v, _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff)));
}

float hmax(__m256 v) {
  __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  m = _mm_max_ps(m, _mm_movehl_ps(m, m));
  m = _mm_max_ss(m, _mm_movehdup_ps(m));
  return _mm_cvtss_f32(m);
}

int hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_unpackhi_epi64(s, s));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xb1));
  return _mm_cvtsi128_si32(s);
}

// Stores 4 × 8 int32 (each in [-128, 127] after saturation) as 32 int8 in order.
void store_i8x32(const __m256i q[4], int8_t* out) {
  const __m256i a = _mm256_packs_epi32(q[0], q[1]);  // per half: 0-3 8-11 | 4-7 12-15
  const __m256i b = _mm256_packs_epi32(q[2], q[3]);
  const __m256i c = _mm256_packs_epi16(a, b);  // dwords: 0-3 8-11 16-19 24-27 | 4-7 ...
  const __m256i ordered = _mm256_permutevar8x32_epi32(c, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(out), ordered);
}

float quantize_block32(const float* x, int8_t* q, int* sum) {
  __m256 v[4];
  __m256 m = _mm256_setzero_ps();
  for (int k = 0; k < 4; ++k) {
    v[k] = _mm256_loadu_ps(x + 8 * k);
    m = _mm256_max_ps(m, abs_ps(v[k]));
  }
  const float amax = hmax(m);
  const float d = amax / 127.0f;
  const __m256 id = _mm256_set1_ps(amax != 0.0f ? 127.0f / amax : 0.0f);
  __m256i qi[4];
  for (int k = 0; k < 4; ++k) {
    qi[k] = _mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v[k], id), kRound));
  }
  store_i8x32(qi, q);
  *sum = hsum_i32(_mm256_add_epi32(_mm256_add_epi32(qi[0], qi[1]), _mm256_add_epi32(qi[2], qi[3])));
  return d;
}

// roundf of each lane: halfway cases away from zero. |v| - trunc|v| is exact, so comparing it
// with 0.5 decides the rounding as roundf does.
__m256 round_half_away(__m256 v) {
  const __m256 sign = _mm256_and_ps(v, _mm256_set1_ps(-0.0f));
  const __m256 a = _mm256_xor_ps(v, sign);
  const __m256 t = _mm256_round_ps(a, _MM_FROUND_TO_ZERO | _MM_FROUND_NO_EXC);
  const __m256 up = _mm256_cmp_ps(_mm256_sub_ps(a, t), _mm256_set1_ps(0.5f), _CMP_GE_OQ);
  return _mm256_or_ps(_mm256_add_ps(t, _mm256_and_ps(up, _mm256_set1_ps(1.0f))), sign);
}

}  // namespace

void act_q8_0(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  for (int64_t i = 0; i < n / 32; ++i) {
    int sum;
    blocks[i].d = f32_to_f16_scalar(quantize_block32(x + 32 * i, blocks[i].qs, &sum));
  }
}

void act_q8_0_sums(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  const size_t n_blocks = static_cast<size_t>(n / 32);
  int32_t* sums = reinterpret_cast<int32_t*>(static_cast<uint8_t*>(y) +  // [n_blocks]
                                             q8_0_act_sums_offset(n_blocks));
  for (size_t i = 0; i < n_blocks; ++i) {
    int sum;
    blocks[i].d = f32_to_f16_scalar(quantize_block32(x + 32 * i, blocks[i].qs, &sum));
    sums[i] = sum;
  }
  q8_0_act_lanes(y, static_cast<int64_t>(n_blocks));
}

void act_q8_1(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_1*>(y);
  for (int64_t i = 0; i < n / 32; ++i) {
    int sum;
    const float d = quantize_block32(x + 32 * i, blocks[i].qs, &sum);
    blocks[i].d = f32_to_f16_scalar(d);
    blocks[i].s = f32_to_f16_scalar(d * static_cast<float>(sum));
  }
}

void act_q8_K(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8K*>(y);
  for (int64_t i = 0; i < n / kQKK; ++i, x += kQKK) {
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 32; ++k) m = _mm256_max_ps(m, abs_ps(_mm256_loadu_ps(x + 8 * k)));
    const float amax = hmax(m);
    if (amax == 0.0f) {
      std::memset(&blocks[i], 0, sizeof(BlockQ8K));
      continue;
    }
    // The reference keeps the first element of largest magnitude (with its sign).
    float max = 0.0f;
    const __m256 am = _mm256_set1_ps(amax);
    for (int k = 0; k < 32; ++k) {
      const int hit =
          _mm256_movemask_ps(_mm256_cmp_ps(abs_ps(_mm256_loadu_ps(x + 8 * k)), am, _CMP_EQ_OQ));
      if (hit != 0) {
        max = x[8 * k + __builtin_ctz(static_cast<unsigned>(hit))];
        break;
      }
    }
    const float iscale = -127.0f / max;
    const __m256 is = _mm256_set1_ps(iscale);
    const __m256i top = _mm256_set1_epi32(127);
    for (int k = 0; k < 8; ++k) {
      __m256i q[4];
      for (int l = 0; l < 4; ++l) {
        const __m256 v = _mm256_loadu_ps(x + 32 * k + 8 * l);
        q[l] = _mm256_min_epi32(_mm256_cvtps_epi32(_mm256_round_ps(_mm256_mul_ps(v, is), kRound)),
                                top);
      }
      store_i8x32(q, blocks[i].qs + 32 * k);
      blocks[i].bsums[2 * k] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[0], q[1])));
      blocks[i].bsums[2 * k + 1] = static_cast<int16_t>(hsum_i32(_mm256_add_epi32(q[2], q[3])));
    }
    blocks[i].d = 1.0f / iscale;
  }
}

void cells_from_f32_q8_0(const float* x, void* y, int64_t n) {
  auto* blocks = static_cast<BlockQ8_0*>(y);
  for (int64_t i = 0; i < n / 32; ++i, x += 32) {
    __m256 v[4];
    __m256 m = _mm256_setzero_ps();
    for (int k = 0; k < 4; ++k) {
      v[k] = _mm256_loadu_ps(x + 8 * k);
      m = _mm256_max_ps(m, abs_ps(v[k]));
    }
    // As quantize_row_q8_0: d = amax / 127 and the quants from x · (1 / d), not x · (127 / amax).
    const float d = hmax(m) / 127.0f;
    const __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    __m256i q[4];
    for (int k = 0; k < 4; ++k) {
      q[k] = _mm256_cvtps_epi32(round_half_away(_mm256_mul_ps(v[k], id)));
    }
    store_i8x32(q, blocks[i].qs);
    blocks[i].d = f32_to_f16_scalar(d);
  }
}

void cells_to_f32_q8_0(const void* x, float* y, int64_t n) {
  const auto* blocks = static_cast<const BlockQ8_0*>(x);
  for (int64_t i = 0; i < n / 32; ++i, y += 32) {
    const __m256 d = _mm256_set1_ps(_cvtsh_ss(blocks[i].d));
    for (int k = 0; k < 4; ++k) {
      const __m128i q = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(blocks[i].qs + 8 * k));
      _mm256_storeu_ps(y + 8 * k, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(q)), d));
    }
  }
}

}  // namespace minfer::kernels::avx2
