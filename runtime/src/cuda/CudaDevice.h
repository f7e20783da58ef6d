//===- CudaDevice.h - The CUDA backend behind the seam ----------*- C++ -*-===//
//
// One rank's program on one GPU: one cudaMalloc arena at the planned
// offsets; cuBLAS and cuBLASLt GEMMs (fp32 with TF32 off unless --tf32,
// 16-bit on the tensor cores, with the epilogues the fusion pass asks
// for); the generated kernels compiled by nvcc for the GPU at load (the
// same source the CPU backend compiles); cuDNN's fused attention or the
// backend's own; the single-source kernels of DeviceKernels.h; NCCL
// collectives and pipeline transfers (or MPI through host memory where
// ranks share a GPU); the step captured as one CUDA graph after its first.
// Kernels that do not read 16-bit storage themselves get fp32 copies of
// their 16-bit operands, as the CPU backend stages them, so that results
// round where the CPU backend's do. Commands no kernel here runs are
// refused when the program is prepared, naming the command: nothing runs
// half. The class is in CudaDeviceImpl.h, its parts one concept a file.
//
// Built as a plugin, libmtrt_cuda_backend.so, that runtime/src/train/
// Devices.cpp loads on demand through the two extern "C" entry points at
// the end of CudaDevice.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_CUDADEVICE_H
#define MTRT_CUDA_CUDADEVICE_H

#include "mtrt/Device.h"

#include <memory>

namespace mtrt {

/// A CUDA device for this process (the first visible GPU), or an error
/// naming the backend and what was looked for when none is visible.
Status createCudaDevice(const DeviceOptions &options,
                        std::unique_ptr<Device> &device);

/// The number of visible GPUs (0 when the driver or the GPU is missing).
int visibleCudaDevices();

} // namespace mtrt

#endif // MTRT_CUDA_CUDADEVICE_H
