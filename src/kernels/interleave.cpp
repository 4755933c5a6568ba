#include "kernels/interleave.h"

#include <cstring>

#include "quant/blocks.h"

namespace minfer::kernels {
namespace {

// Where one block's parts sit in a GGUF block and in its x16 block pair.
struct BlockParts {
  size_t block_bytes = 0;
  size_t scale_bytes = 0;  // the scale's, first in the GGUF block: f16 d, or MXFP4's e8m0 e
  size_t qh_offset = 0;    // in the GGUF block; 0: none
  size_t qs_offset = 0;    // in the GGUF block
  int n_dwords = 0;        // dwords of quants per row
};

bool parts_of(GgmlType type, BlockParts& p) {
  switch (type) {
    case GgmlType::kQ8_0:
      p = {sizeof(BlockQ8_0), 2, 0, offsetof(BlockQ8_0, qs), 8};
      return true;
    case GgmlType::kQ4_0:
      p = {sizeof(BlockQ4_0), 2, 0, offsetof(BlockQ4_0, qs), 4};
      return true;
    case GgmlType::kQ5_0:
      p = {sizeof(BlockQ5_0), 2, offsetof(BlockQ5_0, qh), offsetof(BlockQ5_0, qs), 4};
      return true;
    case GgmlType::kMXFP4:
      p = {sizeof(BlockMxfp4), 1, 0, offsetof(BlockMxfp4, qs), 4};
      return true;
    default:
      return false;
  }
}

// Byte offsets, within a block pair, of block k (0, 1) of lane r's scale, fifth bits and quant
// dword j (see interleave.h).
struct PairOffsets {
  const BlockParts& p;
  size_t d(int k, int r) const { return static_cast<size_t>(k * 16 + r) * p.scale_bytes; }
  size_t qh(int k, int r) const { return 32 * p.scale_bytes + static_cast<size_t>(k * 16 + r) * 4; }
  size_t qs(int k, int j, int r) const {
    const size_t base = 32 * p.scale_bytes + (p.qh_offset != 0 ? 128 : 0);
    return base + static_cast<size_t>((k * p.n_dwords + j) * 16 + r) * 4;
  }
};

// Q5_0's fifth bits between the GGUF order (bit e: element e) and the x16 plane order (bit
// 8 (e % 4) + e / 4, interleave.h).
uint32_t fifth_bits_to_planes(uint32_t qh) {
  uint32_t out = 0;
  for (uint32_t e = 0; e < 32; ++e) out |= ((qh >> e) & 1u) << (8 * (e % 4) + e / 4);
  return out;
}
uint32_t fifth_bits_from_planes(uint32_t planes) {
  uint32_t out = 0;
  for (uint32_t e = 0; e < 32; ++e) out |= ((planes >> (8 * (e % 4) + e / 4)) & 1u) << e;
  return out;
}

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
  move(0, o.d(k, r), p.scale_bytes);
  if (p.qh_offset != 0) {
    uint32_t qh = 0;
    if (to_pair) {
      std::memcpy(&qh, gguf + p.qh_offset, 4);
      qh = fifth_bits_to_planes(qh);
      std::memcpy(pair + o.qh(k, r), &qh, 4);
    } else {
      std::memcpy(&qh, pair + o.qh(k, r), 4);
      qh = fifth_bits_from_planes(qh);
      std::memcpy(gguf + p.qh_offset, &qh, 4);
    }
  }
  for (int j = 0; j < p.n_dwords; ++j)
    move(p.qs_offset + 4 * static_cast<size_t>(j), o.qs(k, j, r), 4);
}

// ---- K-quants: one block of 16 rows ----

// A run of bytes of a K-quant block, kept as `unit`-byte words: in the x16 block the part takes
// 16 times its bytes at 16 times its offset, word j of row r at (16 j + r) · unit.
struct KPart {
  size_t offset, bytes, unit;
};

constexpr KPart kQ4KParts[] = {{offsetof(BlockQ4K, d), 2, 2},
                               {offsetof(BlockQ4K, dmin), 2, 2},
                               {offsetof(BlockQ4K, scales), sizeof(BlockQ4K::scales), 4},
                               {offsetof(BlockQ4K, qs), sizeof(BlockQ4K::qs), 4}};
constexpr KPart kQ5KParts[] = {{offsetof(BlockQ5K, d), 2, 2},
                               {offsetof(BlockQ5K, dmin), 2, 2},
                               {offsetof(BlockQ5K, scales), sizeof(BlockQ5K::scales), 4},
                               {offsetof(BlockQ5K, qh), sizeof(BlockQ5K::qh), 4},
                               {offsetof(BlockQ5K, qs), sizeof(BlockQ5K::qs), 4}};
constexpr KPart kQ6KParts[] = {{offsetof(BlockQ6K, ql), sizeof(BlockQ6K::ql), 4},
                               {offsetof(BlockQ6K, qh), sizeof(BlockQ6K::qh), 4},
                               {offsetof(BlockQ6K, scales), sizeof(BlockQ6K::scales), 4},
                               {offsetof(BlockQ6K, d), 2, 2}};

struct KLayout {
  const KPart* parts = nullptr;
  int n_parts = 0;
  size_t block_bytes = 0;
};

bool k_layout_of(GgmlType type, KLayout& k) {
  switch (type) {
    case GgmlType::kQ4_K:
      k = {kQ4KParts, 4, sizeof(BlockQ4K)};
      return true;
    case GgmlType::kQ5_K:
      k = {kQ5KParts, 5, sizeof(BlockQ5K)};
      return true;
    case GgmlType::kQ6_K:
      k = {kQ6KParts, 4, sizeof(BlockQ6K)};
      return true;
    default:
      return false;
  }
}

// Copies one K-quant block between its GGUF bytes and row r of its x16 block (to_x16: GGUF →
// x16).
void move_k_block(const KLayout& k, uint8_t* gguf, uint8_t* x16, int r, bool to_x16) {
  for (int i = 0; i < k.n_parts; ++i) {
    const KPart& part = k.parts[i];
    for (size_t j = 0; j < part.bytes / part.unit; ++j) {
      uint8_t* g = gguf + part.offset + j * part.unit;
      uint8_t* x = x16 + kInterleaveRows * part.offset +
                   (j * kInterleaveRows + static_cast<size_t>(r)) * part.unit;
      if (to_x16) {
        std::memcpy(x, g, part.unit);
      } else {
        std::memcpy(g, x, part.unit);
      }
    }
  }
}

// Row r (or, with to_x16, rows [r, r + 16)) of a K-quant matrix between the layouts.
void move_k_rows(const KLayout& k, uint8_t* gguf_row, uint8_t* group, int64_t n_in, int r,
                 bool to_x16) {
  const int64_t n_blocks = n_in / kQKK;
  for (int64_t b = 0; b < n_blocks; ++b) {
    move_k_block(k, gguf_row + static_cast<size_t>(b) * k.block_bytes,
                 group + static_cast<size_t>(b) * kInterleaveRows * k.block_bytes, r, to_x16);
  }
}

bool interleave_k_rows(GgmlType type, const uint8_t* src, int64_t n_in, int64_t row_begin,
                       int64_t row_end, uint8_t* dst) {
  KLayout k;
  if (!k_layout_of(type, k)) return false;
  const size_t row_bytes = static_cast<size_t>(n_in / kQKK) * k.block_bytes;
  for (int64_t g = row_begin; g < row_end; g += kInterleaveRows) {
    for (int r = 0; r < kInterleaveRows; ++r) {
      // move_k_rows only reads through the GGUF pointer when to_x16 is set.
      auto* row = const_cast<uint8_t*>(src + static_cast<size_t>(g + r) * row_bytes);
      move_k_rows(k, row, dst + static_cast<size_t>(g) * row_bytes, n_in, r, true);
    }
  }
  return true;
}

bool deinterleave_k_row(GgmlType type, const uint8_t* src, int64_t n_in, int64_t r, uint8_t* dst) {
  KLayout k;
  if (!k_layout_of(type, k)) return false;
  const size_t row_bytes = static_cast<size_t>(n_in / kQKK) * k.block_bytes;
  const int64_t g = r / kInterleaveRows * kInterleaveRows;
  // move_k_rows only reads through the x16 pointer when to_x16 is false.
  auto* group = const_cast<uint8_t*>(src + static_cast<size_t>(g) * row_bytes);
  move_k_rows(k, dst, group, n_in, static_cast<int>(r - g), false);
  return true;
}

}  // namespace

bool can_interleave(GgmlType type, int64_t n_rows, int64_t n_in) {
  if (n_rows <= 0 || n_rows % kInterleaveRows != 0 || n_in <= 0) return false;
  BlockParts p;
  KLayout k;
  if (parts_of(type, p)) return n_in % 64 == 0;
  return k_layout_of(type, k) && n_in % kQKK == 0;
}

void interleave_rows(GgmlType type, const uint8_t* src, int64_t n_in, int64_t row_begin,
                     int64_t row_end, uint8_t* dst) {
  if (interleave_k_rows(type, src, n_in, row_begin, row_end, dst)) return;
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
  if (deinterleave_k_row(type, src, n_in, r, dst)) return;
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
