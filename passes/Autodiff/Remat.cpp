//===- Remat.cpp - Recompute activations instead of stashing them ---------===//
//
// Activation checkpointing on a training step: the forward ops chosen by the
// policy are cloned just before the first backward op of their layer that
// reads them, and backward uses read the clones. What a layer hands to
// another layer stays stashed. See the pass description in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff/Passes.h"

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MT/IR/MTOps.h"
#include "dialects/MT/IR/TrainingSteps.h"
#include "megatron/Analysis/OpFlops.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <set>

namespace mlir::mt {
#define GEN_PASS_DEF_REMATPASS
#include "passes/Autodiff/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

/// The phase autodiff stated ("backward", "optimizer"), or "" for the
/// forward pass.
StringRef phaseOf(Operation *op) {
  auto phase = op->getAttrOfType<StringAttr>(MTDialect::getPhaseAttrName());
  return phase ? phase.getValue() : StringRef();
}

std::optional<int64_t> layerOf(Operation *op) {
  return MTDialect::getLayer(op);
}

struct RematPass : public mt::impl::RematPassBase<RematPass> {
  using RematPassBase::RematPassBase;

  void runOnOperation() override {
    if (policy != "none" && policy != "full" && policy != "selective") {
      getOperation().emitError()
          << "mt-remat: remat='" << policy
          << "' is not a policy (none, full or selective; a memory budget "
             "is mt-remat-budget's, remat=budget of --mt-train-pipeline)";
      return signalPassFailure();
    }
    if (ignoredBudget != 0) {
      getOperation().emitError()
          << "mt-remat: remat-budget=" << ignoredBudget.getValue()
          << " is read only by remat=budget, not remat=" << policy
          << " (the budget would be ignored)";
      return signalPassFailure();
    }
    if (!fullLayers.empty() && policy != "full") {
      getOperation().emitError()
          << "mt-remat: full-layers is read only by remat=full, not remat="
          << policy << " (the layers would be ignored)";
      return signalPassFailure();
    }
    if (policy != "none" &&
        failed(requireTrainingStep(getOperation(), "mt-remat",
                                   "remat=" + policy.getValue())))
      return signalPassFailure();
    for (func::FuncOp function : getTrainingSteps(getOperation())) {
      if (failed(checkFullLayers(function)))
        return signalPassFailure();
      rematerialize(function);
    }
  }

  /// full-layers names layers of the model: one it lacks would recompute
  /// nothing of what was asked.
  LogicalResult checkFullLayers(func::FuncOp function) {
    std::set<int64_t> layers;
    function.walk([&](Operation *op) {
      if (std::optional<int64_t> layer = layerOf(op))
        layers.insert(*layer);
    });
    for (int64_t layer : fullLayers)
      if (!layers.count(layer))
        return function.emitError()
               << "mt-remat: full-layers names layer " << layer
               << ", but the model's layers are "
               << (layers.empty() ? std::string("none")
                                  : std::to_string(*layers.begin()) + " to " +
                                        std::to_string(*layers.rbegin()));
    return success();
  }

  /// Whether the policy recomputes forward op `op` of layer `layer`.
  bool chosen(Operation *op, int64_t layer) const {
    bool full = policy == "full" &&
                (fullLayers.empty() || llvm::is_contained(fullLayers, layer));
    if (full)
      return isa<MTDialect>(op->getDialect()) ||
             isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op);
    if (policy == "selective" || policy == "full")
      return isa<AttentionOp, MergeHeadsOp>(op);
    return false;
  }

  /// Mixed precision reads each parameter through a 16-bit cast
  /// (mt-mixed-precision), and the backward reads the same copy: kept, the
  /// copies of every layer would live from the forward to the backward, 2
  /// bytes per parameter. Under every policy the backward casts again, just
  /// before the first backward use, so a copy lives within one layer's
  /// forward or backward (and ZeRO-3 gathers the parameter again for it,
  /// as it does in fp32). One elementwise pass per parameter. A vector's
  /// copy (a norm weight's) is kept: its bytes grow with the width, not its
  /// square, and a cast is a kernel launch.
  void recastParameterCopies(func::FuncOp function) {
    Block &body = function.getBody().front();
    for (auto castOp : llvm::to_vector(body.getOps<CastOp>())) {
      if (!phaseOf(castOp).empty() || !isa<BlockArgument>(castOp.getInput()) ||
          castOp.getType().getRank() <= 1)
        continue;
      Operation *firstUse = nullptr;
      for (Operation *user : castOp.getResult().getUsers())
        if (phaseOf(user) == "backward" &&
            (!firstUse || user->isBeforeInBlock(firstUse)))
          firstUse = user;
      if (!firstUse)
        continue;
      OpBuilder builder(firstUse);
      Operation *clone = builder.clone(*castOp);
      clone->setAttr(MTDialect::getPhaseAttrName(),
                     builder.getStringAttr("backward"));
      clone->setAttr(MTDialect::getRecomputedAttrName(), builder.getUnitAttr());
      castOp.getResult().replaceUsesWithIf(
          clone->getResult(0), [&](OpOperand &use) {
            return phaseOf(use.getOwner()) == "backward";
          });
      ++numRecomputedOps;
    }
  }

  void rematerialize(func::FuncOp function) {
    if (recastParameters)
      recastParameterCopies(function);
    if (policy == "none")
      return;
    Block &body = function.getBody().front();
    // The chosen forward ops of each layer, in program order.
    std::map<int64_t, SmallVector<Operation *>> chosenOf;
    for (Operation &op : body.without_terminator())
      if (phaseOf(&op).empty() && layerOf(&op) && chosen(&op, *layerOf(&op)) &&
          op.getNumRegions() == 0)
        chosenOf[*layerOf(&op)].push_back(&op);

    // The forward FLOPs of the layers: what one more forward per layer
    // costs.
    double recomputedFlops = 0, layerFlops = 0;
    for (Operation &op : body.without_terminator())
      if (phaseOf(&op).empty() && layerOf(&op))
        layerFlops += opFlops(&op);
    int64_t layers = 0, recomputed = 0;
    for (auto &[layer, ops] : chosenOf) {
      llvm::DenseSet<Operation *> inLayer(ops.begin(), ops.end());
      // A value the layer hands on (read by a forward op of another layer or
      // of none) is stashed anyway: its backward uses keep reading it.
      auto handedOn = [&](Value value) {
        return llvm::any_of(value.getUsers(), [&](Operation *user) {
          return phaseOf(user).empty() && layerOf(user) != layer;
        });
      };
      // What the backward pass reads, and, transitively, what computes it.
      llvm::SetVector<Operation *> needed;
      Operation *firstUse = nullptr;
      for (Operation *op : ops)
        for (Value result : op->getResults()) {
          if (handedOn(result))
            continue;
          for (Operation *user : result.getUsers())
            if (phaseOf(user) == "backward") {
              needed.insert(op);
              if (!firstUse || user->isBeforeInBlock(firstUse))
                firstUse = user;
            }
        }
      if (needed.empty())
        continue;
      for (size_t i = 0; i < needed.size(); ++i)
        for (Value operand : needed[i]->getOperands())
          if (Operation *def = operand.getDefiningOp();
              def && inLayer.contains(def) && !handedOn(operand))
            needed.insert(def);

      // Clones, in program order, just before the layer's first backward
      // use; they read the originals of what is stashed.
      OpBuilder builder(firstUse);
      IRMapping clones;
      for (Operation *op : ops) {
        if (!needed.contains(op))
          continue;
        Operation *clone = builder.clone(*op, clones);
        clone->setAttr(MTDialect::getPhaseAttrName(),
                       builder.getStringAttr("backward"));
        clone->setAttr(MTDialect::getRecomputedAttrName(),
                       builder.getUnitAttr());
        recomputedFlops += opFlops(op);
        ++recomputed;
      }
      for (Operation *op : needed)
        for (Value result : op->getResults())
          if (!handedOn(result))
            // Every backward reader comes at or after `firstUse`: the
            // earliest backward reader of any chosen op of the layer.
            result.replaceUsesWithIf(
                clones.lookup(result), [&](OpOperand &use) {
                  return phaseOf(use.getOwner()) == "backward";
                });
      ++layers;
    }
    numRecomputedOps += recomputed;
    if (printRecompute)
      llvm::errs() << "mt-remat: " << policy << " recomputes " << recomputed
                   << " ops in " << layers << " layers of @"
                   << function.getSymName() << ": "
                   << llvm::format("%.0f", recomputedFlops)
                   << " FLOPs per step, "
                   << llvm::format("%.4f", layerFlops > 0
                                               ? recomputedFlops / layerFlops
                                               : 0.0)
                   << " of the layers' forward FLOPs ("
                   << llvm::format("%.0f", layerFlops) << ")\n";
  }
};

} // namespace
