//===- ThreadPool.cpp - One pool for every parallel host kernel -----------===//

#include "mtrt/ThreadPool.h"

#include <cstdlib>

#include <sched.h>

#include <algorithm>
#include <memory>
#include <utility>

using namespace mtrt;

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < std::max(threads, 1); ++i)
    workers.emplace_back([this, i] { workerLoop(i); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  wake.notify_all();
  for (std::thread &worker : workers)
    worker.join();
}

namespace {
/// The pool whose job this thread is running, if any: a parallelFor from
/// inside a job runs inline rather than wait for threads that are busy
/// running the very job that waits.
thread_local const ThreadPool *runningPool = nullptr;
} // namespace

void ThreadPool::runChunks() {
  const ThreadPool *outer = runningPool;
  runningPool = this;
  for (int64_t chunk = nextChunk++; chunk < numChunks; chunk = nextChunk++) {
    int64_t begin = chunk * chunkSize;
    try {
      (*job)(begin, std::min(jobSize, begin + chunkSize));
    } catch (...) {
      std::lock_guard<std::mutex> lock(mutex);
      if (!failure)
        failure = std::current_exception();
    }
  }
  runningPool = outer;
}

void ThreadPool::workerLoop(int) {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mutex);
      wake.wait(lock, [&] { return stopping || generation != seen; });
      if (stopping)
        return;
      seen = generation;
    }
    runChunks();
    std::lock_guard<std::mutex> lock(mutex);
    if (--pending == 0)
      done.notify_one();
  }
}

void ThreadPool::parallelFor(
    int64_t n, int64_t grain,
    const std::function<void(int64_t, int64_t)> &body) {
  if (n <= 0)
    return;
  grain = std::max<int64_t>(grain, 1);
  int64_t chunks = std::min<int64_t>(threads(), (n + grain - 1) / grain);
  if (chunks <= 1 || runningPool) {
    body(0, n);
    return;
  }
  std::lock_guard<std::mutex> turn(submit);
  {
    std::lock_guard<std::mutex> lock(mutex);
    job = &body;
    jobSize = n;
    chunkSize = (n + chunks - 1) / chunks;
    numChunks = (n + chunkSize - 1) / chunkSize;
    nextChunk = 0;
    pending = int(workers.size());
    ++generation;
  }
  wake.notify_all();
  runChunks();
  std::unique_lock<std::mutex> lock(mutex);
  done.wait(lock, [&] { return pending == 0; });
  job = nullptr;
  if (std::exception_ptr thrown = std::exchange(failure, nullptr))
    std::rethrow_exception(thrown);
}

void ThreadPool::forEach(int64_t n, const std::function<void(int64_t)> &body) {
  std::atomic<int64_t> next{0};
  // One range per thread, each taking indices until none is left.
  parallelFor(std::min<int64_t>(n, threads()), 1, [&](int64_t, int64_t) {
    for (int64_t i; (i = next.fetch_add(1)) < n;)
      body(i);
  });
}

int mtrt::coresPerRank() {
  int cores = int(std::thread::hardware_concurrency());
  cpu_set_t allowed;
  if (sched_getaffinity(0, sizeof(allowed), &allowed) == 0)
    cores = CPU_COUNT(&allowed);
  int ranks = 1;
  if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"))
    ranks = std::max(1, std::atoi(local));
  return std::max(1, cores / ranks);
}

namespace {
std::unique_ptr<ThreadPool> &globalPool() {
  static std::unique_ptr<ThreadPool> pool = std::make_unique<ThreadPool>(1);
  return pool;
}
} // namespace

ThreadPool &ThreadPool::global() { return *globalPool(); }

void ThreadPool::setThreads(int threads) {
  if (globalPool()->threads() != std::max(threads, 1))
    globalPool() = std::make_unique<ThreadPool>(threads);
}
