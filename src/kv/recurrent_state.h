// The per-sequence state of recurrent layers (a gated delta net's, DESIGN.md invariant 12),
// beside the KV block pools: one fixed-size slot per sequence holds, for each recurrent layer,
// its conv state [d_conv - 1][channels] (the last inputs of the causal conv, oldest first) and
// its delta state [n_v_heads][d_state][d_state] (per value head, row j the keys of value j), in
// f32. Slots are handed out as sequences start (zeroed: the state before any token), return when
// they end, and their memory is taken on first use, so the pool holds what its sequences hold;
// max_slots bounds it.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

namespace minfer {

class RecurrentStatePool {
 public:
  RecurrentStatePool() = default;
  // n_layers: the recurrent layers; 0 makes an empty pool that hands out nothing.
  RecurrentStatePool(int64_t n_layers, int64_t conv_floats, int64_t delta_floats,
                     int64_t max_slots);

  bool empty() const { return n_layers_ == 0; }
  // One slot: every recurrent layer's conv state then delta state, layer by layer.
  int64_t slot_floats() const { return n_layers_ * (conv_floats_ + delta_floats_); }
  size_t slot_bytes() const { return static_cast<size_t>(slot_floats()) * sizeof(float); }
  int64_t n_free() const {
    return max_slots_ - static_cast<int64_t>(slots_.size()) + static_cast<int64_t>(free_.size());
  }
  int64_t n_held() const { return static_cast<int64_t>(slots_.size() - free_.size()); }
  int64_t max_slots() const { return max_slots_; }

  // A zeroed slot. Precondition: n_free() > 0.
  int32_t take();
  void release(int32_t slot);
  void clear(int32_t slot);             // back to the state before any token
  void copy(int32_t to, int32_t from);  // every layer's state
  std::span<float> slot(int32_t slot);  // [slot_floats] the whole state, layer by layer
  std::span<const float> slot(int32_t slot) const;
  // Layer `index` (among the recurrent layers) of a slot.
  float* conv(int32_t slot, int64_t index) { return layer(slot, index); }
  float* delta(int32_t slot, int64_t index) { return layer(slot, index) + conv_floats_; }

 private:
  float* layer(int32_t slot, int64_t index) {
    return slots_[static_cast<size_t>(slot)].get() + index * (conv_floats_ + delta_floats_);
  }

  int64_t n_layers_ = 0;
  int64_t conv_floats_ = 0;
  int64_t delta_floats_ = 0;
  int64_t max_slots_ = 0;
  std::vector<std::unique_ptr<float[]>> slots_;  // every slot handed out so far
  std::vector<int32_t> free_;                    // slots no sequence holds
};

}  // namespace minfer
