//===- Run.h - megatron-run: a run from its command line --------*- C++ -*-===//

#ifndef MTRT_TRAIN_RUN_H
#define MTRT_TRAIN_RUN_H

#include "train/ExitSignal.h"
#include "train/Trainer.h"

#include "mtrt/Artifact.h"
#include "mtrt/Communicator.h"
#include "mtrt/Launcher.h"

#include <memory>
#include <string>

namespace mtrt::train {

/// One process's run: its ranks, flags, artifact, checkpoint and trainer.
struct Session {
  /// The process's ranks (mtrt/Launcher.h; it outlives every session) and
  /// the collectives of this run's device grid.
  Launcher *launcher = nullptr;
  std::unique_ptr<Communicator> grid;
  Options options;
  Artifact artifact;
  Checkpoint checkpoint;
  std::unique_ptr<Trainer> trainer;
  /// --exit-signal-handler's, from the flags' reading to the session's end.
  std::unique_ptr<ExitSignalHandler> exitSignal;
  /// Rank 0: reports errors every rank sees alike, and the header.
  bool speak = false;
  /// --memory-report: the plan was reported; there is nothing to train.
  bool reportOnly = false;
  /// --help: the usage is asked for (usageText()); nothing was opened.
  bool helpOnly = false;
};

/// Everything before the first step: 0, or the exit code after an error
/// (printed as megatron-run prints it, and kept for lastErrorText()).
int openSession(int argc, char **argv, Session &session);
/// Trains, then profiles, traces and saves as the flags ask: 0 or the exit
/// code.
int runSession(Session &session);
/// megatron-run's main.
int runMegatron(int argc, char **argv);
/// The message of the last error this process reported.
std::string &lastErrorText();

} // namespace mtrt::train

#endif // MTRT_TRAIN_RUN_H
