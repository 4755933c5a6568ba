// Runs a graph's nodes in build order on the CPU kernels (DESIGN.md §4 "Graph").
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "core/aligned_vector.h"
#include "graph/attention.h"
#include "graph/batch.h"
#include "graph/delta_net.h"
#include "graph/graph.h"
#include "graph/moe.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "kv/kv_cache.h"

namespace minfer {

// Called after each node with its output ([rows, cols], empty for kv_store) and its run time;
// used by tracing and profiling. Consecutive matmuls of one input (q, k, v; gate, up) run as one
// dispatch: each is given the group's time in proportion to its weight bytes.
using NodeObserver =
    std::function<void(const Node& node, std::span<const float> output, double seconds)>;

class Executor {
 public:
  Executor(const kernels::KernelTable& table, kernels::ThreadPool& pool)
      : table_(table), pool_(pool) {}

  // Runs `graph` (already fused and allocated) for `batch`. The batch must have been validated
  // and its positions reserved in `cache`. Returns the output node's rows.
  std::span<const float> run(const Graph& graph, const std::vector<int64_t>& slot_sizes,
                             const Batch& batch, KvCache& cache);

  void set_observer(NodeObserver observer) { observer_ = std::move(observer); }
  // How the attention nodes compute (e.g. llama.cpp's flash-attention numerics for perplexity).
  void set_attention_options(const AttentionOptions& options) { attention_options_ = options; }
  const AttentionOptions& attention_options() const { return attention_options_; }

 private:
  void run_node(const Node& node, const Graph& graph, const Batch& batch, KvCache& cache);
  // The ops of hybrid models: columns, sigmoid_gate, ssm_conv, delta_net.
  void run_hybrid_node(const Node& node, const Graph& graph, const Batch& batch, KvCache& cache);
  // How many nodes from `first` on are matmuls of one input run as one (1: just that node).
  size_t shared_input_matmuls(const Graph& graph, size_t first) const;
  void matmul_group(const Graph& graph, size_t first, size_t n);
  void observe(const Graph& graph, size_t first, size_t n, double seconds);
  void matmul(const Node& node, const float* x, float* y);
  float* buffer(const Node& node) { return slots_[static_cast<size_t>(node.buffer)].data(); }

  const kernels::KernelTable& table_;
  kernels::ThreadPool& pool_;
  std::vector<AlignedVector<float>> slots_;  // activation buffers, by slot
  AlignedVector<uint8_t> act_scratch_;       // activations converted for a matmul (bytes)
  MoeScratch moe_scratch_;                   // moe_ffn's routing and per-expert buffers
  DeltaNetScratch delta_net_scratch_;        // ssm_conv's transposed taps and next state
  NodeObserver observer_;
  AttentionOptions attention_options_;
};

}  // namespace minfer
