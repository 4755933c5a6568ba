// Anthropic's Messages API on the chat path: a request becomes the chat body the OpenAI path
// checks (system, text / tool_use / tool_result blocks, tools, tool_choice, thinking, stop
// sequences), bad fields are 400s naming them, and a reply's stream of events, put together as
// the SDK does, gives the same Message as the blocking reply.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "server/anthropic_api.h"
#include "server/openai_api.h"
#include "server/wire_format_test_util.h"

namespace minfer::server {
namespace {

Json weather_tool() {
  return Json::parse(R"({"name": "get_weather", "description": "The weather",
    "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}})");
}

TEST(AnthropicRequest, SystemBlocksToolUseAndToolResultBecomeChatMessages) {
  const Json body = Json::parse(R"({
    "model": "m", "max_tokens": 32, "metadata": {"user_id": "u"},
    "system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
    "messages": [
      {"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": [
        {"type": "thinking", "thinking": "Need a tool.", "signature": ""},
        {"type": "text", "text": "Checking."},
        {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}]},
      {"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "21 C"},
        {"type": "text", "text": "And tomorrow?"}]}]})");
  ChatTranslation t;
  ASSERT_FALSE(anthropic_to_chat(body, false, t).has_value());
  const Json& m = t.chat["messages"];
  ASSERT_EQ(m.size(), 5u);
  EXPECT_EQ(m[0], Json::parse(R"({"role": "system", "content": "Be brief."})"));
  EXPECT_EQ(m[1], Json::parse(R"({"role": "user", "content": "Weather?"})"));
  EXPECT_EQ(m[2]["content"], "Checking.");
  EXPECT_EQ(m[2]["reasoning_content"], "Need a tool.");
  EXPECT_EQ(m[2]["tool_calls"][0]["id"], "toolu_1");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["name"], "get_weather");
  EXPECT_EQ(m[2]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(m[3], Json::parse(R"({"role": "tool", "tool_call_id": "toolu_1", "content": "21 C"})"));
  EXPECT_EQ(m[4], Json::parse(R"({"role": "user", "content": "And tomorrow?"})"));
  EXPECT_EQ(t.chat["max_tokens"], 32);
  EXPECT_FALSE(t.chat.contains("metadata"));
  EXPECT_FALSE(t.reasoning_budget.has_value());

  // The chat path takes it as it is.
  ParsedRequest parsed;
  EXPECT_FALSE(parse_request(t.chat, Endpoint::kChat, 1000, parsed).has_value());
  EXPECT_EQ(parsed.params.max_tokens, 32);
}

TEST(AnthropicRequest, ToolsToolChoiceStopSequencesAndThinkingMapOntoTheChatFields) {
  Json body = Json::parse(R"({"model": "m", "max_tokens": 8, "temperature": 0.5, "top_k": 7,
    "stop_sequences": ["END", "STOP"], "messages": [{"role": "user", "content": "hi"}]})");
  body["tools"] = Json::array({weather_tool()});
  const std::vector<std::pair<std::string, ToolChoice>> choices = {
      {R"({"type": "auto"})", ToolChoice::kAuto},
      {R"({"type": "any", "disable_parallel_tool_use": true})", ToolChoice::kRequired},
      {R"({"type": "tool", "name": "get_weather"})", ToolChoice::kFunction},
      {R"({"type": "none"})", ToolChoice::kNone},
  };
  for (const auto& [choice, expected] : choices) {
    body["tool_choice"] = Json::parse(choice);
    ChatTranslation t;
    ASSERT_FALSE(anthropic_to_chat(body, false, t).has_value()) << choice;
    const Json& tool = t.chat["tools"][0];
    EXPECT_EQ(tool["type"], "function");
    // OpenAI's key order (the template prints tools as JSON).
    EXPECT_EQ(tool["function"].dump(),
              R"({"name":"get_weather","description":"The weather","parameters":{"type":"object",)"
              R"("properties":{"city":{"type":"string"}}}})");
    ParsedRequest parsed;
    ASSERT_FALSE(parse_request(t.chat, Endpoint::kChat, 1000, parsed).has_value()) << choice;
    EXPECT_EQ(parsed.params.tool_choice, expected) << choice;
    EXPECT_EQ(parsed.params.parallel_tool_calls, expected != ToolChoice::kRequired);
    EXPECT_EQ(parsed.params.stop, (std::vector<std::string>{"END", "STOP"}));
    EXPECT_EQ(parsed.params.top_k, 7);
    EXPECT_FLOAT_EQ(parsed.params.temperature, 0.5f);
    if (expected == ToolChoice::kFunction) {
      EXPECT_EQ(parsed.params.tool_choice_name, "get_weather");
    }
  }

  body.erase("tool_choice");
  body["thinking"] = Json::parse(R"({"type": "enabled", "budget_tokens": 2048})");
  ChatTranslation on;
  ASSERT_FALSE(anthropic_to_chat(body, false, on).has_value());
  EXPECT_EQ(on.reasoning_budget, 2048);
  EXPECT_EQ(on.chat["chat_template_kwargs"]["enable_thinking"], true);
  EXPECT_EQ(on.chat["reasoning_format"], "deepseek");
  body["thinking"] = Json::parse(R"({"type": "disabled"})");
  ChatTranslation off;
  ASSERT_FALSE(anthropic_to_chat(body, false, off).has_value());
  EXPECT_EQ(off.reasoning_budget, 0);
  EXPECT_EQ(off.chat["chat_template_kwargs"]["enable_thinking"], false);
}

TEST(AnthropicRequest, BadFieldsAre400sNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"messages": [{"role": "user", "content": "x"}]})", "max_tokens"},
      {R"({"max_tokens": 4})", "messages"},
      {R"({"max_tokens": 4, "messages": [{"role": "system", "content": "x"}]})",
       "messages[0].role"},
      {R"({"max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "image"}]}]})",
       "messages[0].content[0]"},
      {R"({"max_tokens": 4, "messages": [{"role": "user", "content": [{"type": "tool_result"}]}]})",
       "messages[0].content[0].tool_use_id"},
      {R"({"max_tokens": 4, "system": 3, "messages": [{"role": "user", "content": "x"}]})",
       "system"},
      {R"({"max_tokens": 4, "tools": [{"name": "f"}], "messages": [{"role": "user", "content": "x"}]})",
       "tools[0].input_schema"},
      {R"({"max_tokens": 4, "tools": [{"type": "web_search_20250305", "name": "s"}],
           "messages": [{"role": "user", "content": "x"}]})",
       "tools[0].type"},
      {R"({"max_tokens": 4, "tool_choice": {"type": "maybe"}, "messages": [{"role": "user", "content": "x"}]})",
       "tool_choice.type"},
      {R"({"max_tokens": 4, "thinking": {"type": "enabled", "budget_tokens": 0},
           "messages": [{"role": "user", "content": "x"}]})",
       "thinking.budget_tokens"},
      {R"({"max_tokens": 4, "stop_sequences": "END", "messages": [{"role": "user", "content": "x"}]})",
       "stop_sequences"},
  };
  for (const auto& [text, param] : cases) {
    ChatTranslation t;
    const std::optional<ApiError> e = anthropic_to_chat(Json::parse(text), false, t);
    ASSERT_TRUE(e.has_value()) << text;
    EXPECT_EQ(e->status, 400) << text;
    EXPECT_EQ(e->param, param) << text << ": " << e->message;
  }
  // count_tokens needs no max_tokens.
  ChatTranslation t;
  EXPECT_FALSE(
      anthropic_to_chat(Json::parse(R"({"messages": [{"role": "user", "content": "x"}]})"), true, t)
          .has_value());
}

TEST(AnthropicErrors, StatusesMapOntoAnthropicsErrorTypes) {
  EXPECT_STREQ(anthropic_error_type(400), "invalid_request_error");
  EXPECT_STREQ(anthropic_error_type(401), "authentication_error");
  EXPECT_STREQ(anthropic_error_type(404), "not_found_error");
  EXPECT_STREQ(anthropic_error_type(503), "overloaded_error");
  EXPECT_STREQ(anthropic_error_type(500), "api_error");
  const Json body = Json::parse(anthropic_error_body(
      404, R"({"error": {"message": "no model 'x'", "type": "invalid_request_error"}})"));
  EXPECT_EQ(body, Json::parse(R"({"type": "error", "error": {"type": "not_found_error",
                                  "message": "no model 'x'"}})"));
}

// The frames' events, and the Message the SDK puts together from them.
struct Streamed {
  std::vector<std::string> names;
  Json message;
};

Streamed collect(const std::vector<std::string>& frames) {
  Streamed s;
  std::map<int, std::string> partial_json;
  for (const std::string& frame : frames) {
    EXPECT_EQ(frame.rfind("event: ", 0), 0u) << frame;
    const size_t nl = frame.find('\n');
    s.names.push_back(frame.substr(7, nl - 7));
    const Json data = Json::parse(frame.substr(nl + 7));  // after "\ndata: "
    EXPECT_EQ(data["type"], s.names.back());
    if (s.names.back() == "message_start") s.message = data["message"];
    if (s.names.back() == "content_block_start") {
      s.message["content"].push_back(data["content_block"]);
    }
    if (s.names.back() == "content_block_delta") {
      Json& block = s.message["content"][data["index"].get<size_t>()];
      const Json& delta = data["delta"];
      if (delta["type"] == "text_delta")
        block["text"] = block["text"].get<std::string>() + delta["text"].get<std::string>();
      if (delta["type"] == "thinking_delta") {
        block["thinking"] =
            block["thinking"].get<std::string>() + delta["thinking"].get<std::string>();
      }
      if (delta["type"] == "input_json_delta") {
        partial_json[data["index"].get<int>()] += delta["partial_json"].get<std::string>();
      }
    }
    const int index = data.value("index", -1);
    if (s.names.back() == "content_block_stop" && partial_json.count(index) != 0) {
      s.message["content"][static_cast<size_t>(index)]["input"] = Json::parse(partial_json[index]);
    }
    if (s.names.back() == "message_delta") {
      s.message["stop_reason"] = data["delta"]["stop_reason"];
      s.message["stop_sequence"] = data["delta"]["stop_sequence"];
      s.message["usage"] = data["usage"];
    }
  }
  return s;
}

TEST(AnthropicReply, StreamedEventsPutTogetherGiveTheBlockingMessage) {
  ReplyInfo info;
  info.id = "msg_1";
  info.model = "m";
  std::vector<BatchEvent> events(4);
  events[0].reasoning = "Need ";
  events[1].reasoning = "weather.";
  events[1].text = "Checking.";
  events[2].tool_calls = {{0, "call_a", "get_weather", ""}, {0, "", "", R"({"city":)"}};
  events[3].tool_calls = {{0, "", "", R"("Paris"})"}, {1, "call_b", "get_time", "{}"}};
  finish_event(events[3], FinishReason::kToolCalls, 20, 8, 30);

  auto format = anthropic_format(info, 20);
  ReplyParts parts;
  const std::vector<std::string> frames = stream_all(*format, events, parts);
  const Streamed s = collect(frames);
  const std::vector<std::string> expected = {"message_start",       "ping",
                                             "content_block_start", "content_block_delta",
                                             "content_block_delta", "content_block_stop",
                                             "content_block_start", "content_block_delta",
                                             "content_block_stop",  "content_block_start",
                                             "content_block_delta", "content_block_delta",
                                             "content_block_stop",  "content_block_start",
                                             "content_block_delta", "content_block_stop",
                                             "message_delta",       "message_stop"};
  EXPECT_EQ(s.names, expected);

  const Json whole = format->complete(parts, {}, events.back());
  EXPECT_EQ(whole["stop_reason"], "tool_use");
  EXPECT_EQ(whole["usage"]["input_tokens"], 12);
  EXPECT_EQ(whole["usage"]["cache_read_input_tokens"], 8);
  EXPECT_EQ(whole["usage"]["output_tokens"], 30);
  ASSERT_EQ(whole["content"].size(), 4u);
  EXPECT_EQ(whole["content"][0]["thinking"], "Need weather.");
  EXPECT_EQ(whole["content"][1]["text"], "Checking.");
  EXPECT_EQ(whole["content"][2]["input"], Json::parse(R"({"city": "Paris"})"));
  EXPECT_EQ(whole["content"][3]["name"], "get_time");
  EXPECT_EQ(s.message, whole);
}

TEST(AnthropicReply, StopSequenceEmptyReplyAndEngineError) {
  ReplyInfo info;
  info.id = "msg_2";
  BatchEvent done;
  finish_event(done, FinishReason::kStop, 3, 0, 1);
  done.stop = "END";
  auto format = anthropic_format(info, 3);
  const Json whole = format->complete(ReplyParts{}, {}, done);
  EXPECT_EQ(whole["stop_reason"], "stop_sequence");
  EXPECT_EQ(whole["stop_sequence"], "END");
  EXPECT_EQ(whole["content"], Json::parse(R"([{"type": "text", "text": ""}])"));
  std::vector<std::string> frames = format->stream_open();
  for (std::string& f : format->stream_event(done)) frames.push_back(std::move(f));
  EXPECT_EQ(collect(frames).message, whole);

  BatchEvent failed;
  failed.done = true;
  failed.error = "[engine] out of memory";
  auto failing = anthropic_format(info, 3);
  const std::vector<std::string> error_frames = failing->stream_event(failed);
  ASSERT_EQ(error_frames.size(), 1u);
  EXPECT_EQ(error_frames[0].rfind("event: error\n", 0), 0u);
  EXPECT_NE(error_frames[0].find(R"("type":"api_error")"), std::string::npos);
}

}  // namespace
}  // namespace minfer::server
