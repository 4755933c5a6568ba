// Attention over a long cache, 2 threads, per cell type, in Qwen2.5-0.5B's shape (14 query
// heads, 2 KV heads, head_dim 64, 24 layers) and, as Qwen3/<test>, Qwen3-0.6B's (16 query heads,
// 8 KV heads, head_dim 128, 28 layers: 8x the cells per position):
//   Decode/<cells>/<depth>: one token attending to `depth` cached positions (a decode step's
//     attention for one layer)
//   Prefill/<cells>/<depth>: 64 new tokens after `depth` cached positions (causal)
//   DecodeStep/<cells>/<depth>: Decode for each of 24 layers in turn, as a decode step runs it:
//     48 MB of f16 cells at depth 4096 stay partly in a 32 MB L3 from one step to the next (in a
//     model the weights read between the layers evict them); the 192 MB at 16384 do not (Qwen3:
//     448 MB at 4096)
// Reported: time per call (per step for DecodeStep), cells/s (query rows × cells seen, per
// second) and KV B/s (the cells' bytes, keys and values, read per second).
// Example: minfer_bench_attention --benchmark_filter='Decode/f32/4096'
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "graph/attention.h"
#include "kernels/dispatch.h"
#include "kernels/thread_pool.h"
#include "kv/kv_cache.h"
#include "minfer/defaults.h"

namespace minfer {
namespace {

constexpr int kThreads = 2;

// A model's attention shape.
struct Shape {
  int64_t n_head, n_head_kv, head_dim, n_layer;
};
constexpr Shape kQwen25{14, 2, 64, 24};
constexpr Shape kQwen3{16, 8, 128, 28};

std::unique_ptr<KvCache> filled_cache(const kernels::KernelTable& table, const Shape& shape,
                                      GgmlType cells, int64_t n_layer, int64_t n_positions) {
  KvCacheConfig c;
  c.n_layer = n_layer;
  c.n_head_kv = shape.n_head_kv;
  c.head_dim = shape.head_dim;
  c.head_dim_v = shape.head_dim;
  c.cell_type = cells;
  c.n_ctx = n_positions;
  c.block_size = kDefaultBlockSize;  // what a runtime uses
  c.max_blocks = n_positions / c.block_size + 1;
  auto cache = KvCache::create(c);
  if (!cache.is_ok() || !(*cache)->reserve(0, n_positions).is_ok()) return nullptr;
  std::mt19937 rng(7);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> k(static_cast<size_t>(shape.n_head_kv * shape.head_dim));  // [n_head_kv, hd]
  std::vector<float> v(k.size());
  for (int64_t pos = 0; pos < n_positions; ++pos) {
    for (float& x : k) x = dist(rng);
    for (float& x : v) x = dist(rng);
    for (int64_t il = 0; il < n_layer; ++il) (*cache)->store(table, il, 0, pos, k.data(), v.data());
  }
  return std::move(*cache);
}

// n_layer: 1, or the shape's layers (a decode step).
void BM_Attention(benchmark::State& state, Shape shape, GgmlType cells, int64_t n_tokens,
                  int64_t n_layer) {
  const int64_t depth = state.range(0);
  const kernels::KernelTable& table = kernels::active_table();
  std::unique_ptr<KvCache> cache = filled_cache(table, shape, cells, n_layer, depth + n_tokens);
  if (cache == nullptr) {
    state.SkipWithError("cannot make the cache");
    return;
  }
  Batch batch;
  for (int64_t t = 0; t < n_tokens; ++t) batch.add(0, depth + t, 0, true);
  std::mt19937 rng(8);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> q(
      static_cast<size_t>(n_tokens * shape.n_head * shape.head_dim));  // [n, n_head, hd]
  for (float& x : q) x = dist(rng);
  std::vector<float> out(q.size());
  kernels::ThreadPool pool(kThreads);
  for (auto _ : state) {
    for (int64_t il = 0; il < n_layer; ++il) {
      const AttentionArgs args{q.data(), out.data(), il, shape.n_head, 0.125f, 0};
      attention(table, pool, *cache, batch, args);
    }
    benchmark::DoNotOptimize(out.data());
  }
  // Query rows × cells each sees.
  const double cells_seen = static_cast<double>(shape.n_head * n_layer) *
                            static_cast<double>(n_tokens * depth + n_tokens * (n_tokens + 1) / 2);
  state.counters["cells/s"] = benchmark::Counter(
      cells_seen * static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
  // The keys and values of every cell read, once per call.
  const double kv_bytes = static_cast<double>(n_layer * shape.n_head_kv * (depth + n_tokens)) *
                          static_cast<double>(cache->k_row_bytes(0) + cache->v_row_bytes(0));
  state.counters["KV B/s"] = benchmark::Counter(kv_bytes * static_cast<double>(state.iterations()),
                                                benchmark::Counter::kIsRate);
}

void register_all() {
  const std::pair<const char*, GgmlType> kCells[] = {{"f32", GgmlType::kF32},
                                                     {"f16", GgmlType::kF16},
                                                     {"q8_0", GgmlType::kQ8_0},
                                                     {"bf16", GgmlType::kBF16}};
  for (const auto& [name, type] : kCells) {
    const std::string cells = name;
    benchmark::RegisterBenchmark(("Decode/" + cells).c_str(), BM_Attention, kQwen25, type,
                                 int64_t{1}, int64_t{1})
        ->Arg(512)
        ->Arg(4096)
        ->Arg(16384)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("Prefill/" + cells).c_str(), BM_Attention, kQwen25, type,
                                 int64_t{64}, int64_t{1})
        ->Arg(0)
        ->Arg(4096)
        ->Unit(benchmark::kMillisecond);
    benchmark::RegisterBenchmark(("DecodeStep/" + cells).c_str(), BM_Attention, kQwen25, type,
                                 int64_t{1}, kQwen25.n_layer)
        ->Arg(4096)
        ->Arg(16384)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("Qwen3/Decode/" + cells).c_str(), BM_Attention, kQwen3, type,
                                 int64_t{1}, int64_t{1})
        ->Arg(4096)
        ->Unit(benchmark::kMicrosecond);
    benchmark::RegisterBenchmark(("Qwen3/DecodeStep/" + cells).c_str(), BM_Attention, kQwen3, type,
                                 int64_t{1}, kQwen3.n_layer)
        ->Arg(4096)
        ->Unit(benchmark::kMicrosecond);
  }
}

}  // namespace
}  // namespace minfer

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  minfer::register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
