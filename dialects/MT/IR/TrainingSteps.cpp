//===- TrainingSteps.cpp - finding a module's training steps --------------===//

#include "dialects/MT/IR/TrainingSteps.h"
#include "dialects/MT/IR/MTOps.h"

namespace mlir::mt {

SmallVector<func::FuncOp> getTrainingSteps(ModuleOp module) {
  SmallVector<func::FuncOp> steps;
  for (auto function : module.getOps<func::FuncOp>())
    if (!function.isExternal() && !function.getOps<AdamWOp>().empty())
      steps.push_back(function);
  return steps;
}

LogicalResult requireTrainingStep(ModuleOp module, StringRef pass,
                                  StringRef request) {
  if (!getTrainingSteps(module).empty())
    return success();
  return module.emitError()
         << pass << ": " << request
         << " transforms a training step, but the module has none (no "
            "function holds an mt.adamw): run mt-autodiff first, or "
            "--mt-train-pipeline, which runs the passes in order";
}

} // namespace mlir::mt
