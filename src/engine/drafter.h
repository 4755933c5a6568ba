// The draft model of speculative decoding (SchedulerOptions::draft_model; engine/speculative.h
// says how its drafts are kept): its runtime — a paged cache of its own with the scheduler's
// slots, context and block size — and each request's draft state: the positions of its draft
// sequence that hold the request's tokens, the drafts made for this step and, for a sampled
// request, the sampler that draws them with the distribution of each.
//
// Each step, before the target's forward, the drafter brings every speculating request's draft
// sequence up to its tokens (decoding requests first, within the token budget; prompts in
// batches, full blocks shared by prefix) and lets the decoding ones draft: one batched draft
// forward per drafted token. The scheduler takes the drafts, verifies them, and tells the drafter
// what the request's cells then hold.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/non_copyable.h"
#include "core/status.h"
#include "engine/runtime.h"
#include "models/model.h"
#include "sampling/sampler.h"

namespace minfer::engine {

// One speculating request as the drafter sees it in a step.
struct DraftTarget {
  int32_t id;                       // the request (its draft state)
  int32_t slot;                     // its sequence id, in the target's cache and the draft's
  std::span<const int32_t> tokens;  // what its positions hold or will hold
  bool decoding;                    // the step feeds its last token (and may verify drafts)
  int64_t max_drafts;               // the most drafts it may verify after this step
  float p_min;                      // GenerateParams::draft_p_min
};

class Drafter : NonCopyable {
 public:
  // A draft runtime for `draft` with `options` (the scheduler's threads, cell type, context,
  // budget and block size; no observers). Errors: another vocabulary size than `target`'s,
  // sliding-window layers in either (drafts past the window would return cells the sequence
  // still needs once dropped), the runtime's. Recurrent layers (either model) roll back through
  // state checkpoints (scheduler_speculation.cpp, sync).
  static Result<std::unique_ptr<Drafter>> create(const Model& target, const Model& draft,
                                                 RuntimeOptions options, bool prefix_cache);

  // Request `id` drafts from now on (until end(id)), sampled with `sampling` (greedy drafts for
  // greedy settings).
  void begin(int32_t id, const SamplerParams& sampling);
  void end(int32_t id);
  // The request left `slot` (finished or preempted): its draft sequence goes (full blocks stay
  // cached) and is rebuilt when it runs again.
  void leave(int32_t id, int32_t slot);

  // The draft model's part of a step for `targets` (the scheduler's running order).
  void run(std::span<const DraftTarget> targets, int64_t token_budget);
  // The drafts made for request `id` this step, and with a sampled request the distribution of
  // each (else empty), moved out.
  std::vector<int32_t> take(int32_t id, std::vector<DraftProposal>& proposals);
  // After its drafts were verified: the draft cells of accepted drafts hold the request's tokens,
  // which its sequence holds up to n_computed.
  void settle(int32_t id, int32_t slot, int64_t n_computed);
  // After a context shift that kept n_keep tokens: what the draft holds past them is computed
  // again.
  void shifted(int32_t id, int64_t n_keep);

  const KvCache& cache() const { return runtime_->cache(); }

 private:
  struct State {
    int64_t n_computed = 0;       // positions of its draft sequence that hold its tokens' prefix
    std::vector<int32_t> drafts;  // made this step
    std::vector<DraftProposal> proposals;  // [drafts] with a sampler, else empty
    std::unique_ptr<Sampler> sampler;      // null: greedy drafts
    // A draft model with recurrent layers: a checkpoint of its state (KvCache::checkpoint_state)
    // at checkpoint_at positions, taken before the drafts are fed, for sync to rewind to; -1:
    // none.
    int32_t checkpoint = -1;
    int64_t checkpoint_at = 0;
  };
  // A request drafting this step and the most drafts it may make.
  struct Drafting {
    const DraftTarget* target;
    State* state;
    int64_t limit;
  };

  Drafter(int32_t n_vocab, bool prefix_cache) : n_vocab_(n_vocab), prefix_cache_(prefix_cache) {}
  // Forgets the draft cells past what the target's tokens hold; a sequence with none first takes
  // the draft cache's prefix blocks.
  void sync(const DraftTarget& t, State& s);
  void drop_checkpoint(State& s);
  // Adds to `batch` the tokens each target's draft sequence lacks (decoding ones first, within
  // the budget), the last one with its row for the decoding targets that draft: those are
  // returned, in row order.
  std::vector<Drafting> plan_catch_up(std::span<const DraftTarget> targets, int64_t budget,
                                      Batch& batch);
  // Each row gives its request's next draft, and each still drafting feeds it for the next row.
  void rounds(std::vector<Drafting>& drafting, std::span<const float> rows);
  // The draft from one row ([n_vocab]); false when the draft stops there.
  bool propose(const DraftTarget& t, State& s, std::span<const float> row);
  KvCache& kv() { return runtime_->cache(); }

  int32_t n_vocab_;
  bool prefix_cache_;
  std::unique_ptr<Runtime> runtime_;
  std::unordered_map<int32_t, State> states_;  // by request id
};

}  // namespace minfer::engine
