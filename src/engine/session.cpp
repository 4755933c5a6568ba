#include "engine/session.h"

#include <algorithm>
#include <chrono>

#include <fmt/format.h>

#include "core/check.h"
#include "core/elapsed.h"

namespace minfer::engine {

void ForwardTimes::add(double ms) {
  min_ms = count == 0 ? ms : std::min(min_ms, ms);
  max_ms = count == 0 ? ms : std::max(max_ms, ms);
  total_ms += ms;
  ++count;
}

Session::Session(const Model& model, const SessionOptions& options)
    : model_(model), options_(options) {}

Result<std::unique_ptr<Session>> Session::create(const Model& model,
                                                 const SessionOptions& options) {
  if (options.n_ctx < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[session] context size must be at least 1 position, got {}", options.n_ctx);
  }
  if (options.n_batch < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[session] batch size must be at least 1 token, got {}", options.n_batch);
  }
  if (options.block_size < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[session] KV block size must be at least 1 position, got {}",
                      options.block_size);
  }
  std::unique_ptr<Session> s(new Session(model, options));
  // One sequence: the KV budget is its context.
  s->options_.n_ctx_total = options.n_ctx;
  MINFER_ASSIGN_OR_RETURN(s->runtime_, Runtime::create(model, s->options_));
  s->logits_.assign(static_cast<size_t>(model.config().n_vocab), 0.0f);
  return s;
}

Status Session::run_chunk(std::span<const int32_t> tokens, ForwardTimes& times) {
  Batch batch;
  const int64_t start = n_past();
  for (size_t i = 0; i < tokens.size(); ++i) {
    batch.add(tokens[i], static_cast<int32_t>(start + static_cast<int64_t>(i)), kSeq,
              i + 1 == tokens.size());
  }
  const auto t0 = std::chrono::steady_clock::now();
  MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, runtime_->step(batch));
  const auto t1 = std::chrono::steady_clock::now();
  times.add(ms_between(t0, t1));
  MINFER_CHECK(logits.size() == logits_.size(), "forward returned a row of the wrong size");
  std::copy(logits.begin(), logits.end(), logits_.begin());
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  return Status::ok();
}

Result<std::span<const float>> Session::prefill(std::span<const int32_t> tokens) {
  if (tokens.empty()) {
    return make_error(ErrorCode::kInvalidArgument, "[session] nothing to prefill: no tokens");
  }
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n_past() + n > options_.n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[session] {} tokens after the {} held do not fit the context: expected at "
                      "most {} positions in all, got {}",
                      n, n_past(), options_.n_ctx, n_past() + n);
  }
  for (int64_t begin = 0; begin < n; begin += options_.n_batch) {
    const int64_t end = std::min(n, begin + options_.n_batch);
    MINFER_RETURN_IF_ERROR(
        run_chunk(tokens.subspan(static_cast<size_t>(begin), static_cast<size_t>(end - begin)),
                  prefill_times_));
  }
  return std::span<const float>(logits_);
}

Result<std::span<const float>> Session::decode(int32_t token) {
  if (n_past() >= options_.n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[session] the context is full: token position {} is past n_ctx {}", n_past(),
                      options_.n_ctx);
  }
  const int32_t one[1] = {token};
  MINFER_RETURN_IF_ERROR(run_chunk(one, decode_times_));
  return std::span<const float>(logits_);
}

Result<std::span<const float>> Session::verify(std::span<const int32_t> tokens) {
  const auto n = static_cast<int64_t>(tokens.size());
  if (n == 0 || n > options_.n_batch || n_past() + n > options_.n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[session] verifying {} tokens after the {} held: expected 1..{} tokens "
                      "within n_ctx {}",
                      n, n_past(), options_.n_batch, options_.n_ctx);
  }
  Batch batch;
  for (int64_t i = 0; i < n; ++i) {
    batch.add(tokens[static_cast<size_t>(i)], static_cast<int32_t>(n_past() + i), kSeq, true);
  }
  const auto t0 = std::chrono::steady_clock::now();
  MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, runtime_->step(batch));
  const auto t1 = std::chrono::steady_clock::now();
  decode_times_.add(ms_between(t0, t1));
  MINFER_CHECK(logits.size() == static_cast<size_t>(n) * logits_.size(),
               "forward returned rows of the wrong size");
  verify_rows_.assign(logits.begin(), logits.end());
  tokens_.insert(tokens_.end(), tokens.begin(), tokens.end());
  return std::span<const float>(verify_rows_);
}

Result<std::span<const float>> Session::set_prompt(std::span<const int32_t> tokens) {
  const int64_t n = static_cast<int64_t>(tokens.size());
  if (n == 0) return make_error(ErrorCode::kInvalidArgument, "[session] empty prompt");
  if (n > options_.n_ctx) {
    return make_error(ErrorCode::kOutOfRange,
                      "[session] prompt does not fit the context: expected at most {} tokens, "
                      "got {}",
                      options_.n_ctx, n);
  }
  // The longest common prefix, less one token when the prompt is all held: the logits after the
  // last prompt token are needed, and only a forward over that token gives them.
  const auto mismatch = std::mismatch(tokens_.begin(), tokens_.end(), tokens.begin(), tokens.end());
  int64_t keep = static_cast<int64_t>(mismatch.first - tokens_.begin());
  keep = std::min(keep, n - 1);
  truncate(keep);
  keep = n_past();  // fewer when the cache could not keep them all (a sliding window)
  const auto t0 = std::chrono::steady_clock::now();
  auto logits = prefill(tokens.subspan(static_cast<size_t>(keep)));
  const auto t1 = std::chrono::steady_clock::now();
  last_prefill_ = {n, keep, n - keep, ms_between(t0, t1)};
  return logits;
}

Result<int64_t> Session::shift_context(int64_t n_keep) {
  if (n_keep < 0 || n_keep + 2 > n_past()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[session] context shift keeping {} tokens: expected 0..{} (at least 2 of "
                      "the {} held must follow them)",
                      n_keep, n_past() - 2, n_past());
  }
  const int64_t n_discard = (n_past() - n_keep) / 2;
  MINFER_RETURN_IF_ERROR(runtime_->shift_context(kSeq, n_keep, n_discard));
  const auto first = tokens_.begin() + n_keep;
  tokens_.erase(first, first + n_discard);
  return n_discard;
}

void Session::truncate(int64_t n_tokens) {
  if (n_tokens >= n_past()) return;
  const int64_t keep = std::max<int64_t>(0, n_tokens);
  tokens_.resize(static_cast<size_t>(keep));
  if (keep == 0) {
    runtime_->cache().free_sequence(kSeq);
  } else {
    runtime_->cache().truncate(kSeq, keep);
    // A cache with sliding-window layers keeps nothing when the kept positions' window is
    // already released (kv/kv_cache.h): the history is what it still holds.
    tokens_.resize(static_cast<size_t>(runtime_->cache().length(kSeq)));
  }
}

KvState Session::capture(const ModelFingerprint& fingerprint, std::string app_data) const {
  return capture_state(fingerprint, runtime_->cache(), kSeq, tokens_, std::move(app_data));
}

Status Session::restore(const KvState& state) {
  tokens_.clear();
  MINFER_RETURN_IF_ERROR(restore_state(runtime_->cache(), kSeq, state));
  tokens_ = state.tokens;
  return Status::ok();
}

void Session::reset_times() {
  prefill_times_ = {};
  decode_times_ = {};
}

std::string describe_model(const Model& model) {
  const ModelConfig& c = model.config();
  std::string out;
  out += fmt::format("arch:         {}\n", c.arch);
  out += fmt::format("n_layer:      {}\n", c.n_layer);
  out += fmt::format("n_embd:       {}\n", c.n_embd);
  out += fmt::format("n_head:       {} (n_head_kv {})\n", c.n_head, c.n_head_kv);
  out += fmt::format("head_dim:     {}\n", c.head_dim);
  out += fmt::format("n_ff:         {}\n", c.n_ff);
  out += fmt::format("n_vocab:      {}\n", c.n_vocab);
  out += fmt::format("n_ctx_train:  {}\n", c.n_ctx_train);
  if (c.n_swa > 0) {
    const auto n_sliding = std::count(c.swa_layers.begin(), c.swa_layers.end(), true);
    out += fmt::format("n_swa:        {} ({} of {} layers slide, rope base {})\n", c.n_swa,
                       n_sliding, c.n_layer, c.rope_freq_base_swa);
  }
  return out;
}

}  // namespace minfer::engine
