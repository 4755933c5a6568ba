// Constrained sampling for response_format json_object: a TokenConstraint (sampling/constraint.h)
// that lets through exactly the tokens whose bytes keep a JsonRecognizer valid, so the generated
// text is one JSON object and nothing after it.
//
// Requests no longer use it: response_format json_object runs on the grammar engine
// (grammar/json_grammar.h, grammar/request_grammars.h). It stays as the hand-written definition
// that the JSON grammar is tested against byte for byte (tests/grammar/json_grammar_test.cpp), and
// kGenerationJsonOptions below are the bounds that grammar is generated with.
//
//   auto vocab = grammar::VocabBytes::from_tokenizer(tokenizer);   // once per model
//   grammar::JsonConstraint json(vocab, grammar::kGenerationJsonOptions);  // once per request
//   int32_t t = sampler.sample(logits, json).value();  json.accept(t);
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "grammar/json_recognizer.h"
#include "grammar/vocab_bytes.h"
#include "sampling/constraint.h"

namespace minfer::grammar {

// What generation uses: nesting like JsonOptions' default; whitespace between tokens as a
// pretty-printer writes it — at most one line break and 20 bytes in a row (llama.cpp's JSON grammar
// has the same bound), so a model cannot pad for ever inside an open object; numbers of at most 15
// significant digits (DBL_DIG: every integer exact in a double and a JavaScript safe integer, every
// decimal read back unchanged) and 2 exponent digits, so strict parsers read them all.
inline constexpr JsonOptions kGenerationJsonOptions{.max_depth = 128,
                                                    .max_whitespace_run = 20,
                                                    .max_line_breaks = 1,
                                                    .max_integer_digits = 15,
                                                    .max_exponent_digits = 2,
                                                    .max_significant_digits = 15};

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
