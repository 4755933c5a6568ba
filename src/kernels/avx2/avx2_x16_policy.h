// The x16 policy of x16_tile_impl.h on 8 lanes, for any AVX2 vector policy V (Vec256, or
// Vec256Vnni under -mavxvnni; avx2_quant_vec.h): a 16-row group of the x16 row-interleaved layout
// (kernels/interleave.h) is two halves, rows 0-7 and 8-15. Each 64-byte lanes-are-rows word of
// the layout is two 32-byte loads (half h at + 32 h), each 32-byte run of 16 rows' f16 two
// 16-byte loads (+ 16 h), so a block reaches the tiles' packed form (quant_tile_impl.h) with
// plain loads, no transpose or gather, and the tiles' own block steps do the arithmetic (the
// loops: x16_tile_impl.h): every (row, token) result is the reference's, bit for bit.
// Include only from AVX2 translation units, after quant_tile_impl.h and x16_tile_impl.h;
// everything is in an anonymous namespace (see quant_tile_impl.h).
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "kernels/avx512/avx512_gemv_prefetch.h"
#include "kernels/quant_tile_impl.h"
#include "kernels/x16_tile_impl.h"
#include "quant/blocks.h"

namespace minfer::kernels::avx2 {
namespace {

inline __m256i load32(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}

// The 8 f16 at p as floats.
inline __m256 load_f16(const uint8_t* p) {
  return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
}

// Half h of block k (0, 1) of the x16 block pair at `pair`, in the tiles' packed form.
template <class V, class Block, class Packed>
void unpack_x16(const uint8_t* pair, int k, int h, Packed& p) {
  const auto load = [&](size_t off) { return load32(pair + off + 32 * static_cast<size_t>(h)); };
  constexpr bool kMxfp4 = std::is_same_v<Block, BlockMxfp4>;
  if constexpr (kMxfp4) {
    const __m128i e = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(pair + 16 * k + 8 * h));
    p.d = quant_tile::KindMxfp4<V>::scale_of(_mm256_cvtepu8_epi32(e));
  } else {
    p.d = load_f16(pair + 32 * k + 16 * h);
  }
  if constexpr (std::is_same_v<Block, BlockQ8_0>) {
    for (int j = 0; j < 8; ++j) p.q[j] = load(64 + 512 * k + 64 * j);
    quant_tile::KindQ8_0<V>::complete(p);
  } else {
    constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0>;
    constexpr size_t kQs = x16_tile::kQsOffset<Block>;
    const __m256i low4 = _mm256_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      const __m256i t = load(kQs + 256 * k + 64 * j);
      p.q[j] = _mm256_and_si256(t, low4);
      p.q[4 + j] = _mm256_and_si256(_mm256_srli_epi16(t, 4), low4);
    }
    if constexpr (kMxfp4) {
      for (__m256i& q : p.q) q = V::lookup16(quant_tile::kMxfp4Unsigned, q);
    }
    if constexpr (kQ5) {
      const __m256i qh = load(64 + 64 * k);
      for (int j = 0; j < 8; ++j) p.q[j] = _mm256_or_si256(p.q[j], x16_tile::fifth_bits<V>(qh, j));
    }
  }
}

// Half h of a K-quant x16 block (16 rows' block b) for the tiles' packs (quant_tile_impl.h
// GroupSource): the word at offset o of every row's GGUF block sits at 16 o, lanes = rows
// (interleave.h); rows 8-15 of a dword word 32 bytes on, of an f16 word 16 bytes on.
struct X16Source {
  const uint8_t* blk;
  size_t h;
  void transpose32(size_t o, __m256i out[8]) const {
    for (size_t i = 0; i < 8; ++i) out[i] = load32(blk + 16 * o + 64 * i + 32 * h);
  }
  __m256i u32(size_t o) const { return load32(blk + 16 * o + 32 * h); }
  __m256 f16(size_t o) const { return load_f16(blk + 16 * o + 16 * h); }
  void f16_pair(size_t o, __m256& a, __m256& b) const {
    a = f16(o);
    b = f16(o + 2);
  }
  __m256 f16_last(size_t o) const { return f16(o); }
};

// The x16 policy of x16_tile_impl.h: two 8-row halves per group.
template <class VecPolicy>
struct X16 {
  using V = VecPolicy;
  // Plain prefetch instructions (SSE): the AVX-512 GEMV's distances serve here too.
  using Prefetch = avx512::GemvPrefetch;

  // Half h of K-quant block b of the group where it lies.
  template <class Block>
  static X16Source source(const uint8_t* group, int64_t b, int h) {
    return X16Source{group + static_cast<size_t>(b) * x16_tile::kUnitBytes<Block>,
                     static_cast<size_t>(h)};
  }
  template <class Block, class Packed>
  static void unpack(const uint8_t* group, int64_t b, int h, Packed& p) {
    if constexpr (x16_tile::kIsK<Block>) {
      x16_tile::KindOf<V, Block>::pack_from(source<Block>(group, b, h), p);
    } else {
      unpack_x16<V, Block>(group + static_cast<size_t>(b / 2) * x16_tile::kUnitBytes<Block>,
                           static_cast<int>(b % 2), h, p);
    }
  }
  static void storeu(float* y, __m256 v) { _mm256_storeu_ps(y, v); }
};

}  // namespace
}  // namespace minfer::kernels::avx2
