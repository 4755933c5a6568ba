// Throughput of a model, measured as llama-bench does (tools/llama-bench):
//  * pp<N> ("prompt processing"): N random valid token ids prefilled from an empty cache in
//    forwards of n_batch tokens (only the last row's logits computed); t/s = N / time.
//  * tg<N> ("text generation"): N tokens decoded one forward at a time from an empty cache,
//    each fed the argmax of the previous logits; t/s = N / time.
// Each test runs once unmeasured (warm-up: graphs built, caches warm), then `repetitions`
// times, each from an emptied cache; the report gives mean ± sample standard deviation of the
// per-repetition t/s.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/progress.h"
#include "core/status.h"
#include "engine/runtime.h"
#include "models/model.h"

namespace minfer::engine {

// The runtime's options (its n_ctx is set to fit the tests) and the tests to run.
struct BenchOptions : RuntimeOptions {
  int64_t n_prompt = 512;  // 0: no pp test
  int64_t n_gen = 128;     // 0: no tg test
  int64_t n_batch = 512;
  int repetitions = 3;
  uint64_t seed = 42;  // for the random prompt ids
  ProgressStyle progress = ProgressStyle::kAuto;
  // Also measure the machine's read bandwidth and report the decode roofline (BenchReport),
  // over a buffer of roofline_bytes (far larger than the caches).
  bool roofline = false;
  int64_t roofline_bytes = int64_t{512} << 20;
};

struct BenchTest {
  std::string name;  // "pp512", "tg128"
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  std::vector<double> samples_ns;  // [repetitions] wall time of each run
  std::vector<double> samples_ts;  // [repetitions] tokens per second of each run
  double avg_ns = 0.0, stddev_ns = 0.0;
  double avg_ts = 0.0, stddev_ts = 0.0;
};

struct BenchReport {
  std::string model_filename;
  std::string model_type;       // "qwen2 0.5B Q8_0", as llama.cpp's llama_model_desc
  uint64_t model_size = 0;      // tensor bytes
  uint64_t model_n_params = 0;  // tensor elements
  int n_threads = 0;
  int64_t n_batch = 0;
  std::string cache_type;
  std::string isa;
  std::vector<BenchTest> tests;
  std::string profile;  // the per-op profile table when options.observe.profile, else ""
  // Bytes of weights one decode step reads (weight_bytes_read of the one-token graph: an MoE
  // layer counts only the experts a token uses).
  uint64_t decode_weight_bytes = 0;
  // With options.roofline: the best read bandwidth of this machine with the bench's threads
  // (bytes/s, summing a buffer far larger than the caches), and the decode roofline it gives,
  // read_bandwidth / decode_weight_bytes tokens/s. 0 when not measured.
  double read_bandwidth = 0.0;
  double roofline_ts() const {
    return decode_weight_bytes > 0 ? read_bandwidth / static_cast<double>(decode_weight_bytes)
                                   : 0.0;
  }
};

// The best of a few passes summing `bytes` of memory with the pool's threads, in bytes/s (STREAM
// reports its best pass too).
double measure_read_bandwidth(const kernels::KernelTable& table, kernels::ThreadPool& pool,
                              int64_t bytes);

Result<BenchReport> run_bench(const Model& model, const std::string& model_filename,
                              const BenchOptions& options);

// llama-bench's markdown table.
std::string bench_markdown(const BenchReport& report);
// A JSON array, one object per test, with llama-bench's field names.
std::string bench_json(const BenchReport& report);

// llama.cpp's name of a general.file_type value ("Q8_0", "Q4_K - Medium", "all F32", …).
std::string file_type_name(int64_t file_type);

}  // namespace minfer::engine
