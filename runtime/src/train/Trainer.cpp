//===- Trainer.cpp - One rank's training run over the device seam ---------===//

#include "train/Trainer.h"

#include "train/Devices.h"
#include "train/ExitSignal.h"

#include "mtrt/Artifact.h"
#include "mtrt/AtomicFile.h"
#include "mtrt/CheckpointShards.h"
#include "mtrt/Communicator.h"
#include "mtrt/Device.h"
#include "mtrt/EvaluationSlice.h"
#include "mtrt/ExecutionTrace.h"
#include "mtrt/FusedTensors.h"
#include "mtrt/HalfFloat.h"
#include "mtrt/Hash.h"
#include "mtrt/HuggingFaceWeights.h"
#include "mtrt/KernelProfile.h"
#include "mtrt/KernelSignatures.h"
#include "mtrt/Launcher.h"
#include "mtrt/LearningRate.h"
#include "mtrt/LossScaler.h"
#include "mtrt/MemoryReport.h"
#include "mtrt/ParamInit.h"
#include "mtrt/PeakFlops.h"
#include "mtrt/Safetensors.h"
#include "mtrt/Sharding.h"
#include "mtrt/Strings.h"
#include "mtrt/SyntheticCorpus.h"
#include "mtrt/ThreadPool.h"
#include "mtrt/TokenData.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace mtrt::train {

/// Checkpoint tensors that are buffers, not parameters, as Hugging Face's
/// `_keys_to_ignore_on_load_unexpected` lists them: GPT-2's causal-mask
/// buffers "h.N.attn.bias" and "h.N.attn.masked_bias", and the rotary
/// frequencies "*.rotary_emb.inv_freq" of older LLaMA conversions (their
/// checkpoints hold them; no model has them as parameters).
static bool isKnownNonParameter(const std::string &name) {
  if (endsWith(name, ".rotary_emb.inv_freq"))
    return true;
  if (name.rfind("h.", 0) != 0 && name.rfind("transformer.h.", 0) != 0)
    return false;
  return endsWith(name, ".attn.bias") || endsWith(name, ".attn.masked_bias");
}

/// "'a', 'b', 'c' and 4 more": the first names of a list, for messages.
static std::string firstNames(const std::vector<std::string> &names) {
  std::string listed;
  for (size_t i = 0; i < names.size() && i < 3; ++i)
    listed += (i ? ", '" : "'") + names[i] + "'";
  if (names.size() > 3)
    listed += " and " + std::to_string(names.size() - 3) + " more";
  return listed;
}

static std::string mib(int64_t bytes) {
  char text[64];
  std::snprintf(text, sizeof(text), "%10.3f MiB (%lld B)",
                double(bytes) / (1 << 20), static_cast<long long>(bytes));
  return text;
}

/// The memory plan of one program, from the artifact: rank 0 prints every
/// stage's (all ranks of a stage share it).
void printPlan(const RankProgram &program) {
  std::map<std::string, int64_t> bytes;
  for (const BufferDesc &buffer : program.buffers)
    if (!buffer.alias)
      bytes[buffer.kind] += buffer.bytes();
  std::printf("memory plan (stage %lld, every rank of it):\n",
              static_cast<long long>(program.stage));
  std::printf("  parameters        %s\n", mib(bytes["param"]).c_str());
  if (bytes["param_copy"] > 0)
    std::printf("  16-bit copies     %s  (of the parameters; written by "
                "AdamW)\n",
                mib(bytes["param_copy"]).c_str());
  std::printf("  optimizer state   %s\n",
              mib(bytes["exp_avg"] + bytes["exp_avg_sq"]).c_str());
  std::printf("  inputs            %s\n", mib(bytes["input"]).c_str());
  std::printf("  gradients         %s  (sum; transient)\n",
              mib(bytes["gradient"]).c_str());
  std::printf("  activations       %s  (sum; transient)\n",
              mib(bytes["activation"] + bytes["constant"]).c_str());
  std::printf("  transient region  %s  (activations and gradients share "
              "it by lifetime)\n",
              mib(program.arenaBytes - program.persistentBytes).c_str());
  std::printf("  planned peak      %s\n", mib(program.arenaBytes).c_str());
}

double secondsBetween(std::chrono::steady_clock::time_point from,
                      std::chrono::steady_clock::time_point to) {
  return std::chrono::duration<double>(to - from).count();
}

/// Everything one training run binds to the program's buffers.
class Trainer::Impl {
public:
  Impl(const Options &options, const Artifact &artifact, const Launcher &comm,
       const Communicator &grid, const Checkpoint &checkpoint)
      : options(options), checkpoint(checkpoint), artifact(artifact),
        program(specializeProgram(artifact, comm.rank())), comm(comm),
        grid(grid) {
    if (int64_t axis = artifact.axis("dp"); axis >= 0) {
      dataRank = program.coords[axis];
      dataRanks = artifact.gridShape[axis];
    }
  }

  Status setup() {
    DeviceOptions deviceOptions;
    // Without --threads: the cores of this rank's share of the node.
    hostThreads = options.threads > 0 ? int(options.threads) : coresPerRank();
    deviceOptions.hostThreads = hostThreads;
    deviceOptions.tf32 = options.tf32;
    std::string backend =
        options.device.empty() ? defaultBackend() : options.device;
    MTRT_RETURN_IF_ERROR(createDevice(backend, deviceOptions, device));
    // The grid first: preparing checks the program's collectives against it.
    device->setCommunicator(&grid);
    device->setPipelineAxis(artifact.axis("pp"));
    auto prepareStart = std::chrono::steady_clock::now();
    if (Status status = device->prepare(program); !status)
      return Status::error(options.artifact + ": stage " +
                           std::to_string(program.stage) + ": " +
                           status.message());
    // The data inputs: one tokens (first stage) and one labels (last
    // stage) buffer per microbatch; their shapes are the same in every
    // program, so the batch is read from whichever program has them.
    for (const RankProgram &any : artifact.programs)
      for (const BufferDesc &buffer : any.buffers) {
        if (buffer.kind != "input" ||
            (buffer.name != "tokens" && buffer.name != "labels"))
          continue;
        if (buffer.shape.size() != 2)
          return Status::error(options.artifact + ": the '" + buffer.name +
                               "' input is not [batch, seq]");
        batchSize = buffer.shape[0];
        seqLen = buffer.shape[1];
        microbatches = std::max(microbatches, buffer.microbatch + 1);
      }
    for (const BufferDesc &buffer : program.buffers)
      if (buffer.kind == "input" &&
          (buffer.name == "tokens" || buffer.name == "labels"))
        dataInputs.push_back(buffer.id);
    // The first stage reads the tokens, the last the labels.
    if (batchSize == 0 || !artifact.programs.front().find("input", "tokens") ||
        !artifact.programs.back().find("input", "labels"))
      return Status::error(options.artifact +
                           ": the program has no [batch, seq] tokens and "
                           "labels inputs");
    for (const RankProgram &any : artifact.programs)
      for (const Command &command : any.commands)
        if (command.kernel == "cross_entropy") {
          vocabSize = any.buffers[command.ins[0]].shape.back();
          // A vocab-parallel loss sees 1/parts of the vocabulary.
          if (command.has("vocab_grid_axis"))
            vocabSize *=
                artifact.gridShape[int64_t(command.get("vocab_grid_axis", 0))];
          // A padded vocabulary: the tokens are below its true size.
          vocabSize = int64_t(command.get("vocab_size", double(vocabSize)));
        } else if (command.kernel == "fused") {
          // A row kernel reading token ids is a fused cross-entropy, over
          // rows of the whole vocabulary (a norm's rows are the hidden
          // size).
          auto index = size_t(command.get("generated", 0));
          if (index >= any.generatedKernels.size())
            continue;
          const GeneratedKernel &kernel = any.generatedKernels[index];
          if (kernel.rowLength > 0 &&
              std::count(kernel.operandTypes.begin(), kernel.operandTypes.end(),
                         DType::I32) > 0)
            vocabSize =
                int64_t(command.get("vocab_size", double(kernel.rowLength)));
        }
    // The loss is computed on the last pipeline stage; its first rank
    // tells the others.
    int64_t pipeline = artifact.axis("pp");
    int64_t stages = pipeline < 0 ? 1 : artifact.gridShape[pipeline];
    lossRoot = int(artifact.worldSize / stages * (stages - 1));
    for (const char *role : {"step", "lr", "adam_beta1", "adam_beta2",
                             "adam_eps", "weight_decay", "clip_grad"}) {
      const BufferDesc *buffer = program.find("input", role);
      if (!buffer)
        return Status::error(options.artifact + ": the program has no '" +
                             role + "' input: is it a training step?");
      scalars[role] = buffer->id;
    }
    if (artifact.programs.back().outputs.count("loss") == 0)
      return Status::error(options.artifact + ": the program has no loss");
    MTRT_RETURN_IF_ERROR(setupPrecision());
    setupPeak();
    // Updates applied before the resumed iteration: fewer than it when
    // fp16 steps were skipped.
    updates = checkpoint.iteration;
    MTRT_RETURN_IF_ERROR(savedCount("optimizer_steps", checkpoint.iteration,
                                    "iteration", updates));
    // Adam's own step, which its bias correction divides by: the moments'
    // age. Fresh moments (--no-load-optim) start at step 1 again, as a new
    // torch.optim.AdamW's do; the learning-rate schedule goes on.
    adamSteps = updates;
    MTRT_RETURN_IF_ERROR(
        savedCount("adam_steps", updates, "optimizer_steps", adamSteps));
    if (options.noLoadOptim)
      adamSteps = 0;
    // Where the data goes on: after the samples the checkpoint's run read,
    // whatever its global batch was (a checkpoint without the count read a
    // global batch of this run's size a step).
    consumedAtResume = checkpoint.iteration * globalBatch();
    MTRT_RETURN_IF_ERROR(
        savedCount("consumed_samples", int64_t(1) << 62, "", consumedAtResume));

    MTRT_RETURN_IF_ERROR(parseStyle(options.decayStyle, schedule.style));
    schedule.maxLr = options.lr;
    schedule.minLr = options.minLr;
    schedule.warmupIters = options.warmupIters;
    schedule.decayIters =
        options.decayIters > 0 ? options.decayIters : options.steps;
    MTRT_RETURN_IF_ERROR(schedule.validate());

    auto parametersStart = std::chrono::steady_clock::now();
    startup.prepareSeconds = secondsBetween(prepareStart, parametersStart);
    MTRT_RETURN_IF_ERROR(prepareLog());
    MTRT_RETURN_IF_ERROR(planParameterCopies());
    MTRT_RETURN_IF_ERROR(bindParameters());
    startupPool.reset(); // its threads are done
    startupHalves = {};
    auto dataStart = std::chrono::steady_clock::now();
    startup.parameterSeconds = secondsBetween(parametersStart, dataStart);
    MTRT_RETURN_IF_ERROR(checkOutputsWritable());
    Status bound = bindData();
    if (bound)
      bound = setupEvaluation();
    startup.dataSeconds =
        secondsBetween(dataStart, std::chrono::steady_clock::now());
    return bound;
  }

  /// Where the start went, for the run's header: a 1.3B model's took
  /// minutes on a GPU machine before anything said why.
  std::string startupLine() const {
    auto format = [](double seconds) {
      char text[32];
      std::snprintf(text, sizeof(text), "%.1f s", seconds);
      return std::string(text);
    };
    std::string device = format(startup.prepareSeconds);
    if (double kernels = this->device ? this->device->kernelBuildSeconds() : 0;
        kernels > 0)
      device += ", of which compiling the generated kernels " + format(kernels);
    std::string parameters = format(startup.parameterSeconds);
    if (parametersInitialized)
      parameters += ", initialized on " + std::to_string(hostThreads) +
                    (hostThreads == 1 ? " thread" : " threads");
    return "startup: " +
           format(startup.prepareSeconds + startup.parameterSeconds +
                  startup.dataSeconds) +
           " (device " + device + "; parameters " + parameters + "; data " +
           format(startup.dataSeconds) + ")";
  }

  /// Fails before training, not after it, when a file the run will write
  /// cannot be created.
  /// The files written after training (checkpoint, trace) are checked
  /// before it starts, so that no run is lost to a bad path at its end.
  Status checkOutputsWritable() const {
    // A file `probePath` can be created, and is removed again.
    auto probe = [](const std::string &probePath) {
      std::FILE *file = std::fopen(probePath.c_str(), "wb");
      if (!file)
        return false;
      std::fclose(file);
      std::remove(probePath.c_str());
      return true;
    };
    for (const std::string &path : {options.saveParams, options.trace}) {
      if (path.empty())
        continue;
      struct stat info;
      if (stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode))
        return Status::error(path + ": is a directory, not a file to write");
      // Only regular files are ever replaced (as root, --save-params
      // /dev/null would otherwise replace the device node with a file).
      if (stat(path.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
        return Status::error(path + ": is not a regular file; only regular "
                                    "files are replaced");
      // Both are written to this temporary file, then renamed into place.
      if (!probe(path + ".tmp"))
        return Status::error(path + ": cannot write here (" +
                             std::strerror(errno) + ")");
    }
    if (!options.save.empty()) {
      struct stat info;
      if (stat(options.save.c_str(), &info) == 0 && !S_ISDIR(info.st_mode))
        return Status::error(options.save +
                             ": is not a directory (--save needs one, or a "
                             "path to create it at)");
      // Created now (as the first save would), and a file written in it:
      // a missing parent or a read-only directory fails here, not at the
      // first save after hours of training.
      if (::mkdir(options.save.c_str(), 0755) != 0 && errno != EEXIST)
        return Status::error(options.save +
                             ": cannot create the checkpoint directory (" +
                             std::strerror(errno) + ")");
      if (!probe(options.save + "/.write-probe-" + std::to_string(::getpid()) +
                 ".tmp"))
        return Status::error(options.save +
                             ": cannot write checkpoints here (" +
                             std::strerror(errno) + ")");
      // The tracker each save renames into place must be replaceable.
      std::string tracker = options.save + "/latest_checkpointed_iteration.txt";
      if (stat(tracker.c_str(), &info) == 0 && !S_ISREG(info.st_mode))
        return Status::error(tracker + ": is not a regular file; each "
                                       "checkpoint replaces it");
    }
    return Status::ok();
  }

  /// A count the checkpoint's metadata states (`key`), into `count` where
  /// it does (older checkpoints lack adam_steps): an integer from 0 to
  /// `most` (the metadata field `bound`, where one bounds it), or an error
  /// naming the checkpoint.
  Status savedCount(const char *key, int64_t most, const std::string &bound,
                    int64_t &count) const {
    auto it = checkpoint.metadata.find(key);
    if (it == checkpoint.metadata.end())
      return Status::ok();
    char *end = nullptr;
    errno = 0;
    long long saved = std::strtoll(it->second.c_str(), &end, 10);
    if (it->second.empty() || *end != '\0' || errno || saved < 0 ||
        saved > most)
      return Status::error(checkpoint.dir + ": " + key + " '" + it->second +
                           "' is not a count up to " +
                           (bound.empty() ? "" : bound + " ") +
                           std::to_string(most));
    count = saved;
    return Status::ok();
  }

  Status bindParameters() {
    std::map<std::string, const ParamDesc *> described;
    for (const ParamDesc &param : artifact.params)
      described[param.name] = &param;
    // The source: --load-params (parameters), --load (parameters and their
    // optimizer state), or none (initialized as the model states).
    bool loadOptimizer = checkpoint.iteration > 0 && !options.noLoadOptim;
    auto tensorName = [](const BufferDesc &buffer) {
      return buffer.kind == "param" ? buffer.name
                                    : buffer.name + "::" + buffer.kind;
    };
    HuggingFaceWeights paramsFile;
    // The published tensors that hold several parameters (Phi-3's
    // qkv_proj) read as the parameters they hold.
    FusedTensorView weights(paramsFile, artifact.params);
    const TensorSource *source = nullptr;
    if (checkpoint.iteration > 0) {
      source = checkpoint.shards.get();
    } else if (!options.loadParams.empty()) {
      std::set<std::string> modelNames;
      for (const auto &entry : described) {
        modelNames.insert(entry.first);
        if (!entry.second->fusedIn.empty())
          modelNames.insert(entry.second->fusedIn);
      }
      MTRT_RETURN_IF_ERROR(
          HuggingFaceWeights::open(options.loadParams, modelNames, paramsFile));
      source = &weights;
    }
    if (source) {
      // Strict by default: a tensor the model does not have means the
      // checkpoint is of another model (more layers, an untied head).
      std::vector<std::string> unexpected;
      for (const std::string &name : source->names()) {
        size_t sep = name.find("::");
        std::string param = name.substr(0, sep);
        std::string kind =
            sep == std::string::npos ? "param" : name.substr(sep + 2);
        bool known =
            described.count(param) &&
            (kind == "param" || kind == "exp_avg" || kind == "exp_avg_sq");
        // A tied model's head is its embedding: Hugging Face files (a
        // GPT2LMHeadModel's state dict, older conversions) may still hold
        // it as lm_head.weight (language_model.lm_head.weight in a
        // multimodal model's), ignored where it equals the embedding (a
        // trained untied head stays an error).
        const std::string head = "lm_head.weight";
        if (name.size() >= head.size() &&
            name.compare(name.size() - head.size(), head.size(), head) == 0 &&
            !described.count(name) && source == &weights) {
          std::string prefix = name.substr(0, name.size() - head.size());
          for (const char *embedding :
               {"wte.weight", "model.embed_tokens.weight"})
            if (described.count(prefix + embedding) &&
                paramsFile.sameTensor(name, prefix + embedding))
              known = true;
        }
        if (!known && !isKnownNonParameter(name))
          unexpected.push_back(name);
      }
      // --no-strict-load is for a parameter file; a training checkpoint
      // holds exactly its model's state.
      const std::string remedy = source == &weights
                                     ? "--no-strict-load ignores them"
                                     : "the checkpoint is of another model";
      if (!unexpected.empty() && !options.nonStrictLoad) {
        return Status::error(
            source->location() + ": " + std::to_string(unexpected.size()) +
            " tensor(s) the model does not have: " + firstNames(unexpected) +
            " (" + remedy + ")");
      }
      if (!unexpected.empty() && comm.rank() == 0)
        std::printf("load: ignoring %zu tensor(s) the model does not have "
                    "(--no-strict-load)\n",
                    unexpected.size());
      // With --no-strict-load, the parameters the source lacks are
      // initialized: named, since a file of another model (or of other
      // names) would otherwise train from random weights quietly.
      std::vector<std::string> absent;
      for (const ParamDesc &param : artifact.params)
        if (!source->contains(param.name))
          absent.push_back(param.name);
      if (!absent.empty() && options.nonStrictLoad && comm.rank() == 0) {
        std::printf("load: initializing %zu of the model's %zu parameters "
                    "that %s lacks: %s (--no-strict-load)\n",
                    absent.size(), artifact.params.size(),
                    source->location().c_str(), firstNames(absent).c_str());
      }
    }
    // Parameters initialized as the model states: drawn on the host's
    // threads after the loop (initializeParameters).
    std::vector<ParameterToInitialize> initializing;
    for (const BufferDesc &buffer : program.buffers) {
      bool optimizerState =
          buffer.kind == "exp_avg" || buffer.kind == "exp_avg_sq";
      if (buffer.alias ||
          !(buffer.kind == "param" || (optimizerState && loadOptimizer)))
        continue;
      std::string name = tensorName(buffer);
      // Without --load-params, or (with --no-strict-load) for a tensor the
      // checkpoint lacks: initialized as the model states.
      bool initialize =
          !source || (options.nonStrictLoad && !source->contains(name));
      if (initialize && optimizerState)
        continue; // fresh optimizer state: zero, as the arena starts
      if (initialize) {
        // As the model states (mt.init); the parameter table has every
        // parameter buffer's entry (the loader checks it).
        const ParamDesc &param = *described.at(buffer.name);
        if (param.init.kind == ParamInitSpec::Kind::None)
          return Status::error(
              options.artifact + ": parameter '" + buffer.name +
              "' states no initializer (mt.init): load it with "
              "--load-params");
        initializing.push_back({&buffer, &param});
        continue;
      }
      if (!source->contains(name))
        return Status::error(
            source->location() + ": missing tensor '" + name +
            "' that the model needs (" +
            (source == &weights
                 ? std::string("--no-strict-load initializes it instead")
                 : "the checkpoint is of another model") +
            ")");
      // Filled on the host, then uploaded to the device whole.
      std::vector<float> host(size_t(buffer.numElements()), 0.0f);
      float *values = host.data();
      auto upload = [&] { return uploadParameter(buffer, host); };
      // A sharded buffer holds runs of the full tensor (a ZeRO piece, or a
      // tensor-parallel split); every rank reads only those. The
      // checkpoint's shape: the full tensor without padding rows, which are
      // zero and lie after the real ones.
      std::vector<int64_t> fullShape = checkpointShapeOf(buffer);
      int64_t valid = validElementsOf(buffer);
      std::vector<ElementRun> runs = shardRuns(buffer);
      std::string dtype;
      std::vector<int64_t> shape;
      MTRT_RETURN_IF_ERROR(source->info(name, dtype, shape));
      // Hugging Face's weights are widened to F32 as they are read; a
      // training checkpoint holds F32.
      bool readable = source == &weights ? HuggingFaceWeights::readsDtype(dtype)
                                         : dtype == "F32";
      if (!readable)
        return Status::error(
            source->location() + ": tensor '" + name + "' has dtype " + dtype +
            (source == &weights ? ", expected F32, BF16, F16 or F64"
                                : ", expected F32"));
      if (shape != fullShape) {
        std::string expected, got;
        for (int64_t d : fullShape)
          expected += (expected.empty() ? "" : ", ") + std::to_string(d);
        for (int64_t d : shape)
          got += (got.empty() ? "" : ", ") + std::to_string(d);
        return Status::error(source->location() + ": tensor '" + name +
                             "' has shape [" + got + "], expected [" +
                             expected + "]");
      }
      // Each rank reads only its own piece of the full tensor; padding
      // rows are zero.
      float *dst = values;
      for (const ElementRun &run : runs) {
        int64_t real =
            std::max<int64_t>(0, std::min(run.count, valid - run.offset));
        if (real > 0)
          MTRT_RETURN_IF_ERROR(
              source->readRuns(name, {{run.offset, real}}, dst));
        // A loaded inf or NaN would only surface as a non-finite loss
        // steps later; the file is refused where the value lies.
        if (const float *bad = std::find_if(
                dst, dst + real, [](float v) { return !std::isfinite(v); });
            bad != dst + real)
          return Status::error(source->location() + ": tensor '" + name +
                               "' holds " + number(*bad) + " at element " +
                               std::to_string(run.offset + (bad - dst)) +
                               ": a trained state is finite");
        std::fill(dst + real, dst + run.count, 0.0f);
        dst += run.count;
      }
      MTRT_RETURN_IF_ERROR(upload());
    }
    return initializeParameters(initializing);
  }

  /// The 16-bit copy of each parameter that has one (buffer kind
  /// param_copy: the step reads it instead of casting the parameter, and
  /// its AdamW rewrites it), by the parameter's name, as the multi_adamw
  /// commands pair them (their kernel signature holds that each copy is
  /// its parameter's, of its shape, in 16 bits). uploadParameter fills it
  /// whenever the parameter is uploaded, however that was initialized or
  /// loaded; checkpoints hold no copies.
  Status planParameterCopies() {
    for (const Command &command : program.commands)
      if (command.kernel == "multi_adamw") {
        const MultiAdamWLayout layout(command);
        for (size_t k = 0; k < layout.copies; ++k)
          copyOf[program.buffers[size_t(command.ins[layout.param(k)])].name] =
              &program.buffers[size_t(command.ins[layout.copyIn(k)])];
      }
    // Any other copy would be filled once, then go stale as its parameter
    // trains.
    for (const BufferDesc &copy : program.buffers) {
      auto paired = copyOf.find(copy.name);
      if (copy.kind == "param_copy" && !copy.alias &&
          (paired == copyOf.end() || paired->second->id != copy.id))
        return Status::error(
            options.artifact + ": the 16-bit copy of parameter '" + copy.name +
            "' (buffer " + std::to_string(copy.id) +
            ") is rewritten by no multi_adamw: it would go stale");
    }
    return Status::ok();
  }

  /// The host's threads for the start's work (initializing parameters,
  /// rounding their copies), made when first needed and released once the
  /// parameters are bound: the process's pool is the CPU backend's (one
  /// thread under CUDA).
  ThreadPool &hostPool() {
    if (!startupPool)
      startupPool = std::make_unique<ThreadPool>(hostThreads);
    return *startupPool;
  }

  /// Uploads `buffer`'s values (a parameter or its optimizer state) and,
  /// for a parameter with a 16-bit copy, the copy: the values rounded as a
  /// cast rounds them (mtrt/HalfFloat.h), on the host's threads, from the
  /// host's values (no download).
  Status uploadParameter(const BufferDesc &buffer,
                         const std::vector<float> &values) {
    return uploadParameter(buffer, values.data(), int64_t(values.size()));
  }
  Status uploadParameter(const BufferDesc &buffer, const float *values,
                         int64_t count) {
    MTRT_RETURN_IF_ERROR(
        device->upload(buffer.id, values, count * int64_t(sizeof(float))));
    auto copy = copyOf.find(buffer.name);
    if (buffer.kind != "param" || copy == copyOf.end())
      return Status::ok();
    const bool bf16 = copy->second->dtype == DType::BF16;
    if (startupHalves.size() < size_t(count))
      startupHalves.resize(size_t(count));
    hostPool().parallelFor(
        count, int64_t(1) << 20, [&](int64_t begin, int64_t end) {
          narrowToHalves(values + begin, startupHalves.data() + begin,
                         end - begin, bf16);
        });
    return device->upload(copy->second->id, startupHalves.data(),
                          count * int64_t(sizeof(uint16_t)));
  }

  struct ParameterToInitialize {
    const BufferDesc *buffer;
    const ParamDesc *param;
  };

  /// Initializes `parameters` as the model states and uploads them, on
  /// the host's threads: each tensor split into ranges of at least
  /// kInitRangeElements (the same bits whatever the split), a window of
  /// tensors of at most kInitWindowBytes (or one larger tensor) at a time,
  /// which bounds the host memory held beside the device's (256 MiB: still
  /// 64 ranges for the threads to share, and few pages for the kernel to
  /// zero: a 1 GiB window's first touch took 4.6 s on a 2-core Intel Xeon
  /// VM). Each tensor's generator makes one pass of skips, leaving a copy
  /// at each range's start (ParameterDraws), then the ranges draw their
  /// values; every window reuses one buffer. On one thread this was most of
  /// a 1.3B model's start on a GPU machine (about 50 s; 44 ns a value on a
  /// 2-core Intel Xeon); on 16 threads, each range skipping from its
  /// tensor's start into a fresh 1 GiB window, 12.7 s.
  Status
  initializeParameters(const std::vector<ParameterToInitialize> &parameters) {
    constexpr int64_t kInitWindowBytes = int64_t(1) << 28;
    constexpr int64_t kInitRangeElements = int64_t(1) << 20;
    if (parameters.empty())
      return Status::ok();
    ThreadPool &pool = hostPool();
    parametersInitialized = true;
    // The window's tensors, each in full at its offset (a sharded buffer
    // keeps runs of it), and a sharded buffer's runs gathered: buffers
    // reused from window to window, since fresh pages cost the kernel's
    // zeroing of them each time.
    std::vector<float> window, mine;
    for (size_t begin = 0; begin < parameters.size();) {
      size_t end = begin;
      int64_t bytes = 0;
      do
        bytes += parameterElements(*parameters[end++].param) *
                 int64_t(sizeof(float));
      while (end < parameters.size() &&
             bytes + parameterElements(*parameters[end].param) *
                         int64_t(sizeof(float)) <=
                 kInitWindowBytes);
      struct Tensor {
        const BufferDesc *buffer;
        const ParamDesc *param;
        int64_t values, extent, offset;
        size_t firstRange, ranges;
      };
      struct Range {
        size_t tensor;
        int64_t first, last;
      };
      std::vector<Tensor> tensors;
      std::vector<Range> ranges;
      int64_t total = 0;
      for (size_t t = begin; t < end; ++t) {
        const BufferDesc &buffer = *parameters[t].buffer;
        int64_t n = parameterElements(*parameters[t].param);
        // The buffer's whole extent (its rank's part times the parts),
        // zero past the tensor's values where the layout pads it.
        int64_t extent =
            buffer.sharded()
                ? buffer.numElements() * buffer.shardCount * buffer.pieceCount
                : buffer.numElements();
        Tensor tensor{&buffer, parameters[t].param, n, std::max(n, extent),
                      total,   ranges.size(),       0};
        // About a range per thread, none shorter than kInitRangeElements.
        int64_t step = std::max(kInitRangeElements, n / pool.threads() + 1);
        step += step % 2; // ranges start at even elements
        for (int64_t first = 0; first < n; first += step)
          ranges.push_back({tensors.size(), first, std::min(n, first + step)});
        tensor.ranges = ranges.size() - tensor.firstRange;
        total += tensor.extent;
        tensors.push_back(tensor);
      }
      if (window.size() < size_t(total))
        window.resize(size_t(total));

      // Each tensor's pass of skips, the largest first, then the ranges.
      std::vector<size_t> bySize(tensors.size());
      for (size_t t = 0; t < bySize.size(); ++t)
        bySize[t] = t;
      std::stable_sort(bySize.begin(), bySize.end(), [&](size_t a, size_t b) {
        return tensors[a].values > tensors[b].values;
      });
      std::vector<std::optional<ParameterDraws>> starts(ranges.size());
      pool.forEach(int64_t(bySize.size()), [&](int64_t i) {
        const Tensor &tensor = tensors[bySize[size_t(i)]];
        ParameterDraws draws(*tensor.param, uint64_t(options.seed));
        for (size_t r = 0; r < tensor.ranges; ++r) {
          draws.skipTo(ranges[tensor.firstRange + r].first);
          starts[tensor.firstRange + r] = draws;
        }
        float *values = window.data() + tensor.offset;
        std::fill(values + tensor.values, values + tensor.extent, 0.0f);
      });
      pool.forEach(int64_t(ranges.size()), [&](int64_t i) {
        const Range &range = ranges[size_t(i)];
        starts[size_t(i)]->fill(window.data() + tensors[range.tensor].offset,
                                range.first, range.last);
        starts[size_t(i)].reset();
      });
      for (const Tensor &tensor : tensors) {
        const float *values = window.data() + tensor.offset;
        int64_t count = tensor.extent;
        if (tensor.buffer->sharded()) {
          // A ZeRO piece, or a tensor-parallel split: this rank keeps the
          // runs of the full tensor it holds (and a padded piece zeros).
          mine.assign(size_t(tensor.buffer->numElements()), 0.0f);
          float *dst = mine.data();
          for (const ElementRun &run : shardRuns(*tensor.buffer))
            dst = std::copy_n(values + run.offset, run.count, dst);
          values = mine.data();
          count = tensor.buffer->numElements();
        }
        MTRT_RETURN_IF_ERROR(uploadParameter(*tensor.buffer, values, count));
      }
      begin = end;
    }
    return Status::ok();
  }

  Status bindData() {
    std::string path = options.data;
    if (path.empty()) {
      // The built-in corpus, written once to a temporary token file so that
      // it is read exactly as --data files are.
      SyntheticCorpusOptions corpusOptions;
      if (options.corpusVocabGiven && options.corpusVocab > vocabSize)
        return Status::error("flag --corpus-vocab " +
                             std::to_string(options.corpusVocab) +
                             " is larger than the model's vocabulary (" +
                             std::to_string(vocabSize) + " tokens)");
      corpusOptions.vocabSize = std::min(options.corpusVocab, vocabSize);
      corpusOptions.order = options.corpusOrder;
      corpusOptions.seed = uint64_t(options.seed);
      corpusOptions.successors =
          std::min<int64_t>(corpusOptions.successors, corpusOptions.vocabSize);
      corpus = std::make_unique<SyntheticCorpus>();
      if (Status status = SyntheticCorpus::create(corpusOptions, *corpus);
          !status)
        return Status::error(status.message() +
                             " (set by --corpus-vocab, --corpus-order and the "
                             "model's vocabulary)");
      // --skip-train reads its validation stream only.
      if (options.skipTrain)
        return Status::ok();
      MTRT_RETURN_IF_ERROR(createTemporaryFile(
          "megatron-run-corpus", "the synthetic corpus's temporary file",
          temporaryCorpus));
      // The corpus's tokens for every step (read in the step's order),
      // generated in memory and written whole: at most kMaxSyntheticTokens,
      // beyond which a run needs a token file.
      int64_t needed = 0;
      if (__builtin_mul_overflow(samplesBefore(options.steps + 1), seqLen,
                                 &needed) ||
          __builtin_add_overflow(needed, int64_t(1), &needed) ||
          needed > kMaxSyntheticTokens) {
        std::remove(temporaryCorpus.c_str());
        temporaryCorpus.clear();
        return Status::error(
            "--steps " + std::to_string(options.steps) + " of " +
            std::to_string(globalBatch() * seqLen) +
            " tokens each need more than the built-in corpus's " +
            std::to_string(kMaxSyntheticTokens) +
            " tokens: train on a token file (--data)");
      }
      MTRT_RETURN_IF_ERROR(
          corpus->writeTokenFile(path = temporaryCorpus, needed));
    }
    MTRT_RETURN_IF_ERROR(TokenData::open(path, data));
    // The corpus is mapped: its name can go now, so that a killed run
    // leaves no file behind.
    if (!temporaryCorpus.empty()) {
      std::remove(temporaryCorpus.c_str());
      temporaryCorpus.clear();
    }
    if (options.skipTrain)
      return Status::ok();
    if (!options.split.empty()) {
      // --split: training reads the first part of the samples only.
      std::vector<int64_t> parts =
          splitSamples(options.split, (data.numTokens() - 1) / seqLen);
      int64_t trainSamples = parts[1];
      if (samplesBefore(options.steps + 1) > trainSamples)
        return Status::error(
            "flag --split: its training part of " + data.path() + " holds " +
            std::to_string(trainSamples) + " of the " +
            std::to_string(parts[3]) + " samples of " +
            std::to_string(seqLen + 1) + " tokens, but --steps " +
            std::to_string(options.steps) + " read " +
            std::to_string(samplesBefore(options.steps + 1)));
    }
    return data.checkCovers(options.steps - checkpoint.iteration, globalBatch(),
                            seqLen, vocabSize,
                            samplesBefore(checkpoint.iteration + 1));
  }

  /// The per-step log (--log, rank 0): a new file, or on a resume the
  /// file's lines up to the checkpoint's iteration kept and the resumed
  /// steps appended, so that a job restarted with the same command (the
  /// README's recipe) logs each step once: the steps a killed run logged
  /// past its last checkpoint are dropped, as they are trained again.
  Status openLog(std::FILE *&log) {
    if (resumedLog) {
      std::string kept;
      for (const auto &[step, text] : *resumedLog)
        kept += text + "\n";
      // Through a symbolic link, its target is rewritten (the rename
      // would replace the link by a file, leaving the target stale).
      std::string target = options.log;
      if (char *resolved = ::realpath(options.log.c_str(), nullptr)) {
        target = resolved;
        std::free(resolved);
      }
      const std::string temporary = target + ".tmp";
      std::FILE *out = std::fopen(temporary.c_str(), "w");
      bool written = out && std::fputs(kept.c_str(), out) >= 0;
      if (out && std::fclose(out) != 0)
        written = false;
      if (!written || std::rename(temporary.c_str(), target.c_str()))
        return Status::error(options.log + ": cannot rewrite the log (" +
                             std::strerror(errno) + ")");
    }
    log = std::fopen(options.log.c_str(), checkpoint.iteration > 0 ? "a" : "w");
    if (!log)
      return Status::error(options.log + ": cannot open the log for writing (" +
                           std::strerror(errno) + ")");
    return Status::ok();
  }

  /// The --log file (rank 0), before the parameters load, so that what
  /// is wrong with it is refused by every rank together, not after minutes
  /// of loading: a directory; on a resume, a file that is no log. A
  /// resume's records up to the checkpoint are kept for openLog.
  Status prepareLog() {
    if (options.log.empty() || comm.rank() != 0)
      return Status::ok();
    struct stat info;
    if (::stat(options.log.c_str(), &info) != 0)
      return errno == ENOENT || checkpoint.iteration <= 0
                 ? Status::ok()
                 : Status::error(options.log +
                                 ": cannot read the log to resume it (" +
                                 std::strerror(errno) + ")");
    if (S_ISDIR(info.st_mode))
      return Status::error(options.log +
                           ": is a directory, not a file to write");
    if (checkpoint.iteration <= 0)
      return Status::ok();
    // A device, a FIFO or a terminal is appended to as it is: reading a
    // FIFO would wait forever, and the rewrite's rename would replace
    // /dev/null by a file.
    if (!S_ISREG(info.st_mode))
      return Status::ok();
    std::ifstream previous(options.log);
    if (!previous)
      return Status::error(options.log +
                           ": cannot read the log to resume it (" +
                           std::strerror(errno) + ")");
    // The records kept, by step: rewritten in step order, the last of a
    // step's records winning.
    std::map<int64_t, std::string> records;
    std::string line;
    int64_t lineNumber = 0;
    bool unfinished = false;
    while (std::getline(previous, line)) {
      ++lineNumber;
      // A log edited where lines end in CRLF is still the log.
      if (!line.empty() && line.back() == '\r')
        line.pop_back();
      long long step = 0;
      bool record = std::sscanf(line.c_str(), "{\"step\": %lld", &step) == 1;
      // Only the last line may be one the killed run left unfinished; any
      // other line that is no step record means the file is not a log
      // this run wrote, which rewriting it would destroy.
      if (unfinished || (!record && !line.empty()))
        return Status::error(
            options.log + ": line " +
            std::to_string(lineNumber - (unfinished ? 1 : 0)) +
            " is no step record: not a log megatron-run wrote, which the "
            "resumed run would rewrite (give --log another file)");
      unfinished = record && line.back() != '}';
      // A line the killed run left unfinished is not kept.
      if (record && !unfinished && step >= 1 && step <= checkpoint.iteration)
        records[step] = line;
    }
    // Steps the log lacks (it was cut, or written by a run killed
    // before logging them) stay missing: said, not hidden.
    int64_t missing = checkpoint.iteration - int64_t(records.size());
    if (missing > 0) {
      int64_t gapStart = 1;
      for (const auto &[step, text] : records) {
        if (step > gapStart)
          break;
        gapStart = step + 1;
      }
      int64_t gapEnd = checkpoint.iteration;
      if (auto next = records.upper_bound(gapStart); next != records.end())
        gapEnd = next->first - 1;
      std::string first = gapStart == gapEnd
                              ? "step " + std::to_string(gapStart)
                              : "steps " + std::to_string(gapStart) + " to " +
                                    std::to_string(gapEnd);
      std::fprintf(stderr,
                   "megatron-run: warning: %s lacks %lld of the %lld "
                   "steps before the checkpoint (%s%s): they stay "
                   "missing from the log\n",
                   options.log.c_str(), static_cast<long long>(missing),
                   static_cast<long long>(checkpoint.iteration), first.c_str(),
                   missing > gapEnd - gapStart + 1 ? ", and others" : "");
    }
    resumedLog = std::move(records);
    return Status::ok();
  }

  Status train() {
    std::FILE *log = nullptr;
    if (!options.log.empty() && comm.rank() == 0)
      MTRT_RETURN_IF_ERROR(openLog(log));
    double floor = corpus ? corpus->lossFloorNats(seqLen) : 0.0;
    bool speak = comm.rank() == 0;
    if (corpus && speak)
      std::printf("data: synthetic order-%lld Markov corpus over %lld "
                  "tokens, entropy rate %.4f nats/token; loss floor for "
                  "%lld-token windows %.4f\n",
                  static_cast<long long>(options.corpusOrder),
                  static_cast<long long>(corpus->options().vocabSize),
                  corpus->entropyRateNats(), static_cast<long long>(seqLen),
                  floor);
    else if (speak)
      std::printf("data: %s (%s, %lld tokens)\n", data.path().c_str(),
                  data.format().c_str(),
                  static_cast<long long>(data.numTokens()));
    int64_t lossId =
        program.outputs.count("loss") ? program.outputs.at("loss") : -1;
    int64_t normId = program.outputs.count("grad_norm")
                         ? program.outputs.at("grad_norm")
                         : -1;
    // --skip-train: the parameters as loaded, evaluated once, as
    // Megatron-LM's "on validation set" after its (skipped) training.
    if (options.skipTrain) {
      double validationLoss = 0;
      std::optional<double> testLoss;
      MTRT_RETURN_IF_ERROR(
          evaluateValidation(checkpoint.iteration, lossId, validationLoss));
      return evaluateTest(checkpoint.iteration, lossId, testLoss);
    }
    if (options.profile)
      device->setTrace(&trace);
    if (!options.trace.empty()) {
      // One origin for every rank: rank 0's monotonic clock, which the ranks
      // of its host share. A rank whose clock is far from it runs on another
      // host: it starts its own clock at the barrier instead.
      comm.allAgree(true);
      double mine = ExecutionTrace::clockUs(), origin = mine;
      MTRT_RETURN_IF_ERROR(comm.broadcast(0, origin));
      trace.start(std::abs(mine - origin) < 1e6 ? origin : mine);
      device->setTrace(&trace);
    }
    if (checkpoint.iteration > 0 && comm.rank() == 0)
      std::printf("resuming from %s (%lld shard%s) at iteration %lld, "
                  "data from sample %lld%s%s\n",
                  checkpoint.dir.c_str(),
                  static_cast<long long>(checkpoint.shardCount),
                  checkpoint.shardCount == 1 ? "" : "s",
                  static_cast<long long>(checkpoint.iteration),
                  static_cast<long long>(consumedAtResume),
                  options.noLoadOptim ? ", fresh optimizer state" : "",
                  options.noLoadRng ? ", seed from --seed" : "");
    for (int64_t step = checkpoint.iteration + 1; step <= options.steps;
         ++step) {
      if (step == options.stallAtStep)
        std::this_thread::sleep_for(std::chrono::hours(1));
      if (step == options.dieAtStep)
        std::raise(SIGKILL);
      if (step == options.signalAtStep)
        std::raise(exitSignalNumber(options.exitSignal));
      auto start = std::chrono::steady_clock::now();
      MTRT_RETURN_IF_ERROR(fillBatch(samplesBefore(step)));
      // Megatron's update k runs with the schedule at k - 1 completed
      // updates; skipped steps do not count.
      double lr = schedule.at(updates);
      MTRT_RETURN_IF_ERROR(setScalar("step", double(adamSteps + 1)));
      double scaleUsed = scaler.scale;
      if (lossScaling)
        MTRT_RETURN_IF_ERROR(setScalar("loss_scale", scaleUsed));
      MTRT_RETURN_IF_ERROR(setScalar("lr", lr));
      MTRT_RETURN_IF_ERROR(setScalar("adam_beta1", options.beta1));
      MTRT_RETURN_IF_ERROR(setScalar("adam_beta2", options.beta2));
      MTRT_RETURN_IF_ERROR(setScalar("adam_eps", options.eps));
      MTRT_RETURN_IF_ERROR(setScalar("weight_decay", options.weightDecay));
      MTRT_RETURN_IF_ERROR(setScalar("clip_grad", options.clipGrad));
      if (Status status =
              device->executeStep(uint64_t(options.seed), uint64_t(step));
          !status)
        return Status::error("step " + std::to_string(step) + ": " +
                             status.message());
      double seconds = secondsBetween(start, std::chrono::steady_clock::now());
      double loss = 0.0, norm = 0.0;
      if (lossId >= 0)
        if (Status status = readScalar(lossId, loss); !status)
          return Status::error("step " + std::to_string(step) +
                               ": reading the loss: " + status.message());
      if (Status status = comm.broadcast(lossRoot, loss); !status)
        return status;
      if (normId >= 0)
        if (Status status = readScalar(normId, norm); !status)
          return Status::error(
              "step " + std::to_string(step) +
              ": reading the gradient norm: " + status.message());
      // Loss scaling: scaled gradients that overflowed made the norm
      // non-finite, and the step left every parameter and moment as it was
      // (mt.clip_scale, mt.adamw). The scale backs off; training goes on.
      bool overflow = lossScaling && !std::isfinite(norm);
      if (lossScaling)
        scaler.update(overflow);
      if (overflow) {
        ++skippedSteps;
      } else {
        ++updates;
        ++adamSteps;
      }
      // The loss was broadcast and the norm reduced over every rank: each
      // stops here, at this step.
      if (!std::isfinite(loss) && !overflow)
        return failEverywhere(Status::error("step " + std::to_string(step) +
                                            ": the loss is not finite (" +
                                            number(loss) + ")"));
      // Without loss scaling a non-finite gradient stops the run (the step
      // applied nothing); a finite one that made a non-finite update stops
      // it before it is trained on or saved, naming the first parameter it
      // reached.
      if (!std::isfinite(norm) && !overflow)
        return failEverywhere(
            Status::error("step " + std::to_string(step) +
                          ": the gradient norm is " + number(norm) +
                          " (a gradient holds inf or NaN); the update was "
                          "not applied; stopping without saving"));
      std::string where;
      Status scanned = overflow ? Status::ok() : firstNonFiniteParameter(where);
      if (!scanned)
        return Status::error("step " + std::to_string(step) +
                             ": checking the parameters: " + scanned.message());
      if (!overflow && !comm.allAgree(where.empty())) {
        return failEverywhere(Status::error(
            "step " + std::to_string(step) + ": the gradient norm is " +
            number(norm) + "; " +
            (where.empty()
                 ? std::string("the update is not finite on "
                               "another rank")
                 : "the update made parameter '" + where + "' non-finite") +
            "; stopping without saving"));
      }
      stepLosses.push_back(loss);
      auto [tokensPerSecond, teraflops, mfu] = ratesOf(seconds);
      // The console line, every --log-interval steps (and at the last),
      // with the loss averaged over the interval's applied steps and the
      // time over all of them, as Megatron-LM's (--log keeps every step).
      interval.steps += 1;
      interval.seconds += seconds;
      interval.lossSumAll += loss;
      if (!overflow) {
        interval.applied += 1;
        interval.lossSum += loss;
      }
      interval.lr = lr;
      interval.norm = norm;
      interval.scale = scaleUsed;
      if (step % options.logInterval == 0 || step == options.steps)
        printInterval(step, corpus != nullptr, floor, lossScaling);
      // Megatron-LM's order: log the step, evaluate, save, then the exit
      // checks. The validation (and after the last step the test) loss
      // joins the step's --log record.
      std::optional<double> validationLoss, testLoss;
      if (options.evalInterval > 0 &&
          (step % options.evalInterval == 0 || step == options.steps)) {
        validationLoss.emplace();
        MTRT_RETURN_IF_ERROR(evaluateValidation(step, lossId, *validationLoss));
      }
      if (options.evalInterval > 0 && step == options.steps)
        MTRT_RETURN_IF_ERROR(evaluateTest(step, lossId, testLoss));
      if (log) {
        // JSON has no inf or nan: a non-finite value is written as null.
        auto json = [](double value, const char *format) {
          char text[64];
          if (!std::isfinite(value))
            return std::string("null");
          std::snprintf(text, sizeof(text), format, value);
          return std::string(text);
        };
        std::fprintf(
            log,
            "{\"step\": %lld, \"loss\": %s, \"lr\": %s, "
            "\"grad_norm\": %s, \"step_time_s\": %s, "
            "\"tokens_per_s\": %s, \"peak_bytes\": %lld, "
            "\"tflops\": %s%s%s%s%s}\n",
            static_cast<long long>(step), json(loss, "%.9g").c_str(),
            json(lr, "%.9g").c_str(), json(norm, "%.9g").c_str(),
            json(seconds, "%.6f").c_str(),
            json(tokensPerSecond, "%.3f").c_str(),
            static_cast<long long>(device->measuredPeakBytes()),
            json(teraflops, "%.6f").c_str(),
            peakTeraflops > 0 ? (", \"mfu\": " + json(mfu, "%.6f")).c_str()
                              : "",
            lossScaling ? (", \"loss_scale\": " + json(scaleUsed, "%.17g") +
                           ", \"skipped\": " + (overflow ? "true" : "false"))
                              .c_str()
                        : "",
            validationLoss
                ? (", \"validation_loss\": " + json(*validationLoss, "%.9g"))
                      .c_str()
                : "",
            testLoss ? (", \"test_loss\": " + json(*testLoss, "%.9g")).c_str()
                     : "");
        if (std::fflush(log) != 0 || std::ferror(log))
          return Status::error(options.log + ": cannot write the log (" +
                               std::strerror(errno) + ")");
      }
      lastStep = step;
      bool saved =
          !options.save.empty() &&
          (step == options.steps ||
           (options.saveInterval > 0 && step % options.saveInterval == 0));
      if (saved)
        MTRT_RETURN_IF_ERROR(saveCheckpoint(step));
      if (step == options.steps)
        break;
      std::string stopping = exitReason(step);
      if (stopping.empty())
        continue;
      // The steps since the last console line, before the exit's.
      printInterval(step, corpus != nullptr, floor, lossScaling);
      if (!options.save.empty() && !saved)
        MTRT_RETURN_IF_ERROR(saveCheckpoint(step));
      if (speak) {
        std::printf("exiting at iteration %lld of %lld: %s; %s\n",
                    static_cast<long long>(step),
                    static_cast<long long>(options.steps), stopping.c_str(),
                    options.save.empty()
                        ? "no --save, so no checkpoint was saved"
                        : ("saved " + iterationDir(options.save, step) +
                           " (resume with --load " + options.save + ")")
                              .c_str());
        std::fflush(stdout);
      }
      break;
    }
    if (log)
      std::fclose(log);
    size_t window = std::min<size_t>(10, stepLosses.size());
    double recent = 0;
    for (size_t i = stepLosses.size() - window; i < stepLosses.size(); ++i)
      recent += stepLosses[i] / double(window);
    if (speak) {
      std::printf("loss: first step %.4f, mean of the last %zu steps %.4f",
                  stepLosses.front(), window, recent);
      if (corpus)
        std::printf(", corpus floor %.4f (gap %.4f)", floor, recent - floor);
      std::printf("\n");
      // As Megatron-LM's "number of skipped iterations".
      if (lossScaling)
        std::printf("loss scaling: %lld of %zu steps skipped, loss scale now "
                    "%g\n",
                    static_cast<long long>(skippedSteps), stepLosses.size(),
                    scaler.scale);
    }
    // Every rank's planned and measured peak, printed by rank 0.
    int64_t peaks[5] = {program.arenaBytes, device->measuredPeakBytes(),
                        device->hostScratchBytes(), grid.peakSendCopyBytes(),
                        device->deviceBytesTaken()};
    std::vector<uint8_t> all;
    MTRT_RETURN_IF_ERROR(comm.gatherToRoot(peaks, sizeof(peaks), all));
    bool equal = true;
    for (int r = 0; speak && r < comm.size(); ++r) {
      int64_t planned, measured, scratch, sends, taken;
      std::memcpy(&planned, all.data() + r * sizeof(peaks), 8);
      std::memcpy(&measured, all.data() + r * sizeof(peaks) + 8, 8);
      std::memcpy(&scratch, all.data() + r * sizeof(peaks) + 16, 8);
      std::memcpy(&sends, all.data() + r * sizeof(peaks) + 24, 8);
      std::memcpy(&taken, all.data() + r * sizeof(peaks) + 32, 8);
      equal &= planned == measured;
      std::string who = comm.size() == 1 ? std::string()
                                         : " (rank " + std::to_string(r) + ")";
      std::printf("peak memory%s: planned %lld B, measured %lld B (%s)\n",
                  who.c_str(), static_cast<long long>(planned),
                  static_cast<long long>(measured),
                  planned == measured ? "equal" : "DIFFERENT");
      // What the plan does not count, said beside it.
      if (scratch > 0)
        std::printf("  and beside the arena %lld B: f32 copies of the "
                    "largest command's 16-bit operands (the %s backend "
                    "computes in f32)\n",
                    static_cast<long long>(scratch), device->backendName());
      if (sends > 0)
        std::printf("  and beside the arena %lld B at most: copies of the "
                    "pipeline sends in flight (MPI)\n",
                    static_cast<long long>(sends));
      // The driver's count, not the plan's: the arena, the backend's
      // memory beside it and its libraries' (the startup's "memory beside
      // the planned arena" line itemizes the backend's own).
      if (taken > 0)
        std::printf(
            "  device memory taken since before the arena: %lld B "
            "(the arena %lld B and %lld B more: the backend's "
            "buffers beside it and its libraries')\n",
            static_cast<long long>(taken), static_cast<long long>(planned),
            static_cast<long long>(std::max<int64_t>(0, taken - planned)));
    }
    if (!comm.allAgree(equal))
      return Status::error("measured peak memory differs from the plan");
    return Status::ok();
  }

  /// The name of the first parameter (or its optimizer state) of this rank
  /// holding a non-finite value, or "", into `where`. The device scans its
  /// own memory. (Parameters and state are f32: mixed precision keeps fp32
  /// masters.)
  Status firstNonFiniteParameter(std::string &where) const {
    where.clear();
    std::vector<int64_t> ids;
    for (const BufferDesc &buffer : program.buffers)
      if ((buffer.kind == "param" || buffer.kind == "exp_avg" ||
           buffer.kind == "exp_avg_sq") &&
          buffer.dtype == DType::F32)
        ids.push_back(buffer.id);
    int64_t first = -1;
    MTRT_RETURN_IF_ERROR(device->findNonFinite(ids, first));
    if (first >= 0) {
      const BufferDesc &buffer = program.buffers[size_t(first)];
      where = buffer.kind == "param" ? buffer.name
                                     : buffer.name + " (" + buffer.kind + ")";
    }
    return Status::ok();
  }

  /// A one-element f32 buffer's value (the loss, the gradient norm). A
  /// failed read is an error, never a NaN that loss scaling would take for
  /// an overflow.
  Status readScalar(int64_t bufferId, double &value) const {
    float single = 0;
    MTRT_RETURN_IF_ERROR(device->download(bufferId, &single, sizeof(single)));
    value = single;
    return Status::ok();
  }

  /// --profile: rank 0's time per kernel.
  void printProfile() const {
    if (!options.profile || comm.rank() != 0)
      return;
    int64_t first = checkpoint.iteration + 1, counted = 0;
    // The first step warms caches and allocates staging copies: left out
    // unless it is the only one.
    int64_t skip = lastStep > first ? first : first - 1;
    std::vector<KernelProfileRow> rows =
        profileKernels(program, trace.recorded(), skip, counted);
    std::fputs(formatKernelProfile(rows, counted, 12).c_str(), stdout);
    std::fputs(formatGeneratedKernelProfile(
                   profileGeneratedKernels(program, trace.recorded(), skip), 10)
                   .c_str(),
               stdout);
    std::fflush(stdout);
  }

  /// Rank 0 writes every rank's measured timeline (--trace).
  Status writeTrace() {
    if (options.trace.empty())
      return Status::ok();
    std::vector<int64_t> coords = program.coords;
    std::string label = "rank " + std::to_string(comm.rank());
    for (size_t axis = 0;
         axis < coords.size() && axis < artifact.gridAxes.size(); ++axis)
      label += (axis == 0 ? " (" : ", ") + artifact.gridAxes[axis] + " " +
               std::to_string(coords[axis]);
    if (!coords.empty())
      label += ")";
    std::vector<std::string> fragments;
    MTRT_RETURN_IF_ERROR(comm.gatherStringsToRoot(
        trace.chromeEvents(program, comm.rank(), label), fragments));
    if (comm.rank() != 0)
      return Status::ok();
    std::string document = ExecutionTrace::chromeDocument(fragments);
    MTRT_RETURN_IF_ERROR(writeFileAtomically(
        options.trace, {{document.data(), document.size()}}));
    // The steps this run trained (a resumed or early-stopped run's are
    // not --steps).
    std::printf("trace: %s (%d rank%s, %lld steps)\n", options.trace.c_str(),
                comm.size(), comm.size() == 1 ? "" : "s",
                static_cast<long long>(lastStep - checkpoint.iteration));
    return Status::ok();
  }

  /// The buffer `kind` of parameter `name` on the first stage holding it
  /// (whose ranks' pieces make the full tensor: a tied embedding's copy on
  /// the last stage is equal), and that stage; nullptr if none holds it.
  const BufferDesc *firstHolder(const std::string &kind,
                                const std::string &name, int64_t *stage) const {
    for (size_t s = 0; s < artifact.programs.size(); ++s)
      if (const BufferDesc *held = artifact.programs[s].find(kind, name)) {
        *stage = int64_t(s);
        return held;
      }
    return nullptr;
  }

  /// The full tensor of buffer kind `kind` (param, exp_avg, exp_avg_sq) of
  /// parameter `param`, gathered on rank 0 from the ranks holding its
  /// pieces (every rank takes part; `tensor` is filled on rank 0 only).
  Status gatherTensor(const std::string &kind, const ParamDesc &param,
                      HostTensor &tensor) {
    int64_t holder = -1;
    const BufferDesc *held = firstHolder(kind, param.name, &holder);
    if (!held)
      return Status::error(options.artifact + ": parameter '" + param.name +
                           "' of the parameter table has no " + kind +
                           " buffer");
    const BufferDesc *mine = program.find(kind, param.name);
    bool contributes = program.stage == holder && mine;
    tensor.dtype = "F32";
    tensor.shape = param.shape;
    std::vector<uint8_t> piece(size_t(held->bytes()), 0);
    if (contributes)
      MTRT_RETURN_IF_ERROR(
          device->download(mine->id, piece.data(), int64_t(piece.size())));
    if (comm.size() == 1) {
      // Padding rows of a vocabulary are not part of the checkpoint.
      piece.resize(size_t(validElementsOf(*held)) * sizeof(float));
      tensor.bytes = std::move(piece);
      return Status::ok();
    }
    std::vector<uint8_t> pieces, indices;
    int64_t index[3] = {contributes ? 1 : 0, mine ? mine->shardIndex : 0,
                        mine ? mine->pieceIndex : 0};
    MTRT_RETURN_IF_ERROR(
        comm.gatherToRoot(piece.data(), int64_t(piece.size()), pieces));
    MTRT_RETURN_IF_ERROR(comm.gatherToRoot(index, sizeof(index), indices));
    if (comm.rank() != 0)
      return Status::ok();
    // Each contributing rank's runs of the full tensor; replicas (the same
    // piece on several ranks) write the same values.
    tensor.bytes.resize(
        size_t(held->bytes() * held->shardCount * held->pieceCount));
    float *full = reinterpret_cast<float *>(tensor.bytes.data());
    for (int r = 0; r < comm.size(); ++r) {
      int64_t which[3];
      std::memcpy(which, indices.data() + r * sizeof(which), sizeof(which));
      if (!which[0])
        continue;
      const float *src = reinterpret_cast<const float *>(pieces.data()) +
                         r * held->numElements();
      for (const ElementRun &run : shardRuns(*held, which[1], which[2])) {
        std::copy_n(src, run.count, full + run.offset);
        src += run.count;
      }
    }
    // Padding rows of a vocabulary are not part of the checkpoint.
    tensor.bytes.resize(size_t(validElementsOf(*held)) * sizeof(float));
    return Status::ok();
  }

  /// Rank 0 writes `tensors` to `path` (atomically), unless one holds a
  /// non-finite value: a non-finite state is never saved.
  Status
  writeTensors(const std::string &path,
               const std::vector<std::pair<std::string, HostTensor>> &tensors,
               const std::map<std::string, std::string> &metadata) {
    Status written = Status::ok();
    if (comm.rank() == 0) {
      for (const auto &[name, tensor] : tensors) {
        const float *values =
            reinterpret_cast<const float *>(tensor.bytes.data());
        size_t n = tensor.bytes.size() / sizeof(float);
        if (!std::all_of(values, values + n,
                         [](float v) { return std::isfinite(v); })) {
          written = Status::error(path + ": tensor '" + name +
                                  "' holds non-finite values; not saved");
          break;
        }
      }
      if (written)
        written = writeSafetensors(path, tensors, metadata);
    }
    if (!comm.allAgree(written.isOk()) && written)
      return Status::error("rank 0 could not save " + path);
    return written;
  }

  Status save() {
    if (options.saveParams.empty())
      return Status::ok();
    // Full, unsharded tensors whatever the layout, so that a checkpoint
    // written under one layout loads under any other. Every rank takes part
    // in gathering ZeRO pieces; rank 0 writes.
    std::vector<std::pair<std::string, HostTensor>> tensors;
    for (const ParamDesc &param : artifact.params) {
      HostTensor tensor;
      MTRT_RETURN_IF_ERROR(gatherTensor("param", param, tensor));
      tensors.emplace_back(param.name, std::move(tensor));
    }
    // As the family publishes its weights (a Phi-3's fused projections),
    // so that the file loads where those do (and here, through
    // FusedTensorView).
    if (comm.rank() == 0)
      fuseAsPublished(artifact.params, tensors);
    MTRT_RETURN_IF_ERROR(writeTensors(options.saveParams, tensors, {}));
    if (comm.rank() == 0)
      std::printf("saved %zu parameters (after step %lld) to %s\n",
                  artifact.params.size(), static_cast<long long>(lastStep),
                  options.saveParams.c_str());
    return Status::ok();
  }

  /// A step of `seconds`: tokens per second; the model FLOPs of the whole
  /// run (all ranks) per second in TFLOP/s, as Megatron-LM reports them
  /// (NaN when the artifact does not say); and the model FLOPs utilization
  /// per device (one per rank) against its dense peak (setupPeak; NaN
  /// without one).
  struct Rates {
    double tokensPerSecond, teraflops, mfu;
  };
  Rates ratesOf(double seconds) const {
    double tokensPerSecond = double(globalBatch() * seqLen) / seconds;
    double teraflops =
        program.flopsPerToken > 0
            ? double(program.flopsPerToken) * tokensPerSecond / 1e12
            : std::nan("");
    double mfu = peakTeraflops > 0
                     ? teraflops / (double(comm.size()) * peakTeraflops)
                     : std::nan("");
    return {tokensPerSecond, teraflops, mfu};
  }

  /// The last step this run trained (--steps, or where it stopped early).
  int64_t lastStep = 0;

  /// The steps since the console last printed (--log-interval).
  struct Interval {
    int64_t steps = 0, applied = 0;
    /// Losses of the applied steps, and of all.
    double lossSum = 0, lossSumAll = 0;
    double seconds = 0, lr = 0, norm = 0, scale = 0;
  } interval;

  /// Rank 0's console line for the interval ending at `step`, the step just
  /// run, then a new interval. One step's line is as it always was; a
  /// longer interval's loss is the mean of its applied steps, its time and
  /// throughput the mean step's.
  void printInterval(int64_t step, bool corpus, double floor,
                     bool lossScaling) {
    Interval done = interval;
    interval = Interval();
    if (options.quiet || comm.rank() != 0 || done.steps == 0)
      return;
    double seconds = done.seconds / double(done.steps);
    auto [tokensPerSecond, teraflops, mfu] = ratesOf(seconds);
    std::printf("step %5lld/%lld | loss ", static_cast<long long>(step),
                static_cast<long long>(options.steps));
    // Megatron-LM averages the applied steps' losses; an interval whose
    // steps were all skipped shows theirs.
    if (done.steps == 1)
      std::printf("%.4f", done.lossSumAll);
    else if (done.applied > 0)
      std::printf(
          "%.4f (mean of %lld step%s)", done.lossSum / double(done.applied),
          static_cast<long long>(done.applied), done.applied == 1 ? "" : "s");
    else
      std::printf("%.4f (mean of %lld skipped steps)",
                  done.lossSumAll / double(done.steps),
                  static_cast<long long>(done.steps));
    if (corpus)
      std::printf(" (floor %.4f)", floor);
    std::printf(" | lr %.3e | grad norm %.4f", done.lr, done.norm);
    if (lossScaling) {
      std::printf(" | loss scale %g", done.scale);
      if (done.steps == 1 && done.applied == 0)
        std::printf(" | skipped: gradients overflowed");
      else if (done.steps > done.applied)
        std::printf(" | skipped %lld of %lld: gradients overflowed",
                    static_cast<long long>(done.steps - done.applied),
                    static_cast<long long>(done.steps));
    }
    std::printf(" | %.3f s%s | %.0f tokens/s", seconds,
                done.steps > 1 ? " per step" : "", tokensPerSecond);
    if (std::isfinite(teraflops))
      std::printf(" | %.4f TFLOP/s", teraflops);
    if (std::isfinite(mfu))
      std::printf(" | MFU %.1f%%", 100.0 * mfu);
    std::printf("\n");
    std::fflush(stdout);
  }

  /// Why the run stops after `step` short of --steps ("": it goes on),
  /// the same on every rank: --exit-interval divides it, or some rank saw
  /// --exit-duration-in-mins pass or received --exit-signal (agreed, as
  /// Megatron-LM all-reduces its flags, only when those flags are given,
  /// which every rank's are: the job check).
  std::string exitReason(int64_t step) {
    std::string reason;
    if (options.exitInterval > 0 && step % options.exitInterval == 0)
      reason = "--exit-interval " + std::to_string(options.exitInterval);
    if (options.exitDurationMinutes > 0) {
      double minutes =
          secondsBetween(options.started, std::chrono::steady_clock::now()) /
          60.0;
      if (!comm.allAgree(!(minutes > options.exitDurationMinutes)) &&
          reason.empty())
        reason = "--exit-duration-in-mins " +
                 number(options.exitDurationMinutes) + " passed";
    }
    if (options.exitSignalHandler &&
        !comm.allAgree(!ExitSignalHandler::received()) && reason.empty())
      reason = options.exitSignal + " received (--exit-signal-handler)";
    return reason;
  }

  /// A full training checkpoint after step `iteration`, as Megatron-LM
  /// lays them out: DIR/iter_NNNNNNN/ holds one shard per rank, each with
  /// the pieces of the parameters and their optimizer state that the rank
  /// holds and where they lie in the full tensors (any layout loads them),
  /// and, as metadata, the step and the seed (the dropout masks are keyed
  /// by seed and step, and the data position follows from the step). Once
  /// every shard is complete, DIR/latest_checkpointed_iteration.txt names
  /// it: a crash at any moment leaves the previous checkpoint loadable. The
  /// shards are written into a staging directory and published with renames
  /// (train/CheckpointDirectory.h), so that saving an iteration again, even
  /// the marked one, never leaves it a mix of two saves.
  Status saveCheckpoint(int64_t iteration) {
    std::string dir = iterationDir(options.save, iteration);
    std::string staging = stagingDirOf(options.save, iteration);
    Status made = Status::ok();
    double saveId = 0;
    if (comm.rank() == 0) {
      ::mkdir(options.save.c_str(), 0755);
      // What killed saves left behind, once per run.
      if (!sweptTemporaryFiles) {
        made = recoverCheckpointDirectory(options.save);
        sweptTemporaryFiles = true;
      }
      if (made)
        made = beginCheckpointSave(options.save, iteration);
      // Tells the shards of this save from those an earlier, interrupted
      // save of the same iteration left (52 bits: exact in a double).
      std::random_device entropy;
      saveId = double(((uint64_t(entropy()) << 32) ^ entropy()) &
                      ((uint64_t(1) << 52) - 1));
    }
    if (!comm.allAgree(made.isOk()))
      return made ? Status::error("rank 0 could not create " + staging) : made;
    MTRT_RETURN_IF_ERROR(comm.broadcast(0, saveId));

    // This rank's pieces, each written by one rank only: replicas (the
    // data-parallel copies of a piece, the copy of a tied embedding on the
    // last stage) are left to the rank at coordinate 0 of the axes the
    // piece is replicated over, on the first stage holding it. (On an
    // expert's axis, the first group of ranks holding every expert once.)
    std::vector<TensorPiece> pieces;
    std::vector<std::vector<float>> values;
    std::vector<int64_t> writtenElements;
    Status finite = Status::ok();
    int64_t pipelineAxis = artifact.axis("pp");
    for (const char *kind : {"param", "exp_avg", "exp_avg_sq"})
      for (const ParamDesc &param : artifact.params) {
        std::string name = std::string(kind) == "param"
                               ? param.name
                               : param.name + "::" + kind;
        int64_t holder = -1;
        const BufferDesc *held = firstHolder(kind, param.name, &holder);
        const BufferDesc *mine = program.find(kind, param.name);
        bool writes = held && mine && program.stage == holder;
        for (size_t axis = 0; writes && axis < program.coords.size(); ++axis)
          if (int64_t(axis) != pipelineAxis &&
              !(mine->sharded() && int64_t(axis) == mine->shardAxis) &&
              !(mine->pieceCount > 1 && int64_t(axis) == mine->pieceAxis))
            writes = int64_t(axis) == mine->expertAxis
                         ? program.coords[axis] < mine->expertRanks
                         : program.coords[axis] == 0;
        if (!writes) {
          writtenElements.push_back(0);
          continue;
        }
        // The runs of the real tensor: padding rows are in no checkpoint.
        int64_t valid = validElementsOf(*mine);
        TensorPiece piece;
        piece.name = name;
        piece.shape = checkpointShapeOf(*mine);
        std::vector<float> kept, onHost;
        MTRT_RETURN_IF_ERROR(
            device->downloadValues(mine->id, onHost, mine->numElements()));
        const float *src = onHost.data();
        for (const ElementRun &run : shardRuns(*mine)) {
          int64_t real =
              std::max<int64_t>(0, std::min(run.count, valid - run.offset));
          if (real > 0) {
            piece.runs.push_back({run.offset, real});
            kept.insert(kept.end(), src, src + real);
          }
          src += run.count;
        }
        if (finite && !std::all_of(kept.begin(), kept.end(),
                                   [](float v) { return std::isfinite(v); }))
          finite = Status::error(dir + ": tensor '" + name +
                                 "' holds non-finite values; not saved");
        writtenElements.push_back(int64_t(kept.size()));
        if (kept.empty())
          continue;
        values.push_back(std::move(kept));
        piece.values = values.back().data();
        pieces.push_back(std::move(piece));
      }
    // A save that fails before it is published leaves no staging directory
    // (a full disk would stay full).
    auto abandon = [&](Status failed) {
      if (comm.rank() == 0)
        abandonCheckpointSave(options.save, iteration);
      return failed;
    };
    // A non-finite state is never saved, by any rank.
    if (!comm.allAgree(finite.isOk()))
      return abandon(finite ? Status::error("another rank holds non-finite "
                                            "values; checkpoint " +
                                            dir + " not saved")
                            : finite);
    std::map<std::string, std::string> metadata = scheduleOf(options);
    metadata.insert(
        {{"format", kCheckpointFormat},
         {"iteration", std::to_string(iteration)},
         {"seed", std::to_string(options.seed)},
         {"consumed_samples", std::to_string(samplesBefore(iteration + 1))},
         {"optimizer_steps", std::to_string(updates)},
         {"adam_steps", std::to_string(adamSteps)}});
    if (lossScaling)
      scaler.save(metadata);
    Status written = writeCheckpointShard(staging, comm.rank(), comm.size(),
                                          uint64_t(saveId), pieces, metadata);
    if (!comm.allAgree(written.isOk()))
      return abandon(written ? Status::error("another rank could not write "
                                             "its shard of " +
                                             staging)
                             : written);

    // Every element of every tensor is in exactly one shard, or the
    // checkpoint is not marked.
    std::vector<uint8_t> counts;
    MTRT_RETURN_IF_ERROR(comm.gatherToRoot(
        writtenElements.data(),
        int64_t(writtenElements.size() * sizeof(int64_t)), counts));
    Status marked = Status::ok();
    if (comm.rank() == 0) {
      size_t tensors = writtenElements.size();
      std::vector<int64_t> total(tensors, 0);
      for (int r = 0; r < comm.size(); ++r)
        for (size_t t = 0; t < tensors; ++t) {
          int64_t count;
          std::memcpy(&count,
                      counts.data() + (r * tensors + t) * sizeof(int64_t),
                      sizeof(count));
          total[t] += count;
        }
      size_t t = 0;
      for (const char *kind : {"param", "exp_avg", "exp_avg_sq"})
        for (const ParamDesc &param : artifact.params) {
          int64_t stage;
          const BufferDesc *held = firstHolder(kind, param.name, &stage);
          int64_t expected = held ? validElementsOf(*held) : 0;
          if (marked && total[t] != expected)
            marked = Status::error(
                dir + ": the shards hold " + std::to_string(total[t]) +
                " elements of '" + param.name + "' (" + kind + "), not " +
                std::to_string(expected) + "; not marked as the latest");
          ++t;
        }
      // Published only whole; one that is not is removed (a failed publish
      // is not: its staging directory may be the marked iteration's only
      // copy, which a load reads).
      if (marked)
        marked = publishCheckpoint(options.save, iteration);
      else
        abandonCheckpointSave(options.save, iteration);
      if (marked && !options.quiet)
        std::printf("saved checkpoint iteration %lld to %s (%d shard%s)\n",
                    static_cast<long long>(iteration), dir.c_str(), comm.size(),
                    comm.size() == 1 ? "" : "s");
    }
    if (!comm.allAgree(marked.isOk()))
      return marked ? Status::error("rank 0 could not mark the checkpoint")
                    : marked;
    return Status::ok();
  }

  ~Impl() {
    if (!temporaryCorpus.empty())
      std::remove(temporaryCorpus.c_str());
  }

  int64_t batchSize = 0, seqLen = 0, vocabSize = 0, microbatches = 1;
  /// Threads per rank for the host's work (--threads, or coresPerRank),
  /// and whether any parameter was initialized (not loaded) on them.
  int hostThreads = 1;
  bool parametersInitialized = false;
  /// train()'s error reached every rank at the same step (failedOnEveryRank).
  bool failedOnEveryRank = false;
  Status failEverywhere(Status status) {
    failedOnEveryRank = true;
    return status;
  }
  /// The parameters' 16-bit copies by parameter name (planParameterCopies),
  /// and the start's thread pool (hostPool).
  std::map<std::string, const BufferDesc *> copyOf;
  std::unique_ptr<ThreadPool> startupPool;
  /// prepareLog's records of the --log file, which openLog rewrites.
  std::optional<std::map<int64_t, std::string>> resumedLog;
  /// The 16-bit copies' values on the host before their upload, one
  /// buffer reused by every parameter (uploadParameter).
  std::vector<uint16_t> startupHalves;
  struct {
    double prepareSeconds = 0, parameterSeconds = 0, dataSeconds = 0;
  } startup;

  std::vector<std::string> deviceChoices() const {
    std::vector<std::string> lines;
    if (device)
      for (const std::string &choice : device->choices())
        lines.push_back(std::string(device->backendName()) + ": " + choice);
    if (!peakSource.empty())
      lines.push_back("MFU: " + peakSource);
    return lines;
  }

  /// The dense peak per device that MFU divides by: --peak-tflops, else
  /// the data sheet of the device's hardware for the step's arithmetic
  /// (the artifact's precision; TF32 with --tf32). None on the CPU backend
  /// without the flag; a GPU the table lacks says so.
  void setupPeak() {
    std::string compiled = precisionOf(artifact);
    MathMode mode = compiled == "bf16"   ? MathMode::Bf16
                    : compiled == "fp16" ? MathMode::Fp16
                    : options.tf32       ? MathMode::Tf32
                                         : MathMode::Fp32;
    if (options.peakTflops > 0) {
      peakTeraflops = options.peakTflops;
      peakSource = "against " + number(peakTeraflops) +
                   " TFLOP/s per device (--peak-tflops)";
      return;
    }
    std::string hardware = device ? device->hardwareName() : std::string();
    if (hardware.empty())
      return;
    if (std::optional<double> sheet = dataSheetPeakTeraflops(hardware, mode)) {
      peakTeraflops = *sheet;
      peakSource = "against " + number(peakTeraflops) +
                   " TFLOP/s per device, " + hardware + "'s dense " +
                   mathModeName(mode) + " peak (its data sheet)";
      return;
    }
    peakSource = "not reported: the dense " + std::string(mathModeName(mode)) +
                 " peak of " + hardware +
                 " is not in the runtime's table (--peak-tflops states it)";
  }
  /// TFLOP/s per device for MFU (0: none), and where it comes from.
  double peakTeraflops = 0;
  std::string peakSource;
  /// The loss of every step this run trained, in order.
  std::vector<double> stepLosses;
  /// Each validation evaluation's iteration and loss (the C API's).
  std::vector<std::pair<int64_t, double>> validationLosses;

private:
  /// Sequences per step over all data-parallel ranks.
  int64_t globalBatch() const { return batchSize * microbatches * dataRanks; }
  /// The samples read before step `step` (from 1): those the checkpoint's
  /// run consumed (consumed_samples, Megatron-LM's), then a global batch a
  /// step. A run resumed with another global batch goes on where the data
  /// was left, as Megatron-LM's does.
  int64_t samplesBefore(int64_t step) const {
    return consumedAtResume + (step - 1 - checkpoint.iteration) * globalBatch();
  }

  /// This rank's samples of the global batch that starts at sample
  /// `firstSample` (samplesBefore): sample i of the batch starts at token
  /// (firstSample + i) * S; data-parallel rank r holds samples r * b * m ..
  /// (r + 1) * b * m - 1 of its m microbatches of b, microbatch j the b from
  /// r * b * m + j * b. Every layout therefore reads the same tokens for
  /// sample i.
  Status fillBatch(int64_t firstSample) {
    return fillBatchFrom(data, firstSample, 0, 0);
  }
  /// The same from `source`, its samples read cyclically over `cycle` of
  /// them from sample `origin` on (0: no cycle).
  Status fillBatchFrom(const TokenData &source, int64_t firstSample,
                       int64_t origin, int64_t cycle) {
    for (int64_t id : dataInputs) {
      const BufferDesc &buffer = program.buffers[id];
      bool labels = buffer.name == "labels";
      int64_t micro = std::max<int64_t>(buffer.microbatch, 0);
      batchTokens.resize(size_t(batchSize * seqLen));
      int32_t *values = batchTokens.data();
      for (int64_t i = 0; i < batchSize; ++i) {
        int64_t sample =
            dataRank * batchSize * microbatches + micro * batchSize + i;
        int64_t index = firstSample + sample;
        if (cycle > 0)
          index %= cycle;
        index += origin;
        int64_t start = index * seqLen;
        for (int64_t t = 0; t < seqLen; ++t)
          values[i * seqLen + t] =
              static_cast<int32_t>(source.token(start + t + (labels ? 1 : 0)));
      }
      MTRT_RETURN_IF_ERROR(device->uploadValues(id, batchTokens));
    }
    return Status::ok();
  }

  /// A new empty file `stem`-XXXXXX in $TMPDIR, as other tools' temporary
  /// files (/tmp without it); `what` names it in the error.
  static Status createTemporaryFile(const char *stem, const char *what,
                                    std::string &path) {
    const char *tmp = std::getenv("TMPDIR");
    std::string pattern =
        std::string(tmp && *tmp ? tmp : "/tmp") + "/" + stem + "-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    int fd = mkstemp(name.data());
    if (fd < 0)
      return Status::error(std::string("cannot create ") + what + " " +
                           pattern + ": " + std::strerror(errno) +
                           " (TMPDIR chooses its folder)");
    close(fd);
    path = name.data();
    return Status::ok();
  }

  /// The synthetic corpus's stream that evaluations read (training reads
  /// stream 0).
  static constexpr uint64_t kValidationStream = 1;
  /// The most tokens of the synthetic corpus a run writes, for training or
  /// for evaluation (1 GiB of memory while they are written).
  static constexpr int64_t kMaxSyntheticTokens = int64_t(1) << 28;

  /// Tokens an evaluation reads: `samples` samples of `tokens` from sample
  /// `first` on, read cyclically (0: as many as asked, no cycle).
  struct EvaluationData {
    const TokenData *tokens = nullptr;
    int64_t first = 0, samples = 0;
  };

  /// --eval-interval (or --skip-train): this stage's evaluation slice (the
  /// commands the loss depends on, mtrt/EvaluationSlice.h), the validation
  /// tokens (--valid-data-path, --split's second part, or a stream of the
  /// synthetic corpus that training never reads, as long as every
  /// evaluation of the run needs) and the test tokens (--test-data-path or
  /// --split's third part, when given).
  Status setupEvaluation() {
    if (!options.evaluates())
      return Status::ok();
    std::string flag = std::string("flag ") + options.evaluationFlag();
    if (!device->evaluates())
      return Status::error(flag + ": evaluation is not built for the " +
                           std::string(device->backendName()) +
                           " backend (--device cpu runs it)");
    std::vector<std::vector<bool>> slices;
    if (Status status = evaluationSlices(artifact, slices); !status)
      return Status::error(flag + ": " + options.artifact + ": " +
                           status.message());
    evalSlice = slices[size_t(program.stage)];
    if (!options.split.empty()) {
      // The parts of --data-path's samples after training's.
      std::vector<int64_t> parts =
          splitSamples(options.split, (data.numTokens() - 1) / seqLen);
      MTRT_RETURN_IF_ERROR(
          splitPart(parts[1], parts[2], "validation", validation));
      if (parts[3] > parts[2])
        MTRT_RETURN_IF_ERROR(splitPart(parts[2], parts[3], "test", test));
      return Status::ok();
    }
    if (!options.testData.empty())
      MTRT_RETURN_IF_ERROR(openEvaluationFile(
          "--test-data-path", options.testData, testData, "test", test));
    if (!options.validData.empty())
      return openEvaluationFile("--valid-data-path", options.validData,
                                validData, "validation", validation);
    // Every evaluation's own batches: one per --eval-interval and one after
    // the last step (--skip-train's one).
    int64_t evaluations =
        options.skipTrain ? 1 : options.steps / options.evalInterval + 1;
    int64_t needed = 0;
    if (__builtin_mul_overflow(options.evalIters, globalBatch(), &needed) ||
        __builtin_mul_overflow(needed, evaluations, &needed) ||
        __builtin_mul_overflow(needed, seqLen, &needed) ||
        __builtin_add_overflow(needed, int64_t(1), &needed) ||
        needed > kMaxSyntheticTokens)
      return Status::error(
          "flag --eval-iters " + std::to_string(options.evalIters) +
          ": its evaluations need more than the built-in corpus's " +
          std::to_string(kMaxSyntheticTokens) +
          " validation tokens: evaluate on a token file (--data-path and "
          "--valid-data-path)");
    std::string path;
    MTRT_RETURN_IF_ERROR(
        createTemporaryFile("megatron-run-validation",
                            "the synthetic corpus's validation file", path));
    Status written = corpus->writeTokenFile(path, needed, kValidationStream);
    if (written)
      written = TokenData::open(path, validData);
    std::remove(path.c_str());
    MTRT_RETURN_IF_ERROR(written);
    // Enough for every evaluation: no cycle.
    validation = {&validData, 0, 0};
    return Status::ok();
  }

  /// Samples `first` .. `end - 1` of --data-path, --split's `what` part.
  Status splitPart(int64_t first, int64_t end, const char *what,
                   EvaluationData &out) {
    out = {&data, first, end - first};
    return checkEvaluationPart(out, "flag --split: ",
                               std::string("its ") + what + " part of " +
                                   data.path(),
                               std::string("the ") + what + " part's " +
                                   std::to_string(out.samples) + " samples");
  }

  /// The tokens of `flag`'s `path`, read cyclically over their whole
  /// samples as Megatron-LM's evaluation iterators cycle.
  Status openEvaluationFile(const std::string &flag, const std::string &path,
                            TokenData &file, const char *what,
                            EvaluationData &out) {
    if (Status status = TokenData::open(path, file); !status)
      return Status::error("flag " + flag + ": " + status.message());
    out = {&file, 0, std::max<int64_t>((file.numTokens() - 1) / seqLen, 0)};
    return checkEvaluationPart(out, "flag " + flag + ": ", file.path(),
                               "the " + std::to_string(out.samples) + " " +
                                   what + " samples");
  }

  /// `part` holds a global batch at least, of ids the vocabulary has; errors
  /// start with `flag` and name the part as `where` (its holder) and `what`
  /// (its samples).
  Status checkEvaluationPart(const EvaluationData &part,
                             const std::string &flag, const std::string &where,
                             const std::string &what) {
    if (part.samples < globalBatch())
      return Status::error(flag + where + " holds " +
                           std::to_string(part.samples) + " samples of " +
                           std::to_string(seqLen + 1) +
                           " tokens, fewer than one global batch of " +
                           std::to_string(globalBatch()));
    if (Status status = part.tokens->checkSamples(part.first, part.samples,
                                                  seqLen, vocabSize, what);
        !status)
      return Status::error(flag + status.message());
    return Status::ok();
  }

  /// Evaluation k of the run's validation batches after `iteration`
  /// (k = iteration / --eval-interval - 1, or the one after the last
  /// periodic one for the final; 0 for --skip-train): a resumed run
  /// evaluates on the batches the first would have.
  Status evaluateValidation(int64_t iteration, int64_t lossId, double &mean) {
    int64_t k = options.skipTrain ? 0
                : iteration % options.evalInterval == 0
                    ? iteration / options.evalInterval - 1
                    : iteration / options.evalInterval;
    std::string at = "iteration " + std::to_string(iteration) +
                     (options.skipTrain ? " on validation set" : "");
    MTRT_RETURN_IF_ERROR(evaluate(at, validation, k, lossId, mean));
    validationLosses.push_back({iteration, mean});
    return Status::ok();
  }

  /// The mean loss of --eval-iters global batches of `source`, evaluation
  /// `k`'s (from sample k * --eval-iters * the global batch on), run
  /// forward only (the evaluation slice) with dropout off, printed as
  /// Megatron-LM's "validation loss at `at`" line.
  Status evaluate(const std::string &at, const EvaluationData &source,
                  int64_t k, int64_t lossId, double &mean) {
    auto start = std::chrono::steady_clock::now();
    double sum = 0;
    for (int64_t i = 0; i < options.evalIters; ++i) {
      // Within the cycle, in 128 bits: huge --eval-iters reach past 64.
      unsigned __int128 first =
          ((unsigned __int128)k * uint64_t(options.evalIters) + uint64_t(i)) *
          uint64_t(globalBatch());
      if (source.samples > 0)
        first %= uint64_t(source.samples);
      MTRT_RETURN_IF_ERROR(fillBatchFrom(*source.tokens, int64_t(first),
                                         source.first, source.samples));
      if (Status status = device->executeEvaluation(evalSlice); !status)
        return Status::error("evaluation at " + at + ": " + status.message());
      double loss = 0;
      if (lossId >= 0)
        if (Status status = readScalar(lossId, loss); !status)
          return Status::error("evaluation at " + at +
                               ": reading the loss: " + status.message());
      MTRT_RETURN_IF_ERROR(comm.broadcast(lossRoot, loss));
      sum += loss;
    }
    mean = sum / double(options.evalIters);
    double seconds = secondsBetween(start, std::chrono::steady_clock::now());
    if (comm.rank() == 0) {
      // Megatron-LM's line, with how much it read and how long it took.
      std::printf("validation loss at %s | lm loss value: %.6E | lm loss "
                  "PPL: %.6E | %lld batches of %lld samples, %.3f s\n",
                  at.c_str(), mean, std::exp(std::min(mean, 20.0)),
                  static_cast<long long>(options.evalIters),
                  static_cast<long long>(globalBatch()), seconds);
      std::fflush(stdout);
    }
    return Status::ok();
  }

  /// After the last step (and for --skip-train), the test tokens' loss, as
  /// Megatron-LM's "on test set" (its first --eval-iters batches); `mean`
  /// stays empty when the run has no test tokens.
  Status evaluateTest(int64_t iteration, int64_t lossId,
                      std::optional<double> &mean) {
    if (!test.tokens)
      return Status::ok();
    mean.emplace();
    return evaluate("iteration " + std::to_string(iteration) + " on test set",
                    test, 0, lossId, *mean);
  }

  /// The artifact's activation precision: the 16-bit type its buffers use,
  /// or fp32.
  static std::string precisionOf(const Artifact &artifact) {
    for (const RankProgram &any : artifact.programs)
      for (const BufferDesc &buffer : any.buffers)
        if (buffer.dtype == DType::BF16 || buffer.dtype == DType::F16)
          return buffer.dtype == DType::BF16 ? "bf16" : "fp16";
    return "fp32";
  }

  /// --bf16/--fp16 against the artifact, and the loss scaler of an
  /// artifact compiled with loss scaling (its `loss_scale` input).
  Status setupPrecision() {
    std::string compiled = precisionOf(artifact);
    if (!options.precision.empty() && options.precision != compiled)
      return Status::error("flag --" + options.precision + ": " +
                           options.artifact + " stores activations in " +
                           compiled +
                           " (compile with --mt-train-pipeline=\"precision=" +
                           options.precision + "\")");
    const BufferDesc *lossScale = program.find("input", "loss_scale");
    if (!lossScale) {
      if (!options.lossScaleFlag.empty())
        return Status::error(
            "flag " + options.lossScaleFlag + ": " + options.artifact +
            " has no loss scaling (it is compiled for " + compiled +
            "; loss scaling comes with "
            "--mt-train-pipeline=\"precision=fp16\")");
      return Status::ok();
    }
    scalars["loss_scale"] = lossScale->id;
    lossScaling = true;
    scaler = options.lossScaler;
    MTRT_RETURN_IF_ERROR(scaler.start());
    if (checkpoint.iteration > 0)
      if (Status status = scaler.restore(checkpoint.metadata); !status)
        return Status::error(checkpoint.dir + ": " + status.message());
    return Status::ok();
  }

  Status setScalar(const char *role, double value) {
    float single = float(value);
    return device->upload(scalars.at(role), &single, sizeof(single));
  }

  const Options &options;
  /// --load: the checkpoint resumed from (iteration 0: none).
  const Checkpoint &checkpoint;
  const Artifact &artifact;
  const RankProgram program;
  /// The ranks of the run (control plane) and the collectives of the
  /// device grid (the backend's data plane).
  const Launcher &comm;
  const Communicator &grid;
  int64_t dataRank = 0, dataRanks = 1;
  /// The backend running this rank's program (--device).
  std::unique_ptr<Device> device;
  /// The host copy of one data input, reused every step.
  std::vector<int32_t> batchTokens;
  ExecutionTrace trace;
  LearningRateSchedule schedule;
  /// fp16: the artifact scales its loss; the scaler and the steps it
  /// skipped.
  bool lossScaling = false;
  LossScaler scaler;
  int64_t skippedSteps = 0;
  /// Optimizer updates applied: the learning-rate schedule's position (a
  /// skipped step does not advance it, as in Megatron-LM).
  int64_t updates = 0;
  /// The updates the AdamW moments have seen: Adam's step, whose bias
  /// correction divides by it. `updates` but after --no-load-optim, which
  /// starts the moments, and this count, afresh.
  int64_t adamSteps = 0;
  /// The samples the resumed checkpoint's run read (0 for a fresh run).
  int64_t consumedAtResume = 0;
  TokenData data;
  /// --eval-interval: this stage's evaluation slice, the validation tokens
  /// and how many of their samples are read cyclically (0: no cycle).
  std::vector<bool> evalSlice;
  EvaluationData validation, test;
  TokenData validData, testData;
  std::unique_ptr<SyntheticCorpus> corpus;
  std::string temporaryCorpus;
  bool sweptTemporaryFiles = false;
  std::vector<int64_t> dataInputs;
  int lossRoot = 0;
  std::map<std::string, int64_t> scalars;
};

Trainer::Trainer(const Options &options, const Artifact &artifact,
                 const Launcher &launcher, const Communicator &grid,
                 const Checkpoint &checkpoint)
    : impl(std::make_unique<Impl>(options, artifact, launcher, grid,
                                  checkpoint)) {}
Trainer::~Trainer() = default;
Status Trainer::setup() { return impl->setup(); }
Status Trainer::train() { return impl->train(); }
bool Trainer::failedOnEveryRank() const { return impl->failedOnEveryRank; }
void Trainer::printProfile() const { impl->printProfile(); }
Status Trainer::writeTrace() { return impl->writeTrace(); }
Status Trainer::save() { return impl->save(); }
std::string Trainer::startupLine() const { return impl->startupLine(); }
std::vector<std::string> Trainer::deviceChoices() const {
  return impl->deviceChoices();
}

int64_t Trainer::batchSize() const { return impl->batchSize; }
int64_t Trainer::seqLen() const { return impl->seqLen; }
int64_t Trainer::vocabSize() const { return impl->vocabSize; }
const std::vector<double> &Trainer::losses() const { return impl->stepLosses; }
const std::vector<std::pair<int64_t, double>> &Trainer::evaluations() const {
  return impl->validationLosses;
}

} // namespace mtrt::train
