// Throughput of a model, measured as llama-bench does (tools/llama-bench):
//  * pp<N> ("prompt processing"): N random valid token ids prefilled from an empty cache in
//    forwards of n_batch tokens (only the last row's logits computed); t/s = N / time.
//  * tg<N> ("text generation"): N tokens decoded one forward at a time from an empty cache,
//    each fed the argmax of the previous logits; t/s = N / time.
//  * "… @ d<D>" (llama-bench's -d): the test runs after D random tokens already in the cache (at
//    positions 0..D-1, prefilled untimed; the test's tokens follow at positions D, D+1, …).
// Each test runs once unmeasured (warm-up: graphs built, caches warm), then `repetitions`
// times, each from a cache holding only its depth; the report gives mean ± sample standard
// deviation of the per-repetition t/s.
//
// A grid (llama-bench's comma lists for -p, -n, -d, -t) runs every combination once, in
// llama-bench's order (bench_cases).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "core/progress.h"
#include "core/status.h"
#include "engine/roofline.h"
#include "engine/runtime.h"
#include "models/model.h"

namespace minfer::engine {

// Speculative decoding (engine/speculative.h) measured beside plain decoding: for each tg test,
// greedy generation of n_gen tokens after `prompt` (end-of-generation banned, as llama-bench
// generates past it), plain and speculative — rows "tg<N> plain" and "tg<N> ngram<K>" or
// "tg<N> draft" with the decode tokens/s (tokens after the first / the time from the first to
// the last) and the acceptance rate (accepted / drafted).
struct BenchSpeculative {
  int ngram = 0;                 // prompt lookup of this many tokens; 0: none
  const Model* draft = nullptr;  // a draft model of the same vocabulary (not owned); null: none
  int draft_max = 16;
  // The prompt's text (tokenized as `run` does: BOS as the model adds it, special tokens not
  // parsed); empty: kSpecPatternLength random ids (BenchOptions::seed) repeated to
  // kSpecPromptLength tokens, a text that repeats, which real models continue (lookup can hit).
  std::string prompt_text;
  bool enabled() const { return ngram > 0 || draft != nullptr; }
};
inline constexpr int64_t kSpecPatternLength = 32;
inline constexpr int64_t kSpecPromptLength = 256;

// The runtime's options (its n_ctx is set to fit the tests) and the tests to run.
struct BenchOptions : RuntimeOptions {
  int64_t n_prompt = 512;  // 0: no pp test
  int64_t n_gen = 128;     // 0: no tg test
  int64_t n_depth = 0;     // tokens already in the cache when each test begins
  int64_t n_batch = kDefaultBenchBatch;
  int repetitions = kDefaultBenchRepetitions;
  uint64_t seed = 42;  // for the random prompt ids
  ProgressStyle progress = ProgressStyle::kAuto;
  // Also measure the machine's read bandwidth and report the decode roofline (BenchReport),
  // over a buffer of roofline_bytes (far larger than the caches).
  bool roofline = false;
  int64_t roofline_bytes = int64_t{512} << 20;
  // Run each thread count's tests in rounds (bench_run_order): every warm-up, then the first
  // timed run of each test, then the second, ...: a machine whose speed drifts (a VM's) slows
  // every test alike, so their ratios (tg at depth 4096 ÷ tg at depth 0) hold. Off: llama-bench's
  // order, each test's runs together.
  bool interleave = false;
  BenchSpeculative speculative;  // off unless enabled()
};

// llama-bench's lists: every combination is one test run (bench_cases). The single-run fields of
// BenchOptions (n_prompt, n_gen, n_depth, n_threads) are ignored when a grid is given.
struct BenchGrid {
  std::vector<int64_t> n_prompt = {512};  // 0: no pp test
  std::vector<int64_t> n_gen = {128};     // 0: no tg test
  std::vector<int64_t> n_depth = {0};
  std::vector<int> n_threads = {0};  // ≤ 0: kernels::default_thread_count()
};

// One test of a grid: a pp test (n_gen 0) or a tg test (n_prompt 0).
struct BenchCase {
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  int64_t n_depth = 0;
  int n_threads = 0;
};

// The grid's tests in llama-bench's order: for each thread count, for each depth, the pp tests
// (in -p's order, 0 skipped) then the tg tests (in -n's order, 0 skipped).
std::vector<BenchCase> bench_cases(const BenchGrid& grid);

// One run of a bench: test `test` (an index into one thread count's tests), round `round` (0: its
// warm-up, 1..repetitions: the timed runs).
struct BenchRun {
  size_t test;
  int round;
  bool operator==(const BenchRun&) const = default;
};

// The order of one thread count's runs: each test's warm-up and repetitions together, or with
// `interleave` round by round (every test's round 0, then every test's round 1, ...).
std::vector<BenchRun> bench_run_order(size_t n_tests, int repetitions, bool interleave);

// A comma list of integers, as llama-bench's -p/-n/-d/-t take them ("128,512" → {128, 512}).
// Error, naming `flag` and the item: an empty list or item ("1,,2"), a non-number, a value
// below `min`.
Result<std::vector<int64_t>> parse_bench_list(std::string_view text, std::string_view flag,
                                              int64_t min);

// llama-bench's test name: "pp512", "tg128", with " @ d4096" when n_depth > 0.
std::string bench_test_name(int64_t n_prompt, int64_t n_gen, int64_t n_depth);

// The random token ids of a bench (seeded, so every run and a test can draw the same ones): the
// pp prompt (a test of n takes the first n), the first token fed to tg, and the depth tokens
// (a depth of d takes the first d).
struct BenchTokens {
  std::vector<int32_t> prompt;  // [n_prompt]
  int32_t first_gen = 0;
  std::vector<int32_t> depth;  // [n_depth]
};
BenchTokens bench_tokens(uint64_t seed, int64_t n_vocab, int64_t n_prompt, int64_t n_depth);

struct BenchTest {
  std::string name;  // "pp512", "tg128", "pp512 @ d4096"
  int64_t n_prompt = 0;
  int64_t n_gen = 0;
  int64_t n_depth = 0;
  int n_threads = 0;
  std::vector<int32_t> tokens;  // tg: the tokens the last run generated; pp: empty
  // With options.roofline: this thread count's read bandwidth (bytes/s), and its hot one-token
  // matmul rates (engine/roofline.h), each the better of a measurement before and after the
  // thread count's tests; else 0 and empty.
  double read_bandwidth = 0.0;
  HotRoofline hot;
  // tg: the bytes of KV cells one of its decode steps reads, on average over its tokens
  // (KvCache::seen_bytes of positions n_depth + 1 .. n_depth + n_gen); pp: 0.
  double kv_bytes_per_token = 0.0;
  // With options.roofline, for a tg test: the hot roofline (hot.ts) with each step's KV cells
  // read at the bandwidth too, tokens/s.
  double cells_roofline_ts() const;
  std::vector<double> samples_ns;  // [repetitions] wall time of each run
  std::vector<double> samples_ts;  // [repetitions] tokens per second of each run
  double avg_ns = 0.0, stddev_ns = 0.0;
  double avg_ts = 0.0, stddev_ts = 0.0;
  // BenchSpeculative rows: "plain", "ngram<K>" or "draft" ("" for the other tests), and the
  // drafts of the timed runs.
  std::string speculative;
  int64_t n_drafted = 0;
  int64_t n_accepted = 0;
  double acceptance() const {
    return n_drafted > 0 ? static_cast<double>(n_accepted) / static_cast<double>(n_drafted) : 0.0;
  }
};

struct BenchReport {
  std::string model_filename;
  std::string model_type;       // "qwen2 0.5B Q8_0", as llama.cpp's llama_model_desc
  uint64_t model_size = 0;      // tensor bytes
  uint64_t model_n_params = 0;  // tensor elements
  int n_threads = 0;            // of the first test
  int64_t n_batch = 0;
  std::string cache_type;
  std::string isa;
  std::vector<BenchTest> tests;
  std::string profile;  // the per-op profile table when options.observe.profile, else ""
  // Bytes of weights one decode step reads (weight_bytes_read of the one-token graph: an MoE
  // layer counts only the experts a token uses).
  uint64_t decode_weight_bytes = 0;
  // With options.roofline: the best read bandwidth of this machine with the first test's threads
  // (bytes/s, summing a buffer far larger than the caches), and the decode roofline it gives,
  // read_bandwidth / decode_weight_bytes tokens/s. 0 when not measured. (Each test carries the
  // bandwidth of its own thread count.)
  double read_bandwidth = 0.0;
  double roofline_ts() const { return roofline_ts(read_bandwidth); }
  double roofline_ts(double bandwidth) const {
    return decode_weight_bytes > 0 ? bandwidth / static_cast<double>(decode_weight_bytes) : 0.0;
  }
};

// The best of a few passes summing `bytes` of memory with the pool's threads, in bytes/s (STREAM
// reports its best pass too), each pass read both with plain and with the widest loads
// (kernels/read_rate.h), the same whatever kernel table runs: the memory's rate, not a kernel's.
double measure_read_bandwidth(kernels::ThreadPool& pool, int64_t bytes);

// The one test set of options.n_prompt / n_gen / n_depth / n_threads.
Result<BenchReport> run_bench(const Model& model, const std::string& model_filename,
                              const BenchOptions& options);
// Every test of the grid (bench_cases), one runtime per thread count, its context sized to the
// deepest test (depth + its tokens). Errors: a bad option or list value; --trace or a dump
// directory with more than one thread count (each runtime would overwrite the other's file).
Result<BenchReport> run_bench(const Model& model, const std::string& model_filename,
                              const BenchOptions& options, const BenchGrid& grid);

// The BenchSpeculative rows of one tg case: plain, then speculative, each a warm-up and
// options.repetitions timed runs of a session of its own (n_threads threads). Errors: a draft
// model of another vocabulary size, a model with sliding-window layers.
Result<std::vector<BenchTest>> run_speculative_bench(const Model& model,
                                                     const BenchOptions& options, int64_t n_gen,
                                                     int n_threads);

// llama-bench's markdown table.
std::string bench_markdown(const BenchReport& report);
// A JSON array, one object per test, with llama-bench's field names.
std::string bench_json(const BenchReport& report);

// llama.cpp's name of a general.file_type value ("Q8_0", "Q4_K - Medium", "all F32", …).
std::string file_type_name(int64_t file_type);

}  // namespace minfer::engine
