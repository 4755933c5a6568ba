#include "kernels/thread_pool.h"

#include <sched.h>

#include <system_error>

#include "core/check.h"
#include "core/input_limits.h"

namespace minfer::kernels {
namespace {

// How long a waiting thread polls before it blocks (2000 pauses: ~20-300 us, depending on the
// CPU's pause latency). Long enough to cover the gap between two
// consecutive kernels of a forward pass (a few microseconds), short enough not to steal much
// CPU from other processes when the pool is idle.
constexpr int kSpinIterations = 2000;

inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  __asm__ volatile("yield" ::: "memory");
#endif
}

}  // namespace

ThreadPool::ThreadPool(int n_threads) : n_threads_(n_threads) {
  MINFER_CHECK(n_threads >= 1, "ThreadPool needs at least one thread");
  const Status started = start_workers();
  MINFER_CHECK(started.is_ok(), started.message().c_str());
}

ThreadPool::ThreadPool(int n_threads, Unstarted) : n_threads_(n_threads) {}

Result<std::unique_ptr<ThreadPool>> ThreadPool::create(int n_threads) {
  if (n_threads == 0) n_threads = default_thread_count();
  if (n_threads < 1 || n_threads > max_thread_count()) {
    return make_error(ErrorCode::kInvalidArgument,
                      "[threads] {} threads asked for; this process may run on {} cores, and the "
                      "limit is 1 to {} ({} a core)",
                      n_threads, default_thread_count(), max_thread_count(),
                      limits::kMaxThreadsPerCore);
  }
  std::unique_ptr<ThreadPool> pool(new ThreadPool(n_threads, Unstarted{}));
  MINFER_RETURN_IF_ERROR(pool->start_workers());
  return pool;
}

Status ThreadPool::start_workers() {
  workers_.reserve(static_cast<size_t>(n_threads_ - 1));
  for (int i = 1; i < n_threads_; ++i) {
    try {
      workers_.emplace_back([this, i] { worker_main(i); });
    } catch (const std::system_error& e) {
      stop_workers();
      return make_error(ErrorCode::kResourceExhausted,
                        "[threads] could not start thread {} of {}: {} (the system's limit on "
                        "threads or memory)",
                        i + 1, n_threads_, e.what());
    }
  }
  return Status::ok();
}

void ThreadPool::stop_workers() {
  stop_.store(true, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  for (std::thread& t : workers_) t.join();
  workers_.clear();
}

ThreadPool::~ThreadPool() {
  stop_workers();
}

ThreadPool::TaskRange ThreadPool::task_range(int64_t n_tasks, int thread_id, int n_threads) {
  const int64_t base = n_tasks / n_threads;
  const int64_t extra = n_tasks % n_threads;
  const int64_t begin = thread_id * base + (thread_id < extra ? thread_id : extra);
  return {begin, begin + base + (thread_id < extra ? 1 : 0)};
}

void ThreadPool::dispatch(JobFn fn, void* ctx) {
  if (n_threads_ == 1) {
    fn(ctx, 0, 1);
    return;
  }
  ++n_dispatches_;
  job_fn_ = fn;
  job_ctx_ = ctx;
  pending_.store(n_threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  fn(ctx, 0, n_threads_);
  // Wait for the workers: spin, then block until the last one notifies.
  for (int i = 0; i < kSpinIterations; ++i) {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    cpu_relax();
  }
  for (int left = pending_.load(std::memory_order_acquire); left != 0;
       left = pending_.load(std::memory_order_acquire)) {
    pending_.wait(left, std::memory_order_acquire);
  }
}

void ThreadPool::worker_main(int thread_id) {
  uint64_t seen = 0;
  while (true) {
    uint64_t current = generation_.load(std::memory_order_acquire);
    for (int i = 0; i < kSpinIterations && current == seen; ++i) {
      cpu_relax();
      current = generation_.load(std::memory_order_acquire);
    }
    while (current == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      current = generation_.load(std::memory_order_acquire);
    }
    seen = current;
    if (stop_.load(std::memory_order_relaxed)) return;
    job_fn_(job_ctx_, thread_id, n_threads_);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

int max_thread_count() {
  return default_thread_count() * limits::kMaxThreadsPerCore;
}

int default_thread_count() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    const int n = CPU_COUNT(&set);
    if (n > 0) return n;
  }
  const unsigned n = std::thread::hardware_concurrency();
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace minfer::kernels
