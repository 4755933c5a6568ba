// The matmul loops of the x16 row-interleaved layout (kernels/interleave.h), written once for
// every SIMD table over an ISA's x16 policy U:
//   U::V                     the tiles' vector policy (quant_tile_impl.h), V::kLanes rows a vector
//   U::Prefetch              the GEMV's software prefetch (avx512/avx512_gemv_prefetch.h)
//   U::unpack<Block>(group, b, h, p)
//                            half h (rows h · kLanes ..) of block b of the 16-row group at
//                            `group` in the tiles' packed form, with plain loads
//   U::storeu(y, v)          an unaligned store of one vector of floats
// A 16-row group is kInterleaveRows / V::kLanes halves (AVX-512: one, AVX2: two); each half keeps
// its own accumulators, so every row sums its blocks in order and the tiles' own block steps do
// the arithmetic: every (row, token) result is the reference's, bit for bit.
//
// Include only from a SIMD translation unit, after quant_tile_impl.h and with
// `#pragma GCC optimize("fp-contract=off")`; everything is in an anonymous namespace (see
// quant_tile_impl.h).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "kernels/interleave.h"
#include "kernels/quant_tile_impl.h"
#include "quant/blocks.h"

namespace minfer::kernels::x16_tile {
namespace {

namespace qt = quant_tile;

// The tiles' kind of each block type on V (an empty struct of static functions).
template <class V, class Block>
auto kind_of() {
  if constexpr (std::is_same_v<Block, BlockQ8_0>) return qt::KindQ8_0<V>{};
  if constexpr (std::is_same_v<Block, BlockQ4_0>) return qt::KindQ4_0<V>{};
  if constexpr (std::is_same_v<Block, BlockQ5_0>) return qt::KindQ5_0<V>{};
  if constexpr (std::is_same_v<Block, BlockMxfp4>) return qt::KindMxfp4<V>{};
  if constexpr (std::is_same_v<Block, BlockQ4K>) return qt::KindQ4K<V>{};
  if constexpr (std::is_same_v<Block, BlockQ5K>) return qt::KindQ5K<V>{};
  if constexpr (std::is_same_v<Block, BlockQ6K>) return qt::KindQ6K<V>{};
}
template <class V, class Block>
using KindOf = decltype(kind_of<V, Block>());

template <class Block>
constexpr bool kIsK = std::is_same_v<Block, BlockQ4K> || std::is_same_v<Block, BlockQ5K> ||
                      std::is_same_v<Block, BlockQ6K>;

// Bytes of the x16 unit the kernels step by: a block pair (32-element types) or one K-quant
// block, of all 16 rows.
template <class Block>
constexpr size_t kUnitBytes = (kIsK<Block> ? 16 : 32) * sizeof(Block);
template <class Block>
constexpr int64_t kUnitBlocks = kIsK<Block> ? 1 : 2;

// A 32-element type's block pair (interleave.h): the 32 scales (f16, MXFP4's e8m0 bytes), then
// Q5_0's fifth bits, then the quants from kQsOffset.
template <class Block>
constexpr size_t kScaleBytes = std::is_same_v<Block, BlockMxfp4> ? 1 : 2;
template <class Block>
constexpr size_t kQsOffset = 32 * kScaleBytes<Block> + (std::is_same_v<Block, BlockQ5_0> ? 128 : 0);

template <class V>
constexpr int kHalves = static_cast<int>(kInterleaveRows) / V::kLanes;

// Kinds whose one-token step reads the block where it lies (K::block_from) instead of unpacking
// it into a Packed first.
template <class U, class Block>
constexpr bool kFused = requires(const uint8_t* g,
                                 const typename KindOf<typename U::V, Block>::Act& a,
                                 typename U::V::F acc) {
  KindOf<typename U::V, Block>::block_from(U::template source<Block>(g, 0, 0), a, 0, acc);
};

// One token: each group's blocks unpacked (half by half) into registers and used at once. The
// group is one forward run of memory, asked for ahead as the GGUF-layout GEMVs do.
template <class U, class Block>
void gemv(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows, const uint8_t* act,
          float* y) {
  using V = typename U::V;
  using K = KindOf<V, Block>;
  constexpr int kAccs = qt::accs_of<K>();
  constexpr int64_t kUnit = kUnitBlocks<Block>;
  constexpr int kH = kHalves<V>;
  const int64_t n_blocks = n_in / K::kBlock;
  const typename K::Act a = K::Act::of(act, n_blocks);
  typename U::Prefetch prefetch(w, static_cast<size_t>(n_rows) * w_row_bytes);
  for (int64_t r0 = 0; r0 < n_rows; r0 += kInterleaveRows) {
    const uint8_t* group = w + static_cast<size_t>(r0) * w_row_bytes;
    typename V::F acc[kH][kAccs];
    for (auto& half : acc) {
      for (auto& v : half) v = V::fset1(0.0f);
    }
    for (int64_t b = 0; b < n_blocks; b += kUnit) {
      prefetch.advance(group + static_cast<size_t>(b / kUnit + 1) * kUnitBytes<Block>);
      for (int h = 0; h < kH; ++h) {
        if constexpr (kFused<U, Block>) {
          static_assert(kAccs == 1, "a fused kind keeps one accumulator");
          acc[h][0] = K::block_from(U::template source<Block>(group, b, h), a, b, acc[h][0]);
        } else {
          typename K::Packed p[kUnit];
          for (int64_t k = 0; k < kUnit; ++k) U::template unpack<Block>(group, b + k, h, p[k]);
          for (int64_t k = 0; k < kUnit; ++k) qt::block_step<V, K>(p[k], a, b + k, acc[h]);
        }
      }
    }
    for (int h = 0; h < kH; ++h) U::storeu(y + r0 + V::kLanes * h, qt::finish<V, K>(acc[h]));
  }
}

// A few tokens (2 to 16 under AVX-512, 8 under AVX2): gemv's loop, each group's blocks
// unpacked into registers and used at once for every token, T accumulators a half. A short
// prompt, or a batch of a few sequences' decode steps, reads the weights about as fast as one
// token; the tile below stores each unpacked chunk and every token's sums and loads them again.
template <class U, class Block, int T>
void gemv_tokens(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows,
                 const uint8_t* act, size_t act_row_bytes, float* y, int64_t y_stride) {
  using V = typename U::V;
  using K = KindOf<V, Block>;
  constexpr int kAccs = qt::accs_of<K>();
  constexpr int64_t kUnit = kUnitBlocks<Block>;
  constexpr int kH = kHalves<V>;
  const int64_t n_blocks = n_in / K::kBlock;
  typename K::Act a[T];
  for (int t = 0; t < T; ++t) a[t] = K::Act::of(act + t * act_row_bytes, n_blocks);
  typename U::Prefetch prefetch(w, static_cast<size_t>(n_rows) * w_row_bytes);
  for (int64_t r0 = 0; r0 < n_rows; r0 += kInterleaveRows) {
    const uint8_t* group = w + static_cast<size_t>(r0) * w_row_bytes;
    typename V::F acc[kH][T][kAccs];
    for (auto& half : acc) {
      for (auto& tok : half) {
        for (auto& v : tok) v = V::fset1(0.0f);
      }
    }
    for (int64_t b = 0; b < n_blocks; b += kUnit) {
      prefetch.advance(group + static_cast<size_t>(b / kUnit + 1) * kUnitBytes<Block>);
      for (int h = 0; h < kH; ++h) {
        if constexpr (T <= qt::kTokGroup) {
          typename K::Packed p[kUnit];
          for (int64_t k = 0; k < kUnit; ++k) U::template unpack<Block>(group, b + k, h, p[k]);
          for (int64_t k = 0; k < kUnit; ++k) {
            for (int t = 0; t < T; ++t) qt::block_step<V, K>(p[k], a[t], b + k, acc[h][t]);
          }
        } else {
          // More accumulators: one block unpacked at a time, to leave them the registers.
          for (int64_t k = 0; k < kUnit; ++k) {
            typename K::Packed p;
            U::template unpack<Block>(group, b + k, h, p);
            for (int t = 0; t < T; ++t) qt::block_step<V, K>(p, a[t], b + k, acc[h][t]);
          }
        }
      }
    }
    for (int t = 0; t < T; ++t) {
      for (int h = 0; h < kH; ++h) {
        U::storeu(y + t * y_stride + r0 + V::kLanes * h, qt::finish<V, K>(acc[h][t]));
      }
    }
  }
}

// Asks for the `bytes` at `next` (the next chunk, or the next group's first), as far as `end`.
template <class V>
void prefetch_run(const uint8_t* next, size_t bytes, const uint8_t* end) {
  for (size_t off = 0; off < bytes; off += 64) {
    if (next + off < end) V::prefetch(next + off);
  }
}

// Lane r: bytes b = 0..3 hold the fifth bit of element 4v + b of lane r as 0 or 0x10, from the
// x16 layout's plane-ordered fifth bits (interleave.h: element e's at bit 8 (e % 4) + e / 4).
// v: the quant vector (elements 4v..4v + 3; 0..3 the low nibbles, 4..7 the high).
template <class V>
typename V::I fifth_bits(typename V::I qh, int v) {
  const typename V::I bit4 = V::set1_8(0x10);
  if (v < 4) return V::and_(V::slli32(qh, 4 - v), bit4);
  if (v > 4) return V::and_(V::srli32(qh, v - 4), bit4);
  return V::and_(qh, bit4);
}

// Tokens whose accumulators live in registers together, beside one unpacked block: 16 with
// AVX-512's 32 registers, 8 with AVX2's 16 (a half's). gemv_tokens takes up to this many; the
// tile steps through its tokens this many at a time.
template <class V>
constexpr int kTokRegs = kHalves<V> == 1 ? 16 : 8;

// qt::run_tokens for 1 .. sizeof...(I) tokens, indexed by the count less one.
template <class V, class K, size_t... I>
constexpr auto run_tokens_table(std::index_sequence<I...> /*counts*/) {
  using RunFn = void (*)(const typename K::Packed*, int64_t, int64_t, const uint8_t*, size_t,
                         int64_t, float*);
  return std::array<RunFn, sizeof...(I)>{qt::run_tokens<V, K, static_cast<int>(I) + 1>...};
}

// More tokens: the blocks of a chunk are unpacked once (per half) and serve every token (the
// tiles' loop, reading the x16 layout), kTokRegs tokens at a time: each unpacked block is read
// from L1 once for that many tokens (kTokRegs: chosen by measurement, see its commit).
template <class U, class Block>
void tile(int64_t n_in, const uint8_t* w, size_t w_row_bytes, int64_t n_rows, const uint8_t* act,
          size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  using V = typename U::V;
  using K = KindOf<V, Block>;
  // A kind that names its own group (Q8_0, by its 8 accumulators) keeps it.
  constexpr int kGroup = qt::kHasTokGroup<K> ? qt::tok_group_of<K>() : kTokRegs<V>;
  static constexpr auto kRun = run_tokens_table<V, K>(std::make_index_sequence<kGroup>{});
  constexpr int kAccs = qt::accs_of<K>();
  constexpr int64_t kChunk = K::kChunk;  // a multiple of kUnitBlocks
  constexpr int64_t kUnit = kUnitBlocks<Block>;
  constexpr int kH = kHalves<V>;
  const int64_t n_blocks = n_in / K::kBlock;
  const uint8_t* w_end = w + static_cast<size_t>(n_rows) * w_row_bytes;
  alignas(64) typename K::Packed packed[kChunk];
  alignas(64) float state[kH][qt::kMaxTok][kAccs][V::kLanes];  // [half][token][acc][row]
  for (int64_t r0 = 0; r0 < n_rows; r0 += kInterleaveRows) {
    const uint8_t* group = w + static_cast<size_t>(r0) * w_row_bytes;
    for (int64_t t0 = 0; t0 < n_tok; t0 += qt::kMaxTok) {
      const int64_t nt = n_tok - t0 < qt::kMaxTok ? n_tok - t0 : qt::kMaxTok;
      for (int h = 0; h < kH; ++h) {
        for (int64_t t = 0; t < nt; ++t) {
          for (int k = 0; k < kAccs; ++k) V::fstore(state[h][t][k], V::fset1(0.0f));
        }
      }
      for (int64_t b0 = 0; b0 < n_blocks; b0 += kChunk) {
        const int64_t nbc = n_blocks - b0 < kChunk ? n_blocks - b0 : kChunk;
        // The next chunk (or the next group's first) is one contiguous run: ask for it now.
        prefetch_run<V>(group + static_cast<size_t>((b0 + nbc) / kUnit) * kUnitBytes<Block>,
                        static_cast<size_t>(nbc / kUnit) * kUnitBytes<Block>, w_end);
        for (int h = 0; h < kH; ++h) {
          for (int64_t b = 0; b < nbc; ++b) U::template unpack<Block>(group, b0 + b, h, packed[b]);
          for (int64_t t = 0; t < nt; t += kGroup) {
            const int64_t ng = nt - t < kGroup ? nt - t : kGroup;
            kRun[ng - 1](packed, b0, nbc, act + (t0 + t) * act_row_bytes, act_row_bytes, n_blocks,
                         state[h][t][0]);
          }
        }
      }
      for (int64_t t = 0; t < nt; ++t) {
        for (int h = 0; h < kH; ++h) {
          typename V::F acc[kAccs];
          for (int k = 0; k < kAccs; ++k) acc[k] = V::fload(state[h][t][k]);
          U::storeu(y + (t0 + t) * y_stride + r0 + V::kLanes * h, qt::finish<V, K>(acc));
        }
      }
    }
  }
}

// gemv_tokens for 2 .. sizeof...(I) + 1 tokens, indexed by the count less two.
template <class U, class Block, size_t... I>
constexpr auto gemv_tokens_table(std::index_sequence<I...> /*counts*/) {
  using Fn =
      void (*)(int64_t, const uint8_t*, size_t, int64_t, const uint8_t*, size_t, float*, int64_t);
  return std::array<Fn, sizeof...(I)>{gemv_tokens<U, Block, static_cast<int>(I) + 2>...};
}

// MatmulTileFn (kernel_table.h) of the x16 layout on policy U. gemv_tokens while its
// accumulators fit the registers beside a block (16 tokens with AVX-512's 32, 8 with AVX2's 16,
// whose halves need two each), the tile from there: faster than the tile for those few tokens
// on both ISAs (the figures are in the commit that added it).
template <class U, class Block>
void matmul(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows, const void* act,
            size_t act_row_bytes, int64_t n_tok, float* y, int64_t y_stride) {
  const auto* w_bytes = static_cast<const uint8_t*>(w);
  const auto* a_bytes = static_cast<const uint8_t*>(act);
  if (n_tok == 1) {
    gemv<U, Block>(n_in, w_bytes, w_row_bytes, n_rows, a_bytes, y);
    return;
  }
  constexpr int kFew = kTokRegs<typename U::V>;
  static constexpr auto kGemvTokens =
      gemv_tokens_table<U, Block>(std::make_index_sequence<kFew - 1>{});
  if (n_tok <= kFew) {
    kGemvTokens[static_cast<size_t>(n_tok - 2)](n_in, w_bytes, w_row_bytes, n_rows, a_bytes,
                                                act_row_bytes, y, y_stride);
    return;
  }
  tile<U, Block>(n_in, w_bytes, w_row_bytes, n_rows, a_bytes, act_row_bytes, n_tok, y, y_stride);
}

}  // namespace
}  // namespace minfer::kernels::x16_tile
