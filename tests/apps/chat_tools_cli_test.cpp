// `minfer chat --tools` through a pipe, on the tiny Qwen3 model (real vocabulary and template,
// random weights) with --tool-choice forcing a call: the call is shown, its result comes from the
// user's lines (ended by an empty line) or from --tool-cmd (the arguments on the command's stdin,
// its stdout the result, a non-zero exit an error result), the call and the result stay in the
// conversation (/messages), and the model replies again after them. Bad tool flags are refused.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "test_util.h"

namespace minfer {
namespace {

using ChatJson = nlohmann::json;
using test::CommandResult;
using test::run_minfer_chat;
using test::shell_quote;

constexpr const char* kTools = R"([{"type": "function", "function": {"name": "add",
  "description": "a + b", "parameters": {"type": "object", "properties": {"a": {"type":
  "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]}}}])";

// The JSON line /messages printed (the last line of stdout that parses as an array).
ChatJson printed_messages(const std::string& out) {
  ChatJson found;
  size_t at = 0;
  while (at < out.size()) {
    size_t end = out.find('\n', at);
    if (end == std::string::npos) end = out.size();
    const std::string line = out.substr(at, end - at);
    if (!line.empty() && line[0] == '[') {
      ChatJson parsed = ChatJson::parse(line, nullptr, false);
      if (parsed.is_array()) found = std::move(parsed);
    }
    at = end + 1;
  }
  return found;
}

struct ToolChat {
  test::TempDir dir;
  std::string tools_file = dir.file("tools.json");
  ToolChat() {
    test::write_file_bytes(tools_file, std::vector<uint8_t>(kTools, kTools + std::strlen(kTools)));
  }

  CommandResult run(const std::string& lines, const std::string& extra) const {
    const std::string model = test::test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf");
    return run_minfer_chat(lines, "-m " + shell_quote(model) + " --tools " +
                                      shell_quote(tools_file) +
                                      " --tool-choice add --parallel-tool-calls false -n 120 "
                                      "--temp 0 " +
                                      extra);
  }

  // The conversation /messages prints after `lines` (the run must succeed).
  ChatJson messages_after(const std::string& lines, const std::string& extra) const {
    const CommandResult r = run(lines + "/messages\n", extra);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return printed_messages(r.out);
  }
};

// The messages after the user's: the assistant's call of add, the tool's result, a reply.
void expect_call_result_reply(const ChatJson& messages, const std::string& result) {
  ASSERT_GE(messages.size(), 4u) << messages.dump();
  EXPECT_EQ(messages[0]["role"], "user");
  const ChatJson& call = messages[1];
  EXPECT_EQ(call["role"], "assistant");
  ASSERT_TRUE(call.contains("tool_calls")) << call.dump();
  EXPECT_EQ(call["tool_calls"][0]["function"]["name"], "add");
  EXPECT_TRUE(call["tool_calls"][0]["function"]["arguments"].is_object()) << call.dump();
  const ChatJson& tool = messages[2];
  EXPECT_EQ(tool["role"], "tool");
  EXPECT_EQ(tool["name"], "add");
  EXPECT_EQ(tool["tool_call_id"], call["tool_calls"][0]["id"]);
  EXPECT_EQ(tool["content"], result);
  EXPECT_EQ(messages[3]["role"], "assistant");  // the model went on after the result
}

TEST(ChatTools, TheUserTypesTheResultEndedByAnEmptyLine) {
  MINFER_REQUIRE_TEST_DATA();
  ToolChat chat;
  const CommandResult r = chat.run("What is 2 + 3?\n5\nfive\n\n/messages\n", "");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("[tool call] add("), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("[tool result for add]"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("[tool result] add: 5\nfive"), std::string::npos) << r.out;
  expect_call_result_reply(printed_messages(r.out), "5\nfive");
}

TEST(ChatTools, RegenAfterToolResultsIsNotForcedToCallAgain) {
  MINFER_REQUIRE_TEST_DATA();
  ToolChat chat;
  const ChatJson messages = chat.messages_after("What is 2 + 3?\n/regen\n", "--tool-cmd add=cat");
  ASSERT_EQ(messages.size(), 4u) << messages.dump();
  EXPECT_EQ(messages[3]["role"], "assistant");
  EXPECT_FALSE(messages[3].contains("tool_calls")) << messages.dump();
}

TEST(ChatTools, ToolCmdGetsTheArgumentsOnStdinAndItsExitStatusCounts) {
  MINFER_REQUIRE_TEST_DATA();
  ToolChat chat;
  // cat answers with the arguments themselves: what the command read is what the model wrote.
  const ChatJson messages = chat.messages_after("What is 2 + 3?\n", "--tool-cmd add=cat");
  ASSERT_GE(messages.size(), 3u) << messages.dump();
  const ChatJson& arguments = messages[1]["tool_calls"][0]["function"]["arguments"];
  const std::string content = messages[2]["content"].get<std::string>();
  EXPECT_EQ(ChatJson::parse(content, nullptr, false), arguments) << content;
  expect_call_result_reply(messages, content);

  expect_call_result_reply(
      chat.messages_after("What is 2 + 3?\n", "--tool-cmd " + shell_quote("add=echo no; exit 3")),
      "error: the tool's command exited with status 3: no");
}

TEST(ChatTools, BadToolFlagsAreRefusedByName) {
  MINFER_REQUIRE_TEST_DATA();
  ToolChat chat;
  const CommandResult unknown = chat.run("hi\n", "--tool-cmd nope=cat");
  EXPECT_NE(unknown.exit_code, 0);
  EXPECT_NE(unknown.err.find("--tool-cmd 'nope=cat'"), std::string::npos) << unknown.err;
  const std::string model = test::test_data_path("models/qwen3-qwentok-tiny-q8_0.gguf");
  const CommandResult no_tools =
      run_minfer_chat("hi\n", "-m " + shell_quote(model) + " --tool-choice required");
  EXPECT_NE(no_tools.exit_code, 0);
  EXPECT_NE(no_tools.err.find("need --tools"), std::string::npos) << no_tools.err;
  test::TempDir dir;
  const std::string bad = dir.file("bad.json");
  test::write_file_bytes(bad, {'{', '}'});
  const CommandResult not_array =
      run_minfer_chat("hi\n", "-m " + shell_quote(model) + " --tools " + shell_quote(bad));
  EXPECT_NE(not_array.exit_code, 0);
  EXPECT_NE(not_array.err.find("JSON array of tools"), std::string::npos) << not_array.err;
}

}  // namespace
}  // namespace minfer
