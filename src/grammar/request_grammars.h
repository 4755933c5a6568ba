// The constraint of one request from what it asks for — response_format json_object, or GBNF text
// (the `grammar` field, --grammar) — over one model's vocabulary. Built per model and shared by
// every request on it (thread safe): the vocabulary's bytes are computed on first need, the JSON
// grammar is compiled once, and GBNF texts are compiled once each (a small LRU keyed by the text),
// so concurrent requests with the same grammar share its states and cached masks.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>

#include "grammar/grammar_constraint.h"
#include "sampling/constraint.h"
#include "tokenizer/tokenizer.h"

namespace minfer::grammar {

class RequestGrammars {
 public:
  // `tokenizer` must outlive this.
  explicit RequestGrammars(const Tokenizer& tokenizer, size_t max_grammars = 8)
      : tokenizer_(tokenizer), max_grammars_(max_grammars) {}

  // nullptr when the request asks for neither. Error: both at once, or a GBNF text that does not
  // parse (the message names line and column).
  Result<std::shared_ptr<TokenConstraint>> constraint(bool json_object, std::string_view gbnf);

  // The compiled grammar of a GBNF text (cached), for callers that build their own constraint
  // options (lazy triggers).
  Result<std::shared_ptr<TokenGrammar>> compile(std::string_view gbnf);
  // The JSON-object grammar (grammar/json_grammar.h) with kGenerationJsonOptions.
  std::shared_ptr<TokenGrammar> json_object();

 private:
  std::shared_ptr<const VocabBytes> vocab(MarkupTokens markup);

  const Tokenizer& tokenizer_;
  size_t max_grammars_;
  std::mutex mu_;
  std::shared_ptr<const VocabBytes> json_vocab_;  // markup tokens never JSON text
  std::shared_ptr<const VocabBytes> gbnf_vocab_;  // markup tokens as their text (llama.cpp)
  std::shared_ptr<TokenGrammar> json_;
  // Most recently used first.
  std::list<std::pair<std::string, std::shared_ptr<TokenGrammar>>> gbnf_;
};

}  // namespace minfer::grammar
