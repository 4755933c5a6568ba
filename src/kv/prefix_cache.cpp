#include "kv/prefix_cache.h"

#include <algorithm>

#include "core/check.h"

namespace minfer {

namespace {

// The hash of a prefix that ends with `tokens`, chained from the hash of the prefix before them.
uint64_t chain_hash(uint64_t parent, std::span<const int32_t> tokens) {
  uint64_t h = parent ^ 0x9e3779b97f4a7c15ull;
  for (const int32_t t : tokens) {
    // SplitMix64's finalizer over each token mixed into the running value.
    uint64_t z = h + static_cast<uint32_t>(t) + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    h = z ^ (z >> 31);
  }
  return h == 0 ? 1 : h;  // 0 means "no parent"
}

}  // namespace

std::vector<int32_t> PrefixCache::match(std::span<const int32_t> tokens,
                                        int64_t n_positions) const {
  const int64_t bs = block_size_;
  const int64_t limit = std::min(static_cast<int64_t>(tokens.size()), n_positions);
  std::vector<int32_t> blocks;
  uint64_t parent = 0;
  for (int64_t i = 0; (i + 1) * bs <= limit; ++i) {
    const auto block_tokens = tokens.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs));
    const uint64_t h = chain_hash(parent, block_tokens);
    auto it = by_hash_.find(h);
    if (it == by_hash_.end()) break;
    const Entry& e = entries_[static_cast<size_t>(it->second)];
    // The hash is only a key: the block must really end this prefix.
    if (e.parent_hash != parent ||
        !std::equal(e.tokens.begin(), e.tokens.end(), block_tokens.begin(), block_tokens.end())) {
      break;
    }
    blocks.push_back(it->second);
    parent = h;
  }
  return blocks;
}

void PrefixCache::commit(std::span<const int32_t> table, std::span<const int32_t> tokens,
                         int64_t n_positions) {
  const int64_t bs = block_size_;
  const int64_t n = std::min(n_positions, static_cast<int64_t>(tokens.size()));
  uint64_t parent = 0;
  for (int64_t i = 0; (i + 1) * bs <= n; ++i) {
    const auto block_tokens = tokens.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs));
    const uint64_t h = chain_hash(parent, block_tokens);
    const int32_t id = table[static_cast<size_t>(i)];
    if (!is_registered(id) && by_hash_.count(h) == 0) {
      if (static_cast<size_t>(id) >= entries_.size()) entries_.resize(static_cast<size_t>(id) + 1);
      Entry& e = entries_[static_cast<size_t>(id)];
      e.registered = true;
      e.hash = h;
      e.parent_hash = parent;
      e.tokens.assign(block_tokens.begin(), block_tokens.end());
      by_hash_[h] = id;
    }
    parent = h;
  }
}

void PrefixCache::unregister(int32_t block) {
  if (!is_registered(block)) return;
  Entry& e = entries_[static_cast<size_t>(block)];
  auto it = by_hash_.find(e.hash);
  if (it != by_hash_.end() && it->second == block) by_hash_.erase(it);
  e.registered = false;
  e.tokens.clear();
}

void PrefixCache::park(int32_t block) {
  MINFER_CHECK(is_registered(block), "parking a block that ends no registered prefix");
  entries_[static_cast<size_t>(block)].lru_pos = lru_.insert(lru_.end(), block);
}

void PrefixCache::unpark(int32_t block) {
  lru_.erase(entries_[static_cast<size_t>(block)].lru_pos);
}

int32_t PrefixCache::evict() {
  if (lru_.empty()) return -1;
  const int32_t block = lru_.front();
  lru_.pop_front();
  unregister(block);
  return block;
}

}  // namespace minfer
