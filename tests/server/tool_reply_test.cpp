// Tool calls and reasoning on the wire: a reply split by the reply parser becomes the OpenAI
// message (tool_calls with ids, content null, reasoning_content, finish_reason tool_calls), and
// its stream chunks, put together as a client does, give the same message. The request's tools,
// tool_choice, parallel_tool_calls and reasoning_format are checked (bad values are 400s).
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include <fstream>
#include <sstream>

#include "chat/chat_template.h"
#include "engine/conversation.h"
#include "engine/reply_parser.h"
#include "gguf/gguf_file.h"
#include "server/openai_api.h"
#include "server/openai_reply.h"
#include "test_util.h"

namespace minfer::server {
namespace {

const std::string kReply =
    "<think>\nNeed the weather.\n</think>\n\nChecking.\n<tool_call>\n{\"name\": \"get_weather\", "
    "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"get_time\", "
    "\"arguments\": {}}\n</tool_call>";

// The events a request with this reply streams: one per `piece` bytes, then the final one.
std::vector<BatchEvent> events_of(const std::string& text, size_t piece) {
  engine::ReplyParserOptions o;
  o.tool_calls = chat::ToolCallFormat::kHermes;
  o.extract_reasoning = true;
  engine::ReplyParser parser(o);
  std::vector<BatchEvent> events;
  auto event_of = [](ReplyDelta d) {
    BatchEvent e;
    e.text = std::move(d.content);
    e.reasoning = std::move(d.reasoning);
    e.tool_calls = std::move(d.tool_calls);
    return e;
  };
  for (size_t i = 0; i < text.size(); i += piece) {
    events.push_back(event_of(parser.push(text.substr(i, piece))));
  }
  BatchEvent last = event_of(parser.finish());
  last.done = true;
  last.finish = parser.n_tool_calls() > 0 ? FinishReason::kToolCalls : FinishReason::kEog;
  last.finish_reason = finish_reason_name(last.finish);
  events.push_back(std::move(last));
  return events;
}

// The stream's chunks put together as the openai SDK's stream helper does.
Json assemble(const std::vector<Json>& chunks, std::string& finish) {
  Json message{{"role", "assistant"}, {"content", ""}};
  std::string reasoning;
  Json calls = Json::array();
  for (const Json& chunk : chunks) {
    const Json& choice = chunk["choices"][0];
    const Json& delta = choice["delta"];
    if (!choice["finish_reason"].is_null()) finish = choice["finish_reason"];
    if (delta.contains("content") && delta["content"].is_string()) {
      message["content"] =
          message["content"].get<std::string>() + delta["content"].get<std::string>();
    }
    if (delta.contains("reasoning_content"))
      reasoning += delta["reasoning_content"].get<std::string>();
    if (!delta.contains("tool_calls")) continue;
    for (const Json& piece : delta["tool_calls"]) {
      const size_t index = piece["index"].get<size_t>();
      if (index >= calls.size()) {
        EXPECT_EQ(index, calls.size()) << "a call's pieces come in order";
        EXPECT_TRUE(piece.contains("id")) << "a call's first piece carries its id";
        calls.push_back(
            Json{{"id", piece["id"]},
                 {"type", piece["type"]},
                 {"function", Json{{"name", piece["function"]["name"]}, {"arguments", ""}}}});
      }
      Json& args = calls[index]["function"]["arguments"];
      args = args.get<std::string>() + piece["function"]["arguments"].get<std::string>();
    }
  }
  if (!calls.empty()) {
    if (message["content"] == "") message["content"] = nullptr;
    message["tool_calls"] = calls;
  }
  if (!reasoning.empty()) message["reasoning_content"] = reasoning;
  return message;
}

std::unique_ptr<LanguageModel> load_qwen3() {
  LoadOptions o;
  o.single_sequence = false;
  auto m = LanguageModel::load(test::test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf"), o);
  EXPECT_TRUE(m.is_ok()) << m.status().message();
  return m.is_ok() ? std::move(m).value() : nullptr;
}

TEST(ToolReply, TheModelsFormatsComeFromItsTemplate) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_qwen3();
  ASSERT_NE(model, nullptr);
  EXPECT_EQ(model->tool_call_format(), "hermes");
  EXPECT_TRUE(model->has_reasoning_format());
}

TEST(ToolReply, BlockingMessageAndStreamChunksAgree) {
  MINFER_REQUIRE_TEST_DATA();
  auto model = load_qwen3();
  ASSERT_NE(model, nullptr);
  ReplyInfo info;
  info.id = "chatcmpl-1";
  Reply reply(*model, info);
  for (const size_t piece : {size_t{1}, size_t{3}, size_t{7}, kReply.size()}) {
    const std::vector<BatchEvent> events = events_of(kReply, piece);
    ReplyParts parts;
    for (const BatchEvent& e : events) parts.add(e);
    const Json whole = reply.complete(parts, {}, events.back().finish, RequestStats{});
    const Json& choice = whole["choices"][0];
    EXPECT_EQ(choice["finish_reason"], "tool_calls");
    const Json& message = choice["message"];
    EXPECT_EQ(message["content"], "Checking.");
    EXPECT_EQ(message["reasoning_content"], "Need the weather.");
    ASSERT_EQ(message["tool_calls"].size(), 2u);
    const Json& call = message["tool_calls"][0];
    EXPECT_EQ(call["type"], "function");
    EXPECT_TRUE(call["id"].get<std::string>().starts_with("call_"));
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(call["function"]["arguments"], "{\"city\": \"Paris\"}");
    EXPECT_EQ(message["tool_calls"][1]["function"]["arguments"], "{}");

    std::vector<Json> chunks = {reply.role_chunk()};
    int64_t offset = 0;
    for (const BatchEvent& e : events) {
      for (Json& c : reply.event_chunks(e, offset)) chunks.push_back(std::move(c));
    }
    chunks.push_back(reply.finish_chunk(events.back().finish));
    std::string finish;
    const Json streamed = assemble(chunks, finish);
    EXPECT_EQ(finish, "tool_calls");
    // The same fields and values (key order aside).
    EXPECT_EQ(nlohmann::json::parse(dump(streamed)), nlohmann::json::parse(dump(message)))
        << "pieces of " << piece;
  }
}

TEST(ToolReply, OnlyCallsMeansNullContent) {
  ReplyParts parts;
  parts.tool_calls.push_back({"call_x", "f", "{}"});
  const Json m = assistant_message(parts);
  EXPECT_TRUE(m["content"].is_null());
  EXPECT_FALSE(m.contains("reasoning_content"));
  ReplyParts text;
  text.content = "hi";
  EXPECT_FALSE(assistant_message(text).contains("tool_calls"));
  EXPECT_EQ(assistant_message(text)["content"], "hi");
}

std::optional<ApiError> parse_chat(const std::string& extra, ParsedRequest& out) {
  const Json body =
      Json::parse("{\"messages\": [{\"role\": \"user\", \"content\": \"hi\"}]" + extra + "}");
  return parse_request(body, Endpoint::kChat, 1000, out);
}

const std::string kTools =
    ", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": "
    "{\"type\": \"object\"}}}]";

TEST(ToolRequest, ToolsAndChoicesAreRecorded) {
  ParsedRequest p;
  ASSERT_FALSE(parse_chat(kTools, p).has_value());
  EXPECT_TRUE(p.params.parse_tool_calls);
  EXPECT_EQ(p.params.tool_choice, ToolChoice::kAuto);
  EXPECT_EQ(Json::parse(p.params.tools)[0]["function"]["name"], "f");
  ParsedRequest named;
  ASSERT_FALSE(
      parse_chat(kTools + ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": "
                          "\"f\"}}, \"parallel_tool_calls\": false",
                 named)
          .has_value());
  EXPECT_EQ(named.params.tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(named.params.tool_choice_name, "f");
  EXPECT_FALSE(named.params.parallel_tool_calls);
  ParsedRequest none;
  ASSERT_FALSE(parse_chat(kTools + ", \"tool_choice\": \"none\"", none).has_value());
  // Calls are still read under none (so their markup is never content) and then dropped.
  EXPECT_TRUE(none.params.parse_tool_calls);
  EXPECT_EQ(none.params.tool_choice, ToolChoice::kNone);
  ParsedRequest no_tools;
  ASSERT_FALSE(parse_chat("", no_tools).has_value());
  EXPECT_FALSE(no_tools.params.parse_tool_calls);
  ParsedRequest reasoning;
  ASSERT_FALSE(parse_chat(", \"reasoning_format\": \"none\"", reasoning).has_value());
  EXPECT_EQ(reasoning.reasoning_format, "none");
}

// Legacy functions / function_call become tools and tool_choice (one call per reply), the
// history's function messages tool results; the reply is then written as function_call.
TEST(ToolRequest, LegacyFunctionsBecomeToolsAndComeBackAsFunctionCall) {
  Json body = Json::parse(R"({"messages": [{"role": "user", "content": "hi"},
      {"role": "assistant", "content": null, "function_call": {"name": "f", "arguments": "{}"}},
      {"role": "function", "name": "f", "content": "1"}],
    "functions": [{"name": "f", "parameters": {"type": "object"}}],
    "function_call": {"name": "f"}})");
  bool legacy = false;
  ASSERT_FALSE(translate_legacy_functions(body, legacy).has_value());
  EXPECT_TRUE(legacy);
  EXPECT_FALSE(body.contains("functions"));
  EXPECT_EQ(body["messages"][1]["tool_calls"][0]["function"]["name"], "f");
  EXPECT_EQ(body["messages"][2]["role"], "tool");
  ParsedRequest p;
  ASSERT_FALSE(parse_request(body, Endpoint::kChat, 1000, p).has_value());
  EXPECT_EQ(p.params.tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(p.params.tool_choice_name, "f");
  EXPECT_FALSE(p.params.parallel_tool_calls);

  ReplyParts parts;
  parts.tool_calls.push_back({"call_x", "f", "{\"a\":1}"});
  const Json m = assistant_message(parts, /*legacy_functions=*/true);
  EXPECT_EQ(m["function_call"], Json({{"name", "f"}, {"arguments", "{\"a\":1}"}}));
  EXPECT_FALSE(m.contains("tool_calls"));

  Json plain = Json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})");
  ASSERT_FALSE(translate_legacy_functions(plain, legacy).has_value());
  EXPECT_FALSE(legacy);
}

TEST(ToolRequest, BadValuesAre400s) {
  const struct {
    std::string extra;
    std::string param;
  } cases[] = {
      {kTools + ", \"tool_choice\": \"sometimes\"", "tool_choice"},
      {kTools + ", \"tool_choice\": {\"type\": \"function\", \"function\": {\"name\": \"g\"}}",
       "tool_choice"},
      {kTools + ", \"tool_choice\": 3", "tool_choice"},
      {", \"tool_choice\": \"required\"", "tool_choice"},
      {kTools + ", \"parallel_tool_calls\": \"no\"", "parallel_tool_calls"},
      {", \"tools\": {}", "tools"},
      {", \"tools\": [{\"type\": \"function\"}]", "tools[0]"},
      {", \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"\"}}]",
       "tools[0].function.name"},
      {", \"reasoning_format\": \"maybe\"", "reasoning_format"},
  };
  for (const auto& c : cases) {
    ParsedRequest p;
    const std::optional<ApiError> e = parse_chat(c.extra, p);
    ASSERT_TRUE(e.has_value()) << c.extra;
    EXPECT_EQ(e->status, 400);
    EXPECT_EQ(e->param, c.param) << e->message;
  }
}

// A two-turn tool conversation as a client sends it back: the assistant's call with its arguments
// as JSON text, the tool's result, and the next question.
const char* const kToolConversation = R"({"messages": [
  {"role": "user", "content": "Weather in Paris?"},
  {"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function",
    "function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]},
  {"role": "tool", "tool_call_id": "call_1", "content": "{\"temp\": 20}"},
  {"role": "assistant", "content": "It is 20 degrees."},
  {"role": "user", "content": "And tomorrow?"}]})";

Result<std::string> render_round_trip(const chat::ChatTemplate& tmpl) {
  ParsedRequest p;
  const std::optional<ApiError> e =
      parse_request(Json::parse(kToolConversation), Endpoint::kChat, 1000, p);
  EXPECT_FALSE(e.has_value()) << (e ? e->message : "");
  EXPECT_TRUE(p.messages[1]["tool_calls"][0]["function"]["arguments"].is_object());
  return tmpl.render(p.messages, nullptr, true, Json::object());
}

TEST(ToolRoundTrip, Qwen3TemplateRendersTheCallAndTheToolResult) {
  MINFER_REQUIRE_TEST_DATA();
  auto file = GgufFile::open(test::test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  auto tmpl = engine::load_chat_template(**file);
  ASSERT_TRUE(tmpl.is_ok()) << tmpl.status().message();
  const Result<std::string> text = render_round_trip(*tmpl);
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_NE(text->find("<|im_start|>assistant\n<tool_call>\n{\"name\": \"get_weather\", "
                       "\"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("<|im_start|>user\n<tool_response>\n{\"temp\": "
                       "20}\n</tool_response><|im_end|>\n"),
            std::string::npos)
      << *text;
  EXPECT_NE(text->find("It is 20 degrees."), std::string::npos) << *text;
  EXPECT_TRUE(text->ends_with("<|im_start|>user\nAnd tomorrow?<|im_end|>\n<|im_start|>assistant\n"))
      << *text;
}

TEST(ToolRoundTrip, EnableThinkingFalseReachesTheQwen3Template) {
  MINFER_REQUIRE_TEST_DATA();
  auto file = GgufFile::open(test::test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf"));
  ASSERT_TRUE(file.is_ok()) << file.status().message();
  auto tmpl = engine::load_chat_template(**file);
  ASSERT_TRUE(tmpl.is_ok()) << tmpl.status().message();
  Json body = Json::parse(R"({"messages": [{"role": "user", "content": "hi"}]})");
  const Result<std::string> thinking = tmpl->render_request(body);
  ASSERT_TRUE(thinking.is_ok()) << thinking.status().message();
  EXPECT_TRUE(thinking->ends_with("<|im_start|>assistant\n")) << *thinking;
  body["chat_template_kwargs"] = Json{{"enable_thinking", false}};
  const Result<std::string> plain = tmpl->render_request(body);
  ASSERT_TRUE(plain.is_ok()) << plain.status().message();
  // An empty think block: the reply starts with the answer.
  EXPECT_TRUE(plain->ends_with("<|im_start|>assistant\n<think>\n\n</think>\n\n")) << *plain;
}

TEST(ToolRoundTrip, Llama3TemplateRendersTheCallAndTheToolResult) {
  std::ifstream in(std::string(MINFER_SOURCE_DIR) +
                   "/tests/chat/templates/meta-llama-Llama-3.3-70B-Instruct.jinja");
  std::stringstream source;
  source << in.rdbuf();
  auto tmpl = chat::ChatTemplate::create(source.str(), "<|begin_of_text|>", "<|eot_id|>");
  ASSERT_TRUE(tmpl.is_ok()) << tmpl.status().message();
  const Result<std::string> text = render_round_trip(*tmpl);
  ASSERT_TRUE(text.is_ok()) << text.status().message();
  EXPECT_NE(text->find("<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": "
                       "\"get_weather\", \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>"),
            std::string::npos)
      << *text;
  // The template prints a string result with tojson (a string is iterable), as Jinja2 does.
  EXPECT_NE(
      text->find("<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp\\\": 20}\"<|eot_id|>"),
      std::string::npos)
      << *text;
  EXPECT_TRUE(
      text->ends_with("And tomorrow?<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"))
      << *text;
}

}  // namespace
}  // namespace minfer::server
