// A KV cache's shape (kv/kv_cache.h): its config, the cell types it may hold, and how the config
// lays cells out — which pool each layer's cells live in (the main pool for global layers, the
// window pool for sliding-window ones), the layer's slot among that pool's layers, the row sizes
// in the cell type, and the segments both pools are laid out in (KvBlockPool, kv/block_pool.h).
#pragma once

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "core/status.h"
#include "quant/ggml_type.h"

namespace minfer {

// The cell types a cache can hold: GgmlType::kF32, kF16, kBF16 and kQ8_0.
bool is_kv_cell_type(GgmlType type);
// "f32", "f16", "bf16", "q8_0" → the type; anything else (other ggml types included) is an error
// naming it and the allowed names.
Result<GgmlType> parse_kv_cell_type(std::string_view name);
// The user-facing name of a cell type ("f32", "f16", "bf16", "q8_0"; ggml's name for any type).
std::string_view kv_cell_type_name(GgmlType type);

// A segment of the pools' layout (kv/block_pool.h): block ids [first, first + size).
struct KvSegment {
  size_t first, size;
};
// The segment of `block` where full segments hold `full` blocks (a power of two): [0], [1],
// [2, 4), [4, 8), ... up to [full / 2, full), then [k · full, (k + 1) · full). Segments start
// on multiples of their size, a power of two, so neither a segment nor one of attention's
// chunks of cells (4 blocks, on multiples of 4) straddles the other: the walk's read-ahead of
// the next chunk lies in one run.
inline KvSegment kv_segment_of(size_t block, size_t full) {
  if (block >= full) return {block / full * full, full};
  const size_t first = block == 0 ? 0 : std::bit_floor(block);
  return {first, std::max<size_t>(first, 1)};
}

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
  // The sliding layers' own shape where it differs from the global layers' (Gemma 4: other head
  // dims and KV head counts); 0: the global layers' n_head_kv, head_dim, head_dim_v.
  int64_t window_n_head_kv = 0;
  int64_t window_head_dim = 0;
  int64_t window_head_dim_v = 0;
  // Recurrent layers (kv/recurrent_state.h): recurrent_layers[il] set means layer il keeps no KV
  // cells but a state slot per sequence of conv_state_floats + delta_state_floats; at most
  // max_state_slots sequences hold one at once. Empty: every layer is attention.
  std::vector<bool> recurrent_layers;  // [n_layer] or empty
  int64_t conv_state_floats = 0;
  int64_t delta_state_floats = 0;
  int64_t max_state_slots = 0;
  // Checkpoints of recurrent states kept with prefix-cache blocks (KvCache::commit_prefix's
  // keep_state), in slots of the same pool beyond max_state_slots: at most this many at once.
  int64_t max_prefix_states = 0;
};

struct KvLayout {
  // Checks the config (shape > 0, a cell type whose blocks divide the head dims, one swa entry
  // per layer) and derives the layout.
  static Result<KvLayout> create(const KvCacheConfig& config);

  bool has_window() const { return !window_layers.empty(); }
  bool is_window_layer(int64_t il) const {
    return has_window() && config.swa_layers[static_cast<size_t>(il)];
  }
  bool is_recurrent_layer(int64_t il) const {
    return !config.recurrent_layers.empty() && config.recurrent_layers[static_cast<size_t>(il)];
  }
  bool has_recurrent() const { return !recurrent_layers.empty(); }
  // Layers whose cells the main pool's blocks hold.
  int64_t n_global_layers() const {
    return config.n_layer - static_cast<int64_t>(window_layers.size()) -
           static_cast<int64_t>(recurrent_layers.size());
  }

  // Layer il's shape: the window pool's for a sliding layer, else the main pool's.
  int64_t n_head_kv(int64_t il) const {
    return is_window_layer(il) ? window.n_head_kv : main.n_head_kv;
  }
  int64_t head_dim(int64_t il) const {
    return is_window_layer(il) ? window.head_dim : main.head_dim;
  }
  int64_t head_dim_v(int64_t il) const {
    return is_window_layer(il) ? window.head_dim_v : main.head_dim_v;
  }
  size_t k_row_bytes(int64_t il) const {
    return is_window_layer(il) ? window.k_row_bytes : main.k_row_bytes;
  }
  size_t v_row_bytes(int64_t il) const {
    return is_window_layer(il) ? window.v_row_bytes : main.v_row_bytes;
  }

  // The shape of one pool's layers.
  struct PoolShape {
    int64_t n_head_kv = 0;
    int64_t head_dim = 0;
    int64_t head_dim_v = 0;
    size_t k_row_bytes = 0;  // one head's key row in the cell type
    size_t v_row_bytes = 0;
  };

  KvCacheConfig config;
  PoolShape main;           // the global layers'
  PoolShape window;         // the sliding layers' (the global layers' unless window_* is set)
  size_t full_segment = 1;  // blocks of a full segment (kv/block_pool.h)
  // [n_layer] layer il's index among the layers of its pool: where its cells lie in a block;
  // for a recurrent layer, its index among the recurrent layers (its state in a slot).
  std::vector<int64_t> layer_slot;
  std::vector<int64_t> window_layers;     // the sliding layers, ascending
  std::vector<int64_t> recurrent_layers;  // the recurrent layers, ascending
  // llama.cpp's Walsh-Hadamard rotation of quantized cells (kernels/hadamard.h), decided as its
  // KV cache decides it (llama-kv-cache.cpp attn_rot_k / attn_rot_v): for q8_0 cells whose key
  // head dim is the same in every layer and a multiple of 64, keys (and the queries that score
  // them) are rotated in runs of the largest power of two that divides it; values likewise in
  // runs of 64, and attention's output turned back. 0: not rotated.
  int64_t k_rotation = 0;
  int64_t v_rotation = 0;
};

}  // namespace minfer
