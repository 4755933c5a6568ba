#include "kv/recurrent_state.h"

#include <algorithm>
#include <utility>

#include "core/check.h"

namespace minfer {

RecurrentStatePool::RecurrentStatePool(int64_t n_layers, int64_t conv_floats, int64_t delta_floats,
                                       int64_t max_slots)
    : n_layers_(n_layers),
      conv_floats_(conv_floats),
      delta_floats_(delta_floats),
      max_slots_(n_layers > 0 ? max_slots : 0) {}

int32_t RecurrentStatePool::take() {
  MINFER_CHECK(n_free() > 0, "recurrent state slots exhausted");
  int32_t id;
  if (!free_.empty()) {
    id = free_.back();
    free_.pop_back();
  } else {
    id = static_cast<int32_t>(slots_.size());
    slots_.push_back(std::make_unique<float[]>(static_cast<size_t>(slot_floats())));
  }
  clear(id);
  return id;
}

void RecurrentStatePool::release(int32_t slot) {
  free_.push_back(slot);
}

void RecurrentStatePool::clear(int32_t slot) {
  const std::span<float> s = this->slot(slot);
  std::fill(s.begin(), s.end(), 0.0f);
}

void RecurrentStatePool::copy(int32_t to, int32_t from) {
  const std::span<const float> src = std::as_const(*this).slot(from);
  std::copy(src.begin(), src.end(), slot(to).begin());
}

std::span<float> RecurrentStatePool::slot(int32_t slot) {
  return {slots_[static_cast<size_t>(slot)].get(), static_cast<size_t>(slot_floats())};
}

std::span<const float> RecurrentStatePool::slot(int32_t slot) const {
  return {slots_[static_cast<size_t>(slot)].get(), static_cast<size_t>(slot_floats())};
}

}  // namespace minfer
