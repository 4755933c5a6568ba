// The harmony (gpt-oss) and Gemma 4 reply parsers (engine/channel_reply.h) through ReplyParser:
// channels split into reasoning, content and tool calls, fed whole, at every split and token by
// token (the pieces a tokenizer gives, markers split across them), preambles, several calls,
// malformed and cut-short calls, and Gemma 4's argument syntax.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/reply_parser.h"
#include "reply_parser_test_util.h"

namespace minfer::engine::channel_reply_test {
namespace {

using chat::ChannelFormat;
using chat::ToolCallFormat;
using Json = nlohmann::json;
using reply_test::expect_same_at_every_split;
using reply_test::parse;
using reply_test::parse_pieces;
using reply_test::Parsed;

ReplyParserOptions options(ChannelFormat channels, bool reasoning = true, bool calls = true) {
  ReplyParserOptions o;
  o.channels = channels;
  o.tool_calls = !calls                                ? ToolCallFormat::kNone
                 : channels == ChannelFormat::kHarmony ? ToolCallFormat::kHarmony
                                                       : ToolCallFormat::kGemma4;
  o.extract_reasoning = reasoning;
  o.id_seed = 11;
  return o;
}

// A harmony reply after "<|start|>assistant", as gpt-oss's tokenizer gives it: each special
// token is one piece, text pieces are short.
const std::vector<std::string> kHarmonyTokens = {"<|channel|>",
                                                 "analysis",
                                                 "<|message|>",
                                                 "User",
                                                 " wants",
                                                 " weather",
                                                 ".",
                                                 "<|end|>",
                                                 "<|start|>",
                                                 "assistant",
                                                 "<|channel|>",
                                                 "commentary",
                                                 " to",
                                                 "=",
                                                 "functions",
                                                 ".get",
                                                 "_weather",
                                                 " ",
                                                 "<|constrain|>",
                                                 "json",
                                                 "<|message|>",
                                                 "{\"",
                                                 "city",
                                                 "\":\"",
                                                 "Paris",
                                                 "\"}"};

TEST(HarmonyReply, AnalysisIsReasoningAndACallToFunctionsIsAToolCall) {
  const Parsed p = parse_pieces(kHarmonyTokens, options(ChannelFormat::kHarmony));
  EXPECT_EQ(p.reasoning, "User wants weather.");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(p.calls[0].arguments), Json::parse(R"({"city":"Paris"})"));
  EXPECT_TRUE(p.calls[0].id.starts_with("call_"));
  std::string whole;
  for (const std::string& t : kHarmonyTokens) whole += t;
  expect_same_at_every_split(whole, options(ChannelFormat::kHarmony));
}

TEST(HarmonyReply, FinalIsContentAndPreamblesAreKept) {
  const std::string text =
      "<|channel|>analysis<|message|>Think.<|end|>"
      "<|start|>assistant<|channel|>commentary<|message|>Checking both cities.<|end|>"
      "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>"
      "{\"city\": \"Rome\"}<|call|>"
      "<|start|>assistant<|channel|>commentary to=functions.search <|constrain|>json<|message|>"
      "{\"query\": \"news <b>\", \"tags\": [\"a\"]}<|call|>"
      "<|start|>assistant<|channel|>final<|message|>It is <sunny>.";
  const Parsed p = parse(text, options(ChannelFormat::kHarmony));
  EXPECT_EQ(p.reasoning, "Think.");
  // The preamble and the final answer are two paragraphs, not run together.
  EXPECT_EQ(p.content, "Checking both cities.\n\nIt is <sunny>.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(p.calls[0].arguments, "{\"city\": \"Rome\"}");
  EXPECT_EQ(p.calls[1].name, "search");
  EXPECT_EQ(Json::parse(p.calls[1].arguments)["query"], "news <b>");
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
  expect_same_at_every_split(text, options(ChannelFormat::kHarmony));
}

TEST(HarmonyReply, TextWithoutHeadersIsContentAndReasoningCanStayContent) {
  EXPECT_EQ(parse("Hello <there>", options(ChannelFormat::kHarmony)).content, "Hello <there>");
  // A header broken by a line break is not one.
  EXPECT_EQ(parse("<|channel|>final\nHi", options(ChannelFormat::kHarmony)).content,
            "<|channel|>final\nHi");
  const Parsed raw = parse(
      "<|channel|>analysis<|message|>A<|end|><|start|>assistant<|channel|>"
      "final<|message|>B<|return|>",
      options(ChannelFormat::kHarmony, /*reasoning=*/false));
  EXPECT_EQ(raw.reasoning, "");
  EXPECT_EQ(raw.content, "A\n\nB");
}

// Messages of one field are separated by a blank line, whatever the pieces: two analysis
// messages, a preamble then the final answer, calls between them; a first message, an empty one
// and text after a broken header get none.
TEST(HarmonyReply, MessagesOfOneFieldAreParagraphs) {
  const std::string text =
      "<|channel|>analysis<|message|>One.<|end|>"
      "<|start|>assistant<|channel|>analysis<|message|>Two.<|end|>"
      "<|start|>assistant<|channel|>commentary<|message|><|end|>"
      "<|start|>assistant<|channel|>commentary<|message|>Let me check.<|end|>"
      "<|start|>assistant to=functions.f<|channel|>commentary json<|message|>{}<|call|>"
      "<|start|>assistant<|channel|>final<|message|>Sunny.";
  const Parsed p = parse(text, options(ChannelFormat::kHarmony));
  EXPECT_EQ(p.reasoning, "One.\n\nTwo.");
  EXPECT_EQ(p.content, "Let me check.\n\nSunny.");
  EXPECT_EQ(p.calls.size(), 1u);
  expect_same_at_every_split(text, options(ChannelFormat::kHarmony));
  EXPECT_EQ(parse("<|channel|>final<|message|>A<|end|>B", options(ChannelFormat::kHarmony)).content,
            "AB");
}

TEST(HarmonyReply, MalformedAndCutShortCallsAreDroppedNotContent) {
  // Arguments that are not a JSON object, and a call cut short: neither is returned or content.
  const Parsed bad = parse(
      "<|channel|>commentary to=functions.f json<|message|>{\"a\": <|call|>"
      "<|start|>assistant<|channel|>final<|message|>ok",
      options(ChannelFormat::kHarmony));
  EXPECT_TRUE(bad.calls.empty());
  EXPECT_EQ(bad.content, "ok");
  const Parsed cut = parse("<|channel|>commentary to=functions.f json<|message|>{\"a\": 1",
                           options(ChannelFormat::kHarmony));
  EXPECT_TRUE(cut.calls.empty());
  EXPECT_EQ(cut.content, "");
  // A header cut short is markup.
  EXPECT_EQ(parse("<|channel|>fin", options(ChannelFormat::kHarmony)).content, "");
  // tool_choice none (calls not returned): read, never content.
  const Parsed none = parse("<|channel|>commentary to=functions.f json<|message|>{}<|call|>",
                            options(ChannelFormat::kHarmony, true, /*calls=*/false));
  EXPECT_TRUE(none.calls.empty());
  EXPECT_EQ(none.content, "");
}

TEST(HarmonyReply, InReasoningOnlyInsideAnalysis) {
  ReplyParser parser(options(ChannelFormat::kHarmony));
  EXPECT_FALSE(parser.in_reasoning());
  parser.push("<|channel|>analysis<|message|>hm");
  EXPECT_TRUE(parser.in_reasoning());
  parser.push("<|end|><|start|>assistant<|channel|>final<|message|>x");
  EXPECT_FALSE(parser.in_reasoning());
}

// A Gemma 4 reply with thinking on, in the pieces its tokenizer gives (markers are one token).
const std::vector<std::string> kGemmaTokens = {
    "<|channel>", "thought",    "\n",  "Need",        " the",   " tool", ".",
    "\n",         "<channel|>", "Let", " me",         " check", ".",     "<|tool_call>",
    "call",       ":",          "get", "_weather",    "{",      "city",  ":",
    "<|\"|>",     "Paris",      ",",   " FR",         "<|\"|>", ",",     "days",
    ":",          "2",          "}",   "<tool_call|>"};

TEST(Gemma4Reply, ThoughtIsReasoningAndCallsAreTyped) {
  const Parsed p = parse_pieces(kGemmaTokens, options(ChannelFormat::kGemma4));
  EXPECT_EQ(p.reasoning, "Need the tool.");
  EXPECT_EQ(p.content, "Let me check.");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(p.calls[0].arguments), Json::parse(R"({"city":"Paris, FR","days":2})"));
  std::string whole;
  for (const std::string& t : kGemmaTokens) whole += t;
  expect_same_at_every_split(whole, options(ChannelFormat::kGemma4));
}

TEST(Gemma4Reply, SeveralCallsEmptyThoughtAndContentAfter) {
  const std::string text =
      "<|channel>thought\n<channel|><|tool_call>call:a{}<tool_call|>"
      "<|tool_call>call:b{x:{y:[1,2.5,true,None,<|\"|>s}<|\"|>]},<|\"|>k q<|\"|>:false}"
      "<tool_call|>\nDone.";
  const Parsed p = parse(text, options(ChannelFormat::kGemma4));
  EXPECT_EQ(p.reasoning, "");
  EXPECT_EQ(p.content, "Done.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, "{}");
  EXPECT_EQ(Json::parse(p.calls[1].arguments),
            Json::parse(R"({"x":{"y":[1,2.5,true,null,"s}"]},"k q":false})"));
  expect_same_at_every_split(text, options(ChannelFormat::kGemma4));
}

TEST(Gemma4Reply, MalformedAndCutShortCallsAreDropped) {
  const Parsed bad =
      parse("A<|tool_call>call:f{x:<|\"|>open}<tool_call|>B", options(ChannelFormat::kGemma4));
  EXPECT_TRUE(bad.calls.empty());
  EXPECT_EQ(bad.content, "AB");
  EXPECT_TRUE(parse("<|tool_call>call:f{x:1", options(ChannelFormat::kGemma4)).calls.empty());
  EXPECT_TRUE(
      parse("<|tool_call>f{x:1}<tool_call|>", options(ChannelFormat::kGemma4)).calls.empty());
  // A call whose object closed is whole at the reply's end (its close not yet written).
  EXPECT_EQ(parse("<|tool_call>call:f{x:1}", options(ChannelFormat::kGemma4)).calls.size(), 1u);
  EXPECT_EQ(parse("Hi <|tool_ca", options(ChannelFormat::kGemma4)).content, "Hi");
}

TEST(Gemma4Reply, ArgumentSyntax) {
  size_t end = 0;
  auto read = [&](const std::string& s) { return read_gemma4_arguments(s, end); };
  EXPECT_EQ(*read("{a:1,b:-2.5e3,c:<|\"|><|\"|>}tail"),
            nlohmann::ordered_json::parse(R"({"a":1,"b":-2500.0,"c":""})"));
  EXPECT_EQ(end, std::string("{a:1,b:-2.5e3,c:<|\"|><|\"|>}").size());
  EXPECT_EQ(*read("{<|\"|>q<|\"|>:[]}"), nlohmann::ordered_json::parse(R"({"q":[]})"));
  EXPECT_EQ(*read("{w:bare words}"), nlohmann::ordered_json::parse(R"({"w":"bare words"})"));
  EXPECT_FALSE(read("{a 1}").has_value());
  EXPECT_FALSE(read("{a:1").has_value());
  EXPECT_FALSE(read("[1]").has_value());
  EXPECT_FALSE(read("{a:[1,}").has_value());
  std::string deep = "{a:";
  for (int i = 0; i < 100; ++i) deep += "[";
  EXPECT_FALSE(read(deep).has_value());
}

}  // namespace
}  // namespace minfer::engine::channel_reply_test
