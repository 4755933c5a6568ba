// The matcher of a compiled grammar (grammar/gbnf.h): the classic pushdown approach. A parse
// stack is a list of positions in rule alternatives (the bottom is the outermost rule, the top is
// the character class to match next); the state is the set of stacks alive after the text so far,
// plus the bytes of a UTF-8 character not yet complete, so a token that ends mid-character leaves
// a partial state the next token completes. An empty stack means the root rule is complete.
//
// GrammarAutomaton interns states and caches transitions per byte, so the same state met again
// (a string's body, a repeated list item) costs a table look-up: in effect a DFA built lazily
// over the pushdown states a grammar actually reaches. The number of stacks and their depth are
// bounded (MatcherLimits), so an ambiguous or exploding grammar is an error, never a hang or
// unbounded memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/gbnf.h"

namespace minfer::grammar {

struct MatcherLimits {
  size_t max_stacks = 512;        // stacks alive at once
  size_t max_stack_depth = 2048;  // positions in one stack (nesting)
  size_t max_states = 8192;       // interned states before the cache starts over
};

struct MatchState {
  std::vector<std::vector<uint32_t>> stacks;  // sorted, unique; [] = the root is complete
  uint32_t partial = 0;                       // the bits of the UTF-8 character so far
  uint8_t need = 0;                           // its continuation bytes still to come
  uint8_t lo = 0x80, hi = 0xBF;               // the range of the next continuation byte

  bool operator==(const MatchState&) const = default;
};

// Why a step refused a byte.
enum class StepResult : uint8_t { kOk, kRefused, kTooManyStacks };

// How close one step came to MatcherLimits: the stacks it expanded to before duplicates were
// removed, the stacks after, and the longest stack it built (the quantities the limits bound).
struct StepStats {
  size_t expanded = 0;
  size_t stacks = 0;
  size_t max_depth = 0;
};

// Stateless operations on MatchState.
class GrammarMatcher {
 public:
  GrammarMatcher(std::shared_ptr<const Grammar> grammar, const MatcherLimits& limits);

  // The state before any text. kTooManyStacks: the grammar explodes at its start.
  StepResult initial(MatchState& out) const;
  // The state after one more byte; `stats`, when given, receives the step's StepStats.
  StepResult advance(const MatchState& in, uint8_t byte, MatchState& out,
                     StepStats* stats = nullptr) const;
  // Every byte in turn (on a copy).
  StepResult advance(const MatchState& in, std::string_view bytes, MatchState& out) const;

  // The text so far is a whole sentence of the grammar.
  static bool can_end(const MatchState& s);
  // ... and nothing may follow it.
  static bool only_end(const MatchState& s);
  // A canonical byte string of the state (the interning key).
  static std::string key(const MatchState& s);

  const Grammar& grammar() const { return *grammar_; }
  const MatcherLimits& limits() const { return limits_; }

 private:
  // Adds to `out` every stack that `stack` (moved from) expands to with a character class on top
  // (or the empty stack); false when a limit is passed.
  bool expand(std::vector<uint32_t>& stack, std::vector<std::vector<uint32_t>>& out,
              StepStats* stats = nullptr) const;
  StepResult finish(std::vector<std::vector<uint32_t>>& stacks, MatchState& out) const;
  StepResult advance_code_point(const MatchState& in, uint32_t cp, MatchState& out,
                                StepStats* stats) const;

  std::shared_ptr<const Grammar> grammar_;
  MatcherLimits limits_;
};

// Interned states with cached byte transitions. Not thread safe: its owner locks.
class GrammarAutomaton {
 public:
  static constexpr int32_t kRefused = -1;
  static constexpr int32_t kTooManyStacks = -2;

  explicit GrammarAutomaton(const GrammarMatcher& matcher) : matcher_(matcher) {}

  // The id of a state (interned on first sight).
  int32_t intern(const MatchState& s);
  // The state after `byte`, or kRefused / kTooManyStacks.
  int32_t step(int32_t state, uint8_t byte) {
    const int32_t n = next_[static_cast<size_t>(state) * 256 + byte];
    return n != kUnknown ? n : compute_step(state, byte);
  }
  const MatchState& state(int32_t id) const { return states_[static_cast<size_t>(id)].match; }
  bool can_end(int32_t id) const { return can_end_[static_cast<size_t>(id)] != 0; }
  // The largest StepStats (field by field) of the steps computed so far that led to a state.
  const StepStats& stats(int32_t id) const { return states_[static_cast<size_t>(id)].stats; }
  size_t size() const { return states_.size(); }
  // Forgets every state (ids held elsewhere become invalid).
  void clear();

  // The cached token mask of a state, if any (ownership stays here).
  const std::vector<uint8_t>* mask(int32_t id);
  void store_mask(int32_t id, std::vector<uint8_t> mask, size_t max_masks);

 private:
  static constexpr int32_t kUnknown = -3;
  struct State {
    MatchState match;
    StepStats stats;
    std::unique_ptr<std::vector<uint8_t>> mask;  // [n_vocab] when cached
    uint64_t mask_used = 0;                      // the tick of its last use (LRU)
  };
  int32_t compute_step(int32_t state, uint8_t byte);

  const GrammarMatcher& matcher_;
  std::vector<State> states_;
  std::vector<int32_t> next_;     // [states, 256] the state after each byte, or kUnknown
  std::vector<uint8_t> can_end_;  // [states] GrammarMatcher::can_end (apart: walks read it a lot)
  std::unordered_map<std::string, int32_t> ids_;
  size_t n_masks_ = 0;
  uint64_t tick_ = 0;
};

}  // namespace minfer::grammar
