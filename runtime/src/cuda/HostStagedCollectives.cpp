//===- HostStagedCollectives.cpp - MPI through host memory ----------------===//

#include "cuda/HostStagedCollectives.h"

#include <algorithm>
#include <string>

using namespace mtrt;
using namespace mtrt::gpu;

namespace {
Status checkCuda(cudaError_t error, const char *what) {
  if (error == cudaSuccess)
    return Status::ok();
  return Status::error(std::string(what) + " failed (" +
                       cudaGetErrorName(error) + ": " +
                       cudaGetErrorString(error) + ")");
}

int64_t elementBytes(DType dtype) {
  return dtype == DType::F64 || dtype == DType::I64    ? 8
         : dtype == DType::BF16 || dtype == DType::F16 ? 2
                                                       : 4;
}
} // namespace

Status HostStagedCollectives::checked() const {
  if (!communicator)
    return Status::error("collectives through host memory need the run's "
                         "communicator");
  return Status::ok();
}

Status HostStagedCollectives::toHost(const void *device, int64_t bytes,
                                     int slot, cudaStream_t stream) {
  std::vector<uint8_t> &buffer = host[slot];
  if (int64_t(buffer.size()) < bytes)
    buffer.resize(size_t(bytes));
  if (bytes == 0)
    return Status::ok();
  // On the compute stream, after the commands that produce the bytes; the
  // wait makes them the host's before MPI reads them.
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMemcpyAsync(buffer.data(), device, size_t(bytes),
                                cudaMemcpyDeviceToHost, stream),
                "copying a transfer's bytes to the host"));
  return checkCuda(cudaStreamSynchronize(stream),
                   "copying a transfer's bytes to the host");
}

Status HostStagedCollectives::toDevice(void *device, int64_t bytes, int slot,
                                       cudaStream_t stream) {
  if (bytes == 0)
    return Status::ok();
  // Waited for, so that the host buffer may be reused on return.
  MTRT_RETURN_IF_ERROR(
      checkCuda(cudaMemcpyAsync(device, host[slot].data(), size_t(bytes),
                                cudaMemcpyHostToDevice, stream),
                "copying a transfer's bytes to the GPU"));
  return checkCuda(cudaStreamSynchronize(stream),
                   "copying a transfer's bytes to the GPU");
}

Status HostStagedCollectives::allReduce(int64_t axis, void *data, int64_t count,
                                        DType dtype, ReduceOp op,
                                        cudaStream_t stream) {
  return allReduceStrided(axis, 1, data, count, dtype, op, stream);
}

Status HostStagedCollectives::allReduceStrided(int64_t axis, int64_t stride,
                                               void *data, int64_t count,
                                               DType dtype, ReduceOp op,
                                               cudaStream_t stream) {
  MTRT_RETURN_IF_ERROR(checked());
  int64_t bytes = count * elementBytes(dtype);
  MTRT_RETURN_IF_ERROR(toHost(data, bytes, 0, stream));
  MTRT_RETURN_IF_ERROR(
      stride == 1
          ? communicator->allReduce(axis, host[0].data(), count, dtype, op)
          : communicator->allReduceStrided(axis, stride, host[0].data(), count,
                                           dtype, op));
  return toDevice(data, bytes, 0, stream);
}

Status HostStagedCollectives::reduceScatter(int64_t axis, const float *in,
                                            float *out, int64_t count,
                                            ReduceOp op, cudaStream_t stream) {
  return reduceScatterStrided(axis, 1, in, out, count, op, stream);
}

Status HostStagedCollectives::reduceScatterStrided(int64_t axis, int64_t stride,
                                                   const float *in, float *out,
                                                   int64_t count, ReduceOp op,
                                                   cudaStream_t stream) {
  MTRT_RETURN_IF_ERROR(checked());
  int64_t parts = communicator->groupSize(axis) / std::max<int64_t>(1, stride);
  int64_t bytes = count * int64_t(sizeof(float));
  MTRT_RETURN_IF_ERROR(toHost(in, parts * bytes, 0, stream));
  if (int64_t(host[1].size()) < bytes)
    host[1].resize(size_t(bytes));
  MTRT_RETURN_IF_ERROR(communicator->reduceScatterStrided(
      axis, stride, host[0].data(), host[1].data(), count, DType::F32, op));
  return toDevice(out, bytes, 1, stream);
}

Status HostStagedCollectives::allGather(int64_t axis, const float *in,
                                        float *out, int64_t count,
                                        cudaStream_t stream) {
  return allGatherStrided(axis, 1, in, out, count, stream);
}

Status HostStagedCollectives::allGatherStrided(int64_t axis, int64_t stride,
                                               const float *in, float *out,
                                               int64_t count,
                                               cudaStream_t stream) {
  MTRT_RETURN_IF_ERROR(checked());
  int64_t parts = communicator->groupSize(axis) / std::max<int64_t>(1, stride);
  int64_t bytes = count * int64_t(sizeof(float));
  MTRT_RETURN_IF_ERROR(toHost(in, bytes, 0, stream));
  if (int64_t(host[1].size()) < parts * bytes)
    host[1].resize(size_t(parts * bytes));
  MTRT_RETURN_IF_ERROR(communicator->allGatherStrided(
      axis, stride, host[0].data(), host[1].data(), count, DType::F32));
  return toDevice(out, parts * bytes, 1, stream);
}

Status HostStagedCollectives::send(int64_t axis, int64_t peer, int64_t tag,
                                   const void *data, int64_t bytes,
                                   cudaStream_t stream) {
  MTRT_RETURN_IF_ERROR(checked());
  MTRT_RETURN_IF_ERROR(toHost(data, bytes, 0, stream));
  // The communicator copies the bytes out before it returns.
  return communicator->send(axis, peer, tag, host[0].data(), bytes);
}

Status HostStagedCollectives::recv(int64_t axis, int64_t peer, int64_t tag,
                                   void *data, int64_t bytes,
                                   cudaStream_t stream) {
  MTRT_RETURN_IF_ERROR(checked());
  if (int64_t(host[1].size()) < bytes)
    host[1].resize(size_t(bytes));
  MTRT_RETURN_IF_ERROR(
      communicator->recv(axis, peer, tag, host[1].data(), bytes));
  return toDevice(data, bytes, 1, stream);
}

Status HostStagedCollectives::finishSends() {
  MTRT_RETURN_IF_ERROR(checked());
  return communicator->finishSends();
}
