// Token sets that hold whatever lies below the top of a parse stack, so that the mask of a state
// met for the first time is a union of precomputed sets plus a walk over a few tokens (the idea
// XGrammar calls context-independent tokens; our own formulation over grammar/grammar_matcher.h).
//
// A state is a set of parse stacks; a token is allowed when some stack takes all its bytes. Split
// a stack into a suffix (its top entries) and the rest below. While a token's bytes never pop the
// suffix empty, the matcher never looks below it: the stacks it makes are rest + (what the suffix
// alone makes). So per suffix, computed once per grammar: the tokens accepted that way (whatever
// the rest is), and the "deferred" tokens that pop the suffix empty on some path (a string's
// closing quote, say), which need the whole state. The rest is rejected whatever lies below.
//
// The suffix of a stack runs from its top down to the first entry below the top that is in a rule
// the user wrote (not a generated "name~N" rule of a group or repetition): inside a JSON string
// body the suffix is "string's closing quote, the char* loop, the char class", the same for every
// property and nesting level, so one set serves them all, and its deferred tokens are those with
// a quote. A stack with no such entry is its own suffix ("whole"): popping it empty then means the
// grammar is complete, which decides the token.
//
// Exactness: the matcher refuses a token whose step passes a MatcherLimits bound. Each set keeps
// the largest steps its decided tokens took (StepStats); a state whose stacks could together pass
// a bound takes the full walk instead, so masks equal the matcher's token by token.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "grammar/grammar_matcher.h"
#include "grammar/vocab_bytes.h"

namespace minfer::grammar {

struct SuffixTokenSet {
  std::vector<uint64_t> accepted;  // [ceil(n_vocab / 64)] bit id: accepted whatever lies below
  std::vector<uint32_t> deferred;  // ascending indices into sorted_text(): need the whole state
  StepStats max;                   // the largest step any token took (suffix entries only)
  uint64_t used = 0;               // the round of its last use (LRU)
};

// Not thread safe: its owner (TokenGrammar) locks.
class SuffixTokenSets {
 public:
  // max_sets: sets kept (n_vocab / 8 bytes each, plus the deferred tokens) between rounds.
  SuffixTokenSets(const GrammarMatcher& matcher, std::shared_ptr<const VocabBytes> vocab,
                  size_t max_sets);

  // For a state with no partial character: allowed[id] = 1 for each token some set accepts, 0
  // elsewhere (end of generation included), and `deferred` = the tokens (ascending indices into
  // sorted_text()) the caller must still try on the whole state. False (nothing written): the
  // state must take the full walk (a partial character, caching off, or a MatcherLimits bound
  // within reach).
  bool collect(const MatchState& state, std::span<uint8_t> allowed,
               std::vector<uint32_t>& deferred);

  // How many top entries of `stack` make its suffix (stack.size(): the whole stack).
  size_t suffix_length(std::span<const uint32_t> stack) const;

 private:
  const SuffixTokenSet& get(std::span<const uint32_t> suffix, bool whole);
  void compute(std::span<const uint32_t> suffix, bool whole, SuffixTokenSet& set);
  void evict();

  const GrammarMatcher& matcher_;
  std::shared_ptr<const VocabBytes> vocab_;
  size_t max_sets_;
  std::vector<uint8_t> in_user_rule_;  // [n_elements] 1: the position is in a rule the user wrote
  GrammarAutomaton automaton_;         // the states of suffixes alone
  std::unordered_map<std::string, std::unique_ptr<SuffixTokenSet>> sets_;
  uint64_t round_ = 0;
  std::vector<int32_t> walk_;  // [max_piece_bytes + 1] the walk's state per prefix length
};

}  // namespace minfer::grammar
