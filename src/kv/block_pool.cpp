#include "kv/block_pool.h"

#include <algorithm>
#include <cstdint>
#include <cstring>

#include <fmt/format.h>

#include "core/check.h"

namespace minfer {

Result<KvBlockPool> KvBlockPool::create(const KvLayout& layout, const KvLayout::PoolShape& shape,
                                        int64_t n_layers, int64_t max_blocks,
                                        std::string_view name) {
  const KvCacheConfig& c = layout.config;
  KvBlockPool pool;
  pool.block_size_ = static_cast<size_t>(c.block_size);
  pool.n_head_kv_ = static_cast<size_t>(shape.n_head_kv);
  pool.k_row_bytes_ = shape.k_row_bytes;
  pool.v_row_bytes_ = shape.v_row_bytes;
  pool.layer_bytes_ = pool.n_head_kv_ * pool.block_size_ * (pool.k_row_bytes_ + pool.v_row_bytes_);
  pool.n_layers_ = n_layers;
  pool.block_bytes_ = pool.layer_bytes_ * static_cast<size_t>(n_layers);
  pool.full_segment_ = layout.full_segment;
  pool.max_blocks_ = max_blocks;
  if (pool.block_bytes_ == 0) return pool;
  // The memory up to the end of the segment that holds the last block.
  const KvSegment last = kv_segment_of(static_cast<size_t>(max_blocks) - 1, pool.full_segment_);
  const size_t n = last.first + last.size;
  if (n > SIZE_MAX / pool.block_bytes_) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] {} blocks of {} bytes are past the address space", max_blocks,
                      pool.block_bytes_);
  }
  MINFER_ASSIGN_OR_RETURN(
      pool.memory_,
      PageRegion::create(n * pool.block_bytes_, true, PageSize::kHuge,
                         fmt::format("[kv] the cache's {} pool ({} blocks of {} bytes)", name,
                                     max_blocks, pool.block_bytes_)));
  return pool;
}

int32_t KvBlockPool::take() {
  int32_t id = -1;
  if (!free_.empty()) {
    id = free_.top();
    free_.pop();
  } else {
    MINFER_CHECK(n_allocated() < max_blocks_, "KV block budget exceeded");
    // Never used: it reads as zeros (fresh anonymous pages), never as stale memory.
    id = static_cast<int32_t>(refs_.size());
    refs_.push_back(0);
  }
  refs_[static_cast<size_t>(id)] = 1;
  ++n_held_;
  return id;
}

bool KvBlockPool::hold(int32_t block) {
  if (refs_[static_cast<size_t>(block)]++ > 0) return false;
  ++n_held_;
  return true;
}

bool KvBlockPool::release(int32_t block) {
  int32_t& refs = refs_[static_cast<size_t>(block)];
  MINFER_CHECK(refs > 0, "KV block released more often than held");
  if (--refs > 0) return false;
  --n_held_;
  return true;
}

void KvBlockPool::copy_block(int32_t to, int32_t from) {
  for (int64_t slot = 0; slot < n_layers_; ++slot) {
    for (const bool is_v : {false, true}) {
      const size_t bytes = block_size_ * (is_v ? v_row_bytes_ : k_row_bytes_);
      for (size_t h = 0; h < n_head_kv_; ++h) {
        const auto head = static_cast<int64_t>(h);
        std::memcpy(cells(slot, is_v, head, to), cells(slot, is_v, head, from), bytes);
      }
    }
  }
}

// The share of the segment after the newest block that this block stands for in its own segment
// is 1 / its size of the next one (up to two blocks); each position written takes two positions'
// bytes of what is due.
void KvBlockPool::populate_ahead(int64_t added) {
  if (memory_ == nullptr || n_allocated() == 0) return;
  const auto newest = static_cast<size_t>(n_allocated() - 1);
  const KvSegment own = kv_segment_of(newest, full_segment_);
  const KvSegment next = kv_segment_of(own.first + own.size, full_segment_);
  const size_t share = next.size * block_bytes_ / own.size;  // next.size is own.size or twice it
  const size_t due = next.first * block_bytes_ + (newest - own.first + 1) * share;
  if (populated_ahead_ >= due) return;
  const size_t bytes = static_cast<size_t>(added) * 2 * block_bytes_ / block_size_;
  const size_t end = std::min(due, populated_ahead_ + bytes);
  memory_->populate(populated_ahead_, end - populated_ahead_);
  populated_ahead_ = end;
}

}  // namespace minfer
