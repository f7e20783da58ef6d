//===- ExitSignal.h - --exit-signal-handler's signal handler ----*- C++ -*-===//
//
// megatron-run's --exit-signal-handler, as Megatron-LM's: the signal (SIGTERM
// by default, a scheduler's notice before it kills a job) no longer ends the
// process; it is noted, and the training loop stops after the step under way
// once any rank has it, saving first. Installed as soon as the flags are
// read, so that a signal during setup (compiling kernels, loading a
// checkpoint) is noted too, and uninstalled with the session, so that a
// host process of the C API gets its own handler back.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_TRAIN_EXITSIGNAL_H
#define MTRT_TRAIN_EXITSIGNAL_H

#include "mtrt/Status.h"

#include <csignal>

namespace mtrt::train {

class ExitSignalHandler {
public:
  ExitSignalHandler() = default;
  ExitSignalHandler(const ExitSignalHandler &) = delete;
  ExitSignalHandler &operator=(const ExitSignalHandler &) = delete;
  /// Restores the handler `install` replaced.
  ~ExitSignalHandler();

  /// Notes `signal` from now on, forgetting one noted before (a previous
  /// session's).
  Status install(int signal);

  /// Whether the installed signal arrived since `install`.
  static bool received();

private:
  int signal = 0;
  struct sigaction previous = {};
};

} // namespace mtrt::train

#endif // MTRT_TRAIN_EXITSIGNAL_H
