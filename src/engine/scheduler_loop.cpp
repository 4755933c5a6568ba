// The Scheduler's loop and what crosses threads (engine/scheduler.h): starting and stopping the
// loop thread, slot actions queued by other threads, the stats others read, and the guard around
// each step (an exception fails its own requests, not the scheduler).
#include <algorithm>

#include "engine/scheduler.h"
#include "engine/scheduler_sequence.h"

namespace minfer::engine {

void Scheduler::start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { loop(); });
}

void Scheduler::stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  // The loop is gone: end what is left on this thread.
  {
    std::lock_guard<std::mutex> lock(mu_);
    take_incoming();
  }
  for (auto& seq : running_) finish(*seq, FinishReason::kCancelled);
  for (auto& seq : waiting_) finish(*seq, FinishReason::kCancelled);
  running_.clear();
  waiting_.clear();
  std::deque<PendingSlotAction> actions;
  {
    std::lock_guard<std::mutex> lock(mu_);
    actions.swap(slot_actions_);
  }
  for (PendingSlotAction& a : actions) {
    a.done(make_error(ErrorCode::kResourceExhausted, "[scheduler] shutting down"));
  }
  publish_stats();
}

void Scheduler::slot_action(SlotAction action, int32_t slot, std::string path, SlotCallback done) {
  if (!options_.keep_slots) {
    done(make_error(ErrorCode::kUnsupported,
                    "[scheduler] slots keep no state in this generator (keep_slots is off)"));
    return;
  }
  if (slot < 0 || slot >= options_.n_parallel) {
    done(make_error(ErrorCode::kInvalidArgument,
                    "[scheduler] slot {} does not exist: expected 0..{} (n_parallel {})", slot,
                    options_.n_parallel - 1, options_.n_parallel));
    return;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      slot_actions_.push_back({action, slot, std::move(path), std::move(done)});
      wake_.notify_all();
      return;
    }
  }
  done(make_error(ErrorCode::kResourceExhausted, "[scheduler] shutting down"));
}

void Scheduler::run_slot_actions() {
  std::deque<PendingSlotAction> ready;
  {
    std::lock_guard<std::mutex> lock(mu_);
    // An action waits while a request runs in its slot.
    for (auto it = slot_actions_.begin(); it != slot_actions_.end();) {
      if (slots_->busy(it->slot)) {
        ++it;
      } else {
        ready.push_back(std::move(*it));
        it = slot_actions_.erase(it);
      }
    }
  }
  for (PendingSlotAction& a : ready) a.done(slots_->act(a.action, a.slot, a.path));
  if (!ready.empty()) publish_stats();
}

void Scheduler::fail(Sequence& seq, std::string_view what) {
  const Status error =
      make_error(ErrorCode::kInternal, "[scheduler] request {} failed: {}", seq.id, what);
  try {
    finish(seq, FinishReason::kCancelled, error);
  } catch (...) {
    seq.finished = true;  // its sink threw again: the request ends without its last event
  }
}

void Scheduler::fail_step(std::string_view what) {
  ++n_step_errors_;
  if (in_step_.empty()) {
    for (auto& seq : running_) in_step_.push_back(seq.get());
  }
  for (Sequence* seq : in_step_) fail(*seq, what);
  in_step_.clear();
  std::erase_if(running_, [](const std::unique_ptr<Sequence>& s) { return s->finished; });
  publish_stats();
}

Result<bool> Scheduler::step() {
  try {
    return run_step();
  } catch (const std::exception& e) {
    fail_step(e.what());
  } catch (...) {
    fail_step("an exception of unknown type");
  }
  return true;
}

Status Scheduler::run_until_idle() {
  while (true) {
    MINFER_ASSIGN_OR_RETURN(const bool worked, step());
    if (!worked && waiting_.empty()) {
      std::lock_guard<std::mutex> lock(mu_);
      if (incoming_.empty() && slot_actions_.empty()) return Status::ok();
    }
  }
}

void Scheduler::loop() {
  while (true) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait(lock, [&] {
        return stopping_ || !incoming_.empty() || !running_.empty() || !waiting_.empty() ||
               !slot_actions_.empty();
      });
      if (stopping_) return;
    }
    Result<bool> worked = step();
    if (!worked.is_ok() || !worked.value()) {
      // Nothing could run (or the step failed): do not spin.
      std::unique_lock<std::mutex> lock(mu_);
      wake_.wait_for(lock, std::chrono::milliseconds(5));
    }
  }
}

void Scheduler::publish_stats() {
  if (slots_ == nullptr) return;  // create() failed before the runtime was made
  std::lock_guard<std::mutex> lock(mu_);
  stats_.n_running = std::count_if(running_.begin(), running_.end(),
                                   [](const std::unique_ptr<Sequence>& s) { return !s->finished; });
  stats_.n_waiting = n_queued_;
  stats_.kv_blocks_used = kv().n_blocks_used();
  stats_.kv_blocks_free = kv().n_blocks_free();
  stats_.kv_blocks_cached = kv().n_blocks_cached();
  stats_.kv_blocks_total = kv().config().max_blocks;
  stats_.kv_bytes_total = static_cast<int64_t>(kv().budget_bytes());
  stats_.kv_bytes_used = static_cast<int64_t>(kv().bytes_in_use());
  stats_.kv_bytes_per_position = static_cast<int64_t>(kv().block_bytes()) / options_.block_size;
  stats_.kv_cell_type = std::string(kv_cell_type_name(kv().config().cell_type));
  stats_.n_steps = n_steps_;
  stats_.n_preemptions = n_preemptions_;
  stats_.n_step_errors = n_step_errors_;
  stats_.n_spec_steps = n_spec_steps_;
  stats_.n_draft_tokens = n_draft_tokens_;
  stats_.n_draft_accepted = n_draft_accepted_;
  slot_states_.resize(static_cast<size_t>(slots_->size()));
  for (size_t i = 0; i < slot_states_.size(); ++i) {
    SlotState& st = slot_states_[i];
    st = SlotState{};
    st.id = static_cast<int32_t>(i);
    st.busy = slots_->busy(static_cast<int32_t>(i));
    st.n_cached = kv().length(static_cast<int32_t>(i));
  }
  for (const auto& seq : running_) {
    if (seq->slot < 0 || seq->finished) continue;
    SlotState& st = slot_states_[static_cast<size_t>(seq->slot)];
    st.n_prompt = seq->stats.n_prompt;
    st.n_generated = seq->stats.n_generated;
    st.request_id = seq->id;
  }
}

std::vector<SlotState> Scheduler::slots() const {
  std::lock_guard<std::mutex> lock(mu_);
  return slot_states_;
}

SchedulerStats Scheduler::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  SchedulerStats s = stats_;
  s.n_waiting = n_queued_;  // submissions count at once, not after the next step
  return s;
}

}  // namespace minfer::engine
