//===- TrainPipeline.cpp - Forward graph to runtime programs --------------===//

#include "megatron/Pipelines/TrainPipeline.h"

#include "passes/Analysis/Passes.h"
#include "passes/Autodiff/Passes.h"
#include "passes/Conversion/MTToMTRT/Passes.h"
#include "passes/Fusion/Passes.h"
#include "passes/Parallelize/Passes.h"
#include "passes/Pipeline/Passes.h"

#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::mt;

namespace {
/// Stands in for the pipeline when it cannot be built as asked: nested
/// under another op than the module (`func.func(mt-train-pipeline)`), whose
/// passes work on the module and would abort with an LLVM error there, or
/// options that contradict each other. A pipeline builder has no way to
/// fail, so the error is this pass's, on the op it runs on.
struct RefuseTrainPipeline
    : public PassWrapper<RefuseTrainPipeline, OperationPass<>> {
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(RefuseTrainPipeline)
  explicit RefuseTrainPipeline(std::string reason)
      : reason(std::move(reason)) {}
  StringRef getArgument() const override { return "mt-train-pipeline"; }
  void runOnOperation() override {
    getOperation()->emitError() << "mt-train-pipeline " << reason;
    signalPassFailure();
  }
  std::string reason;
};
} // namespace

void mlir::mt::buildTrainPipeline(OpPassManager &pm,
                                  const TrainPipelineOptions &options) {
  if (std::optional<StringRef> anchor = pm.getOpName();
      !anchor || *anchor != ModuleOp::getOperationName()) {
    pm.addPass(std::make_unique<RefuseTrainPipeline>(
        "runs on the module, not nested under '" +
        (anchor ? anchor->str() : std::string("any op")) +
        "': use --mt-train-pipeline or "
        "--pass-pipeline='builtin.module(mt-train-pipeline)'"));
    return;
  }
  // remat=budget chooses the layers itself.
  if (options.remat == "budget" && !options.rematFullLayers.empty()) {
    pm.addPass(std::make_unique<RefuseTrainPipeline>(
        "options: remat-full-layers is read only by remat=full, not "
        "remat=budget, which chooses the layers to recompute itself"));
    return;
  }
  // Folding first drops dropouts of probability 0, so they get no stream and
  // cost nothing at run time.
  if (options.precision != "fp32") {
    MixedPrecisionPassOptions precision;
    precision.precision = options.precision;
    pm.addPass(createMixedPrecisionPass(precision));
  }
  pm.addPass(createCanonicalizerPass());
  // fp16's range needs loss scaling; bf16 has fp32's and needs none.
  AutodiffPassOptions autodiff;
  autodiff.lossScaling = options.precision == "fp16";
  autodiff.requireModel = true;
  pm.addPass(createAutodiffPass(autodiff));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // After CSE, which would merge the recomputed ops back into the forward
  // ones they copy.
  if (options.remat == "budget") {
    // The budget's trials compile copies with the passes that follow, and
    // the job's options, without their printing.
    OpPassManager rest(ModuleOp::getOperationName());
    addParallelAndLowering(rest, options, /*print=*/false);
    // The passes, without the pipeline's builtin.module(...) anchor: the
    // trials run them on a module.
    std::string lowering;
    llvm::raw_string_ostream os(lowering);
    llvm::interleave(
        rest.getPasses(), os,
        [&](Pass &pass) { pass.printAsTextualPipeline(os); }, ",");
    RematBudgetPassOptions budget;
    budget.budget = options.rematBudget;
    budget.recastParameters = options.recastParameters;
    budget.lowering = lowering;
    pm.addPass(createRematBudgetPass(budget));
  } else {
    RematPassOptions rematOptions;
    rematOptions.policy = options.remat;
    rematOptions.recastParameters = options.recastParameters;
    // A budget is read only by remat=budget: mt-remat refuses one rather
    // than ignore it.
    rematOptions.ignoredBudget = options.rematBudget;
    rematOptions.fullLayers.assign(options.rematFullLayers.begin(),
                                   options.rematFullLayers.end());
    pm.addPass(createRematPass(rematOptions));
  }
  addParallelAndLowering(pm, options, /*print=*/true);
  pm.addPass(createVerifyCollectivesPass());
}

void mlir::mt::addParallelAndLowering(OpPassManager &pm,
                                      const TrainPipelineOptions &options,
                                      bool print) {
  // After the cleanups: CSE would merge ZeRO-3's second all-gather of a
  // parameter (before the backward pass) into the first, keeping every full
  // parameter alive through the whole backward pass.
  ParallelizePassOptions parallel;
  parallel.dp = options.dp;
  parallel.tp = options.tp;
  parallel.sp = options.sp;
  parallel.zero = options.zero;
  parallel.ep = options.ep;
  parallel.vocabDivisibleBy = options.vocabDivisibleBy;
  parallel.gradsInFp32 = options.gradsInFp32;
  pm.addPass(createParallelizePass(parallel));
  PipelinePassOptions pipeline;
  pipeline.pp = options.pp;
  pipeline.microbatches = options.microbatches;
  pipeline.schedule = options.schedule;
  pipeline.virtualStages = options.virtualStages;
  pipeline.layout = options.layout;
  pipeline.printSchedule = print && options.printSchedule;
  if (print) {
    pipeline.scheduleSvg = options.scheduleSvg;
    pipeline.scheduleTrace = options.scheduleTrace;
  }
  pipeline.scheduleCosts = options.scheduleCosts;
  pm.addPass(createPipelinePass(pipeline));
  if (options.fuse) {
    FusePassOptions fusion;
    fusion.gemmEpilogues = options.gemmEpilogues;
    fusion.widenGradients = options.widenGradients;
    fusion.groupCasts = options.groupCasts;
    fusion.parameterCopies = options.parameterCopies;
    fusion.geluEpilogues = options.geluEpilogues;
    fusion.biasGradEpilogues = options.biasGradEpilogues;
    fusion.gradientAccumulationFusion = options.gradientAccumulationFusion;
    fusion.groupedAttention = options.groupedAttention;
    fusion.normGradRowBlock = options.normGradRowBlock;
    pm.addPass(createFusePass(fusion));
  }
  LowerToRuntimePassOptions lowering;
  lowering.printMemoryPlan = print && options.printMemoryPlan;
  pm.addPass(createLowerToRuntimePass(lowering));
}

void mlir::mt::registerTrainPipeline() {
  PassPipelineRegistration<TrainPipelineOptions>(
      "mt-train-pipeline",
      "Compile a forward graph into per-stage training-step programs",
      buildTrainPipeline);
}
