#include "kernels/interleave.h"

#include <cstring>

#include "quant/blocks.h"

namespace minfer::kernels {
namespace {

// Where one block's parts sit in a GGUF block and in its x16 block pair.
struct BlockParts {
  size_t block_bytes = 0;
  size_t qh_offset = 0;  // in the GGUF block; 0: none
  size_t qs_offset = 0;  // in the GGUF block
  int n_dwords = 0;      // dwords of quants per row
};

bool parts_of(GgmlType type, BlockParts& p) {
  switch (type) {
    case GgmlType::kQ8_0:
      p = {sizeof(BlockQ8_0), 0, offsetof(BlockQ8_0, qs), 8};
      return true;
    case GgmlType::kQ4_0:
      p = {sizeof(BlockQ4_0), 0, offsetof(BlockQ4_0, qs), 4};
      return true;
    case GgmlType::kQ5_0:
      p = {sizeof(BlockQ5_0), offsetof(BlockQ5_0, qh), offsetof(BlockQ5_0, qs), 4};
      return true;
    default:
      return false;
  }
}

// Byte offsets, within a block pair, of block k (0, 1) of lane r's scale, fifth bits and quant
// dword j (see interleave.h).
struct PairOffsets {
  const BlockParts& p;
  size_t d(int k, int r) const { return static_cast<size_t>(k * 16 + r) * 2; }
  size_t qh(int k, int r) const { return 64 + static_cast<size_t>(k * 16 + r) * 4; }
  size_t qs(int k, int j, int r) const {
    const size_t base = p.qh_offset != 0 ? 192 : 64;
    return base + static_cast<size_t>((k * p.n_dwords + j) * 16 + r) * 4;
  }
};

// Copies one block between its GGUF bytes and lane r, block k of an x16 pair (to_pair: GGUF →
// pair).
void move_block(const BlockParts& p, uint8_t* gguf, uint8_t* pair, int k, int r, bool to_pair) {
  const PairOffsets o{p};
  const auto move = [&](size_t gguf_off, size_t pair_off, size_t n) {
    if (to_pair) {
      std::memcpy(pair + pair_off, gguf + gguf_off, n);
    } else {
      std::memcpy(gguf + gguf_off, pair + pair_off, n);
    }
  };
  move(0, o.d(k, r), 2);
  if (p.qh_offset != 0) move(p.qh_offset, o.qh(k, r), 4);
  for (int j = 0; j < p.n_dwords; ++j)
    move(p.qs_offset + 4 * static_cast<size_t>(j), o.qs(k, j, r), 4);
}

}  // namespace

bool can_interleave(GgmlType type, int64_t n_rows, int64_t n_in) {
  BlockParts p;
  return parts_of(type, p) && n_rows > 0 && n_rows % kInterleaveRows == 0 && n_in > 0 &&
         n_in % 64 == 0;
}

void interleave_rows(GgmlType type, const uint8_t* src, int64_t n_in, int64_t row_begin,
                     int64_t row_end, uint8_t* dst) {
  BlockParts p;
  if (!parts_of(type, p)) return;
  const int64_t n_blocks = n_in / 32;
  const size_t row_bytes = static_cast<size_t>(n_blocks) * p.block_bytes;
  for (int64_t g = row_begin; g < row_end; g += kInterleaveRows) {
    uint8_t* group = dst + static_cast<size_t>(g) * row_bytes;
    for (int r = 0; r < kInterleaveRows; ++r) {
      // move_block only reads through the GGUF pointer when to_pair is set.
      auto* row = const_cast<uint8_t*>(src + static_cast<size_t>(g + r) * row_bytes);
      for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* pair = group + static_cast<size_t>(b / 2) * 32 * p.block_bytes;
        move_block(p, row + static_cast<size_t>(b) * p.block_bytes, pair, static_cast<int>(b % 2),
                   r, true);
      }
    }
  }
}

void deinterleave_row(GgmlType type, const uint8_t* src, int64_t n_in, int64_t r, uint8_t* dst) {
  BlockParts p;
  if (!parts_of(type, p)) return;
  const int64_t n_blocks = n_in / 32;
  const size_t row_bytes = static_cast<size_t>(n_blocks) * p.block_bytes;
  const int64_t g = r / kInterleaveRows * kInterleaveRows;
  // move_block only reads through the pair pointer when to_pair is false.
  auto* group = const_cast<uint8_t*>(src + static_cast<size_t>(g) * row_bytes);
  for (int64_t b = 0; b < n_blocks; ++b) {
    move_block(p, dst + static_cast<size_t>(b) * p.block_bytes,
               group + static_cast<size_t>(b / 2) * 32 * p.block_bytes, static_cast<int>(b % 2),
               static_cast<int>(r - g), false);
  }
}

}  // namespace minfer::kernels
