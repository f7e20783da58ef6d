//===- LossScaler.h - Megatron-LM's loss scaling for fp16 -------*- C++ -*-===//
//
// fp16 gradients underflow without scaling, and a large scale overflows
// them. A port of Megatron-LM's grad scalers
// (megatron/core/optimizer/grad_scaler.py):
//
// - ConstantGradScaler (--loss-scale X): the scale never changes.
// - DynamicGradScaler (--initial-loss-scale, --min-loss-scale,
//   --loss-scale-window, --hysteresis; growth 2, backoff 0.5):
//     on overflow: growth_tracker = 0; hysteresis_tracker -= 1;
//                  if hysteresis_tracker <= 0: scale = max(scale/2, min)
//     otherwise:   growth_tracker += 1; when it reaches the window:
//                  growth_tracker = 0; hysteresis_tracker = hysteresis;
//                  scale *= 2
//
// A step whose scaled gradients overflow is skipped by the training step
// itself (mt.clip_scale, mt.adamw); the trainer reports it and updates the
// scaler. The state is part of a training checkpoint.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_LOSSSCALER_H
#define MTRT_LOSSSCALER_H

#include "mtrt/Status.h"

#include <cstdint>
#include <map>
#include <string>

namespace mtrt {

struct LossScaler {
  /// --loss-scale: a constant scale (0: dynamic).
  double constantScale = 0.0;
  /// Megatron-LM's defaults.
  double initialScale = 4294967296.0; // 2^32
  double minScale = 1.0;
  int64_t window = 1000;
  int64_t hysteresis = 2;

  /// State.
  double scale = 0.0;
  int64_t growthTracker = 0;
  int64_t hysteresisTracker = 0;

  /// Checks the settings and starts at the initial (or constant) scale.
  Status start();
  /// Records whether the step's gradients overflowed.
  void update(bool overflow);

  /// The state as checkpoint metadata, and back (an absent key keeps the
  /// started state).
  void save(std::map<std::string, std::string> &metadata) const;
  Status restore(const std::map<std::string, std::string> &metadata);
};

} // namespace mtrt

#endif // MTRT_LOSSSCALER_H
