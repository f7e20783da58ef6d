//===- HostStagedCollectives.h - MPI through host memory --------*- C++ -*-===//
//
// The CUDA backend's transport where NCCL cannot serve: ranks that share
// one GPU (NCCL refuses a duplicate GPU in a communicator, so several
// ranks on a one-GPU machine, as in scripts/gpu-check.sh, go this way),
// MEGATRON_CUDA_COLLECTIVES=host, and the pipeline's point-to-point
// transfers between stages that share a GPU (NcclTransfers.h carries those
// whose stages have their own). Each call waits for the compute stream, copies
// its operand into host memory, runs the run's Communicator (MPI, as CPU ranks
// do) and copies the result back: correct everywhere, and as slow as two PCIe
// copies and a wait per call.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_HOSTSTAGEDCOLLECTIVES_H
#define MTRT_CUDA_HOSTSTAGEDCOLLECTIVES_H

#include "cuda/DeviceCollectives.h"

#include <vector>

namespace mtrt::gpu {

class HostStagedCollectives final : public DeviceCollectives {
public:
  void setCommunicator(const Communicator *grid) { communicator = grid; }

  const char *name() const override { return "MPI through host memory"; }
  bool capturable() const override { return false; }
  Status allReduce(int64_t axis, void *data, int64_t count, DType dtype,
                   ReduceOp op, cudaStream_t stream) override;
  Status reduceScatter(int64_t axis, const float *in, float *out, int64_t count,
                       ReduceOp op, cudaStream_t stream) override;
  Status allGather(int64_t axis, const float *in, float *out, int64_t count,
                   cudaStream_t stream) override;
  /// allReduce over the ranks of the axis' group equal modulo `stride`
  /// (Communicator::allReduceStrided: an expert's replicas), which NCCL
  /// communicators here do not make; allReduce is its stride 1.
  Status allReduceStrided(int64_t axis, int64_t stride, void *data,
                          int64_t count, DType dtype, ReduceOp op,
                          cudaStream_t stream);
  /// reduceScatter and allGather over that group (ZeRO's pieces of an
  /// expert over its replicas); the unstrided ones are their stride 1.
  Status reduceScatterStrided(int64_t axis, int64_t stride, const float *in,
                              float *out, int64_t count, ReduceOp op,
                              cudaStream_t stream);
  Status allGatherStrided(int64_t axis, int64_t stride, const float *in,
                          float *out, int64_t count, cudaStream_t stream);

  /// Point-to-point along `axis` (Communicator::send and recv): a send
  /// copies the device bytes out once the stream has produced them and
  /// returns (MPI sends them in the background); a receive waits for its
  /// bytes and copies them into the device buffer before the stream's next
  /// command. finishSends waits for every send still in flight.
  Status send(int64_t axis, int64_t peer, int64_t tag, const void *data,
              int64_t bytes, cudaStream_t stream);
  Status recv(int64_t axis, int64_t peer, int64_t tag, void *data,
              int64_t bytes, cudaStream_t stream);
  Status finishSends();

private:
  /// Copies `bytes` from the device into the host buffer `slot` (0: first
  /// operand, 1: result) once the stream has run everything before.
  Status toHost(const void *device, int64_t bytes, int slot,
                cudaStream_t stream);
  /// Copies the host buffer `slot` to the device and waits for it.
  Status toDevice(void *device, int64_t bytes, int slot, cudaStream_t stream);
  Status checked() const;

  const Communicator *communicator = nullptr;
  std::vector<uint8_t> host[2];
};

} // namespace mtrt::gpu

#endif // MTRT_CUDA_HOSTSTAGEDCOLLECTIVES_H
