// The paged KV cache (DESIGN.md §4): fixed-size blocks of positions from a pool that grows on
// demand up to a budget, a block table per sequence, and cells stored as f32, f16 or q8_0: a
// ggml type (quant/ggml_type.h), converted by the kernel table's cells_from_f32 / cells_to_f32.
//
// A sequence's position p lives in block block_table[p / block_size], slot p % block_size:
// positions index the cache directly (invariant 1), so the causal window of a token at position
// p is the cells 0..p of its own sequence (invariant 3).
//
// Layout: a pool's blocks are laid out in segments of consecutive block ids; a segment holds, for
// each of the pool's layers, the keys of every KV head then their values, each head's cells of
// the segment's blocks in one run:
//   segment of S blocks, layer slot: K [n_head_kv][S][block_size][k_row_bytes], then V
// so one KV head's keys of a block are contiguous (attention walks them in place), and so are
// those of consecutive blocks of a segment: a sequence's blocks, taken in ascending order, are
// long runs per layer and head that attention reads in one kernel call per chunk and the
// hardware prefetchers follow (a block-major layout, all layers of a block together, made every
// 4-8 KB run a new stream: Qwen3-0.6B's decode attention at depth 4096 read at half the stream
// rate). Segments hold 1, 1, 2, 4, ... blocks, doubling up to a full segment, whose runs are at
// least 256 KiB (kv_segment_of), then full segments: the pools take 2 MiB pages as cells are
// first written (a stream through 4 KiB pages missed the TLB every few rows: Qwen3-0.6B's decode
// attention at depth 4096 took 1.1-1.35x as long), and a segment's first block touches every page
// of the segment, so a pool takes at most about twice the memory of the blocks it has handed out
// (and a 2 MiB page), not a page per stripe (2 · n_layer · n_head_kv of them) at its first block;
// the next segment's memory is taken ahead while the positions before it are written
// (populated_ahead_ below), not all in the step that reaches it.
//
// Prefix cache (DESIGN.md §4 "KV cache"): a block is ref-counted, so several sequences may hold
// the same block in their tables. A full block whose cells are computed can be registered under
// the hash of the whole token prefix it ends (commit_prefix); a new sequence whose tokens begin
// with registered blocks attaches them (match_prefix) instead of computing them again. A
// registered block that no sequence holds stays cached until the pool needs it back, least
// recently used first. Registered blocks are read-only: nothing stores into them again.
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
#include <queue>
#include <span>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/page_region.h"
#include "core/status.h"
#include "kernels/kernel_table.h"
#include "quant/ggml_type.h"

namespace minfer {

// The cell types a cache can hold: GgmlType::kF32, kF16 and kQ8_0.
bool is_kv_cell_type(GgmlType type);
// "f32", "f16", "q8_0" → the type; anything else (other ggml types included) is an error naming
// it and the allowed names.
Result<GgmlType> parse_kv_cell_type(std::string_view name);
// The user-facing name of a cell type ("f32", "f16", "q8_0"; ggml's name for any type).
std::string_view kv_cell_type_name(GgmlType type);

// A segment of the pools' layout (above): block ids [first, first + size).
struct KvSegment {
  size_t first, size;
};
// The segment of `block` where full segments hold `full` blocks (a power of two): [0], [1],
// [2, 4), [4, 8), ... up to [full / 2, full), then [k · full, (k + 1) · full). Segments start
// on multiples of their size, a power of two, so neither a segment nor one of attention's
// chunks of cells (4 blocks, on multiples of 4) straddles the other: the walk's read-ahead of
// the next chunk lies in one run.
KvSegment kv_segment_of(size_t block, size_t full);

struct KvCacheConfig {
  int64_t n_layer = 0;
  int64_t n_head_kv = 0;
  int64_t head_dim = 0;                 // key row length per head
  int64_t head_dim_v = 0;               // value row length per head
  GgmlType cell_type = GgmlType::kF32;  // one of is_kv_cell_type's
  int64_t block_size = 0;               // positions per block (RuntimeOptions::block_size)
  int64_t n_ctx = 0;                    // positions per sequence (the context length)
  int64_t max_blocks = 0;               // budget: blocks the pool may hold in all
  // Sliding-window layers: swa_layers[il] set means layer il sees only the last `window`
  // positions. Empty (or window 0): every layer is global.
  std::vector<bool> swa_layers;  // [n_layer] or empty
  int64_t window = 0;
};

class KvCache {
 public:
  static Result<std::unique_ptr<KvCache>> create(const KvCacheConfig& config);

  const KvCacheConfig& config() const { return config_; }
  size_t k_row_bytes() const { return k_row_bytes_; }  // one head's key row in the cell type
  size_t v_row_bytes() const { return v_row_bytes_; }
  size_t block_bytes() const { return block_bytes_; }
  // The bytes of cells attention reads for one token that sees positions [0, n_positions) of its
  // sequence: each KV head's key and value rows of all of them in a global layer, of the last
  // `window` in a sliding one (a decode step's memory traffic beside its weights).
  size_t seen_bytes(int64_t n_positions) const;
  // The cells the budget may grow to: max_blocks of the main pool and of the window pool.
  size_t budget_bytes() const {
    return static_cast<size_t>(config_.max_blocks) * (block_bytes_ + window_block_bytes_);
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
  void commit_prefix(int32_t seq, std::span<const int32_t> tokens);
  bool has_sequence(int32_t seq) const { return seqs_.count(seq) != 0; }
  // Positions reserved for the sequence (0 when unknown).
  int64_t n_reserved(int32_t seq) const;
  // Positions [0, length) of the sequence hold computed K and V (0 when unknown). The forward
  // step advances it; truncate lowers it. Advancing it returns to the window pool the sliding
  // layers' blocks that no token at a position >= length can see.
  int64_t length(int32_t seq) const;
  void set_length(int32_t seq, int64_t length);

  // Writes one token's K and V for layer il at (seq, pos); pos must be reserved.
  // k: [n_head_kv * head_dim], v: [n_head_kv * head_dim_v], converted to the cell type by
  // table.cells_from_f32.
  void store(const kernels::KernelTable& table, int64_t il, int32_t seq, int64_t pos,
             const float* k, const float* v);

  // Context shift (llama.cpp's --context-shift): `seq` forgets positions [n_keep, n_keep +
  // n_discard) and the positions after them move down by n_discard, so that positions stay
  // contiguous; no token is computed again. Values are copied as they are; each moved key is read
  // as f32 (cells_to_f32), handed to rotate(il, old_pos, new_pos, k) to turn its RoPE angle from
  // the old position's to the new one's, and stored back (cells_from_f32). Positions before
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
  const std::vector<int32_t>& block_table(int32_t seq, int64_t il) const;
  bool has_window() const { return !window_layers_.empty(); }
  bool is_window_layer(int64_t il) const;
  // Keys of layer il, KV head h in block `block` of the layer's pool (block_table(seq, il)):
  // [block_size][k_row_bytes] in the cell type.
  const uint8_t* k_block(int32_t block, int64_t il, int64_t h) const;
  const uint8_t* v_block(int32_t block, int64_t il, int64_t h) const;

  // Pool accounting.
  int64_t n_blocks_allocated() const { return static_cast<int64_t>(info_.size()); }
  int64_t n_blocks_free() const;  // free in the pool + not yet allocated within the budget
  // Held by at least one sequence.
  int64_t n_blocks_used() const {
    return n_blocks_allocated() - static_cast<int64_t>(free_.size() + lru_.size());
  }
  // Held by no sequence but kept for their registered prefix (counted as free too).
  int64_t n_blocks_cached() const { return static_cast<int64_t>(lru_.size()); }
  // Registered blocks, held or not.
  int64_t n_blocks_registered() const { return static_cast<int64_t>(registered_.size()); }
  // Window pool: blocks the sequence's sliding layers hold, and blocks ever allocated.
  int64_t n_window_blocks_held(int32_t seq) const;
  int64_t n_window_blocks_allocated() const { return n_window_blocks_allocated_; }
  // The cells of the blocks sequences hold, both pools.
  size_t bytes_in_use() const {
    const size_t window_used =
        static_cast<size_t>(n_window_blocks_allocated_) - window_free_.size();
    return static_cast<size_t>(n_blocks_used()) * block_bytes_ + window_used * window_block_bytes_;
  }

 private:
  explicit KvCache(const KvCacheConfig& config);
  // The cells of one KV head of a block in one layer slot of the main (window false) or window
  // pool: [block_size][row bytes].
  uint8_t* stripe_cells(bool window, int64_t layer_slot, bool is_v, int64_t h, int32_t block) const;
  // Copies main-pool block `from`'s cells, every layer and head, into block `to`.
  void copy_block(int32_t to, int32_t from);
  uint8_t* cell(int32_t block, int64_t il, bool is_v, int64_t h, int64_t slot);
  // Calls copy(cells in a block, offset in the flat layout, bytes) for every run of one head's
  // rows within one block of positions [0, n_positions) of `seq` (read_cells' layout); cells is
  // null for a released window block.
  template <typename Fn>
  void for_each_run(int32_t seq, int64_t n_positions, Fn&& copy);
  int32_t take_block();
  void release_block(int32_t block);
  void unregister(int32_t block);
  int64_t n_window_blocks_free() const;
  int32_t take_window_block();
  void release_window_block(int32_t& block);  // sets it to -1; -1 is ignored
  void release_outside_window(int32_t seq);

  KvCacheConfig config_;
  size_t k_row_bytes_ = 0;
  size_t v_row_bytes_ = 0;
  size_t layer_bytes_ = 0;
  size_t block_bytes_ = 0;
  size_t full_segment_ = 1;  // blocks of a full segment (the layout above)
  // The main pool's max_blocks blocks in segments (the layout above); 2 MiB pages are taken as
  // cells are first written.
  std::unique_ptr<PageRegion> memory_;
  // Ids of unregistered blocks no sequence holds, the lowest taken first: a sequence reserved
  // after others were freed gets ascending ids, whose cells follow each other in the stripes.
  using FreeIds = std::priority_queue<int32_t, std::vector<int32_t>, std::greater<>>;
  FreeIds free_;
  struct BlockInfo {
    int32_t refs = 0;  // sequences whose table holds the block
    bool registered = false;
    uint64_t hash = 0;                     // of the token prefix the block ends
    uint64_t parent_hash = 0;              // of the prefix before it (0 for the first block)
    std::vector<int32_t> tokens;           // [block_size] when registered
    std::list<int32_t>::iterator lru_pos;  // in lru_ when registered and refs == 0
  };
  std::vector<BlockInfo> info_;  // one per block handed out so far (n_blocks_allocated)
  std::unordered_map<uint64_t, int32_t> registered_;  // prefix hash → block
  std::list<int32_t> lru_;  // registered blocks no sequence holds, least recently used first
  struct Sequence {
    std::vector<int32_t> blocks;         // the block table
    std::vector<int32_t> window_blocks;  // the window table (has_window), -1 where released
    int64_t length = 0;
  };
  // Whether positions [0, n_positions) of s, kept, would be followed by a token whose window
  // reaches released blocks.
  bool window_lost(const Sequence& s, int64_t n_positions) const;
  void pop_block(Sequence& s);
  // shift's preparation: the blocks of main-table indices [first, end) made the sequence's own,
  // and window blocks for window-table indices [window_first, end); fails, changing nothing,
  // when the pools are short.
  Status own_blocks(int32_t seq, Sequence& s, int64_t first, int64_t end, int64_t window_first);

  // A pool's memory taken ahead of its first touch: a segment's first block touches every page of
  // the segment (each of its runs starts one), so a full segment was taken in the step that wrote
  // that block — Qwen3-0.6B's f16 cells, 117 MB, made one decode step in 1,024 take 200-270 ms
  // instead of about 12 on a Zen 5 VM. Instead, each new block of a segment makes its share of the
  // next segment due (1 / the segment's size of it), and each position written takes two positions'
  // bytes of what is due (populate_ahead in kv_cache.cpp): the next segment is ready when its first
  // block is written, and a pool holds at most one segment more than it would. Bytes of each pool
  // taken ahead so far:
  size_t populated_ahead_ = 0;
  size_t window_populated_ahead_ = 0;

  // [n_layer] layer il's index among the layers of its pool: where its stripes lie.
  std::vector<int64_t> layer_slot_;
  std::vector<int64_t> window_layers_;         // the sliding layers, ascending
  size_t window_block_bytes_ = 0;              // every sliding layer's K and V of a block
  std::unique_ptr<PageRegion> window_memory_;  // the window pool's blocks, as memory_
  int64_t n_window_blocks_allocated_ = 0;
  FreeIds window_free_;  // window pool ids no sequence holds
  std::unordered_map<int32_t, Sequence> seqs_;
};

}  // namespace minfer
