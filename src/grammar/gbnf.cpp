#include "grammar/gbnf.h"

#include <algorithm>
#include <limits>
#include <map>

#include <fmt/format.h>

namespace minfer::grammar {

bool CharClass::matches(uint32_t cp) const {
  // ranges are sorted and disjoint: the last range starting at or before cp decides.
  auto it = std::upper_bound(ranges.begin(), ranges.end(), cp,
                             [](uint32_t c, const auto& r) { return c < r.first; });
  const bool in = it != ranges.begin() && cp <= std::prev(it)->second;
  return in != negated;
}

bool CharClass::intersects(uint32_t lo, uint32_t hi) const {
  if (!negated) {
    for (const auto& [a, b] : ranges) {
      if (a <= hi && lo <= b) return true;
    }
    return false;
  }
  // Some code point of [lo, hi] is outside every range: walk the gaps.
  uint32_t next = lo;
  for (const auto& [a, b] : ranges) {
    if (b < next) continue;
    if (a > next) return true;
    if (b >= hi) return false;
    next = b + 1;
  }
  return next <= hi;
}

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;

// A parse error at a byte offset; the boundary turns it into a Status with line and column.
struct ParseError {
  size_t at;
  std::string what;
};

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
         c == '_';
}

using Sequence = std::vector<GrammarElement>;

class GbnfParser {
 public:
  GbnfParser(std::string_view text, const GbnfLimits& limits) : text_(text), limits_(limits) {}

  Grammar parse() {
    if (text_.size() > limits_.max_bytes) {
      throw ParseError{0, fmt::format("the grammar is {} bytes, over the limit of {}", text_.size(),
                                      limits_.max_bytes)};
    }
    skip_space(true);
    while (pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    for (size_t id = 0; id < rules_.size(); ++id) {
      if (!defined_[id])
        throw ParseError{first_use_[id], fmt::format("undefined rule '{}'", names_[id])};
    }
    auto root = ids_.find("root");
    if (root == ids_.end()) throw ParseError{text_.size(), "expected a rule named 'root'"};
    check_left_recursion();
    return flatten(root->second);
  }

 private:
  char peek(size_t ahead = 0) const {
    return pos_ + ahead < text_.size() ? text_[pos_ + ahead] : '\0';
  }
  bool at_end() const { return pos_ >= text_.size(); }

  // Spaces, tabs, carriage returns and comments; line breaks too when newline_ok.
  void skip_space(bool newline_ok) {
    while (!at_end()) {
      const char c = peek();
      if (c == ' ' || c == '\t' || c == '\r' || (newline_ok && c == '\n')) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && peek() != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  uint32_t rule_id(const std::string& name, size_t at) {
    auto [it, inserted] = ids_.emplace(name, static_cast<uint32_t>(rules_.size()));
    if (inserted) {
      if (rules_.size() >= limits_.max_rules) {
        throw ParseError{at, fmt::format("the grammar has more than {} rules (named and made by "
                                         "groups and repetitions)",
                                         limits_.max_rules)};
      }
      rules_.emplace_back();
      names_.push_back(name);
      defined_.push_back(false);
      first_use_.push_back(at);
      defined_at_.push_back(at);
    }
    return it->second;
  }

  // Generated rules are named after the rule they come from, with a character that a user's
  // rule name cannot hold: "root~3".
  std::string generated_name() const { return fmt::format("{}~{}", current_, rules_.size()); }

  uint32_t new_rule(std::vector<Sequence> alternatives) {
    const uint32_t id = rule_id(generated_name(), pos_);
    define(id, std::move(alternatives), pos_);
    return id;
  }

  void define(uint32_t id, std::vector<Sequence> alternatives, size_t at) {
    for (const Sequence& s : alternatives) n_elements_ += s.size() + 1;
    if (n_elements_ > limits_.max_elements) {
      throw ParseError{
          at, fmt::format("the grammar expands to more than {} elements", limits_.max_elements)};
    }
    rules_[id] = std::move(alternatives);
    defined_[id] = true;
    defined_at_[id] = at;
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(peek())) ++pos_;
    if (pos_ == start) throw ParseError{pos_, "expected a rule name"};
    return std::string(text_.substr(start, pos_ - start));
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    const uint32_t id = rule_id(name, start);
    if (defined_[id]) {
      throw ParseError{start, fmt::format("rule '{}' is defined twice (first at {})", name,
                                          location(defined_at_[id]))};
    }
    current_ = name;
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") {
      throw ParseError{pos_, fmt::format("expected '::=' after the rule name '{}'", name)};
    }
    pos_ += 3;
    skip_space(true);
    define(id, parse_alternates(false), start);
    if (!at_end() && peek() != '\n') {
      throw ParseError{pos_, peek() == ')' ? std::string("unexpected ')': no group is open")
                                           : unexpected_message()};
    }
  }

  std::string unexpected_message() const {
    return fmt::format(
        "unexpected '{}': expected a string, a character class, a rule name, '(', "
        "'.', a repetition or '|'",
        peek());
  }

  std::vector<Sequence> parse_alternates(bool nested) {
    std::vector<Sequence> alternatives;
    alternatives.push_back(parse_sequence(nested));
    while (true) {
      // At the top level a line that starts with '|' continues the rule.
      const size_t save = pos_;
      if (!nested) skip_space(true);
      if (peek() != '|') {
        pos_ = save;
        break;
      }
      ++pos_;
      skip_space(true);
      alternatives.push_back(parse_sequence(nested));
    }
    return alternatives;
  }

  Sequence parse_sequence(bool nested) {
    Sequence seq;
    size_t last = 0;  // where the last item's elements start in seq (for a repetition)
    bool has_item = false;
    while (true) {
      skip_space(nested);
      const char c = peek();
      const size_t start = seq.size();
      if (c == '"') {
        parse_string(seq);
      } else if (c == '[') {
        seq.push_back(parse_class());
      } else if (c == '.') {
        ++pos_;
        seq.push_back(add_class(CharClass{{}, true}));
      } else if (c == '(') {
        const size_t open = pos_++;
        if (++nesting_ > limits_.max_nesting) {
          throw ParseError{
              open, fmt::format("groups nested deeper than the limit of {}", limits_.max_nesting)};
        }
        skip_space(true);
        std::vector<Sequence> alternatives = parse_alternates(true);
        --nesting_;
        skip_space(true);
        if (peek() != ')') {
          throw ParseError{
              pos_, fmt::format("expected ')' to close the group opened at {}", location(open))};
        }
        ++pos_;
        seq.push_back(rule_ref(new_rule(std::move(alternatives))));
      } else if (is_name_char(c)) {
        const size_t at = pos_;
        seq.push_back(rule_ref(rule_id(parse_name(), at)));
      } else if (c == '*' || c == '+' || c == '?' || c == '{') {
        if (!has_item) throw ParseError{pos_, fmt::format("expected an item before '{}'", c)};
        repeat(seq, last);
        continue;
      } else if (at_end() || c == '|' || c == '\n' || (c == ')' && nested)) {
        return seq;
      } else if (c == ')') {
        return seq;  // the rule's caller reports it
      } else {
        throw ParseError{pos_, unexpected_message()};
      }
      last = start;
      has_item = true;
    }
  }

  static GrammarElement rule_ref(uint32_t id) { return {GrammarElement::Kind::kRule, id}; }

  GrammarElement add_class(CharClass cls) {
    classes_.push_back(std::move(cls));
    return {GrammarElement::Kind::kChars, static_cast<uint32_t>(classes_.size() - 1)};
  }

  GrammarElement single(uint32_t cp) { return add_class(CharClass{{{cp, cp}}, false}); }

  uint32_t hex_digits(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      const char c = peek();
      int d = -1;
      if (c >= '0' && c <= '9') d = c - '0';
      if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
      if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
      if (d < 0) throw ParseError{pos_, fmt::format("expected {} hex digits in the escape", n)};
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    if (v > kMaxCodePoint) {
      throw ParseError{pos_, fmt::format("escape U+{:X} is past U+10FFFF", v)};
    }
    return v;
  }

  // One code point of a string or class: an escape or a UTF-8 character.
  uint32_t parse_char() {
    const auto c = static_cast<uint8_t>(peek());
    if (c == '\\') {
      const size_t at = pos_++;
      const char e = peek();
      ++pos_;
      switch (e) {
        case 'x':
          return hex_digits(2);
        case 'u':
          return hex_digits(4);
        case 'U':
          return hex_digits(8);
        case 'n':
          return '\n';
        case 't':
          return '\t';
        case 'r':
          return '\r';
        case '\\':
        case '"':
        case '[':
        case ']':
        case '-':
        case '^':
        case '/':
        case '\'':
          return static_cast<uint32_t>(e);
        default:
          throw ParseError{at, fmt::format("unknown escape '\\{}'", e)};
      }
    }
    return parse_utf8();
  }

  uint32_t parse_utf8() {
    const auto c = static_cast<uint8_t>(peek());
    const size_t at = pos_;
    int n = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      ++pos_;
      return c;
    } else if (c >= 0xC2 && c <= 0xDF) {
      n = 1, cp = c & 0x1Fu;
    } else if (c >= 0xE0 && c <= 0xEF) {
      n = 2, cp = c & 0x0Fu;
    } else if (c >= 0xF0 && c <= 0xF4) {
      n = 3, cp = c & 0x07u;
    } else {
      throw ParseError{at, "invalid UTF-8"};
    }
    ++pos_;
    for (int i = 0; i < n; ++i) {
      const auto b = static_cast<uint8_t>(peek());
      if ((b & 0xC0) != 0x80) throw ParseError{at, "invalid UTF-8"};
      cp = (cp << 6) | (b & 0x3Fu);
      ++pos_;
    }
    return cp;
  }

  void parse_string(Sequence& seq) {
    ++pos_;  // the opening quote
    while (peek() != '"') {
      if (at_end() || peek() == '\n') throw ParseError{pos_, "expected '\"' to close the string"};
      seq.push_back(single(parse_char()));
    }
    ++pos_;
  }

  GrammarElement parse_class() {
    ++pos_;  // '['
    CharClass cls;
    if (peek() == '^') {
      cls.negated = true;
      ++pos_;
    }
    while (peek() != ']') {
      if (at_end() || peek() == '\n') {
        throw ParseError{pos_, "expected ']' to close the character class"};
      }
      const size_t at = pos_;
      const uint32_t lo = parse_char();
      uint32_t hi = lo;
      if (peek() == '-' && peek(1) != ']' && pos_ + 1 < text_.size()) {
        ++pos_;
        if (peek() == '\n') throw ParseError{pos_, "expected ']' to close the character class"};
        hi = parse_char();
        if (hi < lo) {
          throw ParseError{at,
                           fmt::format("range U+{:04X}-U+{:04X} ends before it starts", lo, hi)};
        }
      }
      cls.ranges.emplace_back(lo, hi);
    }
    ++pos_;
    std::sort(cls.ranges.begin(), cls.ranges.end());
    std::vector<std::pair<uint32_t, uint32_t>> merged;
    for (const auto& r : cls.ranges) {
      if (!merged.empty() && r.first <= merged.back().second + 1) {
        merged.back().second = std::max(merged.back().second, r.second);
      } else {
        merged.push_back(r);
      }
    }
    cls.ranges = std::move(merged);
    return add_class(std::move(cls));
  }

  uint32_t parse_count() {
    const size_t start = pos_;
    uint64_t v = 0;
    while (peek() >= '0' && peek() <= '9') {
      v = v * 10 + static_cast<uint64_t>(peek() - '0');
      if (v > limits_.max_repetition) {
        throw ParseError{start, fmt::format("repetition count is over {}", limits_.max_repetition)};
      }
      ++pos_;
    }
    if (pos_ == start) throw ParseError{pos_, "expected a number in the repetition"};
    return static_cast<uint32_t>(v);
  }

  // The bounds of the repetition at pos_: *, +, ?, {m}, {m,}, {m,n}. max == kUnbounded: none.
  static constexpr uint32_t kUnbounded = std::numeric_limits<uint32_t>::max();
  std::pair<uint32_t, uint32_t> parse_bounds() {
    const char c = peek();
    ++pos_;
    if (c == '*') return {0, kUnbounded};
    if (c == '+') return {1, kUnbounded};
    if (c == '?') return {0, 1};
    const size_t open = pos_ - 1;
    skip_space(false);
    const uint32_t min = parse_count();
    uint32_t max = min;
    skip_space(false);
    if (peek() == ',') {
      ++pos_;
      skip_space(false);
      max = (peek() == '}') ? kUnbounded : parse_count();
      skip_space(false);
    }
    if (peek() != '}') {
      throw ParseError{
          pos_, fmt::format("expected '}}' to close the repetition opened at {}", location(open))};
    }
    ++pos_;
    if (max < min) throw ParseError{open, fmt::format("repetition {{{},{}}}: max < min", min, max)};
    return {min, max};
  }

  // Replaces seq[last..] (the last item) by its repetition.
  void repeat(Sequence& seq, size_t last) {
    const auto [min, max] = parse_bounds();
    GrammarElement item = seq[last];
    if (seq.size() - last > 1) {
      item = rule_ref(new_rule({Sequence(seq.begin() + static_cast<ptrdiff_t>(last), seq.end())}));
    }
    seq.resize(last);
    if (static_cast<size_t>(min) + n_elements_ > limits_.max_elements) {
      throw ParseError{
          pos_, fmt::format("the grammar expands to more than {} elements", limits_.max_elements)};
    }
    for (uint32_t i = 0; i < min; ++i) seq.push_back(item);
    if (max == kUnbounded) {
      // rest ::= item rest | ε (right recursion: the matcher's stack does not grow)
      const uint32_t rest = rule_id(generated_name(), pos_);
      define(rest, {{item, rule_ref(rest)}, {}}, pos_);
      seq.push_back(rule_ref(rest));
    } else if (max > min) {
      // opt_1 ::= item | ε;  opt_k ::= item opt_{k-1} | ε
      uint32_t opt = new_rule({{item}, {}});
      for (uint32_t k = 2; k <= max - min; ++k) opt = new_rule({{item, rule_ref(opt)}, {}});
      seq.push_back(rule_ref(opt));
    }
  }

  std::string location(size_t at) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        column = 1;
      } else if ((static_cast<uint8_t>(text_[i]) & 0xC0) != 0x80) {
        ++column;  // columns count characters, not UTF-8 bytes
      }
    }
    return fmt::format("{}:{}", line, column);
  }

 public:
  std::string error_location(size_t at) const { return location(at); }

 private:
  // A rule that can reach itself through references each preceded only by nullable elements
  // would be expanded for ever by a top-down matcher.
  // The rules that can match the empty string, found in time linear in the grammar's size: an
  // alternative waits for each rule it references; the last one to turn nullable makes its rule
  // nullable (a fixpoint by repeated passes would be quadratic on a long chain of rules).
  std::vector<bool> nullable_rules() const {
    const size_t n = rules_.size();
    std::vector<bool> nullable(n, false);
    std::vector<uint32_t> alt_rule;  // [n_alternatives] the rule it belongs to
    std::vector<size_t> waiting;     // [n_alternatives] references not yet nullable
    std::vector<std::vector<uint32_t>> referrers(n);  // alternatives referencing each rule
    std::vector<uint32_t> ready;                      // rules found nullable, to propagate
    auto found = [&](uint32_t r) {
      if (!nullable[r]) {
        nullable[r] = true;
        ready.push_back(r);
      }
    };
    for (size_t r = 0; r < n; ++r) {
      for (const Sequence& s : rules_[r]) {
        const bool has_chars = std::any_of(s.begin(), s.end(), [](const GrammarElement& e) {
          return e.kind != GrammarElement::Kind::kRule;
        });
        if (has_chars) continue;  // never empty
        const auto alt = static_cast<uint32_t>(alt_rule.size());
        alt_rule.push_back(static_cast<uint32_t>(r));
        waiting.push_back(s.size());
        for (const GrammarElement& e : s) referrers[e.value].push_back(alt);
        if (s.empty()) found(static_cast<uint32_t>(r));
      }
    }
    while (!ready.empty()) {
      const uint32_t r = ready.back();
      ready.pop_back();
      for (const uint32_t alt : referrers[r]) {
        if (--waiting[alt] == 0) found(alt_rule[alt]);
      }
    }
    return nullable;
  }

  void check_left_recursion() const {
    const size_t n = rules_.size();
    const std::vector<bool> nullable = nullable_rules();
    std::vector<std::vector<uint32_t>> left(n);  // rules reachable at the left edge of r
    for (size_t r = 0; r < n; ++r) {
      for (const Sequence& s : rules_[r]) {
        for (const GrammarElement& e : s) {
          if (e.kind != GrammarElement::Kind::kRule) break;
          left[r].push_back(e.value);
          if (!nullable[e.value]) break;
        }
      }
    }
    // Depth-first search for a cycle, with an explicit stack (a chain of rules can be as long
    // as max_rules); 0 unvisited, 1 on the path, 2 done.
    std::vector<uint8_t> mark(n, 0);
    for (size_t start = 0; start < n; ++start) {
      if (mark[start] == 0) find_cycle(static_cast<uint32_t>(start), left, mark);
    }
  }

  // The path from `start`: each rule on it with the index of the next edge to follow.
  void find_cycle(uint32_t start, const std::vector<std::vector<uint32_t>>& left,
                  std::vector<uint8_t>& mark) const {
    std::vector<std::pair<uint32_t, size_t>> path = {{start, 0}};
    mark[start] = 1;
    while (!path.empty()) {
      auto& [r, edge] = path.back();
      if (edge == left[r].size()) {
        mark[r] = 2;
        path.pop_back();
        continue;
      }
      const uint32_t next = left[r][edge++];
      if (mark[next] == 1) throw_left_recursion(next, path);
      if (mark[next] == 0) {
        mark[next] = 1;
        path.emplace_back(next, 0);
      }
    }
  }

  [[noreturn]] void throw_left_recursion(
      uint32_t rule, const std::vector<std::pair<uint32_t, size_t>>& path) const {
    // The cycle's rules, its middle left out past a dozen (a chain can hold thousands).
    constexpr ptrdiff_t kShown = 6;
    auto it =
        std::find_if(path.begin(), path.end(), [&](const auto& p) { return p.first == rule; });
    const ptrdiff_t n = path.end() - it;
    std::string chain;
    for (ptrdiff_t i = 0; i < n; ++i) {
      if (i == kShown && n > 2 * kShown) {
        chain += fmt::format("… ({} more) -> ", n - 2 * kShown);
        i = n - kShown;
      }
      chain += names_[it[i].first] + " -> ";
    }
    chain += names_[rule];
    throw ParseError{defined_at_[rule],
                     fmt::format("rule '{}' is left-recursive ({}) without consuming a character",
                                 names_[rule], chain)};
  }

  Grammar flatten(uint32_t root) {
    Grammar g;
    g.classes = std::move(classes_);
    g.rule_names = names_;
    g.root = root;
    g.alternatives.resize(rules_.size());
    for (size_t r = 0; r < rules_.size(); ++r) {
      for (const Sequence& s : rules_[r]) {
        g.alternatives[r].push_back(static_cast<uint32_t>(g.elements.size()));
        g.elements.insert(g.elements.end(), s.begin(), s.end());
        g.elements.push_back({GrammarElement::Kind::kEnd, 0});
      }
    }
    return g;
  }

  std::string_view text_;
  GbnfLimits limits_;
  size_t pos_ = 0;
  size_t n_elements_ = 0;
  int nesting_ = 0;      // groups open at pos_
  std::string current_;  // the rule being parsed: generated rules are named after it
  std::map<std::string, uint32_t, std::less<>> ids_;
  std::vector<std::vector<Sequence>> rules_;  // [n_rules] alternatives of each rule
  std::vector<std::string> names_;            // [n_rules]
  std::vector<bool> defined_;                 // [n_rules]
  std::vector<size_t> first_use_;             // [n_rules] offset of the first reference
  std::vector<size_t> defined_at_;            // [n_rules] offset of the definition
  std::vector<CharClass> classes_;
};

}  // namespace

Result<std::shared_ptr<const Grammar>> parse_gbnf(std::string_view text, const GbnfLimits& limits) {
  GbnfParser parser(text, limits);
  try {
    return std::make_shared<const Grammar>(parser.parse());
  } catch (const ParseError& e) {
    return make_error(ErrorCode::kInvalidArgument, "[grammar] gbnf:{}: {}",
                      parser.error_location(e.at), e.what);
  }
}

}  // namespace minfer::grammar
