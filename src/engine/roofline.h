// The decode roofline with the kernels' own limit, as issue #18 defines it: per weight type, the
// rate at which its one-token matmul reads a cache-resident ("hot") matrix, and the roofline
// min(stream rate, hot rate of each type) over the bytes a decode step reads of each type. Where
// a type's kernel cannot keep up with memory even from cache, its bytes take its own time; the
// stream-only roofline (BenchReport::roofline_ts) stays the stricter figure beside it.
#pragma once

#include <cstdint>
#include <vector>

#include "graph/graph.h"
#include "kernels/kernel_table.h"
#include "kernels/thread_pool.h"
#include "quant/ggml_type.h"

namespace minfer::engine {

struct TypeRate {
  GgmlType type = GgmlType::kF32;
  uint64_t bytes = 0;     // a step's bytes of multiplied weights of this type
  double hot_rate = 0.0;  // bytes/s: its one-token matmul over a cache-resident matrix
};

struct HotRoofline {
  std::vector<TypeRate> types;  // one per multiplied weight type, in first-read order
  uint64_t other_bytes = 0;     // embedding rows, norm and bias vectors: at the stream rate
  // Tokens/s when each type's bytes go at min(bandwidth, its hot rate) and the rest at the
  // bandwidth; 0 when nothing was measured.
  double ts(double bandwidth) const;
};

// Bytes of the hot matrix a type is measured on: its largest matrix in the graph, cut to its
// first rows within this (in a server part's L3, shared by the pool's threads).
inline constexpr uint64_t kHotMatrixBytes = uint64_t{4} << 20;

// Measures every multiplied weight type of `graph` (a one-token decode graph) with `table` and
// `pool`: the best of a few passes of repeated one-token matmuls over the type's hot matrix.
// (`minfer bench` measures before and after a thread count's tests and keeps the better.)
HotRoofline measure_hot_roofline(const kernels::KernelTable& table, kernels::ThreadPool& pool,
                                 const Graph& graph);

}  // namespace minfer::engine
