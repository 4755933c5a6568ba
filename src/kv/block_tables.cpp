#include "kv/block_tables.h"

#include <algorithm>

#include "core/check.h"

namespace minfer {

int64_t KvBlockTables::n_reserved(int32_t seq) const {
  const KvSequence* s = find(seq);
  return s == nullptr ? 0 : static_cast<int64_t>(s->blocks.size()) * block_size_;
}

int64_t KvBlockTables::length(int32_t seq) const {
  const KvSequence* s = find(seq);
  return s == nullptr ? 0 : s->length;
}

const std::vector<int32_t>& KvBlockTables::table(int32_t seq, int64_t il) const {
  const KvSequence* s = find(seq);
  MINFER_CHECK(s != nullptr, "block_table of an unknown sequence");
  return window_layer_[static_cast<size_t>(il)] ? s->window_blocks : s->blocks;
}

int64_t KvBlockTables::n_window_blocks_held(int32_t seq) const {
  const KvSequence* s = find(seq);
  if (s == nullptr) return 0;
  const std::vector<int32_t>& table = s->window_blocks;
  return static_cast<int64_t>(table.size()) - std::count(table.begin(), table.end(), -1);
}

// The next token (position >= length) sees positions >= length - window + 1: the blocks that
// end before that are out of its sight.
int64_t KvBlockTables::n_out_of_window(const KvSequence& s) const {
  const int64_t seen_from = first_seen(s.length);
  if (!has_window_ || seen_from < block_size_) return 0;
  return std::min(seen_from / block_size_, static_cast<int64_t>(s.window_blocks.size()));
}

bool KvBlockTables::window_lost(const KvSequence& s, int64_t n_positions) const {
  if (!has_window_ || n_positions <= 0 || n_positions >= s.length) return false;
  const int64_t seen_from = std::max<int64_t>(0, first_seen(n_positions));
  const size_t b = static_cast<size_t>(seen_from / block_size_);
  return b >= s.window_blocks.size() || s.window_blocks[b] < 0;
}

}  // namespace minfer
