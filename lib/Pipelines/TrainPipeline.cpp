//===- TrainPipeline.cpp - Forward graph to runtime programs --------------===//

#include "megatron/Pipelines/TrainPipeline.h"

#include "passes/Analysis/Passes.h"
#include "passes/Autodiff/Passes.h"
#include "passes/Conversion/MTToMTRT/Passes.h"
#include "passes/Parallelize/Passes.h"
#include "passes/Pipeline/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::mt;

void mlir::mt::buildTrainPipeline(OpPassManager &pm,
                                  const TrainPipelineOptions &options) {
  // Folding first drops dropouts of probability 0, so they get no stream and
  // cost nothing at run time.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createAutodiffPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // After CSE, which would merge the recomputed ops back into the forward
  // ones they copy.
  RematPassOptions rematOptions;
  rematOptions.policy = options.remat;
  pm.addPass(createRematPass(rematOptions));
  // After the cleanups: CSE would merge ZeRO-3's second all-gather of a
  // parameter (before the backward pass) into the first, keeping every full
  // parameter alive through the whole backward pass.
  ParallelizePassOptions parallel;
  parallel.dp = options.dp;
  parallel.tp = options.tp;
  parallel.sp = options.sp;
  parallel.zero = options.zero;
  pm.addPass(createParallelizePass(parallel));
  PipelinePassOptions pipeline;
  pipeline.pp = options.pp;
  pipeline.microbatches = options.microbatches;
  pipeline.schedule = options.schedule;
  pipeline.virtualStages = options.virtualStages;
  pipeline.layout = options.layout;
  pipeline.printSchedule = options.printSchedule;
  pipeline.scheduleCosts = options.scheduleCosts;
  pm.addPass(createPipelinePass(pipeline));
  LowerToRuntimePassOptions lowering;
  lowering.printMemoryPlan = options.printMemoryPlan;
  pm.addPass(createLowerToRuntimePass(lowering));
  pm.addPass(createVerifyCollectivesPass());
}

void mlir::mt::registerTrainPipeline() {
  PassPipelineRegistration<TrainPipelineOptions>(
      "mt-train-pipeline",
      "Compile a forward graph into per-stage training-step programs",
      buildTrainPipeline);
}
