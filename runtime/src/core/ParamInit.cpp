//===- ParamInit.cpp - GPT-2's parameter initialization -------------------===//

#include "mtrt/ParamInit.h"

#include <cmath>
#include <random>
#include <set>

using namespace mtrt;

namespace {
bool endsWith(const std::string &s, const std::string &suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// FNV-1a: a stable hash of the name (std::hash differs across libraries).
uint64_t stableHash(const std::string &s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) {
    h ^= c;
    h *= 1099511628211ull;
  }
  return h;
}
} // namespace

void mtrt::initGPT2Parameter(const std::string &name,
                             const std::vector<int64_t> &shape,
                             int64_t numLayers, uint64_t seed, float *values) {
  int64_t n = 1;
  for (int64_t dim : shape)
    n *= dim;
  bool isNorm = name.find("ln_") != std::string::npos;
  if (endsWith(name, ".bias") || (isNorm && endsWith(name, ".weight"))) {
    float fill = endsWith(name, ".bias") ? 0.0f : 1.0f;
    for (int64_t i = 0; i < n; ++i)
      values[i] = fill;
    return;
  }
  double std = 0.02;
  if (endsWith(name, "c_proj.weight"))
    std /= std::sqrt(2.0 * double(std::max<int64_t>(numLayers, 1)));
  // Box-Muller on raw 64-bit draws: the library's normal_distribution is
  // implementation-defined, and checkpoints must not depend on it.
  std::mt19937_64 gen(seed ^ stableHash(name));
  auto uniform = [&] { return (double(gen() >> 11) + 0.5) * 0x1.0p-53; };
  for (int64_t i = 0; i < n; i += 2) {
    double r = std::sqrt(-2.0 * std::log(uniform()));
    double theta = 2.0 * M_PI * uniform();
    values[i] = float(std * r * std::cos(theta));
    if (i + 1 < n)
      values[i + 1] = float(std * r * std::sin(theta));
  }
}

int64_t mtrt::countGPT2Layers(const std::vector<std::string> &names) {
  std::set<std::string> layers;
  for (const std::string &name : names) {
    if (name.rfind("h.", 0) != 0)
      continue;
    size_t dot = name.find('.', 2);
    if (dot != std::string::npos)
      layers.insert(name.substr(2, dot - 2));
  }
  return int64_t(layers.size());
}
