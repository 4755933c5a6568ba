// The scheduler's slots (DESIGN.md §4 "Engine"): where running requests live — a slot's index is
// its KV sequence id — and, with keep_slots, what a finished request's cells hold for the next
// request that shares their prefix; a slot's state saved to a file, restored from one, erased
// (llama-server's POST /slots/{id}, the public API's state files).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/state_file.h"
#include "kv/kv_cache.h"
#include "minfer/minfer.h"
#include "models/model.h"

namespace minfer::engine {

class SlotTable {
 public:
  // `cache` and `model` outlive the table. prefix_cache: full blocks are shared through the
  // cache's prefix hashes (a new request may attach another slot's blocks).
  SlotTable(KvCache& cache, const Model& model, int n_slots, int64_t n_ctx, bool prefix_cache);

  int32_t size() const { return static_cast<int32_t>(slots_.size()); }
  bool busy(int32_t slot) const { return at(slot).busy; }
  // What the slot's cells hold (kept from the last request, restored, or the running one's
  // prefix when it attached).
  const std::vector<int32_t>& tokens(int32_t slot) const { return at(slot).tokens; }

  // The free slot for a request of `tokens`: `pinned` when ≥ 0 (-1 while it is busy), else the
  // one whose cells share the longest prefix with it, else an empty one, else any idle one; -1
  // when none is free.
  int32_t pick(std::span<const int32_t> tokens, int32_t pinned) const;
  // Readies the free `slot` for a request of `tokens`: its cells are kept up to their common
  // prefix with `tokens` (never the last token: its logits are needed), else the prefix cache's
  // blocks. Returns the positions already computed. The request takes it with occupy() once its
  // blocks are reserved (else erase()).
  int64_t attach(int32_t slot, std::span<const int32_t> tokens);
  void occupy(int32_t slot) { at(slot).busy = true; }
  // The request in `slot` leaves it: with `keep` its cells stay, holding the first of `tokens`
  // (as many as the cache holds), else they go.
  void leave(int32_t slot, std::span<const int32_t> tokens, bool keep);
  // Frees the cells idle slots other than `except` keep; false when none kept any.
  bool drop_idle(int32_t except);
  // Frees a slot's cells.
  void erase(int32_t slot);

  // The slot's tokens, cells and recurrent state as a state (app_data stored beside them).
  Result<KvState> capture(int32_t slot, std::string app_data = {});
  // Puts a state into the idle `slot` after checking it against the model, the cells and a
  // context that leaves room to generate (`source` names it in errors); idle slots give their
  // cells back when the pool is short.
  Status restore(int32_t slot, const KvState& state, const std::string& source);
  // POST /slots/{id}?action=save|restore|erase on the idle `slot`, with the state file at `path`.
  Result<SlotReply> act(SlotAction action, int32_t slot, const std::string& path);

 private:
  struct Slot {
    bool busy = false;
    std::vector<int32_t> tokens;
  };
  Slot& at(int32_t slot) { return slots_[static_cast<size_t>(slot)]; }
  const Slot& at(int32_t slot) const { return slots_[static_cast<size_t>(slot)]; }
  const ModelFingerprint& fingerprint();

  KvCache& kv_;
  const Model& model_;
  int64_t n_ctx_;
  bool prefix_cache_;
  std::vector<Slot> slots_;
  std::optional<ModelFingerprint> fingerprint_;  // computed at the first state action
};

}  // namespace minfer::engine
