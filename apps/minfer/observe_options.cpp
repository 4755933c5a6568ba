#include "observe_options.h"

namespace minfer::app {

namespace {

void add_flags(CLI::App& cmd, std::string& trace_path, std::string& dump_graph, bool& profile) {
  cmd.add_option("--trace", trace_path,
                 "write per-step, per-node statistics as JSON lines (also MINFER_TRACE)");
  cmd.add_option("--dump-graph", dump_graph,
                 "write the prefill and decode graphs to FILE (.dot or .json)");
  cmd.add_flag("--profile", profile, "print time per op at the end");
}

}  // namespace

void add_observe_flags(CLI::App& cmd, ObserveOptions& options) {
  add_flags(cmd, options.trace_path, options.dump_graph, options.profile);
}

void add_observe_flags(CLI::App& cmd, LoadOptions& options) {
  add_flags(cmd, options.trace_path, options.dump_graph, options.profile);
}

}  // namespace minfer::app
