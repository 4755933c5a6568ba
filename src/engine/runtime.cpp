#include "engine/runtime.h"

#include <algorithm>
#include <cstdlib>

#include <unistd.h>

#include <fmt/format.h>

#include "core/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/rope.h"
#include "models/decoder.h"

namespace minfer::engine {

ObserveOptions observe_options_with_env(ObserveOptions flags) {
  if (const char* env = std::getenv("MINFER_TRACE"); flags.trace_path.empty() && env != nullptr) {
    flags.trace_path = env;
  }
  if (const char* env = std::getenv("MINFER_DUMP_DIR"); flags.dump_dir.empty() && env != nullptr) {
    flags.dump_dir = env;
  }
  return flags;
}

Result<GgmlType> resolve_cache_type(std::string_view flag, const char* env, GgmlType fallback) {
  if (!flag.empty()) return parse_kv_cell_type(flag);
  if (env != nullptr && *env != '\0') {
    Result<GgmlType> type = parse_kv_cell_type(env);
    if (!type.is_ok()) {
      return make_error(ErrorCode::kInvalidArgument, "{} (from {})", type.status().message(),
                        kCacheTypeEnv);
    }
    return type;
  }
  return fallback;
}

Status apply_user_options(RuntimeOptions& options, std::string_view cache_type_flag,
                          std::optional<GgmlType> fallback) {
  if (!fallback) {
    MINFER_ASSIGN_OR_RETURN(fallback, parse_kv_cell_type(kDefaultCacheType));
  }
  MINFER_ASSIGN_OR_RETURN(
      options.cache_type,
      resolve_cache_type(cache_type_flag, std::getenv(kCacheTypeEnv), *fallback));
  options.observe = observe_options_with_env(options.observe);
  return Status::ok();
}

namespace {

uint64_t physical_memory_bytes() {
  const long pages = sysconf(_SC_PHYS_PAGES);
  const long page = sysconf(_SC_PAGE_SIZE);
  if (pages <= 0 || page <= 0) return uint64_t{16} << 30;  // unknown: assume 16 GiB
  return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

std::string mib(uint64_t bytes) {
  return fmt::format("{} MiB", (bytes + (uint64_t{1} << 19)) >> 20);
}

}  // namespace

Result<ContextChoice> resolve_n_ctx(const Model& model, int64_t requested, GgmlType cell,
                                    int64_t n_seq, uint64_t kv_budget_bytes) {
  if (requested < 0) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[engine] context size must be positive (or 0 for the model's), got {}",
                      requested);
  }
  if (requested > 0) return ContextChoice{requested, "as asked"};
  const ModelConfig& c = model.config();
  const int64_t n_train = std::max<int64_t>(1, c.n_ctx_train);
  // One position's cells in every layer that keeps cells: K and V rows of every KV head.
  uint64_t layers_bytes = 0;
  for (int64_t il = 0; il < c.n_cache_layers(); ++il) {
    if (c.is_recurrent(il)) continue;
    const int64_t hd = c.layer_head_dim(il);
    const int64_t dv = c.layer_head_dim_v(il);
    layers_bytes += static_cast<uint64_t>(c.layer_n_head_kv(il)) *
                    (ggml_row_bytes(cell, static_cast<uint64_t>(hd)).value_or(4 * hd) +
                     ggml_row_bytes(cell, static_cast<uint64_t>(dv)).value_or(4 * dv));
  }
  const uint64_t position_bytes =
      std::max<uint64_t>(1, layers_bytes * static_cast<uint64_t>(std::max<int64_t>(1, n_seq)));
  const bool from_memory = kv_budget_bytes == 0;
  // Recurrent layers' states come out of the budget first (a fixed size per sequence).
  const uint64_t states =
      c.recurrent_state_bytes() * static_cast<uint64_t>(std::max<int64_t>(1, n_seq));
  const uint64_t whole = from_memory ? physical_memory_bytes() / kKvMemoryDivisor : kv_budget_bytes;
  const uint64_t budget = whole > states ? whole - states : 1;
  const std::string budget_text =
      fmt::format("the KV budget of {}{}", mib(budget),
                  from_memory ? fmt::format(", 1/{} of physical memory", kKvMemoryDivisor) : "");
  const std::string cells = fmt::format(
      "{} {} cells{}", mib(position_bytes * static_cast<uint64_t>(n_train)),
      kv_cell_type_name(cell), n_seq > 1 ? fmt::format(" for {} sequences", n_seq) : "");
  if (position_bytes * static_cast<uint64_t>(n_train) <= budget) {
    return ContextChoice{
        n_train, fmt::format("the model's training context ({} fit {})", cells, budget_text)};
  }
  constexpr int64_t kStep = 256;
  const int64_t fits = static_cast<int64_t>(budget / position_bytes) / kStep * kStep;
  const int64_t n_ctx = std::min(n_train, std::max(kStep, fits));
  return ContextChoice{n_ctx, fmt::format("the model's training context {} reduced: its {} exceed "
                                          "{} (-c sets it)",
                                          n_train, cells, budget_text)};
}

namespace {

// The sequences that may hold a recurrent state at once: n_seq_max, else one per context of the
// KV budget (at least one).
// Per-layer flags of the layers that keep cells (ModelConfig::n_cache_layers: those before
// Gemma 4's KV-sharing layers); empty stays empty.
std::vector<bool> cache_layer_flags(const ModelConfig& c, const std::vector<bool>& flags) {
  if (flags.empty()) return flags;
  return std::vector<bool>(flags.begin(), flags.begin() + c.n_cache_layers());
}

int64_t state_slots(const RuntimeOptions& o) {
  if (o.n_seq_max > 0) return o.n_seq_max;
  return std::max<int64_t>(1, o.n_ctx_total / o.n_ctx);
}

}  // namespace

Runtime::Runtime(const Model& model, const RuntimeOptions& options)
    : model_(model), options_(options) {}

Status Runtime::shift_context(int32_t seq, int64_t n_keep, int64_t n_discard) {
  const ModelConfig& c = model_.config();
  std::vector<kernels::RopeConfig> ropes;  // [n_layer]
  for (int64_t il = 0; il < c.n_layer; ++il) {
    ropes.push_back(layer_rope(c, model_.weights().layers[static_cast<size_t>(il)], il));
  }
  return cache_->shift(*table_, seq, n_keep, n_discard,
                       [&](int64_t il, int64_t old_pos, int64_t new_pos, float* k) {
                         kernels::rerotate(*table_, k, c.layer_n_head_kv(il), c.layer_head_dim(il),
                                           old_pos, new_pos, ropes[static_cast<size_t>(il)]);
                       });
}

Result<std::unique_ptr<Runtime>> Runtime::create(const Model& model,
                                                 const RuntimeOptions& options) {
  if (options.n_ctx < 1 || options.block_size < 1) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[runtime] bad options: n_ctx {} (expected ≥ 1), block_size {} (≥ 1)",
                      options.n_ctx, options.block_size);
  }
  RuntimeOptions o = options;
  if (o.n_ctx_total <= 0) o.n_ctx_total = o.n_ctx;
  if (o.n_ctx_total < o.n_ctx) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[runtime] the KV budget of {} positions is smaller than one sequence's "
                      "context: expected at least {}",
                      o.n_ctx_total, o.n_ctx);
  }
  std::unique_ptr<Runtime> r(new Runtime(model, o));
  if (o.kernels != nullptr) {
    r->table_ = o.kernels;
  } else if (o.isa.empty()) {
    MINFER_RETURN_IF_ERROR(kernels::init_kernels());
    r->table_ = &kernels::active_table();
  } else {
    MINFER_ASSIGN_OR_RETURN(r->table_,
                            kernels::select_table(o.isa, cpu_features(), "RuntimeOptions::isa"));
  }
  const ModelConfig& c = model.config();
  MINFER_ASSIGN_OR_RETURN(
      r->cache_, KvCache::create({.n_layer = c.n_cache_layers(),
                                  .n_head_kv = c.n_head_kv,
                                  .head_dim = c.head_dim,
                                  .head_dim_v = c.head_dim_v,
                                  .cell_type = o.cache_type,
                                  .block_size = o.block_size,
                                  .n_ctx = o.n_ctx,
                                  .max_blocks = (o.n_ctx_total + o.block_size - 1) / o.block_size,
                                  .swa_layers = cache_layer_flags(c, c.swa_layers),
                                  .window = c.n_swa,
                                  .window_n_head_kv = c.n_head_kv_swa,
                                  .window_head_dim = c.head_dim_swa,
                                  .window_head_dim_v = c.head_dim_v_swa,
                                  .recurrent_layers = cache_layer_flags(c, c.recurrent_layers),
                                  .conv_state_floats = c.conv_state_floats(),
                                  .delta_state_floats = c.delta_state_floats(),
                                  .max_state_slots = state_slots(o),
                                  .max_prefix_states = std::max<int64_t>(0, o.n_prefix_states)}));
  MINFER_ASSIGN_OR_RETURN(r->pool_, kernels::ThreadPool::create(std::max(o.n_threads, 0)));
  r->runner_ = std::make_unique<StepRunner>(model, *r->cache_, *r->table_, *r->pool_);
  r->runner_->executor().set_attention_options(o.attention);
  MINFER_RETURN_IF_ERROR(r->open_observers());
  return r;
}

Status Runtime::open_observers() {
  const ObserveOptions& o = options_.observe;
  if (!o.trace_path.empty()) {
    MINFER_ASSIGN_OR_RETURN(trace_, TraceWriter::open(o.trace_path));
    observers_.trace = trace_.get();
  }
  if (!o.dump_dir.empty()) {
    MINFER_ASSIGN_OR_RETURN(dump_, TensorDumper::open(o.dump_dir));
    observers_.dump = dump_.get();
  }
  if (o.profile) {
    profile_ = std::make_unique<OpProfile>();
    observers_.profile = profile_.get();
  }
  if (!o.dump_graph.empty()) {
    graphs_ = std::make_unique<GraphDumper>(o.dump_graph);
    observers_.graphs = graphs_.get();
  }
  if (trace_ || dump_ || profile_ || graphs_) runner_->set_observers(&observers_);
  return Status::ok();
}

const char* Runtime::isa_name() const {
  return table_->name;
}

std::string Runtime::profile_table() const {
  return profile_ ? profile_->table() : std::string();
}

}  // namespace minfer::engine
