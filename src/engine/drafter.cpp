#include "engine/drafter.h"

#include <algorithm>
#include <utility>

#include "engine/speculative.h"

namespace minfer::engine {

Result<std::unique_ptr<Drafter>> Drafter::create(const Model& target, const Model& draft,
                                                 RuntimeOptions options, bool prefix_cache) {
  const ModelConfig& d = draft.config();
  const ModelConfig& t = target.config();
  if (d.n_vocab != t.n_vocab) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] the draft model has {} logits per token, the model {}: "
                      "expected the same vocabulary",
                      d.n_vocab, t.n_vocab);
  }
  if (d.n_swa > 0 || t.n_swa > 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] a draft model does not run with sliding-window layers (the "
                      "model's window {}, the draft's {}): expected none",
                      t.n_swa, d.n_swa);
  }
  options.observe = {};
  std::unique_ptr<Drafter> drafter(new Drafter(static_cast<int32_t>(t.n_vocab), prefix_cache));
  MINFER_ASSIGN_OR_RETURN(drafter->runtime_, Runtime::create(draft, options));
  return drafter;
}

void Drafter::begin(int32_t id, const SamplerParams& sampling) {
  states_[id].sampler = make_draft_sampler(sampling, n_vocab_);
}

void Drafter::end(int32_t id) {
  if (auto it = states_.find(id); it != states_.end()) drop_checkpoint(it->second);
  states_.erase(id);
}

void Drafter::leave(int32_t id, int32_t slot) {
  kv().free_sequence(slot);
  if (auto it = states_.find(id); it != states_.end()) {
    drop_checkpoint(it->second);
    it->second.n_computed = 0;
  }
}

void Drafter::drop_checkpoint(State& s) {
  if (s.checkpoint >= 0) kv().release_checkpoint(s.checkpoint);
  s.checkpoint = -1;
}

std::vector<int32_t> Drafter::take(int32_t id, std::vector<DraftProposal>& proposals) {
  auto it = states_.find(id);
  if (it == states_.end()) return {};
  proposals = std::move(it->second.proposals);
  it->second.proposals.clear();
  std::vector<int32_t> drafts = std::move(it->second.drafts);
  it->second.drafts.clear();
  return drafts;
}

void Drafter::settle(int32_t id, int32_t slot, int64_t n_computed) {
  if (auto it = states_.find(id); it != states_.end()) {
    it->second.n_computed = std::min(kv().length(slot), n_computed);
  }
}

void Drafter::shifted(int32_t id, int64_t n_keep) {
  if (auto it = states_.find(id); it != states_.end()) {
    it->second.n_computed = std::min(it->second.n_computed, n_keep);
  }
}

void Drafter::sync(const DraftTarget& t, State& s) {
  // A recurrent draft state that has seen drafts the target rejected goes back to the
  // checkpoint before them; its accepted tokens are computed again.
  if (s.checkpoint >= 0 && s.n_computed < kv().length(t.slot) && s.checkpoint_at <= s.n_computed) {
    kv().rewind(t.slot, s.checkpoint_at, std::exchange(s.checkpoint, -1));
    s.n_computed = kv().length(t.slot);
  }
  drop_checkpoint(s);
  if (s.n_computed > 0) {
    kv().truncate(t.slot, s.n_computed);
    // (A truncation that could not keep a shared block keeps fewer: those are computed again.)
    s.n_computed = std::min(s.n_computed, kv().length(t.slot));
    if (s.n_computed > 0) return;
  }
  kv().free_sequence(t.slot);
  if (prefix_cache_) {
    const int64_t limit = static_cast<int64_t>(t.tokens.size()) - 1;
    s.n_computed = kv().match_prefix(t.slot, t.tokens, limit);
  }
}

std::vector<Drafter::Drafting> Drafter::plan_catch_up(std::span<const DraftTarget> targets,
                                                      int64_t budget, Batch& batch) {
  std::vector<Drafting> drafting;
  // Decoding requests first (a token or two each), then prompts, oldest request first.
  for (const bool decoding_pass : {true, false}) {
    for (const DraftTarget& t : targets) {
      if (t.decoding != decoding_pass) continue;
      State& s = states_[t.id];
      sync(t, s);
      const auto n_tokens = static_cast<int64_t>(t.tokens.size());
      const int64_t pending = n_tokens - s.n_computed;
      const int64_t n = std::min(pending, budget);
      const int64_t limit = t.decoding && n == pending ? t.max_drafts : 0;
      // Cells for the tokens, and for the drafts fed after them (all but the last).
      const int64_t end = s.n_computed + n + std::max<int64_t>(0, limit - 1);
      if (n <= 0 || !kv().reserve(t.slot, end).is_ok()) continue;
      for (int64_t p = s.n_computed; p < s.n_computed + n; ++p) {
        batch.add(t.tokens[static_cast<size_t>(p)], static_cast<int32_t>(p), t.slot,
                  limit > 0 && p + 1 == n_tokens);
      }
      budget -= n;
      if (limit > 0) drafting.push_back({&t, &s, limit});
    }
  }
  return drafting;
}

bool Drafter::propose(const DraftTarget& t, State& s, std::span<const float> row) {
  const int32_t token = propose_draft_token(row, t.p_min, s.sampler.get(), &s.proposals);
  if (token < 0) return false;
  s.drafts.push_back(token);
  return true;
}

void Drafter::rounds(std::vector<Drafting>& drafting, std::span<const float> rows) {
  const auto n_vocab = static_cast<size_t>(n_vocab_);
  for (size_t i = 0; i < drafting.size(); ++i) {
    Drafting& d = drafting[i];
    if (d.state->sampler != nullptr) prime_draft_sampler(*d.state->sampler, d.target->tokens);
    if (!propose(*d.target, *d.state, rows.subspan(i * n_vocab, n_vocab))) d.limit = 0;
  }
  while (true) {
    // Each request still drafting feeds its last draft, at the position after its tokens and its
    // earlier drafts.
    Batch batch;
    std::vector<Drafting*> fed;
    for (Drafting& d : drafting) {
      const auto k = static_cast<int64_t>(d.state->drafts.size());
      if (k == 0 || k >= d.limit) continue;
      const auto pos = static_cast<int32_t>(static_cast<int64_t>(d.target->tokens.size()) + k - 1);
      batch.add(d.state->drafts.back(), pos, d.target->slot, true);
      fed.push_back(&d);
    }
    if (fed.empty()) return;
    Result<std::span<const float>> out = runtime_->step(batch);
    if (!out.is_ok()) return;  // the drafts so far stand; the cells go at the next step
    for (size_t i = 0; i < fed.size(); ++i) {
      Drafting& d = *fed[i];
      if (!propose(*d.target, *d.state, out.value().subspan(i * n_vocab, n_vocab))) d.limit = 0;
    }
  }
}

void Drafter::run(std::span<const DraftTarget> targets, int64_t token_budget) {
  for (const DraftTarget& t : targets) {
    State& s = states_[t.id];
    s.drafts.clear();
    s.proposals.clear();
  }
  Batch batch;
  std::vector<Drafting> drafting = plan_catch_up(targets, token_budget, batch);
  if (batch.n_tokens() == 0) return;
  Result<std::span<const float>> rows = runtime_->step(batch);
  // A recurrent draft state is kept as it is before the drafts are fed (none when no slot is
  // free: a rejected draft then makes the draft compute its sequence again).
  for (Drafting& d : drafting) {
    if (!rows.is_ok() || !kv().has_recurrent()) break;
    d.state->checkpoint = kv().checkpoint_state(d.target->slot);
    d.state->checkpoint_at = kv().length(d.target->slot);
  }
  const int64_t bs = runtime_->cache().config().block_size;
  for (const DraftTarget& t : targets) {
    State& s = states_[t.id];
    // What the forward computed (nothing when it failed: the cells go at the next step).
    const int64_t before = s.n_computed;
    s.n_computed = std::min(kv().length(t.slot), static_cast<int64_t>(t.tokens.size()));
    if (prefix_cache_ && s.n_computed / bs != before / bs) {
      kv().commit_prefix(t.slot, t.tokens.first(static_cast<size_t>(s.n_computed)));
    }
  }
  if (rows.is_ok()) rounds(drafting, rows.value());
}

}  // namespace minfer::engine
