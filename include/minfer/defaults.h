// What minfer runs with unless told otherwise, stated once: the public options (minfer.h), the
// engine's (RuntimeOptions, SchedulerOptions), the KV cache and the CLI's flags and help all
// refer to these. (Per-request sampling defaults are llama.cpp's: sampling/sampler_params.h.)
#pragma once

#include <cstdint>

namespace minfer {

// KV positions per block: the prefix cache shares whole blocks, and attention reads a block's
// positions per call (larger blocks: fewer calls at depth, coarser prefix sharing).
inline constexpr int64_t kDefaultBlockSize = 32;
// Sequences a batch generator (the server's -np) runs at once.
inline constexpr int kDefaultParallel = 4;
// The most tokens one batched step computes (prompt chunks and decode tokens together).
inline constexpr int64_t kDefaultTokenBudget = 512;
// The most prompt tokens one forward of a single sequence computes (run's and chat's -b).
inline constexpr int64_t kDefaultBatch = 2048;
// Requests that may wait beyond the running ones before new ones are refused.
inline constexpr int64_t kDefaultMaxQueue = 64;
// Perplexity's tokens per chunk (llama-perplexity's -c).
inline constexpr int64_t kDefaultPerplexityContext = 512;
// Bench's tokens per prompt forward and timed runs per test (llama-bench's -b and -r).
inline constexpr int64_t kDefaultBenchBatch = 512;
inline constexpr int kDefaultBenchRepetitions = 3;
// The KV cell type when neither a flag nor MINFER_CACHE_TYPE names one (llama.cpp's f16).
inline constexpr const char* kDefaultCacheType = "f16";

}  // namespace minfer
