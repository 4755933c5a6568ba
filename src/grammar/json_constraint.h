// Constrained sampling for response_format json_object: a TokenConstraint (sampling/constraint.h)
// that lets through exactly the tokens whose bytes keep a JsonRecognizer valid, so the generated
// text is one JSON object and nothing after it.
//
//   auto vocab = grammar::VocabBytes::from_tokenizer(tokenizer);   // once per model
//   grammar::JsonConstraint json(vocab, grammar::kGenerationJsonOptions);  // once per request
//   int32_t t = sampler.sample(logits, json).value();  json.accept(t);
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/json_recognizer.h"
#include "sampling/constraint.h"
#include "tokenizer/tokenizer.h"

namespace minfer::grammar {

// What a token can be in constrained text.
enum class TokenRole : uint8_t {
  kText,             // its bytes are appended to the output
  kEndOfGeneration,  // ends the text (allowed only once the grammar is complete)
  kNever,            // a control / user-defined / unknown / unused token or one with no bytes
};

// Every token's bytes, as the streaming detokenizer emits them (Tokenizer::token_to_piece without
// special text), computed once per vocabulary, and the text tokens sorted by their bytes so a
// mask is a walk down a trie: tokens that share a prefix share the states along it, and a refused
// prefix refuses every token below it at once.
class VocabBytes {
 public:
  // pieces[id]: the bytes of token id; roles[id] its role. Sizes must match.
  VocabBytes(std::vector<std::string> pieces, std::vector<TokenRole> roles);
  static std::shared_ptr<const VocabBytes> from_tokenizer(const Tokenizer& tokenizer);

  int32_t n_vocab() const { return static_cast<int32_t>(roles_.size()); }
  std::string_view piece(int32_t id) const {
    const auto i = static_cast<size_t>(id);
    return std::string_view(bytes_).substr(offsets_[i], offsets_[i + 1] - offsets_[i]);
  }
  TokenRole role(int32_t id) const { return roles_[static_cast<size_t>(id)]; }
  // The kText tokens in byte order, and for each the bytes it shares with the one before it.
  std::span<const int32_t> sorted_text() const { return sorted_; }
  std::span<const uint32_t> shared_prefix() const { return shared_prefix_; }
  std::span<const int32_t> end_of_generation() const { return eog_; }
  size_t max_piece_bytes() const { return max_piece_bytes_; }

 private:
  std::string bytes_;             // every piece, concatenated
  std::vector<size_t> offsets_;   // [n_vocab + 1] piece id = bytes_[offsets_[id], offsets_[id + 1])
  std::vector<TokenRole> roles_;  // [n_vocab]
  std::vector<int32_t> sorted_;   // [n_text] kText ids by their bytes
  std::vector<uint32_t> shared_prefix_;  // [n_text] common prefix with the previous sorted id
  std::vector<int32_t> eog_;             // kEndOfGeneration ids
  size_t max_piece_bytes_ = 0;
};

// What generation uses: nesting like JsonOptions' default; whitespace between tokens as a
// pretty-printer writes it — at most one line break and 20 bytes in a row (llama.cpp's JSON grammar
// has the same bound), so a model cannot pad for ever inside an open object; numbers with at most
// 20 integer digits (every 64-bit integer) and 2 exponent digits, so every number fits a double and
// strict parsers read them all.
inline constexpr JsonOptions kGenerationJsonOptions{.max_depth = 128,
                                                    .max_whitespace_run = 20,
                                                    .max_line_breaks = 1,
                                                    .max_integer_digits = 20,
                                                    .max_exponent_digits = 2};

class JsonConstraint final : public TokenConstraint {
 public:
  explicit JsonConstraint(std::shared_ptr<const VocabBytes> vocab,
                          const JsonOptions& options = kGenerationJsonOptions);

  bool allows(int32_t token) const override;
  void fill_allowed(std::span<uint8_t> allowed) const override;
  Status accept(int32_t token) override;
  bool complete() const override { return state_.complete(); }

  const JsonRecognizer& recognizer() const { return state_; }

 private:
  std::shared_ptr<const VocabBytes> vocab_;
  JsonRecognizer state_;
  // [max_piece_bytes + 1] the recognizer after each prefix of the token being tried in
  // fill_allowed (scratch; a constraint belongs to one request).
  mutable std::vector<JsonRecognizer> walk_;
};

}  // namespace minfer::grammar
