#include <cstdio>
#include <string>

#include "commands.h"
#include "gguf/gguf_file.h"

namespace minfer::app {

void register_info_command(CLI::App& app, CommandRegistry& registry) {
  struct Options {
    std::string model;
    bool tensors = false;
    bool json = false;
  };
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand("info", "Describe a GGUF model file");
  cmd->add_option("model", opts->model, "GGUF file")->required();
  cmd->add_flag("--tensors", opts->tensors, "list every tensor");
  cmd->add_flag("--json", opts->json, "print JSON");
  registry.add(cmd, [opts]() {
    auto file = GgufFile::open(opts->model);
    if (!file.is_ok()) {
      std::fprintf(stderr, "%s\n", file.status().message().c_str());
      return 1;
    }
    std::printf("tensors: %zu\n", file.value()->tensors().size());
    return 0;
  });
}

}  // namespace minfer::app
