//===- NcclLibrary.h - NCCL, loaded at run time -----------------*- C++ -*-===//
//
// The NCCL entry points the CUDA backend calls (NcclCollectives,
// NcclTransfers), from the library dlopen finds: libnccl.so.2, or
// MEGATRON_NCCL_LIBRARY. The backend itself loads on a machine without
// NCCL and says so only when a program needs it. Included only where
// nccl.h was found (MTRT_HAVE_NCCL).
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_NCCLLIBRARY_H
#define MTRT_CUDA_NCCLLIBRARY_H

#include "mtrt/Communicator.h"
#include "mtrt/Deadline.h"
#include "mtrt/Status.h"

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

namespace mtrt::gpu {

/// The NCCL entry points the backend calls, from the library dlopen
/// found; types from nccl.h, so that a signature change fails to compile.
struct NcclLibrary {
  decltype(&ncclGetVersion) getVersion = nullptr;
  decltype(&ncclGetUniqueId) getUniqueId = nullptr;
  decltype(&ncclCommInitRank) commInitRank = nullptr;
  decltype(&ncclCommDestroy) commDestroy = nullptr;
  decltype(&ncclCommAbort) commAbort = nullptr;
  decltype(&ncclCommGetAsyncError) commGetAsyncError = nullptr;
  decltype(&ncclGetErrorString) getErrorString = nullptr;
  decltype(&ncclAllReduce) allReduce = nullptr;
  decltype(&ncclReduceScatter) reduceScatter = nullptr;
  decltype(&ncclAllGather) allGather = nullptr;
  decltype(&ncclSend) send = nullptr;
  decltype(&ncclRecv) recv = nullptr;
  decltype(&ncclGroupStart) groupStart = nullptr;
  decltype(&ncclGroupEnd) groupEnd = nullptr;
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
    bind(library.commAbort, "ncclCommAbort");
    bind(library.commGetAsyncError, "ncclCommGetAsyncError");
    bind(library.getErrorString, "ncclGetErrorString");
    bind(library.allReduce, "ncclAllReduce");
    bind(library.reduceScatter, "ncclReduceScatter");
    bind(library.allGather, "ncclAllGather");
    bind(library.send, "ncclSend");
    bind(library.recv, "ncclRecv");
    bind(library.groupStart, "ncclGroupStart");
    bind(library.groupEnd, "ncclGroupEnd");
    return library;
  }
};

inline Status checkNccl(ncclResult_t result, const std::string &what) {
  if (result == ncclSuccess)
    return Status::ok();
  const NcclLibrary &nccl = NcclLibrary::get();
  return Status::error(
      what + " failed (NCCL: " +
      (nccl.getErrorString ? nccl.getErrorString(result) : "unknown error") +
      ")");
}

/// NCCL's background error on `comm` ("" if none, or no communicator):
/// what went wrong while its kernels ran, e.g. a peer's connection lost.
/// `which` names the communicator.
inline std::string ncclBackgroundError(ncclComm_t comm,
                                       const std::string &which) {
  if (!comm)
    return "";
  const NcclLibrary &nccl = NcclLibrary::get();
  ncclResult_t state = ncclSuccess;
  if (nccl.commGetAsyncError(comm, &state) != ncclSuccess)
    return which + ": NCCL could not say its state";
  // (The communicators are blocking: ncclInProgress, of NCCL 2.14's
  // non-blocking ones, is not an answer here.)
  if (state == ncclSuccess)
    return "";
  return which + ": " + nccl.getErrorString(state);
}

/// Aborts `comm` (its kernels waiting on a peer return; it is freed) and
/// forgets it.
/// Aborts `comms` all at once, each on a thread of its own: ncclCommAbort
/// sets only its own communicator's abort flag and then waits for that
/// communicator's work, which can sit behind the kernels of another one
/// still waiting for a dead peer (a step's CUDA graph holds several, one
/// per grid axis and per pipeline direction), so aborting them one after
/// the other can hang on the first. Past `seconds` (the run's deadline)
/// this process says so and ends, as every other wait for a rank does.
inline void ncclAbortAll(std::vector<ncclComm_t> comms, double seconds) {
  Deadline deadline(seconds, [seconds] {
    std::fprintf(stderr,
                 "megatron-run: error: aborting this rank's NCCL "
                 "communicators: %s\n",
                 noAnswerWithin(seconds).c_str());
    std::fflush(stderr);
    std::_Exit(1);
  });
  std::vector<std::thread> aborts;
  for (ncclComm_t comm : comms)
    if (comm)
      aborts.emplace_back([comm] { NcclLibrary::get().commAbort(comm); });
  for (std::thread &abort : aborts)
    abort.join();
}

/// The run's deadline (`grid`'s) for joining NCCL, `what`: ncclCommInitRank
/// waits for every member of the group and takes no deadline, so past it
/// this process says what did not finish and ends (under mpirun the others
/// end with it), as every other wait for a rank gives up.
inline Deadline joinDeadline(const Communicator &grid, std::string what) {
  double seconds = grid.timeoutSeconds();
  return Deadline(seconds, [what = std::move(what), seconds] {
    std::fprintf(stderr,
                 "megatron-run: error: %s: %s: a rank of its group stopped "
                 "answering\n",
                 what.c_str(), noAnswerWithin(seconds).c_str());
    std::fflush(stderr);
    std::_Exit(1);
  });
}

/// Why this process cannot use NCCL ("" when it can): the library did not
/// load, or is older than 2.10 (ncclAvg, the averaging reductions).
inline std::string ncclUnusable() {
  const NcclLibrary &nccl = NcclLibrary::get();
  if (!nccl.error.empty())
    return nccl.error;
  int version = 0;
  if (Status read = checkNccl(nccl.getVersion(&version), "ncclGetVersion");
      !read)
    return read.message();
  if (version < 21000)
    return "NCCL " + std::to_string(version) +
           " is older than 2.10, which the averaging collectives need";
  return "";
}

/// What the members of a group (the ranks along one grid axis) tell each
/// other before they join NCCL: their GPU (its UUID; NCCL refuses two ranks
/// on one GPU), whether they can use NCCL and whether they asked for host
/// memory (MEGATRON_CUDA_COLLECTIVES=host, which may differ between nodes).
/// Every member decides alike from what all of them said.
class GroupMembers {
public:
  /// All-gathers this rank's words along `axis` of `grid`; `ordinal` is
  /// this rank's GPU.
  Status gather(const Communicator &grid, int64_t axis, int ordinal,
                bool canJoin, bool hostOnly) {
    int32_t mine[kWords] = {};
    cudaDeviceProp properties;
    // A rank that cannot read its GPU still takes part in the exchange
    // (as one that cannot join), so that the others do not wait for it
    // until the run's deadline; then it fails.
    cudaError_t error = cudaGetDeviceProperties(&properties, ordinal);
    if (error == cudaSuccess)
      std::memcpy(mine, &properties.uuid, sizeof(properties.uuid));
    mine[kUuidWords] = canJoin && error == cudaSuccess ? 1 : 0;
    mine[kUuidWords + 1] = hostOnly ? 1 : 0;
    words.assign(size_t(grid.groupSize(axis) * kWords), 0);
    MTRT_RETURN_IF_ERROR(
        grid.allGather(axis, mine, words.data(), kWords, DType::I32));
    if (error != cudaSuccess)
      return Status::error(std::string("reading this rank's GPU (") +
                           cudaGetErrorName(error) + ")");
    return Status::ok();
  }
  bool sameGpu(int64_t a, int64_t b) const {
    return std::memcmp(of(a), of(b), kUuidWords * sizeof(int32_t)) == 0;
  }
  bool canJoin(int64_t m) const { return of(m)[kUuidWords] != 0; }
  bool askedHost(int64_t m) const { return of(m)[kUuidWords + 1] != 0; }

private:
  static constexpr int64_t kUuidWords = sizeof(cudaUUID_t) / sizeof(int32_t);
  static constexpr int64_t kWords = kUuidWords + 2;
  static_assert(sizeof(cudaUUID_t) % sizeof(int32_t) == 0);
  const int32_t *of(int64_t m) const { return words.data() + m * kWords; }
  std::vector<int32_t> words;
};

} // namespace mtrt::gpu

#endif // MTRT_CUDA_NCCLLIBRARY_H
