#include "grammar/json_constraint.h"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

#include "core/check.h"

namespace minfer::grammar {

VocabBytes::VocabBytes(std::vector<std::string> pieces, std::vector<TokenRole> roles)
    : roles_(std::move(roles)) {
  MINFER_CHECK(pieces.size() == roles_.size(), "one role per piece");
  offsets_.reserve(pieces.size() + 1);
  offsets_.push_back(0);
  for (size_t id = 0; id < pieces.size(); ++id) {
    // A text token must add bytes: one that adds none would let generation go on for ever.
    if (roles_[id] == TokenRole::kText && pieces[id].empty()) roles_[id] = TokenRole::kNever;
    bytes_ += pieces[id];
    offsets_.push_back(bytes_.size());
    max_piece_bytes_ = std::max(max_piece_bytes_, pieces[id].size());
    if (roles_[id] == TokenRole::kText) sorted_.push_back(static_cast<int32_t>(id));
    if (roles_[id] == TokenRole::kEndOfGeneration) eog_.push_back(static_cast<int32_t>(id));
  }
  std::sort(sorted_.begin(), sorted_.end(), [&](int32_t a, int32_t b) {
    return piece(a) < piece(b) || (piece(a) == piece(b) && a < b);
  });
  shared_prefix_.resize(sorted_.size(), 0);
  for (size_t i = 1; i < sorted_.size(); ++i) {
    const std::string_view a = piece(sorted_[i - 1]);
    const std::string_view b = piece(sorted_[i]);
    const size_t n = std::min(a.size(), b.size());
    size_t k = 0;
    while (k < n && a[k] == b[k]) ++k;
    shared_prefix_[i] = static_cast<uint32_t>(k);
  }
}

std::shared_ptr<const VocabBytes> VocabBytes::from_tokenizer(const Tokenizer& tokenizer) {
  const int32_t n_vocab = tokenizer.n_vocab();
  std::vector<std::string> pieces(static_cast<size_t>(n_vocab));                  // [n_vocab]
  std::vector<TokenRole> roles(static_cast<size_t>(n_vocab), TokenRole::kNever);  // [n_vocab]
  for (int32_t id = 0; id < n_vocab; ++id) {
    const auto i = static_cast<size_t>(id);
    if (tokenizer.is_eog(id)) {
      roles[i] = TokenRole::kEndOfGeneration;
      continue;
    }
    switch (tokenizer.token_type(id)) {
      case TokenType::kNormal:
      case TokenType::kByte:
      case TokenType::kUndefined:
        // The bytes the server's streaming decoder (render_special off) emits for the token.
        pieces[i] = tokenizer.token_to_piece(id, false);
        roles[i] = TokenRole::kText;
        break;
      case TokenType::kControl:
      case TokenType::kUserDefined:  // <think>, <tool_call>, …: markup, never JSON text
      case TokenType::kUnknown:
      case TokenType::kUnused:
        break;
    }
  }
  return std::make_shared<const VocabBytes>(std::move(pieces), std::move(roles));
}

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
