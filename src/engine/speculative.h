// Speculative decoding (DESIGN.md §4 "Engine"): after each sampled token, a few tokens are
// drafted — by prompt lookup (the tokens that followed the last earlier occurrence of the
// history's last n tokens) or by a draft model of the same vocabulary (its greedy tokens) — and
// one forward over the sampled token and its drafts gives the logits after each of them. The
// generation loop samples from those rows in order, exactly as it samples after single-token
// forwards: a row is used only while every token before it is the one actually sampled, so the
// output — greedy or sampled, with any penalty or constraint — is what plain decoding gives,
// token for token on the same logits (a batch row's logits equal a single-token forward's).
// Cells of drafts that were not sampled are dropped from the cache.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/session.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

struct SpeculativeOptions {
  int ngram = 0;             // prompt lookup: tokens matched; 0: none
  Session* draft = nullptr;  // a draft model's session (not owned); null: none
  int draft_max = 16;        // tokens drafted per forward, at most
  int draft_min = 0;         // fewer drafts than this: a plain single-token forward instead
  float draft_p_min = 0.0f;  // the draft model stops at a token it gives less probability
  bool enabled() const { return ngram > 0 || draft != nullptr; }
};

// Ok when a draft model's vocabulary is the target's: the same size and the same text for every
// id. Else an error naming the first difference.
Status check_draft_vocabulary(const Tokenizer& target, const Tokenizer& draft);

// The draft model's greedy continuation of `history`, at most max_draft tokens, stopping before
// a token whose probability is below p_min. The draft session keeps the history's longest
// common prefix from its last call (Session::set_prompt) and computes only the rest.
Result<std::vector<int32_t>> model_draft(Session& draft, std::span<const int32_t> history,
                                         int max_draft, float p_min);

// The tokens that followed the last earlier occurrence of history's last `ngram` tokens, at most
// max_draft of them (empty when there is none).
std::vector<int32_t> lookup_draft(std::span<const int32_t> history, int ngram, int max_draft);

struct SpeculativeStats {
  int64_t n_drafted = 0;   // tokens drafted
  int64_t n_accepted = 0;  // of those, sampled as drafted
  int64_t n_verified = 0;  // forwards over a token and its drafts
};

class SpeculativeDecoder {
 public:
  SpeculativeDecoder(Session& session, const SpeculativeOptions& options)
      : session_(session), options_(options) {}

  // After `token` was sampled: the logits after it ([n_vocab]). A row already computed when
  // `token` is the draft that row followed; otherwise a forward over `token` and its drafts
  // (or `token` alone), after dropping the cells of drafts that were not sampled.
  Result<std::span<const float>> advance(int32_t token);
  // Drops the cells of drafts not yet sampled (before the history is used otherwise).
  void settle();
  // Cells that hold sampled tokens: the session's, less those of drafts not yet sampled.
  int64_t n_held() const {
    return rows_.empty() ? session_.n_past() : base_ + static_cast<int64_t>(next_row_);
  }
  const SpeculativeStats& stats() const { return stats_; }

 private:
  Session& session_;
  SpeculativeOptions options_;
  std::vector<int32_t> drafts_;  // the drafts of the last forward
  std::span<const float> rows_;  // [1 + drafts_, n_vocab] its logits
  size_t next_row_ = 0;          // the row the next matching token gets
  int64_t base_ = 0;             // cells held before that forward
  SpeculativeStats stats_;
};

}  // namespace minfer::engine
