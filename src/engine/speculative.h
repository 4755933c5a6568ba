// Speculative decoding (DESIGN.md §4 "Engine"): after each sampled token, a few tokens are
// drafted — by prompt lookup (the tokens that followed the last earlier occurrence of the
// history's last n tokens) or by a draft model of the same vocabulary — and one forward over the
// sampled token and its drafts gives the logits after each of them. The generation loop samples
// from those rows in order: a row is used only while every token before it is the one actually
// sampled. Cells of drafts that were not sampled are dropped from the cache.
//
// How a row's token is chosen, so that the output is always distributed as the target's:
//  * Greedy (temperature ≤ 0): the argmax, as plain decoding — token for token its output.
//  * A draft model with sampling: the draft samples its tokens with the target's sampler
//    settings applied to its own logits (penalties at the same history), each with the
//    distribution q it was drawn from (DraftProposal), and the row's token comes from the
//    standard accept/resample rule (sampling/sampler.h accept_or_resample): the draft x with
//    probability min(1, p(x)/q(x)), else a draw from normalize(max(0, p − q)), p the target's
//    final sampling distribution at that row. Exact for any q, so more drafts are kept than by
//    comparing with an independent sample.
//  * Prompt lookup: q is a point mass at the drafted token, and for it the standard rule is the
//    plain sample-and-compare: accept x with probability p(x), else draw from p without x, which
//    is one draw from p that either is x or not. So the row is sampled as plain decoding samples
//    it (the same tokens for the same seed), and the next row is used when the token is the draft.
//  * A grammar constraint or a forced token (the reasoning budget): the constrained sampler's
//    distribution is not the chain's p, so the row is sampled as plain decoding samples it and
//    compared with the draft — exact, fewer drafts kept.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "core/status.h"
#include "engine/session.h"
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

struct SpeculativeOptions {
  int ngram = 0;             // prompt lookup: tokens matched; 0: none
  Session* draft = nullptr;  // a draft model's session (not owned); null: none
  int draft_max = 16;        // tokens drafted per forward, at most
  int draft_min = 0;         // fewer drafts than this: a plain single-token forward instead
  float draft_p_min = 0.0f;  // the draft model stops where its top token has less probability
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

// model_draft with sampling: each token drawn by `sampler` (the target's settings; its penalty
// history is set to the history's tail first) with the distribution it was drawn from. The
// draft stops where its most likely token's probability (before the chain) is below p_min.
Result<std::vector<DraftProposal>> sample_model_draft(Session& draft,
                                                      std::span<const int32_t> history,
                                                      int max_draft, float p_min, Sampler& sampler);

// A draft model's sampler for a request sampled with `sampling`: the same settings on a random
// stream of its own (a draft drawn with the target's uniforms would not be independent of the
// accept draws, and the rule needs it to be); null for greedy settings (greedy drafts).
std::unique_ptr<Sampler> make_draft_sampler(const SamplerParams& sampling, int32_t n_vocab);

// Sets a draft sampler's penalty history to the history's tail, so that its penalties look at
// the same tokens as the target's sampler at the same row.
void prime_draft_sampler(Sampler& sampler, std::span<const int32_t> history);

// The draft model's next token from its logits ([n_vocab]): the argmax without `sampler`, else
// drawn by it (accepted into its history, with the distribution it was drawn from appended to
// `proposals`). -1 when the most likely token's probability is below p_min: the draft stops.
int32_t propose_draft_token(std::span<const float> logits, float p_min, Sampler* sampler,
                            std::vector<DraftProposal>* proposals);

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
  // Without `sampling` (or with a greedy one) a draft model drafts its greedy tokens; with a
  // sampling one it samples them (the same settings, its own seed drawn from theirs) and
  // proposal() gives each row's draft with its distribution.
  SpeculativeDecoder(Session& session, const SpeculativeOptions& options,
                     const SamplerParams* sampling = nullptr);

  // After `token` was sampled: the logits after it ([n_vocab]). A row already computed when
  // `token` is the draft that row followed; otherwise a forward over `token` and its drafts
  // (or `token` alone), after dropping the cells of drafts that were not sampled.
  Result<std::span<const float>> advance(int32_t token);
  // The sampled draft that follows the row advance() returned last, with its distribution (for
  // TokenPipeline::next); null when none follows it or the drafts carry no distribution (greedy,
  // prompt lookup: the token is compared with the draft).
  const DraftProposal* proposal() const;
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
  std::unique_ptr<Sampler> draft_sampler_;  // a draft model's sampler; null: greedy drafts
  std::vector<int32_t> drafts_;             // the drafts of the last forward
  std::vector<DraftProposal> proposals_;    // [drafts_] with draft_sampler_, else empty
  std::span<const float> rows_;             // [1 + drafts_, n_vocab] its logits
  size_t next_row_ = 0;                     // the row the next matching token gets
  int64_t base_ = 0;                        // cells held before that forward
  SpeculativeStats stats_;
};

}  // namespace minfer::engine
