// The reply parser: reasoning, content and tool calls split from streamed text in every format
// (Hermes, Llama 3 JSON, <think>), with markers split across pieces at every byte, text before a
// call kept as content, broken and cut-short calls, and a reply that starts inside reasoning.
#include "engine/reply_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "reply_parser_test_util.h"

namespace minfer::engine {
namespace {

using chat::ToolCallFormat;
using reply_test::expect_same_at_every_split;
using reply_test::parse;
using reply_test::Parsed;

ReplyParserOptions options(ToolCallFormat format, bool reasoning, bool starts_in = false) {
  ReplyParserOptions o;
  o.tool_calls = format;
  o.extract_reasoning = reasoning;
  o.starts_in_reasoning = starts_in;
  o.id_seed = 7;
  return o;
}

const std::string kHermesTwo =
    "Let me look.\n\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": "
    "\"Paris\", \"days\": [1, 2]}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
    "\"arguments\": {\"tz\": \"CET\\\"}\"}}\n</tool_call>";

TEST(ReplyParser, WithoutFormatsEverythingIsContentAsGiven) {
  const Parsed p =
      parse("<think>x</think> <tool_call>{}", options(ToolCallFormat::kNone, false), 3);
  EXPECT_EQ(p.content, "<think>x</think> <tool_call>{}");
  EXPECT_TRUE(p.calls.empty());
}

TEST(ReplyParser, HermesCallsWithTextBeforeThem) {
  const Parsed p = parse(kHermesTwo, options(ToolCallFormat::kHermes, false));
  EXPECT_EQ(p.content, "Let me look.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\": \"Paris\", \"days\": [1, 2]}");
  EXPECT_EQ(p.calls[1].name, "get_time");
  EXPECT_EQ(p.calls[1].arguments, "{\"tz\": \"CET\\\"}\"}");
  EXPECT_EQ(nlohmann::json::parse(p.calls[1].arguments)["tz"], "CET\"}");
  EXPECT_TRUE(p.calls[0].id.starts_with("call_"));
  EXPECT_EQ(p.calls[0].id.size(), 5u + 24u);
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
}

TEST(ReplyParser, HermesMarkersSplitAtEveryByte) {
  expect_same_at_every_split(kHermesTwo, options(ToolCallFormat::kHermes, false));
}

TEST(ReplyParser, ACallArrivesWholeOnceItsArgumentsClose) {
  ReplyParser parser(options(ToolCallFormat::kHermes, false));
  std::vector<ToolCallDelta> deltas;
  const std::string text = "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1, \"b\": 2}}";
  for (size_t i = 0; i < text.size(); ++i) {
    std::vector<ToolCallDelta> got = parser.push(std::string(1, text[i])).tool_calls;
    // Nothing of the call before the '}' that closes its arguments (the text's last but one).
    if (i + 2 < text.size()) {
      ASSERT_TRUE(got.empty()) << "at byte " << i;
    }
    deltas.insert(deltas.end(), got.begin(), got.end());
  }
  ASSERT_EQ(deltas.size(), 2u);
  EXPECT_EQ(deltas[0].index, 0);
  EXPECT_EQ(deltas[0].name, "f");
  EXPECT_FALSE(deltas[0].id.empty());
  EXPECT_EQ(deltas[0].arguments, "");
  EXPECT_TRUE(deltas[1].id.empty());
  EXPECT_EQ(deltas[1].arguments, "{\"a\": 1, \"b\": 2}");
}

TEST(ReplyParser, NotACallGivesItsTextBackAsContent) {
  const Parsed p = parse("a <tool_call> is a tag", options(ToolCallFormat::kHermes, false));
  EXPECT_EQ(p.content, "a<tool_call> is a tag");
  EXPECT_TRUE(p.calls.empty());
}

TEST(ReplyParser, ACallCutBeforeItsNameIsDropped) {
  const Parsed p =
      parse("ok <tool_call>\n{\"name\": \"get_w", options(ToolCallFormat::kHermes, false));
  EXPECT_EQ(p.content, "ok");
  EXPECT_TRUE(p.calls.empty());
}

TEST(ReplyParser, ACallCutShortIsDroppedAndTheCallsBeforeItStay) {
  ReplyParser parser(options(ToolCallFormat::kHermes, false));
  Parsed p;
  p.add(
      parser.push("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1}}\n</tool_call>\n"
                  "<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": [1,"));
  EXPECT_EQ(parser.n_tool_calls(), 2);
  p.add(parser.finish());
  EXPECT_EQ(parser.n_tool_calls(), 1);
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].arguments, "{\"a\": 1}");
}

TEST(ReplyParser, APieceOfAMarkerAtTheEndIsNotContent) {
  EXPECT_EQ(parse("Hi <tool_cal", options(ToolCallFormat::kHermes, false)).content, "Hi");
  const Parsed after_call =
      parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\n<tool_",
            options(ToolCallFormat::kHermes, false));
  EXPECT_EQ(after_call.content, "");
  EXPECT_EQ(after_call.calls.size(), 1u);
  EXPECT_EQ(parse("<|python_ta", options(ToolCallFormat::kLlama3Json, false)).content, "");
  EXPECT_EQ(parse("{\"name\": \"f\", \"parameters\": {\"x\": ",
                  options(ToolCallFormat::kLlama3Json, false))
                .content,
            "");
}

TEST(ReplyParser, DroppedCallsAreReadButNotReturned) {
  ReplyParserOptions o = options(ToolCallFormat::kHermes, false);
  o.drop_tool_calls = true;
  const Parsed p =
      parse("a\n<tool_call>\n{\"name\": \"f\", \"arguments\": {}}\n</tool_call>\nb", o);
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "ab");
}

TEST(ReplyParser, BrokenArgumentsDropTheCallToItsEndMarker) {
  const Parsed p =
      parse("<tool_call>\n{\"name\": \"f\", \"arguments\": {\"a\": 1]}}</tool_call> ok",
            options(ToolCallFormat::kHermes, false));
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "ok");
}

TEST(ReplyParser, ArgumentsBeforeTheNameAreNotACall) {
  const Parsed p = parse("<tool_call>{\"arguments\": {}, \"name\": \"f\"}</tool_call>",
                         options(ToolCallFormat::kHermes, false));
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "<tool_call>{\"arguments\": {}, \"name\": \"f\"}</tool_call>");
}

TEST(ReplyParser, Llama3JsonCall) {
  const std::string text =
      "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\", \"unit\": \"c\"}}";
  const Parsed p = parse(text, options(ToolCallFormat::kLlama3Json, false));
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\": \"Paris\", \"unit\": \"c\"}");
  EXPECT_EQ(p.content, "");
  expect_same_at_every_split(text, options(ToolCallFormat::kLlama3Json, false));
}

TEST(ReplyParser, Llama3PythonTagAndTypeFieldAreRead) {
  const std::string text =
      "<|python_tag|>{\"type\": \"function\", \"name\": \"f\", \"parameters\": {\"x\": true}}";
  const Parsed p = parse(text, options(ToolCallFormat::kLlama3Json, false));
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "f");
  EXPECT_EQ(p.calls[0].arguments, "{\"x\": true}");
  expect_same_at_every_split(text, options(ToolCallFormat::kLlama3Json, false));
}

TEST(ReplyParser, Llama3PlainTextAndOtherJsonStayContent) {
  EXPECT_EQ(parse("Hello {there}", options(ToolCallFormat::kLlama3Json, false)).content,
            "Hello {there}");
  const Parsed p = parse("{\"answer\": 42}", options(ToolCallFormat::kLlama3Json, false));
  EXPECT_TRUE(p.calls.empty());
  EXPECT_EQ(p.content, "{\"answer\": 42}");
}

TEST(ReplyParser, ReasoningThenContent) {
  const std::string text = "<think>\nLet me think.\nOK.\n</think>\n\nThe answer is 4.";
  const Parsed p = parse(text, options(ToolCallFormat::kNone, true));
  EXPECT_EQ(p.reasoning, "Let me think.\nOK.");
  EXPECT_EQ(p.content, "The answer is 4.");
  expect_same_at_every_split(text, options(ToolCallFormat::kNone, true));
}

TEST(ReplyParser, ReasoningLeftInContentWhenNotExtracted) {
  const std::string text = "<think>\nhm\n</think>\n\nHi";
  EXPECT_EQ(parse(text, options(ToolCallFormat::kHermes, false)).content, text);
}

TEST(ReplyParser, ReplyStartingInsideReasoning) {
  const std::string text = "Let me see.\n</think>\n\nYes.";
  const Parsed p = parse(text, options(ToolCallFormat::kNone, true, /*starts_in=*/true));
  EXPECT_EQ(p.reasoning, "Let me see.");
  EXPECT_EQ(p.content, "Yes.");
  expect_same_at_every_split(text, options(ToolCallFormat::kNone, true, true));
}

TEST(ReplyParser, ReasoningNeverClosedIsAllReasoning) {
  const Parsed p = parse("<think>\nstill going  ", options(ToolCallFormat::kNone, true));
  EXPECT_EQ(p.reasoning, "still going");
  EXPECT_EQ(p.content, "");
}

TEST(ReplyParser, ReasoningThenHermesCalls) {
  const std::string text = "<think>\nweather?\n</think>\n\n" + kHermesTwo;
  const Parsed p = parse(text, options(ToolCallFormat::kHermes, true));
  EXPECT_EQ(p.reasoning, "weather?");
  EXPECT_EQ(p.content, "Let me look.");
  ASSERT_EQ(p.calls.size(), 2u);
  expect_same_at_every_split(text, options(ToolCallFormat::kHermes, true));
}

TEST(ReplyParser, AThinkLaterInTheReplyIsContent) {
  const Parsed p = parse("Hi <think>x</think>", options(ToolCallFormat::kNone, true));
  EXPECT_EQ(p.reasoning, "");
  EXPECT_EQ(p.content, "Hi <think>x</think>");
}

TEST(ReplyParser, InReasoningFollowsTheMarkers) {
  ReplyParser parser(options(ToolCallFormat::kNone, true));
  EXPECT_FALSE(parser.in_reasoning());
  parser.push("<think>");
  EXPECT_TRUE(parser.in_reasoning());
  parser.push("a\n</think>");
  EXPECT_FALSE(parser.in_reasoning());
}

}  // namespace
}  // namespace minfer::engine
