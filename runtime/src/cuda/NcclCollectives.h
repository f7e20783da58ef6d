//===- NcclCollectives.h - NCCL for the CUDA backend ------------*- C++ -*-===//
//
// The CUDA backend's collectives across ranks: one NCCL communicator per
// grid axis whose group has more than one rank, so that a collective
// along an axis (data parallelism's gradient reduction, tensor
// parallelism's all-reduce, ZeRO's reduce-scatter and all-gather) is one
// NCCL call among exactly the ranks of the group, as the MPI communicator
// runs it on CPU ranks.
//
// Bootstrap: the run's own Communicator (MPI) carries each group's NCCL
// unique id: the group's first member makes it and the group all-gathers
// it, then every member joins with its coordinate on the axis as its NCCL
// rank. Every rank opens every axis, in axis order, so that the joins
// match.
//
// NCCL is loaded at run time (dlopen of libnccl.so.2, or
// MEGATRON_NCCL_LIBRARY): the backend itself loads on a machine without
// it, and says so only when a program needs it.
//
// A group in which two ranks share a GPU cannot join NCCL (it refuses a
// duplicate GPU): open() finds such groups by the members' GPU UUIDs and
// leaves them to HostStagedCollectives. The same exchange carries whether
// each member loaded NCCL, so that a rank that could not fails the whole
// group at once instead of leaving the others waiting in ncclCommInitRank.
//
// The collectives reduce fp32 and fp64 (16-bit operands are staged through
// fp32 first, so that a sum is rounded once, as on CPU ranks) on the stream
// they are given.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_NCCLCOLLECTIVES_H
#define MTRT_CUDA_NCCLCOLLECTIVES_H

#include "cuda/DeviceCollectives.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

// NCCL's communicator (nccl.h's ncclComm_t), opaque here.
struct ncclComm;

namespace mtrt::gpu {

class NcclCollectives final : public DeviceCollectives {
public:
  NcclCollectives();
  ~NcclCollectives() override;
  NcclCollectives(const NcclCollectives &) = delete;
  NcclCollectives &operator=(const NcclCollectives &) = delete;

  /// For each axis of `grid` whose group has more than one rank, but
  /// `skipAxis` (the pipeline's, whose transfers are not collectives):
  /// the members exchange their GPU's UUID (`ordinal` is this rank's) and
  /// whether NCCL loaded. A group of distinct GPUs joins one NCCL
  /// communicator; a group in which ranks share a GPU, or every group with
  /// `hostOnly`, does not: `hostWhy[axis]` says why, "" for the axes NCCL
  /// serves (and those of one rank). Every rank of a stage calls it, in
  /// axis order, so that the exchanges match.
  Status open(const Communicator &grid, int ordinal, int64_t skipAxis,
              bool hostOnly, std::vector<std::string> &hostWhy);

  const char *name() const override { return "NCCL"; }
  bool capturable() const override { return true; }
  Status allReduce(int64_t axis, void *data, int64_t count, DType dtype,
                   ReduceOp op, cudaStream_t stream) override;
  Status reduceScatter(int64_t axis, const float *in, float *out, int64_t count,
                       ReduceOp op, cudaStream_t stream) override;
  Status allGather(int64_t axis, const float *in, float *out, int64_t count,
                   cudaStream_t stream) override;

  /// Whether this rank joined any NCCL communicator.
  bool joined() const;
  /// NCCL's first background error on them ("" if none).
  std::string backgroundError() const;
  /// Hands over the communicators to abort (ncclAbortAll), so that their
  /// kernels waiting for a peer return; no collective runs after.
  std::vector<ncclComm *> releaseForAbort();

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

class NcclTransfers;

/// Aborts the communicators of `collectives` and `transfers` all at once
/// (ncclAbortAll), so that whatever waits for a peer returns; past
/// `seconds` this process ends.
void abortTogether(NcclCollectives &collectives, NcclTransfers &transfers,
                   double seconds);

} // namespace mtrt::gpu

#endif // MTRT_CUDA_NCCLCOLLECTIVES_H
