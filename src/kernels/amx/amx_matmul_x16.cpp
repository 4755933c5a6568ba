// AMX-INT8 matmul tiles for Q4_K and Q5_K weights in the x16 row-interleaved layout
// (kernels/interleave.h).
//
// The reference (ref dot_k4_superblock) takes per 32-element sub-block j the exact integer
// Σ q · x (q the 4- or 5-bit level, unsigned), then isum = Σ_j sc_j sums_j, the mins from the
// bsums and the float steps. Sub-block j of a block, 16 tokens × 16 rows, is one TDPBSUD with
// K = 32: A = the 16 tokens' 32 activation bytes (signed, read in place), B = the unpacked quants
// of the 16 rows as the avx512 tiles pack them (KindK4::pack_from on the x16 block: q[j] is 8
// dwords × 16 rows × 4 bytes, the VNNI form). The dots then go through the avx512 kind's own
// finish_block for each token: the same integer and float steps, the same bits.
//
// Q8_0 and Q6_K stay on avx512's kernels: their reference (llama.cpp's x86 order) keeps an
// integer per 4 quants, so a tile multiply would have K = 4, 1/16 of its work, and the tile unit
// alone took as long as the whole avx512 Q8_0 tile (measured; see the commit that removed it).

// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
// Separate multiplies and adds, as the reference.
#if defined(__clang__)
#pragma clang fp contract(off)
#else
#pragma GCC optimize("fp-contract=off")
#endif

#include "kernels/amx/amx_kernels.h"

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

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

// tmm0..tmm3: int32 C tiles, 16 tokens × 16 rows; tmm4, tmm5 the activations of one sub-block
// (16 tokens × 32 bytes); tmm6, tmm7 its unpacked quants (8 rows: dwords, × 16 rows × 4 bytes).
constexpr TileConfig make_config() {
  TileConfig c;
  c.palette_id = 1;
  for (int i = 0; i < 4; ++i) {
    c.rows[i] = kTok;
    c.colsb[i] = 64;
  }
  for (int i = 4; i < 6; ++i) {
    c.rows[i] = kTok;
    c.colsb[i] = 32;
    c.rows[2 + i] = 8;
    c.colsb[2 + i] = 64;
  }
  return c;
}

constexpr TileConfig kConfig = make_config();

// Tile registers have the shapes of the thread's last configuration: every thread that runs
// the tiles (the caller's and each pool worker) loads this one once. Nothing else in the
// process configures tiles, so a flag is enough.
thread_local bool tls_configured = false;

void configure_thread() {
  if (tls_configured) return;
  _tile_loadconfig(&kConfig);
  tls_configured = true;
}

template <class Block>
using KindK = x16_tile::KindOf<V, Block>;

constexpr int64_t kChunkK = 2;  // blocks unpacked at a time (about 5 KiB each)

// Block b's sums for tokens t0 .. t0 + 15 (act: token t0's row) into dots[j][t][r], then
// state[t] = finish_block(...) for each token.
template <class Block>
void k_block(const typename KindK<Block>::Packed& p, const uint8_t* act, size_t act_row_bytes,
             int64_t b, int32_t* dots, float (*state)[16]) {
  using K = KindK<Block>;
  const auto stride = static_cast<long>(act_row_bytes);
  const uint8_t* x = act + static_cast<size_t>(b) * sizeof(BlockQ8K) + offsetof(BlockQ8K, qs);
  for (int j = 0; j < 8; j += 4) {
    int32_t* o = dots + kTok * 16 * j;
    _tile_zero(0);
    _tile_loadd(4, x + 32 * j, stride);
    _tile_loadd(6, p.q[j], 64);
    _tile_dpbsud(0, 4, 6);
    _tile_zero(1);
    _tile_loadd(5, x + 32 * j + 32, stride);
    _tile_loadd(7, p.q[j + 1], 64);
    _tile_dpbsud(1, 5, 7);
    _tile_zero(2);
    _tile_loadd(4, x + 32 * j + 64, stride);
    _tile_loadd(6, p.q[j + 2], 64);
    _tile_dpbsud(2, 4, 6);
    _tile_zero(3);
    _tile_loadd(5, x + 32 * j + 96, stride);
    _tile_loadd(7, p.q[j + 3], 64);
    _tile_dpbsud(3, 5, 7);
    _tile_stored(0, o, 64);
    _tile_stored(1, o + kTok * 16, 64);
    _tile_stored(2, o + 2 * kTok * 16, 64);
    _tile_stored(3, o + 3 * kTok * 16, 64);
  }
  for (int t = 0; t < kTok; ++t) {
    const BlockQ8K& xb = reinterpret_cast<const BlockQ8K*>(act + t * act_row_bytes)[b];
    __m512i sums[8];
    for (int j = 0; j < 8; ++j) sums[j] = _mm512_load_si512(dots + (j * kTok + t) * 16);
    const __m512 acc =
        K::finish_block(sums, p.sc, p.mins, p.d, p.dmin, xb, _mm512_load_ps(state[t]));
    _mm512_store_ps(state[t], acc);
  }
}

// n_tok: a multiple of 16. Per row group, qt::kMaxTok tokens a pass: a chunk of blocks is
// unpacked once and serves all of them.
template <class Block>
void k_tiles(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows, const uint8_t* act,
             size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  using K = KindK<Block>;
  configure_thread();
  const int64_t n_blocks = n_in / kQKK;
  alignas(64) typename K::Packed packed[kChunkK];
  alignas(64) int32_t dots[8 * kTok * 16];
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
          K::pack_from(avx512::X16Source{blk}, packed[i]);
        }
        for (int64_t tt = 0; tt < nt; tt += kTok) {
          const uint8_t* a = act + static_cast<size_t>(t0 + tt) * act_row_bytes;
          for (int64_t i = 0; i < nb; ++i) {
            k_block<Block>(packed[i], a, act_row_bytes, b0 + i, dots, state + tt);
          }
        }
      }
      for (int64_t t = 0; t < nt; ++t) {
        _mm512_storeu_ps(y + (t0 + t) * y_stride + r0, _mm512_load_ps(state[t]));
      }
    }
  }
}

// The 16-token tiles on AMX (by `tiled`), the rest (and calls of 16 tokens or fewer, where
// avx512's gemv_tokens keeps every accumulator in registers) on avx512's x16 kernel.
template <class Block, class Tiled>
void split_tokens(Tiled tiled, int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                  const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                  int64_t y_stride) {
  const int64_t n_tiled = n_tok > kTok ? n_tok / kTok * kTok : 0;
  const auto* a = static_cast<const uint8_t*>(act);
  if (n_tiled > 0) {
    tiled(n_in, static_cast<const uint8_t*>(w), w_row_bytes, n_rows, a, act_row_bytes, n_tiled, y,
          y_stride);
  }
  if (n_tok > n_tiled) {
    avx512::matmul_tile_x16<Block>(n_in, w, w_row_bytes, n_rows,
                                   a + static_cast<size_t>(n_tiled) * act_row_bytes, act_row_bytes,
                                   n_tok - n_tiled, y + n_tiled * y_stride, y_stride);
  }
}

}  // namespace

template <class Block>
void matmul_tile_x16_k(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                       const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                       int64_t y_stride) {
  split_tokens<Block>(k_tiles<Block>, n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y,
                      y_stride);
}

template void matmul_tile_x16_k<BlockQ4K>(int64_t, const void*, size_t, int64_t, const void*,
                                          size_t, int64_t, float*, int64_t);
template void matmul_tile_x16_k<BlockQ5K>(int64_t, const void*, size_t, int64_t, const void*,
                                          size_t, int64_t, float*, int64_t);

}  // namespace minfer::kernels::amx
