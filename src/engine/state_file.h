// KV state files (DESIGN.md §4 "State"): the cells of one sequence — every layer's K and V for
// positions 0..n-1, the token ids they hold and the cell type — and, for a model with recurrent
// layers (Qwen3.5's gated delta nets, kv/recurrent_state.h), the recurrent state after those
// positions, written to a checked, versioned file and read back into a cache, so that a long
// prompt is not prefilled again after a restart (`run --prompt-cache`, chat /save and /load, the
// server's slot save/restore).
//
// Layout (little-endian), version 2:
//   "MINFERKV"  u32 version  u32 flags (0)  u64 file_bytes (the whole file, checksum included)
//   model:  u32 len + arch bytes, i64 n_layer n_embd n_head n_head_kv head_dim head_dim_v n_vocab,
//           u64 tensor_hash (model_fingerprint)
//   cache:  u32 cell type (ggml id), u32 elements per cell block (32 for q8_0, 1 for f32/f16/bf16),
//           i64 positions per KV block of the cache that saved it (informational: cells are
//           stored per position, so a cache of another block size reads them)
//   recurrent shape (version 2): i64 n_recurrent_layers, i64 conv floats and i64 delta floats
//           per layer (all 0 without recurrent layers; compared with the model's)
//   i64 n_tokens, i32 tokens[n_tokens], i32 positions[n_tokens] (0..n_tokens-1)
//   u64 len + app data (e.g. a chat's messages as JSON; opaque here)
//   u64 len + cells (KvCache::read_cells' layout for n_tokens positions: the attention layers')
//   recurrent state (version 2): u64 n + f32 floats[n] (KvCache::read_state's layout; n is 0
//           when the model has no recurrent layers or no token is held, else
//           n_recurrent_layers * (conv + delta))
//   u64 checksum: hash64 (core/hash.h) of every byte before it
// Version 3 has version 2's layout; since it, q8_0 cells of head dims that are multiples of 64
// hold the rows Hadamard-rotated as llama.cpp stores them (kv/kv_layout.h k_rotation), so a
// version 1 or 2 file's q8_0 cells are refused by a cache that rotates them (they were stored
// unrotated). Version 1 files (no recurrent part) still load into models without recurrent
// layers.
// A state is refused, with an error naming the field, when its magic, version, length or
// checksum is wrong, or when it was saved from another model, with another cell type, or
// without the recurrent state a model with recurrent layers needs: cells are never loaded into a
// model they were not computed by.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "kv/kv_cache.h"
#include "models/model.h"

namespace minfer::engine {

inline constexpr uint32_t kStateFileVersion = 3;
inline constexpr uint32_t kOldestStateFileVersion = 1;  // still read (no recurrent part)

// The recurrent part's shape: KvCacheConfig's recurrent layers and floats per layer.
struct RecurrentShape {
  int64_t n_layers = 0;
  int64_t conv_floats = 0;
  int64_t delta_floats = 0;

  int64_t floats() const { return n_layers * (conv_floats + delta_floats); }
  bool operator==(const RecurrentShape&) const = default;
};

// What identifies the model whose cells a state holds. tensor_hash: hash64 over every tensor's
// name, type, shape and byte size, and over three samples of its data (the first, middle and last
// KiB) — cheap (a few KiB per tensor, no full read of the weights) yet different for two models of
// the same shape whose weights differ anywhere but in bytes no sample covers.
struct ModelFingerprint {
  // shape[i] is ModelConfig's field kShapeNames[i]; written, read and compared in this order.
  enum ShapeField { kNLayer, kNEmbd, kNHead, kNHeadKv, kHeadDim, kHeadDimV, kNVocab, kNShape };
  static constexpr std::array<const char*, kNShape> kShapeNames = {
      "n_layer", "n_embd", "n_head", "n_head_kv", "head_dim", "head_dim_v", "n_vocab"};

  std::string arch;
  std::array<int64_t, kNShape> shape{};
  uint64_t tensor_hash = 0;
};

ModelFingerprint model_fingerprint(const Model& model);

// One sequence's state.
struct KvState {
  ModelFingerprint model;
  GgmlType cell_type = GgmlType::kF32;
  int64_t block_size = 0;          // KV positions per block of the cache that saved it
  std::vector<int32_t> tokens;     // [n_tokens] the token at each position
  std::vector<int32_t> positions;  // [n_tokens] 0..n_tokens-1
  std::string app_data;            // what the caller stored beside the cells
  std::vector<uint8_t> cells;      // [KvCache::cells_bytes(n_tokens)]
  // The recurrent layers' state after the tokens: [recurrent_shape.floats()], empty when the
  // model has none or no token is held (or the file is of version 1).
  RecurrentShape recurrent_shape;
  std::vector<float> recurrent;
  uint32_t file_version = kStateFileVersion;  // of the file it was read from

  int64_t n_tokens() const { return static_cast<int64_t>(tokens.size()); }
};

// The state of positions [0, tokens.size()) of `seq`, which must hold them computed (with
// recurrent layers: exactly them, the state being after its whole length).
// `fingerprint`: model_fingerprint of the model that computed them.
KvState capture_state(const ModelFingerprint& fingerprint, const KvCache& cache, int32_t seq,
                      std::span<const int32_t> tokens, std::string app_data = {});

// The file's bytes (layout above), and the state back from them. Errors: wrong magic, version,
// length (a truncated file says so) or checksum, fields out of range. `name` goes in messages.
std::vector<uint8_t> encode_state(const KvState& state);
Result<KvState> decode_state(std::span<const uint8_t> bytes, const std::string& name);

// Writes the state to `path` through `path`.tmp, renamed over it when complete: a crash leaves
// the old file or the new one, never half of one. Returns the bytes written.
Result<int64_t> write_state_file(const std::string& path, const KvState& state);
Result<KvState> read_state_file(const std::string& path);

// Ok when the state's cells can go into `cache` of the model `fingerprint` identifies: same
// model (the first field that differs is named, file's vs model's value), same cell type, the
// recurrent state the cache's recurrent layers need (same shape), and no more positions than
// the cache's context. `name` goes in messages.
Status check_state_fits(const KvState& state, const ModelFingerprint& fingerprint,
                        const KvCache& cache, const std::string& name);
// Replaces what `seq` holds by the state's cells (after check_state_fits). Fails, with the
// sequence holding nothing, when the cache has too few free blocks.
Status restore_state(KvCache& cache, int32_t seq, const KvState& state);

}  // namespace minfer::engine
