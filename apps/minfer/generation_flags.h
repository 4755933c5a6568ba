// The flags and helpers `run` and `chat` share (defined in cmd_run.cpp): llama.cpp's model,
// context and sampling flags, -sys, --stop, --logit-bias, the observability flags, and Ctrl-C.
// Both commands are clients of the public API (include/minfer/minfer.h).
#pragma once

#include <atomic>
#include <string>

#include <CLI/CLI.hpp>

#include "minfer/minfer.h"
#include "model_source.h"

namespace minfer::app {

// What `run` and `chat` both take.
struct GenerationFlags {
  std::string model_path;
  ModelSourceFlags source;  // -hf, --offline (resolved into model_path)
  LoadOptions load;
  GenerateParams generate;
  std::string system;
  bool verbose = false;
};

void add_generation_flags(CLI::App* cmd, GenerationFlags& flags);
// After parsing: -sys (an extra argument CLI11 cannot declare), --stop and --logit-bias; any
// other extra argument is an error.
Status finish_generation_flags(CLI::App* cmd, GenerationFlags& flags);
// Loads the model of the flags; with --verbose, describes it on stderr.
Result<std::unique_ptr<LanguageModel>> load_model(const GenerationFlags& flags);
// Ctrl-C raises the returned flag (generation checks it between tokens).
std::atomic<bool>& install_interrupt_handler();

}  // namespace minfer::app
