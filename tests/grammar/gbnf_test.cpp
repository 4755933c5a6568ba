// GBNF: parse errors name line and column for each kind of mistake; every construct accepts and
// rejects the strings it should (repetition bounds, negated classes, '.' on multi-byte UTF-8,
// escapes); an exploding grammar is an error, not a hang.
#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "core/input_limits.h"
#include "grammar/grammar_matcher.h"

namespace minfer::grammar {
namespace {

// Whether every byte of `text` is accepted (it can still become a sentence) and, when `whole`,
// whether it is a sentence of the grammar.
bool accepts(const std::string& gbnf, std::string_view text, bool whole) {
  auto g = parse_gbnf(gbnf);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  if (!g.is_ok()) return false;
  GrammarMatcher m(g.value(), MatcherLimits{});
  MatchState s;
  MatchState out;
  if (m.initial(s) != StepResult::kOk || m.advance(s, text, out) != StepResult::kOk) return false;
  return !whole || GrammarMatcher::can_end(out);
}

bool matches(const std::string& gbnf, std::string_view text) {
  return accepts(gbnf, text, true);
}

std::string error_of(const std::string& gbnf) {
  auto g = parse_gbnf(gbnf);
  return g.is_ok() ? std::string("(parsed)") : g.status().message();
}

TEST(Gbnf, ParseErrorsNameLineAndColumn) {
  // {grammar, error}
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"root ::= \"a\"\nx ::= [a-z",
       "[grammar] gbnf:2:11: expected ']' to close the character class"},
      {"root ::= \"abc", "[grammar] gbnf:1:14: expected '\"' to close the string"},
      {"root ::= (\"a\" | \"b\"\n",
       "[grammar] gbnf:2:1: expected ')' to close the group opened at 1:10"},
      {"root ::= \"a\" )", "[grammar] gbnf:1:14: unexpected ')': no group is open"},
      {"root = \"a\"", "[grammar] gbnf:1:6: expected '::=' after the rule name 'root'"},
      {"root ::= item\n", "[grammar] gbnf:1:10: undefined rule 'item'"},
      {"item ::= \"a\"\n", "[grammar] gbnf:2:1: expected a rule named 'root'"},
      {"", "[grammar] gbnf:1:1: expected a rule named 'root'"},
      {"root ::= \"\\q\"", "[grammar] gbnf:1:11: unknown escape '\\q'"},
      {"root ::= \"\\x4\"", "[grammar] gbnf:1:14: expected 2 hex digits in the escape"},
      {"root ::= [z-a]", "[grammar] gbnf:1:11: range U+007A-U+0061 ends before it starts"},
      {"root ::= * \"a\"", "[grammar] gbnf:1:10: expected an item before '*'"},
      {"root ::= \"a\"{2",
       "[grammar] gbnf:1:15: expected '}' to close the repetition opened at 1:13"},
      {"root ::= \"a\"{3,2}", "[grammar] gbnf:1:13: repetition {3,2}: max < min"},
      {"root ::= \"a\"{x}", "[grammar] gbnf:1:14: expected a number in the repetition"},
      {"root ::= \"a\" @",
       "[grammar] gbnf:1:14: unexpected '@': expected a string, a character class, a rule "
       "name, '(', '.', a repetition or '|'"},
      {"root ::= \"a\"\nroot ::= \"b\"",
       "[grammar] gbnf:2:1: rule 'root' is defined twice (first at 1:1)"},
      {"::= \"a\"", "[grammar] gbnf:1:1: expected a rule name"},
      // Columns count characters: 'é' is one.
      {"root ::= \"é\" [a", "[grammar] gbnf:1:16: expected ']' to close the character class"},
  };
  for (const auto& [gbnf, error] : cases) EXPECT_EQ(error_of(gbnf), error) << gbnf;
}

TEST(Gbnf, LeftRecursionIsAnError) {
  EXPECT_EQ(error_of("root ::= root \"a\" | \"b\""),
            "[grammar] gbnf:1:1: rule 'root' is left-recursive (root -> root) without consuming "
            "a character");
  // Through another rule and a nullable prefix.
  const std::string e = error_of("root ::= x\nx ::= y? root \"a\" | \"b\"\ny ::= \"c\"");
  EXPECT_NE(e.find("left-recursive"), std::string::npos) << e;
  // A repetition of something that can be empty loops too.
  EXPECT_NE(error_of("root ::= (\"a\"?)*").find("left-recursive"), std::string::npos);
  // Right recursion is fine.
  EXPECT_TRUE(matches("root ::= \"a\" root | \"b\"", "aaab"));
}

// Each of `yes` is accepted and none of `no` is: as whole sentences, or when !whole as prefixes
// that can still become one.
void expect_accepts(const std::string& gbnf, std::initializer_list<std::string_view> yes,
                    std::initializer_list<std::string_view> no, bool whole) {
  for (const std::string_view t : yes) EXPECT_TRUE(accepts(gbnf, t, whole)) << gbnf << ": " << t;
  for (const std::string_view t : no) EXPECT_FALSE(accepts(gbnf, t, whole)) << gbnf << ": " << t;
}

void expect_sentences(const std::string& gbnf, std::initializer_list<std::string_view> yes,
                      std::initializer_list<std::string_view> no) {
  expect_accepts(gbnf, yes, no, true);
}

void expect_prefixes(const std::string& gbnf, std::initializer_list<std::string_view> live,
                     std::initializer_list<std::string_view> dead) {
  expect_accepts(gbnf, live, dead, false);
}

TEST(Gbnf, StringsAlternativesGroupsAndReferences) {
  const std::string g =
      "root ::= greeting \" \" (\"world\" | name)\ngreeting ::= \"hello\" | \"hi\"\n"
      "name ::= [A-Z] [a-z]*";
  expect_sentences(g, {"hello world", "hi Bob"}, {"hi bob", "hey world", "hello"});
  expect_prefixes(g, {"hello"}, {"hello!"});
}

TEST(Gbnf, RepetitionBounds) {
  expect_sentences("root ::= \"a\"*", {"", "aaaa"}, {"b"});
  expect_sentences("root ::= \"a\"+", {"a", "aa"}, {""});
  expect_sentences("root ::= \"a\"? \"b\"", {"b", "ab"}, {"aab"});
  for (int n = 0; n <= 6; ++n) {
    const std::string text(static_cast<size_t>(n), 'x');
    EXPECT_EQ(matches("root ::= \"x\"{3}", text), n == 3) << n;
    EXPECT_EQ(matches("root ::= \"x\"{2,}", text), n >= 2) << n;
    EXPECT_EQ(matches("root ::= \"x\"{2,4}", text), n >= 2 && n <= 4) << n;
    EXPECT_EQ(matches("root ::= \"x\"{0,1}", text), n <= 1) << n;
    EXPECT_EQ(matches("root ::= (\"x\" \"x\"){1,2}", text), n == 2 || n == 4) << n;
  }
  expect_prefixes("root ::= [0-9]{1,3}", {"123"}, {"1234"});
  expect_sentences("root ::= \"ab\"{ 2 , 3 }", {"abab", "ababab"}, {"ab"});
}

TEST(Gbnf, CharacterClassesAndDot) {
  expect_sentences("root ::= [a-z0-9_]+", {"abc_09"}, {"abC"});
  expect_sentences("root ::= [^\"\\\\]*", {"no quotes é 漢"}, {"a\"b", "a\\b"});
  expect_sentences("root ::= [^a-c]", {"d"}, {"b"});
  // '.' is one code point, whatever its UTF-8 length.
  expect_sentences("root ::= .", {"a", "é", "漢", "😀"}, {"ab", "éé"});
  expect_sentences("root ::= . .", {"a漢", "😀é"}, {"a", "é", "漢", "😀"});
  expect_sentences("root ::= . \"!\"", {"😀!"}, {"😀"});
  // Ranges of non-ASCII code points (ό is outside α-ω).
  expect_sentences("root ::= [α-ω]+", {"λαμβδα"}, {"λόγος"});
  expect_sentences("root ::= [\\u4e00-\\u9fff]+", {"漢字"}, {"漢a"});
  expect_sentences("root ::= [\\]\\[-]+", {"]-["}, {"a"});
  // Invalid UTF-8 never matches '.': an overlong form, a surrogate.
  expect_prefixes("root ::= .*", {"\xF0\x9F"}, {"\xC0\x80", "\xED\xA0\x80"});
  // A lead byte alone is judged by the code points it can still become.
  expect_prefixes("root ::= [ -~]", {" "}, {"\xF0"});
  expect_prefixes("root ::= [a-z]", {"a"}, {"\xC3"});
  expect_prefixes("root ::= [\\u0080-\\u07FF]", {"\xDF"}, {"\xE0"});
  expect_prefixes("root ::= [\\u0800-\\u0FFF]", {"\xE0\xBF"}, {"\xE1", "\xE0\xBF\xC0"});
}

TEST(Gbnf, Escapes) {
  expect_sentences("root ::= \"\\n\\t\\r\\\\\\\"\"", {"\n\t\r\\\""}, {"\\n"});
  expect_sentences("root ::= \"\\x41\\u00e9\\U0001F600\"", {"Aé😀"}, {"A"});
  expect_sentences("root ::= [\\x30-\\x39]", {"7"}, {"a"});
  expect_sentences("root ::= \"\\[\\]\"", {"[]"}, {"\\[\\]"});
}

TEST(Gbnf, CommentsAndMultiLineRules) {
  const std::string g =
      "# a comment line\n"
      "root ::= (   # a group spans lines\n"
      "    \"a\"\n"
      "    | \"b\" # a comment after an alternative\n"
      "  ) tail |\n"
      "  \"c\"\n"
      "tail ::= \"!\"\n"
      "  | \"?\"   # a line that starts with '|' continues the rule\n";
  expect_sentences(g, {"a!", "b?", "c"}, {"c!", "a"});
  expect_sentences("root ::=\n  \"x\"", {"x"}, {""});
}

TEST(Gbnf, EmptyAlternativesAndNullableRules) {
  expect_sentences("root ::= \"a\" | ", {"", "a"}, {"aa"});
  expect_sentences("root ::= x x \"b\"\nx ::= \"a\"?", {"ab", "b", "aab"}, {"aaab"});
}

TEST(Gbnf, BigRepetitionsAreBounded) {
  const std::string e = error_of("root ::= \"a\"{100000}");
  EXPECT_NE(e.find("repetition count is over"), std::string::npos) << e;
  GbnfLimits small;
  small.max_elements = 500;
  auto g = parse_gbnf("root ::= (\"ab\"{0,100}){0,100}", small);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("more than 500 elements"), std::string::npos);
}

// Each 'x' doubles the distinct stacks (a 'y' or a 'z' owed per level): the matcher stops at its
// bound instead of growing without end.
TEST(Gbnf, StackExplosionIsAnErrorNotAHang) {
  auto g = parse_gbnf("root ::= \"x\" root \"y\" | \"x\" root \"z\" | \"\"");
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  GrammarMatcher m(g.value(), MatcherLimits{});
  MatchState s;
  ASSERT_EQ(m.initial(s), StepResult::kOk);
  StepResult r = StepResult::kOk;
  int n = 0;
  for (; n < 100 && r == StepResult::kOk; ++n) {
    MatchState next;
    r = m.advance(s, 'x', next);
    s = std::move(next);
  }
  EXPECT_EQ(r, StepResult::kTooManyStacks);
  EXPECT_LT(n, 20);
  // Unbounded nesting hits the depth bound.
  auto deep = parse_gbnf("root ::= \"(\" root \")\" | \"\"");
  ASSERT_TRUE(deep.is_ok());
  GrammarMatcher md(deep.value(), MatcherLimits{.max_stacks = 512, .max_stack_depth = 64});
  ASSERT_EQ(md.initial(s), StepResult::kOk);
  MatchState out;
  EXPECT_EQ(md.advance(s, std::string(50, '('), out), StepResult::kOk);
  EXPECT_EQ(md.advance(s, std::string(100, '('), out), StepResult::kTooManyStacks);
}

std::string repeated(std::string_view piece, size_t n) {
  std::string out;
  for (size_t i = 0; i < n; ++i) out += piece;
  return out;
}

// The issue's hostile grammars: each is refused naming its limit, quickly (no recursion per
// group, no pass per rule).
TEST(Gbnf, HostileGrammarsAreRefusedNamingTheLimit) {
  const std::string deep = "root ::= " + repeated("(", 50000) + "\"a\"" + repeated(")", 50000);
  EXPECT_EQ(error_of(deep), fmt::format("[grammar] gbnf:1:{}: groups nested deeper than the "
                                        "limit of {}",
                                        10 + limits::kMaxGbnfNesting, limits::kMaxGbnfNesting));
  // 100,000 groups in 600 KB: each makes a rule.
  const std::string many = "root ::= " + repeated("(\"a\") ", 100000);
  EXPECT_NE(error_of(many).find(fmt::format("the grammar has more than {} rules (named and made "
                                            "by groups and repetitions)",
                                            limits::kMaxGbnfRules)),
            std::string::npos)
      << error_of(many);
  const std::string big = "root ::= \"" + std::string(limits::kMaxGbnfBytes, 'a') + "\"";
  EXPECT_EQ(error_of(big), fmt::format("[grammar] gbnf:1:1: the grammar is {} bytes, over the "
                                       "limit of {}",
                                       big.size(), limits::kMaxGbnfBytes));
}

TEST(Gbnf, NestingUpToTheLimitParsesAndMatches) {
  const int n = limits::kMaxGbnfNesting;
  const std::string gbnf = "root ::= " + repeated("(", n) + "\"a\"" + repeated(")", n);
  expect_sentences(gbnf, {"a"}, {"", "aa"});
}

// A chain of rules as long as the rule limit allows, each reaching the next at its left edge:
// the nullable and left-recursion checks and the matcher's expansion walk it without recursing
// (and in linear time), and a cycle closed at its far end is still found.
TEST(Gbnf, LongRuleChainsAreWalkedWithoutRecursion) {
  const size_t n = limits::kMaxGbnfRules - 1;
  std::string chain = "root ::= r0\n";
  for (size_t i = 0; i + 1 < n; ++i) chain += fmt::format("r{} ::= r{}\n", i, i + 1);
  GbnfLimits roomy;  // the chain's text is over the size limit
  roomy.max_bytes = 2 * chain.size();
  auto g = parse_gbnf(chain + fmt::format("r{} ::= \"a\" | \"\"\n", n - 1), roomy);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  GrammarMatcher m(g.value(), MatcherLimits{});
  MatchState s;
  MatchState out;
  ASSERT_EQ(m.initial(s), StepResult::kOk);
  EXPECT_TRUE(GrammarMatcher::can_end(s));
  ASSERT_EQ(m.advance(s, "a", out), StepResult::kOk);
  EXPECT_TRUE(GrammarMatcher::only_end(out));

  auto cycle = parse_gbnf(chain + fmt::format("r{} ::= \"a\" | root\n", n - 1), roomy);
  ASSERT_FALSE(cycle.is_ok());
  EXPECT_NE(cycle.status().message().find(fmt::format(
                "is left-recursive (root -> r0 -> r1 -> r2 -> r3 -> r4 -> … ({} more) -> r{} -> "
                "r{} -> r{} -> r{} -> r{} -> r{} -> root) without consuming a character",
                n + 1 - 12, n - 6, n - 5, n - 4, n - 3, n - 2, n - 1)),
            std::string::npos)
      << cycle.status().message().substr(0, 300);

  // Each rule of the chain also offers a character: the matcher stops at its stack bound.
  std::string wide = "root ::= r0\n";
  for (size_t i = 0; i + 1 < n; ++i) wide += fmt::format("r{} ::= r{} | \"a\"\n", i, i + 1);
  auto w = parse_gbnf(wide + fmt::format("r{} ::= \"a\"\n", n - 1), roomy);
  ASSERT_TRUE(w.is_ok()) << w.status().message();
  EXPECT_EQ(GrammarMatcher(w.value(), MatcherLimits{}).initial(s), StepResult::kTooManyStacks);
}

}  // namespace
}  // namespace minfer::grammar
