//===- ParamInit.cpp - Parameter initialization as the model states it ----===//

#include "mtrt/ParamInit.h"
#include "mtrt/Hash.h"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <random>

using namespace mtrt;

int64_t mtrt::parameterElements(const ParamDesc &param) {
  int64_t n = 1;
  for (int64_t dim : param.shape)
    n *= dim;
  return n;
}

void mtrt::initParameter(const ParamDesc &param, uint64_t seed, float *values) {
  initParameterRange(param, seed, values, 0, parameterElements(param));
}

void mtrt::initParameterRange(const ParamDesc &param, uint64_t seed,
                              float *values, int64_t begin, int64_t end) {
  ParameterDraws draws(param, seed);
  draws.skipTo(begin);
  draws.fill(values, begin, end);
}

// Box-Muller on raw 64-bit draws: the library's normal_distribution is
// implementation-defined, and checkpoints must not depend on it. Each pair
// of values takes two draws, so element `i` (even) is draw `i`.
mtrt::ParameterDraws::ParameterDraws(const ParamDesc &param, uint64_t seed)
    : param(&param),
      generator(seed ^ fnv1a(param.name.data(), param.name.size())) {}

void mtrt::ParameterDraws::skipTo(int64_t begin) {
  assert(begin % 2 == 0 && "a normal draws its values in pairs");
  assert(begin >= next && "the draws move only forward");
  if (param->init.kind == ParamInitSpec::Kind::Normal)
    generator.discard(uint64_t(begin - next));
  next = begin;
}

void mtrt::ParameterDraws::fill(float *values, int64_t begin, int64_t end) {
  assert(begin == next && "a range starts where the draws are");
  assert(end <= parameterElements(*param) && "a range within the tensor");
  if (param->init.kind != ParamInitSpec::Kind::Normal) {
    float fill = param->init.kind == ParamInitSpec::Kind::Ones ? 1.0f : 0.0f;
    std::fill(values + begin, values + end, fill);
    next = end;
    return;
  }
  double std = param->init.std;
  auto uniform = [&] { return (double(generator() >> 11) + 0.5) * 0x1.0p-53; };
  int64_t i = begin;
  for (; i < end; i += 2) {
    double r = std::sqrt(-2.0 * std::log(uniform()));
    double theta = 2.0 * M_PI * uniform();
    values[i] = float(std * r * std::cos(theta));
    if (i + 1 < end)
      values[i + 1] = float(std * r * std::sin(theta));
  }
  next = i;
}
