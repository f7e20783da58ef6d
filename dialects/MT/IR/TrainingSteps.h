//===- TrainingSteps.h - finding a module's training steps ------*- C++ -*-===//
//
// mt-autodiff turns the forward graph into a training step: a function that
// ends in mt.adamw updates. The passes after it (mt-parallelize, mt-pipeline,
// mt-remat, mt-remat-budget) transform those functions and nothing else, so a
// module without one, such as a forward graph given to them directly, would
// leave them nothing to do: an option asking for work is then an error, not
// a silent no-op.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_DIALECTS_MT_IR_TRAININGSTEPS_H
#define MEGATRON_DIALECTS_MT_IR_TRAININGSTEPS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"

namespace mlir::mt {
/// The defined functions of `module` that hold an mt.adamw.
SmallVector<func::FuncOp> getTrainingSteps(ModuleOp module);

/// Fails with an error on `module` when it has no training step, saying that
/// pass `pass` was asked for `request` (such as "dp=2") and how to get one.
LogicalResult requireTrainingStep(ModuleOp module, StringRef pass,
                                  StringRef request);
} // namespace mlir::mt

#endif // MEGATRON_DIALECTS_MT_IR_TRAININGSTEPS_H
