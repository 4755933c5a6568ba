// minfer: the command-line front end. Each subcommand lives in its own file (cmd_*.cpp) and
// registers itself here.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "commands.h"
#include "model_source.h"

int main(int argc, char** argv) {
  CLI::App app{"minfer: LLM inference for GGUF models on the CPU"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "minfer 0.1.0");
  minfer::app::CommandRegistry registry;
  minfer::app::register_all_commands(app, registry);
  minfer::app::rewrite_single_dash_flags(argc, argv);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  try {
    return registry.run_selected();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "minfer: %s\n", e.what());
    return 1;
  }
}
