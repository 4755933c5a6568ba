// GBNF, the grammar language of llama.cpp (its grammars/README.md), parsed into a flat form that
// the matcher (grammar/grammar_matcher.h) walks:
//
//   root   ::= answer ("," ws answer)*      # a rule: alternatives of sequences
//   answer ::= "yes" | "no" | [0-9]{1,3}    # strings, classes, repetition, groups
//   ws     ::= [ \t\n]*
//
// Terminals are Unicode code points (the text is UTF-8). Strings take the escapes \n \t \r \\ \"
// \xHH \uHHHH \UHHHHHHHH (and \[ \] \- \^ \/ \'); classes `[a-z_]` take ranges, the same escapes
// and negation `[^...]`; `.` is any code point; `#` starts a comment. A rule ends at the end of its
// line unless a group is open, the line ends in `|` or `::=`, or the next line starts with `|`.
//
// Groups and repetitions (`* + ? {m} {m,} {m,n}`) become generated rules, so the compiled grammar
// has only three kinds of element: a character class, a rule reference and the end of an
// alternative. Errors say where and what was expected: "[grammar] gbnf:3:14: expected ']' to close
// the character class". An undefined rule, a missing `root` and left recursion (a rule that can
// reach itself without consuming a character, which a top-down matcher would expand for ever)
// are errors, and so is a grammar past one of GbnfLimits (checked before the parser recurses or
// allocates for it).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/input_limits.h"
#include "core/status.h"

namespace minfer::grammar {

// A set of code points: sorted, disjoint, inclusive ranges, and whether the set is their
// complement.
struct CharClass {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool negated = false;

  bool matches(uint32_t cp) const;
  // Whether some code point in [lo, hi] is in the set.
  bool intersects(uint32_t lo, uint32_t hi) const;
};

struct GrammarElement {
  enum class Kind : uint8_t { kEnd, kChars, kRule };
  Kind kind = Kind::kEnd;
  uint32_t value = 0;  // kChars: index into Grammar::classes; kRule: the rule id
};

// The compiled grammar: each alternative is a run of elements in `elements` closed by a kEnd, so
// a position in a rule is one index.
struct Grammar {
  std::vector<GrammarElement> elements;
  std::vector<CharClass> classes;
  std::vector<std::vector<uint32_t>> alternatives;  // [n_rules] where each alternative starts
  std::vector<std::string> rule_names;              // [n_rules] generated rules: "name~3"
  uint32_t root = 0;
};

// What a grammar may hold and expand to (core/input_limits.h); repetition counts make rules.
struct GbnfLimits {
  size_t max_bytes = limits::kMaxGbnfBytes;              // the text
  size_t max_rules = limits::kMaxGbnfRules;              // named and generated rules
  int max_nesting = limits::kMaxGbnfNesting;             // groups open at once
  size_t max_elements = limits::kMaxGbnfElements;        // after repetitions are expanded
  uint32_t max_repetition = limits::kMaxGbnfRepetition;  // m and n of {m,n}
};

Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text,
                                                  const GbnfLimits& limits = {});

}  // namespace minfer::grammar
