#include "kv/kv_cache.h"

#include <algorithm>
#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <iterator>
#include <optional>
#include <string_view>

#include <fmt/format.h>

#include "core/check.h"

namespace minfer {

namespace {

constexpr GgmlType kKvCellTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kQ8_0};
constexpr const char* kKvCellTypeNames = "f32, f16 or q8_0";  // for errors

// A run of one KV head's keys (or values) of one layer in a full segment (kv_cache.h, "Layout")
// is at least this long: the walk over shorter runs read Qwen3-0.6B's cells at depth 4096 up to
// 15% slower (64 KiB runs), one over 256 KiB runs as fast as over unbroken stripes.
constexpr size_t kSegmentRunBytes = size_t{256} << 10;

// The blocks of a full segment for rows of `row_bytes` (the longer of a key's and a value's): a
// power of two.
size_t full_segment_blocks(const KvCacheConfig& c, size_t row_bytes) {
  const size_t block_run = static_cast<size_t>(c.block_size) * row_bytes;
  return std::bit_ceil((kSegmentRunBytes + block_run - 1) / block_run);
}

// The memory of a pool whose blocks, up to the end of the segment that holds its last one, are
// block_bytes each (none when its blocks are empty).
Result<std::unique_ptr<PageRegion>> reserve_pool(int64_t n_blocks, size_t full_segment,
                                                 size_t block_bytes, std::string_view pool) {
  if (block_bytes == 0) return std::unique_ptr<PageRegion>();
  const KvSegment last = kv_segment_of(static_cast<size_t>(n_blocks) - 1, full_segment);
  const size_t n = last.first + last.size;
  if (n > SIZE_MAX / block_bytes) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] {} blocks of {} bytes are past the address space", n_blocks,
                      block_bytes);
  }
  return PageRegion::create(
      n * block_bytes, true, PageSize::kHuge,
      fmt::format("[kv] the cache's {} pool ({} blocks of {} bytes)", pool, n_blocks, block_bytes));
}

// Takes more of a pool's memory ahead of its first touch (kv_cache.h, `populated_ahead_`) for
// `added` positions written: two positions' bytes each, up to the end of the share of the segment
// after its newest block that this block stands for in its own segment (1 / its size of the next
// one; up to two blocks). Returns how far the pool is now taken ahead, from `done`.
size_t populate_ahead(const PageRegion* pool, size_t full_segment, size_t block_bytes,
                      int64_t block_size, int64_t n_allocated, int64_t added, size_t done) {
  if (pool == nullptr || n_allocated == 0) return done;
  const auto newest = static_cast<size_t>(n_allocated - 1);
  const KvSegment own = kv_segment_of(newest, full_segment);
  const KvSegment next = kv_segment_of(own.first + own.size, full_segment);
  const size_t share = next.size * block_bytes / own.size;  // next.size is own.size or twice it
  const size_t due = next.first * block_bytes + (newest - own.first + 1) * share;
  if (done >= due) return done;
  const size_t bytes =
      static_cast<size_t>(added) * 2 * block_bytes / static_cast<size_t>(block_size);
  const size_t end = std::min(due, done + bytes);
  pool->populate(done, end - done);
  return end;
}

}  // namespace

bool is_kv_cell_type(GgmlType type) {
  return std::find(std::begin(kKvCellTypes), std::end(kKvCellTypes), type) !=
         std::end(kKvCellTypes);
}

Result<GgmlType> parse_kv_cell_type(std::string_view name) {
  for (const GgmlType type : kKvCellTypes) {
    if (name == kv_cell_type_name(type)) return type;
  }
  return make_error(ErrorCode::kInvalidArgument, "[kv] unknown cache type '{}' (expected {})", name,
                    kKvCellTypeNames);
}

KvSegment kv_segment_of(size_t block, size_t full) {
  if (block >= full) return {block / full * full, full};
  const size_t first = block == 0 ? 0 : std::bit_floor(block);
  return {first, std::max<size_t>(first, 1)};
}

std::string_view kv_cell_type_name(GgmlType type) {
  return ggml_type_info(type).name;
}

KvCache::KvCache(const KvCacheConfig& config) : config_(config) {}

Result<std::unique_ptr<KvCache>> KvCache::create(const KvCacheConfig& c) {
  if (c.n_layer <= 0 || c.n_head_kv <= 0 || c.head_dim <= 0 || c.head_dim_v <= 0 ||
      c.block_size <= 0 || c.n_ctx <= 0 || c.max_blocks <= 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] bad cache shape: n_layer {}, n_head_kv {}, head_dim {}/{}, block_size "
                      "{}, n_ctx {}, max_blocks {} (all must be > 0)",
                      c.n_layer, c.n_head_kv, c.head_dim, c.head_dim_v, c.block_size, c.n_ctx,
                      c.max_blocks);
  }
  if (!is_kv_cell_type(c.cell_type)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] cache type {} is not a KV cell type (expected {})",
                      kv_cell_type_name(c.cell_type), kKvCellTypeNames);
  }
  const std::optional<uint64_t> k_row =
      ggml_row_bytes(c.cell_type, static_cast<uint64_t>(c.head_dim));
  const std::optional<uint64_t> v_row =
      ggml_row_bytes(c.cell_type, static_cast<uint64_t>(c.head_dim_v));
  if (!k_row || !v_row) {
    return make_error(ErrorCode::kUnsupported,
                      "[kv] cache type {} needs head dims that are multiples of {}, got {} and {}",
                      kv_cell_type_name(c.cell_type), ggml_type_info(c.cell_type).block_size,
                      c.head_dim, c.head_dim_v);
  }
  const bool windowed = c.window > 0 && !c.swa_layers.empty();
  if (windowed && static_cast<int64_t>(c.swa_layers.size()) != c.n_layer) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] swa_layers has {} entries, expected one per layer ({})",
                      c.swa_layers.size(), c.n_layer);
  }
  if (c.window < 0) {
    return make_error(ErrorCode::kInvalidArgument, "[kv] sliding window {} must be >= 0", c.window);
  }
  std::unique_ptr<KvCache> cache(new KvCache(c));
  cache->k_row_bytes_ = static_cast<size_t>(*k_row);
  cache->v_row_bytes_ = static_cast<size_t>(*v_row);
  const size_t slots = static_cast<size_t>(c.n_head_kv * c.block_size);
  cache->layer_bytes_ = slots * (cache->k_row_bytes_ + cache->v_row_bytes_);
  // Each layer takes the next slot of its pool's blocks: global layers the main blocks, sliding
  // layers the window blocks.
  int64_t n_global = 0;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (windowed && c.swa_layers[static_cast<size_t>(il)]) {
      cache->layer_slot_.push_back(static_cast<int64_t>(cache->window_layers_.size()));
      cache->window_layers_.push_back(il);
    } else {
      cache->layer_slot_.push_back(n_global++);
    }
  }
  cache->block_bytes_ = cache->layer_bytes_ * static_cast<size_t>(n_global);
  cache->window_block_bytes_ = cache->layer_bytes_ * cache->window_layers_.size();
  cache->full_segment_ = full_segment_blocks(c, std::max(cache->k_row_bytes_, cache->v_row_bytes_));
  MINFER_ASSIGN_OR_RETURN(cache->memory_, reserve_pool(c.max_blocks, cache->full_segment_,
                                                       cache->block_bytes_, "main"));
  MINFER_ASSIGN_OR_RETURN(
      cache->window_memory_,
      reserve_pool(c.max_blocks, cache->full_segment_, cache->window_block_bytes_, "window"));
  return cache;
}

int64_t KvCache::n_blocks_free() const {
  return static_cast<int64_t>(free_.size() + lru_.size()) +
         (config_.max_blocks - n_blocks_allocated());
}

int64_t KvCache::n_reserved(int32_t seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0
                           : static_cast<int64_t>(it->second.blocks.size()) * config_.block_size;
}

int64_t KvCache::length(int32_t seq) const {
  auto it = seqs_.find(seq);
  return it == seqs_.end() ? 0 : it->second.length;
}

void KvCache::set_length(int32_t seq, int64_t length) {
  MINFER_CHECK(length <= n_reserved(seq), "KV length past the reserved positions");
  const int64_t added = length - seqs_[seq].length;
  seqs_[seq].length = length;
  if (has_window()) release_outside_window(seq);
  if (added > 0) {
    populated_ahead_ =
        populate_ahead(memory_.get(), full_segment_, block_bytes_, config_.block_size,
                       n_blocks_allocated(), added, populated_ahead_);
    window_populated_ahead_ =
        populate_ahead(window_memory_.get(), full_segment_, window_block_bytes_, config_.block_size,
                       n_window_blocks_allocated(), added, window_populated_ahead_);
  }
}

bool KvCache::is_window_layer(int64_t il) const {
  return has_window() && config_.swa_layers[static_cast<size_t>(il)];
}

int64_t KvCache::n_window_blocks_held(int32_t seq) const {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return 0;
  const std::vector<int32_t>& table = it->second.window_blocks;
  return static_cast<int64_t>(table.size()) - std::count(table.begin(), table.end(), -1);
}

int64_t KvCache::n_window_blocks_free() const {
  return static_cast<int64_t>(window_free_.size()) +
         (config_.max_blocks - n_window_blocks_allocated());
}

int32_t KvCache::take_window_block() {
  if (!window_free_.empty()) {
    const int32_t id = window_free_.top();
    window_free_.pop();
    return id;
  }
  MINFER_CHECK(n_window_blocks_allocated() < config_.max_blocks, "KV window budget exceeded");
  return static_cast<int32_t>(n_window_blocks_allocated_++);
}

void KvCache::release_window_block(int32_t& block) {
  if (block < 0) return;
  window_free_.push(block);
  block = -1;
}

// The next token (position >= length) sees positions >= length - window + 1: the blocks that
// end before that go back to the window pool.
void KvCache::release_outside_window(int32_t seq) {
  Sequence& s = seqs_[seq];
  const int64_t first_seen = s.length - config_.window + 1;
  for (int64_t b = 0; (b + 1) * config_.block_size <= first_seen &&
                      b < static_cast<int64_t>(s.window_blocks.size());
       ++b) {
    release_window_block(s.window_blocks[static_cast<size_t>(b)]);
  }
}

bool KvCache::window_lost(const Sequence& s, int64_t n_positions) const {
  if (!has_window() || n_positions <= 0 || n_positions >= s.length) return false;
  const int64_t first_seen = std::max<int64_t>(0, n_positions - config_.window + 1);
  const size_t b = static_cast<size_t>(first_seen / config_.block_size);
  return b >= s.window_blocks.size() || s.window_blocks[b] < 0;
}

void KvCache::pop_block(Sequence& s) {
  release_block(s.blocks.back());
  s.blocks.pop_back();
  if (has_window()) {
    release_window_block(s.window_blocks.back());
    s.window_blocks.pop_back();
  }
}

int32_t KvCache::take_block() {
  int32_t id = -1;
  if (!free_.empty()) {
    id = free_.top();
    free_.pop();
  } else if (n_blocks_allocated() < config_.max_blocks) {
    // Never used: it reads as zeros (fresh anonymous pages), never as stale memory.
    id = static_cast<int32_t>(info_.size());
    info_.emplace_back();
  } else {
    // Evict the least recently used cached prefix block.
    MINFER_CHECK(!lru_.empty(), "KV block budget exceeded");
    id = lru_.front();
    lru_.pop_front();
    unregister(id);
  }
  info_[static_cast<size_t>(id)].refs = 1;
  return id;
}

void KvCache::release_block(int32_t block) {
  BlockInfo& b = info_[static_cast<size_t>(block)];
  MINFER_CHECK(b.refs > 0, "KV block released more often than held");
  if (--b.refs > 0) return;
  if (b.registered) {
    b.lru_pos = lru_.insert(lru_.end(), block);
  } else {
    free_.push(block);
  }
}

void KvCache::unregister(int32_t block) {
  BlockInfo& b = info_[static_cast<size_t>(block)];
  if (!b.registered) return;
  auto it = registered_.find(b.hash);
  if (it != registered_.end() && it->second == block) registered_.erase(it);
  b.registered = false;
  b.tokens.clear();
}

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

int64_t KvCache::match_prefix(int32_t seq, std::span<const int32_t> tokens, int64_t max_positions) {
  MINFER_CHECK(!has_sequence(seq) || seqs_[seq].blocks.empty(),
               "match_prefix on a sequence that holds blocks");
  // Registered blocks carry the global layers only: the sliding layers' cells of a shared
  // prefix are not kept, so nothing can be attached.
  if (has_window()) return 0;
  const int64_t bs = config_.block_size;
  const int64_t limit =
      std::min({static_cast<int64_t>(tokens.size()), max_positions, config_.n_ctx});
  std::vector<int32_t> attached;
  uint64_t parent = 0;
  for (int64_t i = 0; (i + 1) * bs <= limit; ++i) {
    const auto block_tokens = tokens.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs));
    const uint64_t h = chain_hash(parent, block_tokens);
    auto it = registered_.find(h);
    if (it == registered_.end()) break;
    const BlockInfo& b = info_[static_cast<size_t>(it->second)];
    // The hash is only a key: the block must really end this prefix.
    if (b.parent_hash != parent ||
        !std::equal(b.tokens.begin(), b.tokens.end(), block_tokens.begin(), block_tokens.end())) {
      break;
    }
    attached.push_back(it->second);
    parent = h;
  }
  if (attached.empty()) return 0;
  Sequence& s = seqs_[seq];
  for (const int32_t id : attached) {
    BlockInfo& b = info_[static_cast<size_t>(id)];
    if (b.refs++ == 0) lru_.erase(b.lru_pos);
    s.blocks.push_back(id);
  }
  s.length = static_cast<int64_t>(attached.size()) * bs;
  return s.length;
}

void KvCache::commit_prefix(int32_t seq, std::span<const int32_t> tokens) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end() || has_window()) return;  // no prefix sharing with sliding layers
  const int64_t bs = config_.block_size;
  const int64_t n = std::min(it->second.length, static_cast<int64_t>(tokens.size()));
  const std::vector<int32_t>& table = it->second.blocks;
  uint64_t parent = 0;
  for (int64_t i = 0; (i + 1) * bs <= n; ++i) {
    const auto block_tokens = tokens.subspan(static_cast<size_t>(i * bs), static_cast<size_t>(bs));
    const uint64_t h = chain_hash(parent, block_tokens);
    const int32_t id = table[static_cast<size_t>(i)];
    BlockInfo& b = info_[static_cast<size_t>(id)];
    if (!b.registered && registered_.count(h) == 0) {
      b.registered = true;
      b.hash = h;
      b.parent_hash = parent;
      b.tokens.assign(block_tokens.begin(), block_tokens.end());
      registered_[h] = id;
    }
    parent = h;
  }
}

Status KvCache::reserve(int32_t seq, int64_t n_positions) {
  if (n_positions > config_.n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[kv] sequence {} needs {} positions, past the context of {}", seq,
                      n_positions, config_.n_ctx);
  }
  Sequence& s = seqs_[seq];
  std::vector<int32_t>& table = s.blocks;
  const int64_t needed = (n_positions + config_.block_size - 1) / config_.block_size;
  const int64_t missing = needed - static_cast<int64_t>(table.size());
  if (missing <= 0) return Status::ok();
  const int64_t window_missing = has_window() ? missing : 0;
  if (missing > n_blocks_free() || window_missing > n_window_blocks_free()) {
    if (table.empty()) seqs_.erase(seq);
    return make_error(ErrorCode::kResourceExhausted,
                      "[kv] sequence {} needs {} more blocks of {} positions but only {} of the "
                      "budget of {} are free ({} in the sliding-window pool)",
                      seq, missing, config_.block_size, n_blocks_free(), config_.max_blocks,
                      n_window_blocks_free());
  }
  for (int64_t i = 0; i < missing; ++i) table.push_back(take_block());
  for (int64_t i = 0; i < window_missing; ++i) s.window_blocks.push_back(take_window_block());
  return Status::ok();
}

void KvCache::free_sequence(int32_t seq) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  // Last block first: the blocks that end a prefix become older in the LRU order than the blocks
  // before them, so eviction never orphans a prefix's head while keeping its tail.
  const std::vector<int32_t>& table = it->second.blocks;
  for (auto b = table.rbegin(); b != table.rend(); ++b) release_block(*b);
  for (int32_t& b : it->second.window_blocks) release_window_block(b);
  seqs_.erase(it);
}

void KvCache::truncate(int32_t seq, int64_t n_positions) {
  auto it = seqs_.find(seq);
  if (it == seqs_.end()) return;
  const int64_t bs = config_.block_size;
  n_positions = std::max<int64_t>(n_positions, 0);
  // A token after the kept positions would see released sliding-layer cells: keep nothing.
  if (window_lost(it->second, n_positions)) n_positions = 0;
  it->second.length = std::min(it->second.length, n_positions);
  std::vector<int32_t>& table = it->second.blocks;
  const size_t keep = static_cast<size_t>((n_positions + bs - 1) / bs);
  while (table.size() > keep) pop_block(it->second);
  // A kept block that is cut in the middle will be written again: it may not stay registered.
  if (n_positions % bs != 0 && table.size() == keep && keep > 0) {
    const int32_t last = table.back();
    BlockInfo& b = info_[static_cast<size_t>(last)];
    if (b.refs == 1) {
      unregister(last);
    } else if (n_blocks_free() > 0) {
      const int32_t copy = take_block();
      copy_block(copy, last);
      release_block(last);
      table.back() = copy;
    } else {
      pop_block(it->second);
      it->second.length = std::min(it->second.length, static_cast<int64_t>(table.size()) * bs);
    }
  }
}

Status KvCache::own_blocks(int32_t seq, Sequence& s, int64_t first, int64_t end,
                           int64_t window_first) {
  int64_t copies = 0;
  for (int64_t b = first; b < end; ++b) {
    if (info_[static_cast<size_t>(s.blocks[static_cast<size_t>(b)])].refs > 1) ++copies;
  }
  int64_t window_missing = 0;
  for (int64_t b = window_first; has_window() && b < end; ++b) {
    if (s.window_blocks[static_cast<size_t>(b)] < 0) ++window_missing;
  }
  if (copies > n_blocks_free() || window_missing > n_window_blocks_free()) {
    return make_error(ErrorCode::kResourceExhausted,
                      "[kv] context shift of sequence {} needs {} free blocks to copy shared ones "
                      "and {} window blocks, but {} and {} are free",
                      seq, copies, window_missing, n_blocks_free(), n_window_blocks_free());
  }
  for (int64_t b = first; b < end; ++b) {
    int32_t& block = s.blocks[static_cast<size_t>(b)];
    if (info_[static_cast<size_t>(block)].refs == 1) {
      unregister(block);
      continue;
    }
    const int32_t copy = take_block();
    copy_block(copy, block);
    release_block(block);
    block = copy;
  }
  for (int64_t b = window_first; has_window() && b < end; ++b) {
    int32_t& block = s.window_blocks[static_cast<size_t>(b)];
    if (block < 0) block = take_window_block();
  }
  return Status::ok();
}

Status KvCache::shift(const kernels::KernelTable& table, int32_t seq, int64_t n_keep,
                      int64_t n_discard, const KeyRotation& rotate) {
  auto it = seqs_.find(seq);
  const int64_t length = it == seqs_.end() ? 0 : it->second.length;
  if (n_keep < 0 || n_discard < 1 || n_keep + n_discard > length) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] context shift of sequence {}: keeping {} and discarding {} positions "
                      "needs 0 <= keep, 1 <= discard and keep + discard <= its length {}",
                      seq, n_keep, n_discard, length);
  }
  Sequence& s = it->second;
  const int64_t bs = config_.block_size;
  const int64_t new_length = length - n_discard;
  // The next token, at new_length, sees sliding-layer positions >= window_from only.
  const int64_t window_from = std::max<int64_t>(0, new_length - config_.window + 1);
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

  const kernels::QuantizeRowFn to_cells =
      table.cells_from_f32[static_cast<size_t>(config_.cell_type)];
  const kernels::DequantizeRowFn to_f32 =
      table.cells_to_f32[static_cast<size_t>(config_.cell_type)];
  const int64_t hd = config_.head_dim;
  std::vector<float> k(static_cast<size_t>(config_.n_head_kv * hd));  // [n_head_kv][head_dim]
  for (int64_t il = 0; il < config_.n_layer; ++il) {
    const std::vector<int32_t>& blocks = block_table(seq, il);
    const int64_t from = is_window_layer(il) ? std::max(n_keep, window_from) : n_keep;
    // Ascending: position p is written after every position <= p + n_discard was read.
    for (int64_t p = from; p < new_length; ++p) {
      const int64_t old_pos = p + n_discard;
      const int32_t src = blocks[static_cast<size_t>(old_pos / bs)];
      const int32_t dst = blocks[static_cast<size_t>(p / bs)];
      MINFER_CHECK(src >= 0 && dst >= 0, "context shift through a released window block");
      for (int64_t h = 0; h < config_.n_head_kv; ++h) {
        to_f32(cell(src, il, false, h, old_pos % bs), k.data() + h * hd, hd);
      }
      rotate(il, old_pos, p, k.data());
      for (int64_t h = 0; h < config_.n_head_kv; ++h) {
        to_cells(k.data() + h * hd, cell(dst, il, false, h, p % bs), hd);
        std::memcpy(cell(dst, il, true, h, p % bs), cell(src, il, true, h, old_pos % bs),
                    v_row_bytes_);
      }
    }
  }
  s.length = new_length;
  while (static_cast<int64_t>(s.blocks.size()) > end_block) pop_block(s);
  if (has_window()) release_outside_window(seq);
  return Status::ok();
}

size_t KvCache::seen_bytes(int64_t n_positions) const {
  size_t rows = 0;
  for (int64_t il = 0; il < config_.n_layer; ++il) {
    const int64_t n = is_window_layer(il) ? std::min(n_positions, config_.window) : n_positions;
    rows += static_cast<size_t>(config_.n_head_kv * n);
  }
  return rows * (k_row_bytes_ + v_row_bytes_);
}

size_t KvCache::cells_bytes(int64_t n_positions) const {
  const size_t rows = static_cast<size_t>(config_.n_layer * config_.n_head_kv * n_positions);
  return rows * (k_row_bytes_ + v_row_bytes_);
}

template <typename Fn>
void KvCache::for_each_run(int32_t seq, int64_t n_positions, Fn&& copy) {
  if (n_positions <= 0) return;
  const int64_t bs = config_.block_size;
  size_t offset = 0;
  for (int64_t il = 0; il < config_.n_layer; ++il) {
    const std::vector<int32_t>& table = block_table(seq, il);
    for (const bool is_v : {false, true}) {
      const size_t row = is_v ? v_row_bytes_ : k_row_bytes_;
      for (int64_t h = 0; h < config_.n_head_kv; ++h) {
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
  const_cast<KvCache*>(this)->for_each_run(seq, n_positions,
                                           [&](const uint8_t* cells, size_t offset, size_t bytes) {
                                             if (cells == nullptr) {
                                               std::memset(out.data() + offset, 0, bytes);
                                             } else {
                                               std::memcpy(out.data() + offset, cells, bytes);
                                             }
                                           });
}

Status KvCache::write_cells(int32_t seq, int64_t n_positions, std::span<const uint8_t> in) {
  MINFER_CHECK(!has_sequence(seq) || seqs_[seq].blocks.empty(),
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

const std::vector<int32_t>& KvCache::block_table(int32_t seq) const {
  auto it = seqs_.find(seq);
  MINFER_CHECK(it != seqs_.end(), "block_table of an unknown sequence");
  return it->second.blocks;
}

const std::vector<int32_t>& KvCache::block_table(int32_t seq, int64_t il) const {
  if (!is_window_layer(il)) return block_table(seq);
  auto it = seqs_.find(seq);
  MINFER_CHECK(it != seqs_.end(), "block_table of an unknown sequence");
  return it->second.window_blocks;
}

uint8_t* KvCache::stripe_cells(bool window, int64_t layer_slot, bool is_v, int64_t h,
                               int32_t block) const {
  const PageRegion& pool = window ? *window_memory_ : *memory_;
  const KvSegment seg = kv_segment_of(static_cast<size_t>(block), full_segment_);
  size_t offset = seg.first * (window ? window_block_bytes_ : block_bytes_);
  offset += static_cast<size_t>(layer_slot) * seg.size * layer_bytes_;
  const size_t rows = seg.size * static_cast<size_t>(config_.block_size);  // per run
  if (is_v) offset += rows * static_cast<size_t>(config_.n_head_kv) * k_row_bytes_;
  const size_t row = is_v ? v_row_bytes_ : k_row_bytes_;
  const size_t in_segment = static_cast<size_t>(block) - seg.first;
  offset +=
      (static_cast<size_t>(h) * rows + in_segment * static_cast<size_t>(config_.block_size)) * row;
  return pool.data() + offset;
}

void KvCache::copy_block(int32_t to, int32_t from) {
  const auto n_slots = static_cast<int64_t>(block_bytes_ / layer_bytes_);
  for (int64_t s = 0; s < n_slots; ++s) {
    for (const bool is_v : {false, true}) {
      const size_t bytes =
          static_cast<size_t>(config_.block_size) * (is_v ? v_row_bytes_ : k_row_bytes_);
      for (int64_t h = 0; h < config_.n_head_kv; ++h) {
        std::memcpy(stripe_cells(false, s, is_v, h, to), stripe_cells(false, s, is_v, h, from),
                    bytes);
      }
    }
  }
}

uint8_t* KvCache::cell(int32_t block, int64_t il, bool is_v, int64_t h, int64_t slot) {
  const size_t row = is_v ? v_row_bytes_ : k_row_bytes_;
  return stripe_cells(is_window_layer(il), layer_slot_[static_cast<size_t>(il)], is_v, h, block) +
         static_cast<size_t>(slot) * row;
}

const uint8_t* KvCache::k_block(int32_t block, int64_t il, int64_t h) const {
  return const_cast<KvCache*>(this)->cell(block, il, false, h, 0);
}

const uint8_t* KvCache::v_block(int32_t block, int64_t il, int64_t h) const {
  return const_cast<KvCache*>(this)->cell(block, il, true, h, 0);
}

void KvCache::store(const kernels::KernelTable& table, int64_t il, int32_t seq, int64_t pos,
                    const float* k, const float* v) {
  const std::vector<int32_t>& blocks = block_table(seq, il);
  MINFER_CHECK(pos >= 0 && pos / config_.block_size < static_cast<int64_t>(blocks.size()),
               "KV store at an unreserved position");
  const int32_t block = blocks[static_cast<size_t>(pos / config_.block_size)];
  MINFER_CHECK(block >= 0, "KV store into a released window block");
  MINFER_CHECK(is_window_layer(il) || !info_[static_cast<size_t>(block)].registered,
               "KV store into a registered block");
  const int64_t slot = pos % config_.block_size;
  const kernels::QuantizeRowFn to_cells =
      table.cells_from_f32[static_cast<size_t>(config_.cell_type)];
  for (int64_t h = 0; h < config_.n_head_kv; ++h) {
    to_cells(k + h * config_.head_dim, cell(block, il, false, h, slot), config_.head_dim);
    to_cells(v + h * config_.head_dim_v, cell(block, il, true, h, slot), config_.head_dim_v);
  }
}

}  // namespace minfer
