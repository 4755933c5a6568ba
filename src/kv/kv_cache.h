// The paged KV cache (DESIGN.md §4): fixed-size blocks of positions from a pool that grows on
// demand up to a budget, a block table per sequence, and cells stored as f32, f16 or q8_0: a
// ggml type (quant/ggml_type.h), converted by the kernel table's cells_from_f32 / cells_to_f32.
//
// A sequence's position p lives in block block_table[p / block_size], slot p % block_size:
// positions index the cache directly (invariant 1), so the causal window of a token at position
// p is the cells 0..p of its own sequence (invariant 3).
//
// KvCache is the facade its callers use; it composes focused parts and keeps the rules that span
// them (a block's life from pool to table to prefix cache and back, shift, cell I/O):
//   KvLayout       kv/kv_layout.h     the config, which pool and slot each layer's cells take
//   KvBlockPool    kv/block_pool.h    one pool's memory in segments, free ids, holds, budget;
//                                     main_ for global layers, window_ for sliding ones
//   KvBlockTables  kv/block_tables.h  each sequence's tables and length (KvSequence)
//   PrefixCache    kv/prefix_cache.h  hashes of registered full blocks, LRU of parked ones
//   RecurrentStatePool  kv/recurrent_state.h  recurrent layers' state, a slot per sequence
//
// Recurrent layers (KvCacheConfig::recurrent_layers, e.g. Qwen3.5's gated delta nets) keep no
// cells: each sequence holds a state slot, taken with its first reserve, which the forward step
// advances token by token. A state cannot forget its latest tokens, so positions are never
// recomputed (the step runner requires each sequence to continue at its length), truncate below
// the length keeps nothing of the sequence (its callers compute it again) unless a checkpoint of
// the state at the kept length is given (rewind: speculation's rollback), shift refuses, and a
// prefix is shared only up to a block that keeps a checkpoint of the state after it
// (commit_prefix's keep_state).
//
// Prefix cache: a main-pool block is held by every sequence whose table has it. A full block
// whose cells are computed can be registered under the hash of the whole token prefix it ends
// (commit_prefix); a new sequence whose tokens begin with registered blocks attaches them
// (match_prefix) instead of computing them again. A registered block that no sequence holds
// stays parked until the pool needs it, least recently used first. Registered blocks are
// read-only: nothing stores into them again.
//
// Sliding-window layers (KvCacheConfig::swa_layers, e.g. Gemma 3's local layers): a token at
// position p of such a layer sees only positions > p - window, so those layers' cells live in a
// window pool of their own, with a second block table per sequence (window_table) whose blocks
// return to that pool as soon as no later token of the sequence can see them (set_length). A
// sequence's sliding layers therefore hold at most window / block_size + 1 blocks plus the
// positions of one step however long it runs, and the main blocks carry only the global layers.
// Released positions cannot be read again: truncate drops the whole sequence rather than keep
// positions whose window is gone, and a cache with sliding layers shares no prefixes
// (match_prefix attaches nothing), so callers recompute instead of reading wrong cells.
#pragma once

#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/status.h"
#include "kernels/kernel_table.h"
#include "kv/block_pool.h"
#include "kv/block_tables.h"
#include "kv/kv_layout.h"
#include "kv/prefix_cache.h"
#include "kv/recurrent_state.h"

namespace minfer {

class KvCache {
 public:
  static Result<std::unique_ptr<KvCache>> create(const KvCacheConfig& config);

  const KvCacheConfig& config() const { return layout_.config; }
  // Layer il's shape (the window pool's for a sliding layer; kv/kv_layout.h): its KV heads, head
  // dims and one head's key / value row in the cell type.
  int64_t n_head_kv(int64_t il) const { return layout_.n_head_kv(il); }
  int64_t head_dim(int64_t il) const { return layout_.head_dim(il); }
  int64_t head_dim_v(int64_t il) const { return layout_.head_dim_v(il); }
  size_t k_row_bytes(int64_t il) const { return layout_.k_row_bytes(il); }
  size_t v_row_bytes(int64_t il) const { return layout_.v_row_bytes(il); }
  // The runs in which keys and values are Hadamard-rotated in the cells (KvLayout::k_rotation):
  // store rotates them, attention rotates the queries and turns its output back; 0: none.
  int64_t k_rotation() const { return layout_.k_rotation; }
  int64_t v_rotation() const { return layout_.v_rotation; }
  size_t block_bytes() const { return main_.block_bytes(); }
  // The bytes of cells attention reads for one token that sees positions [0, n_positions) of its
  // sequence: each KV head's key and value rows of all of them in a global layer, of the last
  // `window` in a sliding one (a decode step's memory traffic beside its weights).
  size_t seen_bytes(int64_t n_positions) const;
  // The cells the budget may grow to: max_blocks of the main pool and of the window pool.
  size_t budget_bytes() const {
    return static_cast<size_t>(config().max_blocks) *
               (main_.block_bytes() + window_.block_bytes()) +
           static_cast<size_t>(states_.max_slots()) * states_.slot_bytes();
  }

  // Makes room for positions [0, n_positions) of `seq`, taking blocks from the pool. Fails, with
  // nothing allocated, when n_positions is past n_ctx or the budget has too few free blocks.
  Status reserve(int32_t seq, int64_t n_positions);
  // Returns the sequence's blocks to the pool (registered ones stay cached). Unknown sequences are
  // ignored.
  void free_sequence(int32_t seq);
  // Forgets positions ≥ n_positions of `seq` (e.g. a regenerated reply), freeing whole blocks. A
  // registered block that will be written again is unregistered, or copied first when another
  // sequence holds it too (when no block is left for the copy, the sequence keeps only the
  // positions before that block).
  void truncate(int32_t seq, int64_t n_positions);

  // Attaches to `seq` (which must hold no blocks) the longest run of registered blocks that
  // begins `tokens`, at most max_positions positions of it, and marks them computed. Returns the
  // positions attached (a multiple of block_size; 0 when nothing matched).
  int64_t match_prefix(int32_t seq, std::span<const int32_t> tokens, int64_t max_positions);
  // Registers the full, computed blocks of `seq`; `tokens` are the tokens at its positions
  // 0..tokens.size()-1 (only the first length(seq) count). A block whose prefix is already
  // registered under another block is left as it is.
  // With recurrent layers a block alone cannot resume a sequence: keep_state also keeps a
  // checkpoint of the sequence's state with the registered block that ends its length, when the
  // length is a multiple of block_size (the scheduler asks at the end of each prompt's last full
  // block). At most max_prefix_states are kept, least recently used dropped first; a checkpoint
  // goes with its block when the block is evicted or written again. match_prefix attaches the
  // longest run whose last block keeps one and starts the sequence's state from it.
  void commit_prefix(int32_t seq, std::span<const int32_t> tokens, bool keep_state = false);
  // Recurrent state checkpoints kept with prefix blocks (each state_bytes(), in bytes_in_use).
  int64_t n_prefix_states() const { return static_cast<int64_t>(prefix_states_.size()); }
  bool has_sequence(int32_t seq) const { return tables_.contains(seq); }
  // Positions reserved for the sequence (0 when unknown).
  int64_t n_reserved(int32_t seq) const { return tables_.n_reserved(seq); }
  // Positions [0, length) of the sequence hold computed K and V (0 when unknown). The forward
  // step advances it; truncate lowers it. Advancing it returns to the window pool the sliding
  // layers' blocks that no token at a position >= length can see.
  int64_t length(int32_t seq) const { return tables_.length(seq); }
  void set_length(int32_t seq, int64_t length);

  // Writes one token's K and V for layer il at (seq, pos); pos must be reserved.
  // k: [n_head_kv * head_dim], v: [n_head_kv * head_dim_v], Hadamard-rotated where the cells are
  // (k_rotation, v_rotation), converted to the cell type by table.cells_from_f32.
  void store(const kernels::KernelTable& table, int64_t il, int32_t seq, int64_t pos,
             const float* k, const float* v);

  // Context shift (llama.cpp's --context-shift): `seq` forgets positions [n_keep, n_keep +
  // n_discard) and the positions after them move down by n_discard, so that positions stay
  // contiguous; no token is computed again. Values are copied as they are; each moved key is read
  // as f32 (cells_to_f32; turned back from its Hadamard rotation, k_rotation), handed to
  // rotate(il, old_pos, new_pos, k) to turn its RoPE angle from the old position's to the new
  // one's, and stored back (rotated again, cells_from_f32). Positions before
  // n_keep are not touched. Blocks written to are made the sequence's own first: a block another
  // sequence holds too (a shared prefix) is copied, a registered one is unregistered (its token
  // prefix changes). Sliding-window layers move only the positions the next token can see (the
  // others are never read again); their window blocks are taken from the window pool as needed.
  // Errors, with nothing changed: n_keep < 0, n_discard < 1 or n_keep + n_discard past the
  // length; too few free blocks for the copies; with sliding layers, kept positions the next
  // token must see whose cells are already released.
  // k: [n_head_kv][head_dim] one position's keys of layer il.
  using KeyRotation = std::function<void(int64_t il, int64_t old_pos, int64_t new_pos, float* k)>;
  Status shift(const kernels::KernelTable& table, int32_t seq, int64_t n_keep, int64_t n_discard,
               const KeyRotation& rotate);

  // A sequence's cells in a flat layout, for state files (engine/state_file.h): for each layer
  // il, its keys then its values, each [n_head_kv][n_positions][row bytes] in the cell type
  // (k_row_bytes, then v_row_bytes), so that one head's rows of consecutive positions are
  // contiguous as they are within a block. cells_bytes(n) is the size of n positions.
  size_t cells_bytes(int64_t n_positions) const;
  // Copies positions [0, n_positions) of `seq` (n_positions ≤ length(seq)) into `out`
  // ([cells_bytes(n_positions)]). Positions of sliding-window layers whose block is already
  // released read as zeros: nothing reads them again (kv/kv_cache.h, truncate).
  void read_cells(int32_t seq, int64_t n_positions, std::span<uint8_t> out) const;
  // Makes `seq`, which must hold no blocks, hold positions [0, n_positions) with the cells of
  // `in` ([cells_bytes(n_positions)], read_cells' layout) and length n_positions. Fails, with
  // nothing held, as reserve does (past n_ctx, too few free blocks).
  Status write_cells(int32_t seq, int64_t n_positions, std::span<const uint8_t> in);

  // The block table of a reserved sequence: block ids in position order.
  const std::vector<int32_t>& block_table(int32_t seq) const;
  // The table that holds layer il's cells: block_table(seq), or for a sliding-window layer the
  // window table (window pool ids in position order, -1 where released).
  const std::vector<int32_t>& block_table(int32_t seq, int64_t il) const {
    return tables_.table(seq, il);
  }
  bool has_window() const { return layout_.has_window(); }
  bool is_window_layer(int64_t il) const { return layout_.is_window_layer(il); }
  // Keys of layer il, KV head h in block `block` of the layer's pool (block_table(seq, il)):
  // [block_size][k_row_bytes] in the cell type.
  const uint8_t* k_block(int32_t block, int64_t il, int64_t h) const {
    return cell(block, il, false, h, 0);
  }
  const uint8_t* v_block(int32_t block, int64_t il, int64_t h) const {
    return cell(block, il, true, h, 0);
  }

  // Pool accounting.
  int64_t n_blocks_allocated() const { return main_.n_allocated(); }
  // Free in the pool + not yet allocated within the budget + parked prefix blocks.
  int64_t n_blocks_free() const { return main_.n_free() + prefix_.n_parked(); }
  // Held by at least one sequence.
  int64_t n_blocks_used() const { return main_.n_held(); }
  // Held by no sequence but kept for their registered prefix (counted as free too).
  int64_t n_blocks_cached() const { return prefix_.n_parked(); }
  // Registered blocks, held or not.
  int64_t n_blocks_registered() const { return prefix_.n_registered(); }
  // Window pool: blocks the sequence's sliding layers hold, and blocks ever allocated.
  int64_t n_window_blocks_held(int32_t seq) const { return tables_.n_window_blocks_held(seq); }
  int64_t n_window_blocks_allocated() const { return window_.n_allocated(); }
  // The cells of the blocks sequences hold, both pools, and their recurrent states.
  size_t bytes_in_use() const {
    return static_cast<size_t>(main_.n_held()) * main_.block_bytes() +
           static_cast<size_t>(window_.n_held()) * window_.block_bytes() +
           static_cast<size_t>(states_.n_held()) * states_.slot_bytes();
  }

  // Recurrent layers (KvCacheConfig::recurrent_layers).
  bool has_recurrent() const { return layout_.has_recurrent(); }
  bool is_recurrent_layer(int64_t il) const { return layout_.is_recurrent_layer(il); }
  // Bytes of one sequence's recurrent state (0 without recurrent layers).
  size_t state_bytes() const { return states_.slot_bytes(); }
  int64_t n_states_held() const { return states_.n_held(); }  // sequences' and checkpoints'
  int64_t n_states_free() const { return states_.n_free(); }  // of config().max_state_slots
  // Layer il's conv state [d_conv - 1][channels] and delta state of `seq`, which must hold a
  // slot (reserve takes one).
  float* conv_state(int32_t seq, int64_t il);
  float* delta_state(int32_t seq, int64_t il);
  // The whole state of a sequence that holds a slot, every recurrent layer's conv then delta
  // state in layer order ([state_floats()]): what a state file stores (engine/state_file.h).
  int64_t state_floats() const { return states_.slot_floats(); }
  void read_state(int32_t seq, std::span<float> out) const;
  void write_state(int32_t seq, std::span<const float> in);
  // Checkpoints: a copy of `seq`'s state (the state after its first length(seq) positions) in a
  // slot of the state pool, counted in bytes_in_use. -1 when every slot is held (max_state_slots
  // bounds sequences and checkpoints together).
  int32_t checkpoint_state(int32_t seq);
  void release_checkpoint(int32_t checkpoint);
  // Speculation's rollback: `seq` forgets positions >= n_positions as truncate does, but its
  // recurrent state becomes the checkpoint's, which must be the state after exactly its first
  // n_positions positions; the checkpoint is released. When truncate could not keep all of
  // them (a shared block and no free block to copy it), the sequence keeps nothing.
  void rewind(int32_t seq, int64_t n_positions, int32_t checkpoint);

 private:
  KvCache(KvLayout layout, KvBlockPool main, KvBlockPool window);
  // The state slot of a sequence that holds one.
  int32_t state_slot(int32_t seq) const;
  // The pool that holds layer il's cells.
  const KvBlockPool& pool_of(int64_t il) const { return is_window_layer(il) ? window_ : main_; }
  // One position's key (or value) row of KV head h, layer il, slot `slot` of `block` in the
  // layer's pool.
  uint8_t* cell(int32_t block, int64_t il, bool is_v, int64_t h, int64_t slot) const {
    const size_t row = is_v ? layout_.v_row_bytes(il) : layout_.k_row_bytes(il);
    return pool_of(il).cells(layout_.layer_slot[static_cast<size_t>(il)], is_v, h, block) +
           static_cast<size_t>(slot) * row;
  }
  // Calls copy(cells in a block, offset in the flat layout, bytes) for every run of one head's
  // rows within one block of positions [0, n_positions) of `seq` (read_cells' layout); cells is
  // null for a released window block.
  template <typename Fn>
  void for_each_run(int32_t seq, int64_t n_positions, Fn&& copy) const;
  // A main-pool block held once: a free one, else the least recently used parked one.
  int32_t take_block();
  // Drops one hold; a block no one holds is parked when registered, else freed.
  void release_block(int32_t block);
  void release_window_block(int32_t& block);  // sets it to -1; -1 is ignored
  void release_outside_window(KvSequence& s);
  // Drops the last block of both tables.
  void pop_block(KvSequence& s);
  // keep_state's part of commit_prefix, and dropping a block's checkpoint (none: no-op).
  void keep_prefix_state(const KvSequence& s, std::span<const int32_t> tokens);
  void drop_prefix_state(int32_t block);
  // truncate's cells part: the blocks past n_positions go, a kept block cut in the middle is
  // made the sequence's own (or dropped when no block is left for the copy).
  void truncate_cells(KvSequence& s, int64_t n_positions);
  // shift's preparation: the blocks of main-table indices [first, end) made the sequence's own,
  // and window blocks for window-table indices [window_first, end); fails, changing nothing,
  // when the pools are short.
  Status own_blocks(int32_t seq, KvSequence& s, int64_t first, int64_t end, int64_t window_first);

  KvLayout layout_;
  KvBlockPool main_;    // the global layers' blocks
  KvBlockPool window_;  // the sliding-window layers' blocks (empty without such layers)
  PrefixCache prefix_;  // main-pool blocks registered under their token prefix
  KvBlockTables tables_;
  RecurrentStatePool states_;  // empty without recurrent layers
  // Checkpoints kept with prefix blocks: block → the state after the prefix it ends.
  struct PrefixState {
    int32_t slot;                          // in states_
    std::list<int32_t>::iterator lru_pos;  // in prefix_state_lru_
  };
  std::unordered_map<int32_t, PrefixState> prefix_states_;
  std::list<int32_t> prefix_state_lru_;  // their blocks, least recently used first
  // store's rows rotated for the cells ([n_head_kv * head_dim], [n_head_kv * head_dim_v]).
  std::vector<float> rotated_k_, rotated_v_;
};

}  // namespace minfer
