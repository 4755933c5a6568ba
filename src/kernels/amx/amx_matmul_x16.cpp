// AMX-INT8 matmul tiles for Q4_K and Q5_K weights in the x16 row-interleaved layout
// (kernels/interleave.h).
//
// The reference (ref dot_k4_superblock) takes per 32-element sub-block j the exact integer
// Σ q · x (q the 4- or 5-bit level, unsigned), then isum = Σ_j sc_j sums_j (sc_j 6 bits), the
// mins from the bsums and the float steps. isum is an exact integer however it is summed, so the
// tiles make it whole: with sc_j = 8 hi_j + lo_j, isum = 8 Σ x · (q hi) + Σ x · (q lo) over the
// block, q hi and q lo bytes (at most 31 · 7 = 217) in the VNNI form of the quants as the avx512
// tiles unpack them (KindK4::pack_from on the x16 block: q[j] is 8 dwords × 16 rows × 4 bytes).
// For 16 tokens × 16 rows a block is 8 TDPBSUD with K = 64 (two sub-blocks; A = the tokens'
// activation bytes, signed, read in place), into two int32 tiles. The avx512 kind's own
// finish_isum then does the rest for each token: the same integers and float steps, the same bits.
//
// Q8_0 and Q6_K stay on avx512's kernels: their reference (llama.cpp's x86 order) keeps an
// integer per 4 quants, so a tile multiply would have K = 4, 1/16 of its work, and the tile unit
// alone took as long as the whole avx512 Q8_0 tile (measured; see the commit that removed it).

// First: the reference's separate multiplies and adds for all that follows.
#include "kernels/fp_contract_off.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <cstring>

#include "kernels/avx512/avx512_interleaved.h"
#include "kernels/avx512/avx512_quant_vec.h"
#include "kernels/avx512/avx512_x16_source.h"
#include "kernels/interleave.h"
#include "kernels/quant_tile_impl.h"
#include "kernels/x16_tile_impl.h"
#include "quant/blocks.h"

namespace minfer::kernels::amx {
namespace {

namespace qt = quant_tile;
using V = avx512::Vec512;

constexpr int kTok = 16;  // tokens of a tile: A's and C's rows

// A tile configuration (Intel SDM vol. 1 §18.2, palette 1): each tile's rows and bytes a row.
// Four dot tiles in flight, each one's operands loaded while the one before multiplies.
struct alignas(64) TileConfig {
  uint8_t palette_id = 0;
  uint8_t start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

// tmm0..tmm3: int32 C tiles, 16 tokens × 16 rows; tmm4, tmm5 the activations of two sub-blocks
// (16 tokens × 64 bytes); tmm6, tmm7 their scaled quants (16 rows: dwords, × 16 rows × 4 bytes).
constexpr TileConfig make_config() {
  TileConfig c;
  c.palette_id = 1;
  for (int i = 0; i < 4; ++i) {
    c.rows[i] = kTok;
    c.colsb[i] = 64;
  }
  for (int i = 4; i < 6; ++i) {
    c.rows[i] = kTok;
    c.colsb[i] = 64;
    c.rows[2 + i] = 16;
    c.colsb[2 + i] = 64;
  }
  return c;
}

constexpr TileConfig kConfig = make_config();
static_assert(sizeof(TileConfig) == 64, "LDTILECFG reads 64 bytes");

// Tile registers have the shapes of the thread's last configuration: each call loads this one
// unless the thread's is already it (read back: another library in the process, one that uses
// AMX itself, may have configured tiles of its own on this thread since).
void configure_thread() {
  alignas(64) TileConfig current;
  _tile_storeconfig(&current);
  if (std::memcmp(&current, &kConfig, sizeof(TileConfig)) != 0) _tile_loadconfig(&kConfig);
}

template <class Block>
using KindK = x16_tile::KindOf<V, Block>;

constexpr int64_t kChunkK = 2;  // blocks unpacked at a time (about 13 KiB each)

// A block's quants with its scales folded in, for the tiles: sc_j = 8 hi_j + lo_j (6 bits: hi,
// lo < 8), hi[j] = q_j · hi_j and lo[j] = q_j · lo_j bytewise (at most 31 · 7 = 217: a byte), in
// q's VNNI form; the kind's Packed keeps mins, d and dmin. Then Σ_j sc_j (q_j · x_j) = 8 Σ x · hi
// + Σ x · lo over the whole block, two int32 per (row, token) instead of eight.
template <class Block>
struct ScaledK {
  __m512i hi[8][8];
  __m512i lo[8][8];
  typename KindK<Block>::Packed p;
};

template <class Block>
void scale_quants(ScaledK<Block>& s) {
  for (int j = 0; j < 8; ++j) {
    // Each 16-bit half of a lane times its scale part: the low byte's product stays below 256,
    // so nothing carries into the high byte's.
    const __m512i lo = _mm512_and_si512(s.p.sc[j], _mm512_set1_epi32(7));
    const __m512i hi = _mm512_srli_epi32(s.p.sc[j], 3);
    const __m512i lo_w = _mm512_or_si512(lo, _mm512_slli_epi32(lo, 16));
    const __m512i hi_w = _mm512_or_si512(hi, _mm512_slli_epi32(hi, 16));
    for (int i = 0; i < 8; ++i) {
      s.hi[j][i] = _mm512_mullo_epi16(s.p.q[j][i], hi_w);
      s.lo[j][i] = _mm512_mullo_epi16(s.p.q[j][i], lo_w);
    }
  }
}

// Block b's Σ x · hi (tmm0, tmm2) and Σ x · lo (tmm1, tmm3) for 16 tokens (act: the first one's
// row), and with kPair for the 16 after them too (tmm2, tmm3): dots[tile][hi / lo][t][r]. Each
// pair of sub-blocks is one K = 64 multiply.
template <class Block, bool kPair>
void k_dots(const ScaledK<Block>& s, const uint8_t* act, size_t act_row_bytes, int64_t b,
            int32_t* dots) {
  const auto stride = static_cast<long>(act_row_bytes);
  const uint8_t* x = act + static_cast<size_t>(b) * sizeof(BlockQ8K) + offsetof(BlockQ8K, qs);
  const uint8_t* x2 = x + kTok * act_row_bytes;
  _tile_zero(0);
  _tile_zero(1);
  if constexpr (kPair) {
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int j = 0; j < 8; j += 2) {
    _tile_loadd(4, x + 32 * j, stride);
    _tile_loadd(6, s.hi[j], 64);
    _tile_loadd(7, s.lo[j], 64);
    _tile_dpbsud(0, 4, 6);
    _tile_dpbsud(1, 4, 7);
    if constexpr (kPair) {
      _tile_loadd(5, x2 + 32 * j, stride);
      _tile_dpbsud(2, 5, 6);
      _tile_dpbsud(3, 5, 7);
    }
  }
  _tile_stored(0, dots, 64);
  _tile_stored(1, dots + kTok * 16, 64);
  if constexpr (kPair) {
    _tile_stored(2, dots + 2 * kTok * 16, 64);
    _tile_stored(3, dots + 3 * kTok * 16, 64);
  }
}

// state[t] = the kind's block step from isum = 8 hi + lo on, for n tokens (16 or 32).
template <class Block>
void k_finish(const ScaledK<Block>& s, const uint8_t* act, size_t act_row_bytes, int64_t b,
              const int32_t* dots, int n, float (*state)[16]) {
  using K = KindK<Block>;
  for (int t = 0; t < n; ++t) {
    const BlockQ8K& xb = reinterpret_cast<const BlockQ8K*>(act + t * act_row_bytes)[b];
    const int32_t* d = dots + (t / kTok) * 2 * kTok * 16 + (t % kTok) * 16;
    const __m512i isum = _mm512_add_epi32(_mm512_slli_epi32(_mm512_load_si512(d), 3),
                                          _mm512_load_si512(d + kTok * 16));
    _mm512_store_ps(state[t],
                    K::finish_isum(isum, s.p.mins, s.p.d, s.p.dmin, xb, _mm512_load_ps(state[t])));
  }
}

// n_tok: a multiple of 16. Per row group, qt::kMaxTok tokens a pass: a chunk of blocks is
// unpacked and scaled once and serves all of them, 32 tokens at a time (16 for the last odd
// tile).
template <class Block>
void k_tiles(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows, const uint8_t* act,
             size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  using K = KindK<Block>;
  configure_thread();
  const int64_t n_blocks = n_in / kQKK;
  alignas(64) ScaledK<Block> scaled[kChunkK];
  alignas(64) int32_t dots[4 * kTok * 16];
  alignas(64) float state[qt::kMaxTok][16];
  for (int64_t r0 = 0; r0 < n_rows; r0 += kInterleaveRows) {
    const uint8_t* group = w + static_cast<size_t>(r0) * w_row_bytes;
    for (int64_t t0 = 0; t0 < n_tok; t0 += qt::kMaxTok) {
      const int64_t nt = n_tok - t0 < qt::kMaxTok ? n_tok - t0 : qt::kMaxTok;
      for (int64_t t = 0; t < nt; ++t) _mm512_store_ps(state[t], _mm512_setzero_ps());
      for (int64_t b0 = 0; b0 < n_blocks; b0 += kChunkK) {
        const int64_t nb = n_blocks - b0 < kChunkK ? n_blocks - b0 : kChunkK;
        for (int64_t i = 0; i < nb; ++i) {
          const uint8_t* blk = group + static_cast<size_t>(b0 + i) * x16_tile::kUnitBytes<Block>;
          K::pack_from(avx512::X16Source{blk}, scaled[i].p);
          scale_quants(scaled[i]);
        }
        for (int64_t tt = 0; tt < nt; tt += 2 * kTok) {
          const uint8_t* a = act + static_cast<size_t>(t0 + tt) * act_row_bytes;
          const bool pair = nt - tt >= 2 * kTok;
          for (int64_t i = 0; i < nb; ++i) {
            if (pair) {
              k_dots<Block, true>(scaled[i], a, act_row_bytes, b0 + i, dots);
            } else {
              k_dots<Block, false>(scaled[i], a, act_row_bytes, b0 + i, dots);
            }
            k_finish(scaled[i], a, act_row_bytes, b0 + i, dots, pair ? 2 * kTok : kTok, state + tt);
          }
        }
      }
      for (int64_t t = 0; t < nt; ++t) {
        _mm512_storeu_ps(y + (t0 + t) * y_stride + r0, _mm512_load_ps(state[t]));
      }
    }
  }
}

}  // namespace

// The 16-token tiles on AMX, the rest (and calls of 16 tokens or fewer, where avx512's
// gemv_tokens keeps every accumulator in registers) on avx512's x16 kernel.
template <class Block>
void matmul_tile_x16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  const int64_t n_tiled = n_tok > kTok ? n_tok / kTok * kTok : 0;
  const auto* a = static_cast<const uint8_t*>(act);
  if (n_tiled > 0) {
    k_tiles<Block>(n_in, static_cast<const uint8_t*>(w), w_row_bytes, n_rows, a, act_row_bytes,
                   n_tiled, y, y_stride);
  }
  if (n_tok > n_tiled) {
    avx512::matmul_tile_x16<Block>(n_in, w, w_row_bytes, n_rows,
                                   a + static_cast<size_t>(n_tiled) * act_row_bytes, act_row_bytes,
                                   n_tok - n_tiled, y + n_tiled * y_stride, y_stride);
  }
}

template void matmul_tile_x16<BlockQ4K>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                        int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ5K>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                        int64_t, float*, int64_t);

}  // namespace minfer::kernels::amx
