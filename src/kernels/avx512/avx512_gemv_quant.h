// Single-token (GEMV) paths of the AVX-512 quantized matmul. Include only from AVX-512
// translation units; everything is in an anonymous namespace (see avx512_math.h).
//
// Why a second layout: the tiles of kernels/quant_tile_impl.h put 16 weight rows in the lanes
// and transpose every block once, which pays for itself across the tokens of a GEMM. With one
// token the transpose is pure cost, and for Q6_K (three transposes and a bit merge per block) it
// made the kernel slower than memory. Here each row's block is read in its stored order: the
// quants meet the activations with wide multiplies, leaving 16 partial integer sums per row
// block. Those of 16 rows are folded by a transpose-and-add tree into one vector whose lane r is
// row r's exact integer sum, and from there the float steps are the tile's, lane for lane. The
// integer sums are exact, so the result is bit-identical to the reference (and to the tiles).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

#include "kernels/avx512/avx512_quant_vec.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx512 {
namespace {

// ---- folding 16 rows of partial sums ----

// Per 128-bit lane: [a0 + a2, b0 + b2, a1 + a3, b1 + b3].
inline __m512i fold_pair(__m512i a, __m512i b) {
  return _mm512_add_epi32(_mm512_unpacklo_epi32(a, b), _mm512_unpackhi_epi32(a, b));
}

// Of two fold_pair results (rows a, b and c, d): per 128-bit lane the sums of its 4 dwords of
// rows a, b, c, d.
inline __m512i fold_quad(__m512i ab, __m512i cd) {
  return _mm512_add_epi32(_mm512_unpacklo_epi64(ab, cd), _mm512_unpackhi_epi64(ab, cd));
}

// u[g] from fold_quad of rows 4g .. 4g + 3. Lane r of `low`: row r's sum over 128-bit lanes 0
// and 1 of its vector; of `high`: over lanes 2 and 3.
inline void fold_rows(const __m512i u[4], __m512i& low, __m512i& high) {
  constexpr int kEven = _MM_SHUFFLE(2, 0, 2, 0);
  constexpr int kOdd = _MM_SHUFFLE(3, 1, 3, 1);
  const __m512i t01 = _mm512_add_epi32(_mm512_shuffle_i32x4(u[0], u[1], kEven),
                                       _mm512_shuffle_i32x4(u[0], u[1], kOdd));
  const __m512i t23 = _mm512_add_epi32(_mm512_shuffle_i32x4(u[2], u[3], kEven),
                                       _mm512_shuffle_i32x4(u[2], u[3], kOdd));
  low = _mm512_shuffle_i32x4(t01, t23, kEven);
  high = _mm512_shuffle_i32x4(t01, t23, kOdd);
}

// Lane r of `low` / `high`: the sum of 128-bit lanes 0-1 / 2-3 of row_sums(r), r = 0..15.
template <class RowSums>
void fold_16_rows_halves(RowSums&& row_sums, __m512i& low, __m512i& high) {
  __m512i u[4];
  for (int g = 0; g < 4; ++g) {
    const __m512i ab = fold_pair(row_sums(4 * g), row_sums(4 * g + 1));
    const __m512i cd = fold_pair(row_sums(4 * g + 2), row_sums(4 * g + 3));
    u[g] = fold_quad(ab, cd);
  }
  fold_rows(u, low, high);
}

// Lane r: the sum of all lanes of row_sums(r), r = 0..15.
template <class RowSums>
__m512i fold_16_rows(RowSums&& row_sums) {
  __m512i low, high;
  fold_16_rows_halves(row_sums, low, high);
  return _mm512_add_epi32(low, high);
}

// ---- the row group ----

// A group is the tiles' (Vec512::Group: up to 16 rows, missing ones repeating the last real one,
// byte offsets for gathers, a store mask).
using GemvRows = Vec512::Group;

// How far ahead of the block being read the gemv loops ask for weights. They read each row's
// blocks of a chunk in one run, so for short rows memory is read in order; the hardware
// prefetcher alone left Q6_K (heavier arithmetic per byte) at 0.67 of the streaming rate, 2 KB
// ahead brings it to 0.87.
constexpr size_t kGemvAhead = 2048;

// Asks for the `bytes` bytes kGemvAhead past p, if they are before `end` (the weights' end).
inline void prefetch_ahead(const uint8_t* p, size_t bytes, const uint8_t* end) {
  if (p + kGemvAhead + bytes > end) return;
  for (size_t o = 0; o < bytes; o += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + kGemvAhead + o), _MM_HINT_T0);
  }
}

// ---- Q6_K × Q8_K ----

// The exact integer dot of one Q6_K block with one Q8_K block, as 16 partial sums:
// Σ_j sc_j (q_j · x_j) - 32 Σ_j sc_j bsums_j (ref vec_dot_q6_K_q8_K).
struct Q6KActivation {
  __m512i qs[4];  // [64-element quarter] the block's 256 quants
  __m256i bsums;  // 16 int16
};

inline __m512i q6k_row_sums(const BlockQ6K& w, const Q6KActivation& x) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i bits45 = _mm512_set1_epi8(0x30);
  const __m256i sc16 =
      _mm256_cvtepi8_epi16(_mm_loadu_si128(reinterpret_cast<const __m128i*>(w.scales)));
  const __m512i sc = _mm512_zextsi256_si512(sc16);
  // int16 lane i of a 64-element quarter covers elements 2i, 2i + 1: sub-block i / 8 of it.
  const __m512i sub_of_lane = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1,
                                               1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512i sums = _mm512_setzero_si512();
  for (int h = 0; h < 2; ++h) {
    // Element 128h + 32k + l (l < 32): low 4 bits in ql[64h + l + 32 (k & 1)] (high nibble for
    // k >= 2), bits 4-5 are bits 2k, 2k + 1 of qh[32h + l] (see BlockQ6K).
    const __m512i ql = _mm512_loadu_si512(w.ql + 64 * h);
    const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * h));
    // Byte l of the low half: qh[l]; of the high half: qh[l] >> 2 (bits 2-3 down to 0-1).
    const __m512i qh2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
    // Elements 128h + 0 .. 63 and 128h + 64 .. 127, in order, as 0..63.
    const __m512i q_lo = _mm512_or_si512(_mm512_and_si512(ql, low4),
                                         _mm512_and_si512(_mm512_slli_epi16(qh2, 4), bits45));
    const __m512i q_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                                         _mm512_and_si512(qh2, bits45));
    const __m512i sc_lo = _mm512_permutexvar_epi16(
        _mm512_add_epi16(sub_of_lane, _mm512_set1_epi16(static_cast<int16_t>(8 * h))), sc);
    const __m512i sc_hi = _mm512_permutexvar_epi16(
        _mm512_add_epi16(sub_of_lane, _mm512_set1_epi16(static_cast<int16_t>(8 * h + 4))), sc);
    // Pair sums of u6 · s8 products fit int16 (|2 · 63 · 128| < 2^15).
    sums =
        _mm512_add_epi32(sums, _mm512_madd_epi16(_mm512_maddubs_epi16(q_lo, x.qs[2 * h]), sc_lo));
    sums = _mm512_add_epi32(sums,
                            _mm512_madd_epi16(_mm512_maddubs_epi16(q_hi, x.qs[2 * h + 1]), sc_hi));
  }
  const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(sc16, x.bsums), 5);
  return _mm512_sub_epi32(sums, _mm512_zextsi256_si512(offset));
}

// y[r] = Σ_b (d_r,b d_x,b) isum_r,b for n_rows rows of Q6_K against one Q8_K activation row, in
// the reference's float order (ref vec_dot_q6_K_q8_K: acc + (d dx) isum per block). Each row's
// blocks of a chunk are read in one run, as gemv_q8_0 does.
inline void gemv_q6_K(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
                      const BlockQ8K* x, float* y) {
  constexpr int64_t kChunk = 8;  // blocks: 1680 bytes of a row per run
  const int64_t n_blocks = n_in / kQKK;
  alignas(64) __m512i partial[kChunk][16];  // [block of the chunk][row] 8 KB
  const uint8_t* w_end = w + n_rows * w_row_bytes;
  for (int64_t r0 = 0; r0 < n_rows; r0 += 16) {
    const int64_t rows = n_rows - r0 < 16 ? n_rows - r0 : 16;
    const GemvRows g = Vec512::make_group(w + r0 * w_row_bytes, w_row_bytes, rows);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunk) {
      const int64_t nbc = n_blocks - c0 < kChunk ? n_blocks - c0 : kChunk;
      for (int r = 0; r < 16; ++r) {
        for (int64_t k = 0; k < nbc; ++k) {
          // The activation block comes from L1 again for each row: 32 zmm would not stay in
          // registers for a chunk.
          Q6KActivation xa;
          for (int q = 0; q < 4; ++q) xa.qs[q] = _mm512_loadu_si512(x[c0 + k].qs + 64 * q);
          xa.bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[c0 + k].bsums));
          const uint8_t* blk = g.row[r] + static_cast<size_t>(c0 + k) * sizeof(BlockQ6K);
          prefetch_ahead(blk, sizeof(BlockQ6K), w_end);
          partial[k][r] = q6k_row_sums(*reinterpret_cast<const BlockQ6K*>(blk), xa);
        }
      }
      for (int64_t k = 0; k < nbc; ++k) {
        const int64_t b = c0 + k;
        const __m512i isum = fold_16_rows([&](int r) { return partial[k][r]; });
        // d is the block's last 2 bytes: gather the 4 ending there (high half).
        const size_t off = static_cast<size_t>(b) * sizeof(BlockQ6K);
        const __m512 d = Vec512::gather_f16(g, off + offsetof(BlockQ6K, d) - 2, true);
        acc = _mm512_add_ps(
            acc, _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(x[b].d)), _mm512_cvtepi32_ps(isum)));
      }
    }
    _mm512_mask_storeu_ps(y + r0, g.store_mask, acc);
  }
}

// ---- Q8_0 × Q8_0 ----

// The exact integer dots of blocks b, b + 1 of one Q8_0 row with the activation's (lanes 0-7:
// block b, 8-15: b + 1; one block when `two` is false, zeros in 8-15): Σ (w + 128) x, the signed
// weights moved to unsigned for vpdpbusd; the caller removes 128 Σ x.
inline __m512i q8_0_row_sums(const BlockQ8_0* w, int64_t b, bool two, __m512i x) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs));
  const __m512i q =
      two ? _mm512_inserti64x4(_mm512_castsi256_si512(lo),
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b + 1].qs)), 1)
          : _mm512_zextsi256_si512(lo);
  const __m512i biased = _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), biased, x);
}

// y[r] for n_rows rows of Q8_0 against one Q8_0 activation row (`x_sums`: Σ of each block's
// quants), in the reference's float order (ref vec_dot_q8_0_q8_0: acc + sumi (d_w d_x) per block).
// Each row's blocks of a chunk are read in one run (a single forward stream the hardware
// prefetcher follows) into per-pair partial sums on the stack; the fold then works from there.
inline void gemv_q8_0(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
                      const BlockQ8_0* x, const int32_t* x_sums, float* y) {
  constexpr int64_t kChunkPairs = 16;  // 32 blocks: 1088 bytes of a row per run
  const int64_t n_blocks = n_in / kQK8_0;
  alignas(64) __m512i partial[kChunkPairs][16];  // [pair of the chunk][row] 16 KB
  __m512i xv[kChunkPairs];                       // [pair of the chunk] activation quants
  const uint8_t* w_end = w + n_rows * w_row_bytes;
  for (int64_t r0 = 0; r0 < n_rows; r0 += 16) {
    const int64_t rows = n_rows - r0 < 16 ? n_rows - r0 : 16;
    const GemvRows g = Vec512::make_group(w + r0 * w_row_bytes, w_row_bytes, rows);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < n_blocks; c0 += 2 * kChunkPairs) {
      const int64_t nbc = n_blocks - c0 < 2 * kChunkPairs ? n_blocks - c0 : 2 * kChunkPairs;
      const int64_t n_pairs = (nbc + 1) / 2;
      for (int64_t p = 0; p < n_pairs; ++p) {
        const int64_t b = c0 + 2 * p;
        const __m256i x_lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
        xv[p] = b + 1 < n_blocks
                    ? _mm512_inserti64x4(
                          _mm512_castsi256_si512(x_lo),
                          _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b + 1].qs)), 1)
                    : _mm512_zextsi256_si512(x_lo);
      }
      for (int r = 0; r < 16; ++r) {
        const auto* blocks = reinterpret_cast<const BlockQ8_0*>(g.row[r]);
        for (int64_t p = 0; p < n_pairs; ++p) {
          const int64_t b = c0 + 2 * p;
          prefetch_ahead(reinterpret_cast<const uint8_t*>(blocks + b), 2 * sizeof(BlockQ8_0),
                         w_end);
          partial[p][r] = q8_0_row_sums(blocks, b, b + 1 < n_blocks, xv[p]);
        }
      }
      for (int64_t p = 0; p < n_pairs; ++p) {
        __m512i isum[2];  // lanes = rows: blocks b, b + 1
        fold_16_rows_halves([&](int r) { return partial[p][r]; }, isum[0], isum[1]);
        const int64_t b = c0 + 2 * p;
        for (int k = 0; k < (b + 1 < n_blocks ? 2 : 1); ++k) {
          const int64_t bk = b + k;
          const __m512i s = _mm512_add_epi32(isum[k], _mm512_set1_epi32(-128 * x_sums[bk]));
          const size_t d_off = static_cast<size_t>(bk) * sizeof(BlockQ8_0);
          const __m512 d = Vec512::gather_f16(g, d_off, false);
          const __m512 scale = _mm512_mul_ps(d, _mm512_set1_ps(_cvtsh_ss(x[bk].d)));
          acc = _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(s), scale));
        }
      }
    }
    _mm512_mask_storeu_ps(y + r0, g.store_mask, acc);
  }
}

}  // namespace
}  // namespace minfer::kernels::avx512
