// A persistent thread pool for data-parallel kernels. Workers live as long as the pool; a
// dispatch wakes them through an atomic generation counter (spinning briefly, then blocking in
// the kernel's futex wait), so a parallel_for costs microseconds, not a thread start. The
// calling thread takes part as thread 0.
//
// Work is split statically: thread i of n always gets the same contiguous range of tasks, and
// there is no cross-thread reduction, so a kernel whose output elements are each computed by
// one task gives bit-identical results at any thread count (DESIGN.md invariant 5).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <vector>

#include "core/non_copyable.h"
#include "core/status.h"

namespace minfer::kernels {

class ThreadPool : NonCopyable {
 public:
  // n_threads >= 1 counts the calling thread: ThreadPool(1) starts no worker. A worker that
  // cannot start ends the process with a message (MINFER_CHECK); programs call create().
  explicit ThreadPool(int n_threads);
  ~ThreadPool();

  // A pool of n_threads (0: default_thread_count()). Error: n_threads past max_thread_count(),
  // or a worker the system could not start (its limit on threads, or memory for the stack).
  static Result<std::unique_ptr<ThreadPool>> create(int n_threads);

  int n_threads() const { return n_threads_; }
  // How many jobs have woken the workers so far (a one-thread pool wakes none): each costs a
  // wake-up and a barrier, whatever its size. Read on the owner's thread.
  uint64_t n_dispatches() const { return n_dispatches_; }

  // Runs fn(thread_id, n_threads) once on every thread and returns when all have finished.
  // One dispatch at a time: call from one thread (the pool's owner), not from inside fn.
  template <typename Fn>
  void run(Fn&& fn) {
    auto call = [](void* ctx, int thread_id, int n) { (*static_cast<Fn*>(ctx))(thread_id, n); };
    dispatch(call, &fn);
  }

  // Splits tasks [0, n_tasks) into n_threads contiguous ranges (thread i gets
  // task_range(n_tasks, i, n_threads)) and runs fn(begin, end) for each non-empty one. A single
  // task runs on the calling thread without waking the workers (a decode step's one-row norms,
  // activations and conversions: a dispatch and its barrier cost more than the work).
  template <typename Fn>
  void parallel_for(int64_t n_tasks, Fn&& fn) {
    if (n_tasks <= 0) return;
    if (n_tasks == 1) {
      fn(int64_t{0}, int64_t{1});
      return;
    }
    run([&fn, n_tasks](int thread_id, int n) {
      const TaskRange range = task_range(n_tasks, thread_id, n);
      if (range.begin < range.end) fn(range.begin, range.end);
    });
  }

  struct TaskRange {
    int64_t begin;
    int64_t end;
  };
  // Thread i's share of n_tasks: the first n_tasks % n threads get one task more.
  static TaskRange task_range(int64_t n_tasks, int thread_id, int n_threads);

 private:
  using JobFn = void (*)(void* ctx, int thread_id, int n_threads);

  struct Unstarted {};
  ThreadPool(int n_threads, Unstarted);
  // Starts workers 1 .. n_threads - 1; on a failure, stops those started and says which failed.
  Status start_workers();
  void stop_workers();
  void dispatch(JobFn fn, void* ctx);
  void worker_main(int thread_id);

  int n_threads_;
  std::vector<std::thread> workers_;
  // The current job; written by the owner before generation_ is bumped (release), read by
  // workers after they see the new generation (acquire).
  JobFn job_fn_ = nullptr;
  void* job_ctx_ = nullptr;
  uint64_t n_dispatches_ = 0;  // owner's thread only
  alignas(64) std::atomic<uint64_t> generation_{0};
  alignas(64) std::atomic<int> pending_{0};  // workers still running the current job
  std::atomic<bool> stop_{false};
};

// The number of CPU cores this process may run on (at least 1): the default thread count.
int default_thread_count();
// The most threads a pool may have: limits::kMaxThreadsPerCore per core this process may run on.
int max_thread_count();

}  // namespace minfer::kernels
