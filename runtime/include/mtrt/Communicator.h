//===- Communicator.h - Collectives along the grid's axes -------*- C++ -*-===//
//
// The data plane of a run, as a backend sees it (IREE's HAL channel at our
// size): collectives among the ranks whose grid coordinates differ only on
// one axis (what `shard` collectives with `grid_axes = [axis]` mean), of any
// dtype, and point-to-point transfers along an axis. Implementations: MPI
// for CPU ranks (mtrt/Launcher.h creates it); NCCL for the CUDA backend.
// The control plane (ranks, agreement, abort) is the Launcher's.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_COMMUNICATOR_H
#define MTRT_COMMUNICATOR_H

#include "mtrt/Artifact.h"
#include "mtrt/Status.h"

#include <cstdint>
#include <vector>

namespace mtrt {

enum class ReduceOp { Sum, Average, Max };

class Communicator {
public:
  virtual ~Communicator() = default;

  /// This rank's coordinates on the grid, one per axis.
  virtual const std::vector<int64_t> &coords() const = 0;
  /// The number of ranks in this rank's group along `axis`.
  virtual int64_t groupSize(int64_t axis) const = 0;
  int64_t groupIndex(int64_t axis) const { return coords()[size_t(axis)]; }

  /// In place: the sum, average or maximum of `count` elements of `dtype`
  /// over the axis' group. 16-bit floats are reduced in float and rounded
  /// once.
  virtual Status allReduce(int64_t axis, void *data, int64_t count, DType dtype,
                           ReduceOp op) const = 0;
  /// In place, as allReduce, over the ranks of the axis' group whose
  /// coordinates on it are equal modulo `stride` (which divides the group):
  /// the replicas of an expert under expert parallelism over part of the
  /// data-parallel ranks. A backend without such groups says so.
  virtual Status allReduceStrided(int64_t axis, int64_t stride, void *data,
                                  int64_t count, DType dtype,
                                  ReduceOp op) const {
    (void)axis, (void)data, (void)count, (void)dtype, (void)op;
    return Status::error("this backend has no all-reduce over every " +
                         std::to_string(stride) +
                         "th rank of a grid axis (expert parallelism over "
                         "part of the data-parallel ranks)");
  }
  /// `in` holds groupSize * count elements; `out` receives this rank's
  /// `count`-element piece of their sum or average over the group.
  virtual Status reduceScatter(int64_t axis, const void *in, void *out,
                               int64_t count, DType dtype,
                               ReduceOp op) const = 0;
  /// `out` receives the `count`-element pieces of every group member, in
  /// group order.
  virtual Status allGather(int64_t axis, const void *in, void *out,
                           int64_t count, DType dtype) const = 0;
  /// reduceScatter and allGather over the strided group allReduceStrided
  /// reduces over (ZeRO's pieces of an expert over its replicas): its
  /// members in coordinate order, so that a rank's piece is the
  /// coordinate divided by `stride`. Stride 1 is the whole axis.
  virtual Status reduceScatterStrided(int64_t axis, int64_t stride,
                                      const void *in, void *out, int64_t count,
                                      DType dtype, ReduceOp op) const {
    if (stride == 1)
      return reduceScatter(axis, in, out, count, dtype, op);
    return Status::error("this backend has no reduce-scatter over every " +
                         std::to_string(stride) + "th rank of a grid axis");
  }
  virtual Status allGatherStrided(int64_t axis, int64_t stride, const void *in,
                                  void *out, int64_t count, DType dtype) const {
    if (stride == 1)
      return allGather(axis, in, out, count, dtype);
    return Status::error("this backend has no all-gather over every " +
                         std::to_string(stride) + "th rank of a grid axis");
  }

  /// Point-to-point along `axis`: to or from the rank whose coordinates
  /// equal this rank's except `peer` on that axis. A send does not wait for
  /// its receive: the bytes are copied out and sent in the background, and
  /// `finishSends` waits for every send still in flight.
  virtual Status send(int64_t axis, int64_t peer, int64_t tag, const void *data,
                      int64_t bytes) const = 0;
  virtual Status recv(int64_t axis, int64_t peer, int64_t tag, void *data,
                      int64_t bytes) const = 0;
  virtual Status finishSends() const = 0;
  /// The most bytes the copies of sends in flight held at once (0 where
  /// sends copy nothing).
  virtual int64_t peakSendCopyBytes() const { return 0; }

  /// How long its waits for other ranks last before they give up (the
  /// launcher's --distributed-timeout-minutes; 0: forever). A backend that
  /// also waits on a transport of its own (NCCL) gives up after as long.
  virtual double timeoutSeconds() const { return 0; }
};

} // namespace mtrt

#endif // MTRT_COMMUNICATOR_H
