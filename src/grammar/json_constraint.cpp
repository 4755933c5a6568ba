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
  // walk_[k]: the recognizer after the first k bytes of the token being tried.
  walk_[0] = state_;
  walk_sorted_tokens(*vocab_, allowed, [&](size_t k, uint8_t byte) {
    walk_[k + 1] = walk_[k];
    return walk_[k + 1].advance(byte);
  });
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
