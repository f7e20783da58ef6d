//===- Run.cpp - megatron-run: a training run from its command line -------===//
//
// What megatron-run does, as a library: start the ranks, parse the flags,
// load and check the artifact, agree on the job across ranks (an error
// some ranks see must not leave the others waiting in a collective),
// then train, profile, trace and save. The tool's main and the C API
// (mtrt/mtrt.h) both run it.
//
//===----------------------------------------------------------------------===//

#include "train/Run.h"

#include "train/Devices.h"

#include "mtrt/Device.h"
#include "mtrt/Launcher.h"

#include "mtrt/AtomicFile.h"
#include "mtrt/CheckpointShards.h"
#include "mtrt/Hash.h"
#include "mtrt/MemoryReport.h"
#include "mtrt/ThreadPool.h"
#include "mtrt/TokenData.h"

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

namespace mtrt::train {

std::string &lastErrorText() {
  static std::string text;
  return text;
}

namespace {

int fail(const Status &status) {
  lastErrorText() = status.message();
  std::fprintf(stderr, "megatron-run: error: %s\n", status.message().c_str());
  return 1;
}

/// Reports `status` (an error) prefixed with this rank; returns 1.
int failTogetherMessage(const Status &status, const Launcher &comm) {
  std::string prefix =
      comm.size() == 1 ? "" : "rank " + std::to_string(comm.rank()) + ": ";
  lastErrorText() = prefix + status.message();
  std::fprintf(stderr, "megatron-run: error: %s%s\n", prefix.c_str(),
               status.message().c_str());
  return 1;
}

/// An error only some ranks may see: each failing rank reports it with its
/// rank, and every rank stops.
int failTogether(const Status &status, const Launcher &comm) {
  if (comm.allAgree(status.isOk()))
    return 0;
  if (!status)
    return failTogetherMessage(status, comm);
  return 1;
}

std::string hexDigest(uint64_t hash) {
  char text[32];
  std::snprintf(text, sizeof(text), "%016llx",
                static_cast<unsigned long long>(hash));
  return text;
}

/// FNV-1a over the bytes of `path` (at most `limit` of them); "" if it
/// cannot be read.
std::string fileDigest(const std::string &path, int64_t limit) {
  uint64_t hash = 0;
  int64_t bytes = 0;
  return fnv1aOfFile(path, limit, hash, bytes) ? hexDigest(hash) : "";
}

/// What every rank of one job must agree on before the first step: the
/// artifact's bytes, the flags that shape the training, and the data. Each
/// line is "key: value".
/// --split's weights over their sum ("0.9,0.1,0").
std::string splitFractions(const Options &o) {
  double sum = o.split[0] + o.split[1] + o.split[2];
  return number(o.split[0] / sum) + "," + number(o.split[1] / sum) + "," +
         number(o.split[2] / sum);
}

std::vector<std::pair<std::string, std::string>>
jobFingerprint(const Options &o, const Artifact &artifact,
               const Checkpoint &checkpoint) {
  std::vector<std::pair<std::string, std::string>> items = {
      {"artifact", hexDigest(artifact.contentDigest)},
      {"--steps", std::to_string(o.steps)},
      {"--seed", std::to_string(o.seed)},
      {"--lr", number(o.lr)},
      {"--min-lr", number(o.minLr)},
      {"--lr-warmup-iters", std::to_string(o.warmupIters)},
      {"--lr-decay-iters", std::to_string(o.decayIters)},
      {"--lr-decay-style", o.decayStyle},
      {"--weight-decay", number(o.weightDecay)},
      {"--adam-beta1", number(o.beta1)},
      {"--adam-beta2", number(o.beta2)},
      {"--adam-eps", number(o.eps)},
      {"--clip-grad", number(o.clipGrad)},
      {"--corpus-vocab", std::to_string(o.corpusVocab)},
      {"--corpus-order", std::to_string(o.corpusOrder)},
      {"--load-params", o.loadParams.empty()
                            ? std::string("none")
                            : fileDigest(o.loadParams, 1 << 20)},
      // The checkpoint read, not only its iteration: the header of its
      // first shard holds the save's id and every tensor's checksum (two
      // checkpoints of one iteration trained a mix of both).
      {"--load",
       o.load.empty()
           ? std::string("none")
           : "iteration " + std::to_string(checkpoint.iteration) +
                 ", first shard's first MiB " +
                 fileDigest(checkpointShardPath(checkpoint.dir, 0), 1 << 20)},
      {"--no-load-optim", o.noLoadOptim ? "yes" : "no"},
      {"--no-load-rng", o.noLoadRng ? "yes" : "no"},
      {"--no-strict-load", o.nonStrictLoad ? "yes" : "no"},
      // One directory however spelled ("ck", "ck/", "./ck").
      {"--save", o.save.empty() ? std::string() : canonicalPath(o.save)},
      {"--save-interval", std::to_string(o.saveInterval)},
      // When the ranks stop early (and save), and whether they agree each
      // step on stopping (a collective only the ranks given these call).
      {"--exit-interval", std::to_string(o.exitInterval)},
      {"--exit-duration-in-mins", o.exitDurationMinutes > 0
                                      ? std::string("given")
                                      : std::string("not given")},
      {"--exit-signal", o.exitSignalHandler ? o.exitSignal : "none"},
      // Evaluations run collectives and transfers: every rank runs the same.
      {"--eval-interval", std::to_string(o.evalInterval)},
      {"--eval-iters", std::to_string(o.evalIters)},
      {"--skip-train", o.skipTrain ? "yes" : "no"},
      // As fractions: 90,10 and 9,1 are one split.
      {"--split", o.split.empty() ? std::string("none") : splitFractions(o)},
      // Each rank scales its own loss: ranks scaling differently would
      // add gradients of different scales in their reductions.
      {"--loss-scale", number(o.lossScaler.constantScale)},
      {"--initial-loss-scale", number(o.lossScaler.initialScale)},
      {"--min-loss-scale", number(o.lossScaler.minScale)},
      {"--loss-scale-window", std::to_string(o.lossScaler.window)},
      {"--hysteresis", std::to_string(o.lossScaler.hysteresis)},
      {"--bf16/--fp16", o.precision.empty() ? std::string("any") : o.precision},
      {"--tf32", o.tf32 ? "yes" : "no"},
      // The backend each rank resolved: ranks on different backends (one
      // node with a GPU, one without) would not compute the same step.
      {"--device", o.device.empty() ? defaultBackend() : o.device},
  };
  // A token file by its size and first MiB (PREFIX.bin of an indexed
  // dataset named by PREFIX), and an indexed dataset's index, which says
  // how to read those bytes.
  auto addTokens = [&](const std::string &flag, const std::string &path) {
    std::string tokens = TokenData::tokenFileOf(path);
    struct stat info;
    std::string size = stat(tokens.c_str(), &info) == 0
                           ? std::to_string(int64_t(info.st_size))
                           : "unreadable";
    items.push_back(
        {flag, size + " bytes, first MiB " + fileDigest(tokens, 1 << 20)});
    if (std::string index = TokenData::indexFileOf(path); !index.empty())
      items.push_back(
          {flag + " (index)", "first MiB " + fileDigest(index, 1 << 20)});
  };
  if (!o.data.empty())
    addTokens("--data", o.data);
  else
    items.push_back({"--data", "synthetic corpus"});
  if (!o.validData.empty())
    addTokens("--valid-data-path", o.validData);
  if (!o.testData.empty())
    addTokens("--test-data-path", o.testData);
  return items;
}

/// What every rank must agree on before its first collective after the
/// flags: what decides which collectives it calls. A launch giving ranks
/// different flags (mpirun's MPMD form, a wrapper adding a flag on some
/// nodes) otherwise failed as MPI_ERR_TRUNCATE, in mismatched
/// collectives, or lost the outputs a flag asked of rank 1 only.
std::vector<std::pair<std::string, std::string>>
controlFlowFingerprint(const Options &o) {
  auto given = [](bool yes) {
    return std::string(yes ? "given" : "not given");
  };
  return {
      {"--help", given(o.help)},
      {"--memory-report", given(o.memoryReport || !o.memoryReportJson.empty() ||
                                !o.memoryReportSvg.empty())},
      {"--load", given(!o.load.empty())},
      {"--log", given(!o.log.empty())},
      {"--save-params", given(!o.saveParams.empty())},
      {"--trace", given(!o.trace.empty())},
      {"--profile", given(o.profile)},
      // Its handler is installed (and agreed on) before the job check.
      {"--exit-signal-handler", given(o.exitSignalHandler)},
  };
}

/// All ranks agree on `items`: the same artifact, training flags and data
/// (jobFingerprint), or the same control flow (controlFlowFingerprint). A
/// difference is an error naming the ranks and what differs.
Status
checkSameJob(const std::vector<std::pair<std::string, std::string>> &items,
             const Launcher &comm) {
  if (comm.size() == 1)
    return Status::ok();
  std::string mine;
  for (const auto &[key, value] : items)
    mine += key + "=" + value + "\n";
  std::vector<std::string> all;
  MTRT_RETURN_IF_ERROR(comm.gatherStringsToRoot(mine, all));
  Status result = Status::ok();
  if (comm.rank() == 0) {
    for (size_t r = 1; r < all.size() && result; ++r) {
      if (all[r] == all[0])
        continue;
      // The first line that differs.
      std::istringstream a(all[0]), b(all[r]);
      std::string lineA, lineB;
      while (std::getline(a, lineA) && std::getline(b, lineB))
        if (lineA != lineB)
          break;
      size_t eq = lineA.find('=');
      auto shown = [](std::string value) {
        return value.empty() ? std::string("not given") : value;
      };
      result = Status::error(
          "ranks 0 and " + std::to_string(r) +
          " were not launched with the same job: " + lineA.substr(0, eq) +
          " is " + shown(lineA.substr(eq + 1)) + " on rank 0 but " +
          shown(lineB.substr(lineB.find('=') + 1)) + " on rank " +
          std::to_string(r));
    }
  }
  // Every rank learns the outcome; rank 0 reports it.
  if (comm.allAgree(result.isOk()))
    return Status::ok();
  return comm.rank() == 0 ? result
                          : Status::error("the ranks disagree (see rank 0)");
}

/// What a resumed run must agree with its checkpoint on: the seed (the
/// dropout masks are keyed by seed and step, so resuming them takes the
/// checkpoint's; a different --seed given is refused rather than
/// ignored), the learning-rate schedule, and an iteration before --steps.
Status checkResume(Options &options, const Checkpoint &checkpoint) {
  auto field = [&](const std::string &key) {
    auto it = checkpoint.metadata.find(key);
    return it == checkpoint.metadata.end() ? std::string() : it->second;
  };
  if (!options.noLoadRng) {
    int64_t saved = std::strtoll(field("seed").c_str(), nullptr, 10);
    if (options.seedGiven && options.seed != saved)
      return Status::error(
          "flag --seed " + std::to_string(options.seed) +
          " differs from the seed " + std::to_string(saved) + " of " +
          checkpoint.dir +
          ", whose random streams a resumed run continues (--no-load-rng "
          "takes --seed instead)");
    options.seed = saved;
  }
  // --skip-train runs no schedule.
  for (const auto &[key, value] : options.skipTrain
                                      ? std::map<std::string, std::string>()
                                      : scheduleOf(options)) {
    std::string saved = field(key);
    // Numbers compared as numbers: a checkpoint written when 10 was spelled
    // "1e+01" resumes.
    char *savedEnd = nullptr, *valueEnd = nullptr;
    double savedNumber = std::strtod(saved.c_str(), &savedEnd);
    double valueNumber = std::strtod(value.c_str(), &valueEnd);
    bool sameNumber = !saved.empty() && !value.empty() && *savedEnd == '\0' &&
                      *valueEnd == '\0' && savedNumber == valueNumber;
    if (!saved.empty() && saved != value && !sameNumber)
      return Status::error(checkpoint.dir + ": trained with " + key + " " +
                           saved + ", but this run has " + value +
                           " (the learning-rate schedule continues only "
                           "unchanged; lr_decay_iters defaults to --steps)");
  }
  if (checkpoint.iteration >= options.steps && !options.skipTrain)
    return Status::error(
        options.load + ": the checkpoint is at iteration " +
        std::to_string(checkpoint.iteration) + ", not before --steps " +
        std::to_string(options.steps) + ": nothing left to train");
  return Status::ok();
}

/// --memory-report: the plan of every stage, printed and written as asked;
/// nothing runs.
Status reportMemory(const Options &options, const Artifact &artifact) {
  MemoryReport report;
  MTRT_RETURN_IF_ERROR(computeMemoryReport(artifact, 8, report));
  std::string text = memoryReportText(report);
  std::fputs(text.c_str(), stdout);
  for (const auto &[path, contents] :
       {std::pair{options.memoryReportJson, memoryReportJson(report)},
        std::pair{options.memoryReportSvg, memoryReportSvg(report)}}) {
    if (path.empty())
      continue;
    struct stat info;
    if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
      return Status::error(path + ": is not a regular file; only regular "
                                  "files are replaced");
    MTRT_RETURN_IF_ERROR(
        writeFileAtomically(path, {{contents.data(), contents.size()}}));
  }
  return Status::ok();
}

} // namespace

int openSession(int argc, char **argv, Session &session) {
  if (Status status = startLauncher(argc, argv, session.launcher); !status)
    return fail(status);
  Launcher &comm = *session.launcher;
  // Errors every rank sees alike are reported once, by rank 0.
  bool speak = session.speak = comm.rank() == 0;
  auto failOnce = [&](const Status &status) {
    return speak ? fail(status) : 1;
  };
  // Until the ranks know they run the same job, every check is agreed on
  // by all of them: an error on some ranks only would otherwise leave the
  // others waiting in their first collective.
  auto failAgreed = [&](const Status &status) {
    bool ok = status.isOk();
    if (comm.allAgree(ok))
      return 0;
    if (comm.allAgree(!ok))
      return failOnce(status);
    if (!ok)
      return failTogetherMessage(status, comm);
    return 1;
  };
  Options &options = session.options;
  if (int code = failAgreed(parseOptions(argc, argv, options)))
    return code;
  if (int code =
          failAgreed(checkSameJob(controlFlowFingerprint(options), comm)))
    return code;
  if (options.help) {
    session.helpOnly = true;
    return 0;
  }
  // Before anything slow (kernels compiled, a checkpoint read): a signal
  // during setup stops the run after its first step instead of killing it.
  if (options.exitSignalHandler) {
    session.exitSignal = std::make_unique<ExitSignalHandler>();
    if (int code = failAgreed(
            session.exitSignal->install(exitSignalNumber(options.exitSignal))))
      return code;
  }
  comm.setTimeout(options.timeoutMinutes * 60.0);
  // A test hook: MEGATRON_RUN_TEST_STALL="rank:step" makes that rank stop
  // answering before that step, as a stopped or wedged peer would.
  // MEGATRON_RUN_TEST_DIE="rank:step" kills that rank there, as a crash
  // or an out-of-memory kill would. MEGATRON_RUN_TEST_SIGNAL="rank:step"
  // raises --exit-signal on that rank there, as a scheduler would.
  for (auto [variable, field] :
       {std::pair{"MEGATRON_RUN_TEST_STALL", &options.stallAtStep},
        std::pair{"MEGATRON_RUN_TEST_DIE", &options.dieAtStep},
        std::pair{"MEGATRON_RUN_TEST_SIGNAL", &options.signalAtStep}})
    if (const char *value = std::getenv(variable)) {
      int rank = -1;
      long long step = 0;
      if (std::sscanf(value, "%d:%lld", &rank, &step) == 2 &&
          rank == comm.rank())
        *field = step;
    }
  // MEGATRON_RUN_TEST_SIGNAL="rank:0": the signal arrives during setup.
  if (options.signalAtStep == 0)
    std::raise(exitSignalNumber(options.exitSignal));
  Artifact &artifact = session.artifact;
  if (int code = failAgreed(loadArtifact(options.artifact, artifact)))
    return code;
  if (options.memoryReport || !options.memoryReportJson.empty() ||
      !options.memoryReportSvg.empty()) {
    session.reportOnly = true;
    return failAgreed(reportMemory(options, artifact));
  }
  Checkpoint &checkpoint = session.checkpoint;
  // Every rank must see the directory alike, or they would go on to
  // different collectives.
  bool fresh = loadsFromNoCheckpointYet(options);
  bool allFresh = comm.allAgree(fresh), noneFresh = comm.allAgree(!fresh);
  if (!allFresh && !noneFresh)
    return failOnce(Status::error(
        options.load + ": some ranks find a checkpoint here and some none "
                       "(is it on a file system every node shares?)"));
  if (allFresh) {
    if (speak)
      std::printf("load: %s holds no checkpoint yet; training from scratch "
                  "(--load is --save: a job's first launch, or one "
                  "restarted before its first save)\n",
                  options.load.c_str());
    options.load.clear();
    options.noLoadOptim = options.noLoadRng = false;
  }
  if (!options.load.empty()) {
    if (int code = failAgreed(resolveCheckpoint(options.load, checkpoint)))
      return code;
    // Checked on every rank and agreed on: ranks launched with different
    // flags reach the job check below only together (one failing alone
    // left the others waiting in their next collective).
    if (int code = failAgreed(checkResume(options, checkpoint)))
      return code;
    if (checkpoint.uncheckedShards > 0 && speak)
      std::fprintf(stderr,
                   "megatron-run: warning: %s: %lld of its %lld shards carry "
                   "no checksums (saved before megatron-run kept them): "
                   "read unchecked\n",
                   checkpoint.dir.c_str(),
                   static_cast<long long>(checkpoint.uncheckedShards),
                   static_cast<long long>(checkpoint.shardCount));
  }
  if (int code = failAgreed(
          checkSameJob(jobFingerprint(options, artifact, checkpoint), comm)))
    return code;
  if (artifact.worldSize != comm.size())
    return failOnce(
        Status::error(options.artifact + ": compiled for " +
                      std::to_string(artifact.worldSize) +
                      (artifact.worldSize == 1 ? " rank" : " ranks") +
                      " but launched on " + std::to_string(comm.size()) +
                      (artifact.worldSize == 1
                           ? " (run it without mpirun, or -np 1)"
                           : " (run it under mpirun -np " +
                                 std::to_string(artifact.worldSize) + ")")));
  if (Status status = comm.createCommunicator(artifact.gridShape, session.grid);
      !status)
    return failOnce(status);
  session.trainer = std::make_unique<Trainer>(options, artifact, comm,
                                              *session.grid, checkpoint);
  Trainer &trainer = *session.trainer;
  if (int code = failTogether(trainer.setup(), comm))
    return code;
  // Loaded: the shards' files are closed (a job of thousands of ranks
  // would otherwise train with as many descriptors held).
  checkpoint.shards.reset();
  if (speak) {
    int threads = ThreadPool::global().threads();
    std::printf(
        "megatron-run: %s, %d rank%s, micro-batch %lld x %lld tokens "
        "per rank, vocab %lld, %s, %d thread%s per "
        "rank\n",
        options.artifact.c_str(), comm.size(), comm.size() == 1 ? "" : "s",
        static_cast<long long>(trainer.batchSize()),
        static_cast<long long>(trainer.seqLen()),
        static_cast<long long>(trainer.vocabSize()),
        options.skipTrain ? "no steps (--skip-train)"
                          : (std::to_string(options.steps) + " steps").c_str(),
        threads, threads == 1 ? "" : "s");
    for (const RankProgram &program : artifact.programs)
      printPlan(program);
    for (const std::string &choice : trainer.deviceChoices())
      std::printf("%s\n", choice.c_str());
    std::printf("%s\n", trainer.startupLine().c_str());
  }
  return 0;
}

int runSession(Session &session) {
  if (session.reportOnly)
    return 0;
  Launcher &comm = *session.launcher;
  Trainer &trainer = *session.trainer;
  if (Status status = trainer.train(); !status) {
    fail(Status::error((comm.size() == 1
                            ? std::string()
                            : "rank " + std::to_string(comm.rank()) + ": ") +
                       status.message()));
    // Other ranks may be waiting in a collective: end them all. An error
    // every rank met at the same step ends each rank by itself, so that
    // no rank's abort cuts off another's report of it.
    if (comm.size() > 1) {
      if (!trainer.failedOnEveryRank())
        comm.abort(1);
      // Each rank has reported it before any leaves.
      comm.allAgree(false);
    }
    return 1;
  }
  trainer.printProfile();
  if (int code = failTogether(trainer.writeTrace(), comm))
    return code;
  if (int code = failTogether(trainer.save(), comm))
    return code;
  return 0;
}

int runMegatron(int argc, char **argv) {
  Session session;
  if (int code = openSession(argc, argv, session))
    return code;
  if (session.helpOnly) {
    if (session.speak)
      std::fputs(usageText().c_str(), stdout);
    return 0;
  }
  return runSession(session);
}

} // namespace mtrt::train
