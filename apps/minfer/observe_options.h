// The observability flags every command that runs the model shares: --trace PATH (or
// MINFER_TRACE), --profile and --dump-graph FILE; MINFER_DUMP_DIR comes from the environment.
// The library opens what they ask for.
#pragma once

#include <CLI/CLI.hpp>

#include "minfer/minfer.h"
#include "minfer/tools.h"

namespace minfer::app {

// Into the tools' options (logits, perplexity, bench).
void add_observe_flags(CLI::App& cmd, ObserveOptions& options);
// The same flags into the public API's load options (run, chat).
void add_observe_flags(CLI::App& cmd, LoadOptions& options);

}  // namespace minfer::app
