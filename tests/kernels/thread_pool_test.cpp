#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

#include <pthread.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "core/input_limits.h"
#include "kernels/thread_pool.h"
#include "test_util.h"

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

TEST(ThreadPool, CreateRefusesMoreThreadsThanTheLimitAndDefaultsToTheCores) {
  auto fine = ThreadPool::create(0);
  ASSERT_TRUE(fine.is_ok()) << fine.status().message();
  EXPECT_EQ((*fine)->n_threads(), default_thread_count());
  EXPECT_TRUE(ThreadPool::create(max_thread_count()).is_ok());
  for (const int n : {max_thread_count() + 1, 100000, -1}) {
    auto r = ThreadPool::create(n);
    ASSERT_FALSE(r.is_ok());
    EXPECT_EQ(
        r.status().message(),
        fmt::format("[threads] {} threads asked for; this process may run on {} cores, and "
                    "the limit is 1 to {} ({} a core)",
                    n, default_thread_count(), max_thread_count(), limits::kMaxThreadsPerCore));
  }
}

// A worker the system cannot start (no address space left for its stack): create() says which,
// having joined the workers it started, and the process goes on. In a child process whose
// address space is capped just above what it uses.
TEST(ThreadPool, CreateReportsAThreadTheSystemCannotStart) {
#if defined(MINFER_TEST_ASAN)
  GTEST_SKIP() << "ASan reserves terabytes of address space: RLIMIT_AS cannot be capped";
#endif
  if (std::getenv("MINFER_TEST_EMULATED") != nullptr) {
    GTEST_SKIP() << "qemu-user reserves the guest's address space: RLIMIT_AS cannot be capped";
  }
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    long pages = 0;
    std::FILE* statm = std::fopen("/proc/self/statm", "r");
    if (statm == nullptr || std::fscanf(statm, "%ld", &pages) != 1) _exit(2);
    std::fclose(statm);
    const rlim_t cap =
        static_cast<rlim_t>(pages) * static_cast<rlim_t>(sysconf(_SC_PAGESIZE)) + (rlim_t{2} << 20);
    const rlimit limit{cap, cap};
    if (setrlimit(RLIMIT_AS, &limit) != 0) _exit(3);
    // Threads get stacks larger than those glibc keeps from earlier tests' pools (it reuses a
    // cached stack without asking for memory).
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, size_t{64} << 20);
    if (pthread_setattr_default_np(&attr) != 0) _exit(5);
    auto pool = ThreadPool::create(std::max(2, max_thread_count()));
    const bool named =
        !pool.is_ok() && pool.status().message().find("[threads] could not start thread 2 of") == 0;
    _exit(named ? 0 : 4);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child did not exit: status " << status;
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace minfer::kernels
