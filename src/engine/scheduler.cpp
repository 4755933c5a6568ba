#include "engine/scheduler.h"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "core/check.h"
#include "core/elapsed.h"
#include "engine/drafter.h"
#include "engine/scheduler_sequence.h"
#include "engine/slot_table.h"

namespace minfer::engine {

Scheduler::Scheduler(const Model& model, const Tokenizer& tokenizer,
                     const SchedulerOptions& options)
    : model_(model), tokenizer_(tokenizer), options_(options) {}

Result<std::unique_ptr<Scheduler>> Scheduler::create(const Model& model, const Tokenizer& tokenizer,
                                                     const SchedulerOptions& options) {
  if (options.n_parallel < 1 || options.n_ctx < 2 || options.block_size < 1 ||
      options.token_budget < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] bad options: n_parallel {} (≥ 1), n_ctx {} (≥ 2), block_size {} "
                      "(≥ 1), token_budget {} (≥ 1)",
                      options.n_parallel, options.n_ctx, options.block_size, options.token_budget);
  }
  SchedulerOptions o = options;
  if (o.n_ctx_total <= 0) o.n_ctx_total = o.n_ctx * o.n_parallel;
  if (o.n_ctx_total < o.n_ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] the KV budget of {} positions is smaller than one sequence's "
                      "context: expected at least {}",
                      o.n_ctx_total, o.n_ctx);
  }
  // Every running sequence decodes each step.
  o.token_budget = std::max<int64_t>(o.token_budget, o.n_parallel);
  // Each slot's sequence may hold a recurrent state (models with recurrent layers), and a
  // checkpoint of it while it verifies drafts (scheduler_speculation.cpp). A slot's memory is
  // taken on first use: the checkpoints cost only when speculation runs.
  if (o.n_seq_max <= 0) {
    o.n_seq_max = 2 * std::max<int64_t>(o.n_parallel, o.n_ctx_total / o.n_ctx);
  }
  // With the prefix cache, one checkpoint per slot at the end of a prompt (commit_blocks).
  if (o.prefix_cache && o.n_prefix_states <= 0) o.n_prefix_states = o.n_parallel;
  std::unique_ptr<Scheduler> s(new Scheduler(model, tokenizer, o));
  MINFER_ASSIGN_OR_RETURN(s->runtime_, Runtime::create(model, o));
  s->slots_ = std::make_unique<SlotTable>(s->kv(), model, o.n_parallel, o.n_ctx, o.prefix_cache);
  if (o.draft_model != nullptr) {
    // The same threads, cell type, context, budget and block size.
    MINFER_ASSIGN_OR_RETURN(s->drafter_, Drafter::create(model, *o.draft_model, o, o.prefix_cache));
  }
  s->publish_stats();
  return s;
}

Scheduler::~Scheduler() {
  stop();
}

Result<std::shared_ptr<RequestHandle>> Scheduler::submit(RequestParams params, EventSink sink) {
  const int32_t n_vocab = static_cast<int32_t>(model_.config().n_vocab);
  MINFER_RETURN_IF_ERROR(check_request(params, tokenizer_,
                                       {.n_vocab = n_vocab,
                                        .n_ctx = options_.n_ctx,
                                        .n_slots = options_.n_parallel,
                                        .has_draft_model = drafter_ != nullptr,
                                        .n_swa = model_.config().n_swa,
                                        .recurrent = !model_.config().recurrent_layers.empty()}));
  const int64_t n_prompt = static_cast<int64_t>(params.prompt.size());
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) {
    return make_error(ErrorCode::kResourceExhausted, "[scheduler] shutting down");
  }
  // Requests beyond the n_parallel slots wait; a request that can run at once never counts.
  const int64_t would_wait = stats_.n_running + n_queued_ + 1 - options_.n_parallel;
  if (options_.max_queue >= 0 && would_wait > options_.max_queue) {
    return make_error(ErrorCode::kResourceExhausted,
                      "[scheduler] the queue is full: {} requests wait (max_queue {})", n_queued_,
                      options_.max_queue);
  }
  const int32_t id = static_cast<int32_t>(next_id_++);
  auto seq =
      std::make_unique<Sequence>(id, std::move(params), std::move(sink), tokenizer_, n_vocab);
  seq->stats.n_prompt = n_prompt;
  seq->t_submit = Clock::now();
  std::shared_ptr<RequestHandle> handle = seq->handle;
  incoming_.push_back(std::move(seq));
  ++n_queued_;
  wake_.notify_all();
  return handle;
}

void Scheduler::take_incoming() {
  while (!incoming_.empty()) {
    waiting_.push_back(std::move(incoming_.front()));
    incoming_.pop_front();
  }
}

void Scheduler::finish(Sequence& seq, FinishReason reason, Status error) {
  if (seq.finished) return;
  seq.finished = true;
  RequestEvent event;
  if (reason != FinishReason::kCancelled && error.is_ok()) {
    // What is left comes out; a cancelled or failed request drops it.
    TokenEnding end = seq.pipeline.finish(reason);
    reason = end.finish;
    event.text = std::move(end.delta.content);
    event.reasoning = std::move(end.delta.reasoning);
    event.tool_calls = std::move(end.delta.tool_calls);
    event.stop = std::move(end.stop);
  }
  event.done = true;
  event.finish = reason;
  event.error = std::move(error);
  seq.stats.total_ms = ms_between(seq.t_submit, Clock::now());
  event.stats = seq.stats;
  event.forwards = seq.forwards;
  settle_drafts(seq);  // a reply that ends among its drafts keeps only the sampled tokens' cells
  leave_slot(seq, options_.keep_slots && event.error.is_ok());
  if (drafter_ != nullptr) drafter_->end(seq.id);
  // The figures a client reads after its reply (/metrics, /slots) already count the sequence
  // out and its blocks free.
  publish_stats();
  if (seq.sink) seq.sink(std::move(event));
}

void Scheduler::end_cancelled() {
  for (auto& seq : running_) {
    if (seq->cancelled()) finish(*seq, FinishReason::kCancelled);
  }
  size_t removed = 0;
  for (auto& seq : waiting_) {
    if (seq->cancelled()) {
      finish(*seq, FinishReason::kCancelled);
      ++removed;
    }
  }
  if (removed > 0) {
    std::erase_if(waiting_, [](const std::unique_ptr<Sequence>& s) { return s->finished; });
    std::lock_guard<std::mutex> lock(mu_);
    n_queued_ -= static_cast<int64_t>(removed);
  }
}

void Scheduler::admit() {
  while (static_cast<int>(running_.size()) < options_.n_parallel && !waiting_.empty()) {
    Sequence& seq = *waiting_.front();
    const int32_t slot = slots_->pick(seq.tokens, seq.params.generate.id_slot);
    if (slot < 0) break;  // its slot is busy: wait, in order
    const int64_t n_tokens = static_cast<int64_t>(seq.tokens.size());
    const int64_t n_cached = slots_->attach(slot, seq.tokens);
    bool reserved = kv().reserve(slot, n_tokens).is_ok();
    // Cells idle slots keep give way to a request that needs their blocks.
    if (!reserved && slots_->drop_idle(slot)) reserved = kv().reserve(slot, n_tokens).is_ok();
    if (!reserved) {
      // Not enough blocks now: wait (in order) until running sequences give some back.
      slots_->erase(slot);
      break;
    }
    seq.slot = slot;
    slots_->occupy(slot);
    seq.n_computed = n_cached;
    if (!seq.admitted) {
      seq.admitted = true;
      if (drafter_ != nullptr && seq.params.spec_draft_model) {
        drafter_->begin(seq.id, seq.params.generate);
      }
      seq.stats.n_cached = n_cached;
      seq.stats.queue_ms = ms_between(seq.t_submit, Clock::now());
    }
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    std::lock_guard<std::mutex> lock(mu_);
    --n_queued_;
  }
}

void Scheduler::leave_slot(Sequence& seq, bool keep) {
  if (seq.slot < 0) return;
  // The draft sequence goes (its full blocks stay cached); a later request rebuilds it.
  if (drafter_ != nullptr) drafter_->leave(seq.id, seq.slot);
  slots_->leave(seq.slot, seq.tokens, keep);
  seq.slot = -1;
}

void Scheduler::preempt(Sequence& seq) {
  // Recompute later: the tokens stay, the cells go (full blocks stay cached, so the recompute
  // is mostly a prefix match).
  leave_slot(seq, /*keep=*/false);
  seq.n_computed = 0;
  ++seq.stats.n_preempted;
  ++n_preemptions_;
}

void Scheduler::on_logits(Sequence& seq, std::span<const float> logits,
                          const DraftProposal* draft) {
  if (seq.params.generate.max_tokens == 0) {
    finish(seq, FinishReason::kLength);  // the prompt alone (GenerateParams::max_tokens 0)
    return;
  }
  // A sampled token sits at the position after the last: none is left (without a shift).
  if (static_cast<int64_t>(seq.tokens.size()) >= options_.n_ctx &&
      !seq.params.generate.context_shift) {
    finish(seq, FinishReason::kContext);
    return;
  }
  Result<TokenStep> next = seq.pipeline.next(logits, draft);
  if (!next.is_ok()) {
    finish(seq, FinishReason::kCancelled, next.status());
    return;
  }
  TokenStep& step = next.value();
  const int32_t token = step.sampled.token;
  // A trace line per forward ends with the first token sampled from it.
  if (TraceWriter* trace = runtime_->trace(); trace != nullptr && !step_traced_) {
    trace->end_step(token, logits);
    step_traced_ = true;
  }
  RequestEvent event;
  event.tokens.push_back(std::move(step.sampled));
  if (seq.stats.n_generated++ == 0) {
    seq.t_first = Clock::now();
    seq.stats.ttft_ms = ms_between(seq.t_submit, seq.t_first);
  }
  event.text = std::move(step.delta.content);
  event.reasoning = std::move(step.delta.reasoning);
  event.tool_calls = std::move(step.delta.tool_calls);
  if (seq.sink) seq.sink(std::move(event));
  if (step.finish.has_value()) {
    // An end-of-generation token, a stop string, a complete constraint or max_tokens.
    finish(seq, *step.finish);
  } else if (static_cast<int64_t>(seq.tokens.size()) + 1 >= options_.n_ctx &&
             !seq.params.generate.context_shift) {
    // The token would be fed back at position tokens.size(), and what it gives sampled at the
    // next: there must be room for both.
    finish(seq, FinishReason::kContext);
  } else if (static_cast<int64_t>(seq.tokens.size()) >= options_.n_ctx) {
    // No position left for the token (context shift on): make room first.
    Status shifted = shift_context(seq);
    if (shifted.is_ok()) {
      seq.tokens.push_back(token);
    } else {
      finish(seq, FinishReason::kCancelled, std::move(shifted));
    }
  } else {
    seq.tokens.push_back(token);
  }
}

Status Scheduler::shift_context(Sequence& seq) {
  MINFER_CHECK(seq.n_computed == static_cast<int64_t>(seq.tokens.size()),
               "context shift of a sequence with tokens still to compute");
  if (seq.n_keep + 2 > seq.n_computed) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] context shift keeping {} tokens: expected at most {}",
                      seq.n_keep, seq.n_computed - 2);
  }
  const int64_t n_discard = (seq.n_computed - seq.n_keep) / 2;
  Status shifted = runtime_->shift_context(seq.slot, seq.n_keep, n_discard);
  // Shared blocks are copied first: idle slots give theirs back when the pool is short.
  if (!shifted.is_ok() && slots_->drop_idle(seq.slot)) {
    shifted = runtime_->shift_context(seq.slot, seq.n_keep, n_discard);
  }
  MINFER_RETURN_IF_ERROR(shifted);
  const auto first = seq.tokens.begin() + seq.n_keep;
  seq.tokens.erase(first, first + n_discard);
  seq.n_computed -= n_discard;
  // The draft keeps what it holds of the kept tokens and computes the rest again.
  if (drafter_ != nullptr) drafter_->shifted(seq.id, seq.n_keep);
  ++seq.stats.n_shifts;
  return Status::ok();
}

void Scheduler::reserve_decodes() {
  std::vector<bool> preempted(running_.size(), false);  // [n_running]
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& seq = *running_[i];
    if (preempted[i]) continue;
    const int64_t needed = static_cast<int64_t>(seq.tokens.size());
    if (!kv().reserve(seq.slot, needed).is_ok()) slots_->drop_idle(seq.slot);
    while (!kv().reserve(seq.slot, needed).is_ok()) {
      size_t victim = running_.size() - 1;
      while (preempted[victim]) --victim;
      preempt(*running_[victim]);
      preempted[victim] = true;
      if (victim == i) break;
    }
  }
  for (size_t i = running_.size(); i-- > 0;) {
    if (!preempted[i]) continue;
    waiting_.push_front(std::move(running_[i]));
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(i));
    std::lock_guard<std::mutex> lock(mu_);
    ++n_queued_;
  }
}

Batch Scheduler::plan_batch(std::vector<StepPart>& fed) {
  Batch batch;
  int64_t budget = options_.token_budget;
  int64_t n_rows = 0;
  auto add_tokens = [&](Sequence& seq, int64_t n) {
    const int64_t end = seq.n_computed + n;
    const bool wants_logits = end == static_cast<int64_t>(seq.tokens.size());
    for (int64_t p = seq.n_computed; p < end; ++p) {
      batch.add(seq.tokens[static_cast<size_t>(p)], static_cast<int32_t>(p), seq.slot,
                wants_logits && p + 1 == end);
    }
    // The drafts follow the last token, each with its row.
    for (size_t d = 0; d < seq.drafts.size(); ++d) {
      batch.add(seq.drafts[d], static_cast<int32_t>(end + static_cast<int64_t>(d)), seq.slot, true);
    }
    const auto n_drafts = static_cast<int64_t>(seq.drafts.size());
    fed.push_back({&seq, n + n_drafts, wants_logits ? n_rows : -1});
    if (wants_logits) n_rows += 1 + n_drafts;
    budget -= n + n_drafts;
  };
  // Decode tokens first, each sequence's drafts with it within what the budget leaves once
  // every decoding sequence has its token.
  int64_t spare = budget;
  for (auto& seq : running_) {
    if (static_cast<int64_t>(seq->tokens.size()) - seq->n_computed == 1) --spare;
  }
  for (auto& seq : running_) {
    if (static_cast<int64_t>(seq->tokens.size()) - seq->n_computed == 1 && budget > 0) {
      seq->drafts = plan_drafts(*seq, spare);
      seq->draft_base = seq->n_computed;
      spare -= static_cast<int64_t>(seq->drafts.size());
      add_tokens(*seq, 1);
    }
  }
  // Then prefill chunks, oldest request first.
  for (auto& seq : running_) {
    const int64_t pending = static_cast<int64_t>(seq->tokens.size()) - seq->n_computed;
    if (pending > 1 && budget > 0) {
      add_tokens(*seq, std::min({pending, budget, until_state_checkpoint(*seq)}));
    }
  }
  MINFER_CHECK(batch.n_tokens() > 0, "a running sequence with nothing to compute");
  return batch;
}

void Scheduler::commit_blocks(Sequence& seq, int64_t n_before) {
  const int64_t bs = options_.block_size;
  if (!options_.prefix_cache || seq.slot < 0 || seq.n_computed / bs == n_before / bs) return;
  // After a context shift the cells past the kept tokens are not what those tokens alone
  // compute (they saw the discarded ones): only the kept prefix may be shared.
  const size_t n_shared =
      seq.stats.n_shifts > 0 ? static_cast<size_t>(seq.n_keep) : seq.tokens.size();
  kv().commit_prefix(seq.slot, std::span(seq.tokens).first(n_shared),
                     /*keep_state=*/seq.n_computed == state_checkpoint(seq));
}

int64_t Scheduler::state_checkpoint(const Sequence& seq) const {
  if (!options_.prefix_cache || !runtime_->cache().has_recurrent() || seq.stats.n_shifts > 0) {
    return 0;
  }
  const int64_t bs = options_.block_size;
  // A request of the same prompt attaches at most all but its last token.
  return (static_cast<int64_t>(seq.params.prompt.size()) - 1) / bs * bs;
}

int64_t Scheduler::until_state_checkpoint(const Sequence& seq) const {
  const int64_t at = state_checkpoint(seq);
  return at > seq.n_computed ? at - seq.n_computed : std::numeric_limits<int64_t>::max();
}

void Scheduler::apply_step(const std::vector<StepPart>& fed, std::span<const float> logits) {
  for (const StepPart& f : fed) {
    Sequence& seq = *f.seq;
    const int64_t before = seq.n_computed;
    // Draft cells count once sampled (verify_drafts).
    seq.n_computed += f.n_tokens - static_cast<int64_t>(seq.drafts.size());
    if (seq.drafts.empty()) commit_blocks(seq, before);
  }
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  for (const StepPart& f : fed) {
    if (f.first_row < 0) continue;
    Sequence& seq = *f.seq;
    const size_t n_rows = 1 + seq.drafts.size();
    const std::span<const float> rows =
        logits.subspan(static_cast<size_t>(f.first_row) * n_vocab, n_rows * n_vocab);
    try {
      if (fault_hook_) fault_hook_(seq.id);
      if (seq.drafts.empty()) {
        on_logits(seq, rows);
      } else {
        verify_drafts(seq, rows);
      }
    } catch (const std::exception& e) {
      ++n_step_errors_;
      fail(seq, e.what());
    }
  }
}

Result<bool> Scheduler::run_step() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    take_incoming();
  }
  end_cancelled();
  std::erase_if(running_, [](const std::unique_ptr<Sequence>& s) { return s->finished; });
  run_slot_actions();
  admit();
  if (running_.empty()) {
    last_step_tokens_ = 0;
    publish_stats();
    return false;
  }
  reserve_decodes();
  run_draft_model();
  std::vector<StepPart> fed;
  const Batch batch = plan_batch(fed);
  for (const StepPart& f : fed) in_step_.push_back(f.seq);
  if (fault_hook_) fault_hook_(-1);
  step_traced_ = false;
  const auto t_forward = Clock::now();
  Result<std::span<const float>> logits = runtime_->step(batch);
  const double forward_ms = ms_between(t_forward, Clock::now());
  for (const StepPart& f : fed) {
    RequestForwards& w = f.seq->forwards;
    (f.seq->stats.n_generated == 0 ? w.prefill : w.decode).add(forward_ms);
  }
  ++n_steps_;
  last_step_tokens_ = batch.n_tokens();
  if (!logits.is_ok()) {
    in_step_.clear();
    for (const StepPart& f : fed) finish(*f.seq, FinishReason::kCancelled, logits.status());
    std::erase_if(running_, [](const std::unique_ptr<Sequence>& s) { return s->finished; });
    publish_stats();
    return logits.status();
  }
  apply_step(fed, logits.value());
  in_step_.clear();
  std::erase_if(running_, [](const std::unique_ptr<Sequence>& s) { return s->finished; });
  publish_stats();
  return true;
}

}  // namespace minfer::engine
