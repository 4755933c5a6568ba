// The sampler chain (DESIGN.md §4, llama.cpp's order and defaults):
//   logit bias → penalties (repeat / frequency / presence over the last N tokens) → top-k → top-p
//   → min-p → temperature → seeded draw;  temperature ≤ 0 is greedy (argmax).
// Each stage is a free function over a candidate list so it can be tested on hand-made logits.
#pragma once

#include <cstdint>
#include <deque>
#include <span>
#include <utility>
#include <vector>

#include "core/check.h"
#include "core/status.h"
#include "sampling/constraint.h"
#include "sampling/sampler_params.h"

namespace minfer {

// Checks ranges (e.g. top_p in [0, 1]); errors name the field.
Status validate(const SamplerParams& params, int32_t n_vocab);

struct Candidate {
  int32_t id;
  float logit;
  float p;  // probability after the last softmax; 0 until one ran
};

// The stages. Each keeps at least one candidate. Stages that sort leave candidates sorted by logit,
// descending.
void apply_logit_bias(std::vector<Candidate>& candidates,
                      std::span<const std::pair<int32_t, float>> bias);
// `recent` is the penalty window, oldest first. Repeat: a positive logit is divided by the penalty,
// a negative one multiplied; then logit -= count * frequency + (count > 0) * presence.
void apply_penalties(std::vector<Candidate>& candidates, std::span<const int32_t> recent,
                     float repeat_penalty, float frequency_penalty, float presence_penalty);
void apply_top_k(std::vector<Candidate>& candidates, int32_t k);
// apply_top_k of the whole row of logits (id = index) without a candidate for every token: fills
// `out` with the tokens at or above the lowest of the maxima of k equal slices of the row (the k
// slices hold k tokens at least that high, so the k-th highest is too), then keeps the top k of
// them, sorted. False (`out` empty) where k is off or ≥ the row, or a logit is NaN (the full list
// orders those).
bool top_k_of_row(std::span<const float> logits, int32_t k, std::vector<Candidate>& out);
void apply_top_p(std::vector<Candidate>& candidates, float p);
// Keeps candidates whose probability is at least min_p times the most likely one's.
void apply_min_p(std::vector<Candidate>& candidates, float min_p);
void apply_temperature(std::vector<Candidate>& candidates, float temperature);
// Softmax over the logits, in double, max subtracted first; fills `p` and sorts descending.
void softmax_candidates(std::vector<Candidate>& candidates);
// The index of the highest logit (the lowest id among equal maxima).
size_t argmax(std::span<const Candidate> candidates);
// The same choice over a whole row of logits (id = index), without building candidates.
size_t argmax_logits(std::span<const float> logits);

// A reproducible stream of uniform doubles in [0, 1) from a seed (SplitMix64: fixed across
// platforms and standard libraries, unlike std::uniform_real_distribution).
class SeededRandom {
 public:
  explicit SeededRandom(uint64_t seed) : state_(seed) {}
  uint64_t next_u64();
  double next_unit();

 private:
  uint64_t state_;
};

// Draws one candidate index from the probabilities `p` (which must sum to ~1).
size_t draw(std::span<const Candidate> candidates, SeededRandom& random);

// A token a draft model sampled for speculative decoding, with the distribution q it was drawn
// from: the draft sampler's candidates after its chain (probabilities in `p`), sorted by id; a
// token absent from them has q = 0.
struct DraftProposal {
  int32_t token = 0;
  std::vector<Candidate> q;
};

// The probability of `id` among candidates sorted by id (0 when absent).
double probability_of(std::span<const Candidate> by_id, int32_t id);

// Speculative sampling's accept/resample rule (Leviathan, Kalman, Matias 2023, "Fast Inference
// from Transformers via Speculative Decoding", §2.3; Chen et al. 2023, "Accelerating LLM Decoding
// with Speculative Sampling", Alg. 2). `p`: the target's distribution at the row the draft
// follows (the chain's candidates with probabilities). Returns the draft x with probability
// min(1, p(x) / q(x)), else a draw from normalize(max(0, p − q)); the token returned is then
// distributed as p exactly, whatever q is. Draws nothing when p(x) ≥ q(x) (accepted) or p(x) = 0
// (rejected): a greedy row (p a point mass) with a greedy draft gives the argmax with no draw.
int32_t accept_or_resample(std::span<const Candidate> p, const DraftProposal& draft,
                           SeededRandom& random);

class Sampler {
 public:
  Sampler(SamplerParams params, int32_t n_vocab);

  // Runs the chain on one row of logits [n_vocab] and returns the token id. Does not record it:
  // call accept() with the token that is actually used.
  int32_t sample(std::span<const float> logits);
  // sample() restricted to the tokens `constraint` allows (it is not advanced: accept the token
  // into it). The chain first runs unconstrained and its token is kept when allowed — one check,
  // the common case; otherwise every token the constraint rejects is removed from the whole
  // vocabulary before logit bias and the chain run again (llama.cpp's grammar resampling).
  // Error: the constraint allows no token at all.
  Result<int32_t> sample(std::span<const float> logits, const TokenConstraint& constraint);
  // sample() for a row that a drafted token follows: the chain's distribution p of `logits`,
  // then accept_or_resample with `draft` (the token is distributed as sample()'s would be).
  int32_t sample(std::span<const float> logits, const DraftProposal& draft);
  // Adds a token to the penalty history (prompt tokens too, as llama.cpp does).
  void accept(int32_t token);
  void reset();
  // Empties the penalty history, the random stream going on (a draft model's sampler, set to the
  // target's history before each draft).
  void clear_history() { history_.clear(); }

  // The candidates after the last sample()'s chain, with probabilities (for logprobs).
  const std::vector<Candidate>& last_candidates() const { return candidates_; }
  const SamplerParams& params() const { return params_; }
  // Constrained samples that needed the masked second pass, since construction.
  int64_t n_resampled() const { return n_resampled_; }

 private:
  // The candidates from one row of logits (only the allowed ones when `allowed` is non-empty),
  // through logit bias, penalties and the chain, with their probabilities (greedy: the argmax
  // alone, probability 1).
  void run_distribution(std::span<const float> logits, std::span<const uint8_t> allowed);
  // Nothing changes a logit: no mask, logit bias nor active penalty.
  bool logits_kept(std::span<const uint8_t> allowed) const;
  // Greedy with logits_kept.
  bool plain_greedy(std::span<const uint8_t> allowed) const;
  // run_distribution, then the chosen id.
  int32_t run_chain(std::span<const float> logits, std::span<const uint8_t> allowed);

  SamplerParams params_;
  int32_t n_vocab_;
  SeededRandom random_;
  std::deque<int32_t> history_;  // the last repeat_last_n accepted tokens, oldest first
  std::vector<Candidate> candidates_;
  std::vector<uint8_t> allowed_;  // [n_vocab] the constraint's mask in the second pass
  int64_t n_resampled_ = 0;
};

}  // namespace minfer
