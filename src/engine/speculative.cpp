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

// The most likely token of `logits` and its probability.
std::pair<int32_t, float> top_token(std::span<const float> logits) {
  const auto best = std::max_element(logits.begin(), logits.end());
  double sum = 0.0;
  for (float l : logits) sum += std::exp(static_cast<double>(l - *best));
  return {static_cast<int32_t>(best - logits.begin()), static_cast<float>(1.0 / sum)};
}

}  // namespace

Result<std::vector<int32_t>> model_draft(Session& draft, std::span<const int32_t> history,
                                         int max_draft, float p_min) {
  std::vector<int32_t> out;
  if (max_draft <= 0 || history.empty()) return out;
  MINFER_ASSIGN_OR_RETURN(std::span<const float> logits, draft.set_prompt(history));
  while (true) {
    const auto [token, p] = top_token(logits);
    if (p < p_min) break;
    out.push_back(token);
    if (static_cast<int>(out.size()) >= max_draft || draft.n_past() >= draft.n_ctx()) break;
    MINFER_ASSIGN_OR_RETURN(logits, draft.decode(token));
  }
  return out;
}

void SpeculativeDecoder::settle() {
  if (rows_.empty()) return;
  session_.truncate(base_ + static_cast<int64_t>(next_row_));
  rows_ = {};
  drafts_.clear();
}

Result<std::span<const float>> SpeculativeDecoder::advance(int32_t token) {
  const auto n_vocab = static_cast<size_t>(session_.model().config().n_vocab);
  if (!rows_.empty() && next_row_ <= drafts_.size() && drafts_[next_row_ - 1] == token) {
    ++stats_.n_accepted;
    return rows_.subspan(next_row_++ * n_vocab, n_vocab);
  }
  settle();
  std::vector<int32_t> history = session_.tokens();
  history.push_back(token);
  // Room for the token and its drafts.
  const int64_t room = session_.n_ctx() - session_.n_past() - 1;
  const int max_draft = static_cast<int>(
      std::min<int64_t>({int64_t{options_.draft_max}, room, session_.n_batch() - 1}));
  std::vector<int32_t> drafts;
  if (options_.draft != nullptr) {
    MINFER_ASSIGN_OR_RETURN(drafts,
                            model_draft(*options_.draft, history, max_draft, options_.draft_p_min));
  } else {
    drafts = lookup_draft(history, options_.ngram, max_draft);
  }
  if (drafts.empty() || static_cast<int>(drafts.size()) < options_.draft_min) {
    return session_.decode(token);
  }
  std::vector<int32_t> batch = {token};
  batch.insert(batch.end(), drafts.begin(), drafts.end());
  base_ = session_.n_past();
  MINFER_ASSIGN_OR_RETURN(rows_, session_.verify(batch));
  drafts_ = std::move(drafts);
  next_row_ = 1;
  ++stats_.n_verified;
  stats_.n_drafted += static_cast<int64_t>(drafts_.size());
  return rows_.subspan(0, n_vocab);
}

}  // namespace minfer::engine
