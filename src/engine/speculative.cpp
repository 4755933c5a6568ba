#include "engine/speculative.h"

#include <algorithm>
#include <cmath>

namespace minfer::engine {

std::vector<int32_t> lookup_draft(std::span<const int32_t> history, int ngram, int max_draft) {
  const auto n = static_cast<int64_t>(history.size());
  if (ngram <= 0 || max_draft <= 0 || n <= ngram) return {};
  const std::span<const int32_t> tail = history.subspan(static_cast<size_t>(n - ngram));
  // The latest earlier occurrence: starts from n - ngram - 1 down to 0.
  for (int64_t start = n - ngram - 1; start >= 0; --start) {
    if (!std::equal(tail.begin(), tail.end(), history.begin() + start)) continue;
    const int64_t from = start + ngram;
    const int64_t count = std::min<int64_t>(max_draft, n - from);
    return {history.begin() + from, history.begin() + from + count};
  }
  return {};
}

Status check_draft_vocabulary(const Tokenizer& target, const Tokenizer& draft) {
  if (draft.n_vocab() != target.n_vocab()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[speculative] the draft model's vocabulary has {} tokens, the model's {}: "
                      "a draft model must share the vocabulary",
                      draft.n_vocab(), target.n_vocab());
  }
  for (int32_t id = 0; id < target.n_vocab(); ++id) {
    if (draft.token_text(id) != target.token_text(id)) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[speculative] token {} is '{}' in the draft model's vocabulary, '{}' in "
                        "the model's: a draft model must share the vocabulary",
                        id, draft.token_text(id), target.token_text(id));
    }
  }
  return Status::ok();
}

namespace {

// The probability of `token` under the softmax of `logits`.
float softmax_probability(std::span<const float> logits, int32_t token) {
  const float max_logit = *std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - max_logit));
  return static_cast<float>(
      std::exp(static_cast<double>(logits[static_cast<size_t>(token)] - max_logit)) / sum);
}

int32_t argmax_token(std::span<const float> logits) {
  return static_cast<int32_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

}  // namespace

std::unique_ptr<Sampler> make_draft_sampler(const SamplerParams& sampling, int32_t n_vocab) {
  if (sampling.temperature <= 0.0f) return nullptr;
  SamplerParams params = sampling;
  if (params.seed != kRandomSeed) {
    params.seed = SeededRandom(params.seed ^ 0x5bd1e995u).next_u64() >> 1;
    if (params.seed == kRandomSeed) params.seed = 0;
  }
  return std::make_unique<Sampler>(std::move(params), n_vocab);
}

void prime_draft_sampler(Sampler& sampler, std::span<const int32_t> history) {
  const int32_t last_n = sampler.params().repeat_last_n;
  const size_t n_recent =
      last_n < 0 ? history.size() : std::min(history.size(), static_cast<size_t>(last_n));
  sampler.clear_history();
  for (const int32_t t : history.last(n_recent)) sampler.accept(t);
}

int32_t propose_draft_token(std::span<const float> logits, float p_min, Sampler* sampler,
                            std::vector<DraftProposal>* proposals) {
  // The draft's confidence, its most likely token's probability, decides whether it drafts: a
  // function of the history alone, so that a sampled draft is still a draw from q (a test of the
  // drawn token would leave q cut to the tokens that pass).
  const int32_t top = argmax_token(logits);
  if (softmax_probability(logits, top) < p_min) return -1;
  if (sampler == nullptr) return top;
  const int32_t token = sampler->sample(logits);
  sampler->accept(token);
  DraftProposal proposal{token, sampler->last_candidates()};
  std::sort(proposal.q.begin(), proposal.q.end(),
            [](const Candidate& a, const Candidate& b) { return a.id < b.id; });
  proposals->push_back(std::move(proposal));
  return token;
}

}  // namespace minfer::engine
