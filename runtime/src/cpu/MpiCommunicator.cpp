//===- MpiCommunicator.cpp - Collectives of CPU ranks over MPI ------------===//

#include "mtrt/Communicator.h"

// The C API only: the deprecated C++ bindings would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <thread>

using namespace mtrt;

namespace {
// OpenMPI's MPI_Comm is a pointer; the groups are kept as heap copies so
// that the header stays independent of the MPI implementation.
MPI_Comm &commOf(void *group) { return *static_cast<MPI_Comm *>(group); }

Status check(int code, const char *what) {
  if (code == MPI_SUCCESS)
    return Status::ok();
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  return Status::error(std::string("MPI ") + what +
                       " failed: " + std::string(text, length));
}
} // namespace

Status Communicator::wait(void *requestPtr, const std::string &what,
                          void *statusPtr) const {
  MPI_Request &request = *static_cast<MPI_Request *>(requestPtr);
  MPI_Status *status =
      statusPtr ? static_cast<MPI_Status *>(statusPtr) : MPI_STATUS_IGNORE;
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
    if (waited > timeoutSeconds) {
      char text[64];
      std::snprintf(text, sizeof(text), "%g", timeoutSeconds);
      return Status::error("no answer within " + std::string(text) +
                           " s (--distributed-timeout-minutes) in " + what);
    }
    if (polls > 1000)
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

std::string Communicator::describeAxis(int64_t axis) const {
  return "grid axis " + std::to_string(axis) + " (a group of " +
         std::to_string(shape[axis]) + " ranks; a peer did not answer)";
}

/// True when an MPI launcher (mpirun, mpiexec, srun) started this process.
static bool launchedByMpi() {
  for (const char *name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK",
                           "PMIX_RANK", "MPI_LOCALNRANKS"})
    if (std::getenv(name))
      return true;
  return false;
}

Status Communicator::init(int &argc, char **&argv, Communicator &comm) {
  comm.usesMpi = launchedByMpi();
  if (!comm.usesMpi)
    return Status::ok();
  int done = 0;
  MPI_Initialized(&done);
  if (!done)
    MTRT_RETURN_IF_ERROR(check(MPI_Init(&argc, &argv), "initialization"));
  comm.initialized = !done;
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &comm.worldRank);
  MPI_Comm_size(MPI_COMM_WORLD, &comm.worldSize);
  return Status::ok();
}

Communicator::~Communicator() {
  for (void *group : groups) {
    MPI_Comm_free(&commOf(group));
    delete static_cast<MPI_Comm *>(group);
  }
  if (initialized)
    MPI_Finalize();
}

Status Communicator::setGrid(const std::vector<int64_t> &gridShape) {
  shape = gridShape.empty() ? std::vector<int64_t>{worldSize} : gridShape;
  int64_t total = 1;
  for (int64_t dim : shape)
    total *= dim;
  if (total != worldSize)
    return Status::error("the device grid has " + std::to_string(total) +
                         " ranks but the run has " + std::to_string(worldSize));
  // Row-major coordinates: the last axis varies fastest.
  myCoords.assign(shape.size(), 0);
  int64_t rest = worldRank;
  for (int64_t axis = int64_t(shape.size()) - 1; axis >= 0; --axis) {
    myCoords[axis] = rest % shape[axis];
    rest /= shape[axis];
  }
  if (!usesMpi)
    return Status::ok();
  for (size_t axis = 0; axis < shape.size(); ++axis) {
    // Ranks that agree on every other axis form the group.
    int64_t color = 0;
    for (size_t other = 0; other < shape.size(); ++other)
      color = color * shape[other] + (other == axis ? 0 : myCoords[other]);
    auto *group = new MPI_Comm;
    Status status = check(
        MPI_Comm_split(MPI_COMM_WORLD, int(color), int(myCoords[axis]), group),
        "group creation");
    if (!status) {
      delete group;
      return status;
    }
    groups.push_back(group);
  }
  return Status::ok();
}

int64_t Communicator::groupSize(int64_t axis) const { return shape[axis]; }

Status Communicator::allReduce(int64_t axis, float *data, int64_t count,
                               bool average) const {
  if (!usesMpi)
    return Status::ok();
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Iallreduce(MPI_IN_PLACE, data, int(count), MPI_FLOAT, MPI_SUM,
                           commOf(groups[axis]), &request),
            "all-reduce"));
  MTRT_RETURN_IF_ERROR(
      wait(&request, "an all-reduce over " + describeAxis(axis)));
  if (average)
    for (int64_t i = 0; i < count; ++i)
      data[i] /= float(shape[axis]);
  return Status::ok();
}

Status Communicator::allReduceDouble(int64_t axis, double *data, int64_t count,
                                     bool maximum) const {
  if (!usesMpi)
    return Status::ok();
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Iallreduce(MPI_IN_PLACE, data, int(count), MPI_DOUBLE,
                           maximum ? MPI_MAX : MPI_SUM, commOf(groups[axis]),
                           &request),
            "all-reduce"));
  return wait(&request, "an all-reduce over " + describeAxis(axis));
}

Status Communicator::reduceScatter(int64_t axis, const float *in, float *out,
                                   int64_t count, bool average) const {
  if (!usesMpi) {
    std::memcpy(out, in, size_t(count) * sizeof(float));
    return Status::ok();
  }
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Ireduce_scatter_block(in, out, int(count), MPI_FLOAT, MPI_SUM,
                                      commOf(groups[axis]), &request),
            "reduce-scatter"));
  MTRT_RETURN_IF_ERROR(
      wait(&request, "a reduce-scatter over " + describeAxis(axis)));
  if (average)
    for (int64_t i = 0; i < count; ++i)
      out[i] /= float(shape[axis]);
  return Status::ok();
}

Status Communicator::allGather(int64_t axis, const float *in, float *out,
                               int64_t count) const {
  if (!usesMpi) {
    std::memcpy(out, in, size_t(count) * sizeof(float));
    return Status::ok();
  }
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Iallgather(in, int(count), MPI_FLOAT, out, int(count),
                           MPI_FLOAT, commOf(groups[axis]), &request),
            "all-gather"));
  return wait(&request, "an all-gather over " + describeAxis(axis));
}

Status Communicator::send(int64_t axis, int64_t peer, int64_t tag,
                          const void *data, int64_t bytes) const {
  if (!usesMpi)
    return Status::error("a send needs a second rank (run under mpirun)");
  int *upper = nullptr, found = 0;
  MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &upper, &found);
  if (found && tag > *upper)
    return Status::error("transfer tag " + std::to_string(tag) +
                         " exceeds this MPI's largest tag " +
                         std::to_string(*upper));
  sendBuffers.emplace_back(static_cast<const uint8_t *>(data),
                           static_cast<const uint8_t *>(data) + bytes);
  auto *request = new MPI_Request;
  Status status =
      check(MPI_Isend(sendBuffers.back().data(), int(bytes), MPI_BYTE,
                      int(peer), int(tag), commOf(groups[axis]), request),
            "send");
  sendRequests.push_back(request);
  return status;
}

Status Communicator::recv(int64_t axis, int64_t peer, int64_t tag, void *data,
                          int64_t bytes) const {
  if (!usesMpi)
    return Status::error("a receive needs a second rank (run under mpirun)");
  MPI_Status status;
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Irecv(data, int(bytes), MPI_BYTE, int(peer), int(tag),
                      commOf(groups[axis]), &request),
            "receive"));
  MTRT_RETURN_IF_ERROR(wait(&request,
                            "a receive from pipeline stage " +
                                std::to_string(peer) + " (tag " +
                                std::to_string(tag) + "), which did not send",
                            &status));
  int count = 0;
  MPI_Get_count(&status, MPI_BYTE, &count);
  if (count != bytes)
    return Status::error("received " + std::to_string(count) +
                         " bytes from stage " + std::to_string(peer) +
                         " (tag " + std::to_string(tag) + "), expected " +
                         std::to_string(bytes));
  return Status::ok();
}

Status Communicator::finishSends() const {
  Status result = Status::ok();
  for (void *request : sendRequests) {
    Status status = wait(request, "the completion of this step's sends");
    if (result && !status)
      result = status;
    delete static_cast<MPI_Request *>(request);
  }
  sendRequests.clear();
  sendBuffers.clear();
  return result;
}

Status Communicator::broadcast(int root, double &value) const {
  if (!usesMpi)
    return Status::ok();
  MPI_Request request;
  MTRT_RETURN_IF_ERROR(
      check(MPI_Ibcast(&value, 1, MPI_DOUBLE, root, MPI_COMM_WORLD, &request),
            "broadcast"));
  return wait(&request, "a broadcast from rank " + std::to_string(root));
}

Status Communicator::gatherToRoot(const void *in, int64_t bytes,
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
  return wait(&request, "a gather to rank 0");
}

Status Communicator::gatherStringsToRoot(const std::string &text,
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
  MTRT_RETURN_IF_ERROR(wait(&request, "a gather to rank 0"));
  std::vector<int> offsets(lengths.size(), 0);
  for (size_t r = 1; r < lengths.size(); ++r)
    offsets[r] = offsets[r - 1] + lengths[r - 1];
  std::vector<char> all(
      lengths.empty() ? 0 : size_t(offsets.back()) + size_t(lengths.back()));
  MTRT_RETURN_IF_ERROR(check(
      MPI_Igatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(),
                   offsets.data(), MPI_CHAR, 0, MPI_COMM_WORLD, &request),
      "gather"));
  MTRT_RETURN_IF_ERROR(wait(&request, "a gather to rank 0"));
  out.clear();
  for (size_t r = 0; r < lengths.size(); ++r)
    out.emplace_back(all.data() + offsets[r], size_t(lengths[r]));
  return Status::ok();
}

bool Communicator::allAgree(bool ok) const {
  if (!usesMpi)
    return ok;
  int mine = ok ? 1 : 0, all = 0;
  MPI_Request request;
  MPI_Iallreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD, &request);
  // A rank that cannot learn whether the others agree cannot go on.
  if (Status status = wait(&request, "an agreement of all ranks"); !status) {
    std::fprintf(stderr, "megatron-run: error: rank %d: %s\n", worldRank,
                 status.message().c_str());
    abort(1);
  }
  return all == 1;
}

void Communicator::abort(int code) const {
  if (usesMpi)
    MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}
