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

class SharedSuffixSets;  // grammar/suffix_token_sets.h

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
  // The end in sorted_text() of the run of tokens from i on that start with the first n bytes of
  // token i (1 <= n <= its size; such tokens are contiguous).
  size_t prefix_run_end(size_t i, size_t n) const;
  std::span<const int32_t> end_of_generation() const { return eog_; }
  size_t max_piece_bytes() const { return max_piece_bytes_; }
  // Token sets every grammar on this vocabulary shares (grammar/suffix_token_sets.h; thread safe).
  SharedSuffixSets& suffix_sets() const { return *suffix_sets_; }

 private:
  std::string bytes_;             // every piece, concatenated
  std::vector<size_t> offsets_;   // [n_vocab + 1] piece id = bytes_[offsets_[id], offsets_[id + 1])
  std::vector<TokenRole> roles_;  // [n_vocab]
  std::vector<int32_t> sorted_;   // [n_text] kText ids by their bytes
  std::vector<uint32_t> shared_prefix_;  // [n_text] common prefix with the previous sorted id
  std::string sorted_bytes_;             // the kText pieces in sorted order, concatenated
  std::vector<size_t> sorted_offsets_;   // [n_text + 1] where each starts in sorted_bytes_
  std::vector<int32_t> eog_;             // kEndOfGeneration ids
  std::vector<size_t> first_byte_end_;   // [256] where the tokens starting with each byte end
  std::shared_ptr<SharedSuffixSets> suffix_sets_;
  size_t max_piece_bytes_ = 0;
};

// The number of leading bytes a and b share.
inline size_t shared_bytes(std::string_view a, std::string_view b) {
  const size_t n = std::min(a.size(), b.size());
  size_t k = 0;
  while (k < n && a[k] == b[k]) ++k;
  return k;
}

// What a walk step says about the token being tried (and every token that shares its bytes so
// far): go on, refused, or undecided here (the caller decides it another way).
enum class WalkStep : uint8_t { kContinue, kRefused, kDeferred };

// The walk down the trie over a run of tokens in byte order: n tokens, the j-th being
// sorted_text()[index(j)] and sharing shared(j) bytes with the one before it. step(k, byte)
// advances the caller's state after k bytes of the current token to the state after k + 1. A token
// starts from the states of the prefix it shares with the one before it, and every token below a
// refused (or deferred) prefix gets that outcome without a step. done(i, outcome) is called for
// each token accepted (outcome kContinue: all its bytes were) or deferred, i its index in
// sorted_text(). When the run is the whole vocabulary (`whole_vocab`), a refused prefix skips the
// tokens below it at once (a binary search), so a walk costs the trie branches it tries.
template <typename Index, typename Shared, typename Step, typename Done>
void walk_token_run(const VocabBytes& vocab, size_t n, bool whole_vocab, Index&& index,
                    Shared&& shared, Step&& step, Done&& done) {
  // The previous token's states are valid for its first n_valid bytes; when it stopped, its byte
  // n_valid was the one.
  size_t n_valid = 0;
  WalkStep stop = WalkStep::kContinue;
  for (size_t j = 0; j < n; ++j) {
    const size_t i = index(j);
    const size_t common = shared(j);
    if (stop != WalkStep::kContinue && common > n_valid) {
      // The stopping byte is in the shared prefix.
      if (stop == WalkStep::kDeferred) done(i, stop);
      continue;
    }
    const std::string_view piece = vocab.sorted_piece(i);
    size_t k = std::min(common, n_valid);
    stop = WalkStep::kContinue;
    for (; k < piece.size(); ++k) {
      stop = step(k, static_cast<uint8_t>(piece[k]));
      if (stop != WalkStep::kContinue) break;
    }
    n_valid = k;
    if (stop != WalkStep::kRefused) {
      done(i, stop);
    } else if (whole_vocab) {
      j = vocab.prefix_run_end(i, k + 1) - 1;  // skip the refused subtree at once
    }
  }
}

// walk_token_run over the whole vocabulary: sets allowed[id] = 1 for each token whose bytes are
// all accepted (the caller clears the mask first); step returns false for a refused byte.
template <typename Step>
void walk_sorted_tokens(const VocabBytes& vocab, std::span<uint8_t> allowed, Step&& step) {
  const std::span<const int32_t> sorted = vocab.sorted_text();
  const std::span<const uint32_t> shared = vocab.shared_prefix();
  walk_token_run(
      vocab, sorted.size(), true, [](size_t j) { return j; }, [&](size_t j) { return shared[j]; },
      [&](size_t k, uint8_t byte) {
        return step(k, byte) ? WalkStep::kContinue : WalkStep::kRefused;
      },
      [&](size_t i, WalkStep) { allowed[static_cast<size_t>(sorted[i])] = 1; });
}

// walk_token_run over some of the vocabulary: `subset` holds indices into sorted_text(),
// ascending.
template <typename Step, typename Done>
void walk_token_subset(const VocabBytes& vocab, std::span<const uint32_t> subset, Step&& step,
                       Done&& done) {
  walk_token_run(
      vocab, subset.size(), false, [&](size_t j) { return static_cast<size_t>(subset[j]); },
      [&](size_t j) -> size_t {
        return j == 0
                   ? 0
                   : shared_bytes(vocab.sorted_piece(subset[j - 1]), vocab.sorted_piece(subset[j]));
      },
      step, done);
}

}  // namespace minfer::grammar
