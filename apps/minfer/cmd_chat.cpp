// `minfer chat`: interactive multi-turn chat through the model's chat template. Every turn renders
// the whole conversation; the session keeps the longest common token prefix with what its cache
// holds, so only the new tokens are prefilled. With stdin piped, each line is one user message.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "chat_tools.h"
#include "commands.h"
#include "generation_flags.h"
#include "minfer/minfer.h"

namespace minfer::app {

namespace {

constexpr const char* kHelp =
    "commands:\n"
    "  /exit    leave (also Ctrl-D, or Ctrl-C twice at the prompt)\n"
    "  /clear   forget the conversation (the system message stays)\n"
    "  /regen   drop the last reply and generate it again\n"
    "  /save FILE  write the conversation and its KV cells to FILE\n"
    "  /load FILE  continue the conversation saved in FILE (same model and --cache-type)\n"
    "  /messages  print the conversation as JSON (OpenAI messages, tool calls and results)\n"
    "  /help    this text\n"
    "Ctrl-C while the model answers stops the answer.\n"
    "With --tools, a tool call without --tool-cmd asks for its result: type it and end it with\n"
    "an empty line.\n";

// Lines from stdin with read(2), so that Ctrl-C (SIGINT without SA_RESTART) interrupts a wait.
class LineReader {
 public:
  enum class Outcome { kLine, kEof, kInterrupted };

  Outcome read_line(std::string& line, std::atomic<bool>& interrupted) {
    for (;;) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        return Outcome::kLine;
      }
      if (eof_) {
        if (buffer_.empty()) return Outcome::kEof;
        line = std::move(buffer_);
        buffer_.clear();
        return Outcome::kLine;
      }
      // An interrupt that came while no read was waiting (e.g. while the finished turn was
      // being cached) counts as one at the prompt.
      if (interrupted.exchange(false)) return Outcome::kInterrupted;
      char chunk[4096];  // [4096] bytes per read
      const ssize_t n = ::read(STDIN_FILENO, chunk, sizeof(chunk));
      if (n < 0 && errno == EINTR) continue;  // the check above sees the interrupt
      if (n <= 0) {
        eof_ = true;
      } else {
        buffer_.append(chunk, static_cast<size_t>(n));
      }
    }
  }

 private:
  std::string buffer_;
  bool eof_ = false;
};

class ChatLoop {
 public:
  ChatLoop(const GenerationFlags& flags, const ChatTools& tools, LanguageModel& model,
           std::unique_ptr<Chat> conversation, std::atomic<bool>& interrupted)
      : flags_(flags),
        tools_(tools),
        model_(model),
        conversation_(std::move(conversation)),
        interrupted_(interrupted),
        interactive_(isatty(STDIN_FILENO) != 0) {}

  int run() {
    if (interactive_) {
      std::fprintf(stderr, "chat with %s (n_ctx %lld); /help for commands\n",
                   flags_.model_path.c_str(), static_cast<long long>(model_.n_ctx()));
    }
    int interrupts_at_prompt = 0;
    for (;;) {
      if (interactive_) {
        std::fputs("> ", stdout);
        std::fflush(stdout);
      }
      std::string line;
      const LineReader::Outcome outcome = reader_.read_line(line, interrupted_);
      if (outcome == LineReader::Outcome::kEof) break;
      if (outcome == LineReader::Outcome::kInterrupted) {
        if (++interrupts_at_prompt >= 2) break;
        std::fputs("\n(Ctrl-C again or /exit to leave)\n", stderr);
        continue;
      }
      interrupts_at_prompt = 0;
      if (line.empty()) continue;
      if (line[0] == '/') {
        const std::string command = line.substr(0, line.find(' '));
        if (command == "/exit" || command == "/quit") break;
        if (command == "/help") {
          std::fputs(kHelp, stderr);
        } else if (command == "/clear") {
          conversation_->clear();
          model_.clear();
          std::fputs("(conversation cleared)\n", stderr);
        } else if (command == "/messages") {
          std::printf("%s\n", conversation_->messages_json().c_str());
          std::fflush(stdout);
        } else if (command == "/save" || command == "/load") {
          state_command(command, line.substr(command.size()));
        } else if (command == "/regen") {
          if (!conversation_->pop_last("assistant")) {
            std::fputs("(no reply to regenerate)\n", stderr);
          } else if (!respond()) {
            return 1;
          }
        } else {
          std::fprintf(stderr, "unknown command '%s'; /help lists them\n", command.c_str());
        }
        continue;
      }
      conversation_->add_user(line);
      ++n_user_messages_;
      if (!respond()) return 1;
    }
    return 0;
  }

 private:
  // Tokens kept free for the reply when deciding whether the conversation fits.
  int64_t reply_reserve() const {
    const int64_t n_ctx = model_.n_ctx();
    const int64_t want = flags_.generate.max_tokens > 0 ? flags_.generate.max_tokens : n_ctx / 4;
    return std::max<int64_t>(1, std::min(want, n_ctx / 2));
  }

  // The tokens of `prompt` a context shift keeps: --keep N of them (-1: all), else those of the
  // rendered system prompt (none without one, or when the template cannot render it alone).
  Result<int64_t> shift_keep(const std::vector<int32_t>& prompt) const {
    MINFER_RETURN_IF_ERROR(check_keep("chat", flags_.keep, model_.n_ctx()));
    const int64_t n = static_cast<int64_t>(prompt.size());
    if (flags_.keep == -1) return n;
    if (flags_.keep >= 0) return std::min(n, flags_.keep);
    if (flags_.system.empty()) return 0;
    auto chat = model_.start_chat(flags_.system);
    if (!chat.is_ok()) return 0;
    auto system = chat.value()->tokens(/*add_generation_prompt=*/false);
    if (!system.is_ok()) return 0;
    const std::vector<int32_t>& s = system.value();
    return std::mismatch(s.begin(), s.end(), prompt.begin(), prompt.end()).first - s.begin();
  }

  // The conversation's prompt within the context, the oldest turns dropped to make room for the
  // reply. False when it cannot fit (said on stderr; a user message is taken back); `failed`
  // on an error that ends the program (printed).
  bool fit_prompt(std::vector<int32_t>& tokens, bool& failed) {
    const int64_t n_ctx = model_.n_ctx();
    for (;;) {
      auto rendered = conversation_->tokens(/*add_generation_prompt=*/true);
      if (!rendered.is_ok()) {
        failed = !fail(rendered.status());
        return false;
      }
      tokens = std::move(rendered).value();
      const int64_t n = static_cast<int64_t>(tokens.size());
      if (n + reply_reserve() <= n_ctx) return true;
      if (!conversation_->drop_oldest_turn()) {
        if (n < n_ctx) return true;  // no earlier turn left: use what room there is
        std::fprintf(stderr,
                     "[chat] the message does not fit the context: %lld tokens, n_ctx %lld; it "
                     "was not sent\n",
                     static_cast<long long>(n), static_cast<long long>(n_ctx));
        conversation_->pop_last("user");
        return false;
      }
      std::fprintf(stderr,
                   "[chat] context full: %lld tokens + %lld for the reply exceed n_ctx %lld; "
                   "dropped the oldest turn (%lld left)\n",
                   static_cast<long long>(n), static_cast<long long>(reply_reserve()),
                   static_cast<long long>(n_ctx), static_cast<long long>(conversation_->n_turns()));
    }
  }

  // --verbose figures of a reply, and why it stopped when that is worth saying.
  void report_reply(const GenerateReply& result) const {
    if (flags_.verbose) {
      std::fprintf(
          stderr,
          "turn %lld: prefilled %lld tokens (%lld reused); generated %lld tokens, %.2f "
          "tok/s; stopped: %s\n",
          static_cast<long long>(n_user_messages_), static_cast<long long>(result.n_prefilled),
          static_cast<long long>(result.n_cached), static_cast<long long>(result.n_generated),
          result.decode_tok_s, result.finish_reason.c_str());
      if (result.n_drafted > 0) {
        std::fprintf(
            stderr, "turn %lld: speculative: %lld drafted, %lld accepted (%.1f%%)\n",
            static_cast<long long>(n_user_messages_), static_cast<long long>(result.n_drafted),
            static_cast<long long>(result.n_accepted),
            100.0 * static_cast<double>(result.n_accepted) / static_cast<double>(result.n_drafted));
      }
    }
    if (result.finish_reason == "cancelled") {
      std::fputs("(reply stopped)\n", stderr);
    } else if (result.finish_reason == "context") {
      std::fprintf(stderr,
                   "[chat] context full: the reply was cut at n_ctx %lld; the oldest turns will "
                   "be dropped next turn\n",
                   static_cast<long long>(model_.n_ctx()));
    }
  }

  // Generates one reply to the conversation so far (which ends with a user message or tool
  // results; `first`: the first reply to a user message) into `reply`; nullopt when the
  // conversation did not fit. False on an error that ends the program (already printed).
  bool generate_reply(bool first, std::optional<GenerateReply>& reply) {
    std::vector<int32_t> tokens;
    bool failed = false;
    if (!fit_prompt(tokens, failed)) return !failed;
    GenerateParams params = flags_.generate;
    // A new draw per reply (so /regen can answer differently), reproducible from --seed.
    params.seed += n_replies_++;
    params.cancel = &interrupted_;
    interrupted_.store(false);
    // Reasoning and tool calls in the model's own formats are shown as such.
    params.extract_reasoning = true;
    params.parse_tool_calls = true;
    tools_.apply(params, first);
    if (params.context_shift) {
      auto keep = shift_keep(tokens);
      if (!keep.is_ok()) return fail(keep.status());
      params.n_keep = keep.value();
    }
    ReplyPrinter printer(stdout, flags_.show_reasoning);
    auto generated = model_.generate_reply(
        tokens, params, [&printer](const ReplyDelta& delta) { return printer.print(delta); });
    printer.end();
    std::fputs("\n", stdout);
    std::fflush(stdout);
    // The interrupt that stopped the reply is used up; a later one counts at the prompt.
    interrupted_.store(false);
    if (!generated.is_ok()) return fail(generated.status());
    report_reply(generated.value());
    reply = std::move(generated).value();
    return true;
  }

  bool last_is_user() const {
    const auto messages = nlohmann::json::parse(conversation_->messages_json(), nullptr, false);
    return messages.is_array() && !messages.empty() && messages.back().value("role", "") == "user";
  }

  // Answers each call of a reply (--tool-cmd, else the user) into the conversation.
  void answer_calls(const std::vector<ToolCall>& calls) {
    for (const ToolCall& call : calls) {
      std::string result = tools_.result(
          call,
          [this](std::string& line) {
            return reader_.read_line(line, interrupted_) == LineReader::Outcome::kLine;
          },
          interrupted_);
      std::printf("[tool result] %s: %s\n", call.name.c_str(), result.c_str());
      std::fflush(stdout);
      conversation_->add_tool_result(call.id, call.name, std::move(result));
    }
  }

  // Generates the assistant's reply to the conversation so far (which ends with a user
  // message); with --tools, answers the reply's calls and generates again, up to
  // --max-tool-rounds replies with calls. False on an error that ends the program (printed).
  bool respond() {
    for (int round = 0;; ++round) {
      std::optional<GenerateReply> reply;
      // --tool-choice binds a reply to the user's message, not one after tool results (as
      // /regen of the reply after them is).
      if (!generate_reply(round == 0 && last_is_user(), reply)) return false;
      if (!reply) return true;  // it did not fit: nothing was sent
      const bool calls =
          tools_.enabled() && !reply->tool_calls.empty() && reply->finish_reason != "cancelled";
      if (!calls) {
        conversation_->add_assistant(reply->text);
        return close_turn();
      }
      conversation_->add_assistant(reply->text, reply->tool_calls);
      answer_calls(reply->tool_calls);
      if (round + 1 >= tools_.max_rounds()) {
        std::fprintf(stderr, "(%d replies with tool calls: waiting for you; --max-tool-rounds)\n",
                     tools_.max_rounds());
        return close_turn();
      }
    }
  }

  // Puts the finished turn into the cache exactly as the template renders it (the end-of-turn
  // tokens included), so that the next turn's prompt shares it as a prefix whatever tokens the
  // reply was sampled as.
  bool close_turn() {
    auto rendered = conversation_->tokens(/*add_generation_prompt=*/false);
    if (!rendered.is_ok()) return fail(rendered.status());
    const std::vector<int32_t>& tokens = rendered.value();
    if (static_cast<int64_t>(tokens.size()) > model_.n_ctx() || tokens.empty()) return true;
    auto prefilled = model_.prefill(tokens);
    if (!prefilled.is_ok()) return fail(prefilled.status());
    if (flags_.verbose) {
      const PrefillReply& r = prefilled.value();
      std::fprintf(stderr, "end of turn: prefilled %lld tokens (%lld reused)\n",
                   static_cast<long long>(r.n_prefilled), static_cast<long long>(r.n_reused));
    }
    return true;
  }

  // /save FILE and /load FILE: the session's tokens and cells with the messages beside them
  // (engine state files); a failure is reported and the conversation goes on as it was.
  void state_command(const std::string& command, std::string path) {
    const size_t first = path.find_first_not_of(" \t");
    path = first == std::string::npos ? "" : path.substr(first);
    while (!path.empty() && (path.back() == ' ' || path.back() == '\t')) path.pop_back();
    if (path.empty()) {
      std::fprintf(stderr, "%s needs a file name\n", command.c_str());
      return;
    }
    if (command == "/save") {
      auto saved = model_.save_state(path, conversation_->messages_json());
      if (!saved.is_ok()) {
        std::fprintf(stderr, "%s\n", saved.status().message().c_str());
        return;
      }
      std::fprintf(stderr, "(saved %lld tokens and %lld turns to %s)\n",
                   static_cast<long long>(saved->n_tokens),
                   static_cast<long long>(conversation_->n_turns()), path.c_str());
      return;
    }
    auto loaded = model_.load_state(path);
    if (!loaded.is_ok()) {
      std::fprintf(stderr, "%s\n", loaded.status().message().c_str());
      return;
    }
    const Status messages = loaded->app_data.empty()
                                ? Status::ok()
                                : conversation_->set_messages_json(loaded->app_data);
    if (loaded->app_data.empty() || !messages.is_ok()) {
      // A state saved by `run --prompt-cache`, say: its cells serve as a prefix, no turns.
      conversation_->clear();
      std::fprintf(stderr, "(loaded %lld tokens from %s; it holds no conversation)\n",
                   static_cast<long long>(loaded->n_tokens), path.c_str());
      return;
    }
    std::fprintf(stderr, "(loaded %lld tokens and %lld turns from %s)\n",
                 static_cast<long long>(loaded->n_tokens),
                 static_cast<long long>(conversation_->n_turns()), path.c_str());
  }

  bool fail(const Status& status) {
    std::fprintf(stderr, "%s\n", status.message().c_str());
    return false;
  }

  const GenerationFlags& flags_;
  const ChatTools& tools_;
  LanguageModel& model_;
  LineReader reader_;
  std::unique_ptr<Chat> conversation_;
  std::atomic<bool>& interrupted_;
  bool interactive_;
  uint64_t n_replies_ = 0;
  int64_t n_user_messages_ = 0;  // sent so far, dropped ones included: the turn number
};

int run_chat(CLI::App* cmd, GenerationFlags& flags, const ChatToolFlags& tool_flags) {
  Status st = finish_generation_flags(cmd, flags);
  if (!st.is_ok()) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  Result<ChatTools> tools = ChatTools::create(tool_flags);
  if (!tools.is_ok()) {
    std::fprintf(stderr, "%s\n", tools.status().message().c_str());
    return 1;
  }
  auto model = load_model(flags);
  if (!model.is_ok()) {
    std::fprintf(stderr, "%s\n", model.status().message().c_str());
    return 1;
  }
  auto conversation = (*model)->start_chat(flags.system);
  if (!conversation.is_ok()) {
    std::fprintf(stderr, "%s\n", conversation.status().message().c_str());
    return 1;
  }
  if (Status t = (*conversation)->set_tools(tools->tools_json()); !t.is_ok()) {
    std::fprintf(stderr, "%s\n", t.message().c_str());
    return 1;
  }
  ChatLoop loop(flags, *tools, **model, std::move(conversation).value(),
                install_interrupt_handler());
  const int code = loop.run();
  std::fputs((*model)->profile_table().c_str(), stderr);
  return code;
}

}  // namespace

void register_chat_command(CLI::App& app, CommandRegistry& registry) {
  auto [cmd, flags] = add_command<GenerationFlags>(
      app, "chat", "Interactive multi-turn chat with the model's chat template (stdin lines)");
  add_generation_flags(cmd, *flags);
  auto tool_flags = std::make_shared<ChatToolFlags>();
  add_chat_tool_flags(cmd, *tool_flags);
  registry.add(
      cmd, [flags = flags, tool_flags, cmd = cmd]() { return run_chat(cmd, *flags, *tool_flags); });
}

}  // namespace minfer::app
