#include "observe_options.h"

#include <cstdlib>

namespace minfer::app {

void add_observe_flags(CLI::App& cmd, engine::ObserveOptions& options) {
  cmd.add_option("--trace", options.trace_path,
                 "write per-step, per-node statistics as JSON lines (also MINFER_TRACE)");
  cmd.add_option("--dump-graph", options.dump_graph,
                 "write the prefill and decode graphs to FILE (.dot or .json)");
  cmd.add_flag("--profile", options.profile, "print time per op at the end");
}

Status finish_runtime_flags(engine::RuntimeOptions& options, const std::string& cache_type,
                            GgmlType fallback) {
  MINFER_ASSIGN_OR_RETURN(
      options.cache_type,
      engine::resolve_cache_type(cache_type, std::getenv(engine::kCacheTypeEnv), fallback));
  options.observe = engine::observe_options_with_env(options.observe);
  return Status::ok();
}

}  // namespace minfer::app
