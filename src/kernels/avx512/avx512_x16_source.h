// A K-quant x16 block (kernels/interleave.h) as the tiles' packs read it (quant_tile_impl.h
// GroupSource's members), for the AVX-512 x16 kernels (avx512_matmul_interleaved.cpp) and the
// AMX ones (amx/). Include only from a translation unit built with AVX-512 flags: it sits in an
// anonymous namespace, as quant_tile_impl.h.
#pragma once

#include <immintrin.h>

#include <cstddef>
#include <cstdint>

namespace minfer::kernels::avx512 {
namespace {

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

}  // namespace
}  // namespace minfer::kernels::avx512
