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
// The collectives reduce fp32 (16-bit operands are staged through fp32
// first, so that a sum is rounded once, as on CPU ranks) on the stream
// they are given.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_NCCLCOLLECTIVES_H
#define MTRT_CUDA_NCCLCOLLECTIVES_H

#include "mtrt/Communicator.h"
#include "mtrt/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

namespace mtrt::gpu {

class NcclCollectives {
public:
  NcclCollectives();
  ~NcclCollectives();
  NcclCollectives(const NcclCollectives &) = delete;
  NcclCollectives &operator=(const NcclCollectives &) = delete;

  /// Loads NCCL and joins one communicator per axis of `grid` whose group
  /// has more than one rank. Every rank of the run calls it; the current
  /// CUDA device is this rank's GPU.
  Status open(const Communicator &grid);

  /// In place: the sum (or average) of `count` floats over the group.
  Status allReduce(int64_t axis, float *data, int64_t count, bool average,
                   cudaStream_t stream);
  /// `in`: group size x `count` floats; `out`: this rank's piece of their
  /// sum (or average).
  Status reduceScatter(int64_t axis, const float *in, float *out, int64_t count,
                       bool average, cudaStream_t stream);
  /// `out`: every member's `count` floats, in group order.
  Status allGather(int64_t axis, const float *in, float *out, int64_t count,
                   cudaStream_t stream);

private:
  struct Impl;
  std::unique_ptr<Impl> impl;
};

} // namespace mtrt::gpu

#endif // MTRT_CUDA_NCCLCOLLECTIVES_H
