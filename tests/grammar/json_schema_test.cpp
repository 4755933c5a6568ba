// JSON Schema → GBNF (grammar/json_schema.h): the pieces checked exhaustively where they can be
// (integer ranges against every integer of a window), and the errors a schema gets.
// GCC 12 reports a false maybe-uninitialized inside <regex> when it inlines under -O2
// -fsanitize (the ASan build); the warning says nothing about this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

#include <fmt/format.h>

#include "core/input_limits.h"
#include "grammar/gbnf.h"
#include "grammar/grammar_matcher.h"
#include "grammar/json_schema_parts.h"

namespace minfer::grammar {
namespace {

using Json = nlohmann::ordered_json;

// The GBNF of integer_range (literals, digit classes, {n}, groups and |) as an ECMAScript regex.
std::string integer_gbnf_as_regex(const std::string& gbnf) {
  std::string out;
  bool in_literal = false;
  for (const char c : gbnf) {
    if (c == '"') {
      in_literal = !in_literal;
    } else if (in_literal && c == '-') {
      out += "\\-";
    } else if (c != ' ') {
      out += c;
    }
  }
  return out;
}

void expect_integers(std::optional<int64_t> lo, std::optional<int64_t> hi, int64_t from,
                     int64_t to) {
  const std::string gbnf = integer_range(lo, hi);
  const std::regex re(integer_gbnf_as_regex(gbnf));
  for (int64_t v = from; v <= to; ++v) {
    const bool inside = (!lo || v >= *lo) && (!hi || v <= *hi);
    EXPECT_EQ(std::regex_match(std::to_string(v), re), inside) << v << " in " << gbnf;
  }
  EXPECT_FALSE(std::regex_match("-0", re)) << gbnf;
  EXPECT_FALSE(std::regex_match("007", re)) << gbnf;
}

TEST(JsonSchemaIntegers, RangesHoldExactlyTheirIntegers) {
  expect_integers(0, 9, -30, 30);
  expect_integers(5, 123, -200, 1200);
  expect_integers(-123, 4567, -2000, 6000);
  expect_integers(-4567, -12, -6000, 100);
  expect_integers(1000, 1000, 900, 1100);
  expect_integers(19, 2001, 0, 2500);
  expect_integers(std::nullopt, 42, -300, 300);
  expect_integers(-42, std::nullopt, -300, 3000);
  expect_integers(1, std::nullopt, -10, 1200);
}

// An unset side stops at 15 digits (every such integer is exact in a double); a bound the schema
// sets is honoured to 19 digits.
TEST(JsonSchemaIntegers, UnboundedSidesStopAtFifteenDigits) {
  const std::regex re(integer_gbnf_as_regex(integer_range(0, std::nullopt)));
  EXPECT_TRUE(std::regex_match("999999999999999", re));
  EXPECT_FALSE(std::regex_match("1000000000000000", re));
  const std::regex neg(integer_gbnf_as_regex(integer_range(std::nullopt, -1)));
  EXPECT_TRUE(std::regex_match("-999999999999999", neg));
  EXPECT_FALSE(std::regex_match("-1000000000000000", neg));
  EXPECT_FALSE(std::regex_match("0", neg));
  const std::regex wide(integer_gbnf_as_regex(integer_range(0, 9'000'000'000'000'000'000)));
  EXPECT_TRUE(std::regex_match("8999999999999999999", wide));
  EXPECT_FALSE(std::regex_match("9000000000000000001", wide));
}

TEST(JsonSchemaPattern, ConstructsOutsideTheSubsetAreNamed) {
  for (const auto& [pattern, what] : std::initializer_list<std::pair<const char*, const char*>>{
           {"a(?=b)", "lookaround"},
           {"(a)\\1", "escape '\\1'"},
           {"a^b", "anchor"},
           {"[a-", "expected ']'"},
           {"(ab", "expected ')'"},
           {"ab)", "unbalanced"},
           {"*a", "quantifier with nothing"},
           {"a**", "quantifier after a quantifier"},
           {"[z-a]", "end comes before"}}) {
    Result<std::string> r = pattern_to_gbnf(pattern);
    ASSERT_FALSE(r.is_ok()) << pattern;
    EXPECT_NE(r.status().message().find(what), std::string::npos)
        << pattern << ": " << r.status().message();
  }
}

TEST(JsonSchemaPattern, GroupsNestedPastTheLimitAreAnError) {
  const int n = limits::kMaxPatternNesting;
  EXPECT_TRUE(pattern_to_gbnf(std::string(n, '(') + "a" + std::string(n, ')')).is_ok());
  for (const int depth : {n + 1, 100000}) {
    Result<std::string> r =
        pattern_to_gbnf(std::string(depth, '(') + "a" + std::string(depth, ')'));
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(
        r.status().message(),
        fmt::format("pattern: groups nested deeper than the limit of {} at offset {}", n, n + 1));
  }
}

// The deepest schema the limit allows compiles, and its grammar (with a pattern as deep as its
// limit at the bottom) stays within the GBNF nesting limit.
TEST(JsonSchemaErrors, TheDeepestSchemaAndPatternCompile) {
  const int n = limits::kMaxSchemaDepth;
  const std::string leaf = fmt::format(R"({{"type":"string","pattern":"^{}a{}$"}})",
                                       std::string(limits::kMaxPatternNesting, '('),
                                       std::string(limits::kMaxPatternNesting, ')'));
  std::string schema = leaf;
  for (int i = 0; i < n; ++i) schema = R"({"type":"array","items":)" + schema + "}";
  Result<std::string> gbnf = json_schema_to_gbnf(Json::parse(schema));
  ASSERT_TRUE(gbnf.is_ok()) << gbnf.status().message();
  auto g = parse_gbnf(*gbnf);
  EXPECT_TRUE(g.is_ok()) << g.status().message();
  schema = R"({"type":"array","items":)" + schema + "}";
  Result<std::string> deeper = json_schema_to_gbnf(Json::parse(schema));
  ASSERT_FALSE(deeper.is_ok());
  EXPECT_NE(deeper.status().message().find(fmt::format("nesting deeper than the limit of {}", n)),
            std::string::npos);
}

TEST(JsonSchemaErrors, UnsupportedKeywordsAreNamedWithTheirPlace) {
  const auto message = [](const char* schema) {
    Result<std::string> r = json_schema_to_gbnf(Json::parse(schema));
    return r.is_ok() ? std::string("ok") : r.status().message();
  };
  EXPECT_NE(message(R"({"type":"object","properties":{"a":{"not":{"type":"string"}}}})")
                .find("unsupported JSON Schema keyword 'not' at #/properties/a"),
            std::string::npos);
  EXPECT_NE(message(R"({"type":"array","uniqueItems":true})").find("'uniqueItems'"),
            std::string::npos);
  EXPECT_NE(message(R"({"type":"number","minimum":1.5})").find("'minimum' on a number"),
            std::string::npos);
  EXPECT_NE(message(R"({"type":"string","format":"email"})").find("format \"email\""),
            std::string::npos);
  EXPECT_NE(message(R"({"$ref":"#/$defs/missing"})").find("points at nothing"), std::string::npos);
  EXPECT_NE(message(R"({"$ref":"https://example.com/s.json"})").find("only references into"),
            std::string::npos);
  EXPECT_NE(message(R"({"type":"integer","minimum":5,"maximum":4})").find("no integer"),
            std::string::npos);
  EXPECT_NE(message(R"({"type":"array","minItems":3,"maxItems":2})").find("maxItems"),
            std::string::npos);
  EXPECT_NE(message(R"({"type":"wat"})").find("unknown type 'wat'"), std::string::npos);
  EXPECT_NE(message(R"(false)").find("'false'"), std::string::npos);
  EXPECT_EQ(message(R"({"title":"t","description":"d","type":"string"})"), "ok");
}

// True when `doc` is a whole sentence of the grammar of `schema`.
bool schema_accepts(const Json& schema, const std::string& doc) {
  Result<std::string> gbnf = json_schema_to_gbnf(schema);
  EXPECT_TRUE(gbnf.is_ok()) << gbnf.status().message();
  if (!gbnf.is_ok()) return false;
  Result<std::shared_ptr<const Grammar>> grammar = parse_gbnf(*gbnf);
  EXPECT_TRUE(grammar.is_ok()) << grammar.status().message() << "\n" << *gbnf;
  if (!grammar.is_ok()) return false;
  const GrammarMatcher matcher(*grammar, MatcherLimits{});
  MatchState start, end;
  if (matcher.initial(start) != StepResult::kOk) return false;
  return matcher.advance(start, doc, end) == StepResult::kOk && GrammarMatcher::can_end(end);
}

struct SchemaCase {
  const char* schema;
  std::vector<const char*> valid;
  std::vector<const char*> invalid;
};

void check_cases(const std::vector<SchemaCase>& cases) {
  for (const SchemaCase& c : cases) {
    const Json schema = Json::parse(c.schema);
    for (const char* doc : c.valid)
      EXPECT_TRUE(schema_accepts(schema, doc)) << c.schema << " " << doc;
    for (const char* doc : c.invalid) {
      EXPECT_FALSE(schema_accepts(schema, doc)) << c.schema << " " << doc;
    }
  }
}

TEST(JsonSchemaGrammar, TypesAndTypeArrays) {
  check_cases({
      {R"({"type":"string"})", {R"("")", R"("a\"b\u00e9")", "\"\u00e9t\u00e9\""}, {"1", R"("a)"}},
      {R"({"type":"integer"})", {"0", "-12", "1234567"}, {"1.5", "01", "\"1\"", "1e3"}},
      {R"({"type":"number"})", {"0", "-1.25", "3e10", "2.5E-3"}, {".5", "1.", "+1"}},
      {R"({"type":"boolean"})", {"true", "false"}, {"1", "null"}},
      {R"({"type":"null"})", {"null"}, {"0", "\"\""}},
      {R"({"type":["string","null"]})", {"null", R"("x")"}, {"1"}},
      {R"({})", {"1", "[1,{\"a\":null}]", "\"s\""}, {"nul"}},
  });
}

TEST(JsonSchemaGrammar, ObjectsKeepTheirOrderAndRequiredMembers) {
  check_cases({
      {R"({"type":"object","properties":{"a":{"type":"integer"},"b":{"type":"string"},
           "c":{"type":"boolean"}},"required":["b"]})",
       {R"({"b":"x"})", R"({"a":1,"b":"x"})", R"({"a":1,"b":"x","c":true})",
        R"({"b":"x","c":false})", "{\n  \"a\": 1,\n  \"b\": \"x\"\n}"},
       {R"({})", R"({"a":1})", R"({"b":"x","a":1})", R"({"b":1})", R"({"b":"x","d":1})",
        R"({"a":1,,"b":"x"})", "{\n\n\"b\":\"x\"}"}},
      {R"({"type":"object","properties":{"a":{"type":"integer"}}})",
       {R"({})", R"({"a":5})", R"({ })"},
       {R"({"a":"5"})", R"({"b":5})"}},
      {R"({"type":"object","properties":{"a":{"type":"integer"}},"additionalProperties":true})",
       {R"({})", R"({"a":5,"zz":[1]})", R"({"x":null})", R"({"ab":1})", R"({"":1})"},
       {R"({"a":5,"a":6})", R"({"x":1,"a":5})"}},
      {R"({"type":"object","additionalProperties":{"type":"integer"}})",
       {R"({})", R"({"x":1,"y":2})"},
       {R"({"x":"1"})"}},
      {R"({"type":"object","properties":{"n":{"type":"string"}},"required":["n","m"]})",
       {R"({"n":"a","m":[true]})"},
       {R"({"n":"a"})"}},
  });
}

TEST(JsonSchemaGrammar, EnumConstAndAlternatives) {
  check_cases({
      {R"({"enum":["red","green",3,null]})", {R"("red")", "3", "null"}, {R"("blue")", "4"}},
      {R"({"const":{"k":[1,2]}})", {R"({"k":[1,2]})"}, {R"({"k":[1]})"}},
      {R"({"type":"string","enum":["a",1,"b"]})", {R"("a")", R"("b")"}, {"1"}},
      {R"({"anyOf":[{"type":"integer"},{"type":"string","maxLength":2}]})",
       {"12", R"("ab")"},
       {R"("abc")", "true"}},
      {R"({"oneOf":[{"const":1},{"const":2}]})", {"1", "2"}, {"3"}},
      {R"({"allOf":[{"$ref":"#/$defs/base"},{"properties":{"b":{"type":"integer"}},
           "required":["b"]}],"$defs":{"base":{"type":"object","properties":{"a":{"type":"string"}},
           "required":["a"]}}})",
       {R"({"a":"x","b":1})"},
       {R"({"a":"x"})", R"({"b":1})"}},
  });
}

TEST(JsonSchemaErrors, AllOfWhoseAdditionalPropertiesRefuseAnotherPartIsAnError) {
  Result<std::string> r = json_schema_to_gbnf(Json::parse(R"({"additionalProperties":false,
      "allOf":[{"type":"object","properties":{"a":{"type":"string"}}}]})"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("refuses property 'a'"), std::string::npos)
      << r.status().message();
}

TEST(JsonSchemaGrammar, RecursiveReferences) {
  check_cases({
      {R"({"$ref":"#/$defs/node","$defs":{"node":{"type":"object","properties":{
           "v":{"type":"integer"},"kids":{"type":"array","items":{"$ref":"#/$defs/node"}}},
           "required":["v"]}}})",
       {R"({"v":1})", R"({"v":1,"kids":[{"v":2,"kids":[]},{"v":3,"kids":[{"v":4}]}]})"},
       {R"({"v":1,"kids":[{"w":2}]})"}},
      {R"({"type":"object","properties":{"next":{"anyOf":[{"$ref":"#"},{"type":"null"}]}},
           "required":["next"]})",
       {R"({"next":null})", R"({"next":{"next":{"next":null}}})"},
       {R"({"next":{}})"}},
      {R"({"definitions":{"s":{"type":"string"}},"type":"array","items":{"$ref":"#/definitions/s"}})",
       {R"(["a","b"])"},
       {"[1]"}},
  });
}

TEST(JsonSchemaGrammar, ArraysWithTuplesAndBounds) {
  check_cases({
      {R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})",
       {"[1]", "[1,2,3]", "[ 1 , 2 ]"},
       {"[]", "[1,2,3,4]", "[\"a\"]"}},
      {R"({"type":"array","prefixItems":[{"type":"string"},{"type":"boolean"}]})",
       {"[]", R"(["a"])", R"(["a",true])"},
       {R"([true])", R"(["a",true,1])"}},
      {R"({"type":"array","prefixItems":[{"type":"string"}],"items":{"type":"integer"},
           "minItems":2})",
       {R"(["a",1])", R"(["a",1,2,3])"},
       {R"(["a"])", R"(["a","b"])"}},
      {R"({"type":"array","items":false,"prefixItems":[{"const":1}]})", {"[]", "[1]"}, {"[1,1]"}},
      {R"({"type":"array","maxItems":0})", {"[]"}, {"[1]"}},
  });
}

TEST(JsonSchemaGrammar, StringsByLengthPatternAndFormat) {
  check_cases({
      {R"({"type":"string","minLength":2,"maxLength":3})",
       {R"("ab")", R"("abc")", "\"\u00e9\u00e9\"", R"("a\n")"},
       {R"("a")", R"("abcd")"}},
      {R"({"type":"string","pattern":"^[A-Z]{2}-\\d+$"})",
       {R"("AB-1")", R"("XY-2024")"},
       {R"("AB-")", R"("ab-1")", R"("xAB-1")", R"("AB-1x")"}},
      {R"({"type":"string","pattern":"b+c"})", {R"("bc")", R"("abbbcd")"}, {R"("ac")"}},
      {R"({"type":"string","pattern":"^(?:yes|no)$"})", {R"("yes")", R"("no")"}, {R"("yesno")"}},
      {R"({"type":"string","pattern":"^[^a-c\"]*$"})",
       {R"("xyz")", R"("x\\y")"},
       {R"("xaz")", R"("x\"")"}},
      {R"({"type":"string","pattern":"^a\\.b\\\\c\"$"})", {R"("a.b\\c\"")"}, {R"("axb\\c\"")"}},
      {R"({"type":"string","format":"date"})",
       {R"("2026-12-01")"},
       {R"("2026-13-01")", R"("26-12-01")"}},
      {R"({"type":"string","format":"time"})",
       {R"("23:59:59Z")", R"("08:30:00.123+02:00")"},
       {R"("24:00:00Z")", R"("08:30")"}},
      {R"({"type":"string","format":"date-time"})",
       {R"("2026-12-01T20:27:13Z")"},
       {R"("2026-12-01 20:27:13Z")"}},
      {R"({"type":"string","format":"uuid"})",
       {R"("123e4567-e89b-12d3-a456-426614174000")"},
       {R"("123e4567e89b12d3a456426614174000")"}},
  });
}

// Numbers a double holds exactly: integers of at most 15 digits, decimals of at most 15
// significant digits (DBL_DIG), exponents of at most 2 digits; whitespace runs of at most one line
// break and 20 indent bytes.
TEST(JsonSchemaGrammar, NumbersAndWhitespaceAreBounded) {
  check_cases({
      {R"({"type":"integer"})",
       {"999999999999999", "-123456789012345"},
       {"1000000000000000", "-1234567890123456", "9223372036854775807"}},
      {R"({"type":"number"})",
       {"123456789012345", "1.23456789012345", "0.123456789012345", "-12345678901234.5", "1e99",
        "1.5E-12"},
       {"1234567890123456", "1.234567890123456", "0.1234567890123456", "123456789012345.1",
        "1e100"}},
      {R"({"type":"object","properties":{"a":{"type":"integer"}},"required":["a"]})",
       {"{\"a\":1}", "{ \"a\" : 1 }", "{\n\t\t\"a\":\n                    1\n}"},
       {"{  \"a\":1}", "{\n\n\"a\":1}", "{\"a\":\n                     1}"}},
  });
}

TEST(JsonSchemaGrammar, IntegerBounds) {
  check_cases({
      {R"({"type":"integer","minimum":-5,"maximum":120})",
       {"-5", "0", "7", "99", "120"},
       {"-6", "121", "1000", "-0"}},
      {R"({"type":"integer","exclusiveMinimum":0,"exclusiveMaximum":10})", {"1", "9"}, {"0", "10"}},
      {R"({"type":"integer","minimum":1.5})", {"2", "300"}, {"1", "0"}},
  });
}

TEST(JsonSchemaErrors, ARefCycleWithoutAnObjectIsAnErrorNotAHang) {
  Result<std::string> r = json_schema_to_gbnf(Json::parse(R"({"allOf":[{"$ref":"#/$defs/a"}],
        "$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}})"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("cycle"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace minfer::grammar
