#include "engine/slot_table.h"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include "core/elapsed.h"

namespace minfer::engine {

namespace {

int64_t common_prefix(std::span<const int32_t> a, std::span<const int32_t> b) {
  return std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin();
}

}  // namespace

SlotTable::SlotTable(KvCache& cache, const Model& model, int n_slots, int64_t n_ctx,
                     bool prefix_cache)
    : kv_(cache),
      model_(model),
      n_ctx_(n_ctx),
      prefix_cache_(prefix_cache),
      slots_(static_cast<size_t>(n_slots)) {}

int32_t SlotTable::pick(std::span<const int32_t> tokens, int32_t pinned) const {
  if (pinned >= 0) return busy(pinned) ? -1 : pinned;
  int32_t best = -1;
  int64_t best_shared = 0;
  int32_t empty = -1;
  int32_t idle = -1;
  for (int32_t id = 0; id < size(); ++id) {
    const Slot& slot = at(id);
    if (slot.busy) continue;
    const int64_t shared = common_prefix(slot.tokens, tokens);
    if (shared > best_shared) {
      best = id;
      best_shared = shared;
    }
    if (empty < 0 && slot.tokens.empty()) empty = id;
    if (idle < 0) idle = id;
  }
  return best >= 0 ? best : empty >= 0 ? empty : idle;
}

int64_t SlotTable::attach(int32_t slot, std::span<const int32_t> tokens) {
  Slot& s = at(slot);
  // The last token is always computed (its logits are needed), in a block of its own sequence:
  // registered blocks are never written.
  const int64_t limit = static_cast<int64_t>(tokens.size()) - 1;
  const int64_t shared = std::min(common_prefix(s.tokens, tokens), limit);
  if (shared > 0) {
    kv_.truncate(slot, shared);
    s.tokens.resize(static_cast<size_t>(kv_.length(slot)));
    if (!s.tokens.empty()) return kv_.length(slot);
  }
  erase(slot);
  return prefix_cache_ ? kv_.match_prefix(slot, tokens, limit) : 0;
}

void SlotTable::leave(int32_t slot, std::span<const int32_t> tokens, bool keep) {
  Slot& s = at(slot);
  s.busy = false;
  if (!keep) return erase(slot);
  const auto n =
      static_cast<size_t>(std::min(kv_.length(slot), static_cast<int64_t>(tokens.size())));
  s.tokens.assign(tokens.begin(), tokens.begin() + static_cast<std::ptrdiff_t>(n));
}

bool SlotTable::drop_idle(int32_t except) {
  bool dropped = false;
  for (int32_t id = 0; id < size(); ++id) {
    const Slot& slot = at(id);
    if (slot.busy || id == except || slot.tokens.empty()) continue;
    erase(id);
    dropped = true;
  }
  return dropped;
}

void SlotTable::erase(int32_t slot) {
  kv_.free_sequence(slot);
  at(slot).tokens.clear();
}

const ModelFingerprint& SlotTable::fingerprint() {
  if (!fingerprint_) fingerprint_ = model_fingerprint(model_);
  return *fingerprint_;
}

Result<KvState> SlotTable::capture(int32_t slot, std::string app_data) {
  return capture_state(fingerprint(), kv_, slot, at(slot).tokens, std::move(app_data));
}

Status SlotTable::restore(int32_t slot, const KvState& state, const std::string& source) {
  MINFER_RETURN_IF_ERROR(check_state_fits(state, fingerprint(), kv_, source));
  // A request needs room for one more token after the state.
  if (state.n_tokens() + 1 >= n_ctx_) {
    return make_error(ErrorCode::kOutOfRange,
                      "[scheduler] '{}' holds {} tokens: no room left to generate in n_ctx {}",
                      source, state.n_tokens(), n_ctx_);
  }
  at(slot).tokens.clear();
  Status restored = restore_state(kv_, slot, state);
  if (!restored.is_ok() && drop_idle(slot)) restored = restore_state(kv_, slot, state);
  MINFER_RETURN_IF_ERROR(restored);
  at(slot).tokens = state.tokens;
  // Its full blocks serve any request that begins with them, in whichever slot it runs.
  if (prefix_cache_) kv_.commit_prefix(slot, at(slot).tokens);
  return Status::ok();
}

Result<SlotReply> SlotTable::act(SlotAction action, int32_t slot, const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  SlotReply reply{.id_slot = slot, .n_tokens = 0, .n_bytes = 0, .ms = 0.0};
  if (action == SlotAction::kErase) {
    reply.n_tokens = static_cast<int64_t>(tokens(slot).size());
    erase(slot);
  } else if (action == SlotAction::kSave) {
    MINFER_ASSIGN_OR_RETURN(const KvState state, capture(slot));
    MINFER_ASSIGN_OR_RETURN(reply.n_bytes, write_state_file(path, state));
    reply.n_tokens = state.n_tokens();
  } else {
    MINFER_ASSIGN_OR_RETURN(KvState state, read_state_file(path));
    MINFER_RETURN_IF_ERROR(restore(slot, state, path));
    reply.n_tokens = state.n_tokens();
    std::error_code ec;
    reply.n_bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  }
  reply.ms = ms_between(t0, std::chrono::steady_clock::now());
  return reply;
}

}  // namespace minfer::engine
