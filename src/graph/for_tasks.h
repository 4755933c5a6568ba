// Splitting an op's independent tasks over the pool when there is enough work (the executor's
// elementwise ops, the delta net's ops).
#pragma once

#include <cstdint>

#include "kernels/thread_pool.h"

namespace minfer {

// Below this many output floats an op runs on the calling thread: waking the pool and waiting
// at its barrier costs more than the work (a few µs on a quiet machine, a scheduler time slice
// when the cores are shared). A decode step's per-head q/k norms (Qwen3: 16 + 8 heads of 128)
// stay on the calling thread; a prefill's rows are split over the pool.
inline constexpr int64_t kMinParallelFloats = 16384;

// fn(begin, end) over tasks [0, n_tasks) of floats_per_task outputs each: split over the pool
// when there is enough work, else in one call. Every task computes its own outputs, so the
// result is the same either way.
template <typename Fn>
void for_tasks(kernels::ThreadPool& pool, int64_t n_tasks, int64_t floats_per_task, Fn&& fn) {
  if (n_tasks * floats_per_task < kMinParallelFloats) {
    if (n_tasks > 0) fn(int64_t{0}, n_tasks);
    return;
  }
  pool.parallel_for(n_tasks, fn);
}

}  // namespace minfer
