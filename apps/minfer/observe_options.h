// The observability flags every command that runs the model shares: --trace PATH (or
// MINFER_TRACE), --profile, --dump-graph FILE, and MINFER_DUMP_DIR.
#pragma once

#include <memory>
#include <string>

#include <CLI/CLI.hpp>

#include "core/status.h"
#include "graph/observe.h"

namespace minfer::app {

struct ObserveOptions {
  std::string trace_path;  // --trace, else $MINFER_TRACE
  std::string dump_graph;  // --dump-graph
  bool profile = false;    // --profile
};

void add_observe_flags(CLI::App& cmd, ObserveOptions& options);

// Owns what the options ask for; `observers()` is null when nothing is asked.
class ObserveSet {
 public:
  Status open(const ObserveOptions& options);
  const RunObservers* observers() const { return active_ ? &observers_ : nullptr; }
  TraceWriter* trace() { return trace_.get(); }
  // The profile table, or "" without --profile.
  std::string profile_table() const { return profile_ ? profile_->table() : std::string(); }

 private:
  bool active_ = false;
  std::unique_ptr<TraceWriter> trace_;
  std::unique_ptr<OpProfile> profile_;
  std::unique_ptr<TensorDumper> dump_;
  RunObservers observers_;
};

}  // namespace minfer::app
