//===- CudaDevice.h - The CUDA backend behind the seam ----------*- C++ -*-===//
//
// One rank's program on one GPU: one cudaMalloc arena at the planned
// offsets, cuBLAS GEMMs (fp32, TF32 off), the generated kernels compiled by
// nvcc for the GPU at load (the same source the CPU backend compiles), and
// the single-source kernels of DeviceKernels.h. Commands run in order on
// one stream; a step ends with the stream synchronized.
//
// What it runs today: programs of one rank (a world of one: its
// collectives are copies), dropout included (the CPU backend's Philox
// masks, bit for bit); 16-bit operands are staged through fp32 copies as
// the CPU backend stages them, so results round where the CPU backend's
// do. Several ranks (NCCL), and commands no kernel here runs, are refused
// when the program is prepared, naming the command: nothing runs half.
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
