// AVX-512 VNNI matmul tiles for Q8_0 / Q4_0 / Q5_0 / MXFP4 weights in the x16 row-interleaved
// layout (kernels/interleave.h). The layout holds each block already as the tiles' packed form
// (quant_tile_impl.h: lanes = rows, 4 quants per dword), so a block is unpacked with plain
// 64-byte loads (Q4_0 / Q5_0 / MXFP4: a nibble split, and Q5_0's fifth bits or MXFP4's table) and
// the tiles' own block steps do the arithmetic (the loops, shared with AVX2: x16_tile_impl.h):
// every (row, token) result is the reference's, bit for bit.

// First: the reference's separate multiplies and adds for all that follows.
#include "kernels/fp_contract_off.h"

#include "kernels/avx512/avx512_interleaved.h"

#include <immintrin.h>

#include <type_traits>

#include "kernels/avx512/avx512_gemv_prefetch.h"
#include "kernels/avx512/avx512_quant_vec.h"
#include "kernels/avx512/avx512_x16_source.h"
#include "kernels/quant_tile_impl.h"
#include "kernels/x16_tile_impl.h"

namespace minfer::kernels::avx512 {
namespace {

namespace qt = quant_tile;
using V = Vec512;

// Block k (0, 1) of the x16 block pair at `pair` unpacked into the tiles' packed form of Kind.
template <class Block, class Packed>
void unpack_x16(const uint8_t* pair, int k, Packed& p) {
  const auto load = [&](size_t off) { return _mm512_loadu_si512(pair + off); };
  constexpr bool kMxfp4 = std::is_same_v<Block, BlockMxfp4>;
  if constexpr (kMxfp4) {
    const __m128i e = _mm_loadu_si128(reinterpret_cast<const __m128i*>(pair + 16 * k));
    p.d = qt::KindMxfp4<V>::scale_of(_mm512_cvtepu8_epi32(e));
  } else {
    p.d = _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(pair + 32 * k)));
  }
  if constexpr (std::is_same_v<Block, BlockQ8_0>) {
    for (int j = 0; j < 8; ++j) p.q[j] = load(64 + 512 * k + 64 * j);
    qt::KindQ8_0<V>::complete(p);
  } else {
    constexpr bool kQ5 = std::is_same_v<Block, BlockQ5_0>;
    constexpr size_t kQs = x16_tile::kQsOffset<Block>;
    const __m512i low4 = _mm512_set1_epi8(0x0f);
    for (int j = 0; j < 4; ++j) {
      const __m512i t = load(kQs + 256 * k + 64 * j);
      p.q[j] = _mm512_and_si512(t, low4);
      p.q[4 + j] = _mm512_and_si512(_mm512_srli_epi16(t, 4), low4);
    }
    if constexpr (kMxfp4) {
      for (__m512i& q : p.q) q = V::lookup16(qt::kMxfp4Unsigned, q);
    }
    if constexpr (kQ5) {
      const __m512i qh = load(64 + 64 * k);
      for (int j = 0; j < 8; ++j) p.q[j] = _mm512_or_si512(p.q[j], x16_tile::fifth_bits<V>(qh, j));
    }
  }
}

// The x16 policy of x16_tile_impl.h: a whole 16-row group in one vector (one half).
struct X16 {
  using V = Vec512;
  using Prefetch = GemvPrefetch;

  // K-quant block b of the group where it lies.
  template <class Block>
  static X16Source source(const uint8_t* group, int64_t b, int /*h: always 0*/) {
    return X16Source{group + static_cast<size_t>(b) * x16_tile::kUnitBytes<Block>};
  }
  template <class Block, class Packed>
  static void unpack(const uint8_t* group, int64_t b, int h, Packed& p) {
    if constexpr (x16_tile::kIsK<Block>) {
      x16_tile::KindOf<V, Block>::pack_from(source<Block>(group, b, h), p);
    } else {
      unpack_x16<Block>(group + static_cast<size_t>(b / 2) * x16_tile::kUnitBytes<Block>,
                        static_cast<int>(b % 2), p);
    }
  }
  static void storeu(float* y, __m512 v) { _mm512_storeu_ps(y, v); }
};

}  // namespace

template <class Block>
void matmul_tile_x16(int64_t n_in, const void* w, size_t w_row_bytes, int64_t n_rows,
                     const void* act, size_t act_row_bytes, int64_t n_tok, float* y,
                     int64_t y_stride) {
  x16_tile::matmul<X16, Block>(n_in, w, w_row_bytes, n_rows, act, act_row_bytes, n_tok, y,
                               y_stride);
}

template void matmul_tile_x16<BlockQ8_0>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                         int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ4_0>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                         int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ5_0>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                         int64_t, float*, int64_t);
template void matmul_tile_x16<BlockMxfp4>(int64_t, const void*, size_t, int64_t, const void*,
                                          size_t, int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ4K>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                        int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ5K>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                        int64_t, float*, int64_t);
template void matmul_tile_x16<BlockQ6K>(int64_t, const void*, size_t, int64_t, const void*, size_t,
                                        int64_t, float*, int64_t);

}  // namespace minfer::kernels::avx512
