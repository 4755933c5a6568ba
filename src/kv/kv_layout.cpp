#include "kv/kv_layout.h"

#include <iterator>
#include <optional>

namespace minfer {

namespace {

constexpr GgmlType kKvCellTypes[] = {GgmlType::kF32, GgmlType::kF16, GgmlType::kBF16,
                                     GgmlType::kQ8_0};
constexpr const char* kKvCellTypeNames = "f32, f16, bf16 or q8_0";  // for errors

// A run of one KV head's keys (or values) of one layer in a full segment (kv/block_pool.h) is at
// least this long: attention's walk over shorter runs reads cells at depth more slowly, over
// runs this long as fast as over unbroken stripes.
constexpr size_t kSegmentRunBytes = size_t{256} << 10;

// The blocks of a full segment for rows of `row_bytes` (the longer of a key's and a value's): a
// power of two.
size_t full_segment_blocks(const KvCacheConfig& c, size_t row_bytes) {
  const size_t block_run = static_cast<size_t>(c.block_size) * row_bytes;
  return std::bit_ceil((kSegmentRunBytes + block_run - 1) / block_run);
}

Status check_shape(const KvCacheConfig& c) {
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
  return Status::ok();
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

std::string_view kv_cell_type_name(GgmlType type) {
  return ggml_type_info(type).name;
}

namespace {

// One pool's shape, its rows in the cell type (whose blocks must divide the head dims).
Result<KvLayout::PoolShape> pool_shape(const KvCacheConfig& c, int64_t n_head_kv, int64_t head_dim,
                                       int64_t head_dim_v) {
  const std::optional<uint64_t> k_row =
      ggml_row_bytes(c.cell_type, static_cast<uint64_t>(head_dim));
  const std::optional<uint64_t> v_row =
      ggml_row_bytes(c.cell_type, static_cast<uint64_t>(head_dim_v));
  if (!k_row || !v_row) {
    return make_error(ErrorCode::kUnsupported,
                      "[kv] cache type {} needs head dims that are multiples of {}, got {} and {}",
                      kv_cell_type_name(c.cell_type), ggml_type_info(c.cell_type).block_size,
                      head_dim, head_dim_v);
  }
  return KvLayout::PoolShape{n_head_kv, head_dim, head_dim_v, static_cast<size_t>(*k_row),
                             static_cast<size_t>(*v_row)};
}

}  // namespace

Result<KvLayout> KvLayout::create(const KvCacheConfig& c) {
  MINFER_RETURN_IF_ERROR(check_shape(c));
  if (c.window_n_head_kv < 0 || c.window_head_dim < 0 || c.window_head_dim_v < 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] bad sliding-layer shape: n_head_kv {}, head_dim {}/{} (expected >= 0)",
                      c.window_n_head_kv, c.window_head_dim, c.window_head_dim_v);
  }
  MINFER_ASSIGN_OR_RETURN(const PoolShape main,
                          pool_shape(c, c.n_head_kv, c.head_dim, c.head_dim_v));
  MINFER_ASSIGN_OR_RETURN(const PoolShape window,
                          pool_shape(c, c.window_n_head_kv > 0 ? c.window_n_head_kv : c.n_head_kv,
                                     c.window_head_dim > 0 ? c.window_head_dim : c.head_dim,
                                     c.window_head_dim_v > 0 ? c.window_head_dim_v : c.head_dim_v));
  const bool windowed = c.window > 0 && !c.swa_layers.empty();
  if (windowed && static_cast<int64_t>(c.swa_layers.size()) != c.n_layer) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] swa_layers has {} entries, expected one per layer ({})",
                      c.swa_layers.size(), c.n_layer);
  }
  if (!c.recurrent_layers.empty() &&
      (static_cast<int64_t>(c.recurrent_layers.size()) != c.n_layer || c.conv_state_floats <= 0 ||
       c.delta_state_floats <= 0 || c.max_state_slots <= 0)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[kv] recurrent layers: {} entries (expected {}), state of {} + {} floats "
                      "and {} slots (all must be > 0)",
                      c.recurrent_layers.size(), c.n_layer, c.conv_state_floats,
                      c.delta_state_floats, c.max_state_slots);
  }
  if (c.window < 0) {
    return make_error(ErrorCode::kInvalidArgument, "[kv] sliding window {} must be >= 0", c.window);
  }
  KvLayout layout;
  layout.config = c;
  layout.main = main;
  layout.window = window;
  // Each layer takes the next slot of its pool's blocks: global layers the main blocks, sliding
  // layers the window blocks.
  int64_t n_global = 0;
  for (int64_t il = 0; il < c.n_layer; ++il) {
    if (layout.is_recurrent_layer(il)) {
      layout.layer_slot.push_back(static_cast<int64_t>(layout.recurrent_layers.size()));
      layout.recurrent_layers.push_back(il);
    } else if (windowed && c.swa_layers[static_cast<size_t>(il)]) {
      layout.layer_slot.push_back(static_cast<int64_t>(layout.window_layers.size()));
      layout.window_layers.push_back(il);
    } else {
      layout.layer_slot.push_back(n_global++);
    }
  }
  layout.full_segment = full_segment_blocks(
      c, std::max({main.k_row_bytes, main.v_row_bytes, window.k_row_bytes, window.v_row_bytes}));
  if (c.cell_type == GgmlType::kQ8_0) {
    if (main.head_dim == window.head_dim && main.head_dim % 64 == 0) {
      layout.k_rotation = 64;
      while (main.head_dim % (2 * layout.k_rotation) == 0) layout.k_rotation *= 2;
    }
    if (main.head_dim_v == window.head_dim_v && main.head_dim_v % 64 == 0) layout.v_rotation = 64;
  }
  return layout;
}

}  // namespace minfer
