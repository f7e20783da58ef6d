//===- LossScaler.cpp - Megatron-LM's loss scaling for fp16 ---------------===//

#include "mtrt/LossScaler.h"
#include "mtrt/Strings.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

using namespace mtrt;

namespace {
/// The largest finite f16 is 65504, but the scale multiplies fp32 values in
/// the training step: it must be a finite f32.
constexpr double kMaxScale = 3.4e38;
} // namespace

Status LossScaler::start() {
  auto inRange = [](const char *flag, double value) {
    if (std::isfinite(value) && value > 0 && value <= kMaxScale)
      return Status::ok();
    return Status::error(std::string("flag ") + flag +
                         " must be a positive 32-bit float, got " +
                         number(value));
  };
  if (constantScale != 0)
    MTRT_RETURN_IF_ERROR(inRange("--loss-scale", constantScale));
  MTRT_RETURN_IF_ERROR(inRange("--initial-loss-scale", initialScale));
  MTRT_RETURN_IF_ERROR(inRange("--min-loss-scale", minScale));
  if (minScale > initialScale)
    return Status::error("flag --min-loss-scale (" + number(minScale) +
                         ") exceeds --initial-loss-scale (" +
                         number(initialScale) + ")");
  if (window < 1)
    return Status::error("flag --loss-scale-window must be at least 1, got " +
                         std::to_string(window));
  if (hysteresis < 1)
    return Status::error("flag --hysteresis must be at least 1, got " +
                         std::to_string(hysteresis));
  scale = constantScale != 0 ? constantScale : initialScale;
  growthTracker = 0;
  hysteresisTracker = hysteresis;
  return Status::ok();
}

void LossScaler::update(bool overflow) {
  if (constantScale != 0)
    return;
  if (overflow) {
    growthTracker = 0;
    if (--hysteresisTracker <= 0)
      scale = std::max(scale * 0.5, minScale);
    return;
  }
  if (++growthTracker == window) {
    growthTracker = 0;
    hysteresisTracker = hysteresis;
    scale = std::min(scale * 2.0, kMaxScale);
  }
}

void LossScaler::save(std::map<std::string, std::string> &metadata) const {
  char text[64];
  std::snprintf(text, sizeof(text), "%.17g", scale);
  metadata["loss_scale"] = text;
  metadata["loss_scale_growth_tracker"] = std::to_string(growthTracker);
  metadata["loss_scale_hysteresis_tracker"] = std::to_string(hysteresisTracker);
}

Status LossScaler::restore(const std::map<std::string, std::string> &metadata) {
  auto it = metadata.find("loss_scale");
  if (it == metadata.end())
    return Status::ok();
  char *end = nullptr;
  errno = 0;
  double saved = std::strtod(it->second.c_str(), &end);
  if (it->second.empty() || *end != '\0' || errno || !std::isfinite(saved) ||
      saved <= 0 || saved > kMaxScale)
    return Status::error("checkpoint metadata: loss_scale '" + it->second +
                         "' is not a positive 32-bit float");
  // The hysteresis tracker goes below 0 while overflows go on, as
  // Megatron-LM's does.
  auto integer = [&](const char *key, int64_t &field, bool mayBeNegative) {
    auto found = metadata.find(key);
    if (found == metadata.end())
      return Status::error(std::string("checkpoint metadata: loss_scale "
                                       "without ") +
                           key);
    char *stop = nullptr;
    long long value = std::strtoll(found->second.c_str(), &stop, 10);
    if (found->second.empty() || *stop != '\0' || (value < 0 && !mayBeNegative))
      return Status::error(std::string("checkpoint metadata: ") + key + " '" +
                           found->second + "' is not " +
                           (mayBeNegative ? "an integer" : "a count"));
    field = value;
    return Status::ok();
  };
  MTRT_RETURN_IF_ERROR(
      integer("loss_scale_growth_tracker", growthTracker, false));
  MTRT_RETURN_IF_ERROR(
      integer("loss_scale_hysteresis_tracker", hysteresisTracker, true));
  // A constant scale is the flag's, not the checkpoint's.
  if (constantScale == 0)
    scale = saved;
  return Status::ok();
}
