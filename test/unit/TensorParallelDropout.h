//===- TensorParallelDropout.h - An attention dropout for the tests -*- C++
//-*-===//
//
// The attention dropout that DeviceKernelsTest (its mask indexing, on the
// host) and CudaKernelsTest (the tiled attention, on a GPU) check against
// the CPU backend: a rank of a tensor-parallel group holding two of four
// heads (from head 1), p = 0.25.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_TEST_UNIT_TENSORPARALLELDROPOUT_H
#define MEGATRON_TEST_UNIT_TENSORPARALLELDROPOUT_H

#include "cuda/DeviceKernels.h"

inline mtrt::gpu::AttentionDropout tensorParallelDropout() {
  mtrt::gpu::AttentionDropout dropout;
  dropout.key.seed = 4242;
  dropout.key.step = 6;
  dropout.key.stream = 3;
  dropout.key.p = 0.25;
  dropout.key.offset = 1000;
  dropout.heads = 2;
  dropout.headsTotal = 4;
  dropout.headOffset = 1;
  return dropout;
}

#endif // MEGATRON_TEST_UNIT_TENSORPARALLELDROPOUT_H
