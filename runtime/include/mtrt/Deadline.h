//===- Deadline.h - A deadline for an uninterruptible wait ----*- C++ -*-===//
//
// Some waits for other ranks happen inside a library call that takes no
// deadline and cannot be interrupted: joining an NCCL communicator
// (ncclCommInitRank waits for every member of the group). A Deadline runs
// a function on a thread of its own if it is not destroyed in time; for
// such a wait that function says what did not finish and ends the process
// (under mpirun, the launcher then ends the other ranks), which is what
// the run's --distributed-timeout-minutes promises for every other wait.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_DEADLINE_H
#define MTRT_DEADLINE_H

#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

namespace mtrt {

/// What every wait for other ranks says when it gives up after the run's
/// deadline of `seconds`: "no answer within 600 s
/// (--distributed-timeout-minutes)".
inline std::string noAnswerWithin(double seconds) {
  char text[96];
  std::snprintf(text, sizeof(text),
                "no answer within %g s (--distributed-timeout-minutes)",
                seconds);
  return text;
}

class Deadline {
public:
  /// Calls `expire` (on another thread) unless destroyed within `seconds`;
  /// 0 or less: never.
  Deadline(double seconds, std::function<void()> expire) {
    if (seconds <= 0)
      return;
    watcher = std::thread([this, seconds, expire = std::move(expire)] {
      std::unique_lock<std::mutex> lock(mutex);
      if (!met.wait_for(lock, std::chrono::duration<double>(seconds),
                        [this] { return done; }))
        expire();
    });
  }
  ~Deadline() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      done = true;
    }
    met.notify_all();
    if (watcher.joinable())
      watcher.join();
  }
  Deadline(const Deadline &) = delete;
  Deadline &operator=(const Deadline &) = delete;

private:
  std::mutex mutex;
  std::condition_variable met;
  bool done = false;
  std::thread watcher;
};

} // namespace mtrt

#endif // MTRT_DEADLINE_H
