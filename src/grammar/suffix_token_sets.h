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
// a quote. A stack with no such entry is whole ("its own suffix"): popping it empty then means the
// grammar is complete, which decides the token. A state's whole stacks get one set together (one
// walk, kept by the grammar); a state of whole stacks alone takes the full walk (it shares
// nothing).
//
// Suffix sets are shared twice: by every request on a grammar (SuffixTokenSets, per TokenGrammar),
// and by every grammar on a vocabulary (SharedSuffixSets, held by VocabBytes), keyed by what the
// suffix can reach — its rules, their elements and the positions — written out with the rules
// renumbered, so JSON strings compiled from different schemas share one set.
//
// Exactness: the matcher refuses a token whose step passes a MatcherLimits bound. Each set keeps
// the largest steps its decided tokens took (StepStats); a state whose stacks could together pass
// a bound takes the full walk instead, so masks equal the matcher's token by token.
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
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
};

// The sets of one vocabulary, for every grammar on it (thread safe). Keys: sub-grammars written
// out by SuffixTokenSets; a set evicted here lives on in the grammars that hold it.
class SharedSuffixSets {
 public:
  explicit SharedSuffixSets(size_t max_sets) : max_sets_(max_sets) {}
  std::shared_ptr<const SuffixTokenSet> find(const std::string& key);
  void insert(const std::string& key, std::shared_ptr<const SuffixTokenSet> set);

 private:
  struct Entry {
    std::shared_ptr<const SuffixTokenSet> set;
    uint64_t used = 0;  // LRU tick
  };
  std::mutex mu_;
  std::unordered_map<std::string, Entry> sets_;  // guarded by mu_
  uint64_t tick_ = 0;                            // guarded by mu_
  size_t max_sets_;
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
  struct Cached {
    std::shared_ptr<const SuffixTokenSet> set;
    uint64_t used = 0;  // the round of its last use (LRU)
  };
  // The set of a suffix (not a whole stack): shared with other grammars through the vocabulary.
  const SuffixTokenSet& get_suffix(std::span<const uint32_t> suffix);
  // The set of whole stacks together (popping them empty completes the grammar): this grammar's.
  const SuffixTokenSet& get_whole(const MatchState& stacks);
  // The key of a suffix in SharedSuffixSets: the matcher's limits, the rules the suffix can reach
  // (renumbered in the order met) with their elements, and each suffix entry as (rule, alternative,
  // offset). Empty when the suffix reaches too much of the grammar to be worth sharing.
  std::string shared_key(std::span<const uint32_t> suffix) const;
  // The walk from `start` (whole: its stacks are whole stacks) that makes a set.
  void compute(const MatchState& start, bool whole, SuffixTokenSet& set);
  void evict();

  const GrammarMatcher& matcher_;
  std::shared_ptr<const VocabBytes> vocab_;
  size_t max_sets_;
  std::vector<uint32_t> rule_of_;                 // [n_elements] the rule a position is in
  std::vector<uint32_t> alternative_of_;          // [n_elements] its alternative in that rule
  std::vector<uint8_t> user_rule_;                // [n_rules] 1: written by the user, not generated
  GrammarAutomaton automaton_;                    // the states of suffixes alone
  std::unordered_map<std::string, Cached> sets_;  // by suffix positions / whole stacks
  uint64_t round_ = 0;
  std::vector<int32_t> walk_;  // [max_piece_bytes + 1] the walk's state per prefix length
};

}  // namespace minfer::grammar
