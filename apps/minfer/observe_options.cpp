#include "observe_options.h"

#include <cstdlib>

namespace minfer::app {

void add_observe_flags(CLI::App& cmd, ObserveOptions& options) {
  cmd.add_option("--trace", options.trace_path,
                 "write per-step, per-node statistics as JSON lines (also MINFER_TRACE)");
  cmd.add_option("--dump-graph", options.dump_graph,
                 "write the prefill and decode graphs to FILE (.dot or .json)");
  cmd.add_flag("--profile", options.profile, "print time per op at the end");
}

Status ObserveSet::open(const ObserveOptions& options) {
  std::string trace_path = options.trace_path;
  if (const char* env = std::getenv("MINFER_TRACE"); trace_path.empty() && env != nullptr) {
    trace_path = env;
  }
  if (!trace_path.empty()) {
    MINFER_ASSIGN_OR_RETURN(trace_, TraceWriter::open(trace_path));
    observers_.trace = trace_.get();
  }
  if (const char* env = std::getenv("MINFER_DUMP_DIR"); env != nullptr && *env != '\0') {
    MINFER_ASSIGN_OR_RETURN(dump_, TensorDumper::open(env));
    observers_.dump = dump_.get();
  }
  if (options.profile) {
    profile_ = std::make_unique<OpProfile>();
    observers_.profile = profile_.get();
  }
  observers_.dump_graph_path = options.dump_graph;
  active_ = trace_ || dump_ || profile_ || !options.dump_graph.empty();
  return Status::ok();
}

}  // namespace minfer::app
