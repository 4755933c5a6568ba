// A Session owns one sequence over a model (DESIGN.md §4 "Engine"): its KV cache, the forward
// step and the token history that the cache holds. It prefills prompts in chunks, decodes one
// token at a time and, for multi-turn use, keeps the longest common prefix of a new prompt with
// what the cache already holds so that only the new tokens are computed.
//
//   SessionOptions options;
//   options.n_ctx = 4096;
//   auto session = Session::create(model, options);
//   auto logits = (*session)->set_prompt(tokens);     // [n_vocab] after the last prompt token
//   logits = (*session)->decode(next_token);
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "core/status.h"
#include "engine/runtime.h"
#include "engine/state_file.h"
#include "models/model.h"

namespace minfer::engine {

// The runtime's options (n_ctx: positions the sequence may use) and the prefill chunk size.
struct SessionOptions : RuntimeOptions {
  int64_t n_batch = 2048;  // most tokens one prefill forward computes
};

// Wall time of forward steps, in milliseconds.
struct ForwardTimes {
  int64_t count = 0;
  double total_ms = 0.0;
  double min_ms = 0.0;
  double max_ms = 0.0;

  void add(double ms);
  double mean_ms() const { return count > 0 ? total_ms / static_cast<double>(count) : 0.0; }
};

// What one set_prompt() did.
struct PrefillReport {
  int64_t n_prompt = 0;     // tokens of the prompt
  int64_t n_reused = 0;     // of those, already in the cache (common prefix kept)
  int64_t n_prefilled = 0;  // computed now: n_prompt - n_reused
  double ms = 0.0;          // wall time of the prefill forwards
};

class Session {
 public:
  // A cache with a budget of enough blocks for n_ctx positions (allocated as they are used,
  // invariant 9). n_ctx and n_batch must be ≥ 1; an n_ctx past the model's n_ctx_train is the
  // caller's choice. `model` must outlive the session.
  static Result<std::unique_ptr<Session>> create(const Model& model, const SessionOptions& options);

  // Makes the sequence hold exactly `tokens` and returns the logits after the last one
  // ([n_vocab]). Keeps the longest common prefix with the current history (truncating the cache
  // there) and prefills only the rest; when the whole prompt is already held, its last token is
  // recomputed to get its logits. An empty prompt or one longer than n_ctx is an error that
  // leaves the session as it was; a failed forward leaves it holding what was computed.
  Result<std::span<const float>> set_prompt(std::span<const int32_t> tokens);
  // Appends `tokens` to the history, in forwards of at most n_batch tokens of which only the
  // last row's logits are computed; returns them ([n_vocab]).
  Result<std::span<const float>> prefill(std::span<const int32_t> tokens);
  // Appends one token and returns the logits after it ([n_vocab]).
  Result<std::span<const float>> decode(int32_t token);
  // Appends `tokens` in one forward (at most n_batch) and returns the logits after each
  // ([tokens, n_vocab]; each row bit-identical to what decode gives after that token): a
  // speculative draft's verification. Valid until the next call.
  Result<std::span<const float>> verify(std::span<const int32_t> tokens);

  // The history and its cells as a state (engine/state_file.h) of the model `fingerprint`
  // identifies (model_fingerprint(model()), computed by the caller once).
  KvState capture(const ModelFingerprint& fingerprint, std::string app_data = {}) const;
  // Replaces the history by the state's tokens and cells; the caller has checked it
  // (check_state_fits). The logits after its last token are not kept in a state: set_prompt
  // recomputes the last prompt token anyway, and decode() goes on from the restored cells.
  // Error (the session then holds nothing): too few free KV blocks.
  Status restore(const KvState& state);

  // Context shift: forgets half of the tokens after the first n_keep (the oldest, rounded down)
  // and moves the rest down without computing them again (Runtime::shift_context); the history
  // follows. Returns the tokens discarded. Error, with nothing changed: fewer than 2 tokens held
  // after n_keep (n_keep must be below n_past - 1), or the cache's (KvCache::shift).
  Result<int64_t> shift_context(int64_t n_keep);

  // Forgets the history past n_tokens (and their cache cells). With sliding-window layers it may
  // forget more, down to nothing, when the window of the kept positions is already released:
  // n_past() says what is held.
  void truncate(int64_t n_tokens);
  void clear() { truncate(0); }

  // The tokens the cache holds, position order: [n_past].
  const std::vector<int32_t>& tokens() const { return tokens_; }
  int64_t n_past() const { return static_cast<int64_t>(tokens_.size()); }
  int64_t n_ctx() const { return options_.n_ctx; }
  int64_t n_batch() const { return options_.n_batch; }
  int n_threads() const { return runtime_->n_threads(); }
  GgmlType cache_type() const { return options_.cache_type; }
  const Model& model() const { return model_; }
  const KvCache& cache() const { return runtime_->cache(); }
  Runtime& runtime() { return *runtime_; }
  const Runtime& runtime() const { return *runtime_; }

  // The last set_prompt()'s report.
  const PrefillReport& last_prefill() const { return last_prefill_; }
  // Times of the forwards since reset_times(): prefill chunks and single-token decodes apart.
  const ForwardTimes& prefill_times() const { return prefill_times_; }
  const ForwardTimes& decode_times() const { return decode_times_; }
  void reset_times();

 private:
  Session(const Model& model, const SessionOptions& options);
  // One forward of `tokens` at positions n_past.. (appended to the history on success) with the
  // last row's logits copied to logits_.
  Status run_chunk(std::span<const int32_t> tokens, ForwardTimes& times);
  std::vector<float> verify_rows_;  // [tokens, n_vocab] verify's logits

  static constexpr int32_t kSeq = 0;  // the one sequence id this session uses

  const Model& model_;
  SessionOptions options_;
  std::unique_ptr<Runtime> runtime_;
  std::vector<int32_t> tokens_;  // [n_past] the history the cache holds
  std::vector<float> logits_;    // [n_vocab] after the last computed token
  PrefillReport last_prefill_;
  ForwardTimes prefill_times_;
  ForwardTimes decode_times_;
};

// One line per fact for people: architecture, n_layer, n_embd, n_head / n_head_kv, head_dim, n_ff,
// n_vocab, n_ctx_train, the sliding window when the model has one; each line ends in '\n'.
std::string describe_model(const Model& model);

}  // namespace minfer::engine
