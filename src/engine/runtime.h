// The runtime (DESIGN.md §2 "engine"): what running a model needs, built once from one options
// struct — the kernel table, the thread pool, the paged KV cache, the step runner and the
// observers (traces, profiles, dumps). The scheduler, bench, perplexity and the
// `logits` command all run their steps through one.
//
//   RuntimeOptions options;
//   options.n_ctx = 4096;
//   auto runtime = Runtime::create(model, options);
//   auto logits = (*runtime)->step(batch);   // [n_outputs, n_vocab]
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "core/non_copyable.h"
#include "core/status.h"
#include "engine/step_runner.h"
#include "graph/attention.h"
#include "graph/batch.h"
#include "graph/observe.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "kv/kv_cache.h"
#include "minfer/defaults.h"
#include "models/model.h"

namespace minfer::engine {

// The environment variable that sets the KV cell type when no flag does.
inline constexpr const char* kCacheTypeEnv = "MINFER_CACHE_TYPE";
// A context the user does not give fits its KV cells in physical memory divided by this.
inline constexpr uint64_t kKvMemoryDivisor = 4;

// What a run asks to observe (the --trace, --profile and --dump-graph flags, MINFER_TRACE and
// MINFER_DUMP_DIR). Empty: nothing.
struct ObserveOptions {
  std::string trace_path;  // one JSON line per step
  std::string dump_dir;    // every node's output of every step
  std::string dump_graph;  // the prefill and decode graphs (.dot or .json)
  bool profile = false;    // time per op
};

// The options with MINFER_TRACE / MINFER_DUMP_DIR filled in where the flags left them empty.
ObserveOptions observe_options_with_env(ObserveOptions flags);

// The cell type from the flag when given, else from `env` (the value of MINFER_CACHE_TYPE, may
// be null), else `fallback`. A bad name, in either place, is an error naming it.
Result<GgmlType> resolve_cache_type(std::string_view flag, const char* env, GgmlType fallback);

struct RuntimeOptions;

// What every command that builds a runtime applies after parsing its flags: the cell type from
// `cache_type_flag`, else MINFER_CACHE_TYPE, else the command's `fallback` (none:
// kDefaultCacheType; `logits` keeps f32 cells); and options.observe completed with MINFER_TRACE /
// MINFER_DUMP_DIR.
Status apply_user_options(RuntimeOptions& options, std::string_view cache_type_flag,
                          std::optional<GgmlType> fallback = std::nullopt);

// The context chosen for a run and why, in words (run/chat --verbose and serve print it).
struct ContextChoice {
  int64_t n_ctx = 0;
  std::string why;
};

// The context a run gets when the user asks for `requested` positions; 0: the model's training
// context, reduced when the KV cells of `cell` for n_seq sequences of it would take more than
// kv_budget_bytes (0: physical memory / kKvMemoryDivisor) to a multiple of 256 that fits
// (at least 256). Error: a negative request.
Result<ContextChoice> resolve_n_ctx(const Model& model, int64_t requested, GgmlType cell,
                                    int64_t n_seq = 1, uint64_t kv_budget_bytes = 0);

struct RuntimeOptions {
  std::string isa;  // "ref", "avx2", "avx512"; empty: MINFER_FORCE_ISA, else the best the CPU runs
  const kernels::KernelTable* kernels = nullptr;  // a table of one's own (tests); overrides isa
  int n_threads = 0;                              // ≤ 0: kernels::default_thread_count()
  GgmlType cache_type = GgmlType::kF32;
  int64_t n_ctx = 4096;                    // positions one sequence may use
  int64_t n_ctx_total = 0;                 // KV budget in positions for all sequences; ≤ 0: n_ctx
  int64_t block_size = kDefaultBlockSize;  // KV positions per block
  // Sequences that may hold a recurrent state at once (models with recurrent layers); ≤ 0: one
  // per n_ctx of the budget (n_ctx_total / n_ctx), at least one.
  int64_t n_seq_max = 0;
  // Recurrent state checkpoints kept with prefix-cache blocks (KvCacheConfig::max_prefix_states;
  // each costs one sequence's recurrent state, taken when kept). 0: none.
  int64_t n_prefix_states = 0;
  // e.g. with f16 cells, attention in llama.cpp's CPU flash-attention arithmetic (what
  // llama-perplexity runs by default; graph/attention.h).
  AttentionOptions attention;
  ObserveOptions observe;
};

class Runtime : NonCopyable {
 public:
  // Errors: a bad ISA name or one this CPU cannot run, n_ctx / block_size < 1, a budget smaller
  // than one sequence's context, an observer file that cannot be created. `model` must outlive
  // the runtime.
  static Result<std::unique_ptr<Runtime>> create(const Model& model, const RuntimeOptions& options);

  // One forward step (StepRunner::step): [n_outputs, n_vocab], valid until the next step.
  Result<std::span<const float>> step(const Batch& batch,
                                      std::optional<StepKind> kind = std::nullopt) {
    return runner_->step(batch, kind);
  }

  // The step's last hidden state instead (StepRunner::step_hidden): [n_outputs, n_embd].
  Result<std::span<const float>> step_hidden(const Batch& batch) {
    return runner_->step_hidden(batch);
  }

  // Context shift of sequence `seq` (KvCache::shift): positions [n_keep, n_keep + n_discard)
  // are forgotten and the later ones move down, each kept key re-rotated by the model's rope of
  // its layer from its old position to its new one. Errors as KvCache::shift's.
  Status shift_context(int32_t seq, int64_t n_keep, int64_t n_discard);

  const Model& model() const { return model_; }
  const RuntimeOptions& options() const { return options_; }
  int64_t n_vocab() const { return model_.config().n_vocab; }
  int64_t n_ctx() const { return options_.n_ctx; }
  int n_threads() const { return pool_->n_threads(); }
  GgmlType cache_type() const { return options_.cache_type; }
  // "ref", "avx2", "avx512".
  const char* isa_name() const;
  KvCache& cache() { return *cache_; }
  const KvCache& cache() const { return *cache_; }
  StepRunner& runner() { return *runner_; }
  const kernels::KernelTable& kernels() const { return *table_; }
  kernels::ThreadPool& pool() { return *pool_; }

  // The trace, when one was asked for: the caller ends each step it samples from with the token
  // (TraceWriter::end_step).
  TraceWriter* trace() { return trace_.get(); }
  // The per-op profile as a table, or "" when none was asked for.
  std::string profile_table() const;

 private:
  Runtime(const Model& model, const RuntimeOptions& options);
  Status open_observers();

  const Model& model_;
  RuntimeOptions options_;
  const kernels::KernelTable* table_ = nullptr;
  std::unique_ptr<kernels::ThreadPool> pool_;
  std::unique_ptr<KvCache> cache_;
  std::unique_ptr<StepRunner> runner_;
  std::unique_ptr<TraceWriter> trace_;
  std::unique_ptr<OpProfile> profile_;
  std::unique_ptr<TensorDumper> dump_;
  std::unique_ptr<GraphDumper> graphs_;
  RunObservers observers_;
};

}  // namespace minfer::engine
