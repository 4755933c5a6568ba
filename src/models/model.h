// A loaded model (config + weights viewed in the GGUF map) and the forward step that runs a batch
// through it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>

#include "core/status.h"
#include "gguf/gguf_file.h"
#include "graph/batch.h"
#include "graph/executor.h"
#include "graph/graph.h"
#include "graph/observe.h"
#include "kv/kv_cache.h"
#include "models/model_config.h"
#include "models/model_weights.h"

namespace minfer {

class Model {
 public:
  static Result<std::unique_ptr<Model>> load(const std::string& path);
  // Takes an opened file (e.g. one a test wrote).
  static Result<std::unique_ptr<Model>> from_file(std::unique_ptr<GgufFile> file);

  const ModelConfig& config() const { return config_; }
  const ModelWeights& weights() const { return weights_; }
  const GgufFile& file() const { return *file_; }

  // The decoder graph for a batch of n_tokens of which n_outputs want logits (not yet fused or
  // allocated).
  Graph build_graph(int64_t n_tokens, int64_t n_outputs) const;

  // A KV cache shaped for this model.
  Result<std::unique_ptr<KvCache>> make_cache(GgmlType cell_type, int64_t n_ctx, int64_t max_blocks,
                                              int64_t block_size = 32) const;

 private:
  std::unique_ptr<GgufFile> file_;
  ModelConfig config_;
  ModelWeights weights_;
};

// Runs forward steps of one model over one cache. Graphs are built once per (n_tokens,
// n_outputs) shape and reused: positions and tokens are data, not part of the graph.
class Forward {
 public:
  Forward(const Model& model, KvCache& cache, const kernels::KernelTable& table,
          kernels::ThreadPool& pool);

  // Checks the batch (ids < n_vocab, positions inside the context and contiguous with what the
  // cache holds for each sequence, output rows valid), reserves cache blocks, runs the graph and
  // returns the logits of the output rows: [n_outputs, n_vocab]. On error nothing is stored.
  // `kind` labels the step for traces and profiles (default: decode for a single token,
  // prefill otherwise).
  Result<std::span<const float>> step(const Batch& batch,
                                      std::optional<StepKind> kind = std::nullopt);

  // Feeds every later step to these observers (nullptr: none). They must outlive the steps.
  void set_observers(const RunObservers* observers);

  Executor& executor() { return executor_; }
  const Graph* last_graph() const { return last_graph_; }

 private:
  Status validate(const Batch& batch) const;
  Status begin_observed_step(StepKind kind, int64_t n_tokens);

  struct Prepared {
    Graph graph;
    std::vector<int64_t> slot_sizes;
  };
  const Model& model_;
  KvCache& cache_;
  Executor executor_;
  std::map<std::pair<int64_t, int64_t>, Prepared> graphs_;
  const Graph* last_graph_ = nullptr;
  const RunObservers* observers_ = nullptr;
  const Graph* dumped_prefill_ = nullptr;  // graphs already written to dump_graph_path
  const Graph* dumped_decode_ = nullptr;
};

}  // namespace minfer
