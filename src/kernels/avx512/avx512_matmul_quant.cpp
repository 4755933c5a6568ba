// AVX-512 VNNI matmul tiles for Q8_0, Q4_K and Q6_K weights.
//
// Layout: rows in lanes. For a group of 16 weight rows, each block is transposed once into
// vectors whose lane r holds 4 consecutive quants of row r; a token's 4 matching activation
// bytes are broadcast to all lanes, and vpdpbusd (u8 × s8, 4 products per lane) accumulates
// 16 rows' integer dot products at once. No horizontal sums are needed: the float accumulator's
// lane r is output row r. The transposed blocks of a chunk are kept on the stack and reused for
// every token of the tile (GEMM); a single token (GEMV) runs the same code.
//
// Every float step per (row, token) is the reference's (kernels/ref/ref_dot*.cpp) in the same
// order, with separate multiplies and adds (no fma: the pragma below stops GCC from contracting
// them, which it does by default for C++ when FMA is enabled), and the integer sums are exact,
// so these tiles give the reference's result bit for bit, at any tile shape, thread count or
// token count.
//
// vpdpbusd needs one unsigned operand: Q4_K / Q6_K quants are unsigned already (Q6_K's
// offset of 32 comes back through the activations' per-16 sums, bsums); Q8_0 weights are
// stored +128 (xor 0x80) and the excess 128·Σx is removed with the activation block sums that
// the matmul driver appends to each Q8_0 row (kernel_table.h).

// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC optimize("fp-contract=off")

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/avx512/avx512_kernels.h"
#include "kernels/avx512/avx512_math.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx512 {
namespace {

constexpr int kGroupRows = 16;   // one weight row per lane
constexpr int kTokGroup = 4;     // tokens whose accumulators live in registers together
constexpr int64_t kMaxTok = 64;  // tokens per pass over a row group (state on the stack)

uint32_t load_u32(const void* p) {
  uint32_t v;
  std::memcpy(&v, p, sizeof(v));
  return v;
}

__m512i bcast_u32(const void* p) {
  return _mm512_set1_epi32(static_cast<int>(load_u32(p)));
}

// Up to 16 weight rows; missing rows repeat the last real one so every load stays inside the
// weights, and their lanes are never stored.
struct RowGroup {
  const uint8_t* row[kGroupRows];
  __m512i offsets;  // byte offset of each row from row[0] (for gathers)
  __mmask16 store_mask;
};

RowGroup make_group(const uint8_t* w, size_t w_row_bytes, int64_t n_rows) {
  RowGroup g;
  alignas(64) int32_t offsets[kGroupRows];
  for (int r = 0; r < kGroupRows; ++r) {
    const int64_t rr = r < n_rows ? r : n_rows - 1;
    g.row[r] = w + rr * w_row_bytes;
    offsets[r] = static_cast<int32_t>(rr * static_cast<int64_t>(w_row_bytes));
  }
  g.offsets = _mm512_load_si512(offsets);
  g.store_mask = lane_mask(n_rows);
  return g;
}

// out[j] lane r = bytes 4j..4j+3 of the 32 bytes at row[r] + off (a 16 × 8 dword transpose:
// rows r and r + 8 share a vector, then two unpack rounds and a cross-lane permute).
void transpose_rows(const RowGroup& g, size_t off, __m512i out[8]) {
  __m512i a[8];
  for (int i = 0; i < 8; ++i) {
    const __m256i lo = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.row[i] + off));
    const __m256i hi = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(g.row[i + 8] + off));
    a[i] = _mm512_inserti64x4(_mm512_castsi256_si512(lo), hi, 1);
  }
  __m512i t[8];
  for (int i = 0; i < 4; ++i) {
    t[2 * i] = _mm512_unpacklo_epi32(a[2 * i], a[2 * i + 1]);
    t[2 * i + 1] = _mm512_unpackhi_epi32(a[2 * i], a[2 * i + 1]);
  }
  // u[j] (rows 0-3 / 8-11) and v[j] (rows 4-7 / 12-15): per 128-bit lane L, dword j (L even)
  // or j + 4 (L odd) of four rows.
  const __m512i u[4] = {_mm512_unpacklo_epi64(t[0], t[2]), _mm512_unpackhi_epi64(t[0], t[2]),
                        _mm512_unpacklo_epi64(t[1], t[3]), _mm512_unpackhi_epi64(t[1], t[3])};
  const __m512i v[4] = {_mm512_unpacklo_epi64(t[4], t[6]), _mm512_unpackhi_epi64(t[4], t[6]),
                        _mm512_unpacklo_epi64(t[5], t[7]), _mm512_unpackhi_epi64(t[5], t[7])};
  const __m512i even = _mm512_setr_epi64(0, 1, 8, 9, 4, 5, 12, 13);
  const __m512i odd = _mm512_setr_epi64(2, 3, 10, 11, 6, 7, 14, 15);
  for (int j = 0; j < 4; ++j) {
    out[j] = _mm512_permutex2var_epi64(u[j], even, v[j]);
    out[j + 4] = _mm512_permutex2var_epi64(u[j], odd, v[j]);
  }
}

// The f16 at row[r] + off (low half) or + off + 2 (high half) for each row, as floats.
__m512 gather_f16(const RowGroup& g, size_t off, bool high) {
  __m512i v = _mm512_i32gather_epi32(g.offsets, g.row[0] + off, 1);
  if (high) v = _mm512_srli_epi32(v, 16);
  return _mm512_cvtph_ps(_mm512_cvtepi32_epi16(v));
}

// ---- Q8_0 × Q8_0 ----

struct PackedQ8_0 {
  __m512i q[8];  // [dword j] lanes = rows: weights + 128 as u8
  __m512 d;      // lanes = rows
};

struct KindQ8_0 {
  using Packed = PackedQ8_0;
  static constexpr int kBlock = kQK8_0;
  static constexpr int64_t kChunk = 32;  // blocks packed at a time (18 KB)

  static void pack(const RowGroup& g, int64_t b, Packed& p) {
    const size_t off = static_cast<size_t>(b) * sizeof(BlockQ8_0);
    transpose_rows(g, off + offsetof(BlockQ8_0, qs), p.q);
    const __m512i flip = _mm512_set1_epi8(static_cast<char>(0x80));
    for (int j = 0; j < 8; ++j) p.q[j] = _mm512_xor_si512(p.q[j], flip);
    p.d = gather_f16(g, off, false);
  }

  // Activation row: BlockQ8_0[n_blocks], then int32 block sums at the next 4-byte boundary.
  struct Act {
    const BlockQ8_0* blocks;
    const int32_t* sums;
  };
  static Act act(const uint8_t* row, int64_t n_blocks) {
    const size_t sums_off = (static_cast<size_t>(n_blocks) * sizeof(BlockQ8_0) + 3) / 4 * 4;
    return {reinterpret_cast<const BlockQ8_0*>(row),
            reinterpret_cast<const int32_t*>(row + sums_off)};
  }

  // acc + Σ_b (float)sumi_b * (d_w d_x), as ref vec_dot_q8_0_q8_0.
  static __m512 block(const Packed& p, const Act& a, int64_t b, __m512 acc) {
    const BlockQ8_0& x = a.blocks[b];
    __m512i s = _mm512_set1_epi32(-128 * a.sums[b]);
    for (int j = 0; j < 8; ++j) s = _mm512_dpbusd_epi32(s, p.q[j], bcast_u32(x.qs + 4 * j));
    const __m512 scale = _mm512_mul_ps(p.d, _mm512_set1_ps(_cvtsh_ss(x.d)));
    return _mm512_add_ps(acc, _mm512_mul_ps(_mm512_cvtepi32_ps(s), scale));
  }
};

// ---- Q4_K × Q8_K ----

struct PackedQ4K {
  __m512i q[8][8];  // [sub-block j][dword] lanes = rows: 4-bit quants as u8
  __m512i sc[8];    // [j] 6-bit scale
  __m512i mins[8];  // [j] 6-bit min in both int16 halves
  __m512 d, dmin;
};

struct KindQ4K {
  using Packed = PackedQ4K;
  static constexpr int kBlock = kQKK;
  static constexpr int64_t kChunk = 4;  // 21 KB

  static void pack(const RowGroup& g, int64_t b, Packed& p) {
    const size_t off = static_cast<size_t>(b) * sizeof(BlockQ4K);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int c = 0; c < 4; ++c) {
      // Byte l of 32-byte chunk c: element 64c + l (low nibble), 64c + 32 + l (high).
      __m512i packed[8];
      transpose_rows(g, off + offsetof(BlockQ4K, qs) + 32 * c, packed);
      for (int i = 0; i < 8; ++i) {
        p.q[2 * c][i] = _mm512_and_si512(packed[i], low4);
        p.q[2 * c + 1][i] = _mm512_and_si512(_mm512_srli_epi16(packed[i], 4), low4);
      }
    }
    alignas(64) int32_t sc[8][kGroupRows];
    alignas(64) int32_t mins[8][kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) {
      const uint8_t* s = g.row[r] + off + offsetof(BlockQ4K, scales);
      for (int j = 0; j < 8; ++j) {
        int scale, min;
        if (j < 4) {
          scale = s[j] & 63;
          min = s[j + 4] & 63;
        } else {
          scale = (s[j + 4] & 0xf) | ((s[j - 4] >> 6) << 4);
          min = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
        }
        sc[j][r] = scale;
        mins[j][r] = min | (min << 16);
      }
    }
    for (int j = 0; j < 8; ++j) {
      p.sc[j] = _mm512_load_si512(sc[j]);
      p.mins[j] = _mm512_load_si512(mins[j]);
    }
    p.d = gather_f16(g, off, false);
    p.dmin = gather_f16(g, off, true);
  }

  struct Act {
    const BlockQ8K* blocks;
  };
  static Act act(const uint8_t* row, int64_t) { return {reinterpret_cast<const BlockQ8K*>(row)}; }

  // As ref vec_dot_q4_K_q8_K: isum = Σ_j sc_j · (q_j · x_j), summins = Σ_j m_j · (bsums of
  // sub-block j), acc + ((d dx) isum - (dmin dx) summins).
  static __m512 block(const Packed& p, const Act& a, int64_t b, __m512 acc) {
    const BlockQ8K& x = a.blocks[b];
    __m512i isum = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      __m512i s = _mm512_setzero_si512();
      for (int i = 0; i < 8; ++i) {
        s = _mm512_dpbusd_epi32(s, p.q[j][i], bcast_u32(x.qs + 32 * j + 4 * i));
      }
      isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(s, p.sc[j]));
    }
    __m512i summins = _mm512_setzero_si512();
    for (int j = 0; j < 8; ++j) {
      summins = _mm512_dpwssd_epi32(summins, p.mins[j], bcast_u32(x.bsums + 2 * j));
    }
    const __m512 dx = _mm512_set1_ps(x.d);
    const __m512 pos = _mm512_mul_ps(_mm512_mul_ps(p.d, dx), _mm512_cvtepi32_ps(isum));
    const __m512 neg = _mm512_mul_ps(_mm512_mul_ps(p.dmin, dx), _mm512_cvtepi32_ps(summins));
    return _mm512_add_ps(acc, _mm512_sub_ps(pos, neg));
  }
};

// ---- Q6_K × Q8_K ----

struct PackedQ6K {
  __m512i q[16][4];    // [sub-block of 16][dword] lanes = rows: 6-bit quants as u8
  __m512i sc[16];      // [sub-block] signed 8-bit scale
  __m512i sc_pair[8];  // [i] scales 2i, 2i + 1 as int16 halves
  __m512 d;
};

struct KindQ6K {
  using Packed = PackedQ6K;
  static constexpr int kBlock = kQKK;
  static constexpr int64_t kChunk = 4;  // 23 KB

  static void pack(const RowGroup& g, int64_t b, Packed& p) {
    const size_t off = static_cast<size_t>(b) * sizeof(BlockQ6K);
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    const __m512i top2 = _mm512_set1_epi8(0x30);
    for (int h = 0; h < 2; ++h) {
      __m512i ql0[8], ql1[8], qh[8];
      transpose_rows(g, off + offsetof(BlockQ6K, ql) + 64 * h, ql0);
      transpose_rows(g, off + offsetof(BlockQ6K, ql) + 64 * h + 32, ql1);
      transpose_rows(g, off + offsetof(BlockQ6K, qh) + 32 * h, qh);
      // Element 128h + 32k + l: low 4 bits from ql[l + 32 (k & 1)] (high nibble for k >= 2),
      // bits 4-5 from bits 2k..2k+1 of qh[l]. Dwords 0-3 are sub-block 8h + 2k, 4-7 the next.
      for (int i = 0; i < 8; ++i) {
        const __m512i q[4] = {_mm512_or_si512(_mm512_and_si512(ql0[i], low4),
                                              _mm512_and_si512(_mm512_slli_epi16(qh[i], 4), top2)),
                              _mm512_or_si512(_mm512_and_si512(ql1[i], low4),
                                              _mm512_and_si512(_mm512_slli_epi16(qh[i], 2), top2)),
                              _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql0[i], 4), low4),
                                              _mm512_and_si512(qh[i], top2)),
                              _mm512_or_si512(_mm512_and_si512(_mm512_srli_epi16(ql1[i], 4), low4),
                                              _mm512_and_si512(_mm512_srli_epi16(qh[i], 2), top2))};
        for (int k = 0; k < 4; ++k) p.q[8 * h + 2 * k + i / 4][i % 4] = q[k];
      }
    }
    alignas(64) int32_t sc[16][kGroupRows];
    alignas(64) int32_t pairs[8][kGroupRows];
    for (int r = 0; r < kGroupRows; ++r) {
      const auto* s = reinterpret_cast<const int8_t*>(g.row[r] + off + offsetof(BlockQ6K, scales));
      for (int j = 0; j < 16; ++j) sc[j][r] = s[j];
      for (int i = 0; i < 8; ++i) {
        pairs[i][r] = static_cast<int32_t>(
            static_cast<uint16_t>(s[2 * i]) |
            (static_cast<uint32_t>(static_cast<uint16_t>(s[2 * i + 1])) << 16));
      }
    }
    for (int j = 0; j < 16; ++j) p.sc[j] = _mm512_load_si512(sc[j]);
    for (int i = 0; i < 8; ++i) p.sc_pair[i] = _mm512_load_si512(pairs[i]);
    // d is the last 2 bytes of the block: gather the 4 bytes ending there (high half).
    p.d = gather_f16(g, off + offsetof(BlockQ6K, d) - 2, true);
  }

  struct Act {
    const BlockQ8K* blocks;
  };
  static Act act(const uint8_t* row, int64_t) { return {reinterpret_cast<const BlockQ8K*>(row)}; }

  // As ref vec_dot_q6_K_q8_K: isum = Σ_j sc_j · ((q_j - 32) · x_j), with the -32 applied as
  // -32 · Σ_j sc_j bsums_j; acc + (d dx) isum.
  static __m512 block(const Packed& p, const Act& a, int64_t b, __m512 acc) {
    const BlockQ8K& x = a.blocks[b];
    __m512i isum = _mm512_setzero_si512();
    for (int j = 0; j < 16; ++j) {
      const int8_t* xq = x.qs + 128 * (j / 8) + 32 * ((j % 8) / 2) + 16 * (j % 2);
      __m512i s = _mm512_setzero_si512();
      for (int i = 0; i < 4; ++i) s = _mm512_dpbusd_epi32(s, p.q[j][i], bcast_u32(xq + 4 * i));
      isum = _mm512_add_epi32(isum, _mm512_mullo_epi32(s, p.sc[j]));
    }
    __m512i offset = _mm512_setzero_si512();
    for (int i = 0; i < 8; ++i) {
      offset = _mm512_dpwssd_epi32(offset, p.sc_pair[i], bcast_u32(x.bsums + 2 * i));
    }
    isum = _mm512_sub_epi32(isum, _mm512_slli_epi32(offset, 5));
    const __m512 dx = _mm512_set1_ps(x.d);
    return _mm512_add_ps(acc, _mm512_mul_ps(_mm512_mul_ps(p.d, dx), _mm512_cvtepi32_ps(isum)));
  }
};

// ---- the tile loop shared by the kinds ----

// Runs blocks [b0, b0 + nbc) for T tokens, continuing from / saving to state.
template <typename K, int T>
void run_tokens(const typename K::Packed* packed, int64_t b0, int64_t nbc, const uint8_t* act,
                size_t act_row_bytes, int64_t n_blocks, float* state /* [T][16] */) {
  typename K::Act a[T];
  __m512 acc[T];
  for (int t = 0; t < T; ++t) {
    a[t] = K::act(act + t * act_row_bytes, n_blocks);
    acc[t] = _mm512_load_ps(state + 16 * t);
  }
  for (int64_t b = 0; b < nbc; ++b) {
    for (int t = 0; t < T; ++t) acc[t] = K::block(packed[b], a[t], b0 + b, acc[t]);
  }
  for (int t = 0; t < T; ++t) _mm512_store_ps(state + 16 * t, acc[t]);
}

template <typename K>
void quant_tile(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, const void* act,
                size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  using RunFn = void (*)(const typename K::Packed*, int64_t, int64_t, const uint8_t*, size_t,
                         int64_t, float*);
  static constexpr RunFn kRun[kTokGroup] = {run_tokens<K, 1>, run_tokens<K, 2>, run_tokens<K, 3>,
                                            run_tokens<K, 4>};
  const int64_t n_blocks = n_in / K::kBlock;
  const auto* w_bytes = static_cast<const uint8_t*>(w);
  const auto* a_bytes = static_cast<const uint8_t*>(act);
  alignas(64) typename K::Packed packed[K::kChunk];
  alignas(64) float state[kMaxTok][kGroupRows];
  for (int64_t r0 = 0; r0 < n_rows; r0 += kGroupRows) {
    const int64_t rows = n_rows - r0 < kGroupRows ? n_rows - r0 : kGroupRows;
    const RowGroup g = make_group(w_bytes + r0 * w_row_bytes, w_row_bytes, rows);
    for (int64_t t0 = 0; t0 < n_tok; t0 += kMaxTok) {
      const int64_t nt = n_tok - t0 < kMaxTok ? n_tok - t0 : kMaxTok;
      for (int64_t t = 0; t < nt; ++t) _mm512_store_ps(state[t], _mm512_setzero_ps());
      for (int64_t b0 = 0; b0 < n_blocks; b0 += K::kChunk) {
        const int64_t nbc = n_blocks - b0 < K::kChunk ? n_blocks - b0 : K::kChunk;
        for (int64_t b = 0; b < nbc; ++b) K::pack(g, b0 + b, packed[b]);
        for (int64_t t = 0; t < nt; t += kTokGroup) {
          const int64_t ng = nt - t < kTokGroup ? nt - t : kTokGroup;
          kRun[ng - 1](packed, b0, nbc, a_bytes + (t0 + t) * act_row_bytes, act_row_bytes, n_blocks,
                       state[t]);
        }
      }
      for (int64_t t = 0; t < nt; ++t) {
        _mm512_mask_storeu_ps(y + (t0 + t) * y_stride + r0, g.store_mask, _mm512_load_ps(state[t]));
      }
    }
  }
}

}  // namespace

void matmul_tile_q8_0(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride) {
  quant_tile<KindQ8_0>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

void matmul_tile_q4_K(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride) {
  quant_tile<KindQ4K>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

void matmul_tile_q6_K(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                      const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                      int64_t y_stride) {
  quant_tile<KindQ6K>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y, y_stride);
}

}  // namespace minfer::kernels::avx512
