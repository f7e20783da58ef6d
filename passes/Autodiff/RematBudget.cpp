//===- RematBudget.cpp - The least recomputation that fits a budget -------===//
//
// Memory is what the compiler knows exactly: each candidate policy is
// compiled on a copy of the module down to stage programs, whose arenas are
// the planned peaks. The search runs over a ladder of policies ordered by
// recompute FLOPs (none, selective, full on the first k layers), so the
// first rung that fits is the cheapest of the ladder.
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff/Passes.h"

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MT/IR/MTOps.h"
#include "dialects/MT/IR/TrainingSteps.h"
#include "dialects/MTRT/IR/MTRTDialect.h"
#include "megatron/Analysis/OpFlops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>

namespace mlir::mt {
#define GEN_PASS_DEF_REMATBUDGETPASS
#include "passes/Autodiff/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

/// One rung of the ladder: `none`, `selective`, or `full` on the first
/// `fullLayers` layers (and selective on the rest).
struct Candidate {
  std::string policy;
  SmallVector<int64_t> fullLayers;

  std::string describe(size_t numLayers) const {
    if (policy != "full")
      return policy;
    if (fullLayers.size() == numLayers)
      return "full";
    std::string text = "full on layer";
    text += fullLayers.size() == 1 ? " " : "s ";
    text += std::to_string(fullLayers.front());
    if (fullLayers.size() > 1)
      text += "-" + std::to_string(fullLayers.back());
    return text + ", selective on the others";
  }
};

struct RematBudgetPass : public mt::impl::RematBudgetPassBase<RematBudgetPass> {
  using RematBudgetPassBase::RematBudgetPassBase;

  /// The dialects of the trial compilations, which run as dynamic pipelines
  /// and may not load dialects themselves (as upstream's inliner does for
  /// its nested pipelines).
  void getDependentDialects(DialectRegistry &registry) const override {
    RematBudgetPassBase::getDependentDialects(registry);
    registry.insert<mtrt::MTRTDialect>();
    OpPassManager trial(ModuleOp::getOperationName());
    if (succeeded(parsePassPipeline(lowering, trial, llvm::nulls())))
      trial.getDependentDialects(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (budget <= 0) {
      emitError(module.getLoc())
          << "mt-remat-budget: budget must be a positive number of bytes per "
             "rank, got "
          << budget.getValue();
      return signalPassFailure();
    }

    if (failed(requireTrainingStep(module, "mt-remat-budget",
                                   "budget=" + std::to_string(budget))))
      return signalPassFailure();

    // The layers of the training steps, in order.
    std::set<int64_t> layerSet;
    for (func::FuncOp function : getTrainingSteps(module)) {
      function.walk([&](Operation *op) {
        if (std::optional<int64_t> layer = MTDialect::getLayer(op))
          layerSet.insert(*layer);
      });
    }
    SmallVector<int64_t> layers(layerSet.begin(), layerSet.end());

    SmallVector<Candidate> ladder = {{"none", {}}, {"selective", {}}};
    for (size_t k = 1; k <= layers.size(); ++k)
      ladder.push_back(
          {"full", SmallVector<int64_t>(layers.begin(), layers.begin() + k)});

    std::map<size_t, int64_t> peaks;
    auto peakOf = [&](size_t rung) -> FailureOr<int64_t> {
      if (auto known = peaks.find(rung); known != peaks.end())
        return known->second;
      FailureOr<int64_t> peak = compilePeak(ladder[rung]);
      if (succeeded(peak))
        peaks[rung] = *peak;
      return peak;
    };

    // The cheapest rung first; then whether anything fits at all.
    size_t last = ladder.size() - 1;
    FailureOr<int64_t> cheapest = peakOf(0);
    if (failed(cheapest))
      return signalPassFailure();
    size_t chosen = 0;
    if (*cheapest > budget) {
      FailureOr<int64_t> smallest = peakOf(last);
      if (failed(smallest))
        return signalPassFailure();
      if (*smallest > budget) {
        emitError(module.getLoc())
            << "mt-remat-budget: no recomputation fits " << budget.getValue()
            << " bytes per rank: the smallest planned peak is " << *smallest
            << " bytes (" << ladder[last].describe(layers.size())
            << "); without recomputation it is " << *cheapest << " bytes";
        return signalPassFailure();
      }
      // The first rung in (0, last] that fits: peaks fall along the ladder.
      size_t low = 1, high = last;
      while (low < high) {
        size_t middle = low + (high - low) / 2;
        FailureOr<int64_t> peak = peakOf(middle);
        if (failed(peak))
          return signalPassFailure();
        if (*peak <= budget)
          high = middle;
        else
          low = middle + 1;
      }
      chosen = low;
    }

    // Apply the choice to the module itself.
    OpPassManager apply(ModuleOp::getOperationName());
    apply.addPass(createRematPass(optionsOf(ladder[chosen])));
    if (failed(runPipeline(apply, module)))
      return signalPassFailure();
    double flops = 0;
    int64_t recomputed = 0;
    module.walk([&](Operation *op) {
      if (op->hasAttr(MTDialect::getRecomputedAttrName())) {
        flops += opFlops(op);
        ++recomputed;
      }
    });
    emitRemark(module.getLoc())
        << "mt-remat-budget: " << ladder[chosen].describe(layers.size())
        << " fits " << budget.getValue() << " bytes per rank: planned peak "
        << peaks[chosen] << " bytes (" << peaks[0]
        << " without recomputation), " << recomputed << " ops recomputed, "
        << static_cast<int64_t>(flops) << " FLOPs per step";
  }

  RematPassOptions optionsOf(const Candidate &candidate) const {
    RematPassOptions options;
    options.policy = candidate.policy;
    options.recastParameters = recastParameters;
    options.fullLayers.assign(candidate.fullLayers.begin(),
                              candidate.fullLayers.end());
    return options;
  }

  /// The planned peak per rank of `candidate`: a copy of the module, nested
  /// in it for the time being (a pass may run pipelines only on what it
  /// holds), compiled by mt-remat and `lowering` to stage programs.
  FailureOr<int64_t> compilePeak(const Candidate &candidate) {
    ModuleOp module = getOperation();
    OpPassManager trial(ModuleOp::getOperationName());
    trial.addPass(createRematPass(optionsOf(candidate)));
    std::string errors;
    llvm::raw_string_ostream errorStream(errors);
    if (failed(parsePassPipeline(lowering, trial, errorStream))) {
      emitError(module.getLoc()) << "mt-remat-budget: lowering='" << lowering
                                 << "' is not a pass pipeline: " << errors;
      return failure();
    }
    auto copy = cast<ModuleOp>(module->clone());
    module.getBody()->push_back(copy);
    llvm::scope_exit eraseCopy([&] { copy->erase(); });
    if (failed(runPipeline(trial, copy)))
      return failure();
    int64_t peak = -1;
    copy.walk([&](mtrt::ProgramOp program) {
      peak = std::max<int64_t>(peak, program.getArenaBytes());
    });
    if (peak < 0) {
      emitError(module.getLoc())
          << "mt-remat-budget: lowering='" << lowering
          << "' produced no mtrt.program, so no planned peak";
      return failure();
    }
    return peak;
  }
};

} // namespace
