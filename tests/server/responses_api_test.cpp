// OpenAI's Responses API on the chat path: input items become the chat body the OpenAI path
// checks (a function_call joins the assistant message before it, its output is a tool message),
// text.format becomes the json-schema constraint, reasoning.effort turns thinking on or off, a
// stateful request is refused; a reply's typed events, numbered in order, end with the same
// Response object the blocking reply is.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "server/openai_api.h"
#include "server/responses_api.h"
#include "server/wire_format_test_util.h"

namespace minfer::server {
namespace {

TEST(ResponsesRequest, InputItemsBecomeChatMessages) {
  const Json body = Json::parse(R"({
    "model": "m", "instructions": "Be brief.", "max_output_tokens": 16, "store": false,
    "input": [
      {"role": "developer", "content": "Use tools."},
      {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
      {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Checking."}]},
      {"type": "reasoning", "id": "rs_1", "summary": []},
      {"type": "function_call", "call_id": "call_1", "name": "get_weather", "arguments": "{\"city\":\"Paris\"}"},
      {"type": "function_call", "call_id": "call_2", "name": "get_time", "arguments": "{}"},
      {"type": "function_call_output", "call_id": "call_1", "output": "21 C"},
      {"type": "function_call_output", "call_id": "call_2", "output": "noon"}]})");
  ChatTranslation t;
  ASSERT_FALSE(responses_to_chat(body, t).has_value());
  const Json& m = t.chat["messages"];
  ASSERT_EQ(m.size(), 6u);
  EXPECT_EQ(m[0], Json::parse(R"({"role": "system", "content": "Be brief."})"));
  EXPECT_EQ(m[1], Json::parse(R"({"role": "system", "content": "Use tools."})"));
  EXPECT_EQ(m[2], Json::parse(R"({"role": "user", "content": "Weather?"})"));
  EXPECT_EQ(m[3]["content"], "Checking.");
  ASSERT_EQ(m[3]["tool_calls"].size(), 2u);
  EXPECT_EQ(m[3]["tool_calls"][1]["id"], "call_2");
  EXPECT_EQ(m[3]["tool_calls"][0]["function"]["arguments"], R"({"city":"Paris"})");
  EXPECT_EQ(m[4], Json::parse(R"({"role": "tool", "tool_call_id": "call_1", "content": "21 C"})"));
  EXPECT_EQ(m[5]["tool_call_id"], "call_2");
  EXPECT_EQ(t.chat["max_tokens"], 16);

  ParsedRequest parsed;
  ASSERT_FALSE(parse_request(t.chat, Endpoint::kChat, 1000, parsed).has_value());
  EXPECT_EQ(parsed.params.max_tokens, 16);
  // A call with no message before it is an assistant message of its own.
  ChatTranslation alone;
  ASSERT_FALSE(responses_to_chat(Json::parse(R"({"input": [{"type": "function_call",
    "call_id": "c", "name": "f", "arguments": "{}"}]})"),
                                 alone)
                   .has_value());
  EXPECT_EQ(alone.chat["messages"][0]["role"], "assistant");
  EXPECT_EQ(alone.chat["messages"][0]["content"], "");
}

TEST(ResponsesRequest, ToolsTextFormatAndReasoningMapOntoTheChatFields) {
  const Json body = Json::parse(R"({
    "input": "hi", "temperature": 0.25, "top_p": 0.5, "parallel_tool_calls": false,
    "tools": [{"type": "function", "name": "get_time", "description": "Now",
               "parameters": {"type": "object", "properties": {}}}],
    "tool_choice": {"type": "function", "name": "get_time"},
    "reasoning": {"effort": "high"}})");
  ChatTranslation t;
  ASSERT_FALSE(responses_to_chat(body, t).has_value());
  EXPECT_EQ(
      t.chat["tools"][0]["function"].dump(),
      R"({"name":"get_time","description":"Now","parameters":{"type":"object","properties":{}}})");
  EXPECT_EQ(t.chat["chat_template_kwargs"]["enable_thinking"], true);
  EXPECT_EQ(t.reasoning_budget, -1);  // high: no budget
  ParsedRequest parsed;
  ASSERT_FALSE(parse_request(t.chat, Endpoint::kChat, 1000, parsed).has_value());
  EXPECT_EQ(parsed.params.tool_choice, ToolChoice::kFunction);
  EXPECT_EQ(parsed.params.tool_choice_name, "get_time");
  EXPECT_FALSE(parsed.params.parallel_tool_calls);
  EXPECT_FLOAT_EQ(parsed.params.top_p, 0.5f);

  Json schema_body = Json::parse(R"({"input": "hi", "reasoning": {"effort": "minimal"},
    "text": {"format": {"type": "json_schema", "name": "p",
                        "schema": {"type": "object", "properties": {"a": {"type": "integer"}}}}}})");
  ChatTranslation s;
  ASSERT_FALSE(responses_to_chat(schema_body, s).has_value());
  EXPECT_EQ(s.reasoning_budget, 0);
  EXPECT_EQ(s.chat["response_format"]["type"], "json_schema");
  ParsedRequest with_schema;
  ASSERT_FALSE(parse_request(s.chat, Endpoint::kChat, 1000, with_schema).has_value());
  EXPECT_FALSE(with_schema.params.grammar.empty());  // the schema's grammar
}

TEST(ResponsesRequest, StatefulAndBadFieldsAre400sNamingThem) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {R"({"input": "x", "store": true})", "store"},
      {R"({"input": "x", "previous_response_id": "resp_1"})", "previous_response_id"},
      {R"({"input": "x", "conversation": "c"})", "conversation"},
      {R"({})", "input"},
      {R"({"input": 3})", "input"},
      {R"({"input": [{"type": "file_search_call"}]})", "input[0].type"},
      {R"({"input": [{"role": "robot", "content": "x"}]})", "input[0].role"},
      {R"({"input": [{"role": "user", "content": [{"type": "input_image"}]}]})",
       "input[0].content[0]"},
      {R"({"input": [{"type": "function_call", "name": "f"}]})", "input[0]"},
      {R"({"input": [{"type": "function_call_output", "output": "x"}]})", "input[0].call_id"},
      {R"({"input": "x", "tools": [{"type": "web_search"}]})", "tools[0]"},
      {R"({"input": "x", "tool_choice": 3})", "tool_choice"},
      {R"({"input": "x", "max_output_tokens": 0})", "max_output_tokens"},
      {R"({"input": "x", "text": {"format": {"type": "json_schema"}}})", "text.format.schema"},
      {R"({"input": "x", "reasoning": {"effort": "max"}})", "reasoning.effort"},
  };
  for (const auto& [text, param] : cases) {
    ChatTranslation t;
    const std::optional<ApiError> e = responses_to_chat(Json::parse(text), t);
    ASSERT_TRUE(e.has_value()) << text;
    EXPECT_EQ(e->status, 400) << text;
    EXPECT_EQ(e->param, param) << text << ": " << e->message;
  }
}

// The streamed events' types; each event's sequence_number is its place.
std::vector<std::string> event_types(const std::vector<std::string>& frames, Json& last) {
  std::vector<std::string> types;
  for (const std::string& frame : frames) {
    const size_t nl = frame.find('\n');
    const Json data = Json::parse(frame.substr(nl + 7));
    EXPECT_EQ(frame.substr(7, nl - 7), data["type"]);
    EXPECT_EQ(data["sequence_number"], types.size());
    types.push_back(data["type"]);
    last = data;
  }
  return types;
}

TEST(ResponsesReply, TypedEventsEndWithTheBlockingResponse) {
  ReplyInfo info;
  info.id = "resp_7";
  info.model = "m";
  info.created = 1234;
  std::vector<BatchEvent> events(3);
  events[0].reasoning = "Hm.";
  events[0].text = "Let ";
  events[1].text = "me see.";
  events[1].tool_calls = {{0, "call_a", "get_weather", ""}, {0, "", "", R"({"city":)"}};
  events[2].tool_calls = {{0, "", "", R"("Oslo"})"}};
  finish_event(events[2], FinishReason::kToolCalls, 10, 4, 9);

  auto format = responses_format(info, 10);
  ReplyParts parts;
  const std::vector<std::string> frames = stream_all(*format, events, parts);
  Json last;
  const std::vector<std::string> types = event_types(frames, last);
  const std::vector<std::string> expected = {"response.created",
                                             "response.in_progress",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.reasoning_text.delta",
                                             "response.reasoning_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.content_part.added",
                                             "response.output_text.delta",
                                             "response.output_text.delta",
                                             "response.output_text.done",
                                             "response.content_part.done",
                                             "response.output_item.done",
                                             "response.output_item.added",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.delta",
                                             "response.function_call_arguments.done",
                                             "response.output_item.done",
                                             "response.completed"};
  EXPECT_EQ(types, expected);

  const Json whole = format->complete(parts, {}, events.back());
  EXPECT_EQ(last["response"], whole);
  EXPECT_EQ(whole["status"], "completed");
  ASSERT_EQ(whole["output"].size(), 3u);
  EXPECT_EQ(whole["output"][0]["content"][0]["text"], "Hm.");
  EXPECT_EQ(whole["output"][1]["content"][0]["text"], "Let me see.");
  EXPECT_EQ(whole["output"][2]["id"], "fc_7_2");
  EXPECT_EQ(whole["output"][2]["call_id"], "call_a");
  EXPECT_EQ(whole["output"][2]["arguments"], R"({"city":"Oslo"})");
  EXPECT_EQ(whole["usage"], Json::parse(R"({"input_tokens": 10, "input_tokens_details":
    {"cached_tokens": 4}, "output_tokens": 9, "output_tokens_details": {"reasoning_tokens": 0},
    "total_tokens": 19})"));
}

TEST(ResponsesReply, MaxOutputTokensIsIncompleteAndAnEmptyReplyIsAnEmptyMessage) {
  ReplyInfo info;
  info.id = "resp_8";
  BatchEvent done;
  finish_event(done, FinishReason::kLength, 1, 0, 1);
  auto format = responses_format(info, 1);
  const Json whole = format->complete(ReplyParts{}, {}, done);
  EXPECT_EQ(whole["status"], "incomplete");
  EXPECT_EQ(whole["incomplete_details"]["reason"], "max_output_tokens");
  ASSERT_EQ(whole["output"].size(), 1u);
  EXPECT_EQ(whole["output"][0]["content"][0]["text"], "");
  std::vector<std::string> frames = format->stream_open();
  for (std::string& f : format->stream_event(done)) frames.push_back(std::move(f));
  Json last;
  EXPECT_EQ(event_types(frames, last).back(), "response.incomplete");
  EXPECT_EQ(last["response"], whole);
}

}  // namespace
}  // namespace minfer::server
