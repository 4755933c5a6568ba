// The observability flags every command that runs the model shares: --trace PATH (or
// MINFER_TRACE), --profile and --dump-graph FILE; MINFER_DUMP_DIR comes from the environment.
// The runtime opens what they ask for (engine/runtime.h).
#pragma once

#include <CLI/CLI.hpp>

#include "minfer/minfer.h"

namespace minfer::engine {
struct ObserveOptions;  // engine/runtime.h
}  // namespace minfer::engine

namespace minfer::app {

void add_observe_flags(CLI::App& cmd, engine::ObserveOptions& options);
// The same flags into the public API's load options (run, chat).
void add_observe_flags(CLI::App& cmd, LoadOptions& options);

}  // namespace minfer::app
