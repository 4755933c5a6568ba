// The tool-call grammar (engine/tool_grammar.h): calls in the model's own format whose names and
// arguments follow the request's tools, as tool_choice and parallel_tool_calls ask.
#include "engine/tool_grammar.h"

#include <gtest/gtest.h>

#include <string>

#include "tool_grammar_test_util.h"

namespace minfer::engine {
namespace {

constexpr const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string", "maxLength": 20},
                   "unit": {"enum": ["c", "f"]}}, "required": ["city", "unit"],
    "additionalProperties": false}}},
  {"type": "function", "function": {"name": "add", "parameters": {"type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"],
    "additionalProperties": false}}}])";

using test::accepts;

ReplyRequest request(chat::ToolCallFormat format, ToolChoice choice, bool parallel = true,
                     const std::string& name = "") {
  return test::tool_request(format, choice, kTools, parallel, name);
}

const std::string kWeather =
    "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"unit\": "
    "\"c\"}}\n</tool_call>";
const std::string kAdd =
    "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": -2}}\n</tool_call>";

TEST(ToolGrammar, HermesAutoIsLazyFromTheCallOpening) {
  Result<ToolCallGrammar> g =
      tool_call_grammar(request(chat::ToolCallFormat::kHermes, ToolChoice::kAuto));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_EQ(g->triggers, std::vector<std::string>{"<tool_call>"});
  EXPECT_TRUE(accepts(*g, kWeather));
  EXPECT_TRUE(accepts(*g, kWeather + "\n" + kAdd));
  EXPECT_FALSE(accepts(*g, "<tool_call>\n{\"name\": \"nope\", \"arguments\": {}}\n</tool_call>"));
  EXPECT_FALSE(accepts(*g,
                       "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": \"1\", "
                       "\"b\": 2}}\n</tool_call>"));
  EXPECT_FALSE(accepts(*g,
                       "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
                       "\"Paris\", \"unit\": \"k\"}}\n</tool_call>"));
}

TEST(ToolGrammar, RequiredNamedAndSingleCalls) {
  Result<ToolCallGrammar> required =
      tool_call_grammar(request(chat::ToolCallFormat::kHermes, ToolChoice::kRequired));
  ASSERT_TRUE(required.is_ok());
  EXPECT_TRUE(required->triggers.empty());
  EXPECT_TRUE(accepts(*required, kAdd));
  EXPECT_FALSE(accepts(*required, "Sure. " + kAdd));
  EXPECT_FALSE(accepts(*required, ""));

  Result<ToolCallGrammar> named =
      tool_call_grammar(request(chat::ToolCallFormat::kHermes, ToolChoice::kFunction, true, "add"));
  ASSERT_TRUE(named.is_ok());
  EXPECT_TRUE(accepts(*named, kAdd));
  EXPECT_FALSE(accepts(*named, kWeather));

  Result<ToolCallGrammar> single =
      tool_call_grammar(request(chat::ToolCallFormat::kHermes, ToolChoice::kRequired, false));
  ASSERT_TRUE(single.is_ok());
  EXPECT_TRUE(accepts(*single, kAdd));
  EXPECT_FALSE(accepts(*single, kAdd + "\n" + kAdd));

  EXPECT_FALSE(tool_call_grammar(
                   request(chat::ToolCallFormat::kHermes, ToolChoice::kFunction, true, "missing"))
                   .is_ok());
}

TEST(ToolGrammar, Llama3IsOneCallOrTextThatDoesNotOpenAnObject) {
  Result<ToolCallGrammar> g =
      tool_call_grammar(request(chat::ToolCallFormat::kLlama3Json, ToolChoice::kAuto));
  ASSERT_TRUE(g.is_ok());
  EXPECT_TRUE(g->triggers.empty());
  const std::string call = "{\"name\": \"add\", \"parameters\": {\"a\": 3, \"b\": 4}}";
  EXPECT_TRUE(accepts(*g, call));
  EXPECT_TRUE(accepts(*g, "It is sunny {really}."));
  EXPECT_TRUE(accepts(*g, ""));
  EXPECT_FALSE(accepts(*g, "{\"name\": \"add\", \"parameters\": {\"a\": 3}}"));
  EXPECT_FALSE(accepts(*g, call + " and more"));
}

TEST(ToolGrammar, NoConstraintWithoutToolsOrWithChoiceNone) {
  EXPECT_TRUE(
      tool_call_grammar(request(chat::ToolCallFormat::kHermes, ToolChoice::kNone))->gbnf.empty());
  ReplyRequest no_format = request(chat::ToolCallFormat::kNone, ToolChoice::kRequired);
  EXPECT_TRUE(tool_call_grammar(no_format)->gbnf.empty());
}

TEST(ToolGrammar, AnUnsupportedParameterKeywordNamesTheFunction) {
  ReplyRequest r = request(chat::ToolCallFormat::kHermes, ToolChoice::kAuto);
  r.tools = R"([{"type":"function","function":{"name":"f","parameters":{"not":{}}}}])";
  Result<ToolCallGrammar> g = tool_call_grammar(r);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("function 'f'"), std::string::npos);
  EXPECT_NE(g.status().message().find("'not'"), std::string::npos);
}

}  // namespace
}  // namespace minfer::engine
