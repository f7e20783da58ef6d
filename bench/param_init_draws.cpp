//===- param_init_draws.cpp - What skipping costs a parameter's ranges ----===//
//
// The runtime initializes a normal parameter in ranges that threads share
// (one range per thread for a large tensor): each range must start at its
// place in the tensor's mt19937_64 sequence. Until 2026-11-27's tenth
// session each range skipped from the tensor's start (initParameterRange);
// now one generator skips from range to range and leaves a copy at each
// start (ParameterDraws). This measures both on one core, for one layer of
// the 1.3B bench's config (width 2048) split as on the GPU machine's 16
// threads, checks that they give the same bits, and prints the ratio: the
// CPU time the runtime's threads share.
//
// Build and run from the repository root, after scripts/build.sh:
//   c++ -O2 -std=c++17 -Iruntime/include bench/param_init_draws.cpp
//   build/runtime/libmtrt_core.a -o /tmp/param_init_draws
// (one command line)
//   /tmp/param_init_draws [threads]
//
//===----------------------------------------------------------------------===//

#include "mtrt/ParamInit.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace mtrt;

static double seconds() {
  return std::chrono::duration<double>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

int main(int argc, char **argv) {
  const int64_t threads = argc > 1 ? std::atoll(argv[1]) : 16;
  if (threads < 1) {
    std::fprintf(stderr, "param_init_draws: threads must be positive\n");
    return 2;
  }
  // A layer's weight matrices: QKV, the attention's projection, the MLP's.
  const std::vector<std::vector<int64_t>> shapes = {
      {2048, 6144}, {2048, 2048}, {2048, 8192}, {8192, 2048}};
  double fromStart = 0, onePass = 0;
  int64_t total = 0;
  for (const std::vector<int64_t> &shape : shapes) {
    ParamDesc param;
    param.name = "h.0.w" + std::to_string(shape[1]);
    param.shape = shape;
    param.init.kind = ParamInitSpec::Kind::Normal;
    param.init.std = 0.02;
    const int64_t n = parameterElements(param);
    total += n;
    // The runtime's split (Trainer's initializeParameters).
    int64_t step = std::max<int64_t>(int64_t(1) << 20, n / threads + 1);
    step += step % 2;
    std::vector<float> before(static_cast<size_t>(n)),
        after(static_cast<size_t>(n));
    double start = seconds();
    for (int64_t first = 0; first < n; first += step)
      initParameterRange(param, 7, before.data(), first,
                         std::min(n, first + step));
    double middle = seconds();
    ParameterDraws draws(param, 7);
    std::vector<ParameterDraws> starts;
    for (int64_t first = 0; first < n; first += step) {
      draws.skipTo(first);
      starts.push_back(draws);
    }
    for (size_t r = 0; r < starts.size(); ++r) {
      int64_t first = int64_t(r) * step;
      starts[r].fill(after.data(), first, std::min(n, first + step));
    }
    double end = seconds();
    if (before != after) {
      std::fprintf(stderr, "param_init_draws: the two ways differ\n");
      return 1;
    }
    fromStart += middle - start;
    onePass += end - middle;
  }
  std::printf("one layer of width 2048, %lld values, in ranges for %lld "
              "threads: each range skipping from the tensor's start %.3f s "
              "(%.1f ns a value), one pass of skips %.3f s (%.1f ns a "
              "value): %.2f times less, the same bits\n",
              (long long)total, (long long)threads, fromStart,
              fromStart / double(total) * 1e9, onePass,
              onePass / double(total) * 1e9, fromStart / onePass);
  return 0;
}
