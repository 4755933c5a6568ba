// AVX2 scores of bf16 KV cells (KernelTable::dot_rows_bf16): ref::dot_bf16_cells' operations,
// VDPBF16PS's fused multiply-adds emulated on 8-lane vectors, so the scores are ref's bits (and
// those of AVX-512 with AVX512-BF16). Compiled with -mavx2 -mfma: called only through avx2_table
// / avxvnni_table after dispatch has checked the CPU; no header with inline code of external
// linkage is included (see avx2_ops.cpp).
#include <immintrin.h>

#include <cstdint>

#include "kernels/avx2/avx2_kernels.h"
#include "kernels/avx2/avx2_math.h"
#include "kernels/bf16_rows_impl.h"
#include "kernels/ref/ref_kernels.h"

namespace minfer::kernels::avx2 {
namespace {

constexpr int64_t kStep = 64;  // elements per step of the two 16-lane accumulators

__m256i load16(const uint16_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// The high halves of v's dwords (elements 2l + 1) as f32, those with exponent 0 as zero.
__m256 high(__m256i v) {
  const __m256i subnormal = _mm256_cmpeq_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7F800000)),
                                               _mm256_setzero_si256());
  return _mm256_castsi256_ps(_mm256_andnot_si256(
      subnormal, _mm256_and_si256(v, _mm256_set1_epi32(static_cast<int>(0xFFFF0000u)))));
}

// The low halves (elements 2l) likewise.
__m256 low(__m256i v) {
  const __m256i subnormal =
      _mm256_cmpeq_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0x7F80)), _mm256_setzero_si256());
  return _mm256_castsi256_ps(_mm256_andnot_si256(subnormal, _mm256_slli_epi32(v, 16)));
}

// acc with the lanes below FLT_MIN in magnitude set to zero.
__m256 flush(__m256 acc) {
  const __m256 magnitude = _mm256_andnot_ps(_mm256_set1_ps(-0.0f), acc);
  const __m256 tiny = _mm256_cmp_ps(magnitude, _mm256_set1_ps(0x1p-126f), _CMP_LT_OQ);
  return _mm256_andnot_ps(tiny, acc);
}

// 8 lanes of a VDPBF16PS step (ref::dpbf16_step on each pair): 16 bf16s of a and b. kExact: the
// operands hold no subnormals and no sum can fall below FLT_MIN (ref::bf16_steps_exact), so the
// steps are the fused multiply-adds alone.
template <bool kExact>
__m256 step(__m256 acc, __m256i a, __m256i b) {
  if constexpr (kExact) {
    const __m256i high_half = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    acc = _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_and_si256(a, high_half)),
                          _mm256_castsi256_ps(_mm256_and_si256(b, high_half)), acc);
    return _mm256_fmadd_ps(_mm256_castsi256_ps(_mm256_slli_epi32(a, 16)),
                           _mm256_castsi256_ps(_mm256_slli_epi32(b, 16)), acc);
  }
  acc = flush(_mm256_fmadd_ps(high(a), high(b), acc));
  return flush(_mm256_fmadd_ps(low(a), low(b), acc));
}

// hsum16 of a 16-lane accumulator held as lanes 0..7 and 8..15: lanes i + i+8, then hsum_ps.
float hsum16(__m256 lanes_lo, __m256 lanes_hi) {
  return hsum_ps(_mm256_add_ps(lanes_lo, lanes_hi));
}

template <bool kExact>
float dot_bf16(const uint16_t* a, const uint16_t* b, int64_t n) {
  const int64_t steps_end = n / kStep * kStep;
  __m256 c[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                 _mm256_setzero_ps()};  // the two accumulators' lanes 0..7 and 8..15
  for (int64_t i = 0; i < steps_end; i += kStep) {
    for (int64_t k = 0; k < 4; ++k) {
      c[k] = step<kExact>(c[k], load16(a + i + 16 * k), load16(b + i + 16 * k));
    }
  }
  double sum = 0.0;
  sum += static_cast<double>(hsum16(c[0], c[1]));
  sum += static_cast<double>(hsum16(c[2], c[3]));
  return static_cast<float>(ref::dot_bf16_tail(sum, a, b, steps_end, n));
}

// The smallest exponent field (in place: bits 7..14) among the nonzero bf16s a[0, n), n a multiple
// of 16: 0 where one is subnormal, 0x7F80 where all are zero.
int min_exponent(const uint16_t* a, int64_t n) {
  const __m256i exponent = _mm256_set1_epi16(0x7F80);
  __m256i m = exponent;
  for (int64_t i = 0; i < n; i += 16) {
    const __m256i v = load16(a + i);
    const __m256i zero =
        _mm256_cmpeq_epi16(_mm256_and_si256(v, _mm256_set1_epi16(0x7FFF)), _mm256_setzero_si256());
    m = _mm256_min_epu16(m, _mm256_and_si256(_mm256_or_si256(v, zero), exponent));
  }
  const __m128i h = _mm_min_epu16(_mm256_castsi256_si128(m), _mm256_extracti128_si256(m, 1));
  return _mm_extract_epi16(_mm_minpos_epu16(h), 0);
}

}  // namespace

void dot_rows_bf16(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                   int64_t out_stride) {
  bf16_dot_rows<kStep, min_exponent, dot_bf16<true>, dot_bf16<false>>(rows, x, n, scale, out,
                                                                      out_stride);
}

}  // namespace minfer::kernels::avx2
