#include "observe_options.h"

namespace minfer::app {

void add_observe_flags(CLI::App& cmd, engine::ObserveOptions& options) {
  cmd.add_option("--trace", options.trace_path,
                 "write per-step, per-node statistics as JSON lines (also MINFER_TRACE)");
  cmd.add_option("--dump-graph", options.dump_graph,
                 "write the prefill and decode graphs to FILE (.dot or .json)");
  cmd.add_flag("--profile", options.profile, "print time per op at the end");
}

}  // namespace minfer::app
