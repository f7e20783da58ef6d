//===- MpiLauncher.cpp - The ranks of a run over MPI ----------------------===//

#include "mpi/Mpi.h"

#include "mtrt/Deadline.h"

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

using namespace mtrt;
using namespace mtrt::mpi;

Status mpi::check(int code, const char *what) {
  if (code == MPI_SUCCESS)
    return Status::ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::error(std::string("MPI ") + what +
                       " failed: " + std::string(text, length));
}

Status mpi::wait(MPI_Request &request, const std::string &what,
                 double timeoutSeconds, MPI_Status *status) {
  if (timeoutSeconds <= 0)
    return check(MPI_Wait(&request, status), what.c_str());
  // Poll with a deadline: a peer that stops answering (killed, stopped, a
  // wedged device) must not hang this rank forever.
  auto start = std::chrono::steady_clock::now();
  for (int polls = 0;; ++polls) {
    int done = 0;
    MTRT_RETURN_IF_ERROR(
        check(MPI_Test(&request, &done, status), what.c_str()));
    if (done)
      return Status::ok();
    double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    if (waited > timeoutSeconds)
      return Status::error(noAnswerWithin(timeoutSeconds) + " in " + what);
    if (polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

namespace {
/// True when an MPI launcher (mpirun, mpiexec, srun) started this process.
bool launchedByMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK",
                           "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(name))
      return true;
  return false;
}

/// A task srun started as one of several in its step, but without MPI's
/// process management (`srun --mpi=none`, or a Slurm without PMI): MPI
/// would make each task a world of one, every one training alone as rank 0
/// and writing the same files. Such a launch is refused, saying how to fix
/// it, unless MEGATRON_SINGLE_PROCESS=1 says each task is meant to train
/// alone (a sweep, one configuration per task). (A batch script's own
/// environment has SLURM_NTASKS but no step.)
Status checkNotSlurmWithoutPmi() {
  const char *task = std::getenv("SLURM_PROCID");
  const char *tasks = std::getenv("SLURM_STEP_NUM_TASKS");
  const char *single = std::getenv("MEGATRON_SINGLE_PROCESS");
  if (!task || !tasks || std::atoll(tasks) <= 1 ||
      (single && std::string(single) == "1"))
    return Status::ok();
  return Status::error(
      std::string("srun started this process as task ") + task + " of " +
      tasks +
      " (SLURM_PROCID, SLURM_STEP_NUM_TASKS) without MPI's process "
      "management (no PMI or PMIx variable): each task would train alone "
      "as rank 0; run srun --mpi=pmix (or pmi2), or mpirun (or set "
      "MEGATRON_SINGLE_PROCESS=1 if each task is meant to train alone)");
}

void finalizeMpi() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized)
    MPI_Finalize();
}
} // namespace

Status MpiLauncher::start(int &argc, char **&argv) {
  usesMpi = launchedByMpi();
  if (!usesMpi)
    return checkNotSlurmWithoutPmi();
  int done = 0;
  MPI_Initialized(&done);
  if (!done) {
    MTRT_RETURN_IF_ERROR(check(MPI_Init(&argc, &argv), "initialization"));
    // Once per process, at its exit: MPI cannot be initialized again after
    // it is finalized, so no object's lifetime may end it.
    std::atexit(finalizeMpi);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &worldSize);
  return Status::ok();
}

Status MpiLauncher::broadcast(int root, double &value) const {
  if (!usesMpi)
    return Status::ok();
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Ibcast(&value, 1, MPI_DOUBLE, root, MPI_COMM_WORLD, &request),
            "broadcast"));
  return wait(request, "a broadcast from rank " + std::to_string(root),
              timeoutSeconds);
}

Status MpiLauncher::gatherToRoot(const void *in, int64_t bytes,
                                 std::vector<uint8_t> &out) const {
  if (worldRank == 0)
    out.resize(size_t(bytes) * size_t(worldSize));
  if (!usesMpi) {
    std::memcpy(out.data(), in, size_t(bytes));
    return Status::ok();
  }
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Igather(in, int(bytes), MPI_BYTE,
                        worldRank == 0 ? out.data() : nullptr, int(bytes),
                        MPI_BYTE, 0, MPI_COMM_WORLD, &request),
            "gather"));
  return wait(request, "a gather to rank 0", timeoutSeconds);
}

Status MpiLauncher::gatherStringsToRoot(const std::string &text,
                                        std::vector<std::string> &out) const {
  if (!usesMpi) {
    out.assign(1, text);
    return Status::ok();
  }
  int length = int(text.size());
  std::vector<int> lengths(worldRank == 0 ? size_t(worldSize) : 0);
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(check(MPI_Igather(&length, 1, MPI_INT, lengths.data(), 1,
                                         MPI_INT, 0, MPI_COMM_WORLD, &request),
                             "gather"));
  MTRT_RETURN_IF_ERROR(wait(request, "a gather to rank 0", timeoutSeconds));
  std::vector<int> offsets(lengths.size(), 0);
  for (size_t r = 1; r < lengths.size(); ++r)
    offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::vector<char> all(
      lengths.empty() ? 0 : size_t(offsets.back()) + size_t(lengths.back()));
  MTRT_RETURN_IF_ERROR(check(
      MPI_Igatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
                   offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD, &request),
      "gather"));
  MTRT_RETURN_IF_ERROR(wait(request, "a gather to rank 0", timeoutSeconds));
  out.clear();
  for (size_t r = 0; r < lengths.size(); ++r)
    out.emplace_back(all.data() + offsets[r], size_t(lengths[r]));
  return Status::ok();
}

bool MpiLauncher::allAgree(bool ok) const {
  if (!usesMpi)
    return ok;
  int mine = ok ? 1 : 0, all = 0;
  MPI_Request request;
  // A rank that cannot learn whether the others agree cannot go on.
  Status status = check(MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN,
                                       MPI_COMM_WORLD, &request),
                        "an agreement of all ranks");
  if (status)
    status = wait(request, "an agreement of all ranks", timeoutSeconds);
  if (!status) {
    std::fprintf(stderr, "megatron-run: error: rank %d: %s\n", worldRank,
                 status.message().c_str());
    abort(1);
  }
  return all == 1;
}

void MpiLauncher::abort(int code) const {
  if (usesMpi)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

Status MpiLauncher::createCommunicator(const std::vector<int64_t> &gridShape,
                                       std::unique_ptr<Communicator> &out) {
  std::vector<int64_t> shape =
      gridShape.empty() ? std::vector<int64_t>{worldSize} : gridShape;
  int64_t total = 1;
  for (int64_t dim : shape) {
    if (dim <= 0)
      return Status::error("the device grid has an axis of " +
                           std::to_string(dim) + " ranks");
    total *= dim;
  }
  if (total != worldSize)
    return Status::error("the device grid has " + std::to_string(total) +
                         " ranks but the run has " + std::to_string(worldSize));
  auto communicator = std::make_unique<MpiCommunicator>(
      std::move(shape), worldRank, usesMpi, timeoutSeconds);
  MTRT_RETURN_IF_ERROR(communicator->createGroups());
  out = std::move(communicator);
  return Status::ok();
}

Status mtrt::startLauncher(int &argc, char **&argv, Launcher *&launcher) {
  static MpiLauncher *process = nullptr;
  static Status started = Status::ok();
  if (!process) {
    process = new MpiLauncher; // lives as long as the process
    started = process->start(argc, argv);
  }
  launcher = process;
  return started;
}
