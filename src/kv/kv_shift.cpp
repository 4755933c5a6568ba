// KvCache::shift (kv/kv_cache.h): context shift over the cache's parts — the tables' blocks made
// the sequence's own first (shared prefix blocks copied, registered ones unregistered, released
// window blocks taken again), then each kept position's cells moved down with its keys rotated.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <vector>

#include "core/check.h"
#include "kernels/hadamard.h"
#include "kv/kv_cache.h"

namespace minfer {

Status KvCache::own_blocks(int32_t seq, KvSequence& s, int64_t first, int64_t end,
                           int64_t window_first) {
  int64_t copies = 0;
  for (int64_t b = first; b < end; ++b) {
    if (main_.refs(s.blocks[static_cast<size_t>(b)]) > 1) ++copies;
  }
  int64_t window_missing = 0;
  for (int64_t b = window_first; has_window() && b < end; ++b) {
    if (s.window_blocks[static_cast<size_t>(b)] < 0) ++window_missing;
  }
  if (copies > n_blocks_free() || window_missing > window_.n_free()) {
    return make_error(ErrorCode::kResourceExhausted,
                      "[kv] context shift of sequence {} needs {} free blocks to copy shared ones "
                      "and {} window blocks, but {} and {} are free",
                      seq, copies, window_missing, n_blocks_free(), window_.n_free());
  }
  for (int64_t b = first; b < end; ++b) {
    int32_t& block = s.blocks[static_cast<size_t>(b)];
    if (main_.refs(block) == 1) {
      prefix_.unregister(block);
      continue;
    }
    const int32_t copy = take_block();
    main_.copy_block(copy, block);
    release_block(block);
    block = copy;
  }
  for (int64_t b = window_first; has_window() && b < end; ++b) {
    int32_t& block = s.window_blocks[static_cast<size_t>(b)];
    if (block < 0) block = window_.take();
  }
  return Status::ok();
}

Status KvCache::shift(const kernels::KernelTable& table, int32_t seq, int64_t n_keep,
                      int64_t n_discard, const KeyRotation& rotate) {
  KvSequence* held = tables_.find(seq);
  const int64_t length = held == nullptr ? 0 : held->length;
  if (n_keep < 0 || n_discard < 1 || n_keep + n_discard > length) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] context shift of sequence {}: keeping {} and discarding {} positions "
                      "needs 0 <= keep, 1 <= discard and keep + discard <= its length {}",
                      seq, n_keep, n_discard, length);
  }
  if (has_recurrent()) {
    return make_error(ErrorCode::kUnsupported,
                      "[kv] context shift of sequence {}: the model has recurrent layers, whose "
                      "state cannot drop tokens (start a new sequence instead)",
                      seq);
  }
  KvSequence& s = *held;
  const KvCacheConfig& c = config();
  const int64_t bs = c.block_size;
  const int64_t new_length = length - n_discard;
  // The next token, at new_length, sees sliding-layer positions >= window_from only.
  const int64_t window_from = std::max<int64_t>(0, tables_.first_seen(new_length));
  if (has_window() && window_from < n_keep) {
    for (int64_t b = window_from / bs; b * bs < n_keep; ++b) {
      if (s.window_blocks[static_cast<size_t>(b)] < 0) {
        return make_error(ErrorCode::kUnsupported,
                          "[kv] context shift of sequence {}: the sliding window would see kept "
                          "position {} whose cells are already released (keep {} of {})",
                          seq, b * bs, n_keep, length);
      }
    }
  }
  const int64_t end_block = (new_length + bs - 1) / bs;
  const int64_t window_first = std::max(n_keep, window_from) / bs;
  MINFER_RETURN_IF_ERROR(own_blocks(seq, s, n_keep / bs, end_block, window_first));

  const kernels::QuantizeRowFn to_cells = table.cells_from_f32[static_cast<size_t>(c.cell_type)];
  const kernels::DequantizeRowFn to_f32 = table.cells_to_f32[static_cast<size_t>(c.cell_type)];
  std::vector<float> k;  // [n_head_kv][head_dim] of layer il
  for (int64_t il = 0; il < c.n_layer; ++il) {
    const int64_t hd = layout_.head_dim(il);
    const int64_t n_head_kv = layout_.n_head_kv(il);
    k.resize(static_cast<size_t>(n_head_kv * hd));
    const std::vector<int32_t>& blocks = block_table(seq, il);
    const int64_t from = is_window_layer(il) ? std::max(n_keep, window_from) : n_keep;
    // Ascending: position p is written after every position <= p + n_discard was read.
    for (int64_t p = from; p < new_length; ++p) {
      const int64_t old_pos = p + n_discard;
      const int32_t src = blocks[static_cast<size_t>(old_pos / bs)];
      const int32_t dst = blocks[static_cast<size_t>(p / bs)];
      MINFER_CHECK(src >= 0 && dst >= 0, "context shift through a released window block");
      for (int64_t h = 0; h < n_head_kv; ++h) {
        to_f32(cell(src, il, false, h, old_pos % bs), k.data() + h * hd, hd);
      }
      // Hadamard-rotated keys (k_rotation) are turned back for RoPE and rotated again after it,
      // as llama.cpp's K shift does (H H = I).
      const int64_t runs = layout_.k_rotation > 0 ? n_head_kv * hd / layout_.k_rotation : 0;
      if (runs > 0) kernels::hadamard_rotate(k.data(), runs, layout_.k_rotation);
      rotate(il, old_pos, p, k.data());
      if (runs > 0) kernels::hadamard_rotate(k.data(), runs, layout_.k_rotation);
      for (int64_t h = 0; h < n_head_kv; ++h) {
        to_cells(k.data() + h * hd, cell(dst, il, false, h, p % bs), hd);
        std::memcpy(cell(dst, il, true, h, p % bs), cell(src, il, true, h, old_pos % bs),
                    layout_.v_row_bytes(il));
      }
    }
  }
  s.length = new_length;
  while (static_cast<int64_t>(s.blocks.size()) > end_block) pop_block(s);
  if (has_window()) release_outside_window(s);
  return Status::ok();
}

}  // namespace minfer
