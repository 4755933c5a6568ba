// Speculative decoding's drafts (DESIGN.md §4 "Engine"; the Scheduler runs it): after each sampled
// token a few tokens are drafted — by prompt lookup (the tokens that followed the last earlier
// occurrence of the history's last n tokens) or by a draft model of the same vocabulary — and one
// forward over the sampled token and its drafts gives the logits after each of them; a row is
// used only while every token before it is the one actually sampled.
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
#include "sampling/sampler.h"
#include "tokenizer/tokenizer.h"

namespace minfer::engine {

// Ok when a draft model's vocabulary is the target's: the same size and the same text for every
// id. Else an error naming the first difference.
Status check_draft_vocabulary(const Tokenizer& target, const Tokenizer& draft);

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

}  // namespace minfer::engine
