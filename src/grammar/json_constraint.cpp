#include "grammar/json_constraint.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "core/check.h"

namespace minfer::grammar {

JsonConstraint::JsonConstraint(std::shared_ptr<const VocabBytes> vocab, const JsonOptions& options)
    : vocab_(std::move(vocab)), state_(options) {
  MINFER_CHECK(vocab_ != nullptr, "JsonConstraint needs a vocabulary");
  walk_.resize(vocab_->max_piece_bytes() + 1, state_);
}

bool JsonConstraint::allows(int32_t token) const {
  if (token < 0 || token >= vocab_->n_vocab()) return false;
  switch (vocab_->role(token)) {
    case TokenRole::kEndOfGeneration:
      return state_.complete();
    case TokenRole::kNever:
      return false;
    case TokenRole::kText: {
      JsonRecognizer trial = state_;
      return trial.advance(vocab_->piece(token));
    }
  }
  return false;
}

void JsonConstraint::fill_allowed(std::span<uint8_t> allowed) const {
  MINFER_CHECK(allowed.size() == static_cast<size_t>(vocab_->n_vocab()), "mask size != n_vocab");
  std::fill(allowed.begin(), allowed.end(), uint8_t{0});
  if (state_.complete()) {
    for (const int32_t id : vocab_->end_of_generation()) allowed[static_cast<size_t>(id)] = 1;
    return;
  }
  // Walk the tokens in byte order. walk_[k] is the state after the first k bytes of the previous
  // token, valid for k ≤ n_valid; when that token was refused, its byte n_valid was the one.
  const std::span<const int32_t> sorted = vocab_->sorted_text();
  const std::span<const uint32_t> shared = vocab_->shared_prefix();
  walk_[0] = state_;
  size_t n_valid = 0;
  bool refused = false;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const int32_t id = sorted[i];
    const size_t common = shared[i];
    // The refused byte is in the prefix this token shares: refused too.
    if (refused && common > n_valid) continue;
    const std::string_view piece = vocab_->piece(id);
    size_t k = std::min(common, n_valid);
    refused = false;
    for (; k < piece.size(); ++k) {
      walk_[k + 1] = walk_[k];
      if (!walk_[k + 1].advance(static_cast<uint8_t>(piece[k]))) {
        refused = true;
        break;
      }
    }
    n_valid = k;
    if (!refused) allowed[static_cast<size_t>(id)] = 1;
  }
}

Status JsonConstraint::accept(int32_t token) {
  if (!allows(token)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[grammar] token {} does not continue the JSON object here: expected {}",
                      token, state_.expected());
  }
  if (vocab_->role(token) == TokenRole::kText) {
    const bool ok = state_.advance(vocab_->piece(token));
    MINFER_CHECK(ok, "a token allows() accepted was refused");
  }
  return Status::ok();
}

}  // namespace minfer::grammar
