//===- TrainPipeline.h - Forward graph to runtime programs ------*- C++ -*-===//

#ifndef MEGATRON_PIPELINES_TRAINPIPELINE_H
#define MEGATRON_PIPELINES_TRAINPIPELINE_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace mt {

struct TrainPipelineOptions
    : public PassPipelineOptions<TrainPipelineOptions> {
  PassOptions::Option<bool> printMemoryPlan{
      *this, "print-memory-plan",
      llvm::cl::desc("Print each rank's memory plan"), llvm::cl::init(false)};
};

/// canonicalize, mt-autodiff, canonicalize, cse, mt-lower-to-runtime: a
/// forward graph in, one mtrt program per rank out.
void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &options);

/// Registers `--mt-train-pipeline`.
void registerTrainPipeline();

} // namespace mt
} // namespace mlir

#endif // MEGATRON_PIPELINES_TRAINPIPELINE_H
