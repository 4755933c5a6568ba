// Qwen3.5's and Qwen3-Coder's XML tool calls (engine/xml_tool_calls.h): the reply parser reads
// them as they stream (the same calls whatever the pieces, several per reply, no markup in the
// content, values typed by the tools' schemas), and the tool-call grammar writes only calls the
// parser reads back into arguments that follow the schemas.
#include "engine/xml_tool_calls.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/reply_parser.h"
#include "engine/tool_grammar.h"
#include "reply_parser_test_util.h"
#include "tool_grammar_test_util.h"

namespace minfer::engine::xml_test {
namespace {

using chat::ToolCallFormat;
using Json = nlohmann::ordered_json;
using reply_test::expect_same;
using reply_test::parse;
using reply_test::parse_pieces;
using reply_test::Parsed;

constexpr const char* kTools = R"([
  {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object",
    "properties": {"city": {"type": "string"}, "days": {"type": "integer"},
                   "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                   "hourly": {"type": "boolean"}, "note": {"type": ["string", "null"]}},
    "required": ["city"]}}},
  {"type": "function", "function": {"name": "plot", "parameters": {"type": "object",
    "properties": {"points": {"type": "array", "items": {"type": "number"}},
                   "style": {"type": "object", "properties": {"color": {"type": "string"}},
                             "required": ["color"], "additionalProperties": false}},
    "required": ["points"]}}},
  {"type": "function", "function": {"name": "get_time", "parameters": {"type": "object",
    "properties": {}}}}])";

ReplyParserOptions xml_options(bool reasoning = false, bool starts_in = false) {
  ReplyParserOptions o;
  o.tool_calls = ToolCallFormat::kQwenXml;
  o.extract_reasoning = reasoning;
  o.starts_in_reasoning = starts_in;
  o.id_seed = 7;
  o.xml_tools = std::make_shared<const XmlToolSchemas>(XmlToolSchemas::from_tools(kTools));
  return o;
}

// A reply as Qwen3.5 writes it: reasoning, a sentence, two calls.
const std::string kTwoCalls =
    "<think>\nParis, then a plot.\n</think>\n\nLet me check.\n\n<tool_call>\n"
    "<function=get_weather>\n<parameter=city>\nSaint-Étienne <sur> \"Loire\"\n</parameter>\n"
    "<parameter=days>\n3\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n"
    "<parameter=hourly>\ntrue\n</parameter>\n<parameter=note>\nnull\n</parameter>\n"
    "</function>\n</tool_call>\n<tool_call>\n<function=plot>\n<parameter=points>\n[1, 2.5]\n"
    "</parameter>\n<parameter=style>\n{\"color\": \"red\"}\n</parameter>\n</function>\n"
    "</tool_call>";

TEST(XmlToolCalls, ReasoningContentAndTypedArguments) {
  const Parsed p = parse(kTwoCalls, xml_options(true));
  EXPECT_EQ(p.reasoning, "Paris, then a plot.");
  EXPECT_EQ(p.content, "Let me check.");
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].name, "get_weather");
  EXPECT_EQ(Json::parse(p.calls[0].arguments),
            Json::parse(R"({"city": "Saint-Étienne <sur> \"Loire\"", "days": 3,
                            "unit": "celsius", "hourly": true, "note": null})"));
  EXPECT_EQ(p.calls[1].name, "plot");
  EXPECT_EQ(Json::parse(p.calls[1].arguments),
            Json::parse(R"({"points": [1, 2.5], "style": {"color": "red"}})"));
  EXPECT_NE(p.calls[0].id, p.calls[1].id);
}

TEST(XmlToolCalls, StreamedPiecesGiveTheSameReplyAsTheWhole) {
  const Parsed whole = parse(kTwoCalls, xml_options(true));
  for (size_t piece = 1; piece <= 7; ++piece) {
    expect_same(parse(kTwoCalls, xml_options(true), piece), whole,
                "pieces of " + std::to_string(piece));
  }
  for (size_t cut = 0; cut <= kTwoCalls.size(); ++cut) {
    expect_same(parse_pieces({kTwoCalls.substr(0, cut), kTwoCalls.substr(cut)}, xml_options(true)),
                whole, "cut at " + std::to_string(cut));
  }
}

TEST(XmlToolCalls, ACallArrivesWholeAtItsFunctionClose) {
  ReplyParser parser(xml_options());
  ReplyDelta d = parser.push("<tool_call>\n<function=get_weather>\n<parameter=city>\nPar");
  EXPECT_TRUE(d.tool_calls.empty());
  EXPECT_EQ(parser.n_tool_calls(), 1);
  d = parser.push("is\n</parameter>\n");
  EXPECT_TRUE(d.tool_calls.empty());
  d = parser.push("</function>");
  // The call's first piece (index, id, name), then its arguments, as for the JSON formats.
  ASSERT_EQ(d.tool_calls.size(), 2u);
  EXPECT_EQ(d.tool_calls[0].index, 0);
  EXPECT_EQ(d.tool_calls[0].name, "get_weather");
  EXPECT_FALSE(d.tool_calls[0].id.empty());
  EXPECT_EQ(d.tool_calls[0].arguments, "");
  EXPECT_EQ(d.tool_calls[1].index, 0);
  EXPECT_EQ(d.tool_calls[1].arguments, R"({"city":"Paris"})");
  EXPECT_TRUE(parser.push("\n</tool_call>").empty());
  EXPECT_TRUE(parser.finish().empty());
}

// <parameter=NAME>\nVALUE\n</parameter>\n, as the templates write one.
std::string param(const std::string& name, const std::string& value) {
  return "<parameter=" + name + ">\n" + value + "\n</parameter>\n";
}

// The arguments of the one call of `function` with these parameters ("" unless one call).
std::string arguments_of(const std::string& function, const std::string& parameters) {
  const Parsed p =
      parse("<tool_call>\n<function=" + function + ">\n" + parameters + "</function>\n</tool_call>",
            xml_options());
  return p.calls.size() == 1 ? p.calls[0].arguments : "";
}

TEST(XmlToolCalls, ValuesAreTypedByTheSchema) {
  // Strings stay text whatever they look like; a string-or-null is null when it says so.
  EXPECT_EQ(arguments_of("get_weather", param("city", "42") + param("note", "\"quoted\"")),
            R"({"city":"42","note":"\"quoted\""})");
  EXPECT_EQ(arguments_of("get_weather", param("note", "null")), R"({"note":null})");
  // Multi-line text keeps its inner line breaks; only the template's one on each side goes.
  EXPECT_EQ(arguments_of("get_weather", param("city", "\nline 1\nline 2\n")),
            R"({"city":"\nline 1\nline 2\n"})");
  // Untyped values (an unknown function) are JSON when they parse.
  EXPECT_EQ(arguments_of("unknown", param("n", "7") + param("s", "hello")),
            R"({"n":7,"s":"hello"})");
  // A typed value that is not JSON is returned as the text it is (the client validates it).
  EXPECT_EQ(arguments_of("get_weather", param("days", "three")), R"({"days":"three"})");
}

TEST(XmlToolCalls, ACallWithoutParametersAndOneClosedByToolCallAlone) {
  const Parsed p = parse(
      "<tool_call>\n<function=get_time>\n</function>\n</tool_call>\n<tool_call>\n"
      "<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\n</tool_call>\nDone.",
      xml_options());
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(p.calls[0].arguments, "{}");
  EXPECT_EQ(p.calls[1].arguments, R"({"city":"Oslo"})");
  EXPECT_EQ(p.content, "Done.");
}

TEST(XmlToolCalls, MalformedAndCutShortCallsAreNeverContent) {
  // Not a call after all (no <function=): its text is content (the space before a marker goes,
  // as with Hermes calls).
  EXPECT_EQ(parse("a <tool_call> tag", xml_options()).content, "a<tool_call> tag");
  // Text between parameters breaks the call: dropped up to its end marker.
  const Parsed broken = parse(
      "<tool_call>\n<function=get_weather>\n<parameter=city>\nOslo\n</parameter>\noops\n"
      "</function>\n</tool_call>\nafter",
      xml_options());
  EXPECT_TRUE(broken.calls.empty());
  EXPECT_EQ(broken.content, "after");
  // A parameter written twice breaks it too.
  EXPECT_TRUE(parse("<tool_call>\n<function=f>\n<parameter=a>\n1\n</parameter>\n<parameter=a>\n2\n"
                    "</parameter>\n</function>\n</tool_call>",
                    xml_options())
                  .calls.empty());
  // Cut by the token limit: the complete call stays, the cut one and its markup go.
  ReplyParser parser(xml_options());
  Parsed p;
  for (const ReplyDelta& d :
       {parser.push("<tool_call>\n<function=get_time>\n</function>\n</tool_call>\n<tool_call>\n"
                    "<function=get_weather>\n<parameter=city>\nOs"),
        parser.finish()}) {
    p.add(d);
  }
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
  EXPECT_EQ(p.calls[0].name, "get_time");
  EXPECT_EQ(parse("Hi <tool_call>\n<funct", xml_options()).content, "Hi");
  EXPECT_EQ(parse("Hi <tool_ca", xml_options()).content, "Hi");
}

TEST(XmlToolCalls, ReplyStartingInsideReasoning) {
  // Qwen3.5's generation prompt opens <think>: the reply starts in it.
  const Parsed p = parse(
      "The user wants Oslo.\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\n"
      "Oslo\n</parameter>\n</function>\n</tool_call>",
      xml_options(true, true));
  EXPECT_EQ(p.reasoning, "The user wants Oslo.");
  EXPECT_EQ(p.content, "");
  ASSERT_EQ(p.calls.size(), 1u);
}

// --- the grammar ---

using test::accepts;

ReplyRequest xml_request(ToolChoice choice, const std::string& name = "", bool parallel = true) {
  ReplyRequest r = test::tool_request(ToolCallFormat::kQwenXml, choice, kTools, parallel, name);
  r.format.reasoning = true;
  return r;
}

const std::string kWeather =
    "<tool_call>\n<function=get_weather>\n<parameter=city>\nSaint <b> Étienne\nsur Loire\n"
    "</parameter>\n<parameter=days>\n3\n</parameter>\n<parameter=unit>\ncelsius\n</parameter>\n"
    "</function>\n</tool_call>";
const std::string kPlot =
    "<tool_call>\n<function=plot>\n<parameter=points>\n[1, 2.5]\n</parameter>\n"
    "<parameter=style>\n{\"color\": \"red\"}\n</parameter>\n</function>\n</tool_call>";
const std::string kTime = "<tool_call>\n<function=get_time>\n</function>\n</tool_call>";

TEST(XmlToolGrammar, RequiredCallsFollowTheSchemas) {
  Result<ToolCallGrammar> g = tool_call_grammar(xml_request(ToolChoice::kRequired));
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  EXPECT_TRUE(g->triggers.empty());
  EXPECT_EQ(g->forced_prefix, "<tool_call>\n<function=");
  EXPECT_TRUE(accepts(*g, kWeather));
  EXPECT_TRUE(accepts(*g, kPlot));
  EXPECT_TRUE(accepts(*g, kTime));
  EXPECT_TRUE(accepts(*g, kWeather + "\n" + kPlot + "\n" + kTime));
  // Required parameters, types, enums, order and names are held to the schema.
  EXPECT_FALSE(accepts(*g, "<tool_call>\n<function=get_weather>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(*g,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\nX\n</parameter>\n"
                       "<parameter=days>\nthree\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(*g,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\nX\n</parameter>\n"
                       "<parameter=unit>\nkelvin\n</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(*g,
                       "<tool_call>\n<function=plot>\n<parameter=points>\n[1]\n</parameter>\n"
                       "<parameter=style>\n{\"colour\": \"red\"}\n</parameter>\n</function>\n"
                       "</tool_call>"));
  EXPECT_FALSE(accepts(*g, "<tool_call>\n<function=nope>\n</function>\n</tool_call>"));
  // A value can hold no closing tag.
  EXPECT_FALSE(accepts(*g,
                       "<tool_call>\n<function=get_weather>\n<parameter=city>\na</parameter>\n"
                       "</parameter>\n</function>\n</tool_call>"));
  EXPECT_FALSE(accepts(*g, "Sure. " + kTime));
}

TEST(XmlToolGrammar, WhatTheGrammarWritesParsesBackToValidArguments) {
  Result<ToolCallGrammar> g = tool_call_grammar(xml_request(ToolChoice::kRequired));
  ASSERT_TRUE(g.is_ok());
  const std::string reply = kWeather + "\n" + kPlot;
  ASSERT_TRUE(accepts(*g, reply));
  const Parsed p = parse(reply, xml_options());
  ASSERT_EQ(p.calls.size(), 2u);
  EXPECT_EQ(Json::parse(p.calls[0].arguments),
            Json::parse(R"({"city": "Saint <b> Étienne\nsur Loire", "days": 3,
                            "unit": "celsius"})"));
  EXPECT_EQ(Json::parse(p.calls[1].arguments),
            Json::parse(R"({"points": [1, 2.5], "style": {"color": "red"}})"));
}

TEST(XmlToolGrammar, NamedSingleAndAfterOpenReasoning) {
  ReplyRequest named = xml_request(ToolChoice::kFunction, "get_weather", false);
  Result<ToolCallGrammar> g = tool_call_grammar(named);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->forced_prefix, "<tool_call>\n<function=get_weather>");
  EXPECT_TRUE(accepts(*g, kWeather));
  EXPECT_FALSE(accepts(*g, kPlot));
  EXPECT_FALSE(accepts(*g, kWeather + "\n" + kWeather));
  // The prompt left <think> open: the forced call closes it first.
  named.prompt_opens_reasoning = true;
  g = tool_call_grammar(named);
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->forced_prefix, "\n</think>\n\n<tool_call>\n<function=get_weather>");
  EXPECT_TRUE(accepts(*g, "\n</think>\n\n" + kWeather));
  EXPECT_FALSE(accepts(*g, kWeather));
  const Parsed p = parse("\n</think>\n\n" + kWeather, xml_options(true, true));
  EXPECT_EQ(p.reasoning, "");
  EXPECT_EQ(p.content, "");
  EXPECT_EQ(p.calls.size(), 1u);
}

TEST(XmlToolGrammar, AutoIsLazyFromTheCallOpening) {
  Result<ToolCallGrammar> g = tool_call_grammar(xml_request(ToolChoice::kAuto));
  ASSERT_TRUE(g.is_ok());
  EXPECT_EQ(g->triggers, std::vector<std::string>{"<tool_call>"});
  EXPECT_TRUE(g->forced_prefix.empty());
  EXPECT_TRUE(accepts(*g, kTime));
}

TEST(XmlToolGrammar, StringLengthsBoundTheText) {
  ReplyRequest r = xml_request(ToolChoice::kRequired);
  r.tools = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
    "properties": {"code": {"type": "string", "minLength": 2, "maxLength": 4}},
    "required": ["code"]}}}])";
  Result<ToolCallGrammar> g = tool_call_grammar(r);
  ASSERT_TRUE(g.is_ok()) << g.status().message();
  const auto call = [](const std::string& value) {
    return "<tool_call>\n<function=f>\n<parameter=code>\n" + value +
           "\n</parameter>\n</function>\n</tool_call>";
  };
  EXPECT_TRUE(accepts(*g, call("ab")));
  EXPECT_TRUE(accepts(*g, call("a\nbc")));
  EXPECT_FALSE(accepts(*g, call("a")));
  EXPECT_FALSE(accepts(*g, call("abcde")));
  EXPECT_FALSE(accepts(*g, call("a<b")));
  r.tools = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
    "properties": {"code": {"type": "string", "maxLength": 100000}}}}}])";
  g = tool_call_grammar(r);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("'maxLength' must be an integer in 0..10000"),
            std::string::npos)
      << g.status().message();
}

TEST(XmlToolGrammar, StringConstraintsTheTextFormCannotHoldAreErrors) {
  ReplyRequest r = xml_request(ToolChoice::kRequired);
  r.tools = R"([{"type": "function", "function": {"name": "f", "parameters": {"type": "object",
    "properties": {"code": {"type": "string", "pattern": "^[A-Z]+$"}}}}}])";
  Result<ToolCallGrammar> g = tool_call_grammar(r);
  ASSERT_FALSE(g.is_ok());
  EXPECT_NE(g.status().message().find("function 'f' parameter 'code'"), std::string::npos)
      << g.status().message();
  EXPECT_NE(g.status().message().find("'pattern'"), std::string::npos);
}

}  // namespace
}  // namespace minfer::engine::xml_test
