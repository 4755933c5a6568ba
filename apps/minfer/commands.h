// How subcommands plug into main: each cmd_*.cpp defines a register_<name>_command that adds a
// CLI11 subcommand and the function to run when it is chosen.
#pragma once

#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "core/status.h"

namespace minfer::app {

// A subcommand and the options it fills, made together (the options outlive parsing: the command's
// run function holds them). A lambda takes them by init-capture, `[opts = opts]`: clang before
// 16 (the sanitizer build's clang-14) cannot capture a structured binding by name.
//   auto [cmd, opts] = add_command<BenchCli>(app, "bench", "Measure …");
template <class Options>
struct NewCommand {
  CLI::App* cmd;
  std::shared_ptr<Options> opts;
};
template <class Options>
NewCommand<Options> add_command(CLI::App& app, std::string name, std::string description) {
  return {app.add_subcommand(std::move(name), std::move(description)), std::make_shared<Options>()};
}

// -t / --threads, as every command that runs a model spells it (unset: all cores).
inline void add_threads_flag(CLI::App* cmd, int& n_threads) {
  cmd->add_option("-t,--threads", n_threads, "threads (default: all cores)");
}

// Ok when everything written to stdout reached it; else an error naming the command.
inline Status flush_stdout(const char* command) {
  if (std::fflush(stdout) == 0) return Status::ok();
  return make_error(ErrorCode::kIo, "[{}] cannot write to stdout", command);
}

class CommandRegistry {
 public:
  void add(CLI::App* subcommand, std::function<int()> run) {
    commands_.push_back({subcommand, std::move(run)});
  }
  // A command that reports its outcome as a Status: an error is printed as one line on stderr
  // (whatever line breaks its message holds) and the process exits 1.
  void add_status(CLI::App* subcommand, std::function<Status()> run) {
    add(subcommand, [run = std::move(run)]() {
      const Status st = run();
      if (st.is_ok()) return 0;
      std::string message = st.message();
      for (char& c : message) {
        if (c == '\n' || c == '\r') c = ' ';
      }
      std::fprintf(stderr, "%s\n", message.c_str());
      return 1;
    });
  }
  int run_selected() const {
    for (const auto& c : commands_) {
      if (c.subcommand->parsed()) return c.run();
    }
    return 1;
  }

 private:
  struct Command {
    CLI::App* subcommand;
    std::function<int()> run;
  };
  std::vector<Command> commands_;
};

// What each cmd_<name>.cpp defines: adds its subcommand to `app` and its run function to
// `registry`.
using RegisterCommand = void(CLI::App& app, CommandRegistry& registry);
RegisterCommand register_info_command, register_tokenize_command, register_template_command,
    register_logits_command, register_viz_command, register_run_command, register_chat_command,
    register_make_model_command, register_quantize_command, register_perplexity_command,
    register_bench_command, register_serve_command, register_gguf_split_command,
    register_hub_commands, register_embed_command;

// Every command, in the order `minfer --help` lists them.
inline void register_all_commands(CLI::App& app, CommandRegistry& registry) {
  for (RegisterCommand* add :
       {register_info_command, register_tokenize_command, register_template_command,
        register_logits_command, register_viz_command, register_run_command, register_chat_command,
        register_make_model_command, register_quantize_command, register_perplexity_command,
        register_bench_command, register_serve_command, register_hub_commands,
        register_gguf_split_command, register_embed_command}) {
    add(app, registry);
  }
}

}  // namespace minfer::app
