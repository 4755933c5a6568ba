// The prefix cache (DESIGN.md §4 "KV cache"): full blocks of the main pool registered under the
// hash of the whole token prefix they end, so that a new sequence whose tokens begin with them
// attaches them instead of computing them again; registered blocks that no sequence holds are
// parked, least recently used first, until the pool needs them back (evict). It knows block ids,
// hashes and tokens only: the pool (kv/block_pool.h) keeps how often each block is held, and the
// cache (kv/kv_cache.h) parks a registered block when its last holder lets go. Registered blocks
// are read-only: nothing stores into them again until they are unregistered.
#pragma once

#include <cstdint>
#include <list>
#include <span>
#include <unordered_map>
#include <vector>

namespace minfer {

class PrefixCache {
 public:
  explicit PrefixCache(int64_t block_size) : block_size_(block_size) {}

  bool is_registered(int32_t block) const {
    return static_cast<size_t>(block) < entries_.size() &&
           entries_[static_cast<size_t>(block)].registered;
  }
  // The longest run of registered blocks that begins `tokens`, at most n_positions positions of
  // it, in position order.
  std::vector<int32_t> match(std::span<const int32_t> tokens, int64_t n_positions) const;
  // Registers the blocks of `table` (a block table) that hold the first n_positions positions of
  // `tokens` in full blocks. A block already registered, or whose prefix is registered under
  // another block, is left as it is.
  void commit(std::span<const int32_t> table, std::span<const int32_t> tokens, int64_t n_positions);
  // Forgets a block's prefix (its cells will change); a parked block must be unparked first.
  void unregister(int32_t block);

  // Parks a registered block that no sequence holds any more, as the most recently used.
  void park(int32_t block);
  // Takes a parked block out of the LRU order (a sequence holds it again).
  void unpark(int32_t block);
  // The least recently used parked block, unregistered, for the pool to hand out again; -1 when
  // none is parked.
  int32_t evict();

  int64_t n_parked() const { return static_cast<int64_t>(lru_.size()); }
  int64_t n_registered() const { return static_cast<int64_t>(by_hash_.size()); }

 private:
  struct Entry {
    bool registered = false;
    uint64_t hash = 0;                     // of the token prefix the block ends
    uint64_t parent_hash = 0;              // of the prefix before it (0 for the first block)
    std::vector<int32_t> tokens;           // [block_size] when registered
    std::list<int32_t>::iterator lru_pos;  // in lru_ when parked
  };

  int64_t block_size_;
  std::vector<Entry> entries_;                     // by block id, up to the highest registered one
  std::unordered_map<uint64_t, int32_t> by_hash_;  // prefix hash → block
  std::list<int32_t> lru_;                         // parked blocks, least recently used first
};

}  // namespace minfer
