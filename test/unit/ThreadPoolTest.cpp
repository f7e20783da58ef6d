//===- ThreadPoolTest.cpp - The CPU backend's thread pool -----------------===//
//
// mtrt::ThreadPool: ranges cover [0, n) once, a nested loop runs inline
// instead of deadlocking, an exception reaches the caller and leaves the
// pool usable, and callers on several threads take turns.
//
//===----------------------------------------------------------------------===//

#include "mtrt/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

using namespace mtrt;

namespace {

TEST(ThreadPool, RangesCoverEveryIndexOnce) {
  for (int threads : {1, 2, 3, 8}) {
    ThreadPool pool(threads);
    for (int64_t n : {1, 2, 7, 64, 1000, 1001})
      for (int64_t grain : {1, 3, 64, 5000}) {
        std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
        std::atomic<int64_t> ranges{0};
        pool.parallelFor(n, grain, [&](int64_t begin, int64_t end) {
          ASSERT_LT(begin, end);
          ++ranges;
          for (int64_t i = begin; i < end; ++i)
            ++hits[static_cast<size_t>(i)];
        });
        for (int64_t i = 0; i < n; ++i)
          ASSERT_EQ(hits[static_cast<size_t>(i)], 1)
              << "threads " << threads << " n " << n << " grain " << grain;
        EXPECT_LE(ranges, std::min<int64_t>(threads, (n + grain - 1) / grain));
      }
  }
}

TEST(ThreadPool, NestedLoopRunsInline) {
  ThreadPool pool(4);
  std::atomic<int64_t> sum{0};
  pool.parallelFor(8, 1, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i)
      pool.parallelFor(100, 1, [&](int64_t b, int64_t e) {
        for (int64_t j = b; j < e; ++j)
          sum += j;
      });
  });
  EXPECT_EQ(sum, 8 * 4950);
}

TEST(ThreadPool, ExceptionReachesTheCaller) {
  ThreadPool pool(3);
  EXPECT_THROW(pool.parallelFor(300, 1,
                                [&](int64_t begin, int64_t) {
                                  if (begin == 0)
                                    throw std::runtime_error("range 0");
                                }),
               std::runtime_error);
  // The pool still runs jobs, and the old exception is gone.
  std::atomic<int64_t> count{0};
  pool.parallelFor(300, 1,
                   [&](int64_t begin, int64_t end) { count += end - begin; });
  EXPECT_EQ(count, 300);
}

TEST(ThreadPool, CallersOnSeveralThreadsTakeTurns) {
  ThreadPool pool(3);
  std::atomic<int64_t> total{0};
  std::vector<std::thread> callers;
  for (int c = 0; c < 4; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round)
        pool.parallelFor(1000, 10, [&](int64_t begin, int64_t end) {
          total += end - begin;
        });
    });
  for (std::thread &caller : callers)
    caller.join();
  EXPECT_EQ(total, 4 * 50 * 1000);
}

TEST(ThreadPool, ForEachRunsEveryItemOnceAndBalances) {
  ThreadPool pool(4);
  std::vector<std::atomic<int>> seen(37);
  pool.forEach(37, [&](int64_t i) { ++seen[size_t(i)]; });
  for (const std::atomic<int> &count : seen)
    EXPECT_EQ(count, 1);
  // The first item waits until the other 39 are done: the other threads
  // take them meanwhile. With a range of items per thread, the first
  // item's thread would own 9 of them and wait out the 10 s.
  std::mutex mutex;
  std::condition_variable othersDone;
  int others = 0;
  bool waitedOut = false;
  pool.forEach(40, [&](int64_t i) {
    std::unique_lock<std::mutex> lock(mutex);
    if (i == 0)
      waitedOut = !othersDone.wait_for(lock, std::chrono::seconds(10),
                                       [&] { return others == 39; });
    else if (++others == 39)
      othersDone.notify_all();
  });
  EXPECT_FALSE(waitedOut);
  pool.forEach(0, [](int64_t) { FAIL() << "no items"; });
  EXPECT_THROW(pool.forEach(5,
                            [](int64_t i) {
                              if (i == 3)
                                throw std::runtime_error("item 3");
                            }),
               std::runtime_error);
}

} // namespace
