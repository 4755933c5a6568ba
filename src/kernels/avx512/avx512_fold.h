// Folding 16 vectors of int32 lanes into one whose lane r combines all lanes of vector r, by a
// transpose-and-combine tree (unpacks and 128-bit shuffles, 15 combines for 16 vectors instead
// of a horizontal reduction each). The combine is an addition (exact integer sums of 16 rows in
// the GEMV kernels, block sums in the activation quantizers) or a maximum (non-negative floats
// compare as their bit patterns). Include only from AVX-512 translation units; everything is in
// an anonymous namespace (see avx512_math.h).
#pragma once

#include <immintrin.h>

namespace minfer::kernels::avx512 {
namespace {

struct AddI32 {
  __m512i operator()(__m512i a, __m512i b) const { return _mm512_add_epi32(a, b); }
};

struct MaxI32 {
  __m512i operator()(__m512i a, __m512i b) const { return _mm512_max_epi32(a, b); }
};

// Per 128-bit lane: [a0 · a2, b0 · b2, a1 · a3, b1 · b3] (· the combine).
template <class Op = AddI32>
__m512i fold_pair(__m512i a, __m512i b, Op op = {}) {
  return op(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}

// Of two fold_pair results (rows a, b and c, d): per 128-bit lane the combination of its 4
// dwords of rows a, b, c, d.
template <class Op = AddI32>
__m512i fold_quad(__m512i ab, __m512i cd, Op op = {}) {
  return op(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}

// u[g] from fold_quad of rows 4g .. 4g + 3. Lane r of `low`: row r's combination over 128-bit
// lanes 0 and 1 of its vector; of `high`: over lanes 2 and 3. With kAlternate, `low` combines
// lanes 0 and 2, `high` lanes 1 and 3.
template <bool kAlternate = false, class Op = AddI32>
void fold_rows(const __m512i u[4], __m512i& low, __m512i& high, Op op = {}) {
  constexpr int kEven = _MM_SHUFFLE(2, 0, 2, 0);
  constexpr int kOdd = _MM_SHUFFLE(3, 1, 3, 1);
  constexpr int kA = kAlternate ? _MM_SHUFFLE(1, 0, 1, 0) : kEven;
  constexpr int kB = kAlternate ? _MM_SHUFFLE(3, 2, 3, 2) : kOdd;
  const __m512i t01 =
      op(_mm512_shuffle_i32x4(u[0], u[1], kA), _mm512_shuffle_i32x4(u[0], u[1], kB));
  const __m512i t23 =
      op(_mm512_shuffle_i32x4(u[2], u[3], kA), _mm512_shuffle_i32x4(u[2], u[3], kB));
  low = _mm512_shuffle_i32x4(t01, t23, kEven);
  high = _mm512_shuffle_i32x4(t01, t23, kOdd);
}

// Lane r of `low` / `high`: the combination of 128-bit lanes 0-1 / 2-3 of rows(r), r = 0..15
// (with kAlternate: lanes 0 and 2 / 1 and 3).
template <bool kAlternate = false, class Rows, class Op = AddI32>
void fold_16_rows_halves(Rows&& rows, __m512i& low, __m512i& high, Op op = {}) {
  __m512i u[4];
  for (int g = 0; g < 4; ++g) {
    const __m512i ab = fold_pair(rows(4 * g), rows(4 * g + 1), op);
    const __m512i cd = fold_pair(rows(4 * g + 2), rows(4 * g + 3), op);
    u[g] = fold_quad(ab, cd, op);
  }
  fold_rows<kAlternate>(u, low, high, op);
}

// Lane r: the combination of all lanes of rows(r), r = 0..15.
template <class Rows, class Op = AddI32>
__m512i fold_16_rows(Rows&& rows, Op op = {}) {
  __m512i low, high;
  fold_16_rows_halves(rows, low, high, op);
  return op(low, high);
}

}  // namespace
}  // namespace minfer::kernels::avx512
