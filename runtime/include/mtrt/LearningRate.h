//===- LearningRate.h - Megatron-LM's learning-rate schedule ----*- C++ -*-===//
//
// A port of Megatron-LM's OptimizerParamScheduler.get_lr
// (megatron/core/optimizer_param_scheduler.py) for the styles constant,
// linear and cosine:
//
//   if warmup > 0 and n <= warmup:  lr = init + (max - init) * n / warmup
//   elif style == constant:         lr = max
//   elif n > decay:                 lr = min
//   else: ratio = (n - warmup) / (decay - warmup)
//         coeff = 1 - ratio                     (linear)
//                 0.5 * (cos(pi * ratio) + 1)   (cosine)
//         lr = min + coeff * (max - min)
//
// Step numbering. `n` is Megatron's `num_steps`: the number of optimizer
// updates already applied (Megatron counts it in samples, with warmup and
// decay in samples too; the ratios are the same in iterations). Megatron
// calls `step(0)` in the scheduler's constructor and `step(1 iteration)`
// only after each successful optimizer.step(), so its first update runs
// with n = 0 -- that is, with lr = init (0 by default) when warmup > 0 --
// and its k-th update (1-based) with n = k - 1. To reproduce Megatron's
// trajectory exactly, pass the 0-based index of the update about to run:
// `at(0)` for the first update. A caller that wants the first update to use
// max * 1 / warmup instead passes the 1-based step number; this is a choice
// of the caller, not of the schedule.
//
//===----------------------------------------------------------------------===//

#ifndef MTRT_LEARNINGRATE_H
#define MTRT_LEARNINGRATE_H

#include "mtrt/Status.h"

#include <cstdint>
#include <string>

namespace mtrt {

struct LearningRateSchedule {
  enum class Style { Constant, Linear, Cosine };

  /// The peak rate reached at the end of warmup (--lr).
  double maxLr = 0.0;
  /// The floor reached at decayIters and kept after it (--min-lr).
  double minLr = 0.0;
  /// Linear warmup length in iterations (--lr-warmup-iters); 0 disables it.
  int64_t warmupIters = 0;
  /// The iteration at which decay reaches minLr (--lr-decay-iters).
  int64_t decayIters = 1;
  Style style = Style::Cosine;
  /// The rate warmup starts from (Megatron-LM's --lr-warmup-init, which
  /// megatron-run refuses: always 0 here, that flag's default).
  double initLr = 0.0;

  /// The learning rate after `numSteps` completed updates (Megatron's
  /// num_steps, in iterations; see the file comment). Negative values are
  /// treated as 0.
  double at(int64_t numSteps) const;

  /// Megatron's constructor assertions: 0 <= minLr <= maxLr, initLr <=
  /// maxLr, decayIters > 0, 0 <= warmupIters < decayIters.
  Status validate() const;
};

/// Parses Megatron's --lr-decay-style names "constant", "linear", "cosine".
/// The error names the bad value and the accepted ones.
Status parseStyle(const std::string &text, LearningRateSchedule::Style &style);

/// The --lr-decay-style name of `style`.
const char *styleName(LearningRateSchedule::Style style);

} // namespace mtrt

#endif // MTRT_LEARNINGRATE_H
