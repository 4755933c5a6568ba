// JSON Schema → GBNF (grammar/json_schema.h): the pieces checked exhaustively where they can be
// (integer ranges against every integer of a window), and the errors a schema gets.
#include "grammar/json_schema.h"

#include <gtest/gtest.h>

#include <regex>
#include <string>

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

TEST(JsonSchemaIntegers, UnboundedSidesStopAtNineteenDigits) {
  const std::regex re(integer_gbnf_as_regex(integer_range(0, std::nullopt)));
  EXPECT_TRUE(std::regex_match("9999999999999999999", re));
  EXPECT_FALSE(std::regex_match("10000000000000000000", re));
  const std::regex neg(integer_gbnf_as_regex(integer_range(std::nullopt, -1)));
  EXPECT_TRUE(std::regex_match("-9999999999999999999", neg));
  EXPECT_FALSE(std::regex_match("0", neg));
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

TEST(JsonSchemaErrors, ARefCycleWithoutAnObjectIsAnErrorNotAHang) {
  Result<std::string> r = json_schema_to_gbnf(Json::parse(R"({"allOf":[{"$ref":"#/$defs/a"}],
        "$defs":{"a":{"$ref":"#/$defs/b"},"b":{"$ref":"#/$defs/a"}}})"));
  ASSERT_FALSE(r.is_ok());
  EXPECT_NE(r.status().message().find("cycle"), std::string::npos) << r.status().message();
}

}  // namespace
}  // namespace minfer::grammar
