//===- TrainOptions.h - What a training run is asked to do ------*- C++ -*-===//
//
// megatron-run's flags (Megatron-LM's names where it has one), parsed into
// Options, and the checkpoint a run resumes from. Shared by the tool and
// the C API (mtrt/mtrt.h), which take the same command line.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_TRAIN_TRAINOPTIONS_H
#define MTRT_TRAIN_TRAINOPTIONS_H

#include "mtrt/CheckpointShards.h"
#include "mtrt/LossScaler.h"
#include "mtrt/Status.h"
#include "mtrt/Strings.h"
#include "train/CheckpointDirectory.h"

#include <chrono>
#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mtrt::train {

struct Options {
  std::string artifact;
  int64_t steps = 10;
  std::string data;
  int64_t seed = 1234;
  double lr = 6e-4;
  double minLr = 0.0;
  int64_t warmupIters = 0;
  int64_t decayIters = 0; // 0: the number of steps
  std::string decayStyle = "linear";
  double weightDecay = 0.01;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double clipGrad = 1.0;
  std::string loadParams;
  std::string saveParams;
  std::string log;
  std::string trace;
  /// --profile: print the time per kernel, with GFLOP/s and GB/s.
  bool profile = false;
  /// --tf32: the CUDA backend's fp32 GEMMs may round their inputs to TF32.
  bool tf32 = false;
  /// --peak-tflops: the dense peak per device that MFU divides by (NaN,
  /// not given: the data sheet of the device's GPU, where the runtime
  /// knows it).
  double peakTflops = std::numeric_limits<double>::quiet_NaN();
  /// --threads: threads per rank (-1: the cores over the ranks on the node).
  int64_t threads = -1;
  /// --device: the backend ("": the default, mtrt::defaultBackend()).
  std::string device;
  int64_t corpusVocab = 64;
  /// Whether --corpus-vocab was given: the default is capped at the
  /// model's vocabulary, a value given must fit in it.
  bool corpusVocabGiven = false;
  /// Whether --seed was given: a resumed run takes its checkpoint's, which
  /// a different --seed must not be mistaken for.
  bool seedGiven = false;
  int64_t corpusOrder = 1;
  bool quiet = false;
  /// --help or -h: the usage is asked for, nothing else.
  bool help = false;
  /// --memory-report (and its files): report the plan, do not train.
  bool memoryReport = false;
  std::string memoryReportJson, memoryReportSvg;
  /// --no-strict-load: ignore checkpoint tensors the model lacks and
  /// initialize the ones the checkpoint lacks.
  bool nonStrictLoad = false;
  /// Megatron-LM's --distributed-timeout-minutes: how long a rank waits for
  /// its peers in any collective or transfer before it gives up.
  double timeoutMinutes = 10.0;
  /// Test hook (MEGATRON_RUN_TEST_STALL): stop answering before this step.
  int64_t stallAtStep = 0;
  /// Test hook: this rank dies (SIGKILL) before that step.
  int64_t dieAtStep = 0;
  /// Test hook (MEGATRON_RUN_TEST_SIGNAL): this rank raises --exit-signal
  /// before that step, as a scheduler's preemption notice would; at 0,
  /// during setup (-1: never).
  int64_t signalAtStep = -1;
  /// Megatron-LM's --log-interval: steps per console line (--log keeps
  /// every step).
  int64_t logInterval = 1;
  /// Megatron-LM's evaluation: after every step --eval-interval divides
  /// (0: never) and after the last, the mean loss of --eval-iters global
  /// batches of validation data, forward only with dropout off (the
  /// artifact's evaluation slice, mtrt/EvaluationSlice.h): from
  /// --valid-data-path, or a held-out stream of the synthetic corpus.
  int64_t evalInterval = 0;
  int64_t evalIters = 100;
  std::string validData;
  /// --test-data-path: the test tokens, evaluated after the last step.
  std::string testData;
  /// Megatron-LM's --split "train,valid,test" weights (empty: not given):
  /// --data-path's samples divided in order, training reading the first
  /// part and evaluations the second (splitSamples).
  std::vector<double> split;
  /// Megatron-LM's --skip-train: no step; the validation loss of the
  /// parameters as loaded (--load, --load-params, or initialized).
  bool skipTrain = false;
  /// Whether the run evaluates at all.
  bool evaluates() const { return evalInterval > 0 || skipTrain; }
  /// The flag that asked for evaluation, as errors name it.
  const char *evaluationFlag() const {
    return skipTrain ? "--skip-train" : "--eval-interval";
  }
  /// Megatron-LM's ways to stop a run early, with a checkpoint when --save
  /// is given: after a step that --exit-interval divides, once
  /// --exit-duration-in-mins have passed since the run started (on any
  /// rank), or, with --exit-signal-handler, once any rank received
  /// --exit-signal (SIGTERM: Slurm's notice before it kills a job).
  int64_t exitInterval = 0;
  double exitDurationMinutes = 0;
  bool exitSignalHandler = false;
  std::string exitSignal = "SIGTERM";
  /// When the run started (this process's Options were made), for
  /// --exit-duration-in-mins.
  std::chrono::steady_clock::time_point started =
      std::chrono::steady_clock::now();
  /// Full training checkpoints, as Megatron-LM's --save, --save-interval,
  /// --load, --no-load-optim and --no-load-rng.
  std::string save;
  int64_t saveInterval = 0;
  std::string load;
  bool noLoadOptim = false;
  bool noLoadRng = false;
  /// --bf16 / --fp16: the precision the artifact must have been compiled
  /// for ("": any).
  std::string precision;
  /// fp16 loss scaling: --loss-scale, --initial-loss-scale,
  /// --min-loss-scale, --loss-scale-window, --hysteresis.
  LossScaler lossScaler;
  /// The loss-scaling flag given last ("": none), for its error.
  std::string lossScaleFlag;
};

/// The first sample of each part of --split `weights` over `samples`
/// samples, and one past the last: Megatron-LM's
/// get_train_valid_test_split_ (the weights normalized, each part's size
/// rounded, the rounding's excess taken from every boundary).
std::vector<int64_t> splitSamples(const std::vector<double> &weights,
                                  int64_t samples);

/// The number of --exit-signal NAME (SIGTERM, SIGINT, SIGUSR1, SIGUSR2),
/// or 0 for another name.
int exitSignalNumber(const std::string &name);

/// A checkpoint directory holds one shard per rank of the saving run
/// (mtrt/CheckpointShards.h); the optimizer state of parameter P is the
/// tensors "P::exp_avg" and "P::exp_avg_sq" ("::" is in no parameter name).
inline constexpr const char *kCheckpointFormat =
    "megatron-mlir-training-checkpoint";

/// The newest complete checkpoint of --load DIR: its iteration, its
/// directory, its shards and its metadata. Errors name the directory and
/// what is wrong with it.
struct Checkpoint {
  int64_t iteration = 0;
  std::string dir;
  /// Open while the run loads from them (each holds a file descriptor),
  /// released once the trainer is set up.
  std::shared_ptr<CheckpointShards> shards;
  int64_t shardCount = 0;
  /// Shards saved before checkpoints carried checksums: read unchecked.
  int64_t uncheckedShards = 0;
  std::map<std::string, std::string> metadata;
};

Status resolveCheckpoint(const std::string &dir, Checkpoint &checkpoint);

/// Whether --load names the --save directory and that holds no checkpoint
/// yet: a job's first launch, or one restarted before its first save,
/// with Megatron-LM's recipe of one command (--load DIR --save DIR) for
/// both. It trains from scratch, as Megatron-LM does.
bool loadsFromNoCheckpointYet(const Options &options);

/// `path` as one spelling per file: resolved through links where it
/// exists, else its longest existing prefix resolved and the names after it.
std::string canonicalPath(const std::string &path);

/// Parses megatron-run's command line (argv[0] is the program).
Status parseOptions(int argc, char **argv, Options &options);

/// megatron-run's --help text, naming this build's backends.
std::string usageText();

/// The learning-rate schedule's flags as a checkpoint records them.
std::map<std::string, std::string> scheduleOf(const Options &options);

} // namespace mtrt::train

#endif // MTRT_TRAIN_TRAINOPTIONS_H
