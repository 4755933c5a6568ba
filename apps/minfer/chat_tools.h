// `minfer chat --tools FILE.json`: the model is offered the tools (an OpenAI tools array) and the
// calls it makes are answered — by a local command (`--tool-cmd NAME=COMMAND`: /bin/sh -c
// COMMAND with the call's arguments as JSON on stdin; its stdout is the result, a non-zero exit
// an error result) or by the user, who types the result and ends it with an empty line. The
// calls and results go into the conversation and the model continues.
#pragma once

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "minfer/minfer.h"

namespace minfer::app {

struct ChatToolFlags {
  std::string tools_file;              // --tools FILE.json; empty: no tools
  std::vector<std::string> tool_cmds;  // --tool-cmd NAME=COMMAND, repeatable
  std::string tool_choice = "auto";    // --tool-choice auto|none|required|NAME
  bool parallel_tool_calls = true;     // --parallel-tool-calls
  int max_tool_rounds = 8;             // --max-tool-rounds: replies with calls per user message
};

void add_chat_tool_flags(CLI::App* cmd, ChatToolFlags& flags);

// The most bytes of a command's output kept as a result (the rest is cut, and said so).
inline constexpr size_t kMaxToolResultBytes = size_t{1} << 20;

class ChatTools {
 public:
  // Reads the tools file and checks the commands' names against it. Errors: an unreadable file,
  // one that is not a JSON array of function tools, a --tool-cmd without NAME=, or naming no tool
  // of the file, a --tool-choice naming none.
  static Result<ChatTools> create(const ChatToolFlags& flags);

  bool enabled() const { return !tools_json_.empty(); }
  const std::string& tools_json() const { return tools_json_; }
  int max_rounds() const { return flags_.max_tool_rounds; }
  // The request's tools: --tool-choice on a user message's first reply (`first`), auto after
  // tool results (else a forced call would repeat for ever).
  void apply(GenerateParams& params, bool first) const;

  // Reads one line of the user's input into `line`; false at the end of the input.
  using ReadLine = std::function<bool(std::string& line)>;
  // The result of one call: its command's output, or what the user types (ended by an empty
  // line or the end of the input). `interrupted`: Ctrl-C stops a command (an error result).
  std::string result(const ToolCall& call, const ReadLine& read_line,
                     std::atomic<bool>& interrupted) const;

 private:
  ChatToolFlags flags_;
  std::string tools_json_;
  std::map<std::string, std::string> commands_;  // function name → shell command
};

// Runs `/bin/sh -c command` with `input` on its stdin; its stdout (at most kMaxToolResultBytes)
// goes to `output`. Returns the exit status (128 + N for a signal), or an error when it cannot
// start. Ctrl-C (`interrupted`) terminates it.
Result<int> run_tool_command(const std::string& command, const std::string& input,
                             std::string& output, std::atomic<bool>& interrupted);

}  // namespace minfer::app
