#include "grammar/request_grammars.h"

#include "core/check.h"
#include "grammar/json_constraint.h"
#include "grammar/json_grammar.h"

namespace minfer::grammar {

std::shared_ptr<const VocabBytes> RequestGrammars::vocab(MarkupTokens markup) {
  // Under mu_.
  std::shared_ptr<const VocabBytes>& v = markup == MarkupTokens::kText ? gbnf_vocab_ : json_vocab_;
  if (v == nullptr) v = VocabBytes::from_tokenizer(tokenizer_, markup);
  return v;
}

std::shared_ptr<TokenGrammar> RequestGrammars::json_object() {
  std::lock_guard<std::mutex> lock(mu_);
  if (json_ == nullptr) {
    auto grammar = parse_gbnf(json_object_gbnf(kGenerationJsonOptions));
    MINFER_CHECK(grammar.is_ok(), "the JSON grammar parses");
    json_ = std::make_shared<TokenGrammar>(grammar.value(), vocab(MarkupTokens::kNever));
  }
  return json_;
}

Result<std::shared_ptr<TokenGrammar>> RequestGrammars::compile(std::string_view gbnf) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = gbnf_.begin(); it != gbnf_.end(); ++it) {
      if (it->first == gbnf) {
        gbnf_.splice(gbnf_.begin(), gbnf_, it);
        return gbnf_.front().second;
      }
    }
  }
  // Parse outside the lock: a big grammar does not hold up other requests.
  MINFER_ASSIGN_OR_RETURN(std::shared_ptr<const Grammar> grammar, parse_gbnf(gbnf));
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [text, compiled] : gbnf_) {
    if (text == gbnf) return compiled;  // another request compiled it meanwhile
  }
  auto compiled = std::make_shared<TokenGrammar>(std::move(grammar), vocab(MarkupTokens::kText));
  gbnf_.emplace_front(std::string(gbnf), compiled);
  if (gbnf_.size() > max_grammars_) gbnf_.pop_back();
  return compiled;
}

Result<std::shared_ptr<TokenConstraint>> RequestGrammars::constraint(bool json_object,
                                                                     std::string_view gbnf) {
  if (json_object && !gbnf.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[grammar] a request takes a grammar or response_format json_object, not "
                      "both");
  }
  std::shared_ptr<TokenGrammar> grammar;
  if (json_object) {
    grammar = this->json_object();
  } else if (!gbnf.empty()) {
    MINFER_ASSIGN_OR_RETURN(grammar, compile(gbnf));
  } else {
    return std::shared_ptr<TokenConstraint>();
  }
  MINFER_ASSIGN_OR_RETURN(std::unique_ptr<GrammarConstraint> c, GrammarConstraint::create(grammar));
  return std::shared_ptr<TokenConstraint>(std::move(c));
}

}  // namespace minfer::grammar
