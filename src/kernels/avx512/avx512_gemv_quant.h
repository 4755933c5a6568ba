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

// Lane r: the sum of all lanes of row_sums(r), r = 0..15.
template <class RowSums>
__m512i fold_16_rows(RowSums&& row_sums) {
  __m512i u[4];
  for (int g = 0; g < 4; ++g) {
    const __m512i ab = fold_pair(row_sums(4 * g), row_sums(4 * g + 1));
    const __m512i cd = fold_pair(row_sums(4 * g + 2), row_sums(4 * g + 3));
    u[g] = fold_quad(ab, cd);
  }
  __m512i low, high;
  fold_rows(u, low, high);
  return _mm512_add_epi32(low, high);
}

// ---- the row group ----

// Up to 16 rows starting at w; missing rows repeat the last real one (loads stay inside the
// weights; their lanes are never stored).
struct GemvRows {
  const uint8_t* row[16];
  __m512i offsets;  // byte offset of each row from row[0], for gathers
  __mmask16 store_mask;
};

inline GemvRows gemv_rows(const uint8_t* w, size_t w_row_bytes, int64_t n_rows) {
  GemvRows g;
  alignas(64) int32_t offsets[16];
  for (int r = 0; r < 16; ++r) {
    const int64_t rr = r < n_rows ? r : n_rows - 1;
    g.row[r] = w + rr * w_row_bytes;
    offsets[r] = static_cast<int32_t>(rr * static_cast<int64_t>(w_row_bytes));
  }
  g.offsets = _mm512_load_si512(offsets);
  g.store_mask =
      n_rows >= 16 ? static_cast<__mmask16>(0xffff) : static_cast<__mmask16>((1u << n_rows) - 1u);
  return g;
}

// The f16 stored in the last 2 bytes of the 4 at row[r] + off, for every row, as floats.
inline __m512 gather_high_f16(const GemvRows& g, size_t off) {
  const __m512i v = _mm512_i32gather_epi32(g.offsets, g.row[0] + off, 1);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(_mm512_srli_epi32(v, 16)));
}

// Asks for the `bytes` bytes at p (a block a few steps ahead).
inline void prefetch_block(const uint8_t* p, size_t bytes) {
  for (size_t off = 0; off < bytes; off += 64) {
    _mm_prefetch(reinterpret_cast<const char*>(p + off), _MM_HINT_T0);
  }
  _mm_prefetch(reinterpret_cast<const char*>(p + bytes - 1), _MM_HINT_T0);
}

// Blocks ahead of the one being read that gemv loops ask for: about 2.5 KB per row in flight.
constexpr int64_t kGemvPrefetchBlocks = 2;

// The block kGemvPrefetchBlocks after block b of a row, in the row's order and then into the same
// row of the next group (rows are contiguous: a short row's successor is 16 rows on).
inline const uint8_t* gemv_ahead(const uint8_t* row, size_t w_row_bytes, size_t block_bytes,
                                 int64_t b, int64_t n_blocks) {
  const int64_t ahead = b + kGemvPrefetchBlocks;
  if (ahead < n_blocks) return row + static_cast<size_t>(ahead) * block_bytes;
  return row + 16 * w_row_bytes + static_cast<size_t>(ahead - n_blocks) * block_bytes;
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
// the reference's float order (ref vec_dot_q6_K_q8_K: acc + (d dx) isum per block).
inline void gemv_q6_K(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
                      const BlockQ8K* x, float* y) {
  const int64_t n_blocks = n_in / kQKK;
  for (int64_t r0 = 0; r0 < n_rows; r0 += 16) {
    const int64_t rows = n_rows - r0 < 16 ? n_rows - r0 : 16;
    const GemvRows g = gemv_rows(w + r0 * w_row_bytes, w_row_bytes, rows);
    const bool next_group = r0 + 32 <= n_rows;  // prefetching past it could leave the weights
    __m512 acc = _mm512_setzero_ps();
    for (int64_t b = 0; b < n_blocks; ++b) {
      const size_t off = static_cast<size_t>(b) * sizeof(BlockQ6K);
      if (b + kGemvPrefetchBlocks < n_blocks || next_group) {
        for (int r = 0; r < 16; ++r) {
          prefetch_block(gemv_ahead(g.row[r], w_row_bytes, sizeof(BlockQ6K), b, n_blocks),
                         sizeof(BlockQ6K));
        }
      }
      Q6KActivation xa;
      for (int k = 0; k < 4; ++k) xa.qs[k] = _mm512_loadu_si512(x[b].qs + 64 * k);
      xa.bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].bsums));
      const __m512i isum = fold_16_rows([&](int r) {
        return q6k_row_sums(*reinterpret_cast<const BlockQ6K*>(g.row[r] + off), xa);
      });
      // d is the block's last 2 bytes: gather the 4 ending there (high half).
      const __m512 d = gather_high_f16(g, off + offsetof(BlockQ6K, d) - 2);
      acc = _mm512_add_ps(
          acc, _mm512_mul_ps(_mm512_mul_ps(d, _mm512_set1_ps(x[b].d)), _mm512_cvtepi32_ps(isum)));
    }
    _mm512_mask_storeu_ps(y + r0, g.store_mask, acc);
  }
}

}  // namespace
}  // namespace minfer::kernels::avx512
