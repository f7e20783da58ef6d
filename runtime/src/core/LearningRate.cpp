//===- LearningRate.cpp - Megatron-LM's learning-rate schedule ------------===//

#include "mtrt/LearningRate.h"
#include "mtrt/Strings.h"

#include <cstdio>
#include <cstdlib>

#include <cmath>

using namespace mtrt;

/// Python's math.pi, the same double.
static constexpr double kPi = 3.141592653589793;

double LearningRateSchedule::at(int64_t numSteps) const {
  int64_t n = numSteps < 0 ? 0 : numSteps;
  // The operations follow Megatron's Python expression by expression so
  // that the rates agree bit for bit with it counting in iterations (in
  // samples, the warmup product can round differently in the last bit).
  if (warmupIters > 0 && n <= warmupIters)
    return initLr + (maxLr - initLr) * static_cast<double>(n) /
                        static_cast<double>(warmupIters);
  if (style == Style::Constant)
    return maxLr;
  if (n > decayIters)
    return minLr;
  double decayRatio = static_cast<double>(n - warmupIters) /
                      static_cast<double>(decayIters - warmupIters);
  double deltaLr = maxLr - minLr;
  double coeff = style == Style::Linear
                     ? 1.0 - decayRatio
                     : 0.5 * (std::cos(kPi * decayRatio) + 1.0);
  return minLr + coeff * deltaLr;
}

Status LearningRateSchedule::validate() const {
  auto fail = [](const std::string &what) {
    return Status::error("learning-rate schedule: " + what);
  };
  if (!(minLr >= 0.0))
    return fail("min lr (--min-lr) " + number(minLr) + " is negative");
  if (!(maxLr >= minLr))
    return fail("max lr (--lr) " + number(maxLr) +
                " is below min lr (--min-lr) " + number(minLr));
  if (!(initLr <= maxLr))
    return fail("warmup init lr " + number(initLr) +
                " is above max lr (--lr) " + number(maxLr));
  if (decayIters <= 0)
    return fail("decay iterations (--lr-decay-iters, default --steps) " +
                std::to_string(decayIters) + " must be positive");
  if (warmupIters < 0 || warmupIters >= decayIters)
    return fail("warmup iterations (--lr-warmup-iters) " +
                std::to_string(warmupIters) +
                " must be at least 0 and below the decay iterations "
                "(--lr-decay-iters, default --steps) " +
                std::to_string(decayIters));
  return Status::ok();
}

Status mtrt::parseStyle(const std::string &text,
                        LearningRateSchedule::Style &style) {
  using Style = LearningRateSchedule::Style;
  for (Style candidate : {Style::Constant, Style::Linear, Style::Cosine})
    if (text == styleName(candidate)) {
      style = candidate;
      return Status::ok();
    }
  return Status::error(
      "unknown learning-rate decay style (--lr-decay-style) '" + text +
      "' (expected one of: constant, linear, cosine)");
}

const char *mtrt::styleName(LearningRateSchedule::Style style) {
  switch (style) {
  case LearningRateSchedule::Style::Constant:
    return "constant";
  case LearningRateSchedule::Style::Linear:
    return "linear";
  case LearningRateSchedule::Style::Cosine:
    return "cosine";
  }
  return "unknown";
}
