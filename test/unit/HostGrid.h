//===- HostGrid.h - Kernel work items run on the host -----------*- C++ -*-===//
//
// What DeviceKernelsTest and MoeDeviceKernelsTest share to run the CUDA
// backend's single-source work items on the CPU: a grid as a loop over
// its items, and random inputs.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_TEST_UNIT_HOSTGRID_H
#define MEGATRON_TEST_UNIT_HOSTGRID_H

#include <cstdint>
#include <random>
#include <vector>

namespace mtrt::testing {

inline std::vector<float> randomFloats(std::mt19937_64 &gen, size_t n,
                                       float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float &x : v)
    x = dist(gen);
  return v;
}

/// Runs item function `f` for every item in [0, n), as a grid does.
template <typename F> void grid(int64_t n, F f) {
  for (int64_t i = 0; i < n; ++i)
    f(i);
}

} // namespace mtrt::testing

#endif // MEGATRON_TEST_UNIT_HOSTGRID_H
