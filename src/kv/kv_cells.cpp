// A KvCache sequence's cells in the flat layout of state files (kv/kv_cache.h, read_cells), and
// the sizes of cells a token reads or a file holds.
#include <algorithm>
#include <cstdint>
#include <cstring>

#include "core/check.h"
#include "kv/kv_cache.h"

namespace minfer {

size_t KvCache::seen_bytes(int64_t n_positions) const {
  const KvCacheConfig& c = config();
  size_t bytes = 0;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (is_recurrent_layer(il)) continue;
    const int64_t n = is_window_layer(il) ? std::min(n_positions, c.window) : n_positions;
    bytes += static_cast<size_t>(layout_.n_head_kv(il) * n) *
             (layout_.k_row_bytes(il) + layout_.v_row_bytes(il));
  }
  return bytes;
}

size_t KvCache::cells_bytes(int64_t n_positions) const {
  const KvCacheConfig& c = config();
  size_t bytes = 0;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (is_recurrent_layer(il)) continue;
    bytes += static_cast<size_t>(layout_.n_head_kv(il) * n_positions) *
             (layout_.k_row_bytes(il) + layout_.v_row_bytes(il));
  }
  return bytes;
}

template <typename Fn>
void KvCache::for_each_run(int32_t seq, int64_t n_positions, Fn&& copy) const {
  if (n_positions <= 0) return;
  const KvCacheConfig& c = config();
  const int64_t bs = c.block_size;
  size_t offset = 0;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (is_recurrent_layer(il)) continue;
    const std::vector<int32_t>& table = block_table(seq, il);
    for (const bool is_v : {false, true}) {
      const size_t row = is_v ? layout_.v_row_bytes(il) : layout_.k_row_bytes(il);
      for (int64_t h = 0; h < layout_.n_head_kv(il); ++h) {
        for (int64_t begin = 0; begin < n_positions; begin += bs) {
          const int32_t block = table[static_cast<size_t>(begin / bs)];
          const size_t bytes = static_cast<size_t>(std::min(bs, n_positions - begin)) * row;
          copy(block < 0 ? nullptr : cell(block, il, is_v, h, 0), offset, bytes);
          offset += bytes;
        }
      }
    }
  }
}

void KvCache::read_cells(int32_t seq, int64_t n_positions, std::span<uint8_t> out) const {
  MINFER_CHECK(n_positions >= 0 && n_positions <= length(seq), "read_cells past the length");
  MINFER_CHECK(out.size() == cells_bytes(n_positions),
               "read_cells into a buffer of the wrong size");
  for_each_run(seq, n_positions, [&](const uint8_t* cells, size_t offset, size_t bytes) {
    if (cells == nullptr) {
      std::memset(out.data() + offset, 0, bytes);
    } else {
      std::memcpy(out.data() + offset, cells, bytes);
    }
  });
}

Status KvCache::write_cells(int32_t seq, int64_t n_positions, std::span<const uint8_t> in) {
  const KvSequence* held = tables_.find(seq);
  MINFER_CHECK(held == nullptr || held->blocks.empty(),
               "write_cells on a sequence that holds blocks");
  MINFER_CHECK(n_positions >= 0 && in.size() == cells_bytes(n_positions),
               "write_cells from a buffer of the wrong size");
  MINFER_RETURN_IF_ERROR(reserve(seq, n_positions));
  // Fresh blocks from reserve: never registered, so writing them changes no shared prefix.
  for_each_run(seq, n_positions, [&](uint8_t* cells, size_t offset, size_t bytes) {
    std::memcpy(cells, in.data() + offset, bytes);
  });
  set_length(seq, n_positions);
  return Status::ok();
}

}  // namespace minfer
