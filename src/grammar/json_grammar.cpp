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

std::string number_rule(int max_integer_digits, int max_exponent_digits) {
  const std::string integer = max_integer_digits > 0
                                  ? fmt::format("[1-9] [0-9]{{0,{}}}", max_integer_digits - 1)
                                  : std::string("[1-9] [0-9]*");
  const std::string exponent = max_exponent_digits > 0
                                   ? fmt::format("[0-9]{{1,{}}}", max_exponent_digits)
                                   : std::string("[0-9]+");
  return fmt::format("number ::= \"-\"? (\"0\" | {}) (\".\" [0-9]+)? ([eE] [+-]? {})?\n", integer,
                     exponent);
}

}  // namespace

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
  out += number_rule(options.max_integer_digits, options.max_exponent_digits);
  out += whitespace_rules(options.max_whitespace_run, options.max_line_breaks);
  return out;
}

}  // namespace minfer::grammar
