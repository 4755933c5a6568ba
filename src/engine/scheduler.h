// The Scheduler (DESIGN.md §4 "Engine", invariant 11): the one generation loop. Many sequences
// over one model, one KV cache and one forward; the public API's generate() is a scheduler of
// one slot stepped on the caller's thread, the server's batch generator one with a loop thread.
// Each step builds one Batch under a token budget in which every running sequence that is
// decoding contributes its one new token and sequences still prefilling contribute chunks of
// their prompt (chunked prefill), so all sequences decode together and each weight is read once
// per step. Requests join between steps, leave when finished or cancelled (their blocks go back
// to the pool, full blocks stay cached for prefix reuse), wait in a queue while n_parallel
// sequences run or KV blocks are short, and are refused past max_queue.
// Speculative decoding (GenerateParams::spec_ngram, or the draft model's engine/drafter.h): a
// decoding sequence feeds its drafts after its token in the same step; the rows after drafts it
// does not sample are never used, and their cells are dropped before the next step.
// Its parts: scheduler.cpp (admission, batch planning, preemption, applying a step, finishing),
// scheduler_speculation.cpp (drafts and their verification), scheduler_loop.cpp (the loop thread,
// slot actions, stats, the guard around each step), engine/slot_table.h (the slots),
// engine/drafter.h (the draft model), engine/request.h (what a request must satisfy).
//
//   SchedulerOptions options;
//   options.n_parallel = 8;
//   auto sched = Scheduler::create(model, tokenizer, options);
//   (*sched)->start();                                    // the step loop on its own thread
//   auto handle = (*sched)->submit(params, [](RequestEvent&& e) { ... });
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "core/non_copyable.h"
#include "core/status.h"
#include "engine/drafter.h"
#include "engine/request.h"
#include "engine/runtime.h"
#include "engine/slot_table.h"
#include "engine/state_file.h"
#include "models/model.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

// The runtime's options (n_ctx: positions one sequence may use; n_ctx_total: the KV budget for
// all sequences, ≤ 0: n_parallel * n_ctx) and the scheduling policy.
struct SchedulerOptions : RuntimeOptions {
  int n_parallel = kDefaultParallel;           // sequences running at once
  int64_t token_budget = kDefaultTokenBudget;  // most tokens one step computes
  int64_t max_queue = kDefaultMaxQueue;  // requests waiting beyond it are refused; < 0: no limit
  bool prefix_cache = true;
  // A finished request's cells stay in its slot (BatchOptions::keep_slots).
  bool keep_slots = false;
  // A draft model of the same vocabulary for requests with RequestParams::spec_draft_model (not
  // owned; must outlive the scheduler); null: none. Not with sliding-window layers.
  const Model* draft_model = nullptr;
};

using minfer::SlotAction;
using minfer::SlotReply;
using minfer::SlotState;
using SlotCallback = std::function<void(Result<SlotReply>)>;

// A snapshot for metrics (the public API's BatchStats).
using SchedulerStats = minfer::BatchStats;

class Scheduler : NonCopyable {
 public:
  // `model` and `tokenizer` must outlive the scheduler. Errors: bad options, a total budget
  // smaller than one sequence's context.
  static Result<std::unique_ptr<Scheduler>> create(const Model& model, const Tokenizer& tokenizer,
                                                   const SchedulerOptions& options);
  ~Scheduler();  // stop()

  // Runs the step loop on a thread of its own until stop().
  void start();
  // Cancels every request (each gets its final event) and joins the loop thread.
  void stop();

  // Queues a request. Errors: an empty prompt or bad ids or sampling parameters
  // (kInvalidArgument), a prompt with no room for one generated token in n_ctx (kOutOfRange),
  // a full queue or a stopped scheduler (kResourceExhausted). The sink gets every
  // event of the request, the last with done set.
  Result<std::shared_ptr<RequestHandle>> submit(RequestParams params, EventSink sink);

  // Queues an action on slot `slot` (BatchGenerator::slot_action); `done` gets its result on
  // the stepping thread, or at once for an error found here (keep_slots off, a bad slot, a
  // stopped scheduler).
  void slot_action(SlotAction action, int32_t slot, std::string path, SlotCallback done);

  // Without start(): runs one step on the calling thread (false when there was nothing to do),
  // or steps until no request is left. For tests and tools.
  // A step never throws: an exception while one sequence's logits are applied fails that
  // request; one anywhere else fails the requests in the step (all running ones when it came
  // before the batch was planned). Each gets an error event; their blocks are freed.
  Result<bool> step();
  Status run_until_idle();

  // The slots (engine/slot_table.h), on the stepping thread or while no loop runs: the public
  // API's one sequence saves and loads its state files through them.
  SlotTable& slot_table() { return *slots_; }

  SchedulerStats stats() const;
  // Every slot's state as of the last step.
  std::vector<SlotState> slots() const;
  const SchedulerOptions& options() const { return options_; }
  // Logit rows per token: the bound of token ids in prompts and logit_bias.
  int64_t n_vocab() const { return runtime_->n_vocab(); }
  const KvCache& cache() const { return runtime_->cache(); }
  bool has_draft_model() const { return drafter_ != nullptr; }
  // The draft model's cache (has_draft_model() only).
  const KvCache& draft_cache() const { return drafter_->cache(); }
  const Runtime& runtime() const { return *runtime_; }
  // Tokens computed by the last step (decode tokens and prefill chunks together).
  int64_t last_step_tokens() const { return last_step_tokens_; }

  // Tests: called with a request's id before its logits are applied, and with -1 before each
  // forward, on the stepping thread; what it throws stands for a failure of that part of the
  // step. Set before the first request.
  void set_fault_hook(std::function<void(int64_t request_id)> hook) {
    fault_hook_ = std::move(hook);
  }

 private:
  struct Sequence;
  using Clock = std::chrono::steady_clock;
  // One sequence's part of a step's batch.
  struct StepPart {
    Sequence* seq;
    int64_t n_tokens;   // tokens it computes, its drafts included
    int64_t first_row;  // its first logits row (1 + its drafts); -1: none (a prefill chunk)
  };
  struct PendingSlotAction {
    SlotAction action;
    int32_t slot;
    std::string path;
    SlotCallback done;
  };

  Scheduler(const Model& model, const Tokenizer& tokenizer, const SchedulerOptions& options);
  void loop();
  // Moves submitted requests into the waiting queue and ends cancelled ones. Caller holds mu_.
  void take_incoming();
  void end_cancelled();
  void admit();
  // The request leaves its slot: its cells stay there (keep) or go.
  void leave_slot(Sequence& seq, bool keep);
  // Runs the queued slot actions whose slot is idle (stepping thread).
  void run_slot_actions();
  void preempt(Sequence& seq);
  // Every sequence whose next token is its last gets the block for it; when the pool is short,
  // the newest sequences give their blocks back (recomputed later).
  void reserve_decodes();
  // The step's batch under the token budget: decode tokens (with their drafts) first, then
  // prefill chunks, oldest request first. `fed` gets each sequence's part.
  Batch plan_batch(std::vector<StepPart>& fed);
  // The drafts a decoding sequence verifies this step, at most max_drafts, their cells reserved
  // (none when the pool is short: drafts never take blocks from other sequences).
  std::vector<int32_t> plan_drafts(Sequence& seq, int64_t max_drafts);
  // The most drafts the sequence may verify this step: max_drafts, its draft_max, room in the
  // context and before max_tokens.
  int64_t draft_limit(const Sequence& seq, int64_t max_drafts) const;
  bool uses_draft_model(const Sequence& seq) const;
  // The draft model's part of a step (engine/drafter.h) for the running sequences that use it.
  void run_draft_model();
  // After a step: the sequences' computed positions, the prefix cache, then each row sampled.
  void apply_step(const std::vector<StepPart>& fed, std::span<const float> logits);
  // Samples from the rows [1 + drafts, n_vocab] of a sequence that verified drafts: row j only
  // while every token sampled before it is the draft that row followed, as plain decoding would.
  void verify_drafts(Sequence& seq, std::span<const float> rows);
  // Drops the cells of the drafts of the last step not sampled, and registers the full blocks
  // the sampled ones completed.
  void settle_drafts(Sequence& seq);
  // Registers the sequence's full computed blocks in the prefix cache when a block was completed
  // since it had n_before positions computed.
  void commit_blocks(Sequence& seq, int64_t n_before);
  // With recurrent layers and the prefix cache: the position after the prompt's last full block
  // whose state is kept with the block (KvCache::commit_prefix's keep_state), so that a request
  // of the same prompt, or one that extends it, resumes there (0: none). A prefill chunk ends
  // there (until_state_checkpoint: the tokens before it; else no limit).
  int64_t state_checkpoint(const Sequence& seq) const;
  int64_t until_state_checkpoint(const Sequence& seq) const;
  // The sequence, all of whose tokens are computed, forgets the older half of its tokens after
  // its n_keep (Runtime::shift_context); its history follows.
  Status shift_context(Sequence& seq);
  void finish(Sequence& seq, FinishReason reason, Status error = Status::ok());
  // The step itself (step() guards it).
  Result<bool> run_step();
  // Ends seq with an internal error naming `what` (an exception caught in a step).
  void fail(Sequence& seq, std::string_view what);
  // After an exception outside one sequence's logits: fails the requests in the step.
  void fail_step(std::string_view what);
  // Samples from one row of logits and feeds the token to the request.
  // `draft`: the draft model's proposal for this row (the accept/resample rule), or null.
  void on_logits(Sequence& seq, std::span<const float> logits,
                 const DraftProposal* draft = nullptr);
  void remove_finished();
  void publish_stats();
  KvCache& kv() { return runtime_->cache(); }

  const Model& model_;
  const Tokenizer& tokenizer_;
  SchedulerOptions options_;
  std::unique_ptr<Runtime> runtime_;
  std::unique_ptr<Drafter> drafter_;  // the draft model's; null: none

  // Shared with submitting threads, under mu_.
  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<std::unique_ptr<Sequence>> incoming_;
  std::deque<PendingSlotAction> slot_actions_;
  bool stopping_ = false;
  int64_t next_id_ = 1;
  SchedulerStats stats_;
  std::vector<SlotState> slot_states_;  // [n_parallel]
  int64_t n_queued_ = 0;                // incoming_ + waiting_, for the max_queue check

  // Owned by the stepping thread.
  std::deque<std::unique_ptr<Sequence>> waiting_;   // admission order: front first
  std::vector<std::unique_ptr<Sequence>> running_;  // admission order
  std::unique_ptr<SlotTable> slots_;
  int64_t n_steps_ = 0;
  int64_t n_preemptions_ = 0;
  int64_t n_spec_steps_ = 0;  // BatchStats::n_spec_steps, n_draft_tokens, n_draft_accepted
  int64_t n_draft_tokens_ = 0;
  int64_t n_draft_accepted_ = 0;
  int64_t last_step_tokens_ = 0;
  int64_t n_step_errors_ = 0;       // exceptions caught in steps (BatchStats)
  bool step_traced_ = false;        // the step's trace line was ended (on_logits)
  std::vector<Sequence*> in_step_;  // the sequences of the step being run, once planned
  std::function<void(int64_t)> fault_hook_;
  std::thread thread_;
};

}  // namespace minfer::engine
