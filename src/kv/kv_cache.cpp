#include "kv/kv_cache.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "core/check.h"
#include "kernels/hadamard.h"

namespace minfer {

KvCache::KvCache(KvLayout layout, KvBlockPool main, KvBlockPool window)
    : layout_(std::move(layout)),
      main_(std::move(main)),
      window_(std::move(window)),
      prefix_(layout_.config.block_size),
      tables_(layout_),
      states_(static_cast<int64_t>(layout_.recurrent_layers.size()),
              layout_.config.conv_state_floats, layout_.config.delta_state_floats,
              layout_.config.max_state_slots + layout_.config.max_prefix_states) {}

int32_t KvCache::state_slot(int32_t seq) const {
  const KvSequence* s = tables_.find(seq);
  MINFER_CHECK(s != nullptr && s->state_slot >= 0, "recurrent state of a sequence without one");
  return s->state_slot;
}

float* KvCache::conv_state(int32_t seq, int64_t il) {
  return states_.conv(state_slot(seq), layout_.layer_slot[static_cast<size_t>(il)]);
}

float* KvCache::delta_state(int32_t seq, int64_t il) {
  return states_.delta(state_slot(seq), layout_.layer_slot[static_cast<size_t>(il)]);
}

Result<std::unique_ptr<KvCache>> KvCache::create(const KvCacheConfig& c) {
  MINFER_ASSIGN_OR_RETURN(KvLayout layout, KvLayout::create(c));
  MINFER_ASSIGN_OR_RETURN(
      KvBlockPool main,
      KvBlockPool::create(layout, layout.main, layout.n_global_layers(), c.max_blocks, "main"));
  const auto n_window_layers = static_cast<int64_t>(layout.window_layers.size());
  MINFER_ASSIGN_OR_RETURN(
      KvBlockPool window,
      KvBlockPool::create(layout, layout.window, n_window_layers, c.max_blocks, "window"));
  return std::unique_ptr<KvCache>(
      new KvCache(std::move(layout), std::move(main), std::move(window)));
}

void KvCache::set_length(int32_t seq, int64_t length) {
  MINFER_CHECK(length <= n_reserved(seq), "KV length past the reserved positions");
  KvSequence& s = tables_.get(seq);
  const int64_t added = length - s.length;
  s.length = length;
  if (has_window()) release_outside_window(s);
  if (added > 0) {
    main_.populate_ahead(added);
    window_.populate_ahead(added);
  }
}

int32_t KvCache::take_block() {
  if (main_.n_free() > 0) return main_.take();
  const int32_t id = prefix_.evict();  // the least recently used parked prefix block
  MINFER_CHECK(id >= 0, "KV block budget exceeded");
  drop_prefix_state(id);
  main_.hold(id);
  return id;
}

void KvCache::release_block(int32_t block) {
  if (!main_.release(block)) return;
  if (prefix_.is_registered(block)) {
    prefix_.park(block);
  } else {
    main_.recycle(block);
  }
}

void KvCache::release_window_block(int32_t& block) {
  if (block < 0) return;
  if (window_.release(block)) window_.recycle(block);
  block = -1;
}

void KvCache::release_outside_window(KvSequence& s) {
  const int64_t n = tables_.n_out_of_window(s);
  for (int64_t b = 0; b < n; ++b) release_window_block(s.window_blocks[static_cast<size_t>(b)]);
}

void KvCache::pop_block(KvSequence& s) {
  release_block(s.blocks.back());
  s.blocks.pop_back();
  if (has_window()) {
    release_window_block(s.window_blocks.back());
    s.window_blocks.pop_back();
  }
}

int64_t KvCache::match_prefix(int32_t seq, std::span<const int32_t> tokens, int64_t max_positions) {
  const KvSequence* held = tables_.find(seq);
  MINFER_CHECK(held == nullptr || held->blocks.empty(),
               "match_prefix on a sequence that holds blocks");
  // Registered blocks carry the global layers only: the sliding layers' cells of a shared
  // prefix are not kept, so nothing can be attached.
  if (has_window()) return 0;
  std::vector<int32_t> attached = prefix_.match(tokens, std::min(max_positions, config().n_ctx));
  // With recurrent layers only a run whose last block keeps the state after it can resume.
  while (has_recurrent() && !attached.empty() && !prefix_states_.contains(attached.back())) {
    attached.pop_back();
  }
  if (attached.empty()) return 0;
  if (has_recurrent() && held == nullptr && states_.n_free() == 0) return 0;
  KvSequence& s = tables_.get(seq);
  for (const int32_t id : attached) {
    if (main_.hold(id)) prefix_.unpark(id);
    s.blocks.push_back(id);
  }
  s.length = static_cast<int64_t>(attached.size()) * config().block_size;
  if (has_recurrent()) {
    if (s.state_slot < 0) s.state_slot = states_.take();
    PrefixState& kept = prefix_states_.at(attached.back());
    states_.copy(s.state_slot, kept.slot);
    prefix_state_lru_.splice(prefix_state_lru_.end(), prefix_state_lru_, kept.lru_pos);
  }
  return s.length;
}

void KvCache::commit_prefix(int32_t seq, std::span<const int32_t> tokens, bool keep_state) {
  const KvSequence* s = tables_.find(seq);
  // No prefix sharing with sliding layers.
  if (s == nullptr || has_window()) return;
  prefix_.commit(s->blocks, tokens, s->length);
  if (keep_state && has_recurrent()) keep_prefix_state(*s, tokens);
}

void KvCache::keep_prefix_state(const KvSequence& s, std::span<const int32_t> tokens) {
  const int64_t bs = config().block_size;
  if (config().max_prefix_states <= 0 || s.state_slot < 0 || s.length == 0 || s.length % bs != 0 ||
      static_cast<int64_t>(tokens.size()) < s.length) {
    return;
  }
  // The registered block that ends the prefix: the sequence's own, or another one's that
  // holds the same tokens.
  const std::vector<int32_t> run = prefix_.match(tokens, s.length);
  if (static_cast<int64_t>(run.size()) * bs != s.length) return;
  const int32_t block = run.back();
  if (auto it = prefix_states_.find(block); it != prefix_states_.end()) {
    prefix_state_lru_.splice(prefix_state_lru_.end(), prefix_state_lru_, it->second.lru_pos);
    return;
  }
  if (n_prefix_states() >= config().max_prefix_states) {
    drop_prefix_state(prefix_state_lru_.front());
  }
  if (states_.n_free() == 0) return;
  const int32_t slot = states_.take();
  states_.copy(slot, s.state_slot);
  prefix_states_[block] = {slot, prefix_state_lru_.insert(prefix_state_lru_.end(), block)};
}

void KvCache::drop_prefix_state(int32_t block) {
  auto it = prefix_states_.find(block);
  if (it == prefix_states_.end()) return;
  states_.release(it->second.slot);
  prefix_state_lru_.erase(it->second.lru_pos);
  prefix_states_.erase(it);
}

Status KvCache::reserve(int32_t seq, int64_t n_positions) {
  const KvCacheConfig& c = config();
  if (n_positions > c.n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[kv] sequence {} needs {} positions, past the context of {}", seq,
                      n_positions, c.n_ctx);
  }
  KvSequence& s = tables_.get(seq);
  const int64_t needed = (n_positions + c.block_size - 1) / c.block_size;
  const int64_t missing = needed - static_cast<int64_t>(s.blocks.size());
  if (missing <= 0) return Status::ok();
  const int64_t window_missing = has_window() ? missing : 0;
  const bool needs_state = has_recurrent() && s.state_slot < 0;
  if (needs_state && states_.n_free() == 0) {
    if (s.blocks.empty()) tables_.erase(seq);
    return make_error(ErrorCode::kResourceExhausted,
                      "[kv] sequence {} needs a recurrent state but all {} state slots are held",
                      seq, states_.max_slots());
  }
  if (missing > n_blocks_free() || window_missing > window_.n_free()) {
    if (s.blocks.empty()) tables_.erase(seq);
    return make_error(ErrorCode::kResourceExhausted,
                      "[kv] sequence {} needs {} more blocks of {} positions but only {} of the "
                      "budget of {} are free ({} in the sliding-window pool)",
                      seq, missing, c.block_size, n_blocks_free(), c.max_blocks, window_.n_free());
  }
  if (needs_state) s.state_slot = states_.take();
  for (int64_t i = 0; i < missing; ++i) s.blocks.push_back(take_block());
  for (int64_t i = 0; i < window_missing; ++i) s.window_blocks.push_back(window_.take());
  return Status::ok();
}

void KvCache::free_sequence(int32_t seq) {
  KvSequence* s = tables_.find(seq);
  if (s == nullptr) return;
  // Last block first: the blocks that end a prefix become older in the LRU order than the blocks
  // before them, so eviction never orphans a prefix's head while keeping its tail.
  for (auto b = s->blocks.rbegin(); b != s->blocks.rend(); ++b) release_block(*b);
  for (int32_t& b : s->window_blocks) release_window_block(b);
  if (s->state_slot >= 0) states_.release(s->state_slot);
  tables_.erase(seq);
}

void KvCache::truncate(int32_t seq, int64_t n_positions) {
  KvSequence* s = tables_.find(seq);
  if (s == nullptr) return;
  n_positions = std::max<int64_t>(n_positions, 0);
  // A token after the kept positions would see released sliding-layer cells, or a recurrent
  // state that holds later tokens: keep nothing.
  if (tables_.window_lost(*s, n_positions)) n_positions = 0;
  if (s->state_slot >= 0 && n_positions < s->length) {
    n_positions = 0;
    states_.clear(s->state_slot);
  }
  truncate_cells(*s, n_positions);
}

void KvCache::truncate_cells(KvSequence& s, int64_t n_positions) {
  const int64_t bs = config().block_size;
  s.length = std::min(s.length, n_positions);
  std::vector<int32_t>& table = s.blocks;
  const size_t keep = static_cast<size_t>((n_positions + bs - 1) / bs);
  while (table.size() > keep) pop_block(s);
  // A kept block that is cut in the middle will be written again: it may not stay registered.
  if (n_positions % bs != 0 && table.size() == keep && keep > 0) {
    const int32_t last = table.back();
    if (main_.refs(last) == 1) {
      prefix_.unregister(last);
      drop_prefix_state(last);
    } else if (n_blocks_free() > 0) {
      const int32_t copy = take_block();
      main_.copy_block(copy, last);
      release_block(last);
      table.back() = copy;
    } else {
      pop_block(s);
      s.length = std::min(s.length, static_cast<int64_t>(table.size()) * bs);
    }
  }
}

void KvCache::read_state(int32_t seq, std::span<float> out) const {
  const std::span<const float> state = states_.slot(state_slot(seq));
  MINFER_CHECK(out.size() == state.size(), "read_state into a buffer of the wrong size");
  std::copy(state.begin(), state.end(), out.begin());
}

void KvCache::write_state(int32_t seq, std::span<const float> in) {
  const std::span<float> state = states_.slot(state_slot(seq));
  MINFER_CHECK(in.size() == state.size(), "write_state from a buffer of the wrong size");
  std::copy(in.begin(), in.end(), state.begin());
}

int32_t KvCache::checkpoint_state(int32_t seq) {
  const int32_t from = state_slot(seq);
  if (states_.n_free() == 0) return -1;
  const int32_t checkpoint = states_.take();
  states_.copy(checkpoint, from);
  return checkpoint;
}

void KvCache::release_checkpoint(int32_t checkpoint) {
  states_.release(checkpoint);
}

void KvCache::rewind(int32_t seq, int64_t n_positions, int32_t checkpoint) {
  KvSequence& s = tables_.get(seq);
  MINFER_CHECK(s.state_slot >= 0 && n_positions >= 0 && n_positions <= s.length,
               "rewind of a sequence without a state or past its length");
  states_.copy(s.state_slot, checkpoint);
  states_.release(checkpoint);
  truncate_cells(s, n_positions);
  if (s.length < n_positions) {
    // Fewer cells kept than the state has seen: nothing of the sequence stays.
    states_.clear(s.state_slot);
    truncate_cells(s, 0);
  }
}

const std::vector<int32_t>& KvCache::block_table(int32_t seq) const {
  const KvSequence* s = tables_.find(seq);
  MINFER_CHECK(s != nullptr, "block_table of an unknown sequence");
  return s->blocks;
}

void KvCache::store(const kernels::KernelTable& table, int64_t il, int32_t seq, int64_t pos,
                    const float* k, const float* v) {
  const KvCacheConfig& c = config();
  const std::vector<int32_t>& blocks = block_table(seq, il);
  MINFER_CHECK(pos >= 0 && pos / c.block_size < static_cast<int64_t>(blocks.size()),
               "KV store at an unreserved position");
  const int32_t block = blocks[static_cast<size_t>(pos / c.block_size)];
  MINFER_CHECK(block >= 0, "KV store into a released window block");
  MINFER_CHECK(is_window_layer(il) || !prefix_.is_registered(block),
               "KV store into a registered block");
  const int64_t slot = pos % c.block_size;
  const kernels::QuantizeRowFn to_cells = table.cells_from_f32[static_cast<size_t>(c.cell_type)];
  const int64_t hd = layout_.head_dim(il);
  const int64_t hd_v = layout_.head_dim_v(il);
  const int64_t n_head_kv = layout_.n_head_kv(il);
  // The rows as the cells hold them: rotated where the layout says (head dims are whole runs).
  if (layout_.k_rotation > 0) {
    k = kernels::hadamard_rotated(k, n_head_kv * hd, layout_.k_rotation, rotated_k_);
  }
  if (layout_.v_rotation > 0) {
    v = kernels::hadamard_rotated(v, n_head_kv * hd_v, layout_.v_rotation, rotated_v_);
  }
  for (int64_t h = 0; h < n_head_kv; ++h) {
    to_cells(k + h * hd, cell(block, il, false, h, slot), hd);
    to_cells(v + h * hd_v, cell(block, il, true, h, slot), hd_v);
  }
}

}  // namespace minfer
