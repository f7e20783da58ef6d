//===- Trainer.h - One rank's training run ----------------------*- C++ -*-===//
//
// Binds parameters (from safetensors or the model's initializers),
// optimizer state, data and hyperparameters to one rank's program through
// mtrt::Device, runs the steps with Megatron-LM's schedule, loss scaling
// and non-finite guards, and writes logs, traces and checkpoints. It
// reaches device memory only through the seam, so every backend trains
// alike. Used by megatron-run and the C API (mtrt/mtrt.h).
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_TRAIN_TRAINER_H
#define MTRT_TRAIN_TRAINER_H

#include "train/TrainOptions.h"

#include "mtrt/Artifact.h"
#include "mtrt/Communicator.h"
#include "mtrt/Launcher.h"

#include <memory>
#include <utility>
#include <vector>

namespace mtrt::train {

class Trainer {
public:
  /// `launcher`: the ranks of the run; `grid`: the collectives of its
  /// device grid, which the backend runs.
  Trainer(const Options &options, const Artifact &artifact,
          const Launcher &launcher, const Communicator &grid,
          const Checkpoint &checkpoint);
  ~Trainer();
  Trainer(const Trainer &) = delete;
  Trainer &operator=(const Trainer &) = delete;

  /// Creates the device (--device), prepares the program and binds
  /// parameters, state and data.
  Status setup();
  /// Runs the steps --steps asks for (after --load's iteration).
  Status train();
  /// Whether the error train() returned reached every rank at the same
  /// step (a non-finite loss, gradient norm or update: values all ranks
  /// share or agreed on), so no rank waits in a collective and each can
  /// report it and exit instead of aborting the others mid-message.
  bool failedOnEveryRank() const;
  /// --profile: rank 0's time per kernel.
  void printProfile() const;
  /// --trace FILE.
  Status writeTrace();
  /// --save-params FILE.
  Status save();

  /// The backend's choices for this rank's program (Device::choices), each
  /// as "<backend>: <choice>".
  std::vector<std::string> deviceChoices() const;
  /// "startup: ..." after setup(): the seconds its device preparation
  /// (compiling the generated kernels among it), parameters and data took.
  std::string startupLine() const;

  int64_t batchSize() const;
  int64_t seqLen() const;
  int64_t vocabSize() const;
  /// The loss of every step trained so far, in order.
  const std::vector<double> &losses() const;
  /// Every validation evaluation so far: the iteration it followed and its
  /// loss, in order.
  const std::vector<std::pair<int64_t, double>> &evaluations() const;

private:
  class Impl;
  std::unique_ptr<Impl> impl;
};

/// The memory plan of one program, as megatron-run prints it.
void printPlan(const RankProgram &program);

} // namespace mtrt::train

#endif // MTRT_TRAIN_TRAINER_H
