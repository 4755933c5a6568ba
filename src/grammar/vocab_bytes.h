// Every token's bytes, the text a constrained sampler judges (grammar/json_constraint.h,
// grammar/grammar_constraint.h), computed once per vocabulary.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace minfer::grammar {

// What a token can be in constrained text.
enum class TokenRole : uint8_t {
  kText,             // its bytes are appended to the output
  kEndOfGeneration,  // ends the text (allowed only once the grammar is complete)
  kNever,            // a control / unknown / unused token, one with no bytes, and (unless
                     // MarkupTokens::kText) a user-defined one
};

// User-defined tokens (<think>, <tool_call>, …): markup the decoder prints, but never JSON text.
// GBNF grammars see them as their text, as llama.cpp does, so a grammar (or a lazy trigger) can
// name "<tool_call>".
enum class MarkupTokens : uint8_t { kNever, kText };

// Every token's bytes, as the streaming detokenizer emits them (Tokenizer::token_to_piece without
// special text), computed once per vocabulary, and the text tokens sorted by their bytes so a
// mask is a walk down a trie: tokens that share a prefix share the states along it, and a refused
// prefix refuses every token below it at once.
class VocabBytes {
 public:
  // pieces[id]: the bytes of token id; roles[id] its role. Sizes must match.
  VocabBytes(std::vector<std::string> pieces, std::vector<TokenRole> roles);
  static std::shared_ptr<const VocabBytes> from_tokenizer(
      const Tokenizer& tokenizer, MarkupTokens markup = MarkupTokens::kNever);

  int32_t n_vocab() const { return static_cast<int32_t>(roles_.size()); }
  std::string_view piece(int32_t id) const {
    const auto i = static_cast<size_t>(id);
    return std::string_view(bytes_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  TokenRole role(int32_t id) const { return roles_[static_cast<size_t>(id)]; }
  // The kText tokens in byte order, and for each the bytes it shares with the one before it.
  std::span<const int32_t> sorted_text() const { return sorted_; }
  std::span<const uint32_t> shared_prefix() const { return shared_prefix_; }
  // The bytes of sorted_text()[i], stored in sorted order so that a walk reads memory in order.
  std::string_view sorted_piece(size_t i) const {
    return std::string_view(sorted_bytes_)
        .substr(sorted_offsets_[i], sorted_offsets_[i + 1] - sorted_offsets_[i]);
  }
  std::span<const int32_t> end_of_generation() const { return eog_; }
  size_t max_piece_bytes() const { return max_piece_bytes_; }

 private:
  std::string bytes_;             // every piece, concatenated
  std::vector<size_t> offsets_;   // [n_vocab + 1] piece id = bytes_[offsets_[id], offsets_[id + 1])
  std::vector<TokenRole> roles_;  // [n_vocab]
  std::vector<int32_t> sorted_;   // [n_text] kText ids by their bytes
  std::vector<uint32_t> shared_prefix_;  // [n_text] common prefix with the previous sorted id
  std::string sorted_bytes_;             // the kText pieces in sorted order, concatenated
  std::vector<size_t> sorted_offsets_;   // [n_text + 1] where each starts in sorted_bytes_
  std::vector<int32_t> eog_;             // kEndOfGeneration ids
  size_t max_piece_bytes_ = 0;
};

// The walk down the trie that makes a mask: over sorted_text() in byte order, step(k, byte)
// advances the caller's state after k bytes of the current token to the state after k + 1 (false:
// the byte is refused). A token starts from the states of the prefix it shares with the one before
// it, and every token below a refused prefix is refused without a step. Sets allowed[id] = 1 for
// each token whose bytes are all accepted (the caller clears the mask first).
template <typename Step>
void walk_sorted_tokens(const VocabBytes& vocab, std::span<uint8_t> allowed, Step&& step) {
  const std::span<const int32_t> sorted = vocab.sorted_text();
  const std::span<const uint32_t> shared = vocab.shared_prefix();
  // The previous token's states are valid for its first n_valid bytes; when it was refused, its
  // byte n_valid was the one.
  size_t n_valid = 0;
  bool refused = false;
  for (size_t i = 0; i < sorted.size(); ++i) {
    const size_t common = shared[i];
    if (refused && common > n_valid) continue;  // the refused byte is in the shared prefix
    const std::string_view piece = vocab.sorted_piece(i);
    size_t k = std::min(common, n_valid);
    refused = false;
    for (; k < piece.size(); ++k) {
      if (!step(k, static_cast<uint8_t>(piece[k]))) {
        refused = true;
        break;
      }
    }
    n_valid = k;
    if (!refused) allowed[static_cast<size_t>(sorted[i])] = 1;
  }
}

}  // namespace minfer::grammar
