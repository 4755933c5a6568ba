#include "grammar/vocab_bytes.h"

#include <algorithm>

#include "core/check.h"
#include "grammar/suffix_token_sets.h"

namespace minfer::grammar {

namespace {
// Sets kept per vocabulary for all grammars (n_vocab / 8 bytes each, plus deferred tokens).
constexpr size_t kSharedSuffixSets = 256;
}  // namespace

VocabBytes::VocabBytes(std::vector<std::string> pieces, std::vector<TokenRole> roles)
    : roles_(std::move(roles)),
      suffix_sets_(std::make_shared<SharedSuffixSets>(kSharedSuffixSets)) {
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
  sorted_offsets_.reserve(sorted_.size() + 1);
  sorted_offsets_.push_back(0);
  for (const int32_t id : sorted_) {
    sorted_bytes_ += piece(id);
    sorted_offsets_.push_back(sorted_bytes_.size());
  }
  first_byte_end_.assign(256, 0);
  for (size_t i = 0; i < sorted_.size(); ++i) {
    first_byte_end_[static_cast<uint8_t>(piece(sorted_[i])[0])] = i + 1;
  }
  for (size_t b = 1; b < 256; ++b)
    first_byte_end_[b] = std::max(first_byte_end_[b], first_byte_end_[b - 1]);
  shared_prefix_.resize(sorted_.size(), 0);
  for (size_t i = 1; i < sorted_.size(); ++i) {
    shared_prefix_[i] =
        static_cast<uint32_t>(shared_bytes(piece(sorted_[i - 1]), piece(sorted_[i])));
  }
}

size_t VocabBytes::prefix_run_end(size_t i, size_t n) const {
  const size_t end = first_byte_end_[static_cast<uint8_t>(sorted_piece(i)[0])];
  if (n == 1) return end;
  // Most runs are short: a token is in the run while it shares n bytes with the one before it.
  size_t j = i + 1;
  for (const size_t scan_end = std::min(end, i + 16); j < scan_end; ++j) {
    if (shared_prefix_[j] < n) return j;
  }
  if (j >= end) return end;
  // A long run: gallop, then search, on the prefix itself. [i, lo) is in the run; hi is `end` or
  // out of it.
  const std::string_view prefix = sorted_piece(i).substr(0, n);
  size_t lo = j, hi = j;
  for (size_t step = 16;; step *= 2) {
    hi = std::min(end, lo + step);
    if (hi == end || !sorted_piece(hi).starts_with(prefix)) break;
    lo = hi + 1;
  }
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (sorted_piece(mid).starts_with(prefix)) {
      lo = mid + 1;
    } else {
      hi = mid;
    }
  }
  return lo;
}

std::shared_ptr<const VocabBytes> VocabBytes::from_tokenizer(const Tokenizer& tokenizer,
                                                             MarkupTokens markup) {
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
      case TokenType::kUserDefined:  // <think>, <tool_call>, …
        if (markup == MarkupTokens::kText) {
          pieces[i] = tokenizer.token_to_piece(id, false);
          roles[i] = TokenRole::kText;
        }
        break;
      case TokenType::kControl:
      case TokenType::kUnknown:
      case TokenType::kUnused:
        break;
    }
  }
  return std::make_shared<const VocabBytes>(std::move(pieces), std::move(roles));
}

}  // namespace minfer::grammar
