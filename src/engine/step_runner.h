// The step runner (DESIGN.md §4 "Engine"): runs forward steps of one model over one KV cache.
// A step checks its batch, reserves the cache blocks its positions need (rolling back on
// error), runs the model's graph for the batch's shape on the executor and feeds the observers.
// Graphs depend only on the shape (n_tokens, n_outputs) — positions and tokens are data — so
// they are built once per shape and kept in a bounded cache, least recently used first out.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <optional>
#include <span>
#include <tuple>
#include <utility>
#include <vector>

#include "core/status.h"
#include "graph/batch.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/observe.h"
#include "kv/kv_cache.h"
#include "models/model.h"

namespace minfer::engine {

class StepRunner {
 public:
  // Graph shapes kept at once; a server meets many shapes (every mix of decodes and prefill
  // chunks), a CLI run two or three.
  static constexpr size_t kMaxCachedGraphs = 32;

  // `model`, `cache`, `table` and `pool` must outlive the runner.
  StepRunner(const Model& model, KvCache& cache, const kernels::KernelTable& table,
             kernels::ThreadPool& pool);

  // Checks the batch (ids < n_vocab, positions inside the context and contiguous with what the
  // cache holds for each sequence, output rows valid), reserves cache blocks, runs the graph and
  // returns the logits of the output rows: [n_outputs, n_vocab], valid until the next step. On
  // error nothing is stored. `kind` labels the step for traces and profiles (default: decode
  // for a single token, prefill otherwise).
  Result<std::span<const float>> step(const Batch& batch,
                                      std::optional<StepKind> kind = std::nullopt);
  // The same step returning the output rows' last hidden state (after the final norm) instead of
  // their logits: [n_outputs, n_embd] (what embeddings pool; engine/embedder.h).
  Result<std::span<const float>> step_hidden(const Batch& batch);

  // Feeds every later step to these observers (nullptr: none). They must outlive the steps.
  void set_observers(const RunObservers* observers);

  Executor& executor() { return executor_; }
  const Model& model() const { return model_; }
  size_t n_cached_graphs() const { return graphs_.size(); }

 private:
  struct Prepared {
    Graph graph;
    std::vector<int64_t> slot_sizes;  // [n_slots] floats per buffer slot
  };
  using Shape = std::tuple<int64_t, int64_t, bool>;  // (n_tokens, n_outputs, hidden)

  Status validate(const Batch& batch) const;
  // Reserves every sequence's positions of the batch, or none of them.
  // `end`: seq → its last position in the batch + 1.
  Status reserve(const std::map<int32_t, int64_t>& end);
  // The prepared graph of a shape, built and cached on first use.
  const Prepared& prepared(Shape shape);
  Status begin_observed_step(StepKind kind, const Graph& graph, int64_t n_tokens);
  Result<std::span<const float>> run_step(const Batch& batch, std::optional<StepKind> kind,
                                          bool hidden);

  const Model& model_;
  KvCache& cache_;
  Executor executor_;
  std::list<std::pair<Shape, Prepared>> graphs_;  // most recently used first
  std::map<Shape, std::list<std::pair<Shape, Prepared>>::iterator> by_shape_;
  const RunObservers* observers_ = nullptr;
};

}  // namespace minfer::engine
