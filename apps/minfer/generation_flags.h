// The flags and helpers `run` and `chat` share (defined in cmd_run.cpp): llama.cpp's model,
// context and sampling flags, -sys, --stop, --logit-bias, the observability flags, and Ctrl-C.
#pragma once

#include <atomic>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "engine/generate.h"
#include "engine/setup.h"

namespace minfer::app {

void add_generation_flags(CLI::App* cmd, engine::ModelOptions& model,
                          engine::GenerateOptions& generate, std::string& system, bool& verbose);
// After parsing: -sys (an extra argument CLI11 cannot declare), --stop and --logit-bias; any
// other extra argument is an error.
Status finish_generation_flags(CLI::App* cmd, std::string& system,
                               engine::GenerateOptions& generate);
// Ctrl-C raises the returned flag (generation checks it between tokens).
std::atomic<bool>& install_interrupt_handler();

}  // namespace minfer::app
