// gpt-oss's harmony template and Gemma 4's two templates (../shared/templates) rendered over
// conversations with system prompts, tools, tool calls and results, reasoning and their own
// switches (reasoning_effort, enable_thinking), compared byte for byte with Python Jinja2; and
// the reply formats detected from them.
#include <map>

#include "chat/reply_format.h"
#include "chat_test_util.h"

namespace minfer::chat::test::channel_templates {
namespace {

ojson tools() {
  return ojson::parse(R"([{"type": "function", "function": {
      "name": "get_weather", "description": "Get the weather in a city",
      "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "The city"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
        "days": {"type": "integer", "description": "Forecast days"},
        "hourly": {"type": "boolean"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "where": {"type": "object", "properties": {"lat": {"type": "number"}},
                  "required": ["lat"]}},
        "required": ["city"]}}},
    {"type": "function", "function": {"name": "now", "description": "The time",
      "parameters": {"type": "object", "properties": {}}}}])");
}

// The conversations: `thinking` is the field gpt-oss's template reads, reasoning_content the one
// Gemma 4's reads; each template ignores the other's.
std::vector<std::pair<std::string, ojson>> conversations() {
  std::vector<std::pair<std::string, ojson>> c;
  auto add = [&](const std::string& name, const char* json, bool with_tools) {
    ojson request = ojson::parse(json);
    if (with_tools) request["tools"] = tools();
    c.emplace_back(name, std::move(request));
  };
  add("user", R"({"messages": [{"role": "user", "content": "Hello!"}]})", false);
  add("system_multi_turn", R"({"messages": [{"role": "system", "content": " Be brief. "},
      {"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Hello."},
      {"role": "user", "content": "Joke?"}]})",
      false);
  add("effort_low", R"({"reasoning_effort": "low", "messages": [
      {"role": "user", "content": "2+2?"}]})",
      false);
  add("effort_minimal", R"({"reasoning_effort": "minimal", "messages": [
      {"role": "user", "content": "2+2?"}]})",
      false);
  add("effort_high_kwargs", R"({"chat_template_kwargs": {"reasoning_effort": "high"},
      "messages": [{"role": "developer", "content": "Dev."}, {"role": "user", "content": "Q"}]})",
      false);
  add("thinking_on", R"({"chat_template_kwargs": {"enable_thinking": true}, "messages": [
      {"role": "system", "content": "sys"}, {"role": "user", "content": "Think."}]})",
      false);
  add("thinking_off", R"({"enable_thinking": false, "messages": [
      {"role": "user", "content": "Quick."}]})",
      false);
  add("history_with_thoughts", R"({"messages": [{"role": "user", "content": "Q1"},
      {"role": "assistant", "thinking": "hidden", "reasoning_content": "hidden",
       "content": "<|channel>thought\nold thought<channel|>A1"},
      {"role": "user", "content": "Q2"}]})",
      false);
  add("last_turn_training", R"({"add_generation_prompt": false, "messages": [
      {"role": "user", "content": "Q"},
      {"role": "assistant", "thinking": "T", "content": "A"}]})",
      false);
  add("tools", R"({"messages": [{"role": "system", "content": "Use tools."},
      {"role": "user", "content": "Weather in 東京?"}]})",
      true);
  add("tool_round_trip", R"({"messages": [{"role": "user", "content": "Weather in Paris?"},
      {"role": "assistant", "content": "", "thinking": "Need the tool.",
       "reasoning_content": "Need the tool.", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Paris", "days": 2,
          "hourly": true, "tags": ["a", "b"], "where": {"lat": 48.85}, "unit": null}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "{\"temp\": 21}"}]})",
      true);
  add("tool_round_trip_answered", R"({"messages": [{"role": "user", "content": "Weather?"},
      {"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function",
        "function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
      {"role": "tool", "tool_call_id": "c1", "content": "cold"},
      {"role": "assistant", "content": "It is cold."},
      {"role": "user", "content": "Thanks"}]})",
      true);
  add("parallel_calls", R"({"enable_thinking": true, "messages": [
      {"role": "user", "content": "Paris and Rome?"},
      {"role": "assistant", "content": "", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "b", "type": "function", "function": {"name": "now", "arguments": {}}}]},
      {"role": "tool", "tool_call_id": "a", "content": "sunny"},
      {"role": "tool", "tool_call_id": "b", "content": "noon"}]})",
      true);
  add("parallel_calls_reasoning", R"({"messages": [
      {"role": "user", "content": "Paris, Rome, time?"},
      {"role": "assistant", "content": "", "thinking": "Three calls.",
       "reasoning_content": "Three calls.", "tool_calls": [
        {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
        {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}},
        {"id": "c", "type": "function", "function": {"name": "now", "arguments": {}}}]},
      {"role": "tool", "tool_call_id": "c", "content": "noon"},
      {"role": "tool", "tool_call_id": "a", "content": "sunny"},
      {"role": "tool", "tool_call_id": "b", "content": "rain"}]})",
      true);
  return c;
}

// gpt-oss's template renders an assistant message's first call only, and names each tool
// result after the call before it: minfer gives it one message per call, each followed by its
// results (ChatTemplate::render). Jinja2 renders the same messages written that way by hand.
const std::map<std::string, const char*>& harmony_split_messages() {
  static const std::map<std::string, const char*> kSplit = {
      {"parallel_calls", R"([{"role": "user", "content": "Paris and Rome?"},
        {"role": "assistant", "content": "", "tool_calls": [
          {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "a", "content": "sunny"},
        {"role": "assistant", "content": "", "tool_calls": [
          {"id": "b", "type": "function", "function": {"name": "now", "arguments": {}}}]},
        {"role": "tool", "tool_call_id": "b", "content": "noon"}])"},
      {"parallel_calls_reasoning", R"([{"role": "user", "content": "Paris, Rome, time?"},
        {"role": "assistant", "content": "", "thinking": "Three calls.",
         "reasoning_content": "Three calls.", "tool_calls": [
          {"id": "a", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}}]},
        {"role": "tool", "tool_call_id": "a", "content": "sunny"},
        {"role": "assistant", "content": "", "tool_calls": [
          {"id": "b", "type": "function", "function": {"name": "get_weather", "arguments": {"city": "Rome"}}}]},
        {"role": "tool", "tool_call_id": "b", "content": "rain"},
        {"role": "assistant", "content": "", "tool_calls": [
          {"id": "c", "type": "function", "function": {"name": "now", "arguments": {}}}]},
        {"role": "tool", "tool_call_id": "c", "content": "noon"}])"},
  };
  return kSplit;
}

struct Template {
  const char* file;
  const char* bos;
  const char* eos;
};

constexpr Template kTemplates[] = {
    {"openai-gpt-oss-120b.jinja", "<|startoftext|>", "<|return|>"},
    {"google-gemma-4-31B-it.jinja", "<bos>", "<eos>"},
    {"google-gemma-4-31B-it-interleaved.jinja", "<bos>", "<eos>"},
};

TEST(ChannelTemplates, GptOssAndGemma4MatchJinja2) {
  MINFER_REQUIRE_TEST_DATA();
  MINFER_REQUIRE_PYTHON_JINJA2();
  for (const Template& t : kTemplates) {
    const std::string source =
        read_text(minfer::test::test_data_path(std::string("templates/") + t.file));
    ASSERT_FALSE(source.empty()) << t.file;
    std::vector<Case> cases;
    const bool harmony = std::string(t.file).starts_with("openai");
    for (auto& [name, request] : conversations()) {
      Case c{std::string(t.file) + "/" + name, source, request, t.bos, t.eos};
      if (const auto split = harmony_split_messages().find(name);
          harmony && split != harmony_split_messages().end()) {
        c.python_request = request;
        c.python_request["messages"] = ojson::parse(split->second);
      }
      cases.push_back(std::move(c));
    }
    const int rendered = expect_same_as_python(cases);
    EXPECT_EQ(rendered, static_cast<int>(cases.size())) << t.file;
  }
}

TEST(ChannelTemplates, FormatsAreDetectedFromTheTemplates) {
  MINFER_REQUIRE_TEST_DATA();
  for (const Template& t : kTemplates) {
    const ReplyFormat f = detect_reply_format(
        read_text(minfer::test::test_data_path(std::string("templates/") + t.file)));
    const bool harmony = std::string(t.file).starts_with("openai");
    EXPECT_EQ(f.channels, harmony ? ChannelFormat::kHarmony : ChannelFormat::kGemma4) << t.file;
    EXPECT_EQ(f.tool_calls, harmony ? ToolCallFormat::kHarmony : ToolCallFormat::kGemma4);
    EXPECT_TRUE(f.reasoning);
  }
}

// What the switches do to the prompt: reasoning_effort is harmony's "Reasoning:" line (medium
// when absent); enable_thinking opens Gemma 4's system turn with <|think|> and, off, ends the
// prompt with an empty thought.
TEST(ChannelTemplates, SwitchesChangeThePrompt) {
  MINFER_REQUIRE_TEST_DATA();
  auto render = [](const char* file, const char* request) {
    auto t = ChatTemplate::create(
        read_text(minfer::test::test_data_path(std::string("templates/") + file)), "<bos>", "");
    EXPECT_TRUE(t.is_ok());
    auto out = t->render_request(ojson::parse(request));
    EXPECT_TRUE(out.is_ok()) << out.status().message();
    return out.is_ok() ? out.value() : std::string();
  };
  const char* kUser = R"("messages": [{"role": "user", "content": "Hi"}])";
  const std::string medium = render(kTemplates[0].file, (std::string("{") + kUser + "}").c_str());
  const std::string high = render(
      kTemplates[0].file, (std::string(R"({"reasoning_effort": "high", )") + kUser + "}").c_str());
  EXPECT_NE(medium.find("\nReasoning: medium\n"), std::string::npos);
  EXPECT_NE(high.find("\nReasoning: high\n"), std::string::npos);
  EXPECT_TRUE(high.ends_with("<|start|>user<|message|>Hi<|end|><|start|>assistant"));
  const std::string off = render(kTemplates[1].file, (std::string("{") + kUser + "}").c_str());
  const std::string on =
      render(kTemplates[1].file,
             (std::string(R"({"chat_template_kwargs": {"enable_thinking": true}, )") + kUser + "}")
                 .c_str());
  EXPECT_EQ(off, "<bos><|turn>user\nHi<turn|>\n<|turn>model\n<|channel>thought\n<channel|>");
  EXPECT_EQ(on, "<bos><|turn>system\n<|think|>\n<turn|>\n<|turn>user\nHi<turn|>\n<|turn>model\n");
}

// OpenAI's reasoning_effort none and minimal (no thinking) reach gpt-oss's template as low, the
// least its "Reasoning:" line knows, never as "Reasoning: none"; chat_template_kwargs pass as
// given.
TEST(ChannelTemplates, NoReasoningEffortIsHarmonysLow) {
  MINFER_REQUIRE_TEST_DATA();
  auto t = ChatTemplate::create(
      read_text(minfer::test::test_data_path("templates/openai-gpt-oss-120b.jinja")), "", "");
  ASSERT_TRUE(t.is_ok());
  for (const char* effort : {"none", "minimal", "low"}) {
    ojson request = ojson::parse(R"({"messages": [{"role": "user", "content": "Hi"}]})");
    request["reasoning_effort"] = effort;
    auto out = t->render_request(request);
    ASSERT_TRUE(out.is_ok()) << out.status().message();
    EXPECT_NE(out->find("\nReasoning: low\n"), std::string::npos) << effort << "\n" << *out;
  }
  EXPECT_EQ(template_reasoning_effort("high"), "high");
  EXPECT_EQ(template_reasoning_effort("medium"), "medium");
  auto kwargs = t->render_request(ojson::parse(
      R"({"chat_template_kwargs": {"reasoning_effort": "custom"}, "messages": [{"role": "user", "content": "Hi"}]})"));
  ASSERT_TRUE(kwargs.is_ok());
  EXPECT_NE(kwargs->find("\nReasoning: custom\n"), std::string::npos);
}

// OpenAI clients send an assistant's reasoning as reasoning_content; gpt-oss's template reads
// thinking: minfer gives it as both, so a tool call's reasoning renders back.
TEST(ChannelTemplates, ReasoningContentIsHarmonysThinking) {
  MINFER_REQUIRE_TEST_DATA();
  auto t = ChatTemplate::create(
      read_text(minfer::test::test_data_path("templates/openai-gpt-oss-120b.jinja")), "", "");
  ASSERT_TRUE(t.is_ok());
  ojson request = ojson::parse(R"({"messages": [{"role": "user", "content": "W?"},
      {"role": "assistant", "content": "", "reasoning_content": "Need it.", "tool_calls": [
        {"id": "c", "type": "function", "function": {"name": "get_weather",
         "arguments": {"city": "Paris"}}}]},
      {"role": "tool", "tool_call_id": "c", "content": "sunny"}]})");
  request["tools"] = tools();
  ojson as_thinking = request;
  as_thinking["messages"][1].erase("reasoning_content");
  as_thinking["messages"][1]["thinking"] = "Need it.";
  auto a = t->render_request(request);
  auto b = t->render_request(as_thinking);
  ASSERT_TRUE(a.is_ok() && b.is_ok());
  EXPECT_EQ(a.value(), b.value());
  EXPECT_NE(a.value().find("<|start|>assistant<|channel|>analysis<|message|>Need it.<|end|>"
                           "<|start|>assistant to=functions.get_weather<|channel|>commentary "
                           "json<|message|>{\"city\": \"Paris\"}<|call|>"
                           "<|start|>functions.get_weather to=assistant<|channel|>commentary"
                           "<|message|>\"sunny\"<|end|><|start|>assistant"),
            std::string::npos)
      << a.value();
}

// Several calls of one assistant message: every call renders in harmony, each result under
// its own call's name.
TEST(ChannelTemplates, HarmonyRendersEveryCallOfAMessage) {
  MINFER_REQUIRE_TEST_DATA();
  auto t = ChatTemplate::create(
      read_text(minfer::test::test_data_path("templates/openai-gpt-oss-120b.jinja")), "", "");
  ASSERT_TRUE(t.is_ok());
  ojson request;
  for (auto& [name, r] : conversations()) {
    if (name == "parallel_calls_reasoning") request = r;
  }
  auto out = t->render_request(request);
  ASSERT_TRUE(out.is_ok()) << out.status().message();
  const std::string call = "<|start|>assistant to=functions.";
  const std::string result = " to=assistant<|channel|>commentary<|message|>";
  EXPECT_NE(out->find("<|channel|>analysis<|message|>Three calls.<|end|>" + call + "get_weather<"),
            std::string::npos)
      << *out;
  EXPECT_NE(out->find("{\"city\": \"Rome\"}<|call|><|start|>functions.get_weather" + result +
                      "\"rain\"<|end|>" + call + "now<"),
            std::string::npos)
      << *out;
  EXPECT_NE(out->find("<|start|>functions.now" + result + "\"noon\"<|end|><|start|>assistant"),
            std::string::npos)
      << *out;
  size_t n_calls = 0;
  for (size_t at = out->find("<|call|>"); at != std::string::npos;
       at = out->find("<|call|>", at + 1)) {
    ++n_calls;
  }
  EXPECT_EQ(n_calls, 3u);
}

}  // namespace
}  // namespace minfer::chat::test::channel_templates
