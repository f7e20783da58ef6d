//===- ParamInit.cpp - Parameter initialization as the model states it ----===//

#include "mtrt/ParamInit.h"
#include "mtrt/Hash.h"

#include <cmath>
#include <random>

using namespace mtrt;

void mtrt::initParameter(const ParamDesc &param, uint64_t seed, float *values) {
  int64_t n = 1;
  for (int64_t dim : param.shape)
    n *= dim;
  if (param.init.kind != ParamInitSpec::Kind::Normal) {
    float fill = param.init.kind == ParamInitSpec::Kind::Ones ? 1.0f : 0.0f;
    for (int64_t i = 0; i < n; ++i)
      values[i] = fill;
    return;
  }
  // Box-Muller on raw 64-bit draws: the library's normal_distribution is
  // implementation-defined, and checkpoints must not depend on it.
  double std = param.init.std;
  std::mt19937_64 gen(seed ^ fnv1a(param.name.data(), param.name.size()));
  auto uniform = [&] { return (double(gen() >> 11) + 0.5) * 0x1.0p-53; };
  for (int64_t i = 0; i < n; i += 2) {
    double r = std::sqrt(-2.0 * std::log(uniform()));
    double theta = 2.0 * M_PI * uniform();
    values[i] = float(std * r * std::cos(theta));
    if (i + 1 < n)
      values[i + 1] = float(std * r * std::sin(theta));
  }
}
