// The Scheduler's speculative decoding (engine/speculative.h): which drafts a decoding sequence
// verifies in a step (prompt lookup, or the draft model's through the Drafter), and what the
// rows after them give — each sampled while every token before it is the draft its row
// followed, as plain decoding would — and the cells of drafts not sampled dropped.
// A recurrent state (Qwen3.5's gated delta nets) cannot drop the tokens of rejected drafts: a
// checkpoint of it is taken before the drafts are verified, and when one is rejected the
// sequence rewinds to the checkpoint and computes its accepted tokens again in the next step
// (with its next token, in the same forward). Keeping a state per verified position instead
// would need the delta-net graph to write one per token; the checkpoint costs one state copy
// per verify step and a second slot per sequence (Scheduler::create).
#include <utility>

#include <algorithm>

#include "engine/drafter.h"
#include "engine/scheduler.h"
#include "engine/scheduler_sequence.h"
#include "engine/speculative.h"

namespace minfer::engine {

int64_t Scheduler::draft_limit(const Sequence& seq, int64_t max_drafts) const {
  const RequestParams& p = seq.params;
  const auto n_tokens = static_cast<int64_t>(seq.tokens.size());
  // Every draft has a position, and a row that could be sampled: the last token is fed at
  // n_tokens - 1 and what its rows give is sampled at the positions after it, so the drafts stop
  // one short of the context (a context shift never falls among them), and before max_tokens.
  max_drafts = std::min<int64_t>({max_drafts, p.generate.draft_max, options_.n_ctx - 1 - n_tokens});
  if (p.generate.max_tokens >= 0) {
    max_drafts = std::min(max_drafts, p.generate.max_tokens - seq.stats.n_generated - 1);
  }
  return max_drafts;
}

bool Scheduler::uses_draft_model(const Sequence& seq) const {
  return drafter_ != nullptr && seq.params.spec_draft_model && seq.slot >= 0;
}

std::vector<int32_t> Scheduler::plan_drafts(Sequence& seq, int64_t max_drafts) {
  const RequestParams& p = seq.params;
  const bool by_model = uses_draft_model(seq);
  if (p.generate.spec_ngram <= 0 && !by_model) return {};
  std::vector<DraftProposal> proposals;
  std::vector<int32_t> model_drafts;
  if (by_model) model_drafts = drafter_->take(seq.id, proposals);
  max_drafts = draft_limit(seq, max_drafts);
  std::vector<int32_t> drafts;
  if (max_drafts > 0 && max_drafts >= p.generate.draft_min) {
    if (by_model) {
      drafts = std::move(model_drafts);
      if (static_cast<int64_t>(drafts.size()) > max_drafts) {
        drafts.resize(static_cast<size_t>(max_drafts));
      }
    } else {
      drafts = lookup_draft(seq.tokens, p.generate.spec_ngram, static_cast<int>(max_drafts));
    }
  }
  const int64_t end = static_cast<int64_t>(seq.tokens.size() + drafts.size());
  if (drafts.empty() || static_cast<int64_t>(drafts.size()) < p.generate.draft_min) return {};
  if (kv().has_recurrent()) {
    seq.checkpoint = kv().checkpoint_state(seq.slot);
    if (seq.checkpoint < 0) return {};  // no slot for it: decode without drafts
  }
  if (!kv().reserve(seq.slot, end).is_ok()) {
    if (seq.checkpoint >= 0) kv().release_checkpoint(std::exchange(seq.checkpoint, -1));
    return {};
  }
  if (proposals.size() > drafts.size()) proposals.resize(drafts.size());
  seq.proposals = std::move(proposals);
  return drafts;
}

void Scheduler::run_draft_model() {
  if (drafter_ == nullptr) return;
  std::vector<DraftTarget> targets;
  for (auto& s : running_) {
    Sequence& seq = *s;
    if (!uses_draft_model(seq)) continue;
    const bool decoding = static_cast<int64_t>(seq.tokens.size()) - seq.n_computed == 1;
    targets.push_back({seq.id, seq.slot, seq.tokens, decoding,
                       decoding ? draft_limit(seq, options_.token_budget) : 0,
                       seq.params.generate.draft_p_min});
  }
  drafter_->run(targets, options_.token_budget);
}

void Scheduler::settle_drafts(Sequence& seq) {
  if (seq.drafts.empty()) return;
  seq.drafts.clear();
  seq.proposals.clear();
  const int32_t checkpoint = std::exchange(seq.checkpoint, -1);
  if (checkpoint >= 0 && (seq.slot < 0 || kv().length(seq.slot) == seq.n_computed)) {
    kv().release_checkpoint(checkpoint);  // every draft accepted: the state is right
  } else if (checkpoint >= 0) {
    // The state has seen rejected drafts: back to before the step; the accepted tokens are
    // computed again with the next one.
    kv().rewind(seq.slot, seq.draft_base, checkpoint);
    seq.n_computed = seq.draft_base;
  }
  if (seq.slot < 0) return;
  kv().truncate(seq.slot, seq.n_computed);
  // (A truncation that could not keep a shared block keeps fewer: those are computed again.)
  seq.n_computed = std::min(seq.n_computed, kv().length(seq.slot));
  commit_blocks(seq, seq.draft_base);
}

void Scheduler::verify_drafts(Sequence& seq, std::span<const float> rows) {
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  const auto n_drafts = static_cast<int64_t>(seq.drafts.size());
  seq.stats.n_drafted += n_drafts;
  n_draft_tokens_ += n_drafts;
  ++n_spec_steps_;
  ++seq.forwards.n_verified;
  for (size_t j = 0;; ++j) {
    const DraftProposal* proposal = j < seq.proposals.size() ? &seq.proposals[j] : nullptr;
    on_logits(seq, rows.subspan(j * n_vocab, n_vocab), proposal);
    if (seq.finished || j == seq.drafts.size() || seq.tokens.back() != seq.drafts[j]) break;
    // Sampled as drafted: its cell holds the token, and row j + 1 is what follows it.
    ++seq.n_computed;
    ++seq.stats.n_draft_accepted;
    ++n_draft_accepted_;
  }
  // The draft's cells of accepted drafts hold the tokens now; the rest go at its next step.
  if (uses_draft_model(seq)) drafter_->settle(seq.id, seq.slot, seq.n_computed);
  settle_drafts(seq);
}

}  // namespace minfer::engine
