#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "kernels/thread_pool.h"

namespace minfer::kernels {
namespace {

TEST(ThreadPool, TaskRangesCoverEveryTaskOnceInOrder) {
  for (int n_threads : {1, 2, 3, 7}) {
    for (int64_t n_tasks : {int64_t{0}, int64_t{1}, int64_t{5}, int64_t{64}, int64_t{1001}}) {
      int64_t next = 0;
      for (int i = 0; i < n_threads; ++i) {
        const ThreadPool::TaskRange r = ThreadPool::task_range(n_tasks, i, n_threads);
        EXPECT_EQ(r.begin, next);
        EXPECT_GE(r.end, r.begin);
        // Shares differ by at most one task.
        EXPECT_LE(r.end - r.begin, n_tasks / n_threads + 1);
        next = r.end;
      }
      EXPECT_EQ(next, n_tasks);
    }
  }
}

TEST(ThreadPool, RunCallsEveryThreadOnceWithItsId) {
  for (int n_threads : {1, 2, 3}) {
    ThreadPool pool(n_threads);
    EXPECT_EQ(pool.n_threads(), n_threads);
    for (int rep = 0; rep < 100; ++rep) {
      std::vector<std::atomic<int>> calls(n_threads);
      pool.run([&](int thread_id, int n) {
        EXPECT_EQ(n, n_threads);
        calls[thread_id].fetch_add(1);
      });
      for (int i = 0; i < n_threads; ++i) EXPECT_EQ(calls[i].load(), 1);
    }
  }
}

TEST(ThreadPool, CallerTakesPartAsThreadZero) {
  ThreadPool pool(3);
  std::thread::id seen;
  pool.run([&](int thread_id, int) {
    if (thread_id == 0) seen = std::this_thread::get_id();
  });
  EXPECT_EQ(seen, std::this_thread::get_id());
}

TEST(ThreadPool, ParallelForWritesEachElementOnce) {
  ThreadPool pool(3);
  for (int rep = 0; rep < 50; ++rep) {
    const int64_t n = 1 + rep * 37;
    std::vector<int> hits(n, 0);
    pool.parallel_for(n, [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i) hits[i] += 1;
    });
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(hits[i], 1) << "n=" << n << " i=" << i;
  }
}

TEST(ThreadPool, CountsTheJobsThatWakeTheWorkers) {
  ThreadPool pool(2);
  EXPECT_EQ(pool.n_dispatches(), 0u);
  pool.run([](int, int) {});
  pool.parallel_for(5, [](int64_t, int64_t) {});
  EXPECT_EQ(pool.n_dispatches(), 2u);
  // One task runs on the caller, and a one-thread pool never wakes anyone.
  pool.parallel_for(1, [](int64_t, int64_t) {});
  EXPECT_EQ(pool.n_dispatches(), 2u);
  ThreadPool alone(1);
  alone.run([](int, int) {});
  alone.parallel_for(5, [](int64_t, int64_t) {});
  EXPECT_EQ(alone.n_dispatches(), 0u);
}

TEST(ThreadPool, SurvivesIdlePeriodsBetweenDispatches) {
  // Workers fall back from spinning to blocking; a later dispatch must still wake them.
  ThreadPool pool(2);
  std::atomic<int> total{0};
  for (int rep = 0; rep < 3; ++rep) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    pool.run([&](int, int) { total.fetch_add(1); });
  }
  EXPECT_EQ(total.load(), 6);
}

}  // namespace
}  // namespace minfer::kernels
