//===- GridLaunch.cuh - One item function over a grid -----------*- CUDA
//-*-===//
//
// How the .cu files launch the item functions of DeviceKernels.h and
// MoeKernels.h: a grid-stride loop over a device lambda (nvcc
// --extended-lambda). Internal to each .cu file that includes it.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_CUDA_GRIDLAUNCH_CUH
#define MTRT_CUDA_GRIDLAUNCH_CUH

#include <cuda_runtime_api.h>

#include <cstdint>

namespace mtrt::gpu {
namespace {

template <typename F> __global__ void forEachItem(int64_t n, F item) {
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    item(i);
}

/// Runs `item` for every i in [0, n) on `stream`, in blocks of `Block`
/// threads (fewer for a few long items, so that they spread over every SM).
template <int Block = 128, typename F>
cudaError_t launch(cudaStream_t stream, int64_t n, F item) {
  if (n <= 0)
    return cudaSuccess;
  int64_t blocks = (n + Block - 1) / Block;
  if (blocks > (int64_t(1) << 20))
    blocks = int64_t(1) << 20;
  forEachItem<<<unsigned(blocks), Block, 0, stream>>>(n, item);
  return cudaGetLastError();
}

} // namespace
} // namespace mtrt::gpu

#endif // MTRT_CUDA_GRIDLAUNCH_CUH
