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
#include <cstring>
#include <type_traits>

#include "kernels/avx512/avx512_fold.h"
#include "kernels/avx512/avx512_gemv_prefetch.h"
#include "kernels/avx512/avx512_quant_vec.h"
#include "kernels/kquant_scales.h"
#include "kernels/quant_tile_impl.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx512 {
namespace {

// ---- the row group ----

// A group is the tiles' (Vec512::Group: up to 16 rows, missing ones repeating the last real one,
// byte offsets for gathers, a store mask).
using GemvRows = Vec512::Group;

// ---- Q6_K, Q3_K, Q2_K × Q8_K ----

// One Q8_K activation block, as the Q6_K / Q3_K / Q2_K row sums read it.
struct Q6KActivation {
  __m512i qs[4];  // [64-element quarter] the block's 256 quants
  __m256i bsums;  // 16 int16
};

// The quants of elements 128h + 0..63 (lo) and 128h + 64..127 (hi) of a Q6_K, Q3_K or Q2_K
// block as u8, in order.
inline void k16_quarters(const BlockQ6K& w, int h, __m512i& q_lo, __m512i& q_hi) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const __m512i bits45 = _mm512_set1_epi8(0x30);
  // Element 128h + 32k + l (l < 32): low 4 bits in ql[64h + l + 32 (k & 1)] (high nibble for
  // k >= 2), bits 4-5 are bits 2k, 2k + 1 of qh[32h + l] (see BlockQ6K).
  const __m512i ql = _mm512_loadu_si512(w.ql + 64 * h);
  const __m256i qh = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh + 32 * h));
  // Byte l of the low half: qh[l]; of the high half: qh[l] >> 2 (bits 2-3 down to 0-1).
  const __m512i qh2 = _mm512_inserti64x4(_mm512_castsi256_si512(qh), _mm256_srli_epi16(qh, 2), 1);
  q_lo = _mm512_or_si512(_mm512_and_si512(ql, low4),
                         _mm512_and_si512(_mm512_slli_epi16(qh2, 4), bits45));
  q_hi = _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql, 4), low4),
                         _mm512_and_si512(qh2, bits45));
}

// Q2_K: element 128h + 32k + l is bits 2k..2k+1 of qs[32h + l].
inline void k16_quarters(const BlockQ2K& w, int h, __m512i& q_lo, __m512i& q_hi) {
  const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * h));
  // Byte l of the low half: qs[l]; of the high half: qs[l] >> 2.
  const __m512i qs2 = _mm512_inserti64x4(_mm512_castsi256_si512(qs), _mm256_srli_epi16(qs, 2), 1);
  q_lo = _mm512_and_si512(qs2, _mm512_set1_epi8(3));
  q_hi = _mm512_and_si512(_mm512_srli_epi16(qs2, 4), _mm512_set1_epi8(3));
}

// Q3_K: the low 2 bits as Q2_K, the third is bit 4h + k of hmask[l] (0..7 here: the level is
// that minus 4, applied through the bsums).
inline void k16_quarters(const BlockQ3K& w, int h, __m512i& q_lo, __m512i& q_hi) {
  const __m256i qs = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qs + 32 * h));
  const __m512i qs2 = _mm512_inserti64x4(_mm512_castsi256_si512(qs), _mm256_srli_epi16(qs, 2), 1);
  const __m256i hm = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.hmask));
  // Byte l of the low half: hmask[l]; of the high half: hmask[l] >> 1 (bit 4h + 1 to 4h).
  const __m512i hm2 = _mm512_inserti64x4(_mm512_castsi256_si512(hm), _mm256_srli_epi16(hm, 1), 1);
  const __m512i four = _mm512_set1_epi8(4);
  const auto high = [&](int bit) {
    return _mm512_test_epi8_mask(hm2, _mm512_set1_epi8(static_cast<char>(1 << bit)));
  };
  const __m512i lo = _mm512_and_si512(qs2, _mm512_set1_epi8(3));
  const __m512i hi = _mm512_and_si512(_mm512_srli_epi16(qs2, 4), _mm512_set1_epi8(3));
  q_lo = _mm512_mask_add_epi8(lo, high(4 * h), lo, four);
  q_hi = _mm512_mask_add_epi8(hi, high(4 * h + 2), hi, four);
}

// The exact integer dot of one Q6_K / Q3_K / Q2_K block with one Q8_K block, as 16 partial
// sums: Σ_j sc_j (q_j · x_j), less 32 / 4 Σ_j sc_j bsums_j for Q6_K / Q3_K (ref
// vec_dot_q6_K_q8_K, q3_K); for Q2_K, `summins`' lanes sum to Σ_j m_j bsums_j (ref
// vec_dot_q2_K_q8_K).
template <class Block>
__m512i k16_row_sums(const Block& w, const Q6KActivation& x, __m256i& summins) {
  const __m256i sc16 = k16_scales(w);
  const __m512i sc = _mm512_zextsi256_si512(sc16);
  // int16 lane i of a 64-element quarter covers elements 2i, 2i + 1: sub-block i / 8 of it.
  const __m512i sub_of_lane = _mm512_set_epi16(3, 3, 3, 3, 3, 3, 3, 3, 2, 2, 2, 2, 2, 2, 2, 2, 1, 1,
                                               1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  __m512i sums = _mm512_setzero_si512();
  for (int h = 0; h < 2; ++h) {
    __m512i q_lo, q_hi;
    k16_quarters(w, h, q_lo, q_hi);
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
  if constexpr (std::is_same_v<Block, BlockQ2K>) {
    summins = _mm256_madd_epi16(_mm256_cvtepu8_epi16(q2k_scales<true>(w)), x.bsums);
    return sums;
  } else {
    constexpr int kShift = std::is_same_v<Block, BlockQ6K> ? 5 : 2;  // offset 32 / 4
    const __m256i offset = _mm256_slli_epi32(_mm256_madd_epi16(sc16, x.bsums), kShift);
    return _mm512_sub_epi32(sums, _mm512_zextsi256_si512(offset));
  }
}

// Q6_K: the 8 integer lanes of llama.cpp's x86 dot (ref vec_dot_q6_K_q8_K) for each of 16 rows,
// from its 16 partial sums (lane l: partial sums l and l + 8, the elements 4l..4l+3 of each
// 32-element group; the -32 offsets of sub-blocks 2l, 2l + 1 are in partial sum l), transposed:
// lanes[l] lane r is lane l of row r. Row r's partial sums at partial[r].
inline void q6k_lanes(const __m512i* partial, __m512i lanes[8]) {
  alignas(32) __m256i row_lanes[16];  // [row] 8 int32
  GemvRows rows;
  for (int r = 0; r < 16; ++r) {
    row_lanes[r] = _mm256_add_epi32(_mm512_castsi512_si256(partial[r]),
                                    _mm512_extracti64x4_epi64(partial[r], 1));
    rows.row[r] = reinterpret_cast<const uint8_t*>(&row_lanes[r]);
  }
  Vec512::transpose32(rows, 0, lanes);
}

// y[r] = Σ_b (d_r,b d_x,b) isum_r,b for n_rows rows of Q3_K against one Q8_K activation row, in
// the reference's float order (ref vec_dot_q3_K_q8_K: acc + (d dx) isum per block); Q2_K:
// acc + ((dx d) isum - (dx dmin) summins); Q6_K: the tile's 8 accumulators, acc_l + (d dx) lane_l
// fused (KindQ6K). Each row's blocks of a chunk are read in one run, as gemv_q32 does.
template <class Block>
void gemv_k16(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows, const BlockQ8K* x,
              float* y) {
  constexpr bool kQ2 = std::is_same_v<Block, BlockQ2K>;
  constexpr bool kQ6 = std::is_same_v<Block, BlockQ6K>;
  constexpr int kAccs = kQ6 ? 8 : 1;
  constexpr int64_t kChunk = 8;  // blocks: 1680 / 880 / 672 bytes of a row per run
  const int64_t n_blocks = n_in / kQKK;
  alignas(64) __m512i partial[kChunk][16];       // [block of the chunk][row] 8 KB
  alignas(32) __m256i partial_mins[kChunk][16];  // [block of the chunk][row] Q2_K: 4 KB
  GemvPrefetch prefetch(w, n_rows * w_row_bytes);
  for (int64_t r0 = 0; r0 < n_rows; r0 += 16) {
    const int64_t rows = n_rows - r0 < 16 ? n_rows - r0 : 16;
    const GemvRows g = Vec512::make_group(w + r0 * w_row_bytes, w_row_bytes, rows);
    __m512 acc[kAccs];  // lanes = rows
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunk) {
      const int64_t nbc = n_blocks - c0 < kChunk ? n_blocks - c0 : kChunk;
      for (int r = 0; r < 16; ++r) {
        prefetch.advance(g.row[r] + static_cast<size_t>(c0 + nbc) * sizeof(Block));
        for (int64_t k = 0; k < nbc; ++k) {
          // The activation block comes from L1 again for each row: 32 zmm would not stay in
          // registers for a chunk.
          Q6KActivation xa;
          for (int q = 0; q < 4; ++q) xa.qs[q] = _mm512_loadu_si512(x[c0 + k].qs + 64 * q);
          xa.bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[c0 + k].bsums));
          const uint8_t* blk = g.row[r] + static_cast<size_t>(c0 + k) * sizeof(Block);
          partial[k][r] =
              k16_row_sums(*reinterpret_cast<const Block*>(blk), xa, partial_mins[k][r]);
        }
      }
      for (int64_t k = 0; k < nbc; ++k) {
        const int64_t b = c0 + k;
        const size_t off = static_cast<size_t>(b) * sizeof(Block);
        const __m512 dx = _mm512_set1_ps(x[b].d);
        if constexpr (kQ6) {
          __m512i lanes[8];
          q6k_lanes(partial[k], lanes);
          const __m512 d = Vec512::gather_f16(g, off + offsetof(Block, d) - 2, true);
          const __m512 ddx = _mm512_mul_ps(d, dx);
          for (int l = 0; l < 8; ++l) {
            acc[l] = _mm512_fmadd_ps(ddx, _mm512_cvtepi32_ps(lanes[l]), acc[l]);
          }
          continue;
        }
        const __m512i isum = fold_16_rows([&](int r) { return partial[k][r]; });
        if constexpr (kQ2) {
          const __m512i summins =
              fold_16_rows([&](int r) { return _mm512_zextsi256_si512(partial_mins[k][r]); });
          __m512 d, dmin;
          Vec512::gather_f16_pair(g, off + offsetof(BlockQ2K, d), d, dmin);
          const __m512 pos = _mm512_mul_ps(_mm512_mul_ps(dx, d), _mm512_cvtepi32_ps(isum));
          const __m512 neg = _mm512_mul_ps(_mm512_mul_ps(dx, dmin), _mm512_cvtepi32_ps(summins));
          acc[0] = _mm512_add_ps(acc[0], _mm512_sub_ps(pos, neg));
        } else {
          // d is the block's last 2 bytes: gather the 4 ending there (high half).
          const __m512 d = Vec512::gather_f16(g, off + offsetof(Block, d) - 2, true);
          acc[0] =
              _mm512_add_ps(acc[0], _mm512_mul_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum)));
        }
      }
    }
    if constexpr (kQ6) {
      _mm512_mask_storeu_ps(y + r0, g.store_mask, quant_tile::hsum8<Vec512>(acc));
    } else {
      _mm512_mask_storeu_ps(y + r0, g.store_mask, acc[0]);
    }
  }
}

// ---- Q4_K × Q8_K ----

// One Q8_K activation block rearranged for Q4_K's storage order: 64 bytes of a row's quants hold
// sub-blocks 2c (low nibbles, bytes 0-31) and 2c + 2 (low, 32-63) and their odd neighbours in
// the high nibbles, so qs[k] pairs the activation's sub-blocks in the same way.
struct Q4KActivation {
  __m512i qs[4];       // [k] sub-blocks (k = 0: 0, 2; 1: 1, 3; 2: 4, 6; 3: 5, 7), 32 int8 each
  __m128i bsum_pairs;  // [j] 8 int16: bsums 2j + 2j + 1, the sum of sub-block j's quants
};

inline Q4KActivation q4k_activation(const BlockQ8K& x) {
  Q4KActivation a;
  const auto half = [&](int sub) {
    return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.qs + 32 * sub));
  };
  constexpr int kSubs[4][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
  for (int k = 0; k < 4; ++k) {
    a.qs[k] = _mm512_inserti64x4(_mm512_castsi256_si512(half(kSubs[k][0])), half(kSubs[k][1]), 1);
  }
  const __m256i bsums = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x.bsums));
  // |bsum| <= 16 * 128, so a pair's sum fits int16.
  const __m256i pairs = _mm256_hadd_epi16(bsums, _mm256_setzero_si256());
  a.bsum_pairs =
      _mm_unpacklo_epi64(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1));
  return a;
}

// The exact integer parts of one Q4_K or Q5_K block against one Q8_K block (ref
// dot_k4_superblock): the
// returned lanes sum to isum = Σ_j sc_j (q_j · x_j), those of `summins` to Σ_j m_j (bsums of
// sub-block j).
template <class Block>
__m512i k4_row_sums(const Block& w, const Q4KActivation& x, __m128i& summins) {
  const __m512i low4 = _mm512_set1_epi8(0x0f);
  const Q4KScalesMins sm = q4k_scales_mins(w.scales);
  const __m512i q01 = _mm512_loadu_si512(w.qs);
  const __m512i q23 = _mm512_loadu_si512(w.qs + 64);
  // Quants 0..15 (Q4_K) or 0..31 (Q5_K: the fifth bit of element 32j + l is bit j of qh[l]).
  // Vector k holds sub-blocks (0, 2), (1, 3), (4, 6), (5, 7) in its 256-bit halves.
  const auto quants = [&](__m512i nibbles, int k) {
    if constexpr (!std::is_same_v<Block, BlockQ5K>) {
      return nibbles;
    } else {
      constexpr int kSub[4][2] = {{0, 2}, {1, 3}, {4, 6}, {5, 7}};
      const __m512i qh =
          _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w.qh)));
      const __m512i bit =
          _mm512_inserti64x4(_mm512_set1_epi8(static_cast<char>(1 << kSub[k][0])),
                             _mm256_set1_epi8(static_cast<char>(1 << kSub[k][1])), 1);
      return _mm512_mask_add_epi8(nibbles, _mm512_test_epi8_mask(qh, bit), nibbles,
                                  _mm512_set1_epi8(16));
    }
  };
  // Dword sums of 4 u5 · s8 products per sub-block (lanes 0-7: the vector's first sub-block, 8-15:
  // its second), |sum| <= 4 · 31 · 128, so two vectors pack into int16 exactly. Per 128-bit lane
  // the pack holds 4 sums of each of the two sub-blocks paired in Q4KActivation (0 and 1 in
  // lanes 0-1, 2 and 3 in lanes 2-3; likewise 4-7), and vpdpwssd multiplies them by their scales.
  const __m512i zero = _mm512_setzero_si512();
  const __m512i sums01 = _mm512_packs_epi32(
      _mm512_dpbusd_epi32(zero, quants(_mm512_and_si512(q01, low4), 0), x.qs[0]),
      _mm512_dpbusd_epi32(zero, quants(_mm512_and_si512(_mm512_srli_epi16(q01, 4), low4), 1),
                          x.qs[1]));
  const __m512i sums23 = _mm512_packs_epi32(
      _mm512_dpbusd_epi32(zero, quants(_mm512_and_si512(q23, low4), 2), x.qs[2]),
      _mm512_dpbusd_epi32(zero, quants(_mm512_and_si512(_mm512_srli_epi16(q23, 4), low4), 3),
                          x.qs[3]));
  // Every 64-bit lane holds the 8 scale bytes; a shuffle spreads them over the int16 lanes in
  // the packs' order (scale bytes zero-extended).
  const __m512i sc_bytes = _mm512_set1_epi64(static_cast<int64_t>(sm.scales));
  const auto spread = [&](int first) {
    const auto lane = [](int a, int b) {
      const auto words = [](int byte) {
        return static_cast<int64_t>(0x8000800080008000ULL |
                                    (0x0001000100010001ULL * static_cast<uint64_t>(byte)));
      };
      return _mm_set_epi64x(words(b), words(a));
    };
    const __m512i idx = _mm512_inserti64x4(
        _mm512_castsi256_si512(_mm256_broadcastsi128_si256(lane(first, first + 1))),
        _mm256_broadcastsi128_si256(lane(first + 2, first + 3)), 1);
    return _mm512_shuffle_epi8(sc_bytes, idx);
  };
  const __m512i s = _mm512_dpwssd_epi32(_mm512_madd_epi16(sums01, spread(0)), sums23, spread(4));
  const __m128i mins = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sm.mins)));
  summins = _mm_madd_epi16(mins, x.bsum_pairs);
  return s;
}

// Lane r: the sum of the 4 dwords of m[r], r = 0..15 (16 consecutive 128-bit values, as 4
// vectors of 4 rows).
inline __m512i fold_16_quads(const __m128i* m) {
  const auto rows = [&](int g) { return _mm512_load_si512(m + 4 * g); };
  // Lane 4i + g of the fold: row 4g + i.
  const __m512i sums = fold_quad(fold_pair(rows(0), rows(1)), fold_pair(rows(2), rows(3)));
  const __m512i order = _mm512_set_epi32(15, 11, 7, 3, 14, 10, 6, 2, 13, 9, 5, 1, 12, 8, 4, 0);
  return _mm512_permutexvar_epi32(order, sums);
}

// y[r] = Σ_b ((d_r,b d_x,b) isum_r,b - (dmin_r,b d_x,b) summins_r,b) for n_rows rows of Q4_K or
// Q5_K (Block) against one Q8_K activation row, in the reference's float order (ref
// vec_dot_q4_K_q8_K / q5_K). Each row's blocks of a chunk are read in one run, as gemv_q32 does.
template <class Block>
void gemv_k4(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows, const BlockQ8K* x,
             float* y) {
  constexpr int64_t kChunk = 8;  // blocks: 1152 (Q4_K) or 1408 (Q5_K) bytes of a row per run
  const int64_t n_blocks = n_in / kQKK;
  alignas(64) __m512i partial[kChunk][16];       // [block of the chunk][row] 8 KB
  alignas(64) __m128i partial_mins[kChunk][16];  // [block of the chunk][row] 2 KB
  GemvPrefetch prefetch(w, n_rows * w_row_bytes);
  for (int64_t r0 = 0; r0 < n_rows; r0 += 16) {
    const int64_t rows = n_rows - r0 < 16 ? n_rows - r0 : 16;
    const GemvRows g = Vec512::make_group(w + r0 * w_row_bytes, w_row_bytes, rows);
    __m512 acc = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < n_blocks; c0 += kChunk) {
      const int64_t nbc = n_blocks - c0 < kChunk ? n_blocks - c0 : kChunk;
      Q4KActivation xa[kChunk];
      for (int64_t k = 0; k < nbc; ++k) xa[k] = q4k_activation(x[c0 + k]);
      for (int r = 0; r < 16; ++r) {
        prefetch.advance(g.row[r] + static_cast<size_t>(c0 + nbc) * sizeof(Block));
        for (int64_t k = 0; k < nbc; ++k) {
          const uint8_t* blk = g.row[r] + static_cast<size_t>(c0 + k) * sizeof(Block);
          partial[k][r] =
              k4_row_sums(*reinterpret_cast<const Block*>(blk), xa[k], partial_mins[k][r]);
        }
      }
      for (int64_t k = 0; k < nbc; ++k) {
        const int64_t b = c0 + k;
        // lanes = rows
        const __m512i isum = fold_16_rows([&](int r) { return partial[k][r]; });
        const __m512i summins = fold_16_quads(partial_mins[k]);
        __m512 d, dmin;
        Vec512::gather_f16_pair(g, static_cast<size_t>(b) * sizeof(Block), d, dmin);
        const __m512 dx = _mm512_set1_ps(x[b].d);
        const __m512 pos = _mm512_mul_ps(_mm512_mul_ps(d, dx), _mm512_cvtepi32_ps(isum));
        const __m512 neg = _mm512_mul_ps(_mm512_mul_ps(dmin, dx), _mm512_cvtepi32_ps(summins));
        acc = _mm512_add_ps(acc, _mm512_sub_ps(pos, neg));
      }
    }
    _mm512_mask_storeu_ps(y + r0, g.store_mask, acc);
  }
}

// ---- Q8_0 × Q8_0 ----

// The exact integer dots of the dwords of blocks b, b + 1 of one Q8_0 row with the activation's
// (lane l < 8: elements 4l..4l+3 of block b, lanes 8-15: block b + 1's; zeros there when `two` is
// false) as the tile's lane floats (quant_tile_impl.h KindQ8_0, Vec512::q8_lane): Σ (w + 128) x
// from `start` = kQ8_0LaneMagic - 128 Σ x per dword (q8_0_start), the signed weights moved to
// unsigned for vpdpbusd, so each dword's bits are the float 12582912 + Σ w x (q8_0_lane_float).
inline __m512i q8_0_start(__m512i x) {
  const __m512i excess =
      _mm512_dpbusd_epi32(_mm512_setzero_si512(), _mm512_set1_epi8(static_cast<char>(0x80)), x);
  return _mm512_sub_epi32(_mm512_set1_epi32(kQ8_0LaneMagic), excess);
}
inline __m512 q8_0_lane_float(__m512i sums) {
  return _mm512_sub_ps(_mm512_castsi512_ps(sums), _mm512_set1_ps(12582912.0f));
}
inline __m512i q8_0_row_sums(const BlockQ8_0* w, int64_t b, bool two, __m512i x, __m512i start) {
  const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b].qs));
  const __m512i q =
      two ? _mm512_inserti64x4(_mm512_castsi256_si512(lo),
                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w[b + 1].qs)), 1)
          : _mm512_zextsi256_si512(lo);
  const __m512i biased = _mm512_xor_si512(q, _mm512_set1_epi8(static_cast<char>(0x80)));
  return _mm512_dpbusd_epi32(start, biased, x);
}

// ---- Q4_0 / Q5_0 × Q8_0, and the Q8_0 / Q4_0 / Q5_0 GEMV ----

// The exact integer dots Σ q x of blocks b, b + 1 of one Q4_0 / Q5_0 (or Q4_1 / Q5_1) row with the
// activation's, the quants unsigned (0..15 / 0..31; the caller removes 8 / 16 Σ x): 128-bit lanes 0
// and 2 hold block b's partial sums (its low and high nibbles, elements 0-15 and 16-31), lanes 1
// and 3 block b + 1's. `x` is laid out to match (see gemv_q32); without `two`, block b + 1's lanes
// are zero.
template <class Block>
__m512i q32_row_sums(const Block* w, int64_t b, bool two, __m512i x) {
  const __m128i qb = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b].qs));
  const __m128i qb1 =
      two ? _mm_loadu_si128(reinterpret_cast<const __m128i*>(w[b + 1].qs)) : _mm_setzero_si128();
  const __m256i q = _mm256_inserti128_si256(_mm256_castsi128_si256(qb), qb1, 1);
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  __m512i quants = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_and_si256(q, low4)),
                                      _mm256_and_si256(_mm256_srli_epi16(q, 4), low4), 1);
  if constexpr (std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>) {
    // Bit j of qh: the fifth bit of element j (low nibbles: j < 16), in the quants' byte order.
    uint32_t hb, hb1 = 0;
    std::memcpy(&hb, w[b].qh, 4);
    if (two) std::memcpy(&hb1, w[b + 1].qh, 4);
    const uint64_t bits = (hb & 0xffffu) | (uint64_t{hb1 & 0xffffu} << 16) |
                          (uint64_t{hb >> 16} << 32) | (uint64_t{hb1 >> 16} << 48);
    quants = _mm512_mask_add_epi8(quants, _cvtu64_mask64(bits), quants, _mm512_set1_epi8(16));
  }
  return _mm512_dpbusd_epi32(_mm512_setzero_si512(), quants, x);
}

// Block pairs per chunk of the 32-element types: 32 blocks, 1088 / 576 / 704 / 640 / 768 bytes
// of a Q8_0 / Q4_0 / Q5_0 / Q4_1 / Q5_1 row per run.
constexpr int64_t kQ32ChunkPairs = 16;

// partial[p][r]: the exact integer sums of block pair p of the chunk [c0, c0 + nbc) of row r of
// g against the activation's (q8_0_row_sums / q32_row_sums, XBlock: BlockQ8_0 or BlockQ8_1),
// each row's blocks read in one run. Returns the number of pairs.
template <class Block, class XBlock>
int64_t q32_chunk_sums(const GemvRows& g, const XBlock* x, int64_t c0, int64_t nbc,
                       int64_t n_blocks, GemvPrefetch& prefetch, __m512i (*partial)[16]) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  __m512i xv[kQ32ChunkPairs];     // [pair of the chunk] activation quants in the rows' lane order
  __m512i start[kQ32ChunkPairs];  // [pair] Q8_0: q8_0_start of xv
  const int64_t n_pairs = (nbc + 1) / 2;
  for (int64_t p = 0; p < n_pairs; ++p) {
    const int64_t b = c0 + 2 * p;
    const __m256i xb = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b].qs));
    const __m256i xb1 = b + 1 < n_blocks
                            ? _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x[b + 1].qs))
                            : _mm256_setzero_si256();
    const __m512i both = _mm512_inserti64x4(_mm512_castsi256_si512(xb), xb1, 1);
    // 4-bit types: [x_b 0-15, x_b+1 0-15, x_b 16-31, x_b+1 16-31], as the nibbles come.
    xv[p] = kQ8 ? both : _mm512_shuffle_i64x2(both, both, _MM_SHUFFLE(3, 1, 2, 0));
    if constexpr (kQ8) start[p] = q8_0_start(xv[p]);
  }
  for (int r = 0; r < 16; ++r) {
    const auto* blocks = reinterpret_cast<const Block*>(g.row[r]);
    prefetch.advance(reinterpret_cast<const uint8_t*>(blocks + c0 + nbc));
    for (int64_t p = 0; p < n_pairs; ++p) {
      const int64_t b = c0 + 2 * p;
      if constexpr (kQ8) {
        partial[p][r] = q8_0_row_sums(blocks, b, b + 1 < n_blocks, xv[p], start[p]);
      } else {
        partial[p][r] = q32_row_sums(blocks, b, b + 1 < n_blocks, xv[p]);
      }
    }
  }
  return n_pairs;
}

// ---- Q4_1 / Q5_1 × Q8_1 ----

// Lane r of out[4L + j]: dword j of 128-bit lane L of rows(r), r = 0..15 (a 16 × 16 dword
// transpose: unpacks within the 128-bit lanes, then a 4 × 4 transpose of the lanes).
template <class Rows>
void transpose_16_rows(Rows&& rows, __m512i out[16]) {
  __m512i u[16];  // [4g + j] per 128-bit lane L: dword j of lane L of rows 4g .. 4g + 3
  for (int g = 0; g < 4; ++g) {
    const __m512i t0 = _mm512_unpacklo_epi32(rows(4 * g), rows(4 * g + 1));
    const __m512i t1 = _mm512_unpackhi_epi32(rows(4 * g), rows(4 * g + 1));
    const __m512i t2 = _mm512_unpacklo_epi32(rows(4 * g + 2), rows(4 * g + 3));
    const __m512i t3 = _mm512_unpackhi_epi32(rows(4 * g + 2), rows(4 * g + 3));
    u[4 * g] = _mm512_unpacklo_epi64(t0, t2);
    u[4 * g + 1] = _mm512_unpackhi_epi64(t0, t2);
    u[4 * g + 2] = _mm512_unpacklo_epi64(t1, t3);
    u[4 * g + 3] = _mm512_unpackhi_epi64(t1, t3);
  }
  for (int j = 0; j < 4; ++j) {
    const __m512i v0 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0x44);  // lanes 0-1 of groups 0, 1
    const __m512i v1 = _mm512_shuffle_i32x4(u[j], u[4 + j], 0xee);  // lanes 2-3
    const __m512i v2 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0x44);
    const __m512i v3 = _mm512_shuffle_i32x4(u[8 + j], u[12 + j], 0xee);
    out[j] = _mm512_shuffle_i32x4(v0, v2, 0x88);
    out[4 + j] = _mm512_shuffle_i32x4(v0, v2, 0xdd);
    out[8 + j] = _mm512_shuffle_i32x4(v1, v3, 0x88);
    out[12 + j] = _mm512_shuffle_i32x4(v1, v3, 0xdd);
  }
}

// Block pair p of a chunk (blocks b = c0 + 2p and b + 1 if `two`) of Q4_0 / Q5_0 rows: acc + the
// blocks' terms in the reference's float order per block (q4_0: acc + (sumi d_w) d_x; q5_0: acc +
// (d_w d_x) sumi; `x_sums`: Σ of each activation block's quants).
template <class Block>
void q32_pair_step(const __m512i* partial, const GemvRows& g, int64_t b, bool two,
                   const BlockQ8_0* x, const int32_t* x_sums, __m512* acc) {
  constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0>;
  constexpr int32_t kOffset = kQ5 ? 16 : 8;
  __m512i isum[2];  // lanes = rows: blocks b, b + 1
  fold_16_rows_halves<true>([&](int r) { return partial[r]; }, isum[0], isum[1]);
  for (int k = 0; k < (two ? 2 : 1); ++k) {
    const int64_t bk = b + k;
    const __m512 s =
        _mm512_cvtepi32_ps(_mm512_add_epi32(isum[k], _mm512_set1_epi32(-kOffset * x_sums[bk])));
    const __m512 d = Vec512::gather_f16(g, static_cast<size_t>(bk) * sizeof(Block), false);
    const __m512 dx = _mm512_set1_ps(_cvtsh_ss(x[bk].d));
    const __m512 term =
        kQ5 ? _mm512_mul_ps(_mm512_mul_ps(d, dx), s) : _mm512_mul_ps(_mm512_mul_ps(s, d), dx);
    acc[0] = _mm512_add_ps(acc[0], term);
  }
}

// The same for Q4_1 / Q5_1 and Q8_0 rows, on the tile's 9 / 8 accumulators (quant_tile_impl.h
// KindQ32, KindQ8_0; ref vec_dot_q4_1_q8_1, vec_dot_q8_0_q8_0: per block fma(d_w d_x, sum of
// elements 4l..4l+3, acc_l), Q4_1 / Q5_1's m_w s_x summed apart). Each dword of the partial sums
// is one accumulator's sum, so the 16 rows are transposed instead of folded.
template <class Block, class XBlock>
void lane_pair_step(const __m512i* partial, const GemvRows& g, int64_t b, bool two, const XBlock* x,
                    __m512* acc) {
  constexpr bool kQ8 = std::is_same_v<Block, BlockQ8_0>;
  // sums[4L + j]: dword j of 128-bit lane L. Q8_0: block b + (L >> 1), elements 16 (L & 1) + 4j;
  // Q4_1 / Q5_1: block b + (L & 1), elements 16 (L >> 1) + 4j.
  __m512i sums[16];
  transpose_16_rows([&](int r) { return partial[r]; }, sums);
  for (int k = 0; k < (two ? 2 : 1); ++k) {
    const int64_t bk = b + k;
    __m512 d;
    if constexpr (kQ8) {
      d = Vec512::gather_f16(g, static_cast<size_t>(bk) * sizeof(Block), false);
    } else {
      __m512 m;
      Vec512::gather_f16_pair(g, static_cast<size_t>(bk) * sizeof(Block), d, m);
      acc[8] = _mm512_add_ps(acc[8], _mm512_mul_ps(m, _mm512_set1_ps(_cvtsh_ss(x[bk].s))));
    }
    const __m512 dd = _mm512_mul_ps(d, _mm512_set1_ps(_cvtsh_ss(x[bk].d)));
    for (int l = 0; l < 8; ++l) {
      const int lane = kQ8 ? 2 * k + l / 4 : 2 * (l / 4) + k;
      const __m512i s = sums[4 * lane + l % 4];
      acc[l] = _mm512_fmadd_ps(dd, kQ8 ? q8_0_lane_float(s) : _mm512_cvtepi32_ps(s), acc[l]);
    }
  }
}

// y[r] for n_rows rows of Q8_0 / Q4_0 / Q5_0 against one Q8_0 activation row (XBlock BlockQ8_0,
// `x_sums` its block sums), or of Q4_1 / Q5_1 against a Q8_1 one (XBlock BlockQ8_1, no sums).
// Each row's blocks of a chunk are read in one run (a single forward stream) into per-pair
// partial sums on the stack (q32_chunk_sums); the pair steps work from there.
template <class Block, class XBlock>
void gemv_q32(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows, const XBlock* x,
              const int32_t* x_sums, float* y) {
  constexpr bool kMin = std::is_same_v<XBlock, BlockQ8_1>;
  constexpr bool kLanes = kMin || std::is_same_v<Block, BlockQ8_0>;  // 8 float lanes (+ Σ m s)
  constexpr int64_t kChunkPairs = kQ32ChunkPairs;
  const int64_t n_blocks = n_in / 32;
  alignas(64) __m512i partial[kChunkPairs][16];  // [pair of the chunk][row] 16 KB
  GemvPrefetch prefetch(w, n_rows * w_row_bytes);
  for (int64_t r0 = 0; r0 < n_rows; r0 += 16) {
    const int64_t rows = n_rows - r0 < 16 ? n_rows - r0 : 16;
    const GemvRows g = Vec512::make_group(w + r0 * w_row_bytes, w_row_bytes, rows);
    __m512 acc[kMin ? 9 : kLanes ? 8 : 1];  // lanes = rows
    for (__m512& a : acc) a = _mm512_setzero_ps();
    for (int64_t c0 = 0; c0 < n_blocks; c0 += 2 * kChunkPairs) {
      const int64_t nbc = n_blocks - c0 < 2 * kChunkPairs ? n_blocks - c0 : 2 * kChunkPairs;
      const int64_t n_pairs = q32_chunk_sums<Block>(g, x, c0, nbc, n_blocks, prefetch, partial);
      for (int64_t p = 0; p < n_pairs; ++p) {
        const int64_t b = c0 + 2 * p;
        if constexpr (kLanes) {
          lane_pair_step<Block>(partial[p], g, b, b + 1 < n_blocks, x, acc);
        } else {
          q32_pair_step<Block>(partial[p], g, b, b + 1 < n_blocks, x, x_sums, acc);
        }
      }
    }
    __m512 result = acc[0];
    if constexpr (kLanes) {
      // The tile's finish: llama.cpp's hsum_float_8 order, then + Σ m s (Q4_1 / Q5_1).
      result = quant_tile::hsum8<Vec512>(acc);
      if constexpr (kMin) result = _mm512_add_ps(result, acc[8]);
    }
    _mm512_mask_storeu_ps(y + r0, g.store_mask, result);
  }
}

}  // namespace
}  // namespace minfer::kernels::avx512
