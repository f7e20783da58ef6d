//===- DeviceCollectives.h - Collectives on device memory -------*- C++ -*-===//
//
// How the CUDA backend reduces and gathers device buffers across ranks,
// one grid axis at a time: the seam between CudaDevice and a transport.
// Two transports implement it:
//   - NCCL (NcclCollectives.h): one communicator per axis whose group has
//     a GPU per rank; the calls are enqueued on the stream (and captured
//     in the step's CUDA graph);
//   - MPI through host memory (HostStagedCollectives.h): for a group in
//     which ranks share a GPU (NCCL refuses a duplicate GPU), or when
//     MEGATRON_CUDA_COLLECTIVES=host asks for it; each call waits for the
//     stream, copies the operand to the host, runs the run's Communicator
//     (MPI) and copies the result back, so that the step cannot be a graph.
// Both reduce 16-bit operands in fp32 (CudaDevice stages them), as the CPU
// backend does, so a run's numbers do not depend on the transport.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_DEVICECOLLECTIVES_H
#define MTRT_CUDA_DEVICECOLLECTIVES_H

#include "mtrt/Communicator.h"
#include "mtrt/Status.h"

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mtrt::gpu {

class DeviceCollectives {
public:
  virtual ~DeviceCollectives() = default;

  /// What carries the data, for the run's choices ("NCCL", ...).
  virtual const char *name() const = 0;
  /// Whether the calls can be captured in a CUDA graph.
  virtual bool capturable() const = 0;

  /// In place: the sum, average or maximum of `count` elements of `dtype`
  /// (F32 or F64) over the axis' group.
  virtual Status allReduce(int64_t axis, void *data, int64_t count, DType dtype,
                           ReduceOp op, cudaStream_t stream) = 0;
  /// `in`: group size x `count` floats; `out`: this rank's piece of their
  /// sum (or average).
  virtual Status reduceScatter(int64_t axis, const float *in, float *out,
                               int64_t count, ReduceOp op,
                               cudaStream_t stream) = 0;
  /// `out`: every member's `count` floats, in group order.
  virtual Status allGather(int64_t axis, const float *in, float *out,
                           int64_t count, cudaStream_t stream) = 0;
};

} // namespace mtrt::gpu

#endif // MTRT_CUDA_DEVICECOLLECTIVES_H
