// AVX-512 scores of bf16 KV cells (KernelTable::dot_rows_bf16): ref::dot_bf16_cells' operations,
// ggml_vec_dot_bf16 on an AVX512-BF16 host, on VDPBF16PS where the CPU has it and emulated where
// it does not (both give ref's bits). Called only through avx512_table after dispatch has checked
// the CPU; no header with inline code of external linkage is included (see avx512_math.h).
#include <immintrin.h>

#include <bit>
#include <cstdint>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/avx512_math.h"
#include "kernels/ref/ref_kernels.h"

namespace minfer::kernels::avx512 {
namespace {

constexpr int64_t kStep = 64;  // elements per step of the two accumulators
constexpr int64_t kRows = 16;  // key rows reduced at once

__m512i load32(const uint16_t* p) {
  return _mm512_loadu_si512(p);
}

// acc + the 16 pairs (2l, 2l + 1) of 32 bf16s of a and b by VDPBF16PS.
struct VdpSteps {
  static __m512 step(__m512 acc, __m512i a, __m512i b) {
    return _mm512_dpbf16_ps(acc, std::bit_cast<__m512bh>(a), std::bit_cast<__m512bh>(b));
  }
};

// The same by fused multiply-adds, as the instruction computes (ref::dpbf16_step): element 2l + 1
// (a dword's high half, already an f32 in place) then 2l (its low half shifted up), inputs with
// exponent 0 read as zero, results below FLT_MIN in magnitude flushed to zero.
struct EmulatedSteps {
  static __m512 high(__m512i v) {
    const __mmask16 normal = _mm512_test_epi32_mask(v, _mm512_set1_epi32(0x7F800000));
    return _mm512_castsi512_ps(
        _mm512_maskz_and_epi32(normal, v, _mm512_set1_epi32(static_cast<int>(0xFFFF0000u))));
  }
  static __m512 low(__m512i v) {
    const __mmask16 normal = _mm512_test_epi32_mask(v, _mm512_set1_epi32(0x7F80));
    return _mm512_castsi512_ps(_mm512_maskz_slli_epi32(normal, v, 16));
  }
  static __m512 flush(__m512 acc) {
    const __mmask16 subnormal = _mm512_fpclass_ps_mask(acc, 0x20);
    return _mm512_mask_mov_ps(acc, subnormal, _mm512_setzero_ps());
  }
  static __m512 step(__m512 acc, __m512i a, __m512i b) {
    acc = flush(_mm512_fmadd_ps(high(a), high(b), acc));
    return flush(_mm512_fmadd_ps(low(a), low(b), acc));
  }
};

// The same where neither the flushing nor the subnormal inputs can occur (ref::bf16_steps_exact):
// the fused multiply-adds alone.
struct ExactSteps {
  static __m512 step(__m512 acc, __m512i a, __m512i b) {
    const __m512i high_half = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    acc = _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_and_si512(a, high_half)),
                          _mm512_castsi512_ps(_mm512_and_si512(b, high_half)), acc);
    return _mm512_fmadd_ps(_mm512_castsi512_ps(_mm512_slli_epi32(a, 16)),
                           _mm512_castsi512_ps(_mm512_slli_epi32(b, 16)), acc);
  }
};

// The smallest exponent field (in place: bits 7..14) among the nonzero bf16s a[0, n), n a multiple
// of 32: 0 where one is subnormal, 0x7F80 where all are zero.
int min_exponent(const uint16_t* a, int64_t n) {
  const __m512i exponent = _mm512_set1_epi16(0x7F80);
  __m512i m = exponent;
  for (int64_t i = 0; i < n; i += 32) {
    const __m512i v = load32(a + i);
    const __mmask32 zero = _mm512_testn_epi16_mask(v, _mm512_set1_epi16(0x7FFF));
    m = _mm512_min_epu16(m, _mm512_mask_mov_epi16(_mm512_and_si512(v, exponent), zero, exponent));
  }
  const __m256i h = _mm256_min_epu16(_mm512_castsi512_si256(m), _mm512_extracti64x4_epi64(m, 1));
  const __m128i q = _mm_min_epu16(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  return _mm_extract_epi16(_mm_minpos_epu16(q), 0);
}

// The two accumulators of row a against b over the whole steps [0, steps_end).
template <class Steps>
void accumulate(const uint16_t* a, const uint16_t* b, int64_t steps_end, __m512& c1, __m512& c2) {
  c1 = _mm512_setzero_ps();
  c2 = _mm512_setzero_ps();
  for (int64_t i = 0; i < steps_end; i += kStep) {
    c1 = Steps::step(c1, load32(a + i), load32(b + i));
    c2 = Steps::step(c2, load32(a + i + 32), load32(b + i + 32));
  }
}

// Asks for row j of rows.prefetch (the rows the caller reads next), when set, a line at a time.
void ask_ahead(BF16Rows rows, int64_t j, int64_t n) {
  if (rows.prefetch == nullptr) return;
  const auto* row = reinterpret_cast<const char*>(rows.prefetch + j * rows.stride);
  for (int64_t off = 0; off < 2 * n; off += 64) __builtin_prefetch(row + off, 0, 3);
}

// out[j] = dot(rows_j, q) · scale for 16 rows from `first`: their accumulators reduced together
// (each row's lanes in hsum_ps's order), the two sums added in double from +0. `ahead`: ask for
// the rows read next while these are read (once, by the first query row).
template <class Steps>
void dot_16_rows(BF16Rows rows, int64_t first, const uint16_t* q, int64_t n, float scale,
                 float* out, bool ahead) {
  const int64_t steps_end = n / kStep * kStep;
  // Each pair of rows' accumulators through hsum's first step as soon as they are made: the
  // rows' 32 accumulators never wait in memory.
  __m512 w1[kRows / 2], w2[kRows / 2];
  for (int64_t p = 0; p < kRows / 2; ++p) {
    __m512 a1, a2, b1, b2;
    if (ahead) {
      ask_ahead(rows, first + 2 * p, n);
      ask_ahead(rows, first + 2 * p + 1, n);
    }
    accumulate<Steps>(rows.row(first + 2 * p), q, steps_end, a1, a2);
    accumulate<Steps>(rows.row(first + 2 * p + 1), q, steps_end, b1, b2);
    w1[p] = hsum_pair_ps(a1, b1);
    w2[p] = hsum_pair_ps(a2, b2);
  }
  const __m512 s1 = rows_in_order_ps(hsum16_from_pairs_ps(w1));
  const __m512 s2 = rows_in_order_ps(hsum16_from_pairs_ps(w2));
  const __m512d zero = _mm512_setzero_pd();
  const __m512d lo = _mm512_add_pd(_mm512_add_pd(zero, _mm512_cvtps_pd(_mm512_castps512_ps256(s1))),
                                   _mm512_cvtps_pd(_mm512_castps512_ps256(s2)));
  const __m512d hi =
      _mm512_add_pd(_mm512_add_pd(zero, _mm512_cvtps_pd(_mm512_extractf32x8_ps(s1, 1))),
                    _mm512_cvtps_pd(_mm512_extractf32x8_ps(s2, 1)));
  if (steps_end == n) {
    const __m512 sums =
        _mm512_insertf32x8(_mm512_castps256_ps512(_mm512_cvtpd_ps(lo)), _mm512_cvtpd_ps(hi), 1);
    _mm512_storeu_ps(out, _mm512_mul_ps(sums, _mm512_set1_ps(scale)));
    return;
  }
  alignas(64) double sums[kRows];
  _mm512_store_pd(sums, lo);
  _mm512_store_pd(sums + 8, hi);
  for (int64_t r = 0; r < kRows; ++r) {
    const double sum = ref::dot_bf16_tail(sums[r], rows.row(first + r), q, steps_end, n);
    out[r] = static_cast<float>(sum) * scale;
  }
}

template <class Steps>
float dot_one_row(const uint16_t* a, const uint16_t* q, int64_t n) {
  const int64_t steps_end = n / kStep * kStep;
  __m512 c1, c2;
  accumulate<Steps>(a, q, steps_end, c1, c2);
  double sum = 0.0;
  sum += static_cast<double>(hsum_ps(c1));
  sum += static_cast<double>(hsum_ps(c2));
  return static_cast<float>(ref::dot_bf16_tail(sum, a, q, steps_end, n));
}

template <class Steps>
void dot_rows(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out, int64_t out_stride) {
  for (int64_t i = 0; i < x.n; ++i) {
    const uint16_t* q = x.row(i);
    float* out_i = out + i * out_stride;
    int64_t j = 0;
    for (; j + kRows <= rows.n; j += kRows) {
      dot_16_rows<Steps>(rows, j, q, n, scale, out_i + j, i == 0);
    }
    for (; j < rows.n; ++j) {
      if (i == 0) ask_ahead(rows, j, n);
      out_i[j] = dot_one_row<Steps>(rows.row(j), q, n) * scale;
    }
  }
}

}  // namespace

void dot_rows_bf16_vdp(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                       int64_t out_stride) {
  dot_rows<VdpSteps>(rows, x, n, scale, out, out_stride);
}

void dot_rows_bf16_emulated(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                            int64_t out_stride) {
  // The emulated steps where a group's rows and the query row may meet subnormals or sums below
  // FLT_MIN, the plain fused multiply-adds where they cannot.
  const int64_t steps_end = n / kStep * kStep;
  constexpr int64_t kGroups = 4;  // groups of kRows rows whose exponents are found at once
  for (int64_t j0 = 0; j0 < rows.n; j0 += kGroups * kRows) {
    const int64_t j1 = rows.n < j0 + kGroups * kRows ? rows.n : j0 + kGroups * kRows;
    int exponent[kGroups * kRows];  // each row's smallest
    for (int64_t j = j0; j < j1; ++j) exponent[j - j0] = min_exponent(rows.row(j), steps_end);
    for (int64_t i = 0; i < x.n; ++i) {
      const int q_exponent = min_exponent(x.row(i), steps_end);
      float* out_i = out + i * out_stride;
      int64_t j = j0;
      for (; j + kRows <= j1; j += kRows) {
        int group = exponent[j - j0];
        for (int64_t r = 1; r < kRows; ++r)
          group = exponent[j - j0 + r] < group ? exponent[j - j0 + r] : group;
        if (ref::bf16_steps_exact(group, q_exponent)) {
          dot_16_rows<ExactSteps>(rows, j, x.row(i), n, scale, out_i + j, i == 0);
        } else {
          dot_16_rows<EmulatedSteps>(rows, j, x.row(i), n, scale, out_i + j, i == 0);
        }
      }
      for (; j < j1; ++j) {
        if (i == 0) ask_ahead(rows, j, n);
        const bool exact = ref::bf16_steps_exact(exponent[j - j0], q_exponent);
        const float dot = exact ? dot_one_row<ExactSteps>(rows.row(j), x.row(i), n)
                                : dot_one_row<EmulatedSteps>(rows.row(j), x.row(i), n);
        out_i[j] = dot * scale;
      }
    }
  }
}

void dot_rows_bf16(BF16Rows rows, BF16Rows x, int64_t n, float scale, float* out,
                   int64_t out_stride) {
  static const bool vdp = cpu_has_avx512bf16();
  if (vdp) {
    dot_rows_bf16_vdp(rows, x, n, scale, out, out_stride);
  } else {
    dot_rows_bf16_emulated(rows, x, n, scale, out, out_stride);
  }
}

}  // namespace minfer::kernels::avx512
