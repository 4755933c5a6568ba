// Matmul throughput per weight type and ISA at the Qwen2.5-0.5B shapes, 2 threads:
//   GEMV (1 token): GB/s of weights read, and the ratio to the streaming read bandwidth
//   GemvHot: the same on one matrix read again and again (cache-resident: arithmetic ceiling)
//   GEMM (64 tokens): GFLOP/s (2 · n_in · n_out · 64 per call)
// The streaming read bandwidth (2 threads summing a 1 GiB buffer with vector loads) is measured
// first, in the same run, and printed as its own benchmark. Every call reads a cold copy of the
// weights (see min_cold_bytes). Names: BM_Gemv/<type>/<isa>/<n_in>x<n_out>. K-quant rows need
// n_in % 256 == 0, so their 896-wide shapes run at 1024.
// Example: minfer_bench_kernels --benchmark_filter='Gemv/(q8_0|q4_K|q6_K)/avx512/(896|1024)x151936'

// GCC 12 reports the _mm512_undefined_*() placeholders inside its own intrinsic headers as
// uninitialized (a false positive of its inliner); the warning says nothing about this code.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"

#include <benchmark/benchmark.h>
#include <immintrin.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/cpu_features.h"
#include "kernels/dispatch.h"
#include "kernels/interleave.h"
#include "kernels/matmul.h"
#include "kernels/read_rate.h"
#include "kernels/thread_pool.h"
#include "quant/blocks.h"
#include "quant/quant_traits.h"

namespace minfer::kernels {
namespace {

constexpr int kThreads = 2;
constexpr int64_t kGemmTokens = 64;
constexpr size_t kStreamBytes = size_t{1} << 30;

ThreadPool& pool() {
  static ThreadPool p(kThreads);
  return p;
}

// ---- streaming read bandwidth ----

std::vector<uint64_t>& stream_buffer() {
  static std::vector<uint64_t> buf = [] {
    std::vector<uint64_t> b(kStreamBytes / sizeof(uint64_t));
    pool().parallel_for(static_cast<int64_t>(b.size()), [&b](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) b[i] = static_cast<uint64_t>(i) * 2654435761u;
    });
    return b;
  }();
  return buf;
}

// One pass over the buffer, read by `width` (kernels/read_rate.h).
uint64_t stream_once(ReadWidth width) {
  std::vector<uint64_t>& b = stream_buffer();
  uint64_t partial[kThreads] = {};
  pool().run([&](int id, int n) {
    const ThreadPool::TaskRange r = ThreadPool::task_range(static_cast<int64_t>(b.size()), id, n);
    partial[id] = sum_words(width, b.data() + r.begin, static_cast<size_t>(r.end - r.begin));
  });
  uint64_t s = 0;
  for (uint64_t p : partial) s += p;
  return s;
}

double g_stream_bytes_per_s = 0.0;

// The best pass of either width: a streaming read should be the best this machine can do, or
// every ratio to it flatters the kernels.
double measure_stream_bandwidth() {
  stream_once(ReadWidth::kPlain);  // touch
  double best = 0.0;
  for (int rep = 0; rep < 5; ++rep) {
    for (ReadWidth width : {ReadWidth::kPlain, ReadWidth::kWidest}) {
      const auto t0 = std::chrono::steady_clock::now();
      benchmark::DoNotOptimize(stream_once(width));
      const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      best = std::max(best, static_cast<double>(kStreamBytes) / s);
    }
  }
  return best;
}

void BM_StreamRead(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(stream_once(ReadWidth::kWidest));
  state.counters["GB/s"] = benchmark::Counter(static_cast<double>(kStreamBytes) / 1e9,
                                              benchmark::Counter::kIsIterationInvariantRate);
}

// ---- matmul ----

struct Weights {
  std::vector<uint8_t> data;  // [n_copies][n_out][row bytes]
  size_t row_bytes = 0;
  size_t matrix_bytes = 0;
  int64_t n_copies = 0;
};

// The last-level cache's size from sysfs ("491520K"), or 0 if it does not say.
size_t l3_bytes() {
  std::ifstream f("/sys/devices/system/cpu/cpu0/cache/index3/size");
  size_t n = 0;
  char unit = 0;
  if (!(f >> n)) return 0;
  f >> unit;
  return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
}

// Copies of a matrix that together exceed every cache. Decode reads every layer's weights once
// per token from a model far larger than the caches, so the bench reads cold copies too. A cycle
// through barely more than the L3 is not cold: on this machine (a 480 MB L3 shared with other
// tenants) 525 MB of copies still hit the L3 often enough to show a Q4_K GEMV at 0.73-0.8 of the
// stream, where 1.2 GB showed 0.64, steadily. So: three times the L3, and at least 1 GiB.
size_t min_cold_bytes() {
  static const size_t bytes = std::max(size_t{1} << 30, 3 * l3_bytes());
  return bytes;
}

// 64 distinct quantized rows of random floats, repeated over n_out and then over the copies
// (bandwidth does not care that rows repeat; quantizing 136M K-quant elements would take
// minutes). One matrix is kept at a time: the copies of every shape would not fit in memory.
const Weights& weights(GgmlType type, int64_t n_in, int64_t n_out) {
  static std::tuple<int, int64_t, int64_t> key{-1, 0, 0};
  static Weights w;
  if (key == std::make_tuple(static_cast<int>(type), n_in, n_out)) return w;
  key = {static_cast<int>(type), n_in, n_out};
  const QuantTraits& traits = *quant_traits(type);
  w.row_bytes = static_cast<size_t>(n_in / traits.block_size) * traits.bytes_per_block;
  w.matrix_bytes = w.row_bytes * static_cast<size_t>(n_out);
  w.n_copies = static_cast<int64_t>((min_cold_bytes() + w.matrix_bytes - 1) / w.matrix_bytes);
  w.data.assign(w.matrix_bytes * static_cast<size_t>(w.n_copies), 0);
  constexpr int64_t kDistinct = 64;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<float> row(n_in);
  for (int64_t r = 0; r < kDistinct && r < n_out; ++r) {
    for (float& v : row) v = dist(rng);
    quantize_row(type, row.data(), w.data.data() + r * w.row_bytes, n_in);
  }
  const int64_t total_rows = n_out * w.n_copies;
  for (int64_t r = kDistinct; r < total_rows; ++r) {
    std::copy_n(w.data.data() + (r % n_out % kDistinct) * w.row_bytes, w.row_bytes,
                w.data.data() + r * w.row_bytes);
  }
  return w;
}

// The same copies in the x16 row-interleaved layout (kernels/interleave.h), for the GGUF vs x16
// pairs; one at a time, as weights().
const Weights& x16_weights(GgmlType type, int64_t n_in, int64_t n_out) {
  static std::tuple<int, int64_t, int64_t> key{-1, 0, 0};
  static Weights w;
  if (key == std::make_tuple(static_cast<int>(type), n_in, n_out)) return w;
  key = {static_cast<int>(type), n_in, n_out};
  const Weights& src = weights(type, n_in, n_out);
  w.row_bytes = src.row_bytes;
  w.matrix_bytes = src.matrix_bytes;
  w.n_copies = src.n_copies;
  w.data.assign(src.data.size(), 0);
  const int64_t total_rows = n_out * w.n_copies;
  pool().parallel_for(total_rows / kInterleaveRows, [&](int64_t begin, int64_t end) {
    interleave_rows(type, src.data.data(), n_in, begin * kInterleaveRows, end * kInterleaveRows,
                    w.data.data());
  });
  return w;
}

// cold: every call reads the next copy (memory-bound, as in decode); hot: always the first (for
// shapes that fit the caches, the kernel's arithmetic ceiling).
void BM_Matmul(benchmark::State& state, GgmlType type, Isa isa, int64_t n_in, int64_t n_out,
               int64_t n_tokens, bool cold, WeightLayout layout) {
  if (!isa_available(isa, cpu_features())) {
    state.SkipWithError("this CPU cannot run this ISA");
    return;
  }
  const KernelTable& table = table_for(isa);
  const bool x16 = layout == WeightLayout::kRows16;
  if (x16 && !matmul_supports_layout(table, type, layout)) {
    state.SkipWithError("this table has no x16 kernel for this type");
    return;
  }
  const Weights& w = x16 ? x16_weights(type, n_in, n_out) : weights(type, n_in, n_out);
  std::vector<float> x(n_in * n_tokens);
  std::mt19937 rng(3);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  for (float& v : x) v = dist(rng);
  std::vector<float> y(n_out * n_tokens);
  std::vector<uint8_t> scratch(matmul_scratch_bytes(type, n_tokens, n_in));
  int64_t copy = 0;
  for (auto _ : state) {
    const MatmulWeights mw{type, w.data.data() + static_cast<size_t>(copy) * w.matrix_bytes, n_out,
                           n_in, layout};
    matmul(table, pool(), mw, x.data(), n_tokens, y.data(), scratch);
    benchmark::ClobberMemory();
    if (cold) copy = (copy + 1) % w.n_copies;
  }
  const double bytes = static_cast<double>(w.matrix_bytes);
  if (n_tokens == 1) {
    state.counters["GB/s"] =
        benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
    state.counters["of_stream"] = benchmark::Counter(bytes / g_stream_bytes_per_s,
                                                     benchmark::Counter::kIsIterationInvariantRate);
  } else {
    const double flops = 2.0 * static_cast<double>(n_in) * static_cast<double>(n_out) *
                         static_cast<double>(n_tokens);
    state.counters["GFLOP/s"] =
        benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  }
}

// One GGUF / x16 pair of `kind` (GemvLayout, GemvHotLayout or GemmLayout) on the table of `isa`.
void register_layout_pair(const std::string& kind, GgmlType type, Isa isa, int64_t n_in,
                          int64_t n_out) {
  const bool gemv = kind != "GemmLayout";
  const bool hot = kind == "GemvHotLayout";
  for (WeightLayout layout : {WeightLayout::kGguf, WeightLayout::kRows16}) {
    const std::string name = "BM_" + kind + "/" + std::string(ggml_type_info(type).name) + "/" +
                             isa_name(isa) + "/" +
                             (layout == WeightLayout::kGguf ? "gguf" : "x16") + "/" +
                             std::to_string(n_in) + "x" + std::to_string(n_out);
    benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, type, isa, n_in, n_out,
                                 gemv ? 1 : kGemmTokens, !hot, layout)
        ->Unit(benchmark::kMicrosecond)
        ->UseRealTime();
  }
}

// The GGUF layout beside the x16 layout (kernels/interleave.h), AMX, AVX-512, AVX-VNNI and AVX2, at
// the Qwen2.5-0.5B and 1.5B shapes (K-quants: Qwen3-0.6B's and Qwen2.5-1.5B's):
// BM_<Gemv|GemvHot|Gemm>Layout/<type>/<isa>/<gguf|x16>/<n_in>x<n_out>, each pair registered
// together. Compare them within one run, e.g. with --benchmark_repetitions=5
// --benchmark_enable_random_interleaving=true (medians).
void register_layout_pairs() {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {
      {896, 896},   {896, 128},  {896, 4864},  {4864, 896},  {896, 151936},
      {1536, 1536}, {1536, 256}, {1536, 8960}, {8960, 1536}, {1536, 151936}};
  const std::vector<std::pair<int64_t, int64_t>> k_shapes = {
      {1024, 2048}, {1024, 1024}, {2048, 1024}, {1024, 3072}, {3072, 1024},  {1024, 151936},
      {1536, 1536}, {1536, 256},  {1536, 8960}, {8960, 1536}, {1536, 151936}};
  for (const char* kind : {"GemvLayout", "GemvHotLayout", "GemmLayout"}) {
    const bool hot = std::string(kind) == "GemvHotLayout";
    for (GgmlType type : {GgmlType::kQ8_0, GgmlType::kQ4_0, GgmlType::kQ5_0, GgmlType::kMXFP4,
                          GgmlType::kQ4_K, GgmlType::kQ5_K, GgmlType::kQ6_K}) {
      const bool k_quant = quant_traits(type)->block_size == kQKK;
      for (Isa isa : {Isa::kAmx, Isa::kAvx512, Isa::kAvxVnni, Isa::kAvx2}) {
        for (auto [n_in, n_out] : k_quant ? k_shapes : shapes) {
          if (!hot || n_out <= 8960) register_layout_pair(kind, type, isa, n_in, n_out);
        }
      }
    }
  }
}

void register_all() {
  benchmark::RegisterBenchmark("BM_StreamRead/1GiB", BM_StreamRead)
      ->Unit(benchmark::kMillisecond)
      ->UseRealTime();
  const GgmlType types[] = {GgmlType::kQ8_0, GgmlType::kQ4_K, GgmlType::kQ6_K, GgmlType::kF32,
                            GgmlType::kF16,  GgmlType::kBF16, GgmlType::kQ4_0, GgmlType::kQ4_1,
                            GgmlType::kQ5_0, GgmlType::kQ5_1, GgmlType::kQ2_K, GgmlType::kQ3_K,
                            GgmlType::kQ5_K, GgmlType::kMXFP4};
  const std::pair<int64_t, int64_t> shapes[] = {
      {896, 896}, {896, 128}, {896, 4864}, {4864, 896}, {896, 151936}};
  for (const char* kind : {"Gemv", "GemvHot", "Gemm"}) {
    const bool gemv = std::string(kind) != "Gemm";
    const bool hot = std::string(kind) == "GemvHot";
    const int64_t n_tokens = gemv ? 1 : kGemmTokens;
    for (GgmlType type : types) {
      for (Isa isa : {Isa::kAvx512, Isa::kAvxVnni, Isa::kAvx2, Isa::kRef}) {
        for (auto [model_n_in, n_out] : shapes) {
          // K-quants need n_in % 256 == 0: 896 becomes 1024 for them (llama.cpp stores such
          // Qwen2.5-0.5B tensors in a 32-block type instead). The name shows the shape run.
          const int64_t block = quant_traits(type)->block_size;
          const int64_t n_in = (model_n_in + block - 1) / block * block;
          const std::string name = std::string("BM_") + kind + "/" +
                                   std::string(ggml_type_info(type).name) + "/" + isa_name(isa) +
                                   "/" + std::to_string(n_in) + "x" + std::to_string(n_out);
          if (hot && n_out > 4864) continue;  // a hot 151936-row matrix is not in any cache
          benchmark::RegisterBenchmark(name.c_str(), BM_Matmul, type, isa, n_in, n_out, n_tokens,
                                       !hot, WeightLayout::kGguf)
              ->Unit(benchmark::kMicrosecond)
              ->UseRealTime();
        }
      }
    }
  }
  register_layout_pairs();
}

}  // namespace
}  // namespace minfer::kernels

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  using namespace minfer::kernels;
  minfer::kernels::g_stream_bytes_per_s = measure_stream_bandwidth();
  std::printf("streaming read bandwidth (%d threads, 1 GiB): %.1f GB/s\n", kThreads,
              minfer::kernels::g_stream_bytes_per_s / 1e9);
  register_all();
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
