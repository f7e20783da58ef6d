//===- Mpi.h - The MPI launcher and communicator ----------------*- C++ -*-===//
//
// mtrt::Launcher and mtrt::Communicator over MPI, for CPU ranks (and, later,
// the bootstrap of NCCL's unique id). A process started without an MPI
// launcher is a world of one that never initializes MPI; its collectives
// are copies.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_MPI_MPI_H
#define MTRT_MPI_MPI_H

#include "mtrt/Launcher.h"

// The C API only: the deprecated C++ bindings would need their own library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace mtrt::mpi {

/// An MPI return code as a Status naming `what`.
Status check(int code, const char *what);

/// Waits for `request`, giving up after `timeoutSeconds` (0: never) with an
/// error naming `what`: a peer that stops answering must not hang the rank.
Status wait(MPI_Request &request, const std::string &what,
            double timeoutSeconds, MPI_Status *status = MPI_STATUS_IGNORE);

class MpiCommunicator final : public Communicator {
public:
  /// Over `shape` (its product is the world size); `usesMpi` false: a world
  /// of one. `timeoutSeconds` is the launcher's, read at every wait.
  MpiCommunicator(std::vector<int64_t> shape, int worldRank, bool usesMpi,
                  const double &timeoutSeconds);
  ~MpiCommunicator() override;
  /// Splits MPI_COMM_WORLD into one group per axis.
  Status createGroups();

  const std::vector<int64_t> &coords() const override { return myCoords; }
  int64_t groupSize(int64_t axis) const override { return shape[size_t(axis)]; }
  Status allReduce(int64_t axis, void *data, int64_t count, DType dtype,
                   ReduceOp op) const override;
  Status allReduceStrided(int64_t axis, int64_t stride, void *data,
                          int64_t count, DType dtype,
                          ReduceOp op) const override;
  Status reduceScatter(int64_t axis, const void *in, void *out, int64_t count,
                       DType dtype, ReduceOp op) const override;
  Status allGather(int64_t axis, const void *in, void *out, int64_t count,
                   DType dtype) const override;
  Status reduceScatterStrided(int64_t axis, int64_t stride, const void *in,
                              void *out, int64_t count, DType dtype,
                              ReduceOp op) const override;
  Status allGatherStrided(int64_t axis, int64_t stride, const void *in,
                          void *out, int64_t count, DType dtype) const override;
  Status send(int64_t axis, int64_t peer, int64_t tag, const void *data,
              int64_t bytes) const override;
  Status recv(int64_t axis, int64_t peer, int64_t tag, void *data,
              int64_t bytes) const override;
  Status finishSends() const override;
  int64_t peakSendCopyBytes() const override { return peakInFlight; }
  double timeoutSeconds() const override { return timeout; }

private:
  std::string describeAxis(int64_t axis) const;
  Status checkAxis(int64_t axis) const;
  /// The group of every `stride`th rank of `axis` holding this rank (the
  /// whole axis for stride 1; MPI_COMM_NULL for a group of one or without
  /// MPI), its size, and how a timeout's error names it; an error if the
  /// stride does not divide the axis.
  struct Group {
    MPI_Comm comm = MPI_COMM_NULL;
    int64_t members = 1;
    std::string name;
  };
  Status stridedGroup(int64_t axis, int64_t stride, Group &group) const;
  /// In place over `group` (of `members` ranks); `what` names it in a
  /// timeout's error.
  Status reduceInGroup(MPI_Comm group, int64_t members, const std::string &what,
                       void *data, int64_t count, DType dtype,
                       ReduceOp op) const;
  /// Frees the copies of the sends that have completed.
  void reapSends() const;

  std::vector<int64_t> shape;
  std::vector<int64_t> myCoords;
  bool usesMpi;
  const double &timeout;
  std::vector<MPI_Comm> groups;
  /// Per axis and stride (a divisor of the axis' size between 1 and it):
  /// the ranks of the axis' group with this rank's coordinate modulo the
  /// stride. Made with the groups, so no run waits on a split mid-step.
  std::map<std::pair<int64_t, int64_t>, MPI_Comm> stridedGroups;
  /// Sends in flight: their copied bytes and requests (bookkeeping of
  /// calls that are otherwise const, like the collectives), and the bytes
  /// the copies hold, now and at most.
  struct PendingSend {
    std::vector<uint8_t> bytes;
    MPI_Request request;
  };
  mutable std::vector<PendingSend> pendingSends;
  mutable int64_t inFlight = 0, peakInFlight = 0;
};

class MpiLauncher final : public Launcher {
public:
  /// Initializes MPI when an MPI launcher started this process.
  Status start(int &argc, char **&argv);

  const char *name() const override {
    return usesMpi ? "mpi" : "single process";
  }
  int rank() const override { return worldRank; }
  int size() const override { return worldSize; }
  void setTimeout(double seconds) override { timeoutSeconds = seconds; }
  Status broadcast(int root, double &value) const override;
  Status gatherToRoot(const void *in, int64_t bytes,
                      std::vector<uint8_t> &out) const override;
  Status gatherStringsToRoot(const std::string &text,
                             std::vector<std::string> &out) const override;
  bool allAgree(bool ok) const override;
  [[noreturn]] void abort(int code) const override;
  Status createCommunicator(const std::vector<int64_t> &gridShape,
                            std::unique_ptr<Communicator> &out) override;

private:
  int worldRank = 0;
  int worldSize = 1;
  bool usesMpi = false;
  double timeoutSeconds = 0;
};

} // namespace mtrt::mpi

#endif // MTRT_MPI_MPI_H
