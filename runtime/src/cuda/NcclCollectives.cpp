//===- NcclCollectives.cpp - NCCL for the CUDA backend --------------------===//

#include "cuda/NcclCollectives.h"

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#if MTRT_HAVE_NCCL
#include <nccl.h>

#include <dlfcn.h>

using namespace mtrt;
using namespace mtrt::gpu;

namespace {

/// The NCCL entry points the backend calls, from the library dlopen
/// found; types from nccl.h, so that a signature change fails to compile.
struct NcclLibrary {
  decltype(&ncclGetVersion) getVersion = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRank) commInitRank = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclGetErrorString) getErrorString = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclReduceScatter) reduceScatter = nullptr;
  decltype(&ncclAllGather) allGather = nullptr;
  std::string error; // why it did not load

  /// The process's one copy, loaded at first use.
  static const NcclLibrary &get() {
    static const NcclLibrary library = load();
    return library;
  }

private:
  static NcclLibrary load() {
    NcclLibrary library;
    const char *name = std::getenv("MEGATRON_NCCL_LIBRARY");
    if (!name || !*name)
      name = "libnccl.so.2";
    void *handle = dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
      const char *why = dlerror();
      library.error = std::string("cannot load ") + name + ": " +
                      (why ? why : "unknown error") +
                      " (set MEGATRON_NCCL_LIBRARY to NCCL 2's libnccl.so)";
      return library;
    }
    auto bind = [&](auto &entry, const char *symbol) {
      entry = reinterpret_cast<std::remove_reference_t<decltype(entry)>>(
          dlsym(handle, symbol));
      if (!entry && library.error.empty())
        library.error = std::string(name) + " has no " + symbol;
    };
    bind(library.getVersion, "ncclGetVersion");
    bind(library.getUniqueId, "ncclGetUniqueId");
    bind(library.commInitRank, "ncclCommInitRank");
    bind(library.commDestroy, "ncclCommDestroy");
    bind(library.getErrorString, "ncclGetErrorString");
    bind(library.allReduce, "ncclAllReduce");
    bind(library.reduceScatter, "ncclReduceScatter");
    bind(library.allGather, "ncclAllGather");
    return library;
  }
};

Status checkNccl(ncclResult_t result, const std::string &what) {
  if (result == ncclSuccess)
    return Status::ok();
  const NcclLibrary &nccl = NcclLibrary::get();
  return Status::error(
      what + " failed (NCCL: " +
      (nccl.getErrorString ? nccl.getErrorString(result) : "unknown error") +
      ")");
}

} // namespace

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

Status NcclCollectives::open(const Communicator &grid) {
  const NcclLibrary &nccl = NcclLibrary::get();
  if (!nccl.error.empty())
    return Status::error(nccl.error);
  // ncclAvg (the averaging reductions) came with NCCL 2.10.
  int version = 0;
  MTRT_RETURN_IF_ERROR(checkNccl(nccl.getVersion(&version), "ncclGetVersion"));
  if (version < 21000)
    return Status::error("NCCL " + std::to_string(version) +
                         " is older than 2.10, which the averaging "
                         "collectives need");
  const size_t axes = grid.coords().size();
  impl->comms.assign(axes, nullptr);
  // The id travels as 32 int32 words through the run's all-gather.
  static_assert(sizeof(ncclUniqueId) % sizeof(int32_t) == 0);
  constexpr int64_t kWords = sizeof(ncclUniqueId) / sizeof(int32_t);
  for (size_t axis = 0; axis < axes; ++axis) {
    int64_t size = grid.groupSize(int64_t(axis));
    if (size <= 1)
      continue;
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
    MTRT_RETURN_IF_ERROR(made);
    ncclUniqueId none;
    std::memset(&none, 0, sizeof(none));
    if (std::memcmp(&ids[0], &none, sizeof(none)) == 0)
      return Status::error("the first rank of grid axis " +
                           std::to_string(axis) +
                           "'s group could not make an NCCL id");
    MTRT_RETURN_IF_ERROR(checkNccl(
        nccl.commInitRank(&impl->comms[axis], int(size), ids[0], int(member)),
        "joining the NCCL communicator of grid axis " + std::to_string(axis) +
            " (" + std::to_string(size) + " ranks)"));
  }
  return Status::ok();
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
} // namespace

Status NcclCollectives::allReduce(int64_t axis, float *data, int64_t count,
                                  bool average, cudaStream_t stream) {
  return onAxis(impl->comms, axis, "ncclAllReduce", [&](ncclComm_t comm) {
    return NcclLibrary::get().allReduce(data, data, size_t(count), ncclFloat32,
                                        average ? ncclAvg : ncclSum, comm,
                                        stream);
  });
}

Status NcclCollectives::reduceScatter(int64_t axis, const float *in, float *out,
                                      int64_t count, bool average,
                                      cudaStream_t stream) {
  return onAxis(impl->comms, axis, "ncclReduceScatter", [&](ncclComm_t comm) {
    return NcclLibrary::get().reduceScatter(in, out, size_t(count), ncclFloat32,
                                            average ? ncclAvg : ncclSum, comm,
                                            stream);
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

Status NcclCollectives::open(const Communicator &) {
  return Status::error("this build of the CUDA backend has no NCCL (nccl.h "
                       "was not found)");
}
static Status noNccl() { return Status::error("no NCCL in this build"); }
Status NcclCollectives::allReduce(int64_t, float *, int64_t, bool,
                                  cudaStream_t) {
  return noNccl();
}
Status NcclCollectives::reduceScatter(int64_t, const float *, float *, int64_t,
                                      bool, cudaStream_t) {
  return noNccl();
}
Status NcclCollectives::allGather(int64_t, const float *, float *, int64_t,
                                  cudaStream_t) {
  return noNccl();
}

#endif // MTRT_HAVE_NCCL
