// Single-token (GEMV) paths of the AVX2 quantized matmul: the structure of the AVX-512 ones
// (avx512/avx512_gemv_quant.h, where the reasons are written down) on 8-row groups, with
// maddubs + madd where AVX-512 has VNNI. Include only from AVX2 translation units, after
// `#pragma GCC optimize("fp-contract=off")`; everything is in an anonymous namespace (see
// avx2_math.h).
//
// Each row's blocks of a chunk are read in one run (software prefetch ahead, GemvPrefetch), in
// their stored order: the quants meet the activation's in their own byte order and leave 8
// partial int32 sums per row block, and the scales' bits are copied to the stack on the way.
// The sums of 8 rows are then folded by a transpose-and-add tree into one vector whose lane r
// is row r's exact integer sum, and from there every float step is the tile's
// (quant_tile_impl.h), lane for lane: bit-identical to the reference.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "kernels/avx2/avx2_quant_vec.h"
#include "kernels/avx512/avx512_gemv_prefetch.h"
#include "kernels/kquant_scales.h"
#include "kernels/quant_tile_impl.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx2 {
namespace {

// Plain prefetch instructions (SSE): the AVX-512 GEMV's distances serve here too.
using GemvPrefetch = avx512::GemvPrefetch;

// ---- folding 8 rows ----

// Per 128-bit lane: [a0 + a2, b0 + b2, a1 + a3, b1 + b3].
inline __m256i fold_pair(__m256i a, __m256i b) {
  return _mm256_add_epi32(_mm256_unpacklo_epi32(a, b), _mm256_unpackhi_epi32(a, b));
}

// Of two fold_pair results (rows a, b and c, d): per 128-bit lane the sums of its 4 dwords of
// rows a, b, c, d.
inline __m256i fold_quad(__m256i ab, __m256i cd) {
  return _mm256_add_epi32(_mm256_unpacklo_epi64(ab, cd), _mm256_unpackhi_epi64(ab, cd));
}

// Lane r: the sum of the 8 dwords of rows(r), r = 0..7.
template <class Rows>
__m256i fold_8_rows(Rows&& rows) {
  // Per 128-bit lane h: rows 0-3 (lo) / 4-7 (hi), each summed over its lane h.
  const __m256i lo = fold_quad(fold_pair(rows(0), rows(1)), fold_pair(rows(2), rows(3)));
  const __m256i hi = fold_quad(fold_pair(rows(4), rows(5)), fold_pair(rows(6), rows(7)));
  return _mm256_add_epi32(_mm256_permute2x128_si256(lo, hi, 0x20),
                          _mm256_permute2x128_si256(lo, hi, 0x31));
}

// Lane r: the sum of the 4 dwords of m[r], r = 0..7 (8 consecutive 128-bit values).
inline __m256i fold_8_quads(const __m128i* m) {
  const auto rows = [&](int i) {
    return _mm256_load_si256(reinterpret_cast<const __m256i*>(m) + i);
  };
  // 128-bit lane 0: rows 0, 2, 4, 6; lane 1: rows 1, 3, 5, 7.
  const __m256i sums = fold_quad(fold_pair(rows(0), rows(1)), fold_pair(rows(2), rows(3)));
  return _mm256_permutevar8x32_epi32(sums, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
}

inline __m256i load256(const void* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// Σ of 4 products u8 (w) × s8 (x) per int32 lane; exact while a pair fits int16.
inline __m256i dot_u8s8(__m256i w, __m256i x) {
  return _mm256_madd_epi16(_mm256_maddubs_epi16(w, x), _mm256_set1_epi16(1));
}

// ---- the row-run driver ----

// y[r] for n_rows rows of kind K (below) against one activation row. K provides Block, kBlock
// (elements), kChunk (blocks per run), Act, XPrep (per activation block, computed once per
// chunk), Partial (a row block's integer parts and scale bits), row(), block() (the float step
// on 8 folded rows, in the reference's order, on kAccs accumulators) and finish() (the result
// from them).
template <class K>
void gemv_rows(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
               const typename K::Act& act, float* y) {
  using Block = typename K::Block;
  const int64_t n_blocks = n_in / K::kBlock;
  alignas(32) typename K::Partial partial[K::kChunk][8];  // [block of the chunk][row]
  typename K::XPrep xp[K::kChunk];                        // [block of the chunk]
  GemvPrefetch prefetch(w, static_cast<size_t>(n_rows) * w_row_bytes);
  for (int64_t r0 = 0; r0 < n_rows; r0 += 8) {
    const int64_t rows = n_rows - r0 < 8 ? n_rows - r0 : 8;
    const Vec256::Group g = Vec256::make_group(w + r0 * w_row_bytes, w_row_bytes, rows);
    __m256 acc[K::kAccs];  // lanes = rows
    for (__m256& a : acc) a = _mm256_setzero_ps();
    for (int64_t c0 = 0; c0 < n_blocks; c0 += K::kChunk) {
      const int64_t nbc = n_blocks - c0 < K::kChunk ? n_blocks - c0 : K::kChunk;
      for (int64_t k = 0; k < nbc; ++k) xp[k] = K::prep(act, c0 + k);
      for (int r = 0; r < 8; ++r) {
        const auto* blocks = reinterpret_cast<const Block*>(g.row[r]);
        prefetch.advance(reinterpret_cast<const uint8_t*>(blocks + c0 + nbc));
        for (int64_t k = 0; k < nbc; ++k) {
          K::row(blocks[c0 + k], act, c0 + k, xp[k], partial[k][r]);
        }
      }
      for (int64_t k = 0; k < nbc; ++k) K::block(partial[k], act, c0 + k, acc);
    }
    _mm256_maskstore_ps(y + r0, g.store_mask, K::finish(acc));
  }
}

struct NoPrep {};

// Kinds with one float accumulator per row.
struct OneAcc {
  static constexpr int kAccs = 1;
  static __m256 finish(const __m256* acc) { return acc[0]; }
};

// The 8 rows' f16 at the same place of their blocks (bits copied by row()), as floats.
inline __m256 f16_of_rows(const uint16_t (&bits)[8]) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(bits)));
}

// ---- Q8_0 / Q4_0 / Q5_0 × Q8_0 ----

template <class Block>
constexpr bool kFifthBit = std::is_same_v<Block, BlockQ5_0> || std::is_same_v<Block, BlockQ5_1>;

// The 32 unsigned quants of a Q4_0 / Q4_1 (0..15) or Q5_0 / Q5_1 (0..31) block in element
// order: the low nibbles are elements 0-15, the high ones 16-31, the fifth bit of element j is
// bit j of qh.
template <class Block>
__m256i q32_quants(const Block& w) {
  const __m128i qs = _mm_loadu_si128(reinterpret_cast<const __m128i*>(w.qs));
  __m256i q = _mm256_and_si256(_mm256_set_m128i(_mm_srli_epi16(qs, 4), qs), _mm256_set1_epi8(0x0f));
  if constexpr (kFifthBit<Block>) {
    // Byte j gets bit j of qh as 0x10.
    uint32_t qh;
    std::memcpy(&qh, w.qh, 4);
    const __m256i spread = _mm256_shuffle_epi8(
        _mm256_set1_epi32(static_cast<int32_t>(qh)),
        _mm256_set_epi64x(0x0303030303030303, 0x0202020202020202, 0x0101010101010101, 0));
    const __m256i bit = _mm256_set1_epi64x(static_cast<int64_t>(0x8040201008040201ULL));
    const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(spread, bit), bit);
    q = _mm256_or_si256(q, _mm256_and_si256(set, _mm256_set1_epi8(0x10)));
  }
  return q;
}

struct ActQ32 {
  const BlockQ8_0* x;
  const int32_t* x_sums;  // Σ of each block's quants
};

// Float order per block as the reference (q4_0: acc + (sumi d_w) d_x; q5_0: acc + (d_w d_x)
// sumi). The quants are unsigned (0..15 / 0..31, the offset 8 / 16 removed through the
// activation sums).
template <class B>
struct GemvQ32 : OneAcc {
  using Block = B;
  using Act = ActQ32;
  using XPrep = NoPrep;
  static constexpr bool kQ5 = std::is_same_v<B, BlockQ5_0>;
  static constexpr int32_t kOffset = kQ5 ? 16 : 8;
  static constexpr int kBlock = 32;
  static constexpr int64_t kChunk = 32;  // 576 / 704 bytes of a row per run

  struct Partial {
    __m256i sums;  // lanes sum to Σ q x
    uint16_t d;    // f16 bits
  };

  static XPrep prep(const Act&, int64_t) { return {}; }

  static void row(const Block& w, const Act& a, int64_t b, XPrep, Partial& p) {
    p.sums = dot_u8s8(q32_quants(w), load256(a.x[b].qs));
    p.d = w.d;
  }

  static void block(const Partial (&p)[8], const Act& a, int64_t b, __m256* acc) {
    __m256i isum = fold_8_rows([&](int r) { return p[r].sums; });
    isum = _mm256_add_epi32(isum, _mm256_set1_epi32(-kOffset * a.x_sums[b]));
    const __m256 s = _mm256_cvtepi32_ps(isum);
    uint16_t bits[8];
    for (int r = 0; r < 8; ++r) bits[r] = p[r].d;
    const __m256 d = f16_of_rows(bits);
    const __m256 dx = _mm256_set1_ps(_cvtsh_ss(a.x[b].d));
    const __m256 term =
        kQ5 ? _mm256_mul_ps(_mm256_mul_ps(d, dx), s) : _mm256_mul_ps(_mm256_mul_ps(s, d), dx);
    acc[0] = _mm256_add_ps(acc[0], term);
  }
};

// ---- Q4_K / Q5_K × Q8_K ----

// As ref dot_k4_superblock: isum = Σ_j sc_j (q_j · x_j), summins = Σ_j m_j (bsums of sub-block
// j); acc + ((d dx) isum - (dmin dx) summins).
template <class B>
struct GemvK4 : OneAcc {
  using Block = B;
  using Act = const BlockQ8K*;
  static constexpr bool kQ5 = std::is_same_v<B, BlockQ5K>;
  static constexpr int kBlock = kQKK;
  static constexpr int64_t kChunk = 8;  // 1152 (Q4_K) or 1408 (Q5_K) bytes of a row per run

  struct XPrep {
    __m128i bsum_pairs;  // [j] 8 int16: the sum of sub-block j's quants (|.| <= 32 · 128)
  };

  struct Partial {
    __m256i sums;     // lanes sum to isum
    __m128i summins;  // lanes sum to summins
    uint16_t d, dmin;
  };

  static XPrep prep(const Act& x, int64_t b) {
    const __m256i bsums = load256(x[b].bsums);
    const __m256i pairs = _mm256_hadd_epi16(bsums, _mm256_setzero_si256());
    return {_mm_unpacklo_epi64(_mm256_castsi256_si128(pairs), _mm256_extracti128_si256(pairs, 1))};
  }

  static void row(const Block& w, const Act& x, int64_t b, const XPrep& xp, Partial& p) {
    const Q4KScalesMins sm = q4k_scales_mins(w.scales);
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    // int16 j: scale j, in both 128-bit lanes.
    const __m256i sc = _mm256_broadcastsi128_si256(
        _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sm.scales))));
    const auto scale = [&](int j) {
      return _mm256_shuffle_epi8(
          sc, _mm256_set1_epi16(static_cast<int16_t>(((2 * j + 1) << 8) | 2 * j)));
    };
    __m256i qh = _mm256_setzero_si256();
    if constexpr (kQ5) qh = load256(w.qh);
    __m256i sums = _mm256_setzero_si256();
    for (int c = 0; c < 4; ++c) {
      // Byte l of chunk c: element 64c + l (low nibble, sub-block 2c), 64c + 32 + l (high); the
      // fifth bit of sub-block j (element 32j + l) is bit j of qh[l].
      const __m256i q = load256(w.qs + 32 * c);
      __m256i lo = _mm256_and_si256(q, low4);
      __m256i hi = _mm256_and_si256(_mm256_srli_epi16(q, 4), low4);
      if constexpr (kQ5) {
        lo = _mm256_or_si256(lo, quant_tile::move_bit<Vec256>(qh, 2 * c, 4));
        hi = _mm256_or_si256(hi, quant_tile::move_bit<Vec256>(qh, 2 * c + 1, 4));
      }
      // Pair sums of u5 · s8 products fit int16 (2 · 31 · 128 < 2^15).
      const __m256i p_lo = _mm256_maddubs_epi16(lo, load256(x[b].qs + 64 * c));
      const __m256i p_hi = _mm256_maddubs_epi16(hi, load256(x[b].qs + 64 * c + 32));
      sums = _mm256_add_epi32(sums, _mm256_madd_epi16(p_lo, scale(2 * c)));
      sums = _mm256_add_epi32(sums, _mm256_madd_epi16(p_hi, scale(2 * c + 1)));
    }
    p.sums = sums;
    const __m128i mins = _mm_cvtepu8_epi16(_mm_cvtsi64_si128(static_cast<int64_t>(sm.mins)));
    p.summins = _mm_madd_epi16(mins, xp.bsum_pairs);
    p.d = w.d;
    p.dmin = w.dmin;
  }

  static void block(const Partial (&p)[8], const Act& x, int64_t b, __m256* acc) {
    const __m256i isum = fold_8_rows([&](int r) { return p[r].sums; });
    alignas(32) __m128i mins[8];
    uint16_t d_bits[8], dmin_bits[8];
    for (int r = 0; r < 8; ++r) {
      mins[r] = p[r].summins;
      d_bits[r] = p[r].d;
      dmin_bits[r] = p[r].dmin;
    }
    const __m256i summins = fold_8_quads(mins);
    const __m256 dx = _mm256_set1_ps(x[b].d);
    const __m256 pos =
        _mm256_mul_ps(_mm256_mul_ps(f16_of_rows(d_bits), dx), _mm256_cvtepi32_ps(isum));
    const __m256 neg =
        _mm256_mul_ps(_mm256_mul_ps(f16_of_rows(dmin_bits), dx), _mm256_cvtepi32_ps(summins));
    acc[0] = _mm256_add_ps(acc[0], _mm256_sub_ps(pos, neg));
  }
};

// ---- Q8_0 × Q8_0, Q4_1 / Q5_1 × Q8_1 ----

// As ref vec_dot_q8_0_q8_0 / q4_1 / q5_1: per block, the integer sums of elements 4l..4l+3 feed
// 8 float accumulators by fma(d_w d_x, sum, acc_l) (Q4_1 / Q5_1: m_w s_x summed in a ninth); the
// result is the tile's (quant_tile_impl.h KindQ8_0 / KindQ32::finish). The row sums' dword l is
// already sum l, so 8 rows are transposed instead of folded. Q8_0 uses |w| × sign(x, w).
template <class B>
struct GemvLanes {
  using Block = B;
  static constexpr bool kMin = !std::is_same_v<B, BlockQ8_0>;
  using Act = std::conditional_t<kMin, const BlockQ8_1*, ActQ32>;
  using XPrep = NoPrep;
  static constexpr int kBlock = 32;
  static constexpr int64_t kChunk = 32;  // 1088 / 640 / 768 bytes of a row per run
  static constexpr int kAccs = kMin ? 9 : 8;

  struct Partial {
    __m256i sums;  // dword l: Σ q x over elements 4l..4l+3
    uint16_t d, m;
  };

  static XPrep prep(const Act&, int64_t) { return {}; }

  static const auto& xblock(const Act& a, int64_t b) {
    if constexpr (kMin) {
      return a[b];
    } else {
      return a.x[b];
    }
  }

  static void row(const Block& w, const Act& a, int64_t b, XPrep, Partial& p) {
    const __m256i x = load256(xblock(a, b).qs);
    if constexpr (kMin) {
      p.sums = dot_u8s8(q32_quants(w), x);
      p.m = w.m;
    } else {
      const __m256i q = load256(w.qs);
      p.sums = dot_u8s8(_mm256_sign_epi8(q, q), _mm256_sign_epi8(x, q));
    }
    p.d = w.d;
  }

  static void block(const Partial (&p)[8], const Act& a, int64_t b, __m256* acc) {
    // sums[l] lane r: dword l of row r (the tile's transpose, from the stack).
    Vec256::Group rows;
    for (int r = 0; r < 8; ++r) rows.row[r] = reinterpret_cast<const uint8_t*>(&p[r].sums);
    __m256i sums[8];
    Vec256::transpose32(rows, 0, sums);
    uint16_t d_bits[8];
    for (int r = 0; r < 8; ++r) d_bits[r] = p[r].d;
    const auto& x = xblock(a, b);
    if constexpr (kMin) {
      uint16_t m_bits[8];
      for (int r = 0; r < 8; ++r) m_bits[r] = p[r].m;
      acc[8] =
          _mm256_add_ps(acc[8], _mm256_mul_ps(f16_of_rows(m_bits), _mm256_set1_ps(_cvtsh_ss(x.s))));
    }
    const __m256 d = _mm256_mul_ps(f16_of_rows(d_bits), _mm256_set1_ps(_cvtsh_ss(x.d)));
    for (int l = 0; l < 8; ++l) acc[l] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(sums[l]), acc[l]);
  }

  static __m256 finish(const __m256* acc) {
    if constexpr (kMin) {
      return quant_tile::KindQ32<Vec256, Block, kFifthBit<Block>, true>::finish(acc);
    } else {
      return quant_tile::KindQ8_0<Vec256>::finish(acc);
    }
  }
};

// ---- Q2_K, Q3_K, Q6_K × Q8_K: sub-blocks of 16 ----

// q[k] for k = 0..3: the quants of elements 128h + 32k + l (l < 32) as u8, sub-blocks 8h + 2k
// (l < 16) and 8h + 2k + 1 in the two 128-bit lanes: the layout the three types share.
inline void k16_quants(const BlockQ6K& w, int h, __m256i q[4]) {
  // Low 4 bits from ql[64h + l + 32 (k & 1)] (high nibble for k >= 2), bits 4-5 from bits
  // 2k..2k+1 of qh[32h + l].
  const __m256i low4 = _mm256_set1_epi8(0x0f);
  const __m256i top2 = _mm256_set1_epi8(0x30);
  const __m256i ql0 = load256(w.ql + 64 * h);
  const __m256i ql1 = load256(w.ql + 64 * h + 32);
  const __m256i qh = load256(w.qh + 32 * h);
  q[0] = _mm256_or_si256(_mm256_and_si256(ql0, low4),
                         _mm256_and_si256(_mm256_slli_epi16(qh, 4), top2));
  q[1] = _mm256_or_si256(_mm256_and_si256(ql1, low4),
                         _mm256_and_si256(_mm256_slli_epi16(qh, 2), top2));
  q[2] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql0, 4), low4),
                         _mm256_and_si256(qh, top2));
  q[3] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(ql1, 4), low4),
                         _mm256_and_si256(_mm256_srli_epi16(qh, 2), top2));
}

inline void k16_quants(const BlockQ3K& w, int h, __m256i q[4]) {
  // Low 2 bits: bits 2k..2k+1 of qs[32h + l]; the third: bit 4h + k of hmask[l]. 0..7 here,
  // the level is that minus 4 (applied through the bsums).
  const __m256i qs = load256(w.qs + 32 * h);
  const __m256i hm = load256(w.hmask);
  for (int k = 0; k < 4; ++k) {
    q[k] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), _mm256_set1_epi8(3)),
                           quant_tile::move_bit<Vec256>(hm, 4 * h + k, 2));
  }
}

inline void k16_quants(const BlockQ2K& w, int h, __m256i q[4]) {
  // Bits 2k..2k+1 of qs[32h + l].
  const __m256i qs = load256(w.qs + 32 * h);
  for (int k = 0; k < 4; ++k) {
    q[k] = _mm256_and_si256(_mm256_srli_epi16(qs, 2 * k), _mm256_set1_epi8(3));
  }
}

// Q3_K (ref vec_dot_q3_K_q8_K): isum = Σ_j sc_j ((u_j - 4) · x_j), the offset applied through
// the bsums; acc + (d dx) isum. Q2_K (ref vec_dot_q2_K_q8_K): isum = Σ_j sc_j (q_j · x_j),
// summins = Σ_j m_j bsums_j; acc + ((dx d) isum - (dx dmin) summins). Q6_K (ref
// vec_dot_q6_K_q8_K, llama.cpp's x86 order): a row's 8 partial sums are that dot's 8 integer
// lanes already (dword l: elements 4l..4l+3 of every 32-element group, less the -32 offset of
// sub-blocks 2l and 2l + 1), so 8 rows are transposed instead of folded and each lane feeds its
// own accumulator by fma(d dx, lane, acc_l); the result is the tile's (KindQ6K::finish).
template <class B>
struct GemvK16 {
  using Block = B;
  using Act = const BlockQ8K*;
  using XPrep = NoPrep;
  static constexpr bool kQ2 = std::is_same_v<B, BlockQ2K>;
  static constexpr bool kQ6 = std::is_same_v<B, BlockQ6K>;
  static constexpr int kBlock = kQKK;
  static constexpr int64_t kChunk = 8;  // 1680 / 880 / 672 bytes of a row per run
  static constexpr int kAccs = kQ6 ? 8 : 1;

  struct Partial {
    __m256i sums;     // lanes sum to isum (Q6_K: lane l is the dot's lane l)
    __m256i summins;  // Q2_K: lanes sum to summins
    uint16_t d, dmin;
  };

  static XPrep prep(const Act&, int64_t) { return {}; }

  static void row(const Block& w, const Act& x, int64_t b, XPrep, Partial& p) {
    const __m256i sc16 = k16_scales(w);
    __m256i sums = _mm256_setzero_si256();
    for (int h = 0; h < 2; ++h) {
      __m256i q[4];
      k16_quants(w, h, q);
      // This half's 8 scales in both 128-bit lanes.
      // (Two literal immediates: at -O2 a computed one is not folded to the constant the
      // instruction needs.)
      const __m256i sch =
          h == 0 ? _mm256_permute4x64_epi64(sc16, 0x44) : _mm256_permute4x64_epi64(sc16, 0xee);
      for (int k = 0; k < 4; ++k) {
        // int16 2k in lane 0, 2k + 1 in lane 1, everywhere.
        const __m256i pick =
            _mm256_set_m128i(_mm_set1_epi16(static_cast<int16_t>(((4 * k + 3) << 8) | (4 * k + 2))),
                             _mm_set1_epi16(static_cast<int16_t>(((4 * k + 1) << 8) | 4 * k)));
        // Pair sums of u6 · s8 products fit int16 (2 · 63 · 128 < 2^15).
        const __m256i pairs = _mm256_maddubs_epi16(q[k], load256(x[b].qs + 128 * h + 32 * k));
        sums = _mm256_add_epi32(sums, _mm256_madd_epi16(pairs, _mm256_shuffle_epi8(sch, pick)));
      }
    }
    const __m256i bsums = load256(x[b].bsums);
    if constexpr (kQ2) {
      const __m256i mins = _mm256_cvtepu8_epi16(q2k_scales<true>(w));
      p.sums = sums;
      p.summins = _mm256_madd_epi16(mins, bsums);
      p.dmin = w.dmin;
    } else {
      constexpr int kShift = std::is_same_v<B, BlockQ6K> ? 5 : 2;  // offset 32 / 4
      p.sums = _mm256_sub_epi32(sums, _mm256_slli_epi32(_mm256_madd_epi16(sc16, bsums), kShift));
    }
    p.d = w.d;
  }

  static void block(const Partial (&p)[8], const Act& x, int64_t b, __m256* acc) {
    uint16_t d_bits[8];
    for (int r = 0; r < 8; ++r) d_bits[r] = p[r].d;
    const __m256 dx = _mm256_set1_ps(x[b].d);
    if constexpr (kQ6) {
      // lanes[l] lane r: lane l of row r (the tile's transpose, from the stack).
      Vec256::Group rows;
      for (int r = 0; r < 8; ++r) rows.row[r] = reinterpret_cast<const uint8_t*>(&p[r].sums);
      __m256i lanes[8];
      Vec256::transpose32(rows, 0, lanes);
      const __m256 d = _mm256_mul_ps(f16_of_rows(d_bits), dx);
      for (int l = 0; l < 8; ++l) acc[l] = _mm256_fmadd_ps(d, _mm256_cvtepi32_ps(lanes[l]), acc[l]);
      return;
    }
    const __m256i isum = fold_8_rows([&](int r) { return p[r].sums; });
    if constexpr (kQ2) {
      const __m256i summins = fold_8_rows([&](int r) { return p[r].summins; });
      uint16_t dmin_bits[8];
      for (int r = 0; r < 8; ++r) dmin_bits[r] = p[r].dmin;
      const __m256 pos =
          _mm256_mul_ps(_mm256_mul_ps(dx, f16_of_rows(d_bits)), _mm256_cvtepi32_ps(isum));
      const __m256 neg =
          _mm256_mul_ps(_mm256_mul_ps(dx, f16_of_rows(dmin_bits)), _mm256_cvtepi32_ps(summins));
      acc[0] = _mm256_add_ps(acc[0], _mm256_sub_ps(pos, neg));
    } else {
      acc[0] = _mm256_add_ps(
          acc[0], _mm256_mul_ps(_mm256_mul_ps(f16_of_rows(d_bits), dx), _mm256_cvtepi32_ps(isum)));
    }
  }

  static __m256 finish(const __m256* acc) {
    if constexpr (kQ6) {
      return quant_tile::hsum8<Vec256>(acc);
    } else {
      return acc[0];
    }
  }
};

}  // namespace
}  // namespace minfer::kernels::avx2
