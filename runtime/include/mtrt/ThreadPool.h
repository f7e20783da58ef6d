//===- ThreadPool.h - One pool for every parallel host kernel -*- C++ -*-===//
//
// The CPU backend's threads: generated kernels, GEMMs (split into row or
// column blocks, each a single-threaded BLAS call) and the attention,
// cross-entropy, norm and optimizer kernels all run on this one pool, so
// no second set of threads (OpenBLAS's own) spins for cores while ours
// compute. Workers sleep on a condition variable between jobs; the calling
// thread takes part in every job.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_THREADPOOL_H
#define MTRT_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace mtrt {

class ThreadPool {
public:
  /// A pool of `threads` threads in all, the caller included.
  explicit ThreadPool(int threads = 1);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  int threads() const { return int(workers.size()) + 1; }

  /// Calls `body(begin, end)` on disjoint ranges covering [0, n), as many
  /// as there are threads but no more than n / grain (rounded up), of equal
  /// length but the last; returns when all are done. Runs inline when one
  /// range covers it all, and when called from inside a job of this pool
  /// (a nested loop runs on its caller's thread). Calls from several
  /// threads at once take turns. An exception from `body` is rethrown here
  /// once every range has finished (the first one, if several throw).
  void parallelFor(int64_t n, int64_t grain,
                   const std::function<void(int64_t, int64_t)> &body);

  /// Calls `body(i)` for every i in [0, n), each thread taking the next
  /// index as it finishes one: for items of unequal cost (put the costliest
  /// first). Runs inline as parallelFor does; rethrows as it does.
  void forEach(int64_t n, const std::function<void(int64_t)> &body);

  /// The process's pool (sized by setThreads; 1 until then).
  static ThreadPool &global();
  /// Resizes the process's pool to `threads` threads.
  static void setThreads(int threads);

private:
  void workerLoop(int index);
  void runChunks();

  std::vector<std::thread> workers;
  std::mutex submit; // one job at a time
  std::mutex mutex;
  std::exception_ptr failure; // the job's first exception
  std::condition_variable wake, done;
  uint64_t generation = 0;
  bool stopping = false;
  int pending = 0;
  // The current job.
  const std::function<void(int64_t, int64_t)> *job = nullptr;
  int64_t jobSize = 0, chunkSize = 0, numChunks = 0;
  std::atomic<int64_t> nextChunk{0};
};

/// The cores this process may use (its affinity: a container's or a
/// launcher's binding) shared by the ranks the launcher put on its node
/// (Open MPI says how many), at least one: the default threads of a rank
/// and compilers of a kernel build.
int coresPerRank();

} // namespace mtrt

#endif // MTRT_THREADPOOL_H
