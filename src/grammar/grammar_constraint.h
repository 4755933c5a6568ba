// Grammar-constrained sampling: a TokenConstraint (sampling/constraint.h) that lets through exactly
// the tokens whose bytes keep a GBNF grammar (grammar/gbnf.h) matchable.
//
//   auto vocab = grammar::VocabBytes::from_tokenizer(tokenizer, grammar::MarkupTokens::kText);
//   auto g = grammar::TokenGrammar::compile("root ::= \"yes\" | \"no\"", vocab).value();  // shared
//   auto c = grammar::GrammarConstraint::create(g).value();        // one per request
//   int32_t t = sampler.sample(logits, *c).value();  c->accept(t);
//
// TokenGrammar is what requests with the same grammar share (thread safe): the matcher's states
// and transitions, and a small LRU of token masks keyed by state, so a state met again — by this
// request or another — costs a copy. A state met for the first time takes the union of its stacks'
// SuffixTokenSets (grammar/suffix_token_sets.h) and a walk over the few tokens they leave to the
// whole state; a walk down the vocabulary's byte trie (tokens that share a prefix share its steps,
// and a refused prefix refuses its whole subtree) makes the rest of the masks and those sets.
//
// Lazy mode (GrammarOptions::trigger_*): everything is allowed until the generated text contains a
// trigger string (or a trigger token is sampled); from the trigger's first byte the grammar
// applies, so a grammar for a tool call starts with the trigger's text ("<tool_call>").
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "grammar/suffix_token_sets.h"
#include "grammar/vocab_bytes.h"
#include "sampling/constraint.h"

namespace minfer::grammar {

struct TokenGrammarOptions {
  MatcherLimits limits;
  size_t max_masks = 32;         // cached masks (n_vocab bytes each)
  size_t max_suffix_sets = 128;  // cached SuffixTokenSets (about n_vocab / 8 bytes each); 0: off
};

class TokenGrammar {
 public:
  TokenGrammar(std::shared_ptr<const Grammar> grammar, std::shared_ptr<const VocabBytes> vocab,
               const TokenGrammarOptions& options = {});
  // Parses GBNF text; a bad grammar is an error naming line and column.
  static Result<std::shared_ptr<TokenGrammar>> compile(std::string_view gbnf,
                                                       std::shared_ptr<const VocabBytes> vocab,
                                                       const TokenGrammarOptions& options = {});

  const VocabBytes& vocab() const { return *vocab_; }
  const GrammarMatcher& matcher() const { return matcher_; }

 private:
  friend class GrammarConstraint;
  // An interned state: its id is valid until the automaton starts over (generation changes).
  struct StateRef {
    int32_t id = -1;
    uint64_t generation = 0;
  };
  // Under mu_: the id of `state` now (re-interned when the automaton started over).
  int32_t locked_id(const MatchState& state, StateRef& ref);
  // Under mu_: the state after a token's bytes, or a negative GrammarAutomaton code.
  int32_t locked_walk(int32_t state, std::string_view bytes);
  void locked_fill(int32_t state, std::span<uint8_t> allowed, std::vector<int32_t>& walk);

  std::shared_ptr<const VocabBytes> vocab_;
  GrammarMatcher matcher_;
  TokenGrammarOptions options_;
  std::mutex mu_;
  GrammarAutomaton automaton_;      // guarded by mu_
  SuffixTokenSets suffix_sets_;     // guarded by mu_
  std::vector<uint32_t> deferred_;  // guarded by mu_: the tokens a mask leaves to the whole state
  uint64_t generation_ = 0;         // guarded by mu_: bumped when the automaton starts over
};

struct GrammarOptions {
  // Lazy mode when either is non-empty: free text until a trigger string appears in the output
  // or a trigger token is sampled; the grammar then matches from the trigger's start.
  std::vector<std::string> trigger_texts;
  std::vector<int32_t> trigger_tokens;
  // When the grammar has matched and nothing but the end may follow: true — complete() says so
  // and generation ends there; false — a lazy grammar goes back to free text waiting for the next
  // trigger, a plain one lets the model end (only end-of-generation is allowed).
  bool end_on_complete = true;
  // What the grammar's sentences all open with, for TokenConstraint::forced_prefix() (not lazy).
  std::string forced_prefix;
};

class GrammarConstraint final : public TokenConstraint {
 public:
  // Error: the grammar's start already passes a matcher limit.
  static Result<std::unique_ptr<GrammarConstraint>> create(std::shared_ptr<TokenGrammar> grammar,
                                                           GrammarOptions options = {});

  bool allows(int32_t token) const override;
  void fill_allowed(std::span<uint8_t> allowed) const override;
  Status accept(int32_t token) override;
  bool complete() const override;
  std::string_view forced_prefix() const override { return options_.forced_prefix; }

  // Lazy mode: the grammar applies now (a trigger was seen). Always true when not lazy.
  bool active() const { return active_; }
  const MatchState& state() const { return state_; }

 private:
  GrammarConstraint(std::shared_ptr<TokenGrammar> grammar, GrammarOptions options,
                    MatchState start);
  bool lazy() const { return !options_.trigger_texts.empty() || !options_.trigger_tokens.empty(); }
  // Waiting for a trigger: where the grammar would start in pending_ + piece (npos: no trigger).
  size_t trigger_start(int32_t token, std::string_view text) const;
  bool allows_waiting(int32_t token) const;
  // The grammar's state after `bytes` from start_ (< 0: refused).
  bool grammar_accepts(const MatchState& from, std::string_view bytes) const;
  void after_match();

  std::shared_ptr<TokenGrammar> grammar_;
  GrammarOptions options_;
  MatchState start_;  // the grammar's initial state
  MatchState state_;
  mutable TokenGrammar::StateRef ref_;  // state_'s id in the shared automaton
  bool active_ = true;
  std::string pending_;  // waiting: the last bytes of the text, where a trigger may begin
  size_t max_trigger_ = 0;
  mutable std::vector<int32_t> walk_;  // [max_piece_bytes + 1] fill_allowed's states per prefix
};

}  // namespace minfer::grammar
