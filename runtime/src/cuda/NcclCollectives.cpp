//===- NcclCollectives.cpp - NCCL for the CUDA backend --------------------===//

#include "cuda/NcclCollectives.h"
#include "cuda/NcclTransfers.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if MTRT_HAVE_NCCL
#include "cuda/NcclLibrary.h"

using namespace mtrt;
using namespace mtrt::gpu;

struct NcclCollectives::Impl {
  /// One per grid axis (null where the group is one rank).
  std::vector<ncclComm_t> comms;

  ~Impl() {
    const NcclLibrary &nccl = NcclLibrary::get();
    for (ncclComm_t comm : comms)
      if (comm && nccl.commDestroy)
        nccl.commDestroy(comm);
  }
};

NcclCollectives::NcclCollectives() : impl(std::make_unique<Impl>()) {}
NcclCollectives::~NcclCollectives() = default;

Status NcclCollectives::open(const Communicator &grid, int ordinal,
                             int64_t skipAxis, bool hostOnly,
                             std::vector<std::string> &hostWhy) {
  const size_t axes = grid.coords().size();
  hostWhy.assign(axes, "");
  impl->comms.assign(axes, nullptr);
  const NcclLibrary &nccl = NcclLibrary::get();
  // Whether this rank can join.
  std::string cannot = hostOnly ? std::string() : ncclUnusable();
  // The id travels as 32 int32 words through the run's all-gather.
  static_assert(sizeof(ncclUniqueId) % sizeof(int32_t) == 0);
  constexpr int64_t kWords = sizeof(ncclUniqueId) / sizeof(int32_t);
  // A group's failure is its members' alike; it is returned after every
  // axis' exchanges, so that no other group waits for this rank in one.
  Status failed = Status::ok();
  for (size_t axis = 0; axis < axes; ++axis) {
    int64_t size = grid.groupSize(int64_t(axis));
    if (size <= 1 || int64_t(axis) == skipAxis)
      continue;
    // Each member's GPU, whether it can join NCCL and whether it asked
    // for host memory: every member of the group decides alike.
    GroupMembers members;
    MTRT_RETURN_IF_ERROR(
        members.gather(grid, int64_t(axis), ordinal, cannot.empty(), hostOnly));
    bool shared = false, asked = false;
    for (int64_t a = 0; a < size; ++a) {
      asked |= members.askedHost(a);
      for (int64_t b = a + 1; b < size && !shared; ++b)
        shared = members.sameGpu(a, b);
    }
    if (asked || shared) {
      hostWhy[axis] = asked ? "MEGATRON_CUDA_COLLECTIVES=host"
                            : "ranks of its group share a GPU, which NCCL "
                              "refuses";
      continue;
    }
    int64_t unable = -1;
    for (int64_t m = 0; m < size && unable < 0; ++m)
      if (!members.canJoin(m))
        unable = m;
    if (unable >= 0) {
      if (failed)
        failed = Status::error(
            "member " + std::to_string(unable) + " of grid axis " +
            std::to_string(axis) + "'s group cannot use NCCL" +
            (cannot.empty() ? std::string() : " (here: " + cannot + ")") +
            "; MEGATRON_CUDA_COLLECTIVES=host runs the collectives through "
            "host memory instead");
      continue;
    }
    int64_t member = grid.groupIndex(int64_t(axis));
    ncclUniqueId id;
    std::memset(&id, 0, sizeof(id));
    // The first member makes the id; a failure there still takes part in
    // the exchange (with zeros), so that every member learns of it
    // instead of waiting.
    Status made = member == 0
                      ? checkNccl(nccl.getUniqueId(&id), "ncclGetUniqueId")
                      : Status::ok();
    std::vector<ncclUniqueId> ids(static_cast<size_t>(size));
    MTRT_RETURN_IF_ERROR(
        grid.allGather(int64_t(axis), &id, ids.data(), kWords, DType::I32));
    ncclUniqueId none;
    std::memset(&none, 0, sizeof(none));
    if (std::memcmp(&ids[0], &none, sizeof(none)) == 0) {
      if (failed)
        failed = made ? Status::error("the first rank of grid axis " +
                                      std::to_string(axis) +
                                      "'s group could not make an NCCL id")
                      : made;
      continue;
    }
    std::string joining = "joining the NCCL communicator of grid axis " +
                          std::to_string(axis) + " (" + std::to_string(size) +
                          " ranks)";
    Deadline deadline = joinDeadline(grid, joining);
    Status joined = checkNccl(
        nccl.commInitRank(&impl->comms[axis], int(size), ids[0], int(member)),
        joining);
    if (failed && !joined)
      failed = joined;
  }
  return failed;
}

bool NcclCollectives::joined() const {
  for (ncclComm_t comm : impl->comms)
    if (comm)
      return true;
  return false;
}

std::string NcclCollectives::backgroundError() const {
  for (size_t axis = 0; axis < impl->comms.size(); ++axis)
    if (std::string error = ncclBackgroundError(
            impl->comms[axis],
            "the NCCL communicator of grid axis " + std::to_string(axis));
        !error.empty())
      return error;
  return "";
}

void mtrt::gpu::abortTogether(NcclCollectives &collectives,
                              NcclTransfers &transfers, double seconds) {
  std::vector<ncclComm_t> comms = collectives.releaseForAbort();
  for (ncclComm_t comm : transfers.releaseForAbort())
    comms.push_back(comm);
  ncclAbortAll(std::move(comms), seconds);
}

std::vector<ncclComm_t> NcclCollectives::releaseForAbort() {
  std::vector<ncclComm_t> released;
  for (ncclComm_t &comm : impl->comms) {
    released.push_back(comm);
    comm = nullptr;
  }
  return released;
}

namespace {
/// Runs `call(comm)` with the axis' communicator, naming `what` on failure.
template <typename Call>
Status onAxis(const std::vector<ncclComm_t> &comms, int64_t axis,
              const char *what, Call call) {
  if (axis < 0 || size_t(axis) >= comms.size() || !comms[size_t(axis)])
    return Status::error(std::string(what) +
                         ": no NCCL communicator for grid axis " +
                         std::to_string(axis));
  return checkNccl(call(comms[size_t(axis)]), what);
}

ncclRedOp_t ncclOpOf(ReduceOp op) {
  return op == ReduceOp::Average ? ncclAvg
         : op == ReduceOp::Max   ? ncclMax
                                 : ncclSum;
}
} // namespace

Status NcclCollectives::allReduce(int64_t axis, void *data, int64_t count,
                                  DType dtype, ReduceOp op,
                                  cudaStream_t stream) {
  if (dtype != DType::F32 && dtype != DType::F64)
    return Status::error(std::string("an NCCL all-reduce of ") +
                         dtypeName(dtype) + " (f32 or f64 only)");
  return onAxis(impl->comms, axis, "ncclAllReduce", [&](ncclComm_t comm) {
    return NcclLibrary::get().allReduce(data, data, size_t(count),
                                        dtype == DType::F64 ? ncclFloat64
                                                            : ncclFloat32,
                                        ncclOpOf(op), comm, stream);
  });
}

Status NcclCollectives::reduceScatter(int64_t axis, const float *in, float *out,
                                      int64_t count, ReduceOp op,
                                      cudaStream_t stream) {
  return onAxis(impl->comms, axis, "ncclReduceScatter", [&](ncclComm_t comm) {
    return NcclLibrary::get().reduceScatter(in, out, size_t(count), ncclFloat32,
                                            ncclOpOf(op), comm, stream);
  });
}

Status NcclCollectives::allGather(int64_t axis, const float *in, float *out,
                                  int64_t count, cudaStream_t stream) {
  return onAxis(impl->comms, axis, "ncclAllGather", [&](ncclComm_t comm) {
    return NcclLibrary::get().allGather(in, out, size_t(count), ncclFloat32,
                                        comm, stream);
  });
}

#else // !MTRT_HAVE_NCCL

// Built without nccl.h: a program with collectives across ranks is refused
// when it is prepared, naming what is missing.
using namespace mtrt;
using namespace mtrt::gpu;

struct NcclCollectives::Impl {};
NcclCollectives::NcclCollectives() : impl(std::make_unique<Impl>()) {}
NcclCollectives::~NcclCollectives() = default;

Status NcclCollectives::open(const Communicator &grid, int, int64_t skipAxis,
                             bool hostOnly, std::vector<std::string> &hostWhy) {
  // Every group through host memory.
  hostWhy.assign(grid.coords().size(), "");
  for (size_t axis = 0; axis < hostWhy.size(); ++axis)
    if (grid.groupSize(int64_t(axis)) > 1 && int64_t(axis) != skipAxis)
      hostWhy[axis] = hostOnly ? "MEGATRON_CUDA_COLLECTIVES=host"
                               : "this build of the CUDA backend has no NCCL "
                                 "(nccl.h was not found)";
  return Status::ok();
}
static Status noNccl() { return Status::error("no NCCL in this build"); }
Status NcclCollectives::allReduce(int64_t, void *, int64_t, DType, ReduceOp,
                                  cudaStream_t) {
  return noNccl();
}
Status NcclCollectives::reduceScatter(int64_t, const float *, float *, int64_t,
                                      ReduceOp, cudaStream_t) {
  return noNccl();
}
Status NcclCollectives::allGather(int64_t, const float *, float *, int64_t,
                                  cudaStream_t) {
  return noNccl();
}
bool NcclCollectives::joined() const { return false; }
std::string NcclCollectives::backgroundError() const { return ""; }
std::vector<ncclComm *> NcclCollectives::releaseForAbort() { return {}; }
void mtrt::gpu::abortTogether(NcclCollectives &, NcclTransfers &, double) {}

#endif // MTRT_HAVE_NCCL
