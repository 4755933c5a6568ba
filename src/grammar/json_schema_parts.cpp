#include "grammar/json_schema_parts.h"

#include <algorithm>
#include <map>
#include <memory>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/input_limits.h"
#include "core/utf8.h"
#include "grammar/json_constraint.h"
#include "grammar/json_grammar.h"

namespace minfer::grammar {

namespace {

constexpr std::string_view kWhitespaceRule = R"(ws ::= ( " " | "\n" [ \t]{0,20} )?
)";
constexpr std::string_view kCompactWhitespaceRule = R"(ws ::= " "?
)";
constexpr std::string_view kFixedPrimitiveRules =
    R"(escape ::= "\\" ( ["\\/bfnrt] | "u" [0-9a-fA-F]{4} )
char ::= [^"\\\x00-\x1F\x7F] | escape
string ::= "\"" char* "\""
integer ::= "-"? ( "0" | [1-9] [0-9]{0,14} )
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
member ::= string ws ":" ws value
object ::= "{" ws ( member ( ws "," ws member )* ws )? "}"
array ::= "[" ws ( value ( ws "," ws value )* ws )? "]"
format-date ::= [0-9]{4} "-" ( "0" [1-9] | "1" [0-2] ) "-" ( "0" [1-9] | [12] [0-9] | "3" [01] )
format-time ::= ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] ":" [0-5] [0-9] ( "." [0-9]{1,6} )? ( "Z" | [+-] ( [01] [0-9] | "2" [0-3] ) ":" [0-5] [0-9] )
format-date-time ::= format-date "T" format-time
format-uuid ::= [0-9a-f]{8} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{4} "-" [0-9a-f]{12}
)";

}  // namespace

const std::string& json_primitive_rules(bool compact) {
  static const std::string kRules[2] = {
      std::string(kWhitespaceRule) + std::string(kFixedPrimitiveRules) +
          json_number_gbnf(kGenerationJsonOptions),
      std::string(kCompactWhitespaceRule) + std::string(kFixedPrimitiveRules) +
          json_number_gbnf(kGenerationJsonOptions)};
  return kRules[compact ? 1 : 0];
}

std::string gbnf_literal(std::string_view bytes) {
  std::string out = "\"";
  for (const char c : bytes) {
    const auto u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (u < 0x20 || u == 0x7F) {
      out += fmt::format("\\x{:02X}", u);
    } else {
      out += c;
    }
  }
  return out + "\"";
}

namespace {

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i == 0 ? " " : " | ") + alts[i];
  return out + " )";
}

std::string digits(size_t n) {
  if (n == 0) return "";
  return n == 1 ? " [0-9]" : fmt::format(" [0-9]{{{}}}", n);
}

std::string digit_class(char lo, char hi) {
  return lo == hi ? gbnf_literal(std::string(1, lo)) : fmt::format("[{}-{}]", lo, hi);
}

// The decimal strings of one length from lo to hi (lo <= hi, same length).
std::string same_length(std::string_view lo, std::string_view hi) {
  if (lo.empty()) return "";
  if (lo == hi) return gbnf_literal(lo);
  const size_t rest = lo.size() - 1;
  if (lo[0] == hi[0]) {
    return gbnf_literal(lo.substr(0, 1)) + " " + same_length(lo.substr(1), hi.substr(1));
  }
  const bool lo_rest_zero = lo.find_first_not_of('0', 1) == std::string_view::npos;
  const bool hi_rest_nine = hi.find_first_not_of('9', 1) == std::string_view::npos;
  std::vector<std::string> alts;
  if (!lo_rest_zero) {
    alts.push_back(gbnf_literal(lo.substr(0, 1)) + " " +
                   same_length(lo.substr(1), std::string(rest, '9')));
  }
  const char mid_lo = lo_rest_zero ? lo[0] : static_cast<char>(lo[0] + 1);
  const char mid_hi = hi_rest_nine ? hi[0] : static_cast<char>(hi[0] - 1);
  if (mid_lo <= mid_hi) alts.push_back(digit_class(mid_lo, mid_hi) + digits(rest));
  if (!hi_rest_nine) {
    alts.push_back(gbnf_literal(hi.substr(0, 1)) + " " +
                   same_length(std::string(rest, '0'), hi.substr(1)));
  }
  return alternatives(alts);
}

constexpr uint64_t kMaxMagnitude = 9'999'999'999'999'999'999ULL;  // 19 digits
// An unset bound: 15 digits, as the `integer` rule (exact in a double).
constexpr uint64_t kUnsetMagnitude = 999'999'999'999'999ULL;

// The decimal strings of the integers in [a, b], a <= b.
std::string nonnegative_range(uint64_t a, uint64_t b) {
  std::vector<std::string> alts;
  uint64_t length_lo = 1;  // the smallest number of the current length (0 for one digit)
  for (size_t length = 1; length <= 19; ++length) {
    const uint64_t length_hi = length == 19 ? kMaxMagnitude : length_lo * 10 - 1;
    const uint64_t lo = std::max(a, length == 1 ? 0 : length_lo);
    const uint64_t hi = std::min(b, length_hi);
    if (lo <= hi) alts.push_back(same_length(std::to_string(lo), std::to_string(hi)));
    if (length_hi >= b) break;
    length_lo = length == 1 ? 10 : length_lo * 10;
  }
  return alternatives(alts);
}

}  // namespace

std::string integer_range(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  std::vector<std::string> alts;
  // Negative numbers: magnitudes from (hi < 0 ? -hi : 1) to (lo ? -lo : max).
  if (!lo || *lo < 0) {
    const uint64_t m_hi = lo ? 0 - static_cast<uint64_t>(*lo) : kUnsetMagnitude;
    const uint64_t m_lo = hi && *hi < 0 ? 0 - static_cast<uint64_t>(*hi) : 1;
    if (m_lo <= m_hi) alts.push_back("\"-\" " + nonnegative_range(m_lo, m_hi));
  }
  if (!hi || *hi >= 0) {
    const uint64_t a = lo && *lo > 0 ? static_cast<uint64_t>(*lo) : 0;
    const uint64_t b = hi ? static_cast<uint64_t>(*hi) : kUnsetMagnitude;
    if (a <= b) alts.push_back(nonnegative_range(a, b));
  }
  return alternatives(alts);
}

namespace {

// A set of code points, as inclusive ranges, possibly negated.
struct CharSet {
  std::vector<std::pair<uint32_t, uint32_t>> ranges;
  bool negated = false;

  bool contains(uint32_t c) const {
    return std::any_of(ranges.begin(), ranges.end(),
                       [c](const auto& r) { return r.first <= c && c <= r.second; });
  }
};

std::string class_char(uint32_t c) {
  if (c < 0x80) {
    const bool plain = c > 0x20 && c < 0x7F && c != ']' && c != '\\' && c != '^' && c != '-' &&
                       c != '[' && c != '"';
    return plain ? std::string(1, static_cast<char>(c)) : fmt::format("\\x{:02X}", c);
  }
  return c < 0x10000 ? fmt::format("\\u{:04X}", c) : fmt::format("\\U{:08X}", c);
}

// How a control character, " or \ stands inside a JSON string.
std::string json_escape_of(uint32_t c) {
  switch (c) {
    case '"':
      return "\\\"";
    case '\\':
      return "\\\\";
    case '\b':
      return "\\b";
    case '\f':
      return "\\f";
    case '\n':
      return "\\n";
    case '\r':
      return "\\r";
    case '\t':
      return "\\t";
    default:
      return fmt::format("\\u{:04x}", c);
  }
}

bool json_escaped(uint32_t c) {
  return c < 0x20 || c == '"' || c == '\\';
}

// The JSON-string text of one character of the set: a class for the characters that stand as
// themselves, the escape sequences of the others.
std::string render(const CharSet& set) {
  std::string plain;
  std::vector<std::string> alts;
  for (auto [a, b] : set.ranges) {
    // The characters JSON escapes are taken out of the class (at most 34 of them).
    for (uint32_t c = a; c <= std::min<uint32_t>(b, '\\'); ++c) {
      if (!json_escaped(c)) continue;
      if (!set.negated) alts.push_back(gbnf_literal(json_escape_of(c)));
    }
    uint32_t lo = a;
    while (lo <= b) {
      while (lo <= b && json_escaped(lo)) ++lo;
      if (lo > b) break;
      uint32_t hi = lo;
      while (hi < b && !json_escaped(hi + 1)) ++hi;
      plain += lo == hi ? class_char(lo) : class_char(lo) + "-" + class_char(hi);
      lo = hi + 1;
    }
  }
  if (set.negated) {
    plain += "\"\\\\\\x00-\\x1F\\x7F";
    if (!set.contains('"')) alts.push_back(gbnf_literal("\\\""));
    if (!set.contains('\\')) alts.push_back(gbnf_literal("\\\\"));
    alts.insert(alts.begin(), "[^" + plain + "]");
  } else if (!plain.empty()) {
    alts.insert(alts.begin(), "[" + plain + "]");
  }
  if (alts.empty()) return "[^\\x00-\\U0010FFFF]";  // nothing: an empty class
  return alternatives(alts);
}

const CharSet kDigits{{{'0', '9'}}};
const CharSet kWord{{{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}};
const CharSet kSpace{{{'\t', '\r'}, {' ', ' '}}};

std::vector<uint32_t> code_points(std::string_view s) {
  std::vector<uint32_t> out;
  for (size_t i = 0; i < s.size();) out.push_back(utf8::decode_next(s, i));
  return out;
}

// A recursive-descent reader of the documented regex subset (json_schema.h) that writes GBNF.
class PatternReader {
 public:
  explicit PatternReader(std::string_view pattern) : p_(code_points(pattern)) {}

  Result<std::string> read() {
    size_t end = p_.size();
    const bool anchored_start = !p_.empty() && p_[0] == '^';
    const bool anchored_end = end > pos_ + (anchored_start ? 1 : 0) && p_[end - 1] == '$' &&
                              (end < 2 || p_[end - 2] != '\\');
    if (anchored_start) ++pos_;
    if (anchored_end) --end;
    end_ = end;
    Result<std::string> body = alternation();
    if (!body.is_ok()) return body;
    if (pos_ != end_) return error("unbalanced ')'");
    std::string out = anchored_start ? "" : "char* ";
    out += "( " + *body + " )";
    if (!anchored_end) out += " char*";
    return out;
  }

 private:
  Status error(std::string_view what) const {
    return make_error(ErrorCode::kInvalidArgument, "pattern: {} at offset {}", what, pos_);
  }
  bool at_end() const { return pos_ >= end_; }
  uint32_t peek() const { return p_[pos_]; }

  Result<std::string> alternation() {
    std::vector<std::string> alts;
    while (true) {
      Result<std::string> seq = sequence();
      if (!seq.is_ok()) return seq;
      alts.push_back(std::move(*seq));
      if (at_end() || peek() != '|') break;
      ++pos_;
    }
    return alternatives(alts);
  }

  Result<std::string> sequence() {
    std::string out;
    while (!at_end() && peek() != '|' && peek() != ')') {
      Result<std::string> a = atom();
      if (!a.is_ok()) return a;
      Result<std::string> q = quantified(std::move(*a));
      if (!q.is_ok()) return q;
      out += (out.empty() ? "" : " ") + *q;
    }
    return out.empty() ? std::string("\"\"") : out;
  }

  Result<std::string> atom() {
    const uint32_t c = p_[pos_++];
    switch (c) {
      case '(':
        return group();
      case '[':
        return char_class();
      case '.':
        return std::string("char");
      case '\\':
        return escape();
      case '^':
      case '$':
        --pos_;
        return error("an anchor inside the pattern (only at its ends)");
      case '*':
      case '+':
      case '?':
        --pos_;
        return error("a quantifier with nothing before it");
      default:
        return render(CharSet{{{c, c}}});
    }
  }

  Result<std::string> group() {
    if (++nesting_ > limits::kMaxPatternNesting) {
      return error(
          fmt::format("groups nested deeper than the limit of {}", limits::kMaxPatternNesting));
    }
    if (!at_end() && peek() == '?') {
      if (pos_ + 1 < end_ && p_[pos_ + 1] == ':') {
        pos_ += 2;
      } else {
        return error("a lookaround or named group (only ( ) and (?: ))");
      }
    }
    Result<std::string> inner = alternation();
    if (!inner.is_ok()) return inner;
    if (at_end() || peek() != ')') return error("expected ')'");
    ++pos_;
    --nesting_;
    return "( " + *inner + " )";
  }

  Result<std::string> escape() {
    if (at_end()) return error("a '\\' at the end");
    const uint32_t c = p_[pos_++];
    Result<CharSet> set = escape_set(c);
    if (!set.is_ok()) return set.status();
    return render(*set);
  }

  // The characters of an escape (after the backslash), inside or outside a class.
  Result<CharSet> escape_set(uint32_t c) {
    switch (c) {
      case 'd':
        return kDigits;
      case 'w':
        return kWord;
      case 's':
        return kSpace;
      case 'D':
        return CharSet{kDigits.ranges, true};
      case 'W':
        return CharSet{kWord.ranges, true};
      case 'S':
        return CharSet{kSpace.ranges, true};
      case 't':
        return CharSet{{{'\t', '\t'}}};
      case 'n':
        return CharSet{{{'\n', '\n'}}};
      case 'r':
        return CharSet{{{'\r', '\r'}}};
      case 'f':
        return CharSet{{{'\f', '\f'}}};
      case 'v':
        return CharSet{{{'\v', '\v'}}};
      case 'x':
        return hex_escape(2);
      case 'u':
        return hex_escape(4);
      default:
        break;
    }
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) {
      --pos_;
      return error(fmt::format("the escape '\\{}'", static_cast<char>(c)));
    }
    return CharSet{{{c, c}}};
  }

  Result<CharSet> hex_escape(int n) {
    uint32_t v = 0;
    for (int i = 0; i < n; ++i) {
      if (at_end()) return error("a short hex escape");
      const uint32_t h = peek();
      const int d = h >= '0' && h <= '9'   ? static_cast<int>(h - '0')
                    : h >= 'a' && h <= 'f' ? static_cast<int>(h - 'a' + 10)
                    : h >= 'A' && h <= 'F' ? static_cast<int>(h - 'A' + 10)
                                           : -1;
      if (d < 0) return error("a hex digit expected");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return CharSet{{{v, v}}};
  }

  Result<std::string> char_class() {
    CharSet set;
    if (!at_end() && peek() == '^') {
      set.negated = true;
      ++pos_;
    }
    bool first = true;
    while (!at_end() && (peek() != ']' || first)) {
      first = false;
      uint32_t lo = p_[pos_++];
      if (lo == '\\') {
        if (at_end()) return error("a '\\' at the end");
        Result<CharSet> e = escape_set(p_[pos_++]);
        if (!e.is_ok()) return e.status();
        if (e->negated) return error("a negated escape inside a class");
        if (e->ranges.size() != 1 || e->ranges[0].first != e->ranges[0].second) {
          set.ranges.insert(set.ranges.end(), e->ranges.begin(), e->ranges.end());
          continue;
        }
        lo = e->ranges[0].first;
      }
      uint32_t hi = lo;
      if (pos_ + 1 < end_ && peek() == '-' && p_[pos_ + 1] != ']') {
        ++pos_;
        hi = p_[pos_++];
        if (hi == '\\') {
          if (at_end()) return error("a '\\' at the end");
          Result<CharSet> e = escape_set(p_[pos_++]);
          if (!e.is_ok()) return e.status();
          if (e->ranges.size() != 1 || e->ranges[0].first != e->ranges[0].second) {
            return error("a class escape as the end of a range");
          }
          hi = e->ranges[0].first;
        }
        if (hi < lo) return error("a range whose end comes before its start");
      }
      set.ranges.emplace_back(lo, hi);
    }
    if (at_end()) return error("expected ']'");
    ++pos_;
    std::sort(set.ranges.begin(), set.ranges.end());
    return render(set);
  }

  // Reads a quantifier after an atom, if any ({ that starts none is a literal, as in JS).
  Result<std::string> quantified(std::string atom) {
    if (at_end()) return atom;
    std::string suffix;
    const uint32_t c = peek();
    if (c == '*' || c == '+' || c == '?') {
      suffix = std::string(1, static_cast<char>(c));
      ++pos_;
    } else if (c == '{') {
      std::optional<std::string> bounds = repetition();
      if (!bounds) return atom;
      suffix = *bounds;
    } else {
      return atom;
    }
    if (!at_end() && peek() == '?') ++pos_;  // lazy: the same strings
    if (!at_end() && (peek() == '*' || peek() == '+' || peek() == '?' || peek() == '{')) {
      return error("a quantifier after a quantifier");
    }
    return "( " + atom + " )" + suffix;
  }

  // {m}, {m,} or {m,n} at pos_; nullopt (pos_ unchanged) when the text is not one.
  std::optional<std::string> repetition() {
    size_t i = pos_ + 1;
    std::string text = "{";
    bool digits_seen = false, comma = false;
    for (; i < end_ && p_[i] != '}'; ++i) {
      const uint32_t c = p_[i];
      if (c >= '0' && c <= '9') {
        digits_seen = true;
      } else if (c == ',' && digits_seen && !comma) {
        comma = true;
      } else {
        return std::nullopt;
      }
      text += static_cast<char>(c);
    }
    if (i >= end_ || !digits_seen) return std::nullopt;
    pos_ = i + 1;
    return text + "}";
  }

  std::vector<uint32_t> p_;
  size_t pos_ = 0;
  size_t end_ = 0;
  int nesting_ = 0;  // groups open at pos_
};

// A trie of property names, for the keys that are none of them.
struct KeyTrie {
  bool terminal = false;
  std::map<uint32_t, std::unique_ptr<KeyTrie>> children;

  // The rest of a key string (closing quote included) that has read this node's prefix.
  std::string rest() const {
    std::vector<std::string> alts;
    if (!terminal) alts.push_back(gbnf_literal("\""));
    CharSet other{{}, true};
    for (const auto& [c, child] : children) other.ranges.emplace_back(c, c);
    alts.push_back(render(other) + " char* " + gbnf_literal("\""));
    for (const auto& [c, child] : children) {
      std::string bytes;
      utf8::append(bytes, c);
      alts.push_back(gbnf_literal(bytes) + " " + child->rest());
    }
    return alternatives(alts);
  }
};

}  // namespace

Result<std::string> pattern_to_gbnf(std::string_view pattern) {
  return PatternReader(pattern).read();
}

Result<std::string> key_other_than(std::span<const std::string> names) {
  KeyTrie root;
  for (const std::string& name : names) {
    KeyTrie* node = &root;
    for (const uint32_t c : code_points(name)) {
      if (json_escaped(c)) {
        return make_error(ErrorCode::kInvalidArgument,
                          "property name '{}' has a character JSON escapes; with "
                          "additionalProperties such names are not supported",
                          name);
      }
      auto& child = node->children[c];
      if (!child) child = std::make_unique<KeyTrie>();
      node = child.get();
    }
    node->terminal = true;
  }
  return gbnf_literal("\"") + " " + root.rest();
}

}  // namespace minfer::grammar
