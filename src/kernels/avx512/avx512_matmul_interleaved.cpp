// AVX-512 VNNI matmul tiles for Q8_0 / Q4_0 / Q5_0 weights in the x16 row-interleaved layout
// (kernels/interleave.h). The layout holds each block already as the tiles' packed form
// (quant_tile_impl.h: lanes = rows, 4 quants per dword), so a block is unpacked with plain
// 64-byte loads (Q4_0 / Q5_0: a nibble split, and Q5_0's fifth bits) and the tiles' own block
// steps do the arithmetic: every (row, token) result is the reference's, bit for bit.

// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
// Separate multiplies and adds, as the reference.
#pragma GCC optimize("fp-contract=off")

#include "kernels/avx512/avx512_interleaved.h"

#include <immintrin.h>

#include <type_traits>

#include "kernels/avx512/avx512_gemv_prefetch.h"
#include "kernels/avx512/avx512_quant_vec.h"
#include "kernels/interleave.h"
#include "kernels/quant_tile_impl.h"

namespace minfer::kernels::avx512 {
namespace {

namespace qt = quant_tile;
using V = Vec512;

// Block k (0, 1) of the x16 block pair at `pair` unpacked into the tiles' packed form of Kind.
template <class Block>
void unpack_x16(const uint8_t* pair, int k, qt::PackedQ32<V>& p) {
  const auto load = [&](size_t off) { return _mm512_loadu_si512(pair + off); };
  p.d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + 32 * k)));
  if constexpr (std::is_same_v<Block, BlockQ8_0>) {
    for (int j = 0; j < 8; ++j) p.q[j] = V::q8_prep(load(64 + 512 * k + 64 * j));
  } else {
    constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0>;
    constexpr size_t kQs = kQ5 ? 192 : 64;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      const __m512i t = load(kQs + 256 * k + 64 * j);
      p.q[j] = _mm512_and_si512(t, low4);
      p.q[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t, 4), low4);
    }
    if constexpr (kQ5) {
      const __m512i qh = load(64 + 64 * k);
      for (int j = 0; j < 4; ++j) {
        p.q[j] = _mm512_or_si512(p.q[j], qt::fifth_bits<V>(qh, 4 * j));
        p.q[4 + j] = _mm512_or_si512(p.q[4 + j], qt::fifth_bits<V>(qh, 16 + 4 * j));
      }
    }
  }
}

// A K-quant x16 block (16 rows' block b) for the tiles' packs (quant_tile_impl.h GroupSource):
// the word at offset o of every row's GGUF block sits at 16 o, lanes = rows (interleave.h).
struct X16Source {
  const uint8_t* blk;
  void transpose32(size_t o, __m512i out[8]) const {
    for (int i = 0; i < 8; ++i) out[i] = _mm512_loadu_si512(blk + 16 * o + 64 * i);
  }
  __m512i u32(size_t o) const { return _mm512_loadu_si512(blk + 16 * o); }
  __m512 f16(size_t o) const {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(blk + 16 * o)));
  }
  void f16_pair(size_t o, __m512& a, __m512& b) const {
    a = f16(o);
    b = f16(o + 2);
  }
  __m512 f16_last(size_t o) const { return f16(o); }
};

// The tiles' kind of each block type (an empty struct of static functions).
template <class Block>
auto kind_of() {
  if constexpr (std::is_same_v<Block, BlockQ8_0>) return qt::KindQ8_0<V>{};
  if constexpr (std::is_same_v<Block, BlockQ4_0>) return qt::KindQ4_0<V>{};
  if constexpr (std::is_same_v<Block, BlockQ5_0>) return qt::KindQ5_0<V>{};
  if constexpr (std::is_same_v<Block, BlockQ4K>) return qt::KindQ4K<V>{};
  if constexpr (std::is_same_v<Block, BlockQ5K>) return qt::KindQ5K<V>{};
  if constexpr (std::is_same_v<Block, BlockQ6K>) return qt::KindQ6K<V>{};
}
template <class Block>
using KindOf = decltype(kind_of<Block>());

template <class Block>
constexpr bool kIsK = std::is_same_v<Block, BlockQ4K> || std::is_same_v<Block, BlockQ5K> ||
                      std::is_same_v<Block, BlockQ6K>;

// Bytes of the x16 unit the kernels step by: a block pair (32-element types) or one K-quant
// block, of all 16 rows.
template <class Block>
constexpr size_t kUnitBytes = (kIsK<Block> ? 16 : 32) * sizeof(Block);
template <class Block>
constexpr int64_t kUnitBlocks = kIsK<Block> ? 1 : 2;

// Block b of the row group at `group` in the tiles' packed form.
template <class Block>
void unpack_block(const uint8_t* group, int64_t b, typename KindOf<Block>::Packed& p) {
  if constexpr (kIsK<Block>) {
    KindOf<Block>::pack_from(X16Source{group + static_cast<size_t>(b) * kUnitBytes<Block>}, p);
  } else {
    unpack_x16<Block>(group + static_cast<size_t>(b / 2) * kUnitBytes<Block>,
                      static_cast<int>(b % 2), p);
  }
}

// One token: each group's blocks unpacked into registers and used at once. The group is one
// forward run of memory, asked for ahead as the GGUF-layout GEMVs do.
template <class Block>
void gemv_x16(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
              const uint8_t* act, float* y) {
  using K = KindOf<Block>;
  constexpr int64_t kUnit = kUnitBlocks<Block>;
  const int64_t n_blocks = n_in / K::kBlock;
  const typename K::Act a = K::Act::of(act, n_blocks);
  GemvPrefetch prefetch(w, static_cast<size_t>(n_rows) * w_row_bytes);
  for (int64_t r0 = 0; r0 < n_rows; r0 += kInterleaveRows) {
    const uint8_t* group = w + static_cast<size_t>(r0) * w_row_bytes;
    __m512 acc[1] = {_mm512_setzero_ps()};
    for (int64_t b = 0; b < n_blocks; b += kUnit) {
      prefetch.advance(group + static_cast<size_t>(b / kUnit + 1) * kUnitBytes<Block>);
      typename K::Packed p[kUnit];
      for (int64_t k = 0; k < kUnit; ++k) unpack_block<Block>(group, b + k, p[k]);
      for (int64_t k = 0; k < kUnit; ++k) qt::block_step<V, K>(p[k], a, b + k, acc);
    }
    _mm512_storeu_ps(y + r0, acc[0]);
  }
}

// Several tokens: the blocks of a chunk are unpacked once and serve every token (the tiles'
// loop, reading the x16 layout).
template <class Block>
void tile_x16(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
              const uint8_t* act, size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  using K = KindOf<Block>;
  using RunFn = void (*)(const typename K::Packed*, int64_t, int64_t, const uint8_t*, size_t,
                         int64_t, float*);
  static constexpr RunFn kRun[qt::kTokGroup] = {qt::run_tokens<V, K, 1>, qt::run_tokens<V, K, 2>,
                                                qt::run_tokens<V, K, 3>, qt::run_tokens<V, K, 4>};
  constexpr int64_t kChunk = K::kChunk;  // a multiple of kUnitBlocks
  constexpr int64_t kUnit = kUnitBlocks<Block>;
  const int64_t n_blocks = n_in / K::kBlock;
  alignas(64) typename K::Packed packed[kChunk];
  alignas(64) float state[qt::kMaxTok][V::kLanes];  // [token][row]
  for (int64_t r0 = 0; r0 < n_rows; r0 += kInterleaveRows) {
    const uint8_t* group = w + static_cast<size_t>(r0) * w_row_bytes;
    for (int64_t t0 = 0; t0 < n_tok; t0 += qt::kMaxTok) {
      const int64_t nt = n_tok - t0 < qt::kMaxTok ? n_tok - t0 : qt::kMaxTok;
      for (int64_t t = 0; t < nt; ++t) _mm512_store_ps(state[t], _mm512_setzero_ps());
      for (int64_t b0 = 0; b0 < n_blocks; b0 += kChunk) {
        const int64_t nbc = n_blocks - b0 < kChunk ? n_blocks - b0 : kChunk;
        // The next chunk (or the next group's first) is one contiguous run: ask for it now.
        const uint8_t* next = group + static_cast<size_t>((b0 + nbc) / kUnit) * kUnitBytes<Block>;
        const uint8_t* w_end = w + static_cast<size_t>(n_rows) * w_row_bytes;
        const size_t next_bytes = static_cast<size_t>(nbc / kUnit) * kUnitBytes<Block>;
        for (size_t off = 0; off < next_bytes; off += 64) {
          if (next + off < w_end) V::prefetch(next + off);
        }
        for (int64_t b = 0; b < nbc; ++b) unpack_block<Block>(group, b0 + b, packed[b]);
        for (int64_t t = 0; t < nt; t += qt::kTokGroup) {
          const int64_t ng = nt - t < qt::kTokGroup ? nt - t : qt::kTokGroup;
          kRun[ng - 1](packed, b0, nbc, act + (t0 + t) * act_row_bytes, act_row_bytes, n_blocks,
                       state[t]);
        }
      }
      for (int64_t t = 0; t < nt; ++t) {
        _mm512_storeu_ps(y + (t0 + t) * y_stride + r0, _mm512_load_ps(state[t]));
      }
    }
  }
}

}  // namespace

template <class Block>
void matmul_tile_x16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  const auto* w_bytes = static_cast<const uint8_t*>(w);
  const auto* a_bytes = static_cast<const uint8_t*>(act);
  if (n_tok == 1) {
    gemv_x16<Block>(n_in, w_bytes, w_row_bytes, n_rows, a_bytes, y);
    return;
  }
  tile_x16<Block>(n_in, w_bytes, w_row_bytes, n_rows, a_bytes, act_row_bytes, n_tok, y, y_stride);
}

template void matmul_tile_x16<BlockQ8_0>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                         int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ4_0>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                         int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ5_0>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                         int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ4K>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                        int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ5K>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                        int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ6K>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                        int64_t, float*, int64_t);

}  // namespace minfer::kernels::avx512
