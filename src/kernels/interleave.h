// Row-interleaved weight layout ("x16") for Q8_0, Q4_0, Q5_0, MXFP4, Q4_K, Q5_K and Q6_K matrices:
// the blocks of 16 rows stored side by side so that one 64-byte load holds 4 quants of each of the
// 16 rows, already in the lanes-are-rows order of the SIMD tiles (quant_tile_impl.h), with no
// per-block transpose or gather at run time. Weights are repacked once at load (models/repack.h);
// the bytes are the same in number as the GGUF layout's, only their order differs.
//
// Layout of a matrix: row groups of 16 rows, each 16 · row_bytes bytes, in row order. A group is
// a run of block pairs (blocks 2p and 2p + 1 of all 16 rows, 32 · sizeof(Block) bytes):
//   d:  [2][16] f16           the scales of block 2p + k of row r at (k · 16 + r) · 2 (MXFP4:
//                             [2][16] e8m0 bytes, at k · 16 + r)
//   qh: [2][16] uint32        Q5_0 only: each row's fifth bits in plane order, element e's at
//                             bit 8 (e % 4) + e / 4, so that byte b holds those of elements
//                             b, 4 + b, .. 28 + b: the quant dword j's fifth bits (elements 4j..
//                             4j + 3, the low nibbles; 16 + 4j.. the high) are bit j (4 + j)
//                             of its 4 bytes, one shift and mask away
//   qs: [2][n_dwords][16][4]  dword j of row r's quants (bytes 4j..4j+3 of BlockX::qs)
// n_dwords is 8 for Q8_0 (32 int8), 4 for Q4_0 / Q5_0 / MXFP4 (16 bytes of nibbles). A matrix can
// be interleaved when its rows are a multiple of 16 and its blocks per row even (every Qwen2.5 /
// Qwen3 matrix); the matmul tiles of this layout require exactly that.
//
// Q4_K, Q5_K and Q6_K: a group is a run of x16 blocks (block b of all 16 rows, 16 ·
// sizeof(Block) bytes), each the 16 GGUF blocks cut into words, 2 bytes for the f16 scales and 4
// for everything else (packed scales, quants, fifth / high bits): the word at offset o of row r's
// block goes to 16 o + 4 r (f16: 16 o + 2 r). One 64-byte load then holds one dword of each of
// the 16 rows at the same place of their blocks, which is what the tiles' packs gather
// (quant_tile_impl.h), and the 16 rows' d (and dmin) are one 32-byte load. Any matrix of
// whole super-blocks and rows a multiple of 16 can take it.
#pragma once

#include <cstddef>
#include <cstdint>

#include "quant/ggml_type.h"

namespace minfer::kernels {

inline constexpr int64_t kInterleaveRows = 16;

// How a weight matrix's bytes are ordered (MatmulWeights::layout).
enum class WeightLayout { kGguf = 0, kRows16 = 1 };

// Whether a matrix of this type and shape can take the x16 layout.
bool can_interleave(GgmlType type, int64_t n_rows, int64_t n_in);

// Rewrites rows [row_begin, row_end) (multiples of 16) of a GGUF-layout matrix `src` into the
// x16 layout at the same byte offsets of `dst` (no aliasing). Precondition: can_interleave.
void interleave_rows(GgmlType type, const uint8_t* src, int64_t n_in, int64_t row_begin,
                     int64_t row_end, uint8_t* dst);

// Row r of an x16-layout matrix back in GGUF blocks (row bytes of n_in elements at dst).
void deinterleave_row(GgmlType type, const uint8_t* src, int64_t n_in, int64_t r, uint8_t* dst);

}  // namespace minfer::kernels
