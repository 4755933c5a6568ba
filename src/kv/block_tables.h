// Each sequence's block tables (kv/kv_cache.h): position p of a sequence lives in block
// block_table[p / block_size], slot p % block_size, of the pool that holds its layer's cells —
// the main table for global layers, the window table for sliding-window ones, whose blocks go
// back to the window pool as soon as no later token of the sequence can see them (a -1 entry).
// The tables hold ids; the pools (kv/block_pool.h) hold the blocks.
//
// KvSequence is everything the cache keeps for one sequence: its tables and, for a model with
// recurrent layers (DESIGN.md invariant 12), the slot of its recurrent state in the state pool
// beside the block pools (kv/recurrent_state.h) — taken with the first reserve, returned by
// free_sequence, counted in bytes_in_use. Operations that drop positions cannot take tokens out
// of a recurrent state: truncate keeps nothing of such a sequence (its callers compute it
// again), shift refuses, and no prefix is shared (kv/kv_cache.h).
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "kv/kv_layout.h"

namespace minfer {

struct KvSequence {
  std::vector<int32_t> blocks;         // the block table: main pool ids in position order
  std::vector<int32_t> window_blocks;  // the window table (has_window), -1 where released
  int64_t length = 0;                  // positions [0, length) hold computed cells
  // The recurrent layers' state slot (kv/recurrent_state.h), -1 when none is held: the state
  // after positions [0, length).
  int32_t state_slot = -1;
};

class KvBlockTables {
 public:
  explicit KvBlockTables(const KvLayout& layout)
      : block_size_(layout.config.block_size),
        window_(layout.config.window),
        has_window_(layout.has_window()) {
    for (int64_t il = 0; il < layout.config.n_layer; ++il) {
      window_layer_.push_back(layout.is_window_layer(il));
    }
  }

  bool contains(int32_t seq) const { return seqs_.count(seq) != 0; }
  KvSequence* find(int32_t seq) {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? nullptr : &it->second;
  }
  const KvSequence* find(int32_t seq) const {
    auto it = seqs_.find(seq);
    return it == seqs_.end() ? nullptr : &it->second;
  }
  // The sequence's record, made (empty) when it has none.
  KvSequence& get(int32_t seq) { return seqs_[seq]; }
  void erase(int32_t seq) { seqs_.erase(seq); }

  // Positions reserved for the sequence, and computed (0 when unknown).
  int64_t n_reserved(int32_t seq) const;
  int64_t length(int32_t seq) const;
  // The table that holds layer il's cells: the block table, or for a sliding-window layer the
  // window table. The sequence must be known.
  const std::vector<int32_t>& table(int32_t seq, int64_t il) const;
  // Window-table entries that hold a block (0 when unknown).
  int64_t n_window_blocks_held(int32_t seq) const;

  // The first position a token at `pos` sees in a sliding-window layer (may be < 0).
  int64_t first_seen(int64_t pos) const { return pos - window_ + 1; }
  // How many leading window-table entries the next token of `s` (at its length) cannot see:
  // those blocks may go back to the window pool.
  int64_t n_out_of_window(const KvSequence& s) const;
  // Whether positions [0, n_positions) of s, kept, would be followed by a token whose window
  // reaches released blocks.
  bool window_lost(const KvSequence& s, int64_t n_positions) const;

 private:
  int64_t block_size_;
  int64_t window_;
  bool has_window_;
  std::vector<bool> window_layer_;  // [n_layer]
  std::unordered_map<int32_t, KvSequence> seqs_;
};

}  // namespace minfer
