// `minfer info MODEL.gguf [--tensors] [--json]`: describes a GGUF file. The description is the
// library's (describe_gguf, minfer/tools.h); this file reads the flags and prints it.
#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "commands.h"
#include "minfer/tools.h"
#include "model_source.h"

namespace minfer::app {

namespace {

// The supported architectures and the model families tested with each.
void print_architectures(bool json) {
  if (json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const ArchitectureInfo& arch : supported_architectures()) {
      list.push_back({{"architecture", arch.name}, {"tested_models", arch.tested_models}});
    }
    std::printf("%s\n", list.dump(2).c_str());
    return;
  }
  for (const ArchitectureInfo& arch : supported_architectures()) {
    std::printf("%-10s %s\n", arch.name.c_str(), arch.tested_models.c_str());
  }
}

}  // namespace

void register_info_command(CLI::App& app, CommandRegistry& registry) {
  struct Options {
    std::string model;
    ModelSourceFlags source;
    bool tensors = false;
    bool json = false;
    bool architectures = false;
  };
  auto [cmd, opts] = add_command<Options>(
      app, "info",
      "Describe a GGUF model file (architecture, hyperparameters, tokenizer, tensors)");
  cmd->add_option("model", opts->model, "GGUF file (or ollama:NAME[:TAG])");
  add_model_source_flags(cmd, opts->source);
  cmd->add_flag("--tensors", opts->tensors, "list every tensor (name, type, shape, offset)");
  cmd->add_flag("--json", opts->json, "print JSON instead of text");
  cmd->add_flag("--architectures", opts->architectures,
                "list the architectures minfer runs and the model families tested with each");
  registry.add_status(cmd, [opts = opts]() -> Status {
    if (opts->architectures) {
      print_architectures(opts->json);
      return flush_stdout("info");
    }
    if (opts->model.empty() && opts->source.hf_repo.empty()) {
      return make_error(ErrorCode::kInvalidArgument,
                        "[info] give a GGUF file (or --architectures)");
    }
    MINFER_RETURN_IF_ERROR(resolve_model_path(opts->model, opts->source, "info"));
    MINFER_ASSIGN_OR_RETURN(const std::string text,
                            describe_gguf({opts->model, opts->tensors, opts->json}));
    std::fwrite(text.data(), 1, text.size(), stdout);
    return flush_stdout("info");
  });
}

}  // namespace minfer::app
