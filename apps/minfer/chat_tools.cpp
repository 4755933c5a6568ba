#include "chat_tools.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

namespace minfer::app {

namespace {

// The function names of an OpenAI tools array, or why it is not one.
Result<std::vector<std::string>> tool_function_names(const std::string& path,
                                                     const nlohmann::ordered_json& tools) {
  if (!tools.is_array() || tools.empty()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[chat] --tools '{}': expected a non-empty JSON array of tools", path);
  }
  std::vector<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const nlohmann::ordered_json& t = tools[i];
    const bool ok = t.is_object() && t.value("type", "") == "function" && t.contains("function") &&
                    t["function"].is_object() && t["function"].contains("name") &&
                    t["function"]["name"].is_string();
    if (!ok) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[chat] --tools '{}': tool {} must be {{\"type\": \"function\", "
                        "\"function\": {{\"name\": …, \"parameters\": …}}}}",
                        path, i);
    }
    names.push_back(t["function"]["name"].get<std::string>());
  }
  return names;
}

// Writes what remains of `input` to `fd` without blocking; closes it when all is written.
void feed_stdin(int& fd, const std::string& input, size_t& written) {
  while (fd >= 0 && written < input.size()) {
    const ssize_t n = ::write(fd, input.data() + written, input.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && errno == EAGAIN) return;
    if (n <= 0) break;  // the command closed its stdin: it does not want the rest
    written += static_cast<size_t>(n);
  }
  if (fd >= 0) ::close(fd);
  fd = -1;
}

}  // namespace

void add_chat_tool_flags(CLI::App* cmd, ChatToolFlags& flags) {
  cmd->add_option("--tools", flags.tools_file,
                  "offer the tools of this JSON file (an OpenAI tools array); the model's calls "
                  "are shown as [tool call] name({...}) and answered by --tool-cmd, else by you: "
                  "type the result and end it with an empty line");
  cmd->add_option("--tool-cmd", flags.tool_cmds,
                  "NAME=COMMAND: answer calls of tool NAME by running COMMAND (/bin/sh -c) with "
                  "the call's arguments as JSON on stdin; its stdout is the result, a non-zero "
                  "exit an error result (repeatable)");
  cmd->add_option("--tool-choice", flags.tool_choice,
                  "auto, none, required or a tool's name: what the first reply to each message "
                  "may or must call (replies after tool results: auto)")
      ->capture_default_str();
  cmd->add_option("--parallel-tool-calls", flags.parallel_tool_calls,
                  "whether a reply may call several tools (true, false)")
      ->capture_default_str();
  cmd->add_option("--max-tool-rounds", flags.max_tool_rounds,
                  "replies with tool calls per message before the chat waits for you")
      ->check(CLI::Range(1, 100))
      ->capture_default_str();
}

Result<ChatTools> ChatTools::create(const ChatToolFlags& flags) {
  ChatTools t;
  t.flags_ = flags;
  if (flags.tools_file.empty()) {
    if (!flags.tool_cmds.empty() || flags.tool_choice != "auto") {
      return make_error(ErrorCode::kInvalidArgument,
                        "[chat] --tool-cmd and --tool-choice need --tools FILE.json");
    }
    return t;
  }
  std::ifstream in(flags.tools_file);
  if (!in) {
    return make_error(ErrorCode::kNotFound, "[chat] --tools: cannot read '{}'", flags.tools_file);
  }
  std::stringstream text;
  text << in.rdbuf();
  const nlohmann::ordered_json tools =
      nlohmann::ordered_json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  MINFER_ASSIGN_OR_RETURN(const std::vector<std::string> names,
                          tool_function_names(flags.tools_file, tools));
  auto known = [&names](const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
  };
  for (const std::string& spec : flags.tool_cmds) {
    const size_t eq = spec.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == spec.size() || !known(spec.substr(0, eq))) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[chat] --tool-cmd '{}': expected NAME=COMMAND with NAME one of the "
                        "tools in '{}' ({})",
                        spec, flags.tools_file, fmt::join(names, ", "));
    }
    t.commands_[spec.substr(0, eq)] = spec.substr(eq + 1);
  }
  const std::string& choice = flags.tool_choice;
  if (!tool_choice_from_string(choice) && !known(choice)) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[chat] --tool-choice '{}': expected auto, none, required or a tool ({})",
                      choice, fmt::join(names, ", "));
  }
  t.tools_json_ = tools.dump();
  return t;
}

void ChatTools::apply(GenerateParams& params, bool first) const {
  if (!enabled()) return;
  params.tools = tools_json_;
  params.parallel_tool_calls = flags_.parallel_tool_calls;
  params.tool_choice = ToolChoice::kAuto;
  params.tool_choice_name.clear();
  if (!first) return;
  if (const std::optional<ToolChoice> named = tool_choice_from_string(flags_.tool_choice)) {
    params.tool_choice = *named;
  } else {
    params.tool_choice = ToolChoice::kFunction;
    params.tool_choice_name = flags_.tool_choice;
  }
}

std::string ChatTools::result(const ToolCall& call, const ReadLine& read_line,
                              std::atomic<bool>& interrupted) const {
  auto command = commands_.find(call.name);
  if (command != commands_.end()) {
    std::string output;
    Result<int> status = run_tool_command(command->second, call.arguments, output, interrupted);
    if (!status.is_ok()) return fmt::format("error: {}", status.status().message());
    if (!output.empty() && output.back() == '\n') output.pop_back();  // echo's line end
    if (*status != 0) {
      return fmt::format("error: the tool's command exited with status {}{}{}", *status,
                         output.empty() ? "" : ": ", output);
    }
    return output;
  }
  std::fprintf(stderr, "[tool result for %s] type it; an empty line ends it\n", call.name.c_str());
  std::string out;
  std::string line;
  while (read_line(line) && !line.empty()) {
    if (!out.empty()) out += '\n';
    out += line;
  }
  return out;
}

Result<int> run_tool_command(const std::string& command, const std::string& input,
                             std::string& output, std::atomic<bool>& interrupted) {
  int in_pipe[2];   // the command's stdin: [0] its end, [1] ours
  int out_pipe[2];  // its stdout: [0] ours, [1] its end
  if (::pipe(in_pipe) != 0) return make_error(ErrorCode::kIo, "[chat] pipe: errno {}", errno);
  if (::pipe(out_pipe) != 0) {
    ::close(in_pipe[0]);
    ::close(in_pipe[1]);
    return make_error(ErrorCode::kIo, "[chat] pipe: errno {}", errno);
  }
  const pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in_pipe[0], STDIN_FILENO);
    ::dup2(out_pipe[1], STDOUT_FILENO);
    for (int fd : {in_pipe[0], in_pipe[1], out_pipe[0], out_pipe[1]}) ::close(fd);
    ::signal(SIGPIPE, SIG_DFL);
    ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(in_pipe[0]);
  ::close(out_pipe[1]);
  if (pid < 0) {
    ::close(in_pipe[1]);
    ::close(out_pipe[0]);
    return make_error(ErrorCode::kIo, "[chat] cannot start '{}': errno {}", command, errno);
  }
  int to_child = in_pipe[1];
  ::fcntl(to_child, F_SETFL, ::fcntl(to_child, F_GETFL) | O_NONBLOCK);
  ::signal(SIGPIPE, SIG_IGN);  // a command that exits without reading its stdin
  size_t written = 0;
  feed_stdin(to_child, input, written);
  bool cut = false;
  for (;;) {
    pollfd fds[2] = {{out_pipe[0], POLLIN, 0}, {to_child, POLLOUT, 0}};
    const int n = ::poll(fds, to_child >= 0 ? 2 : 1, 100);
    if (interrupted.exchange(false)) {
      ::kill(pid, SIGTERM);
      output += "\n(interrupted)";
      break;
    }
    if (n <= 0) continue;
    if (to_child >= 0 && fds[1].revents != 0) feed_stdin(to_child, input, written);
    if (fds[0].revents == 0) continue;
    char chunk[4096];  // [4096] bytes per read
    const ssize_t got = ::read(out_pipe[0], chunk, sizeof(chunk));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;
    const size_t room = kMaxToolResultBytes - std::min(kMaxToolResultBytes, output.size());
    output.append(chunk, std::min(room, static_cast<size_t>(got)));
    cut = cut || static_cast<size_t>(got) > room;
  }
  if (to_child >= 0) ::close(to_child);
  ::close(out_pipe[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (cut) output += fmt::format("\n(output cut at {} bytes)", kMaxToolResultBytes);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WEXITSTATUS(status);
}

}  // namespace minfer::app
