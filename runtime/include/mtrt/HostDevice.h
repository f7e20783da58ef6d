//===- HostDevice.h - Functions both host C++ and CUDA compile -*- C++ -*-===//
//
// MTRT_HOST_DEVICE marks a header function that the CPU backend's C++ and
// the CUDA backend's device code share (one statement of the arithmetic
// both backends must agree on): __host__ __device__ under nvcc, inline
// otherwise.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_HOSTDEVICE_H
#define MTRT_HOSTDEVICE_H

#ifdef __CUDACC__
#define MTRT_HOST_DEVICE __host__ __device__ inline
#else
#define MTRT_HOST_DEVICE inline
#endif

#endif // MTRT_HOSTDEVICE_H
