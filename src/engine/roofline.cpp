#include "engine/roofline.h"

#include <algorithm>
#include <chrono>
#include <random>
#include <span>
#include <vector>

#include "graph/weight_tensor.h"
#include "kernels/interleave.h"
#include "kernels/matmul.h"

namespace minfer::engine {

double HotRoofline::ts(double bandwidth) const {
  if (bandwidth <= 0.0) return 0.0;
  double seconds = static_cast<double>(other_bytes) / bandwidth;
  for (const TypeRate& t : types) {
    if (t.hot_rate <= 0.0) return 0.0;
    seconds += static_cast<double>(t.bytes) / std::min(bandwidth, t.hot_rate);
  }
  return seconds > 0.0 ? 1.0 / seconds : 0.0;
}

namespace {

// The first rows of `w` (its first matrix) within kHotMatrixBytes, in whole x16 row groups.
kernels::MatmulWeights hot_matrix(const WeightTensor& w) {
  const int64_t step = w.layout == kernels::WeightLayout::kRows16 ? kernels::kInterleaveRows : 1;
  const auto fit = static_cast<int64_t>(kHotMatrixBytes / w.row_bytes) / step * step;
  const int64_t rows = std::clamp<int64_t>(fit, std::min(step, w.n_rows), w.n_rows);
  return {w.type, w.data, rows, w.n_cols, w.layout};
}

// Bytes/s of one-token matmuls over `m` (rows of row_bytes) once it is in cache: the best of
// three passes of at least 5 ms each.
double hot_rate(const kernels::KernelTable& table, kernels::ThreadPool& pool,
                const kernels::MatmulWeights& m, size_t row_bytes) {
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(m.n_in));
  for (float& v : x) v = dist(rng);
  std::vector<float> y(static_cast<size_t>(m.n_out));
  std::vector<uint8_t> scratch(kernels::matmul_scratch_bytes(m.type, 1, m.n_in));
  const auto seconds_of = [&](int64_t calls) {
    const auto t0 = std::chrono::steady_clock::now();
    for (int64_t i = 0; i < calls; ++i) {
      kernels::matmul(table, pool, m, x.data(), 1, y.data(), scratch);
    }
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  seconds_of(2);  // into the cache
  const double one = std::max(seconds_of(1), 1e-7);
  const int64_t calls = std::max<int64_t>(8, static_cast<int64_t>(5e-3 / one));
  const double bytes = static_cast<double>(m.n_out) * static_cast<double>(row_bytes);
  double best = 0.0;
  for (int pass = 0; pass < 3; ++pass) {
    best = std::max(best, bytes * static_cast<double>(calls) / seconds_of(calls));
  }
  return best;
}

}  // namespace

HotRoofline measure_hot_roofline(const kernels::KernelTable& table, kernels::ThreadPool& pool,
                                 const Graph& graph) {
  HotRoofline out;
  std::vector<const WeightTensor*> largest;  // [type of out.types]
  for (const WeightRead& r : weight_reads(graph)) {
    if (!r.multiplied) {
      out.other_bytes += r.bytes;
      continue;
    }
    const WeightTensor* w = r.weight;
    auto it = std::find_if(out.types.begin(), out.types.end(),
                           [&](const TypeRate& t) { return t.type == w->type; });
    if (it == out.types.end()) {
      out.types.push_back({w->type, 0, 0.0});
      largest.push_back(w);
      it = out.types.end() - 1;
    }
    it->bytes += r.bytes;
    const WeightTensor*& big = largest[static_cast<size_t>(it - out.types.begin())];
    if (w->n_rows * static_cast<int64_t>(w->row_bytes) >
        big->n_rows * static_cast<int64_t>(big->row_bytes)) {
      big = w;
    }
  }
  for (size_t i = 0; i < out.types.size(); ++i) {
    out.types[i].hot_rate = hot_rate(table, pool, hot_matrix(*largest[i]), largest[i]->row_bytes);
  }
  return out;
}

}  // namespace minfer::engine
