// tool_choice required / named in harmony and Gemma 4 (engine/tool_grammar.h,
// engine/gemma4_grammar.h): the grammar writes calls in the model's own format, its sentences
// parse back (channel_reply.h) into arguments that follow the schema, and what the schema rules
// out is not a sentence.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "engine/reply_parser.h"
#include "tool_grammar_test_util.h"

namespace minfer::engine::channel_grammar_test {
namespace {

using chat::ToolCallFormat;
using test::accepts;
using test::tool_request;
using Json = nlohmann::json;

const std::string kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                   "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                   "tags": {"type": "array", "items": {"type": "string"}},
                   "at": {"type": "object", "properties": {"lat": {"type": "number"}},
                          "required": ["lat"]}},
    "required": ["city", "days"]}}},
  {"type": "function", "function": {"name": "now", "parameters": {"type": "object",
    "properties": {}}}}])";

// The calls of `reply` in `format`.
std::vector<ToolCall> calls_of(const std::string& reply, ToolCallFormat format) {
  ReplyParserOptions o;
  o.tool_calls = format;
  o.channels = format == ToolCallFormat::kHarmony ? chat::ChannelFormat::kHarmony
                                                  : chat::ChannelFormat::kGemma4;
  o.extract_reasoning = true;
  o.id_seed = 3;
  ReplyParser parser(o);
  std::vector<ToolCall> calls;
  append_tool_calls(calls, parser.push(reply).tool_calls);
  append_tool_calls(calls, parser.finish().tool_calls);
  return calls;
}

TEST(HarmonyToolGrammar, RequiredIsOneCallInTheCommentaryChannel) {
  Result<ToolCallGrammar> g =
      tool_call_grammar(tool_request(ToolCallFormat::kHarmony, ToolChoice::kRequired, kTools));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_TRUE(g->triggers.empty());
  EXPECT_EQ(g->forced_prefix, "<|channel|>commentary to=functions.");
  const std::string call =
      "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>"
      "{\"city\": \"Paris\", \"days\": 2}";
  EXPECT_TRUE(accepts(*g, call));
  EXPECT_TRUE(accepts(*g, "<|channel|>commentary to=functions.now <|constrain|>json<|message|>{}"));
  EXPECT_FALSE(accepts(*g, call + call));  // <|call|> ends the reply after one call
  EXPECT_FALSE(accepts(*g,
                       "<|channel|>commentary to=functions.get_weather <|constrain|>json"
                       "<|message|>{\"city\": \"Paris\"}"));  // days is required
  EXPECT_FALSE(accepts(*g, "<|channel|>final<|message|>Hi"));
  const std::vector<ToolCall> calls = calls_of(call, ToolCallFormat::kHarmony);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(calls[0].arguments), Json::parse(R"({"city": "Paris", "days": 2})"));
}

TEST(HarmonyToolGrammar, NamedWritesTheHeaderAndAutoIsFree) {
  Result<ToolCallGrammar> g = tool_call_grammar(
      tool_request(ToolCallFormat::kHarmony, ToolChoice::kFunction, kTools, true, "now"));
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->forced_prefix,
            "<|channel|>commentary to=functions.now <|constrain|>json<|message|>");
  EXPECT_TRUE(accepts(*g, g->forced_prefix + "{}"));
  EXPECT_FALSE(accepts(*g,
                       "<|channel|>commentary to=functions.get_weather <|constrain|>json"
                       "<|message|>{\"city\": \"P\", \"days\": 1}"));
  Result<ToolCallGrammar> a =
      tool_call_grammar(tool_request(ToolCallFormat::kHarmony, ToolChoice::kAuto, kTools));
  ASSERT_TRUE(a.is_ok());
  EXPECT_TRUE(a->gbnf.empty());
}

TEST(Gemma4ToolGrammar, RequiredCallsInGemmasSyntax) {
  Result<ToolCallGrammar> g =
      tool_call_grammar(tool_request(ToolCallFormat::kGemma4, ToolChoice::kRequired, kTools));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->forced_prefix, "<|tool_call>call:");
  // Keys in sorted order (the template's dictsort), bare; strings in <|"|>.
  const std::string weather =
      "<|tool_call>call:get_weather{at:{lat:48.5},city:<|\"|>Saint <b> Étienne<|\"|>,days:3,"
      "tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>],unit:<|\"|>celsius<|\"|>}<tool_call|>";
  const std::string minimal =
      "<|tool_call>call:get_weather{city:<|\"|>X<|\"|>,days:-1}<tool_call|>";
  const std::string now = "<|tool_call>call:now{}<tool_call|>";
  EXPECT_TRUE(accepts(*g, weather));
  EXPECT_TRUE(accepts(*g, minimal));
  EXPECT_TRUE(accepts(*g, now));
  EXPECT_TRUE(accepts(*g, minimal + now));
  EXPECT_FALSE(accepts(*g, "<|tool_call>call:get_weather{city:<|\"|>X<|\"|>}<tool_call|>"));
  EXPECT_FALSE(accepts(*g, "<|tool_call>call:get_weather{days:1,city:<|\"|>X<|\"|>}<tool_call|>"));
  EXPECT_FALSE(
      accepts(*g,
              "<|tool_call>call:get_weather{city:<|\"|>X<|\"|>,days:1,unit:<|\"|>kelvin<|\"|>}"
              "<tool_call|>"));
  EXPECT_FALSE(
      accepts(*g, "<|tool_call>call:get_weather{city:<|\"|>a<|b<|\"|>,days:1}<tool_call|>"));
  EXPECT_FALSE(accepts(*g, "<|tool_call>call:other{}<tool_call|>"));
  const std::vector<ToolCall> calls = calls_of(weather + now, ToolCallFormat::kGemma4);
  ASSERT_EQ(calls.size(), 2u);
  EXPECT_EQ(Json::parse(calls[0].arguments),
            Json::parse(R"({"at": {"lat": 48.5}, "city": "Saint <b> Étienne", "days": 3,
                            "tags": ["a", "b"], "unit": "celsius"})"));
  EXPECT_EQ(calls[1].arguments, "{}");
}

TEST(Gemma4ToolGrammar, NamedSingleAutoLazyAndUnsupportedKeywords) {
  Result<ToolCallGrammar> g = tool_call_grammar(
      tool_request(ToolCallFormat::kGemma4, ToolChoice::kFunction, kTools, false, "now"));
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->forced_prefix, "<|tool_call>call:now");
  EXPECT_TRUE(accepts(*g, "<|tool_call>call:now{}<tool_call|>"));
  EXPECT_FALSE(accepts(*g, "<|tool_call>call:now{}<tool_call|><|tool_call>call:now{}<tool_call|>"));
  Result<ToolCallGrammar> a =
      tool_call_grammar(tool_request(ToolCallFormat::kGemma4, ToolChoice::kAuto, kTools));
  ASSERT_TRUE(a.is_ok());
  EXPECT_EQ(a->triggers, std::vector<std::string>{"<|tool_call>"});
  const std::string patterned = R"([{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"s": {"type": "string", "pattern": "^a$"}}}}}])";
  Result<ToolCallGrammar> bad =
      tool_call_grammar(tool_request(ToolCallFormat::kGemma4, ToolChoice::kRequired, patterned));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.status().message().find("function 'f'"), std::string::npos);
  EXPECT_NE(bad.status().message().find("'pattern'"), std::string::npos);
}

TEST(Gemma4ToolGrammar, LengthsRangesAndItemCountsBoundTheCall) {
  const std::string bounded = R"([{"type": "function", "function": {"name": "f", "parameters":
      {"type": "object", "properties": {"s": {"type": "string", "minLength": 1, "maxLength": 3},
       "n": {"type": "integer", "minimum": 1, "maximum": 7},
       "v": {"type": "array", "items": {"type": "number"}, "minItems": 1, "maxItems": 2}},
       "required": ["n", "s", "v"]}}}])";
  Result<ToolCallGrammar> g =
      tool_call_grammar(tool_request(ToolCallFormat::kGemma4, ToolChoice::kRequired, bounded));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  auto call = [](const std::string& n, const std::string& s, const std::string& v) {
    return "<|tool_call>call:f{n:" + n + ",s:<|\"|>" + s + "<|\"|>,v:[" + v + "]}<tool_call|>";
  };
  EXPECT_TRUE(accepts(*g, call("7", "abc", "1.5,2")));
  EXPECT_TRUE(accepts(*g, call("1", "a", "0")));
  EXPECT_FALSE(accepts(*g, call("8", "abc", "1")));
  EXPECT_FALSE(accepts(*g, call("0", "abc", "1")));
  EXPECT_FALSE(accepts(*g, call("3", "abcd", "1")));
  EXPECT_FALSE(accepts(*g, call("3", "", "1")));
  EXPECT_FALSE(accepts(*g, call("3", "a<", "1")));
  EXPECT_FALSE(accepts(*g, call("3", "a", "")));
  EXPECT_FALSE(accepts(*g, call("3", "a", "1,2,3")));
  const std::vector<ToolCall> calls = calls_of(call("7", "abc", "1.5,2"), ToolCallFormat::kGemma4);
  ASSERT_EQ(calls.size(), 1u);
  EXPECT_EQ(Json::parse(calls[0].arguments), Json::parse(R"({"n": 7, "s": "abc", "v": [1.5, 2]})"));
}

}  // namespace
}  // namespace minfer::engine::channel_grammar_test
