// One pool of KV blocks (kv/kv_cache.h has two: the main pool for global layers, the window pool
// for sliding-window ones): its memory, where each cell of a block lies, which ids are free, how
// often each block is held, and the budget of blocks it may hand out.
//
// Layout: a pool's blocks are laid out in segments of consecutive block ids; a segment holds, for
// each of the pool's layers, the keys of every KV head then their values, each head's cells of
// the segment's blocks in one run:
//   segment of S blocks, layer slot: K [n_head_kv][S][block_size][k_row_bytes], then V
// so one KV head's keys of a block are contiguous (attention walks them in place), and so are
// those of consecutive blocks of a segment: a sequence's blocks, taken in ascending order, are
// long runs per layer and head that attention reads in one kernel call per chunk and the
// hardware prefetchers follow (a block-major layout, all layers of a block together, made every
// 4-8 KB run a new stream). Segments hold 1, 1, 2, 4, ... blocks, doubling up to a full segment,
// whose runs are at least 256 KiB (kv_segment_of), then full segments: the pool takes 2 MiB pages
// as cells are first written (a stream through 4 KiB pages misses the TLB every few rows), and a
// segment's first block touches every page of the segment, so a pool takes at most about twice
// the memory of the blocks it has handed out (and a 2 MiB page), not a page per stripe
// (2 · n_layer · n_head_kv of them) at its first block; the next segment's memory is taken ahead
// while the positions before it are written (populate_ahead), not all in the step that reaches
// it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <queue>
#include <string_view>
#include <vector>

#include "core/page_region.h"
#include "core/status.h"
#include "kv/kv_layout.h"

namespace minfer {

class KvBlockPool {
 public:
  // A pool of up to max_blocks blocks, each holding the cells of n_layers layers of `layout`
  // shaped as `shape` (the main or the window pool's rows; none: an empty pool that holds no memory
  // and whose cells are never addressed). `name`
  // ("main", "window") is for errors. Fails when the budget is past the address space.
  static Result<KvBlockPool> create(const KvLayout& layout, const KvLayout::PoolShape& shape,
                                    int64_t n_layers, int64_t max_blocks, std::string_view name);

  size_t block_bytes() const { return block_bytes_; }  // every layer's K and V of one block
  int64_t n_allocated() const { return static_cast<int64_t>(refs_.size()); }
  // Blocks take() can hand out: ids no one holds and none parked (recycle), and those the budget
  // has not allocated yet.
  int64_t n_free() const {
    return static_cast<int64_t>(free_.size()) + (max_blocks_ - n_allocated());
  }
  int64_t n_held() const { return n_held_; }  // blocks held at least once

  // The lowest free id, else a never used one (its cells read as zeros), held once.
  // Precondition: n_free() > 0.
  int32_t take();
  // Holds `block` once more; returns whether no one held it before (a parked block).
  bool hold(int32_t block);
  // Drops one hold of `block`; returns whether no one holds it now. The caller then either
  // recycles it or parks it (a cached prefix block, kv/prefix_cache.h) until it is held again.
  bool release(int32_t block);
  // Makes a block no one holds free for take() again.
  void recycle(int32_t block) { free_.push(block); }
  int32_t refs(int32_t block) const { return refs_[static_cast<size_t>(block)]; }

  // The cells of KV head h of `block` in layer slot `slot` (KvLayout::layer_slot), keys or values:
  // [block_size][row bytes] in the cell type.
  uint8_t* cells(int64_t slot, bool is_v, int64_t h, int32_t block) const {
    const KvSegment seg = kv_segment_of(static_cast<size_t>(block), full_segment_);
    size_t offset = seg.first * block_bytes_ + static_cast<size_t>(slot) * seg.size * layer_bytes_;
    const size_t rows = seg.size * block_size_;  // per run
    if (is_v) offset += rows * n_head_kv_ * k_row_bytes_;
    const size_t row = is_v ? v_row_bytes_ : k_row_bytes_;
    const size_t in_segment = static_cast<size_t>(block) - seg.first;
    offset += (static_cast<size_t>(h) * rows + in_segment * block_size_) * row;
    return memory_->data() + offset;
  }
  // Copies block `from`'s cells, every layer and head, into block `to`.
  void copy_block(int32_t to, int32_t from);
  // Takes memory ahead of its first touch for `added` positions written (populated_ahead_).
  void populate_ahead(int64_t added);

 private:
  size_t block_size_ = 0;  // positions per block
  size_t n_head_kv_ = 0;
  size_t k_row_bytes_ = 0;
  size_t v_row_bytes_ = 0;
  size_t layer_bytes_ = 0;  // one layer's K and V of a block
  int64_t n_layers_ = 0;
  size_t block_bytes_ = 0;
  size_t full_segment_ = 1;
  int64_t max_blocks_ = 0;
  // The max_blocks blocks in segments (the layout above); 2 MiB pages are taken as cells are
  // first written. Null for an empty pool.
  std::unique_ptr<PageRegion> memory_;
  // Ids of blocks no one holds that are not parked, the lowest taken first: a sequence reserved
  // after others were freed gets ascending ids, whose cells follow each other in the runs.
  std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>> free_;
  std::vector<int32_t> refs_;  // [n_allocated] how often each block is held
  int64_t n_held_ = 0;
  // Memory taken ahead of its first touch: a segment's first block touches every page of the
  // segment (each of its runs starts one), so a full segment would be taken in the one step that
  // writes that block, stalling it. Instead, each new block of a segment makes its share of the
  // next segment due (1 / the segment's size of it), and each position written takes two
  // positions' bytes of what is due: the next segment is ready when its first block is written,
  // and a pool holds at most one segment more than it would. Bytes taken ahead so far:
  size_t populated_ahead_ = 0;
};

}  // namespace minfer
