//===- Pipeline.cpp - Pipeline stages, microbatches and a schedule --------===//
//
// Turns the SPMD training step into one function per pipeline rank:
//
//   1. classify every op: forward or backward (run once per microbatch, on
//      one virtual stage) or optimizer (once per step, after the flush);
//   2. place forward and backward ops on virtual stages: by `mt.layer`, or
//      by the data they read for ops outside the layers;
//   3. for each rank, clone the ops of each action of the static schedule
//      (forward or backward of one microbatch on one of its chunks) in
//      order, receiving the values other stages computed and sending the
//      ones other stages read, and accumulate what the optimizer reads;
//   4. after the flush, exchange the accumulated values another stage needs
//      (the tied embedding's gradient contributions) and clone the optimizer
//      ops this rank's results need, the global norm summed over stages.
//
//===----------------------------------------------------------------------===//

#include "passes/Pipeline/Passes.h"

#include "dialects/MT/IR/MTOps.h"
#include "dialects/MT/IR/TrainingSteps.h"
#include "megatron/Analysis/OpFlops.h"
#include "megatron/Analysis/PipelineLayout.h"
#include "megatron/Analysis/PipelineSchedule.h"
#include "megatron/Analysis/ShapeInference.h"
#include "megatron/Utils/FunctionAttributeEditor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/Matchers.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/Support/raw_ostream.h"

#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <variant>

#define DEBUG_TYPE "mt-pipeline"

namespace mlir::mt {
#define GEN_PASS_DEF_PIPELINEPASS
#include "passes/Pipeline/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

constexpr StringLiteral kGridName = "grid";
constexpr int16_t kPipelineAxis = 0;
/// The microbatch of a transfer tag's key for a value sent once per step
/// (-1 is after the flush).
constexpr int64_t kPerStep = -2;

enum class Phase { Forward = 0, Backward = 1, Optimizer = 2 };

/// The type a value of `type` travels as: itself, or a scalar as a tensor
/// of one element (shard.send and shard.recv move tensors of rank 1 or
/// more; a layer's router z-loss is made on its layer's stage and added to
/// the loss on the last).
RankedTensorType transferType(RankedTensorType type) {
  return type.getRank() > 0 ? type
                            : RankedTensorType::get({1}, type.getElementType());
}

/// `value` as it travels (transferType).
Value asTransferable(OpBuilder &builder, Location loc, Value value) {
  auto type = cast<RankedTensorType>(value.getType());
  if (type.getRank() > 0)
    return value;
  return tensor::ExpandShapeOp::create(builder, loc, transferType(type), value,
                                       ArrayRef<ReassociationIndices>{});
}

/// A received value back in its own type `type` (asTransferable).
Value fromTransferred(OpBuilder &builder, Location loc, Value received,
                      RankedTensorType type) {
  if (type.getRank() > 0)
    return received;
  return tensor::CollapseShapeOp::create(builder, loc, type, received,
                                         ArrayRef<ReassociationIndices>{});
}

/// Ops that are optimizer work by what they are.
bool isOptimizerOp(Operation *op) {
  return isa<AdamWOp, GlobalNormOp, SumSquaresOp, SqrtOp, ClipScaleOp, DivOp>(
      op);
}

/// Whether `operand` of `op` is the loss's gradient seed, which each
/// microbatch divides by their number: operand 0 of every loss term's
/// gradient op (MT_LossGradient). Until 2026-11-29 only the
/// cross-entropy's was divided, which made a load-balancing loss's
/// gradient M times too large under M microbatches.
bool isLossGradientSeed(Operation *op, Value operand) {
  return op->hasTrait<LossGradient>() && operand == op->getOperand(0);
}

/// Ops that are backward work by what they are: the derivatives.

struct PipelinePass : public mt::impl::PipelinePassBase<PipelinePass> {
  using PipelinePassBase::PipelinePassBase;

  // The step being split, and what was found out about it.
  func::FuncOp step;
  DenseMap<Operation *, Phase> phaseOf;
  /// Virtual stage of every forward and backward op.
  DenseMap<Operation *, int64_t> stageOf;
  /// Values the optimizer reads that a microbatch computes: accumulated.
  llvm::SetVector<Value> accumulated;
  /// The emitted function of each pipeline rank.
  SmallVector<func::FuncOp> stageFunctions;
  /// Microbatch ops whose results are the same for every microbatch (they
  /// read only parameters): sent to another rank once per step.
  DenseSet<Operation *> invariantOps;
  int64_t numVirtual = 1, chunks = 1, numMicro = 1;
  /// Transformer layers per virtual stage, in virtual-stage order.
  std::vector<int64_t> layersPerStage;
  ScheduleKind kind = ScheduleKind::OneFOneB;

  int64_t rankOf(int64_t virtualStage) const { return virtualStage % pp; }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps = getTrainingSteps(module);
    if (pp > 1 || microbatches > 1) {
      std::string request =
          pp > 1 ? "pp=" + std::to_string(pp)
                 : "microbatches=" + std::to_string(microbatches);
      if (failed(requireTrainingStep(module, "mt-pipeline", request)))
        return signalPassFailure();
    }
    if (failed(validateOptions(module, steps)))
      return signalPassFailure();
    if (steps.empty() || (pp == 1 && numMicro == 1))
      return;
    step = steps.front();
    if (failed(classify()) || failed(checkLossGradientSeeds()) ||
        failed(placeOnStages()) || failed(checkDataFlowFollowsStages()))
      return signalPassFailure();
    if (pp > 1)
      addPipelineAxis(module);
    if (failed(splitMicrobatches()))
      return signalPassFailure();
    PipelineSchedule schedule = buildSchedule(kind, pp, numMicro, chunks);
    if (failed(reportSchedule(schedule)))
      return signalPassFailure();
    if (failed(emitStages(schedule)))
      return signalPassFailure();
    orderReceivesAsSent();
    step.erase();
  }

  /// The step's loss gradient seed (1, the loss_scale input or
  /// mt-parallelize's 1/dp share of it) as operand 0 of a loss term's
  /// gradient op reads it, or null where that operand is computed from it.
  static Value seedRoot(Operation *lossGradient) {
    Value seed = lossGradient->getOperand(0);
    if (auto share = seed.getDefiningOp<ScaleOp>())
      if (isa<BlockArgument>(share.getInput()))
        return share.getInput();
    if (isa<BlockArgument>(seed))
      return seed;
    DenseFPElementsAttr splat;
    if (matchPattern(seed, m_Constant(&splat)) && splat.isSplat())
      return seed;
    return Value();
  }

  /// Each microbatch's backward starts from the seed divided by their
  /// number, read where the loss terms' gradient ops read it. A loss
  /// computed from its terms (a product, a weight that is a tensor) passes
  /// the seed through other backward ops first, and dividing there would
  /// be wrong: until 2026-11-29 mt-pipeline replaced that operand by 1/M,
  /// silently dropping what it was multiplied by (loss = ce * ce trained
  /// with a gradient norm 7 times too small under 2 microbatches).
  LogicalResult checkLossGradientSeeds() {
    if (numMicro == 1)
      return success();
    WalkResult walk = step.walk([&](Operation *op) {
      if (!op->hasTrait<LossGradient>() || seedRoot(op))
        return WalkResult::advance();
      Operation *via = op->getOperand(0).getDefiningOp();
      InFlightDiagnostic diag =
          op->emitOpError()
          << "reads the loss's gradient through '"
          << (via ? via->getName().getStringRef() : StringRef("?"))
          << "': mt-pipeline splits into microbatches=" << numMicro
          << " only a loss that is a sum of loss terms (mt.cross_entropy, "
             "mt.load_balancing_loss, mt.router_z_loss), whose gradient ops "
             "read the step's seed itself";
      if (via)
        diag.attachNote(via->getLoc()) << "the seed passes through here";
      return WalkResult::interrupt();
    });
    return failure(walk.wasInterrupted());
  }

  //===--------------------------------------------------------------------===//
  // Options
  //===--------------------------------------------------------------------===//

  LogicalResult validateOptions(ModuleOp module,
                                MutableArrayRef<func::FuncOp> steps) {
    auto error = [&]() { return module.emitError() << "mt-pipeline: "; };
    if (pp < 1)
      return error() << "pp must be positive, got " << pp.getValue();
    if (virtualStages < 1)
      return error() << "virtual-stages must be positive, got "
                     << virtualStages.getValue();
    std::optional<ScheduleKind> parsed = parseScheduleKind(schedule);
    if (!parsed)
      return error() << "unknown schedule '" << schedule.getValue()
                     << "' (expected gpipe, 1f1b or interleaved)";
    kind = *parsed;
    chunks = virtualStages;
    if (steps.size() > 1)
      return steps[1].emitOpError()
             << "is a second training step: mt-pipeline splits one";
    numMicro = microbatches;
    if (!steps.empty()) {
      func::FuncOp function = steps.front();
      // The importer's global batch fixes the microbatches: each
      // data-parallel rank runs global / (micro-batch x dp) of them.
      if (auto micro = function->getAttrOfType<IntegerAttr>(
              MTDialect::getMicroBatchSizeAttrName())) {
        int64_t batch = 0;
        for (BlockArgument arg : function.getArguments())
          if (auto role = function.getArgAttrOfType<StringAttr>(
                  arg.getArgNumber(), MTDialect::getInputAttrName());
              role && role.getValue() == "tokens")
            batch = cast<RankedTensorType>(arg.getType()).getDimSize(0);
        int64_t dp = 1;
        if (auto grid = module.lookupSymbol<shard::GridOp>(kGridName))
          dp = grid.getShape().front();
        int64_t b = micro.getInt();
        if (batch % b != 0)
          return function.emitOpError()
                 << "has a global batch of " << batch * dp
                 << " sequences, not a multiple of micro-batch " << b
                 << " x dp " << dp;
        int64_t derived = batch / b;
        if (numMicro != 0 && numMicro != derived)
          return error() << "microbatches=" << numMicro
                         << " disagrees with the model's global batch of "
                         << batch * dp << " = micro-batch " << b << " x dp "
                         << dp << " x " << derived << " microbatches";
        numMicro = derived;
      }
    }
    if (scheduleCosts != "uniform" && scheduleCosts != "flops")
      return error() << "unknown schedule-costs '" << scheduleCosts
                     << "' (expected uniform or flops)";
    if (numMicro == 0)
      numMicro = 1;
    if (numMicro < 0)
      return error() << "microbatches must be positive, got " << numMicro;
    if (std::optional<std::string> problem =
            checkSchedule(kind, pp, numMicro, chunks))
      return error() << *problem;
    numVirtual = pp * chunks;
    if (steps.empty())
      return success();
    std::set<int64_t> layers;
    steps.front().walk([&](Operation *op) {
      if (std::optional<int64_t> layer = MTDialect::getLayer(op))
        layers.insert(*layer);
    });
    int64_t numLayers = int64_t(layers.size());
    if (!layout.empty()) {
      auto parsed = parsePipelineLayout(layout, numVirtual, numLayers);
      if (auto *problem = std::get_if<std::string>(&parsed))
        return error() << *problem;
      layersPerStage = std::get<std::vector<int64_t>>(parsed);
      return success();
    }
    if (pp > 1 && numLayers % pp != 0)
      return error() << "pp " << pp.getValue() << " does not divide the "
                     << numLayers << " layers of the model";
    if (pp > 1 && (numLayers / pp) % chunks != 0)
      return error() << "pp " << pp.getValue() << " x virtual-stages " << chunks
                     << " = " << pp * chunks
                     << " model chunks do not divide the " << numLayers
                     << " layers of the model (" << numLayers / pp
                     << " per pipeline stage)";
    if (pp > 1 && numLayers == 0)
      return error() << "the model has no layers (mt.layer) to split";
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Phases and stages
  //===--------------------------------------------------------------------===//

  LogicalResult classify() {
    Block &body = step.getBody().front();
    SmallVector<Operation *> undecided;
    for (Operation &op : body.without_terminator()) {
      std::optional<Phase> phase;
      if (isOptimizerOp(&op))
        phase = Phase::Optimizer;
      if (auto stated =
              op.getAttrOfType<StringAttr>(MTDialect::getPhaseAttrName()))
        phase = stated.getValue() == "optimizer"  ? Phase::Optimizer
                : stated.getValue() == "backward" ? Phase::Backward
                                                  : Phase::Forward;
      // Otherwise: the latest phase of what it reads; a microbatch's data
      // is read first by the forward pass.
      for (Value operand : op.getOperands()) {
        if (Operation *def = operand.getDefiningOp()) {
          if (auto it = phaseOf.find(def); it != phaseOf.end())
            phase = std::max(phase.value_or(Phase::Forward), it->second);
        } else if (isDataInput(operand)) {
          phase = std::max(phase.value_or(Phase::Forward), Phase::Forward);
        }
      }
      if (phase)
        phaseOf[&op] = *phase;
      else
        undecided.push_back(&op);
    }
    // Ops reading only arguments and constants (a parameter's view or
    // gather, a constant): the earliest phase that reads them.
    for (Operation *op : llvm::reverse(undecided)) {
      std::optional<Phase> phase;
      for (Operation *user : op->getUsers())
        if (auto it = phaseOf.find(user); it != phaseOf.end())
          phase = std::min(phase.value_or(Phase::Optimizer), it->second);
      phaseOf[op] = phase.value_or(Phase::Forward);
    }
    return success();
  }

  /// A `tokens` or `labels` argument: one per microbatch.
  bool isDataInput(Value value) {
    auto arg = dyn_cast<BlockArgument>(value);
    if (!arg)
      return false;
    auto role = step.getArgAttrOfType<StringAttr>(
        arg.getArgNumber(), MTDialect::getInputAttrName());
    return role && (role.getValue() == "tokens" || role.getValue() == "labels");
  }

  bool isMicro(Operation *op) const {
    auto it = phaseOf.find(op);
    return it != phaseOf.end() && it->second != Phase::Optimizer;
  }

  /// Whether what reads `sum` (and what reads that, in turn) is work of
  /// the whole step: it reads no other value of a microbatch before it
  /// reaches the optimizer. The tied embedding's gradient sum feeds only
  /// the optimizer; the gradient of a connection that skips stages feeds
  /// the backward pass of the layers it skipped from.
  bool feedsOnlyStepWork(Operation *sum) {
    SmallVector<Operation *> work = {sum};
    DenseSet<Operation *> seen = {sum};
    while (!work.empty()) {
      Operation *op = work.pop_back_val();
      for (Operation *user : op->getUsers()) {
        if (!seen.insert(user).second || isa<func::ReturnOp>(user) ||
            phaseOf.lookup(user) == Phase::Optimizer)
          continue;
        for (Value operand : user->getOperands()) {
          Operation *def = operand.getDefiningOp();
          if (isDataInput(operand) ||
              (def && !seen.contains(def) && isMicro(def)))
            return false;
        }
        work.push_back(user);
      }
    }
    return true;
  }

  /// Stages run in order: the forward pass hands activations from each
  /// (virtual) stage to a later one, the backward pass gradients to an
  /// earlier one. `mt.layer` numbers that run against the data flow (a
  /// layer numbered after the one it feeds) place a forward op before the
  /// stage it reads from; the schedule would wait on itself (1F1B
  /// deadlocks) or trade activations back and forth, so it is refused.
  LogicalResult checkDataFlowFollowsStages() {
    // In program order, so the first offence of the forward pass is named.
    for (Operation &each : step.getBody().front()) {
      Operation *op = &each;
      auto placed = stageOf.find(op);
      if (placed == stageOf.end())
        continue;
      int64_t stage = placed->second;
      Phase phase = phaseOf.lookup(op);
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        auto from = def ? stageOf.find(def) : stageOf.end();
        if (from == stageOf.end() || phaseOf.lookup(def) != phase)
          continue;
        bool against = phase == Phase::Forward ? from->second > stage
                                               : from->second < stage;
        if (!against)
          continue;
        auto layerOf = [](Operation *op) {
          std::optional<int64_t> layer = MTDialect::getLayer(op);
          return layer ? " (layer " + std::to_string(*layer) + ")"
                       : std::string();
        };
        InFlightDiagnostic error =
            op->emitOpError()
            << "on pipeline stage " << stage << layerOf(op) << " reads "
            << (phase == Phase::Forward ? "a forward" : "a backward")
            << " value of stage " << from->second << layerOf(def)
            << ", against the data flow: mt.layer numbers must increase "
               "along the forward pass";
        error.attachNote(def->getLoc()) << "the value is made here";
        return error;
      }
    }
    return success();
  }

  LogicalResult placeOnStages() {
    Block &body = step.getBody().front();
    std::set<int64_t> layerSet;
    for (Operation &op : body)
      if (std::optional<int64_t> layer = MTDialect::getLayer(&op))
        layerSet.insert(*layer);
    // Layers in order, split as the layout says or evenly.
    if (layersPerStage.empty()) {
      int64_t perStage =
          std::max<int64_t>(1, int64_t(layerSet.size()) / numVirtual);
      layersPerStage.assign(size_t(numVirtual), perStage);
      layersPerStage.back() += std::max<int64_t>(0, int64_t(layerSet.size()) -
                                                        perStage * numVirtual);
    }
    std::map<int64_t, int64_t> stageOfLayer;
    int64_t current = 0, placedOnStage = 0;
    for (int64_t layer : layerSet) {
      while (current + 1 < numVirtual &&
             placedOnStage >= layersPerStage[size_t(current)]) {
        ++current;
        placedOnStage = 0;
      }
      stageOfLayer[layer] = current;
      ++placedOnStage;
    }

    SmallVector<Operation *> undecided;
    for (Operation &op : body.without_terminator()) {
      if (!isMicro(&op))
        continue;
      if (std::optional<int64_t> layer = MTDialect::getLayer(&op)) {
        stageOf[&op] = stageOfLayer[*layer];
        continue;
      }
      // Outside the layers: where the data it reads comes from.
      std::set<int64_t> from;
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp())
          if (auto it = stageOf.find(def); it != stageOf.end())
            from.insert(it->second);
      if (from.empty()) {
        undecided.push_back(&op);
        continue;
      }
      if (from.size() > 1 && phaseOf[&op] == Phase::Backward &&
          feedsOnlyStepWork(&op)) {
        // A sum of gradient contributions from several stages that only the
        // optimizer reads (the tied embedding's, from the embedding and
        // from the head): each stage accumulates its own, and the sum is
        // taken after the flush.
        if (!isa<AddOp>(op))
          return op.emitOpError()
                 << "combines backward values of pipeline stages "
                 << *from.begin() << " and " << *from.rbegin()
                 << " but is not a sum: mt-pipeline cannot place it";
        phaseOf[&op] = Phase::Optimizer;
        continue;
      }
      // Forward work runs where its last input is made; a backward sum of
      // stages' gradients (of a connection that skips stages) where the
      // gradient flows on to, the earliest. Other backward work reading
      // several stages (the load-balancing loss's gradient, from every
      // layer's router loads) runs where its gradient arrives, the latest,
      // and its result flows back from there.
      stageOf[&op] =
          phaseOf[&op] == Phase::Backward && from.size() > 1 && isa<AddOp>(op)
              ? *from.begin()
              : *from.rbegin();
    }
    for (Operation *op : llvm::reverse(undecided)) {
      std::set<int64_t> stages;
      for (Operation *user : op->getUsers())
        if (auto it = stageOf.find(user); it != stageOf.end())
          stages.insert(it->second);
      if (stages.empty()) {
        // Read by no microbatch op: optimizer work after all.
        phaseOf[op] = Phase::Optimizer;
        continue;
      }
      // A constant read on several stages (the loss gradient's seed, which
      // every loss term's gradient reads: a layer's router z-loss on its
      // own stage, the cross-entropy's on the last) is made on each of
      // them rather than sent between them.
      if (op->getNumOperands() == 0)
        for (int64_t other : llvm::drop_begin(stages)) {
          OpBuilder atOp(op);
          Operation *copy = atOp.clone(*op);
          Phase phase = phaseOf.lookup(op);
          phaseOf[copy] = phase;
          stageOf[copy] = other;
          op->replaceUsesWithIf(copy->getResults(), [&](OpOperand &use) {
            auto it = stageOf.find(use.getOwner());
            return it != stageOf.end() && it->second == other;
          });
        }
      stageOf[op] = *stages.begin();
    }
    // A demoted sum makes what reads it optimizer work too.
    for (Operation &op : body.without_terminator()) {
      if (!isMicro(&op))
        continue;
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp();
            def && !isMicro(def) && phaseOf.count(def)) {
          phaseOf[&op] = Phase::Optimizer;
          stageOf.erase(&op);
          break;
        }
    }
    // The values the optimizer (or the result) reads from microbatch ops.
    for (Operation &op : body) {
      if (isMicro(&op))
        continue;
      for (Value operand : op.getOperands())
        if (Operation *def = operand.getDefiningOp(); def && isMicro(def))
          accumulated.insert(operand);
    }
    return success();
  }

  //===--------------------------------------------------------------------===//
  // The grid and the microbatch
  //===--------------------------------------------------------------------===//

  /// The grid becomes pp x (dp x tp): every grid axis named in the step
  /// moves up by one.
  void addPipelineAxis(ModuleOp module) {
    SmallVector<int64_t> shape = {pp.getValue(), 1, 1};
    OpBuilder builder(module.getBodyRegion());
    auto old = module.lookupSymbol<shard::GridOp>(kGridName);
    if (old) {
      shape.assign({pp.getValue()});
      shape.append(old.getShape().begin(), old.getShape().end());
      builder.setInsertionPoint(old);
    }
    shard::GridOp::create(builder, module.getLoc(), kGridName, shape);
    if (old)
      old.erase();
    Builder b(module.getContext());
    auto shifted = [&](IntegerAttr axis) {
      return b.getI64IntegerAttr(axis.getInt() + 1);
    };
    {
      FunctionAttributeEditor attrs(step);
      for (StringRef name : {MTDialect::getShardAxisAttrName(),
                             MTDialect::getPieceAxisAttrName(),
                             MTDialect::getExpertAxisAttrName()}) {
        for (unsigned i = 0; i < step.getNumArguments(); ++i)
          if (auto axis = attrs.getArgOfType<IntegerAttr>(i, name))
            attrs.setArg(i, name, shifted(axis));
        for (unsigned i = 0; i < step.getNumResults(); ++i)
          if (auto axis = attrs.getResultOfType<IntegerAttr>(i, name))
            attrs.setResult(i, name, shifted(axis));
      }
    }
    step.walk([&](Operation *op) {
      for (StringRef name : {MTDialect::getRngBatchAxisAttrName(),
                             MTDialect::getRngHeadAxisAttrName(),
                             MTDialect::getRngSeqAxisAttrName(),
                             MTDialect::getTpVocabAxisAttrName()})
        if (auto axis = op->getAttrOfType<IntegerAttr>(name))
          op->setAttr(name, shifted(axis));
      // The experts' all-to-alls (mt.expert_dispatch, mt.expert_combine).
      if (auto axis = op->getAttrOfType<IntegerAttr>("grid_axis"))
        op->setAttr("grid_axis", shifted(axis));
      if (auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes")) {
        SmallVector<int16_t> moved(axes.asArrayRef());
        for (int16_t &axis : moved)
          ++axis;
        op->setAttr("grid_axes", b.getDenseI16ArrayAttr(moved));
      }
    });
  }

  /// Retypes the step for one microbatch: the data inputs' batch divided
  /// by the microbatches, and every op's results inferred again.
  LogicalResult splitMicrobatches() {
    if (numMicro == 1)
      return success();
    Block &body = step.getBody().front();
    for (BlockArgument arg : body.getArguments()) {
      auto role = step.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), MTDialect::getInputAttrName());
      if (!role || (role.getValue() != "tokens" && role.getValue() != "labels"))
        continue;
      auto type = cast<RankedTensorType>(arg.getType());
      if (type.getDimSize(0) % numMicro != 0)
        return step.emitOpError()
               << "has a batch of " << type.getDimSize(0)
               << " sequences per rank, not divisible into " << numMicro
               << " microbatches (argument '" << role.getValue() << "')";
      SmallVector<int64_t> shape(type.getShape());
      shape[0] /= numMicro;
      arg.setType(RankedTensorType::get(shape, type.getElementType()));
    }
    DenseSet<Value> changed;
    for (BlockArgument arg : body.getArguments())
      if (isDataInput(arg))
        changed.insert(arg);
    for (Operation &op : body.without_terminator()) {
      // Only what reads a microbatch's data changes: a parameter's gather
      // (ZeRO-3) keeps its type.
      if (!isMicro(&op) || llvm::none_of(op.getOperands(), [&](Value v) {
            return changed.contains(v);
          }))
        continue;
      if (failed(splitSameTypeOperands(&op, changed, numMicro,
                                       "into " + std::to_string(numMicro) +
                                           " microbatches")))
        return failure();
      for (Value result : op.getResults())
        changed.insert(result);
      FailureOr<SmallVector<Type>> types = inferResultTypes(&op);
      if (failed(types))
        return failure();
      for (auto [result, type] : llvm::zip_equal(op.getResults(), *types))
        result.setType(type);
    }
    return success();
  }

  //===--------------------------------------------------------------------===//
  // The schedule
  //===--------------------------------------------------------------------===//

  LogicalResult reportSchedule(const PipelineSchedule &schedule) {
    if (!printSchedule && scheduleSvg.empty() && scheduleTrace.empty())
      return success();
    std::function<double(int64_t)> forwardCost, backwardCost;
    std::vector<double> forwardFlops(size_t(numVirtual), 0.0),
        backwardFlops(size_t(numVirtual), 0.0);
    if (scheduleCosts == "flops") {
      for (Operation &op : step.getBody().front()) {
        auto stage = stageOf.find(&op);
        if (stage == stageOf.end() || !isMicro(&op))
          continue;
        bool backward = phaseOf.lookup(&op) == Phase::Backward;
        (backward ? backwardFlops : forwardFlops)[size_t(stage->second)] +=
            opFlops(&op);
      }
      // In units of an even split's forward: a rank's slice of the model
      // costs about 1 forward and 2 backward, as with uniform costs.
      double unit = 0;
      for (double flops : forwardFlops)
        unit += flops;
      unit = unit > 0 ? unit / double(pp) : 1.0;
      forwardCost = [&, unit](int64_t vs) {
        return forwardFlops[size_t(vs)] / unit;
      };
      backwardCost = [&, unit](int64_t vs) {
        return backwardFlops[size_t(vs)] / unit;
      };
    }
    Timeline timeline = simulateSchedule(schedule, forwardCost, backwardCost);
    if (timeline.error)
      return step.emitOpError() << "schedule cannot run: " << *timeline.error;
    if (printSchedule) {
      std::ostringstream text;
      printTimeline(text, schedule, timeline);
      llvm::errs() << text.str();
    }
    auto write = [&](const std::string &path, auto writer) -> LogicalResult {
      if (path.empty())
        return success();
      std::ofstream out(path);
      if (!out)
        return step.emitOpError() << "cannot write '" << path << "'";
      writer(out, schedule, timeline);
      return success();
    };
    if (failed(write(scheduleSvg, writeSvg)) ||
        failed(write(scheduleTrace, writeChromeTrace)))
      return failure();
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Stage functions
  //===--------------------------------------------------------------------===//

  /// The lowest rank holding an accumulated value that `value` is computed
  /// from after the flush (`pp`: none, only arguments and constants).
  int64_t homeOf(Value value) {
    if (auto it = homes.find(value); it != homes.end())
      return it->second;
    int64_t home = pp;
    if (accumulated.contains(value)) {
      home = rankOf(stageOf.lookup(value.getDefiningOp()));
    } else if (Operation *def = value.getDefiningOp()) {
      for (Value operand : def->getOperands())
        home = std::min(home, homeOf(operand));
    }
    homes[value] = home;
    return home;
  }
  DenseMap<Value, int64_t> homes;

  /// The rank whose share of a norm sums the squares of `operand`: the rank
  /// holding it; a gradient two ranks hold (tied) is counted by the first.
  int64_t normRankOf(Value operand) {
    int64_t home = homeOf(operand);
    return home >= pp ? 0 : home;
  }

  /// What a rank's flush computes: the optimizer ops its results need (a
  /// norm reads only the rank's operands), and every value they read.
  struct FlushSlice {
    llvm::SetVector<Operation *> ops;
    DenseSet<Value> needed;
  };
  FlushSlice flushSliceOf(int64_t rank, ArrayRef<unsigned> results,
                          func::ReturnOp ret) {
    FlushSlice slice;
    SmallVector<Value> work;
    for (unsigned index : results)
      work.push_back(ret.getOperand(index));
    while (!work.empty()) {
      Value value = work.pop_back_val();
      if (!slice.needed.insert(value).second)
        continue;
      Operation *def = value.getDefiningOp();
      if (!def || isMicro(def))
        continue;
      slice.ops.insert(def);
      for (Value operand : def->getOperands())
        if (!isNormOp(def) || normRankOf(operand) == rank)
          work.push_back(operand);
    }
    return slice;
  }

  /// A sum of squares that mt-pipeline splits over the pipeline ranks.
  bool isNormOp(Operation *op) const {
    return pp > 1 && isa<SumSquaresOp, GlobalNormOp>(op);
  }

  /// The ops whose results are the same for every microbatch and are
  /// computed once per step, by the first microbatch, instead of once per
  /// microbatch: a forward value the backward on its rank reads too (a
  /// parameter's 16-bit copy under recast-parameters=false, otherwise one
  /// copy per microbatch in flight, up to pp copies of the stage's weights
  /// under 1F1B), and any vector (a bias's or a norm weight's copy). A
  /// matrix only the forward or only the backward reads (the default's
  /// cast per use) stays per microbatch: keeping it for the whole step
  /// would cost its memory.
  DenseSet<Operation *> computedOncePerStep() {
    DenseSet<Operation *> &invariant = invariantOps, once;
    Block &body = step.getBody().front();
    for (Operation &op : body.without_terminator()) {
      if (!isMicro(&op) || !mayBeInvariant(&op))
        continue;
      bool sameForAll = llvm::all_of(op.getOperands(), [&](Value operand) {
        if (auto arg = dyn_cast<BlockArgument>(operand))
          return !isDataInput(arg);
        return invariant.contains(operand.getDefiningOp());
      });
      if (!sameForAll)
        continue;
      invariant.insert(&op);
      // Only readers on the op's own rank count: there the copy is kept
      // from forward to backward. (A copy another rank reads, the tied
      // embedding's for the head, is sent to it once per step, and that
      // rank keeps what it received.) A vector parameter's value (a bias's
      // or a norm weight's 16-bit copy, or its gathered pieces) is kept for
      // the step in either phase: its bytes grow with the width, not its
      // square, while a cast per microbatch is a kernel launch each.
      if ((phaseOf[&op] == Phase::Forward &&
           readInBothPhasesOn(op.getResults(), rankOf(stageOf.lookup(&op)))) ||
          readsOnlyVectorParameters(&op))
        once.insert(&op);
    }
    // What only once-per-step ops read is computed once too (a ZeRO
    // all-gather of the 16-bit pieces, before the view the forward and the
    // backward read): a copy per microbatch would go unread.
    for (Operation &op : llvm::reverse(body.without_terminator()))
      if (invariant.contains(&op) && !op.use_empty() &&
          llvm::all_of(op.getUsers(),
                       [&](Operation *user) { return once.contains(user); }))
        once.insert(&op);
    numComputedOnce += once.size();
    return once;
  }

  /// Whether `value`, read on `readerStage` (another rank), moves there
  /// once per step and is kept: it is the same for every microbatch, and
  /// the reading rank reads it in the forward and the backward (the tied
  /// embedding's 16-bit copy, for the head) or it is a vector parameter's.
  /// A copy that rank reads in one phase only (ZeRO-3's per-pass gather of
  /// the tied table) moves per microbatch, as it is not kept.
  bool transferredOnce(Value value, int64_t readerStage) {
    Operation *def = value.getDefiningOp();
    if (!def || !invariantOps.contains(def))
      return false;
    return readsOnlyVectorParameters(def) ||
           readInBothPhasesOn(value, rankOf(readerStage));
  }

  /// Whether microbatch ops on pipeline rank `rank` read `values` in the
  /// forward and in the backward: a copy of them is then kept from one to
  /// the other.
  bool readInBothPhasesOn(ValueRange values, int64_t rank) const {
    bool forward = false, backward = false;
    for (Value value : values)
      for (Operation *user : value.getUsers()) {
        auto stage = stageOf.find(user);
        if (stage == stageOf.end() || rankOf(stage->second) != rank)
          continue;
        forward |= phaseOf.lookup(user) == Phase::Forward;
        backward |= phaseOf.lookup(user) == Phase::Backward;
      }
    return forward && backward;
  }

  /// Ops that compute the same for every microbatch when what they read
  /// is: pure mt ops drawing no dropout stream (whose mask depends on the
  /// microbatch), all-gathers (ZeRO's, of parameters; any axis is safe:
  /// every rank of a stage runs the stage's one program, so all skip the
  /// same gathers, and a gather of activations reads data), the cut of a
  /// gather's padding, and reshapes.
  static bool mayBeInvariant(Operation *op) {
    if (isa<shard::AllGatherOp, tensor::ExtractSliceOp, tensor::ExpandShapeOp,
            tensor::CollapseShapeOp>(op))
      return true;
    return isa<MTDialect>(op->getDialect()) && isPure(op) &&
           op->getNumRegions() == 0 && !op->hasAttr("rng_stream") &&
           !isa<DropoutOp, AttentionOp, AttentionGradOp, QKVAttentionOp,
                QKVAttentionGradOp, MergedAttentionOp, MergedAttentionGradOp>(
               op);
  }

  /// Whether `op` reads (through invariant ops) only parameters whose full
  /// shape is a vector: ZeRO's flattened pieces of a matrix are not.
  bool readsOnlyVectorParameters(Operation *op) {
    return llvm::all_of(op->getOperands(), [&](Value operand) {
      if (auto arg = dyn_cast<BlockArgument>(operand)) {
        if (auto full = step.getArgAttrOfType<DenseI64ArrayAttr>(
                arg.getArgNumber(), MTDialect::getFullShapeAttrName()))
          return full.size() <= 1;
        return cast<RankedTensorType>(arg.getType()).getRank() <= 1;
      }
      Operation *def = operand.getDefiningOp();
      return def && invariantOps.contains(def) &&
             readsOnlyVectorParameters(def);
    });
  }

  LogicalResult emitStages(const PipelineSchedule &schedule) {
    Block &body = step.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    MLIRContext *context = step.getContext();

    // Which rank returns each result: the loss from the rank computing it,
    // the gradient norm from every rank, a parameter (and its state) from
    // every rank that uses it in a microbatch.
    std::map<std::string, std::set<int64_t>> ownersOfParam;
    for (BlockArgument arg : body.getArguments()) {
      auto param = step.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), MTDialect::getParamAttrName());
      if (!param ||
          step.getArgAttr(arg.getArgNumber(), MTDialect::getStateAttrName()))
        continue;
      // The microbatch ops reading it directly: its uses, ZeRO-3's gathers.
      std::set<int64_t> &owners = ownersOfParam[param.getValue().str()];
      for (Operation *user : arg.getUsers())
        if (auto it = stageOf.find(user); it != stageOf.end())
          owners.insert(rankOf(it->second));
      if (owners.empty())
        owners.insert(0);
    }
    std::vector<SmallVector<unsigned>> resultsOf(pp);
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      auto output = step.getResultAttrOfType<StringAttr>(
          index, MTDialect::getOutputAttrName());
      auto param = step.getResultAttrOfType<StringAttr>(
          index, MTDialect::getParamAttrName());
      std::set<int64_t> ranks;
      if (param) {
        ranks = ownersOfParam[param.getValue().str()];
      } else if (output && output.getValue() == "loss") {
        // Reported by the rank that computes it: the loss's own home.
        ranks.insert(normRankOf(value));
      } else {
        for (int64_t rank = 0; rank < pp; ++rank)
          ranks.insert(rank);
      }
      for (int64_t rank : ranks)
        resultsOf[rank].push_back(unsigned(index));
    }
    std::vector<FlushSlice> slices;
    for (int64_t rank = 0; rank < pp; ++rank)
      slices.push_back(flushSliceOf(rank, resultsOf[rank], ret));

    // Transfer tags: one per (value, microbatch, destination virtual stage)
    // in the microbatches, one per (value, kPerStep, destination rank) for
    // a value the same for every microbatch, and one per (value,
    // -1, destination rank) after the flush; sender and receiver look up
    // the same key.
    DenseMap<std::tuple<Value, int64_t, int64_t>, int64_t> tags;
    auto tagOf = [&](Value value, int64_t micro, int64_t dest) {
      auto key = std::make_tuple(value, micro, dest);
      auto it = tags.find(key);
      if (it == tags.end())
        it = tags.try_emplace(key, int64_t(tags.size())).first;
      return it->second;
    };
    // Per-op lists of microbatch ops, by (virtual stage, backward).
    std::map<std::pair<int64_t, bool>, SmallVector<Operation *>> opsOf;
    for (Operation &op : body.without_terminator())
      if (isMicro(&op))
        opsOf[{stageOf.lookup(&op), phaseOf[&op] == Phase::Backward}].push_back(
            &op);
    // Which virtual stages read a microbatch value.
    auto readersOf = [&](Value value) {
      std::set<int64_t> readers;
      for (Operation *user : value.getUsers())
        if (auto it = stageOf.find(user); it != stageOf.end())
          readers.insert(it->second);
      return readers;
    };

    DenseSet<Operation *> oncePerStep = computedOncePerStep();

    OpBuilder moduleBuilder(step);
    Builder b(context);
    for (int64_t rank = 0; rank < pp; ++rank) {
      const llvm::SetVector<Operation *> &flushOps = slices[rank].ops;
      const DenseSet<Value> &needed = slices[rank].needed;

      auto function =
          func::FuncOp::create(moduleBuilder, step.getLoc(),
                               (step.getName() + "_stage" + Twine(rank)).str(),
                               FunctionType::get(context, {}, {}));
      stageFunctions.push_back(function);
      if (pp > 1)
        function->setAttr(MTDialect::getPipelineStageAttrName(),
                          b.getI64IntegerAttr(rank));
      Block *entry = function.addEntryBlock();
      OpBuilder builder = OpBuilder::atBlockEnd(entry);
      SmallVector<DictionaryAttr> argAttrs;
      // Arguments on first use: data inputs once per microbatch.
      std::map<std::pair<unsigned, int64_t>, Value> args;
      auto argFor = [&](BlockArgument arg, int64_t micro) -> Value {
        bool perMicro = isDataInput(arg);
        if (!perMicro)
          micro = -1;
        auto key = std::make_pair(arg.getArgNumber(), micro);
        if (Value existing = args[key])
          return existing;
        Value value = entry->addArgument(arg.getType(), arg.getLoc());
        NamedAttrList attrs(step.getArgAttrDict(arg.getArgNumber()));
        if (perMicro && numMicro > 1)
          attrs.set(MTDialect::getMicrobatchAttrName(),
                    b.getI64IntegerAttr(micro));
        argAttrs.push_back(attrs.getDictionary(context));
        return args[key] = value;
      };
      // The loss gradient's seed over the microbatches: the step's seed (1,
      // or under fp16's loss scaling the loss_scale input, mt-autodiff's)
      // divided by their number, each microbatch's loss being a 1/M part of
      // the mean. Until 2026-11-28 it was the constant 1/M, which dropped
      // the loss scale: with loss scaling and microbatches the gradients
      // came out divided by the scale.
      // One per seed a loss term's gradient reads (checkLossGradientSeeds
      // accepts several): the first one's for all of them divided only the
      // first correctly.
      DenseMap<Value, Value> seeds;
      auto seedFor = [&](Value original) -> Value {
        Value &seed = seeds[original];
        if (!seed) {
          OpBuilder::InsertionGuard guard(builder);
          builder.setInsertionPointToStart(entry);
          // The scale input, or mt-parallelize's share of it per
          // data-parallel rank (mt.scale of it).
          double factor = 1.0;
          Value scaleInput = original;
          if (auto divided = original.getDefiningOp<ScaleOp>()) {
            factor = divided.getFactor().convertToDouble();
            scaleInput = divided.getInput();
          }
          if (auto arg = dyn_cast<BlockArgument>(scaleInput)) {
            Value input = argFor(arg, -1);
            auto scaled =
                ScaleOp::create(builder, original.getLoc(), input,
                                b.getF64FloatAttr(factor / double(numMicro)));
            scaled->setAttr(MTDialect::getPhaseAttrName(),
                            b.getStringAttr("backward"));
            seed = scaled;
          } else {
            // A splat constant (checkLossGradientSeeds).
            auto type = cast<RankedTensorType>(original.getType());
            DenseFPElementsAttr splat;
            double one = 1.0;
            if (matchPattern(original, m_Constant(&splat)))
              one = splat.getSplatValue<APFloat>().convertToDouble();
            seed = arith::ConstantOp::create(
                builder, original.getLoc(), type,
                DenseElementsAttr::get(type,
                                       b.getFloatAttr(type.getElementType(),
                                                      one / double(numMicro))));
          }
        }
        return seed;
      };

      DenseMap<std::pair<Value, int64_t>, Value> microValues;
      DenseMap<Value, Value> accumulators;
      // The first microbatch's copy of each op computed once per step.
      DenseMap<Operation *, Operation *> onceCopies;
      // Values the same for every microbatch, sent or received once per
      // step: by (value, destination rank), whichever of its chunks reads
      // them.
      DenseSet<std::pair<Value, int64_t>> sentOnce;
      DenseMap<std::pair<Value, int64_t>, Value> receivedOnce;
      auto lookup = [&](Value original, int64_t micro) -> Value {
        if (auto arg = dyn_cast<BlockArgument>(original))
          return argFor(arg, micro);
        auto it = microValues.find({original, micro});
        return it == microValues.end() ? Value() : it->second;
      };

      for (const PipelineAction &action : schedule.actions[rank]) {
        // Under the interleaved schedule each op of the action states its
        // chunk too (the measured trace names actions as F3.1).
        Operation *before = builder.getInsertionBlock()->empty()
                                ? nullptr
                                : &builder.getInsertionBlock()->back();
        llvm::scope_exit stampChunk([&] {
          if (chunks <= 1)
            return;
          Block *block = builder.getInsertionBlock();
          for (Operation &op : llvm::make_range(
                   before ? std::next(before->getIterator()) : block->begin(),
                   block->end()))
            if (op.hasAttr(MTDialect::getMicrobatchAttrName()))
              op.setAttr(MTDialect::getChunkAttrName(),
                         b.getI64IntegerAttr(action.chunk));
        });
        int64_t virtualStage = virtualStageOf(rank, action.chunk);
        bool backward = action.kind == PipelineAction::Backward;
        int64_t micro = action.microbatch;
        StringAttr actionPhase =
            b.getStringAttr(backward ? "backward" : "forward");
        const SmallVector<Operation *> &ops = opsOf[{virtualStage, backward}];
        // Receive what other stages computed for this action (in the order
        // the peer sent them: orderReceivesAsSent()).
        for (Operation *op : ops)
          for (Value operand : op->getOperands()) {
            Operation *def = operand.getDefiningOp();
            if (!def || !isMicro(def) || lookup(operand, micro))
              continue;
            int64_t from = stageOf.lookup(def);
            // This rank's own values are mapped when their op is cloned
            // (earlier in this action, or in an earlier one).
            if (rankOf(from) == rank)
              continue;
            bool once = transferredOnce(operand, virtualStage);
            if (Value received = receivedOnce.lookup({operand, rank})) {
              microValues[{operand, micro}] = received;
              continue;
            }
            auto ownType = cast<RankedTensorType>(operand.getType());
            RankedTensorType type = transferType(ownType);
            Value empty =
                tensor::EmptyOp::create(builder, operand.getLoc(),
                                        type.getShape(), type.getElementType());
            auto recv = shard::RecvOp::create(
                builder, operand.getLoc(), type, kGridName,
                ArrayRef<int16_t>{kPipelineAxis}, empty,
                b.getDenseI64ArrayAttr({rankOf(from)}), ValueRange());
            recv->setAttr(
                MTDialect::getTransferTagAttrName(),
                b.getI64IntegerAttr(tagOf(operand, once ? kPerStep : micro,
                                          once ? rank : virtualStage)));
            recv->setAttr(MTDialect::getMicrobatchAttrName(),
                          b.getI64IntegerAttr(micro));
            Value received = fromTransferred(builder, operand.getLoc(),
                                             recv.getResult(), ownType);
            microValues[{operand, micro}] = received;
            if (once)
              receivedOnce[{operand, rank}] = received;
          }
        // `op` cloned for microbatch `micro` of this action.
        auto cloneForMicrobatch = [&](Operation *op,
                                      int64_t micro) -> FailureOr<Operation *> {
          IRMapping mapping;
          for (Value operand : op->getOperands()) {
            if (isLossGradientSeed(op, operand) && numMicro > 1) {
              mapping.map(operand, seedFor(operand));
              continue;
            }
            if (Value mapped = lookup(operand, micro)) {
              mapping.map(operand, mapped);
              continue;
            }
            // A constant (or another op reading nothing of a microbatch)
            // cloned where needed.
            Operation *def = operand.getDefiningOp();
            if (def && def->getNumOperands() == 0) {
              Operation *copy = builder.clone(*def);
              copy->setAttr(MTDialect::getPhaseAttrName(), actionPhase);
              copy->setAttr(MTDialect::getMicrobatchAttrName(),
                            b.getI64IntegerAttr(micro));
              mapping.map(operand, copy->getResult(0));
              continue;
            }
            op->emitOpError() << "reads a value mt-pipeline did not place";
            return failure();
          }
          Operation *copy = builder.clone(*op, mapping);
          // Each scheduled op says which action it belongs to: the runtime's
          // measured trace groups its kernels by them.
          copy->setAttr(MTDialect::getPhaseAttrName(), actionPhase);
          copy->setAttr(MTDialect::getMicrobatchAttrName(),
                        b.getI64IntegerAttr(micro));
          if (numMicro > 1 &&
              isa<DropoutOp, AttentionOp, AttentionGradOp>(copy))
            copy->setAttr(MTDialect::getMicrobatchesAttrName(),
                          b.getI64IntegerAttr(numMicro));
          return copy;
        };
        for (Operation *op : ops) {
          Operation *copy = onceCopies.lookup(op);
          if (!copy) {
            FailureOr<Operation *> cloned = cloneForMicrobatch(op, micro);
            if (failed(cloned))
              return failure();
            copy = *cloned;
            if (oncePerStep.contains(op))
              onceCopies[op] = copy;
          }
          for (auto [result, copied] :
               llvm::zip_equal(op->getResults(), copy->getResults())) {
            microValues[{result, micro}] = copied;
            // Sent to the other ranks that read it.
            for (int64_t reader : readersOf(result)) {
              if (rankOf(reader) == rank)
                continue;
              // Once per step for a value the same for every microbatch
              // that the reader keeps.
              bool once = transferredOnce(result, reader);
              if (once && !sentOnce.insert({result, rankOf(reader)}).second)
                continue;
              Value sent = asTransferable(builder, op->getLoc(), copied);
              auto send = shard::SendOp::create(
                  builder, op->getLoc(), sent.getType(), kGridName,
                  ArrayRef<int16_t>{kPipelineAxis}, sent,
                  ArrayRef<int64_t>{rankOf(reader)}, ValueRange());
              send->setAttr(
                  MTDialect::getTransferTagAttrName(),
                  b.getI64IntegerAttr(tagOf(result, once ? kPerStep : micro,
                                            once ? rankOf(reader) : reader)));
              send->setAttr(MTDialect::getMicrobatchAttrName(),
                            b.getI64IntegerAttr(micro));
              ++numTransfers;
            }
            // Accumulated over the microbatches.
            if (accumulated.contains(result)) {
              Value &acc = accumulators[result];
              if (acc) {
                auto add = AddOp::create(builder, op->getLoc(), acc, copied);
                add->setAttr(MTDialect::getPhaseAttrName(), actionPhase);
                add->setAttr(MTDialect::getMicrobatchAttrName(),
                             b.getI64IntegerAttr(micro));
                acc = add.getResult();
              } else {
                acc = copied;
              }
            }
          }
        }
      }

      // Everything from here on runs once, after the flush: the optimizer
      // phase (stamped below, for the measured trace).
      Operation *lastScheduled = entry->empty() ? nullptr : &entry->back();

      // After the flush: the mean loss, and the accumulated values of other
      // ranks this rank's optimizer reads (sent first: sends never wait).
      DenseMap<Value, Value> flushValues;
      for (Value value : accumulated) {
        Value acc = accumulators.lookup(value);
        if (!acc)
          continue;
        // A forward value (the loss, whichever op makes it: the
        // cross-entropy, or its sum with the load-balancing loss) is the
        // mean over the microbatches; gradients, whose seed was divided by
        // their number, the sum.
        if (phaseOf.lookup(value.getDefiningOp()) == Phase::Forward &&
            numMicro > 1)
          acc = ScaleOp::create(builder, value.getLoc(), acc,
                                b.getF64FloatAttr(1.0 / double(numMicro)));
        flushValues[value] = acc;
      }
      for (Value value : accumulated) {
        int64_t home = rankOf(stageOf.lookup(value.getDefiningOp()));
        if (home != rank)
          continue;
        for (int64_t other = 0; other < pp; ++other) {
          if (other == rank || !slices[other].needed.contains(value))
            continue;
          Value sent =
              asTransferable(builder, value.getLoc(), flushValues[value]);
          auto send = shard::SendOp::create(
              builder, value.getLoc(), sent.getType(), kGridName,
              ArrayRef<int16_t>{kPipelineAxis}, sent, ArrayRef<int64_t>{other},
              ValueRange());
          send->setAttr(MTDialect::getTransferTagAttrName(),
                        b.getI64IntegerAttr(tagOf(value, -1, other)));
          ++numTransfers;
        }
      }
      for (Value value : accumulated) {
        int64_t home = rankOf(stageOf.lookup(value.getDefiningOp()));
        if (home == rank || !needed.contains(value))
          continue;
        auto ownType = cast<RankedTensorType>(value.getType());
        RankedTensorType type = transferType(ownType);
        Value empty = tensor::EmptyOp::create(
            builder, value.getLoc(), type.getShape(), type.getElementType());
        auto recv =
            shard::RecvOp::create(builder, value.getLoc(), type, kGridName,
                                  ArrayRef<int16_t>{kPipelineAxis}, empty,
                                  b.getDenseI64ArrayAttr({home}), ValueRange());
        recv->setAttr(MTDialect::getTransferTagAttrName(),
                      b.getI64IntegerAttr(tagOf(value, -1, rank)));
        flushValues[value] =
            fromTransferred(builder, value.getLoc(), recv.getResult(), ownType);
      }

      // The optimizer ops, in the step's order.
      for (Operation &op : body.without_terminator()) {
        if (!flushOps.contains(&op))
          continue;
        IRMapping mapping;
        SmallVector<Value> normOperands;
        for (Value operand : op.getOperands()) {
          if (isNormOp(&op) && normRankOf(operand) != rank)
            continue;
          Value mapped;
          if (auto arg = dyn_cast<BlockArgument>(operand))
            mapped = argFor(arg, 0);
          else if (Value flushed = flushValues.lookup(operand))
            mapped = flushed;
          else if (operand.getDefiningOp() &&
                   operand.getDefiningOp()->getNumOperands() == 0)
            mapped = builder.clone(*operand.getDefiningOp())->getResult(0);
          if (!mapped)
            return op.emitOpError() << "reads a value that pipeline rank "
                                    << rank << " does not have after the flush";
          mapping.map(operand, mapped);
          normOperands.push_back(mapped);
        }
        if (isNormOp(&op)) {
          // This rank's share of the sum of squares, summed over the
          // pipeline ranks.
          Value local;
          if (normOperands.empty()) {
            auto scalar = RankedTensorType::get({}, b.getF32Type());
            local = arith::ConstantOp::create(
                builder, op.getLoc(), scalar,
                DenseElementsAttr::get(scalar, b.getF32FloatAttr(0.0f)));
          } else {
            local = SumSquaresOp::create(builder, op.getLoc(), normOperands);
          }
          Value total = shard::AllReduceOp::create(
              builder, op.getLoc(), local.getType(), kGridName,
              ArrayRef<int16_t>{kPipelineAxis}, local,
              shard::ReductionKind::Sum);
          if (isa<GlobalNormOp>(op))
            total = SqrtOp::create(builder, op.getLoc(), total);
          flushValues[op.getResult(0)] = total;
          continue;
        }
        Operation *copy = builder.clone(op, mapping);
        for (auto [result, copied] :
             llvm::zip_equal(op.getResults(), copy->getResults()))
          flushValues[result] = copied;
      }
      StringAttr optimizerPhase = b.getStringAttr("optimizer");
      for (Operation &op : llvm::make_range(
               lastScheduled ? std::next(lastScheduled->getIterator())
                             : entry->begin(),
               entry->end()))
        if (!isa<arith::ConstantOp, tensor::EmptyOp, shard::SendOp,
                 shard::RecvOp>(op))
          op.setAttr(MTDialect::getPhaseAttrName(), optimizerPhase);

      // Results.
      SmallVector<Value> results;
      SmallVector<DictionaryAttr> resultAttrs;
      for (unsigned index : resultsOf[rank]) {
        Value value = ret.getOperand(index);
        Value mapped;
        if (auto arg = dyn_cast<BlockArgument>(value))
          mapped = argFor(arg, 0);
        else
          mapped = flushValues.lookup(value);
        if (!mapped)
          return step.emitOpError()
                 << "result #" << index << " is not computed on pipeline rank "
                 << rank;
        results.push_back(mapped);
        resultAttrs.push_back(step.getResultAttrDict(index));
      }
      func::ReturnOp::create(builder, ret.getLoc(), results);
      function.setFunctionType(FunctionType::get(
          context, entry->getArgumentTypes(), ValueRange(results).getTypes()));
      function.setAllArgAttrs(argAttrs);
      function.setAllResultAttrs(resultAttrs);
    }
    return success();
  }

  /// Moves receives up so that each rank takes a peer's transfers in the
  /// order the peer sends them: NCCL matches a direction's sends and
  /// receives in order. A stage sends a value when it computes it, but
  /// its reader receives it when an action first needs it, which can come
  /// later than a transfer sent after it (interleaved: the tied
  /// embedding's copy, cast by the first chunk and read by the head on
  /// another chunk of the next rank). A receive reads nothing of its
  /// rank, so it can move up; it moves to where the rank took a transfer
  /// the peer sent after it, and waited there anyway, so no wait is
  /// added that could deadlock.
  void orderReceivesAsSent() {
    for (auto [rank, function] : llvm::enumerate(stageFunctions)) {
      // By peer: the receives in program order, and their tags in the
      // peer's send order.
      std::map<int64_t, SmallVector<shard::RecvOp>> receives;
      function.walk([&](shard::RecvOp recv) {
        if (std::optional<ArrayRef<int64_t>> source = recv.getSource();
            source && source->size() == 1)
          receives[source->front()].push_back(recv);
      });
      for (auto &[peer, recvs] : receives) {
        SmallVector<int64_t> sentOrder;
        stageFunctions[peer].walk([&](shard::SendOp send) {
          if (send.getDestination().size() == 1 &&
              send.getDestination().front() == int64_t(rank))
            sentOrder.push_back(tagOfTransfer(send));
        });
        for (size_t position = 0, next = 0; next < sentOrder.size(); ++next) {
          auto it = llvm::find_if(recvs, [&](shard::RecvOp recv) {
            return tagOfTransfer(recv) == sentOrder[next];
          });
          if (it == recvs.end())
            continue;
          size_t at = size_t(it - recvs.begin());
          if (at != position) {
            // Each receive writes a tensor.empty of its own, made just
            // before it (emitStages), which moves with it.
            shard::RecvOp moved = *it;
            Operation *anchor = recvs[position]->getOperand(0).getDefiningOp();
            moved->getOperand(0).getDefiningOp()->moveBefore(anchor);
            moved->moveBefore(anchor);
            recvs.erase(recvs.begin() + at);
            recvs.insert(recvs.begin() + position, moved);
          }
          ++position;
        }
      }
    }
  }

  static int64_t tagOfTransfer(Operation *op) {
    return op->getAttrOfType<IntegerAttr>(MTDialect::getTransferTagAttrName())
        .getInt();
  }

  int64_t virtualStageOf(int64_t rank, int64_t chunk) const {
    return virtualStage(rank, chunk, pp);
  }
};

} // namespace
