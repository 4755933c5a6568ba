// The observability flags every command that runs the model shares: --trace PATH (or
// MINFER_TRACE), --profile and --dump-graph FILE; MINFER_DUMP_DIR comes from the environment.
// The runtime opens what they ask for (engine/runtime.h). Also the cache-type rule.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "engine/runtime.h"

namespace minfer::app {

void add_observe_flags(CLI::App& cmd, engine::ObserveOptions& options);

// After parsing, for a command that builds a runtime: the cell type from --cache-type (the
// `cache_type` flag's value), else MINFER_CACHE_TYPE, else the command's `fallback`; and the
// observe flags completed with MINFER_TRACE / MINFER_DUMP_DIR.
Status finish_runtime_flags(engine::RuntimeOptions& options, const std::string& cache_type,
                            GgmlType fallback);

}  // namespace minfer::app
