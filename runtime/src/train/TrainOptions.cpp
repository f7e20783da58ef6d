//===- TrainOptions.cpp - megatron-run's flags and checkpoints ------------===//

#include "train/TrainOptions.h"
#include "train/Devices.h"

#include "mtrt/CheckpointShards.h"
#include "mtrt/TokenData.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <sstream>
#include <sys/stat.h>
#include <vector>

namespace mtrt::train {

Status resolveCheckpoint(const std::string &dir, Checkpoint &checkpoint) {
  std::string marker = dir + "/" + kLatestFile;
  struct stat info;
  if (stat(dir.c_str(), &info) != 0)
    return Status::error(dir + ": " + std::strerror(errno) +
                         " (--load names the directory --save wrote)");
  if (!S_ISDIR(info.st_mode))
    return Status::error(dir + ": not a directory (--load names the "
                               "directory --save wrote)");
  int64_t iteration = 0;
  MTRT_RETURN_IF_ERROR(readMarkedIteration(dir, iteration));
  checkpoint.iteration = iteration;
  checkpoint.dir = readableIterationDir(dir, iteration);
  checkpoint.shards = std::make_shared<CheckpointShards>();
  MTRT_RETURN_IF_ERROR(CheckpointShards::open(checkpoint.dir, kCheckpointFormat,
                                              *checkpoint.shards));
  checkpoint.metadata = checkpoint.shards->metadata();
  checkpoint.uncheckedShards = checkpoint.shards->uncheckedShardCount();
  checkpoint.shardCount = checkpoint.shards->shardCount();
  auto field = [&](const char *key) {
    auto it = checkpoint.metadata.find(key);
    return it == checkpoint.metadata.end() ? std::string() : it->second;
  };
  if (field("iteration") != std::to_string(iteration))
    return Status::error(checkpoint.dir + ": holds iteration '" +
                         field("iteration") + "', but " + marker + " says " +
                         std::to_string(iteration));
  if (field("seed").empty())
    return Status::error(checkpoint.dir + ": metadata has no seed");
  // The seed keys the resumed run's dropout masks: it must read back as
  // the integer that was saved.
  char *seedEnd = nullptr;
  errno = 0;
  std::strtoll(field("seed").c_str(), &seedEnd, 10);
  if (*seedEnd != '\0' || errno)
    return Status::error(checkpoint.dir + ": metadata seed '" + field("seed") +
                         "' is not an integer");
  return Status::ok();
}

static const char *kUsageTemplate = R"(usage: megatron-run MODEL.mtx [flags]

Trains with a compiled artifact (megatron-translate --export-artifact).

  --steps N, --train-iters N   training steps (default 10); a flag given
                               twice takes its last value
  --data FILE                  token file: raw little-endian uint16 (nanoGPT's
                               train.bin), or Megatron-LM's indexed dataset
                               (PREFIX or PREFIX.bin beside PREFIX.idx; its
                               documents in order, any integer id type;
                               --data-path PREFIX, as Megatron-LM's, with
                               one dataset and no weights);
                               sample i of step t starts at token
                               ((t*B)+i)*S. Default: a built-in synthetic
                               corpus (an order-k Markov source) whose entropy
                               is printed as the loss floor
  --corpus-vocab N             synthetic corpus: tokens used (default 64, or
                               the model's vocabulary if smaller)
  --corpus-order K             synthetic corpus: Markov order (default 1)
  --seed N                     initialization, dropout and corpus seed (1234;
                               with --load, the checkpoint's)
  --lr X                       peak learning rate (6e-4)
  --min-lr X                   learning rate after decay (0)
  --lr-warmup-iters N          linear warmup steps from 0 (0); as in
                               Megatron-LM, update k uses the rate after k-1
  --lr-decay-iters N           steps until min-lr (default: --steps)
  --lr-decay-style S           constant | linear | cosine (linear)
  --weight-decay X             AdamW decoupled weight decay (0.01)
  --adam-beta1 X               (0.9)
  --adam-beta2 X               (0.999)
  --adam-eps X                 (1e-8)
  --clip-grad X                clip the global gradient norm; 0 disables (1.0)
  --load-params FILE           safetensors with Hugging Face names and layouts
                               (default: each parameter's initializer as the
                               model states it, Hugging Face's for imported
                               configs, drawn from --seed)
  --save DIR                   save full training checkpoints (parameters,
                               optimizer state, step, seed) to
                               DIR/iter_NNNNNNN/, then mark the newest in
                               DIR/latest_checkpointed_iteration.txt; every
                               --save-interval steps and at the end
  --save-interval N            steps between checkpoints (default: the end)
  --load DIR                   resume from DIR's newest checkpoint (any
                               layout); training continues at the next step
  --no-load-optim              with --load: start AdamW afresh (moments and
                               step count); the learning-rate schedule and
                               the loss scale go on (Megatron-LM restarts
                               both)
  --no-load-rng                with --load: take --seed instead of the
                               checkpoint's
  --no-strict-load             with --load-params: ignore tensors the model
                               does not have and initialize the ones the file
                               lacks (default: both are errors)
  --save-params FILE           write the trained parameters as safetensors
  --log FILE                   one JSON object per step: step, loss, lr,
                               grad_norm, step_time_s, tokens_per_s,
                               peak_bytes, tflops (and mfu with a peak,
                               validation_loss after an evaluation);
                               with --load it keeps FILE's steps up to the
                               checkpoint and appends the resumed ones
  --log-interval N             print a console line every N steps (and at
                               the last): the mean loss of the interval's
                               applied steps, the mean step time, the last
                               step's lr and grad norm (1)
  --eval-interval N            after every step N divides and after the
                               last, print the validation loss: the mean
                               over --eval-iters global batches, forward
                               only and without dropout (Megatron-LM's);
                               parameters and optimizer state untouched
  --eval-iters N               global batches per evaluation (100)
  --valid-data-path PATH       the validation tokens (a token file or an
                               indexed dataset's prefix, as --data-path);
                               with --data-path, it or --split is needed;
                               the synthetic corpus holds out a stream of
                               its own
  --test-data-path PATH        test tokens (as --valid-data-path): after the
                               last step (or with --skip-train), the loss of
                               their first --eval-iters global batches, "on
                               test set" as Megatron-LM's; --split's third
                               part is the same
  --split T,V,E                divide --data-path's samples in order into
                               training, validation and test parts by these
                               weights (Megatron-LM's; by samples, not by
                               documents): training reads the first, the
                               validation the second, the test the third
                               (default: train on all)
  --skip-train                 train nothing: print the validation loss of
                               the parameters as loaded (--load,
                               --load-params) or initialized, and exit
  --trace FILE                 write every rank's measured timeline as
                               Chrome trace JSON (Perfetto): per rank, one
                               slice per schedule action (F3, B3, optimizer)
                               and one per command (with its layer, FLOPs
                               and bytes); receives show the waits
  --threads N                  threads per rank, shared by GEMMs, generated
                               kernels and the other host kernels
                               (default: the cores over the ranks on the
                               node)
  --device cpu|cuda            the backend that runs the program (default:
                               cuda where this build has it and a GPU is
                               visible, else cpu; this build: @BACKENDS@)
  --tf32                       let the CUDA backend's fp32 GEMMs round their
                               inputs to TF32 on the tensor cores (default:
                               off, fp32 GEMMs in fp32; not for --device cpu)
  --peak-tflops X              the dense peak of one device in TFLOP/s for
                               the arithmetic the step runs in: each step
                               then reports MFU, the model's TFLOP/s per
                               device over it (default: the data sheet of
                               the GPU where the CUDA backend knows it, as
                               989.4 for an H100 SXM in bf16; none on CPU)
  --profile                    after training, print rank 0's time per
                               kernel per step (the first step, a warm-up,
                               left out), with calls, share, achieved
                               GFLOP/s and GB/s
  --memory-report              print every stage's planned memory per rank
                               (parameters, optimizer state, stashed
                               activations, gradients, communication
                               buffers, the largest buffers at the peak)
                               and exit without training; no launcher
                               needed; it reads the artifact only, so a
                               training command's other flags may stay
  --memory-report-json FILE    the same as JSON (implies --memory-report)
  --memory-report-svg FILE     the same as an SVG bar chart per stage
  --exit-interval N            stop after a step N divides, saving a
                               checkpoint first when --save is given (the
                               job then resumes with --load)
  --exit-duration-in-mins X    stop after the first step that ends X
                               minutes after the run started (on any rank),
                               saving first with --save: within a
                               scheduler's time limit
  --exit-signal-handler        on --exit-signal (any rank's, from the start,
                               setup included), stop after the step under
                               way, saving first with --save: Slurm sends
                               SIGTERM before it kills a job (Open MPI's
                               mpirun passes SIGTERM on but then exits 1;
                               it forwards SIGUSR1 and SIGUSR2 and exits 0)
  --exit-signal NAME           SIGTERM (default), SIGINT, SIGUSR1 or SIGUSR2
  --distributed-timeout-minutes X
                               how long a rank waits for its peers in a
                               collective or transfer before every rank
                               stops with an error naming what did not
                               answer (10)
  --bf16, --fp16               check that the artifact stores activations
                               in that precision (compile with
                               --mt-train-pipeline="precision=bf16|fp16")
  --loss-scale X               fp16: a constant loss scale (default, or 0:
                               dynamic, as Megatron-LM's); a step whose
                               scaled gradients overflow is skipped either
                               way
  --initial-loss-scale X       fp16 dynamic scaling: first scale (2^32)
                               (this and the next three: not with a
                               constant --loss-scale)
  --min-loss-scale X           fp16 dynamic scaling: floor (1)
  --loss-scale-window N        fp16: overflow-free steps before the scale
                               doubles (1000)
  --hysteresis N               fp16: overflows before the scale halves (2)
  --quiet                      no per-step progress lines
)";

std::string usageText() {
  // The backends are this build's (the CUDA one where the toolkit was).
  std::string usage = kUsageTemplate, backends;
  for (const std::string &backend : builtBackends())
    backends += (backends.empty() ? "" : ", ") + backend;
  const std::string marker = "@BACKENDS@";
  usage.replace(usage.find(marker), marker.size(), backends);
  return usage;
}

/// The learning-rate schedule a checkpoint was trained with: resuming under
/// another would not continue the same run (Megatron-LM checks this too).
std::map<std::string, std::string> scheduleOf(const Options &o) {
  return {{"lr", number(o.lr)},
          {"min_lr", number(o.minLr)},
          {"lr_warmup_iters", std::to_string(o.warmupIters)},
          {"lr_decay_iters",
           std::to_string(o.decayIters > 0 ? o.decayIters : o.steps)},
          {"lr_decay_style", o.decayStyle}};
}

static Status parseInt(const std::string &flag, const std::string &text,
                       int64_t &value) {
  char *end = nullptr;
  errno = 0;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  if (!text.empty() && *end == '\0' && errno == ERANGE)
    return Status::error("flag " + flag + " is " + text +
                         ", beyond a 64-bit integer");
  if (text.empty() || *end != '\0' || errno)
    return Status::error("flag " + flag + " expects an integer, got '" + text +
                         "'");
  value = parsed;
  return Status::ok();
}

static Status parseDouble(const std::string &flag, const std::string &text,
                          double &value) {
  char *end = nullptr;
  errno = 0;
  double parsed = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno || !std::isfinite(parsed))
    return Status::error("flag " + flag + " expects a number, got '" + text +
                         "'");
  value = parsed;
  return Status::ok();
}

std::vector<int64_t> splitSamples(const std::vector<double> &weights,
                                  int64_t samples) {
  // Over the largest weight first, so that huge weights sum to no infinity.
  double largest = 0;
  for (double weight : weights)
    largest = std::max(largest, weight);
  double sum = 0;
  for (double weight : weights)
    sum += weight / largest;
  std::vector<int64_t> index = {0};
  for (double weight : weights)
    index.push_back(
        index.back() +
        int64_t(std::nearbyint(weight / largest / sum * double(samples))));
  int64_t excess = index.back() - samples;
  // Megatron-LM moves every boundary by the rounding's excess, which can
  // put one before 0 (0,1,1 over 7 samples: -1, reading the last sample
  // as the first): here each stays between the one before it and the end.
  for (size_t i = 1; i < index.size(); ++i)
    index[i] = std::min(samples, std::max(index[i - 1], index[i] - excess));
  return index;
}

std::string canonicalPath(const std::string &path) {
  if (char *resolved = ::realpath(path.c_str(), nullptr)) {
    std::string canonical = resolved;
    std::free(resolved);
    return canonical;
  }
  // No file can be opened by a longer name: compared as spelled.
  if (path.size() > PATH_MAX)
    return path;
  // Not there (yet): the longest prefix that exists, resolved, and the
  // names after it, without "." and empty ones ("d/" is "d", "./a/b" is
  // "a/b", "//x" is "/x" while they do not exist).
  std::vector<std::string> names;
  std::string head = path;
  for (;;) {
    size_t slash = head.rfind('/');
    std::string name =
        slash == std::string::npos ? head : head.substr(slash + 1);
    if (!name.empty() && name != ".")
      names.push_back(name);
    if (slash == std::string::npos)
      head = ".";
    else
      head.erase(slash == 0 ? 1 : slash);
    char *resolved = ::realpath(head.c_str(), nullptr);
    if (resolved) {
      std::string canonical = resolved;
      std::free(resolved);
      if (canonical == "/")
        canonical.clear();
      for (auto name = names.rbegin(); name != names.rend(); ++name)
        canonical += "/" + *name;
      return canonical.empty() ? "/" : canonical;
    }
    // The working directory removed, or root unreadable: as spelled.
    if (head == "." || head == "/")
      return path;
  }
}

/// No file the run writes is one it reads, or another it writes: `--log
/// train.bin` truncated the token file being read (SIGBUS), `--log
/// model.mtx` replaced the artifact, `--log x --save-params x` kept one.
static Status checkDistinctFiles(const Options &options) {
  std::vector<std::pair<std::string, std::string>> files; // what, path
  auto add = [&](std::string what, const std::string &path) {
    if (!path.empty())
      files.emplace_back(std::move(what), path);
  };
  add("the artifact", options.artifact);
  if (!options.data.empty()) {
    add("the token data (--data)", TokenData::tokenFileOf(options.data));
    add("the token data's index (--data)",
        TokenData::indexFileOf(options.data));
  }
  add("the parameters read (--load-params)", options.loadParams);
  size_t inputs = files.size();
  add("--log", options.log);
  add("--save-params", options.saveParams);
  add("--trace", options.trace);
  add("--memory-report-json", options.memoryReportJson);
  add("--memory-report-svg", options.memoryReportSvg);
  for (size_t out = inputs; out < files.size(); ++out)
    for (size_t other = 0; other < out; ++other)
      if (canonicalPath(files[out].second) ==
          canonicalPath(files[other].second))
        return Status::error(
            "flag " + files[out].first + " writes " + files[out].second +
            ", which is also " + files[other].first +
            (other < inputs ? ": the run would overwrite what it reads"
                            : ": one would overwrite the other"));
  return Status::ok();
}

int exitSignalNumber(const std::string &name) {
  for (auto [known, number] :
       {std::pair{"SIGTERM", SIGTERM}, std::pair{"SIGINT", SIGINT},
        std::pair{"SIGUSR1", SIGUSR1}, std::pair{"SIGUSR2", SIGUSR2}})
    if (name == known)
      return number;
  return 0;
}

bool loadsFromNoCheckpointYet(const Options &options) {
  return !options.load.empty() && !options.save.empty() &&
         canonicalPath(options.load) == canonicalPath(options.save) &&
         holdsNoCheckpoint(options.load);
}

Status parseOptions(int argc, char **argv, Options &options) {
  std::map<std::string, std::function<Status(const std::string &)>> flags;
  auto intFlag = [&](const char *name, int64_t &field) {
    flags[name] = [&field, name](const std::string &v) {
      return parseInt(name, v, field);
    };
  };
  auto doubleFlag = [&](const char *name, double &field) {
    flags[name] = [&field, name](const std::string &v) {
      return parseDouble(name, v, field);
    };
  };
  // An empty value reads as "not given": `--data "$DATA"` with DATA unset
  // would train on the synthetic corpus, `--load "$CKPT"` from scratch.
  auto stringFlag = [&](const char *name, std::string &field) {
    flags[name] = [&field, name](const std::string &v) {
      if (v.empty())
        return Status::error(std::string("flag ") + name +
                             " has an empty value");
      field = v;
      return Status::ok();
    };
  };
  intFlag("--steps", options.steps);
  intFlag("--train-iters", options.steps);
  stringFlag("--data", options.data);
  stringFlag("--data-path", options.data); // Megatron-LM's name (one prefix)
  intFlag("--seed", options.seed);
  doubleFlag("--lr", options.lr);
  doubleFlag("--min-lr", options.minLr);
  intFlag("--lr-warmup-iters", options.warmupIters);
  // Left out, the schedule decays over --steps; given, it must be positive
  // (Megatron-LM asserts so): 0 would silently mean --steps.
  flags["--lr-decay-iters"] = [&options](const std::string &v) {
    MTRT_RETURN_IF_ERROR(parseInt("--lr-decay-iters", v, options.decayIters));
    return options.decayIters > 0
               ? Status::ok()
               : Status::error("flag --lr-decay-iters must be positive, got " +
                               v + " (leave it out to decay over --steps)");
  };
  stringFlag("--lr-decay-style", options.decayStyle);
  doubleFlag("--weight-decay", options.weightDecay);
  doubleFlag("--adam-beta1", options.beta1);
  doubleFlag("--adam-beta2", options.beta2);
  doubleFlag("--adam-eps", options.eps);
  doubleFlag("--clip-grad", options.clipGrad);
  doubleFlag("--distributed-timeout-minutes", options.timeoutMinutes);
  doubleFlag("--peak-tflops", options.peakTflops);
  stringFlag("--load-params", options.loadParams);
  stringFlag("--save-params", options.saveParams);
  stringFlag("--log", options.log);
  stringFlag("--trace", options.trace);
  stringFlag("--device", options.device);
  stringFlag("--memory-report-json", options.memoryReportJson);
  stringFlag("--memory-report-svg", options.memoryReportSvg);
  stringFlag("--save", options.save);
  intFlag("--save-interval", options.saveInterval);
  intFlag("--log-interval", options.logInterval);
  intFlag("--eval-interval", options.evalInterval);
  intFlag("--eval-iters", options.evalIters);
  stringFlag("--valid-data-path", options.validData);
  stringFlag("--test-data-path", options.testData);
  // "969,30,1" (or "969/30/1", as Megatron-LM reads '/' where there is no
  // ','): up to three weights, the missing ones 0, spaces around each.
  flags["--split"] = [&options](const std::string &v) {
    options.split.clear();
    char separator = v.find(',') != std::string::npos ? ',' : '/';
    std::string rest = v;
    double sum = 0;
    while (true) {
      size_t cut = rest.find(separator);
      std::string text = rest.substr(0, cut);
      size_t begin = text.find_first_not_of(' ');
      size_t end = text.find_last_not_of(' ');
      text =
          begin == std::string::npos ? "" : text.substr(begin, end - begin + 1);
      double weight = 0;
      MTRT_RETURN_IF_ERROR(parseDouble("--split", text, weight));
      if (weight < 0)
        return Status::error("flag --split has a negative weight in '" + v +
                             "'");
      options.split.push_back(weight);
      sum += weight;
      if (cut == std::string::npos)
        break;
      rest = rest.substr(cut + 1);
    }
    if (options.split.size() > 3 || !(sum > 0))
      return Status::error("flag --split expects up to three non-negative "
                           "weights (train,valid,test) with a positive sum, "
                           "got '" +
                           v + "'");
    options.split.resize(3, 0.0);
    return Status::ok();
  };
  intFlag("--exit-interval", options.exitInterval);
  doubleFlag("--exit-duration-in-mins", options.exitDurationMinutes);
  stringFlag("--exit-signal", options.exitSignal);
  stringFlag("--load", options.load);
  intFlag("--corpus-vocab", options.corpusVocab);
  intFlag("--corpus-order", options.corpusOrder);
  // Checked as it is read: -1, the default's mark, is no value to give.
  flags["--threads"] = [&options](const std::string &v) {
    MTRT_RETURN_IF_ERROR(parseInt("--threads", v, options.threads));
    if (options.threads < 1 || options.threads > 4096)
      return Status::error("flag --threads must be between 1 and 4096, got " +
                           std::to_string(options.threads));
    return Status::ok();
  };
  for (auto [name, field] :
       {std::pair{"--loss-scale", &options.lossScaler.constantScale},
        std::pair{"--initial-loss-scale", &options.lossScaler.initialScale},
        std::pair{"--min-loss-scale", &options.lossScaler.minScale}})
    flags[name] = [&options, field, name](const std::string &v) {
      options.lossScaleFlag = name;
      return parseDouble(name, v, *field);
    };
  for (auto [name, field] :
       {std::pair{"--loss-scale-window", &options.lossScaler.window},
        std::pair{"--hysteresis", &options.lossScaler.hysteresis}})
    flags[name] = [&options, field, name](const std::string &v) {
      options.lossScaleFlag = name;
      return parseInt(name, v, *field);
    };

  // Spellings of one setting: giving both is giving it twice.
  const std::map<std::string, std::string> aliasOf = {
      {"--train-iters", "--steps"}, {"--data-path", "--data"}};
  // Each setting given, by its first spelling, with the spelling and value.
  std::map<std::string, std::pair<std::string, std::string>> given;

  // A C API caller may pass a NULL (a Python list holding None: an unset
  // environment variable).
  for (int i = 1; i < argc; ++i)
    if (!argv[i])
      return Status::error("argument " + std::to_string(i) +
                           " is NULL, not a string");
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    // The usage is asked for, not a run: the caller prints it (the C API
    // returns it, rather than this function ending the host process).
    if (arg == "--help" || arg == "-h") {
      options.help = true;
      return Status::ok();
    }
    if (arg == "--quiet") {
      options.quiet = true;
      continue;
    }
    if (arg == "--no-strict-load") {
      options.nonStrictLoad = true;
      continue;
    }
    if (arg == "--no-load-optim") {
      options.noLoadOptim = true;
      continue;
    }
    if (arg == "--no-load-rng") {
      options.noLoadRng = true;
      continue;
    }
    if (arg == "--memory-report") {
      options.memoryReport = true;
      continue;
    }
    if (arg == "--profile") {
      options.profile = true;
      continue;
    }
    if (arg == "--exit-signal-handler") {
      options.exitSignalHandler = true;
      continue;
    }
    if (arg == "--tf32") {
      options.tf32 = true;
      continue;
    }
    if (arg == "--skip-train") {
      options.skipTrain = true;
      continue;
    }
    if (arg == "--bf16" || arg == "--fp16") {
      std::string precision = arg.substr(2);
      if (!options.precision.empty() && options.precision != precision)
        return Status::error("flags --bf16 and --fp16 exclude each other");
      options.precision = precision;
      continue;
    }
    for (const char *flag :
         {"--quiet", "--profile", "--bf16", "--fp16", "--memory-report",
          "--tf32", "--exit-signal-handler", "--skip-train"})
      if (arg.rfind(std::string(flag) + "=", 0) == 0)
        return Status::error(std::string("flag ") + flag + " takes no value");
    if (arg.size() > 1 && arg[0] == '-' && arg.rfind("--", 0) != 0)
      return Status::error("unknown flag '" + arg +
                           "' (flags start with --; see --help)");
    if (arg.rfind("--", 0) != 0) {
      if (!options.artifact.empty())
        return Status::error("unexpected argument '" + arg +
                             "': one artifact only");
      options.artifact = arg;
      continue;
    }
    std::string name = arg, value;
    size_t eq = arg.find('=');
    bool inlineValue = eq != std::string::npos;
    if (inlineValue) {
      name = arg.substr(0, eq);
      value = arg.substr(eq + 1);
    }
    auto it = flags.find(name);
    if (it == flags.end())
      return Status::error("unknown flag '" + name + "' (see --help)");
    if (!inlineValue) {
      if (i + 1 >= argc)
        return Status::error("flag " + name + " needs a value");
      value = argv[++i];
    }
    // A flag repeated takes its last value, as argparse's (Megatron-LM's)
    // do: a script's common flags, then the ones that override them. Both
    // spellings of one setting with different values are refused: a
    // `--data-path` after `--data` is no override anyone writes on purpose.
    auto alias = aliasOf.find(name);
    const std::string &setting = alias == aliasOf.end() ? name : alias->second;
    auto [earlier, first] = given.insert({setting, {name, value}});
    // (Compared as what they mean: "02" is 2, "./train.bin" is train.bin.)
    auto meaning = [&setting](const std::string &text) {
      if (setting == "--data")
        return canonicalPath(text);
      char *end = nullptr;
      long long number = std::strtoll(text.c_str(), &end, 10);
      return *end == '\0' && !text.empty() ? std::to_string(number) : text;
    };
    if (!first && earlier->second.first != name &&
        meaning(earlier->second.second) != meaning(value))
      return Status::error(
          "flag " + name + " '" + value + "' contradicts the earlier " +
          earlier->second.first + " '" + earlier->second.second +
          "' (two spellings of one setting)");
    earlier->second = {name, value};
    MTRT_RETURN_IF_ERROR(it->second(value));
  }
  options.corpusVocabGiven = given.count("--corpus-vocab") != 0;
  options.seedGiven = given.count("--seed") != 0;
  if (options.artifact.empty())
    return Status::error("no artifact given (see --help)");
  auto positive = [](const char *flag, double value) {
    return value > 0 ? Status::ok()
                     : Status::error(std::string("flag ") + flag +
                                     " must be positive, got " + number(value));
  };
  auto nonNegative = [](const char *flag, double value) {
    return value >= 0
               ? Status::ok()
               : Status::error(std::string("flag ") + flag +
                               " must not be negative, got " + number(value));
  };
  // Errors name the spelling given.
  auto spelling = [&given](const std::string &setting) {
    auto it = given.find(setting);
    return it == given.end() ? setting : it->second.first;
  };
  const std::string steps = spelling("--steps");
  MTRT_RETURN_IF_ERROR(positive(steps.c_str(), double(options.steps)));
  // Far beyond any run, and small enough that the counts derived from it
  // (samples, tokens, the data's coverage) cannot overflow 64 bits.
  if (options.steps > (int64_t(1) << 40))
    return Status::error("flag " + steps + " must be at most 2^40, got " +
                         std::to_string(options.steps));
  MTRT_RETURN_IF_ERROR(positive("--lr", options.lr));
  MTRT_RETURN_IF_ERROR(positive("--adam-eps", options.eps));
  // A second at least: below it every collective of a real step would
  // time out (1e-30 was accepted).
  if (!(options.timeoutMinutes >= 1.0 / 60))
    return Status::error(
        "flag --distributed-timeout-minutes must be at least one second "
        "(0.0167), got " +
        number(options.timeoutMinutes));
  if (!std::isnan(options.peakTflops))
    MTRT_RETURN_IF_ERROR(positive("--peak-tflops", options.peakTflops));
  MTRT_RETURN_IF_ERROR(
      nonNegative("--save-interval", double(options.saveInterval)));
  MTRT_RETURN_IF_ERROR(positive("--log-interval", double(options.logInterval)));
  if (given.count("--eval-interval"))
    MTRT_RETURN_IF_ERROR(
        positive("--eval-interval", double(options.evalInterval)));
  MTRT_RETURN_IF_ERROR(positive("--eval-iters", double(options.evalIters)));
  for (const char *evalFlag :
       {"--eval-iters", "--valid-data-path", "--test-data-path"})
    if (given.count(evalFlag) && !options.evaluates())
      return Status::error(std::string("flag ") + evalFlag +
                           " needs --eval-interval (how often to evaluate) "
                           "or --skip-train");
  if (options.skipTrain) {
    // Nothing trains: what only training reads or writes is refused.
    for (const char *trainFlag :
         {"--steps", "--eval-interval", "--save", "--save-interval",
          "--save-params", "--log", "--trace", "--exit-interval",
          "--exit-duration-in-mins"})
      if (given.count(trainFlag))
        return Status::error(std::string("flag ") + trainFlag +
                             " is read only by training, which --skip-train "
                             "skips");
    for (auto [flag, set] :
         {std::pair{"--profile", options.profile},
          std::pair{"--exit-signal-handler", options.exitSignalHandler}})
      if (set)
        return Status::error(std::string("flag ") + flag +
                             " is read only by training, which --skip-train "
                             "skips");
  }
  if (!options.split.empty() && options.data.empty())
    return Status::error("flag --split divides --data-path's samples; the "
                         "synthetic corpus holds out its own validation "
                         "stream");
  for (const char *path : {"--valid-data-path", "--test-data-path"})
    if (!options.split.empty() && given.count(path))
      return Status::error(std::string("flags --split and ") + path +
                           " exclude each other (the evaluation tokens come "
                           "from one)");
  if (!options.testData.empty() && options.data.empty())
    return Status::error("flag --test-data-path needs --data-path (the "
                         "training tokens; the synthetic corpus has no test "
                         "set)");
  if (options.evaluates() && !options.data.empty() &&
      options.validData.empty() &&
      (options.split.empty() || options.split[1] == 0))
    return Status::error(
        std::string("flag ") + options.evaluationFlag() + " with " +
        spelling("--data") +
        " needs --valid-data-path or a --split with a validation part (the "
        "validation tokens; without --data the synthetic corpus holds out a "
        "stream of its own)");
  if (!options.validData.empty() && options.data.empty())
    return Status::error("flag --valid-data-path needs --data-path (the "
                         "training tokens; the synthetic corpus holds out "
                         "its own validation stream)");
  if (given.count("--exit-interval"))
    MTRT_RETURN_IF_ERROR(
        positive("--exit-interval", double(options.exitInterval)));
  if (given.count("--exit-duration-in-mins") &&
      !(options.exitDurationMinutes > 0 &&
        std::isfinite(options.exitDurationMinutes)))
    return Status::error(
        "flag --exit-duration-in-mins must be a positive number of minutes, "
        "got " +
        number(options.exitDurationMinutes));
  if (exitSignalNumber(options.exitSignal) == 0)
    return Status::error("flag --exit-signal must be SIGTERM, SIGINT, "
                         "SIGUSR1 or SIGUSR2, got '" +
                         options.exitSignal + "'");
  if (given.count("--exit-signal") && !options.exitSignalHandler)
    return Status::error("flag --exit-signal needs --exit-signal-handler "
                         "(which stops the run on that signal)");
  // Flags that something else given makes meaningless are refused, not
  // ignored.
  if (given.count("--save-interval") && options.save.empty())
    return Status::error("flag --save-interval needs --save (the directory "
                         "the checkpoints go to)");
  for (const char *corpusFlag : {"--corpus-vocab", "--corpus-order"})
    if (given.count(corpusFlag) && !options.data.empty())
      return Status::error(std::string("flag ") + corpusFlag +
                           " shapes the built-in synthetic corpus, which " +
                           spelling("--data") + " replaces");
  if (options.lossScaler.constantScale != 0)
    for (const char *dynamicFlag : {"--initial-loss-scale", "--min-loss-scale",
                                    "--loss-scale-window", "--hysteresis"})
      if (given.count(dynamicFlag))
        return Status::error(std::string("flag ") + dynamicFlag +
                             " sets dynamic loss scaling, which the constant "
                             "--loss-scale " +
                             number(options.lossScaler.constantScale) +
                             " replaces");
  // What they change comes from a checkpoint: without one they would be
  // ignored.
  for (auto [flag, given] : {std::pair{"--no-load-optim", options.noLoadOptim},
                             std::pair{"--no-load-rng", options.noLoadRng}})
    if (given && options.load.empty())
      return Status::error(std::string("flag ") + flag +
                           " needs --load (a training checkpoint)");
  if (!options.load.empty() && !options.loadParams.empty())
    return Status::error("--load (a training checkpoint) and --load-params "
                         "(parameters only) exclude each other");
  if (options.nonStrictLoad && options.loadParams.empty())
    return Status::error("flag --no-strict-load needs --load-params (a "
                         "parameter file)");

  MTRT_RETURN_IF_ERROR(positive("--corpus-vocab", double(options.corpusVocab)));
  MTRT_RETURN_IF_ERROR(positive("--corpus-order", double(options.corpusOrder)));
  if (!options.device.empty() && options.device != "cpu" &&
      options.device != "cuda")
    return Status::error("flag --device must be cpu or cuda, got '" +
                         options.device + "'");
  MTRT_RETURN_IF_ERROR(nonNegative("--min-lr", options.minLr));
  MTRT_RETURN_IF_ERROR(
      nonNegative("--lr-warmup-iters", double(options.warmupIters)));
  MTRT_RETURN_IF_ERROR(nonNegative("--weight-decay", options.weightDecay));
  MTRT_RETURN_IF_ERROR(nonNegative("--clip-grad", options.clipGrad));
  MTRT_RETURN_IF_ERROR(nonNegative("--seed", double(options.seed)));
  for (auto [flag, beta] : {std::pair{"--adam-beta1", options.beta1},
                            std::pair{"--adam-beta2", options.beta2}})
    if (!(beta >= 0 && beta < 1))
      return Status::error(std::string("flag ") + flag +
                           " must be in [0, 1), got " + number(beta));
  // The step reads these as f32 scalars: a value that is finite as a double
  // but not as a float would turn the update into inf or NaN.
  for (auto [flag, value] :
       {std::pair{"--lr", options.lr}, std::pair{"--min-lr", options.minLr},
        std::pair{"--adam-beta1", options.beta1},
        std::pair{"--adam-beta2", options.beta2},
        std::pair{"--adam-eps", options.eps},
        std::pair{"--weight-decay", options.weightDecay},
        std::pair{"--clip-grad", options.clipGrad}}) {
    float single = float(value);
    if (!std::isfinite(single) || (value != 0 && single == 0.0f))
      return Status::error(std::string("flag ") + flag + " is " +
                           number(value) +
                           ", which a 32-bit float (the precision the "
                           "training step uses) cannot hold");
  }
  return checkDistinctFiles(options);
}

} // namespace mtrt::train
