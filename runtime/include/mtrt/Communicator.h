//===- Communicator.h - The ranks of a run and their collectives -*- C++ -*-=//
//
// One process per rank, launched by mpirun (or any MPI launcher); a process
// started alone is a world of one and does not start MPI at all (its
// start-up costs a large part of a second). On a device grid, the
// collectives of an axis run among the ranks whose coordinates differ only
// on that axis, as `shard` collectives with `grid_axes = [axis]` mean.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_COMMUNICATOR_H
#define MTRT_COMMUNICATOR_H

#include "mtrt/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mtrt {

class Communicator {
public:
  /// Initializes MPI once per process.
  static Status init(int &argc, char **&argv, Communicator &comm);
  Communicator() = default;
  Communicator(const Communicator &) = delete;
  Communicator &operator=(const Communicator &) = delete;
  ~Communicator();

  int rank() const { return worldRank; }
  int size() const { return worldSize; }

  /// Builds one group per grid axis for this rank. An empty shape is a grid
  /// of one axis holding every rank.
  Status setGrid(const std::vector<int64_t> &shape);
  const std::vector<int64_t> &coords() const { return myCoords; }
  int64_t groupSize(int64_t axis) const;
  int64_t groupIndex(int64_t axis) const { return myCoords[axis]; }

  /// In place: sum (or average) of `data` over the axis' group.
  Status allReduce(int64_t axis, float *data, int64_t count,
                   bool average) const;
  /// In place, in double precision: the maximum (or the sum) of `data` over
  /// the axis' group.
  Status allReduceDouble(int64_t axis, double *data, int64_t count,
                         bool maximum) const;
  /// `in` holds groupSize * count elements; `out` receives this rank's
  /// `count`-element piece of their sum (or average) over the group.
  Status reduceScatter(int64_t axis, const float *in, float *out, int64_t count,
                       bool average) const;
  /// `out` receives the `count`-element pieces of every group member, in
  /// group order.
  Status allGather(int64_t axis, const float *in, float *out,
                   int64_t count) const;

  /// Point-to-point along `axis`: to or from the rank whose coordinates
  /// equal this rank's except `peer` on that axis. A send does not wait for
  /// its receive: the bytes are copied out and sent in the background, and
  /// `finishSends` waits for every send still in flight.
  Status send(int64_t axis, int64_t peer, int64_t tag, const void *data,
              int64_t bytes) const;
  Status recv(int64_t axis, int64_t peer, int64_t tag, void *data,
              int64_t bytes) const;
  Status finishSends() const;

  /// Whole world: `value` of rank `root` on every rank.
  Status broadcast(int root, double &value) const;

  /// Whole world: rank 0 receives every rank's `bytes` (equal sizes), in
  /// rank order; other ranks receive nothing.
  Status gatherToRoot(const void *in, int64_t bytes,
                      std::vector<uint8_t> &out) const;
  /// Whole world: rank 0 receives every rank's `text` (of any length), in
  /// rank order; other ranks receive nothing.
  Status gatherStringsToRoot(const std::string &text,
                             std::vector<std::string> &out) const;
  /// Whole world: true when `ok` is true on every rank.
  bool allAgree(bool ok) const;
  /// Every wait for other ranks (collective, receive, send completion) gives
  /// up after `seconds` with an error naming what it waited for (0: wait
  /// forever).
  void setTimeout(double seconds) { timeoutSeconds = seconds; }

  /// Ends every rank of the run: used after an error that other ranks,
  /// waiting in a collective, cannot see.
  [[noreturn]] void abort(int code) const;

private:
  /// Waits for the MPI request at `request` (an MPI_Request*), within the
  /// timeout; `status` (an MPI_Status* or null) receives its status.
  Status wait(void *request, const std::string &what,
              void *status = nullptr) const;
  std::string describeAxis(int64_t axis) const;

  double timeoutSeconds = 0;
  int worldRank = 0;
  int worldSize = 1;
  bool initialized = false;
  /// False for a process started without a launcher: a world of one, whose
  /// collectives are copies.
  bool usesMpi = false;
  std::vector<int64_t> shape;
  std::vector<int64_t> myCoords;
  /// MPI communicators, one per grid axis (MPI_Comm is an int or a pointer
  /// depending on the MPI; stored opaquely so this header needs no mpi.h).
  std::vector<void *> groups;
  /// Sends in flight: their copied bytes and MPI requests (bookkeeping of
  /// calls that are otherwise const, like the collectives).
  mutable std::vector<std::vector<uint8_t>> sendBuffers;
  mutable std::vector<void *> sendRequests;
};

} // namespace mtrt

#endif // MTRT_COMMUNICATOR_H
