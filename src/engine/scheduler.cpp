#include "engine/scheduler.h"

#include <algorithm>
#include <filesystem>

#include "core/check.h"
#include "core/elapsed.h"
#include "engine/speculative.h"

namespace minfer::engine {

namespace {

TokenPipelineOptions pipeline_options(const RequestParams& params) {
  return {.sampling = params.sampling,
          .stops = params.stops,
          .render_special = params.render_special,
          .max_tokens = params.max_tokens,
          .top_logprobs = params.top_logprobs,
          .constraint = params.constraint.get(),
          .reply = params.reply.parser_options(),
          .reasoning_budget = params.reply.reasoning_budget};
}

}  // namespace

struct Scheduler::Sequence {
  Sequence(int32_t seq_id, RequestParams p, EventSink s, const Tokenizer& tokenizer,
           int32_t n_vocab)
      : id(seq_id),
        handle(std::make_shared<RequestHandle>(seq_id)),
        params(std::move(p)),
        sink(std::move(s)),
        pipeline(tokenizer, n_vocab, pipeline_options(params), params.prompt),
        tokens(params.prompt),
        n_keep(params.n_keep < 0 ? static_cast<int64_t>(params.prompt.size()) : params.n_keep) {}

  int32_t id;
  int32_t slot = -1;  // while running: its slot, also its KV sequence id
  std::shared_ptr<RequestHandle> handle;
  RequestParams params;
  EventSink sink;
  TokenPipeline pipeline;  // sampler, constraint, decoder, stop strings, logprobs
  // [n_prompt + tokens fed back] what the sequence's positions hold or will hold; the last one
  // is computed by the next step that includes this sequence.
  std::vector<int32_t> tokens;
  int64_t n_computed = 0;  // positions whose K and V are in the cache
  int64_t n_keep = 0;      // tokens a context shift keeps (params.n_keep, < 0 resolved)
  bool admitted = false;   // once admitted (stats.n_cached counts the first admission)
  bool finished = false;
  // The drafts the current step verifies after the last token (RequestParams::spec_ngram), at
  // positions tokens.size() onwards; empty between steps. draft_base: positions computed before.
  std::vector<int32_t> drafts;
  int64_t draft_base = 0;
  // With the draft model (params.spec_draft_model): the positions of its draft sequence that
  // hold tokens' prefix (later cells hold drafts, dropped at the next step); the drafts it made
  // for this step, and with a sampled request each one's distribution ([model_drafts], then
  // [drafts] once planned) drawn by draft_sampler (null: greedy drafts).
  int64_t n_draft_computed = 0;
  std::vector<int32_t> model_drafts;
  std::vector<DraftProposal> proposals;
  std::unique_ptr<Sampler> draft_sampler;
  RequestStats stats;
  Clock::time_point t_submit;
  Clock::time_point t_first;
};

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
  std::unique_ptr<Scheduler> s(new Scheduler(model, tokenizer, o));
  MINFER_ASSIGN_OR_RETURN(s->runtime_, Runtime::create(model, o));
  if (o.draft_model != nullptr) {
    const ModelConfig& draft = o.draft_model->config();
    if (draft.n_vocab != model.config().n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[scheduler] the draft model has {} logits per token, the model {}: "
                        "expected the same vocabulary",
                        draft.n_vocab, model.config().n_vocab);
    }
    if (draft.n_swa > 0 || model.config().n_swa > 0) {
      // Drafts past the window would return cells the sequence still needs once dropped.
      return make_error(ErrorCode::kInvalidArgument,
                        "[scheduler] a draft model does not run with sliding-window layers (the "
                        "model's window {}, the draft's {}): expected none",
                        model.config().n_swa, draft.n_swa);
    }
    RuntimeOptions d = o;  // the same threads, cell type, context, budget and block size
    d.observe = {};
    MINFER_ASSIGN_OR_RETURN(s->draft_runtime_, Runtime::create(*o.draft_model, d));
  }
  s->slots_.resize(static_cast<size_t>(o.n_parallel));
  s->publish_stats();
  return s;
}

Scheduler::~Scheduler() {
  stop();
}

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

Status Scheduler::check_speculative(const RequestParams& params) const {
  if (params.spec_ngram < 0 || params.spec_ngram > kMaxSpecNgram) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] spec_ngram must be in 0..{}, got {}", kMaxSpecNgram,
                      params.spec_ngram);
  }
  if (params.spec_draft_model && draft_runtime_ == nullptr) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] a request asks for the draft model, but none is loaded");
  }
  if (params.spec_draft_model && params.spec_ngram > 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] speculative decoding drafts by prompt lookup (spec_ngram {}) or "
                      "by the draft model, not both",
                      params.spec_ngram);
  }
  if (!(params.draft_p_min >= 0.0f && params.draft_p_min <= 1.0f)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] draft_p_min must be in 0..1, got {}", params.draft_p_min);
  }
  if (params.spec_ngram == 0 && !params.spec_draft_model) return Status::ok();
  if (params.draft_max < 1 || params.draft_max > kMaxDraft) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] draft_max must be in 1..{} with speculative decoding, got {}",
                      kMaxDraft, params.draft_max);
  }
  if (params.draft_min < 0 || params.draft_min > params.draft_max) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] draft_min must be in 0..draft_max ({}), got {}",
                      params.draft_max, params.draft_min);
  }
  if (model_.config().n_swa > 0) {
    // Drafts past the window would return cells the sequence still needs once they are dropped.
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] speculative decoding does not run with sliding-window layers "
                      "(this model's window is {} positions): expected no speculation",
                      model_.config().n_swa);
  }
  return Status::ok();
}

Result<std::shared_ptr<RequestHandle>> Scheduler::submit(RequestParams params, EventSink sink) {
  const int32_t n_vocab = static_cast<int32_t>(model_.config().n_vocab);
  if (params.prompt.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "[scheduler] empty prompt");
  }
  MINFER_RETURN_IF_ERROR(tokenizer_.check_ids(params.prompt));
  for (const int32_t t : params.prompt) {
    if (t < 0 || t >= n_vocab) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[scheduler] token id {} is out of range: expected 0..{}", t, n_vocab - 1);
    }
  }
  MINFER_RETURN_IF_ERROR(validate(params.sampling, n_vocab));
  if (params.top_logprobs > kMaxTopLogprobs) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] top_logprobs must be at most {}, got {}", kMaxTopLogprobs,
                      params.top_logprobs);
  }
  const int64_t n_prompt = static_cast<int64_t>(params.prompt.size());
  if (params.slot >= options_.n_parallel) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] slot {} does not exist: expected 0..{} (n_parallel {})",
                      params.slot, options_.n_parallel - 1, options_.n_parallel);
  }
  if (n_prompt + 1 >= options_.n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[scheduler] the prompt does not fit the context: {} tokens, expected at "
                      "most {} (n_ctx {} less room to generate)",
                      n_prompt, options_.n_ctx - 2, options_.n_ctx);
  }
  const int64_t n_keep = params.n_keep < 0 ? n_prompt : params.n_keep;
  if (params.context_shift && n_keep + 2 > options_.n_ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[scheduler] context shift keeps {} tokens: expected at most {} (n_ctx {} "
                      "less 2 positions to shift)",
                      n_keep, options_.n_ctx - 2, options_.n_ctx);
  }
  MINFER_RETURN_IF_ERROR(check_speculative(params));
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
  if (seq->params.spec_draft_model) {
    seq->draft_sampler = make_draft_sampler(seq->params.sampling, n_vocab);
  }
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
  settle_drafts(seq);  // a reply that ends among its drafts keeps only the sampled tokens' cells
  leave_slot(seq, options_.keep_slots && event.error.is_ok());
  // The figures a client reads after its reply (/metrics, /slots) already count the sequence
  // out and its blocks free.
  publish_stats();
  if (seq.sink) seq.sink(std::move(event));
}

void Scheduler::end_cancelled() {
  for (auto& seq : running_) {
    if (seq->handle->cancelled()) finish(*seq, FinishReason::kCancelled);
  }
  size_t removed = 0;
  for (auto& seq : waiting_) {
    if (seq->handle->cancelled()) {
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
    const int32_t slot = pick_slot(seq);
    if (slot < 0) break;  // its slot is busy: wait, in order
    const int64_t n_tokens = static_cast<int64_t>(seq.tokens.size());
    const int64_t n_cached = attach_slot(seq, slot);
    bool reserved = kv().reserve(slot, n_tokens).is_ok();
    // Cells idle slots keep give way to a request that needs their blocks.
    if (!reserved && drop_idle_slots(slot)) reserved = kv().reserve(slot, n_tokens).is_ok();
    if (!reserved) {
      // Not enough blocks now: wait (in order) until running sequences give some back.
      kv().free_sequence(slot);
      slots_[static_cast<size_t>(slot)].tokens.clear();
      break;
    }
    seq.slot = slot;
    slots_[static_cast<size_t>(slot)].busy = true;
    seq.n_computed = n_cached;
    if (!seq.admitted) {
      seq.admitted = true;
      seq.stats.n_cached = n_cached;
      seq.stats.queue_ms = ms_between(seq.t_submit, Clock::now());
    }
    running_.push_back(std::move(waiting_.front()));
    waiting_.pop_front();
    std::lock_guard<std::mutex> lock(mu_);
    --n_queued_;
  }
}

namespace {

int64_t common_prefix(const std::vector<int32_t>& a, const std::vector<int32_t>& b) {
  return std::mismatch(a.begin(), a.end(), b.begin(), b.end()).first - a.begin();
}

}  // namespace

int32_t Scheduler::pick_slot(const Sequence& seq) const {
  if (seq.params.slot >= 0) {
    return slots_[static_cast<size_t>(seq.params.slot)].busy ? -1 : seq.params.slot;
  }
  int32_t best = -1;
  int64_t best_shared = 0;
  int32_t empty = -1;
  int32_t idle = -1;
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& slot = slots_[i];
    if (slot.busy) continue;
    const auto id = static_cast<int32_t>(i);
    const int64_t shared = common_prefix(slot.tokens, seq.tokens);
    if (shared > best_shared) {
      best = id;
      best_shared = shared;
    }
    if (empty < 0 && slot.tokens.empty()) empty = id;
    if (idle < 0) idle = id;
  }
  return best >= 0 ? best : empty >= 0 ? empty : idle;
}

int64_t Scheduler::attach_slot(Sequence& seq, int32_t slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  // The last token is always computed (its logits are needed), in a block of its own sequence:
  // registered blocks are never written.
  const int64_t limit = static_cast<int64_t>(seq.tokens.size()) - 1;
  const int64_t shared = std::min(common_prefix(s.tokens, seq.tokens), limit);
  if (shared > 0) {
    kv().truncate(slot, shared);
    s.tokens.resize(static_cast<size_t>(kv().length(slot)));
    if (!s.tokens.empty()) return kv().length(slot);
  }
  kv().free_sequence(slot);
  s.tokens.clear();
  return options_.prefix_cache ? kv().match_prefix(slot, seq.tokens, limit) : 0;
}

bool Scheduler::drop_idle_slots(int32_t except) {
  bool dropped = false;
  for (size_t i = 0; i < slots_.size(); ++i) {
    Slot& slot = slots_[i];
    if (slot.busy || static_cast<int32_t>(i) == except || slot.tokens.empty()) continue;
    kv().free_sequence(static_cast<int32_t>(i));
    slot.tokens.clear();
    dropped = true;
  }
  return dropped;
}

void Scheduler::leave_slot(Sequence& seq, bool keep) {
  if (seq.slot < 0) return;
  // The draft sequence goes (its full blocks stay cached); a later request rebuilds it.
  if (draft_runtime_ != nullptr) draft_kv().free_sequence(seq.slot);
  seq.n_draft_computed = 0;
  Slot& slot = slots_[static_cast<size_t>(seq.slot)];
  slot.busy = false;
  if (keep) {
    const int64_t n = std::min(kv().length(seq.slot), static_cast<int64_t>(seq.tokens.size()));
    slot.tokens.assign(seq.tokens.begin(), seq.tokens.begin() + n);
  } else {
    kv().free_sequence(seq.slot);
    slot.tokens.clear();
  }
  seq.slot = -1;
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
      if (slots_[static_cast<size_t>(it->slot)].busy) {
        ++it;
      } else {
        ready.push_back(std::move(*it));
        it = slot_actions_.erase(it);
      }
    }
  }
  for (PendingSlotAction& a : ready) a.done(run_slot_action(a));
  if (!ready.empty()) publish_stats();
}

Result<SlotReply> Scheduler::run_slot_action(const PendingSlotAction& a) {
  const auto t0 = Clock::now();
  Slot& slot = slots_[static_cast<size_t>(a.slot)];
  SlotReply reply{.id_slot = a.slot, .n_tokens = 0, .n_bytes = 0, .ms = 0.0};
  if (!fingerprint_) fingerprint_ = model_fingerprint(model_);
  if (a.action == SlotAction::kErase) {
    reply.n_tokens = static_cast<int64_t>(slot.tokens.size());
    kv().free_sequence(a.slot);
    slot.tokens.clear();
  } else if (a.action == SlotAction::kSave) {
    const KvState state = capture_state(*fingerprint_, kv(), a.slot, slot.tokens);
    MINFER_ASSIGN_OR_RETURN(reply.n_bytes, write_state_file(a.path, state));
    reply.n_tokens = state.n_tokens();
  } else {
    MINFER_ASSIGN_OR_RETURN(KvState state, read_state_file(a.path));
    MINFER_RETURN_IF_ERROR(check_state_fits(state, *fingerprint_, kv(), a.path));
    // A request needs room for one more token after the state.
    if (state.n_tokens() + 1 >= options_.n_ctx) {
      return make_error(ErrorCode::kOutOfRange,
                        "[scheduler] '{}' holds {} tokens: no room left to generate in n_ctx {}",
                        a.path, state.n_tokens(), options_.n_ctx);
    }
    slot.tokens.clear();
    Status restored = restore_state(kv(), a.slot, state);
    if (!restored.is_ok() && drop_idle_slots(a.slot)) {
      restored = restore_state(kv(), a.slot, state);
    }
    MINFER_RETURN_IF_ERROR(restored);
    slot.tokens = std::move(state.tokens);
    // Its full blocks serve any request that begins with them, in whichever slot it runs.
    if (options_.prefix_cache) kv().commit_prefix(a.slot, slot.tokens);
    reply.n_tokens = static_cast<int64_t>(slot.tokens.size());
    std::error_code ec;
    reply.n_bytes = static_cast<int64_t>(std::filesystem::file_size(a.path, ec));
  }
  reply.ms = ms_between(t0, Clock::now());
  return reply;
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
  Result<TokenStep> next = seq.pipeline.next(logits, draft);
  if (!next.is_ok()) {
    finish(seq, FinishReason::kCancelled, next.status());
    return;
  }
  TokenStep& step = next.value();
  const int32_t token = step.sampled.token;
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
             !seq.params.context_shift) {
    // The token would be fed back at position tokens.size(), and what it gives sampled at the
    // next: there must be room for both.
    finish(seq, FinishReason::kContext);
  } else if (static_cast<int64_t>(seq.tokens.size()) >= options_.n_ctx) {
    // No position left for the token (context shift on): make room first, as Session does.
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
  if (!shifted.is_ok() && drop_idle_slots(seq.slot)) {
    shifted = runtime_->shift_context(seq.slot, seq.n_keep, n_discard);
  }
  MINFER_RETURN_IF_ERROR(shifted);
  const auto first = seq.tokens.begin() + seq.n_keep;
  seq.tokens.erase(first, first + n_discard);
  seq.n_computed -= n_discard;
  // The draft keeps what it holds of the kept tokens and computes the rest again (as run does).
  seq.n_draft_computed = std::min(seq.n_draft_computed, seq.n_keep);
  ++seq.stats.n_shifts;
  return Status::ok();
}

void Scheduler::reserve_decodes() {
  std::vector<bool> preempted(running_.size(), false);  // [n_running]
  for (size_t i = 0; i < running_.size(); ++i) {
    Sequence& seq = *running_[i];
    if (preempted[i]) continue;
    const int64_t needed = static_cast<int64_t>(seq.tokens.size());
    if (!kv().reserve(seq.slot, needed).is_ok()) drop_idle_slots(seq.slot);
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

int64_t Scheduler::draft_limit(const Sequence& seq, int64_t max_drafts) const {
  const RequestParams& p = seq.params;
  const auto n_tokens = static_cast<int64_t>(seq.tokens.size());
  // Every draft has a position, and a row that could be sampled: the last token is fed at
  // n_tokens - 1 and what its rows give is sampled at the positions after it, so the drafts stop
  // one short of the context (a context shift never falls among them), and before max_tokens.
  max_drafts = std::min<int64_t>({max_drafts, p.draft_max, options_.n_ctx - 1 - n_tokens});
  if (p.max_tokens >= 0) {
    max_drafts = std::min(max_drafts, p.max_tokens - seq.stats.n_generated - 1);
  }
  return max_drafts;
}

bool Scheduler::uses_draft_model(const Sequence& seq) const {
  return draft_runtime_ != nullptr && seq.params.spec_draft_model && seq.slot >= 0;
}

std::vector<int32_t> Scheduler::plan_drafts(Sequence& seq, int64_t max_drafts) {
  const RequestParams& p = seq.params;
  const bool by_model = uses_draft_model(seq);
  if (p.spec_ngram <= 0 && !by_model) return {};
  max_drafts = draft_limit(seq, max_drafts);
  std::vector<int32_t> drafts;
  if (max_drafts > 0 && max_drafts >= p.draft_min) {
    if (by_model) {
      drafts = std::move(seq.model_drafts);
      if (static_cast<int64_t>(drafts.size()) > max_drafts) {
        drafts.resize(static_cast<size_t>(max_drafts));
      }
    } else {
      drafts = lookup_draft(seq.tokens, p.spec_ngram, static_cast<int>(max_drafts));
    }
  }
  seq.model_drafts.clear();
  const int64_t end = static_cast<int64_t>(seq.tokens.size() + drafts.size());
  if (drafts.empty() || static_cast<int64_t>(drafts.size()) < p.draft_min ||
      !kv().reserve(seq.slot, end).is_ok()) {
    seq.proposals.clear();
    return {};
  }
  if (seq.proposals.size() > drafts.size()) seq.proposals.resize(drafts.size());
  return drafts;
}

void Scheduler::sync_draft(Sequence& seq) {
  KvCache& dkv = draft_kv();
  if (seq.n_draft_computed > 0) {
    dkv.truncate(seq.slot, seq.n_draft_computed);
    // (A truncation that could not keep a shared block keeps fewer: those are computed again.)
    seq.n_draft_computed = std::min(seq.n_draft_computed, dkv.length(seq.slot));
    if (seq.n_draft_computed > 0) return;
  }
  dkv.free_sequence(seq.slot);
  if (options_.prefix_cache) {
    const int64_t limit = static_cast<int64_t>(seq.tokens.size()) - 1;
    seq.n_draft_computed = dkv.match_prefix(seq.slot, seq.tokens, limit);
  }
}

std::vector<Scheduler::Drafting> Scheduler::plan_draft_catch_up(Batch& batch) {
  std::vector<Drafting> drafting;
  int64_t budget = options_.token_budget;
  // Decoding sequences first (a token or two each), then prompts, oldest request first.
  for (const bool decoding_pass : {true, false}) {
    for (auto& s : running_) {
      Sequence& seq = *s;
      const auto n_tokens = static_cast<int64_t>(seq.tokens.size());
      const bool decoding = n_tokens - seq.n_computed == 1;
      if (decoding != decoding_pass || !uses_draft_model(seq)) continue;
      sync_draft(seq);
      const int64_t pending = n_tokens - seq.n_draft_computed;
      const int64_t n = std::min(pending, budget);
      const int64_t limit = decoding && n == pending ? draft_limit(seq, options_.token_budget) : 0;
      // Cells for the tokens, and for the drafts fed after them (all but the last).
      const int64_t end = seq.n_draft_computed + n + std::max<int64_t>(0, limit - 1);
      if (n <= 0 || !draft_kv().reserve(seq.slot, end).is_ok()) continue;
      for (int64_t p = seq.n_draft_computed; p < seq.n_draft_computed + n; ++p) {
        batch.add(seq.tokens[static_cast<size_t>(p)], static_cast<int32_t>(p), seq.slot,
                  limit > 0 && p + 1 == n_tokens);
      }
      budget -= n;
      if (limit > 0) drafting.push_back({&seq, limit});
    }
  }
  return drafting;
}

bool Scheduler::propose(Sequence& seq, std::span<const float> row) {
  const int32_t token =
      propose_draft_token(row, seq.params.draft_p_min, seq.draft_sampler.get(), &seq.proposals);
  if (token < 0) return false;
  seq.model_drafts.push_back(token);
  return true;
}

void Scheduler::draft_rounds(std::vector<Drafting>& drafting, std::span<const float> rows) {
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  for (size_t i = 0; i < drafting.size(); ++i) {
    Sequence& seq = *drafting[i].seq;
    if (seq.draft_sampler != nullptr) prime_draft_sampler(*seq.draft_sampler, seq.tokens);
    if (!propose(seq, rows.subspan(i * n_vocab, n_vocab))) drafting[i].limit = 0;
  }
  while (true) {
    // Each sequence still drafting feeds its last draft, at the position after its tokens and
    // its earlier drafts.
    Batch batch;
    std::vector<Sequence*> fed;
    for (const Drafting& d : drafting) {
      const auto k = static_cast<int64_t>(d.seq->model_drafts.size());
      if (k == 0 || k >= d.limit) continue;
      const auto pos = static_cast<int32_t>(static_cast<int64_t>(d.seq->tokens.size()) + k - 1);
      batch.add(d.seq->model_drafts.back(), pos, d.seq->slot, true);
      fed.push_back(d.seq);
    }
    if (fed.empty()) return;
    Result<std::span<const float>> out = draft_runtime_->step(batch);
    if (!out.is_ok()) return;  // the drafts so far stand; the cells go at the next step
    for (size_t i = 0; i < fed.size(); ++i) {
      if (propose(*fed[i], out.value().subspan(i * n_vocab, n_vocab))) continue;
      for (Drafting& d : drafting) {
        if (d.seq == fed[i]) d.limit = 0;
      }
    }
  }
}

void Scheduler::run_draft_model() {
  if (draft_runtime_ == nullptr) return;
  for (auto& seq : running_) {
    seq->model_drafts.clear();
    seq->proposals.clear();
  }
  Batch batch;
  std::vector<Drafting> drafting = plan_draft_catch_up(batch);
  if (batch.n_tokens() == 0) return;
  Result<std::span<const float>> rows = draft_runtime_->step(batch);
  const int64_t bs = options_.block_size;
  for (auto& s : running_) {
    Sequence& seq = *s;
    if (!uses_draft_model(seq)) continue;
    // What the forward computed (nothing when it failed: the cells go at the next step).
    const int64_t before = seq.n_draft_computed;
    seq.n_draft_computed =
        std::min(draft_kv().length(seq.slot), static_cast<int64_t>(seq.tokens.size()));
    if (options_.prefix_cache && seq.n_draft_computed / bs != before / bs) {
      draft_kv().commit_prefix(
          seq.slot, std::span(seq.tokens).first(static_cast<size_t>(seq.n_draft_computed)));
    }
  }
  if (rows.is_ok()) draft_rounds(drafting, rows.value());
}

Batch Scheduler::plan_batch(std::vector<Fed>& fed) {
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
    if (pending > 1 && budget > 0) add_tokens(*seq, std::min(pending, budget));
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
  kv().commit_prefix(seq.slot, std::span(seq.tokens).first(n_shared));
}

void Scheduler::settle_drafts(Sequence& seq) {
  if (seq.drafts.empty()) return;
  seq.drafts.clear();
  seq.proposals.clear();
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
  if (uses_draft_model(seq)) {
    seq.n_draft_computed = std::min(draft_kv().length(seq.slot), seq.n_computed);
  }
  settle_drafts(seq);
}

void Scheduler::apply_step(const std::vector<Fed>& fed, std::span<const float> logits) {
  for (const Fed& f : fed) {
    Sequence& seq = *f.seq;
    const int64_t before = seq.n_computed;
    // Draft cells count once sampled (verify_drafts).
    seq.n_computed += f.n_tokens - static_cast<int64_t>(seq.drafts.size());
    if (seq.drafts.empty()) commit_blocks(seq, before);
  }
  const auto n_vocab = static_cast<size_t>(model_.config().n_vocab);
  for (const Fed& f : fed) {
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
  std::vector<Fed> fed;
  const Batch batch = plan_batch(fed);
  for (const Fed& f : fed) in_step_.push_back(f.seq);
  if (fault_hook_) fault_hook_(-1);
  Result<std::span<const float>> logits = runtime_->step(batch);
  ++n_steps_;
  last_step_tokens_ = batch.n_tokens();
  if (!logits.is_ok()) {
    in_step_.clear();
    for (const Fed& f : fed) finish(*f.seq, FinishReason::kCancelled, logits.status());
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
  slot_states_.resize(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    SlotState& st = slot_states_[i];
    st = SlotState{};
    st.id = static_cast<int32_t>(i);
    st.busy = slots_[i].busy;
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
