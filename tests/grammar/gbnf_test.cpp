// GBNF: parse errors name line and column for each kind of mistake; every construct accepts and
// rejects the strings it should (repetition bounds, negated classes, '.' on multi-byte UTF-8,
// escapes); an exploding grammar is an error, not a hang.
#include "grammar/gbnf.h"

#include <gtest/gtest.h>

#include <string>

#include "grammar/grammar_matcher.h"

namespace minfer::grammar {
namespace {

// Whether `text` is a whole sentence of the grammar.
bool matches(const std::string& gbnf, std::string_view text) {
  auto g = parse_gbnf(gbnf);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  if (!g.is_ok()) return false;
  GrammarMatcher m(g.value(), MatcherLimits{});
  MatchState s;
  if (m.initial(s) != StepResult::kOk) return false;
  MatchState out;
  if (m.advance(s, text, out) != StepResult::kOk) return false;
  return GrammarMatcher::can_end(out);
}

// Whether `text` can still be continued into a sentence (every byte accepted).
bool prefix_ok(const std::string& gbnf, std::string_view text) {
  auto g = parse_gbnf(gbnf);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  GrammarMatcher m(g.value(), MatcherLimits{});
  MatchState s;
  EXPECT_EQ(m.initial(s), StepResult::kOk);
  MatchState out;
  return m.advance(s, text, out) == StepResult::kOk;
}

std::string error_of(const std::string& gbnf) {
  auto g = parse_gbnf(gbnf);
  return g.is_ok() ? std::string("(parsed)") : g.status().message();
}

TEST(Gbnf, ParseErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of("root ::= \"a\"\nx ::= [a-z"),
            "[grammar] gbnf:2:11: expected ']' to close the character class");
  EXPECT_EQ(error_of("root ::= \"abc"), "[grammar] gbnf:1:14: expected '\"' to close the string");
  EXPECT_EQ(error_of("root ::= (\"a\" | \"b\"\n"),
            "[grammar] gbnf:2:1: expected ')' to close the group opened at 1:10");
  EXPECT_EQ(error_of("root ::= \"a\" )"), "[grammar] gbnf:1:14: unexpected ')': no group is open");
  EXPECT_EQ(error_of("root = \"a\""),
            "[grammar] gbnf:1:6: expected '::=' after the rule name 'root'");
  EXPECT_EQ(error_of("root ::= item\n"), "[grammar] gbnf:1:10: undefined rule 'item'");
  EXPECT_EQ(error_of("item ::= \"a\"\n"), "[grammar] gbnf:2:1: expected a rule named 'root'");
  EXPECT_EQ(error_of(""), "[grammar] gbnf:1:1: expected a rule named 'root'");
  EXPECT_EQ(error_of("root ::= \"\\q\""), "[grammar] gbnf:1:11: unknown escape '\\q'");
  EXPECT_EQ(error_of("root ::= \"\\x4\""),
            "[grammar] gbnf:1:14: expected 2 hex digits in the escape");
  EXPECT_EQ(error_of("root ::= [z-a]"),
            "[grammar] gbnf:1:11: range U+007A-U+0061 ends before it starts");
  EXPECT_EQ(error_of("root ::= * \"a\""), "[grammar] gbnf:1:10: expected an item before '*'");
  EXPECT_EQ(error_of("root ::= \"a\"{2"),
            "[grammar] gbnf:1:15: expected '}' to close the repetition opened at 1:13");
  EXPECT_EQ(error_of("root ::= \"a\"{3,2}"), "[grammar] gbnf:1:13: repetition {3,2}: max < min");
  EXPECT_EQ(error_of("root ::= \"a\"{x}"),
            "[grammar] gbnf:1:14: expected a number in the repetition");
  EXPECT_EQ(error_of("root ::= \"a\" @"),
            "[grammar] gbnf:1:14: unexpected '@': expected a string, a character class, a rule "
            "name, '(', '.', a repetition or '|'");
  EXPECT_EQ(error_of("root ::= \"a\"\nroot ::= \"b\""),
            "[grammar] gbnf:2:1: rule 'root' is defined twice (first at 1:1)");
  EXPECT_EQ(error_of("::= \"a\""), "[grammar] gbnf:1:1: expected a rule name");
  // Columns count characters: 'é' is one.
  EXPECT_EQ(error_of("root ::= \"é\" [a"),
            "[grammar] gbnf:1:16: expected ']' to close the character class");
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

TEST(Gbnf, StringsAlternativesGroupsAndReferences) {
  const std::string g =
      "root ::= greeting \" \" (\"world\" | name)\ngreeting ::= \"hello\" | \"hi\"\n"
      "name ::= [A-Z] [a-z]*";
  EXPECT_TRUE(matches(g, "hello world"));
  EXPECT_TRUE(matches(g, "hi Bob"));
  EXPECT_FALSE(matches(g, "hi bob"));
  EXPECT_FALSE(matches(g, "hey world"));
  EXPECT_FALSE(matches(g, "hello"));
  EXPECT_TRUE(prefix_ok(g, "hello"));
  EXPECT_FALSE(prefix_ok(g, "hello!"));
}

TEST(Gbnf, RepetitionBounds) {
  EXPECT_TRUE(matches("root ::= \"a\"*", ""));
  EXPECT_TRUE(matches("root ::= \"a\"*", "aaaa"));
  EXPECT_FALSE(matches("root ::= \"a\"+", ""));
  EXPECT_TRUE(matches("root ::= \"a\"+", "a"));
  EXPECT_TRUE(matches("root ::= \"a\"? \"b\"", "b"));
  EXPECT_TRUE(matches("root ::= \"a\"? \"b\"", "ab"));
  EXPECT_FALSE(matches("root ::= \"a\"? \"b\"", "aab"));
  for (int n = 0; n <= 6; ++n) {
    const std::string text(static_cast<size_t>(n), 'x');
    EXPECT_EQ(matches("root ::= \"x\"{3}", text), n == 3) << n;
    EXPECT_EQ(matches("root ::= \"x\"{2,}", text), n >= 2) << n;
    EXPECT_EQ(matches("root ::= \"x\"{2,4}", text), n >= 2 && n <= 4) << n;
    EXPECT_EQ(matches("root ::= \"x\"{0,1}", text), n <= 1) << n;
    EXPECT_EQ(matches("root ::= (\"x\" \"x\"){1,2}", text), n == 2 || n == 4) << n;
  }
  EXPECT_FALSE(prefix_ok("root ::= [0-9]{1,3}", "1234"));
  EXPECT_TRUE(matches("root ::= \"ab\"{ 2 , 3 }", "ababab"));
}

TEST(Gbnf, CharacterClassesAndDot) {
  EXPECT_TRUE(matches("root ::= [a-z0-9_]+", "abc_09"));
  EXPECT_FALSE(matches("root ::= [a-z0-9_]+", "abC"));
  EXPECT_TRUE(matches("root ::= [^\"\\\\]*", "no quotes é 漢"));
  EXPECT_FALSE(matches("root ::= [^\"\\\\]*", "a\"b"));
  EXPECT_FALSE(matches("root ::= [^\"\\\\]*", "a\\b"));
  EXPECT_TRUE(matches("root ::= [^a-c]", "d"));
  EXPECT_FALSE(matches("root ::= [^a-c]", "b"));
  // '.' is one code point, whatever its UTF-8 length.
  for (const char* one : {"a", "é", "漢", "😀"}) {
    EXPECT_TRUE(matches("root ::= .", one)) << one;
    EXPECT_FALSE(matches("root ::= . .", one)) << one;
  }
  EXPECT_TRUE(matches("root ::= . \"!\"", "😀!"));
  // Ranges of non-ASCII code points.
  EXPECT_TRUE(matches("root ::= [α-ω]+", "λόγος") == false);  // ό is outside α-ω
  EXPECT_TRUE(matches("root ::= [α-ω]+", "λαμβδα"));
  EXPECT_TRUE(matches("root ::= [\\u4e00-\\u9fff]+", "漢字"));
  EXPECT_TRUE(matches("root ::= [\\]\\[-]+", "]-["));
  // Invalid UTF-8 never matches '.'.
  EXPECT_FALSE(prefix_ok("root ::= .*", "\xC0\x80"));
  EXPECT_FALSE(prefix_ok("root ::= .*", "\xED\xA0\x80"));  // a surrogate
  // A lead byte alone is judged by the code points it can still become.
  EXPECT_FALSE(prefix_ok("root ::= [ -~]", "\xF0"));
  EXPECT_FALSE(prefix_ok("root ::= [a-z]", "\xC3"));
  EXPECT_FALSE(prefix_ok("root ::= [\\u0080-\\u07FF]", "\xE0"));
  EXPECT_TRUE(prefix_ok("root ::= [\\u0080-\\u07FF]", "\xDF"));
  EXPECT_FALSE(prefix_ok("root ::= [\\u0800-\\u0FFF]", "\xE1"));
  EXPECT_TRUE(prefix_ok("root ::= [\\u0800-\\u0FFF]", "\xE0\xBF"));
  EXPECT_FALSE(prefix_ok("root ::= [\\u0800-\\u0FFF]", "\xE0\xBF\xC0"));
}

TEST(Gbnf, Escapes) {
  EXPECT_TRUE(matches("root ::= \"\\n\\t\\r\\\\\\\"\"", "\n\t\r\\\""));
  EXPECT_TRUE(matches("root ::= \"\\x41\\u00e9\\U0001F600\"", "Aé😀"));
  EXPECT_TRUE(matches("root ::= [\\x30-\\x39]", "7"));
  EXPECT_TRUE(matches("root ::= \"\\[\\]\"", "[]"));
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
  EXPECT_TRUE(matches(g, "a!"));
  EXPECT_TRUE(matches(g, "b?"));
  EXPECT_TRUE(matches(g, "c"));
  EXPECT_FALSE(matches(g, "c!"));
  EXPECT_TRUE(matches("root ::=\n  \"x\"", "x"));
}

TEST(Gbnf, EmptyAlternativesAndNullableRules) {
  EXPECT_TRUE(matches("root ::= \"a\" | ", ""));
  EXPECT_TRUE(matches("root ::= x x \"b\"\nx ::= \"a\"?", "ab"));
  EXPECT_TRUE(matches("root ::= x x \"b\"\nx ::= \"a\"?", "b"));
  EXPECT_FALSE(matches("root ::= x x \"b\"\nx ::= \"a\"?", "aaab"));
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

}  // namespace
}  // namespace minfer::grammar
