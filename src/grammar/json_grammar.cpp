#include "grammar/json_grammar.h"

#include <algorithm>

#include <fmt/format.h>

namespace minfer::grammar {

namespace {

// Whitespace between tokens: "ws" and, when bounded, ws-N-L (N bytes, L line breaks still
// allowed). RFC 8259 §2: space, tab, line feed, carriage return.
std::string whitespace_rules(int max_run, int max_line_breaks) {
  if (max_run <= 0 && max_line_breaks <= 0) return "ws ::= [ \\t\\n\\r]*\n";
  if (max_run <= 0) {
    // Line breaks bounded, the run not: spaces between at most L line breaks.
    std::string out = "ws ::= [ \\t\\r]*";
    for (int l = 0; l < max_line_breaks; ++l) out += " (\"\\n\" [ \\t\\r]*)?";
    return out + "\n";
  }
  const int lines = max_line_breaks <= 0 ? max_run : std::min(max_line_breaks, max_run);
  std::string out = fmt::format("ws ::= ws-{}-{}\n", max_run, lines);
  for (int n = 1; n <= max_run; ++n) {
    for (int l = 0; l <= lines; ++l) {
      out += fmt::format("ws-{}-{} ::= \"\" | [ \\t\\r] ws-{}-{}", n, l, n - 1, l);
      if (l > 0) out += fmt::format(" | \"\\n\" ws-{}-{}", n - 1, l - 1);
      out += "\n";
    }
  }
  for (int l = 0; l <= lines; ++l) out += fmt::format("ws-0-{} ::= \"\"\n", l);
  return out;
}

}  // namespace

std::string json_number_gbnf(const JsonOptions& options) {
  const std::string exponent = options.max_exponent_digits > 0
                                   ? fmt::format("[0-9]{{1,{}}}", options.max_exponent_digits)
                                   : std::string("[0-9]+");
  const std::string tail = fmt::format("([eE] [+-]? {})?", exponent);
  const int sig = options.max_significant_digits;
  if (sig <= 0) {
    const std::string integer =
        options.max_integer_digits > 0
            ? fmt::format("[1-9] [0-9]{{0,{}}}", options.max_integer_digits - 1)
            : std::string("[1-9] [0-9]*");
    return fmt::format("number ::= \"-\"? (\"0\" | {}) (\".\" [0-9]+)? {}\n", integer, tail);
  }
  // number-K: the rest of a number whose integer part has K digits so far (the first one 1-9);
  // each rule knows how many digits are left, so the choice of digit, '.' or the end is made by
  // the next byte alone (no alternatives kept open in parallel while digits are read).
  const int ints = options.max_integer_digits > 0 ? std::min(options.max_integer_digits, sig) : sig;
  std::string out = fmt::format(
      "number ::= \"-\"? (\"0\" (\".\" [0-9]{{1,{}}})? | [1-9] number-1) {}\n", sig, tail);
  for (int k = 1; k <= ints; ++k) {
    std::string alts;
    if (k < ints) alts = fmt::format("[0-9] number-{}", k + 1);
    if (sig - k >= 1) {
      alts += fmt::format("{}\".\" [0-9]{{1,{}}}", alts.empty() ? "" : " | ", sig - k);
    }
    out += alts.empty() ? fmt::format("number-{} ::= \"\"\n", k)
                        : fmt::format("number-{} ::= ({})?\n", k, alts);
  }
  return out;
}

std::string json_object_gbnf(const JsonOptions& options) {
  const int depth = std::clamp(options.max_depth, 1, kMaxJsonDepth);
  std::string out = "root ::= ws obj-1\n";
  for (int d = 1; d <= depth; ++d) {
    // A container at depth d holds values that may open depth d + 1.
    out += fmt::format(
        "obj-{0} ::= \"{{\" ws (member-{0} (\",\" ws member-{0})*)? \"}}\"\n"
        "member-{0} ::= string ws \":\" ws value-{1} ws\n"
        "arr-{0} ::= \"[\" ws (value-{1} ws (\",\" ws value-{1} ws)*)? \"]\"\n"
        "value-{0} ::= obj-{0} | arr-{0} | scalar\n",
        d, d + 1);
  }
  out += fmt::format("value-{} ::= scalar\n", depth + 1);
  out += "scalar ::= string | number | \"true\" | \"false\" | \"null\"\n";
  out += "string ::= \"\\\"\" char* \"\\\"\"\n";
  out += "char ::= [^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" u4)\n";
  // \u: no surrogate, or a high one (D800-DBFF) then \u and a low one (DC00-DFFF).
  out +=
      "u4 ::= [0-9a-cA-CeEfF] hex hex hex | [dD] [0-7] hex hex | "
      "[dD] [89abAB] hex hex \"\\\\u\" [dD] [c-fC-F] hex hex\n";
  out += "hex ::= [0-9a-fA-F]\n";
  out += json_number_gbnf(options);
  out += whitespace_rules(options.max_whitespace_run, options.max_line_breaks);
  return out;
}

}  // namespace minfer::grammar
