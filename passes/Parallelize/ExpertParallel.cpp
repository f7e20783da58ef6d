//===- ExpertParallel.cpp - Experts split over data-parallel ranks --------===//
//
// Megatron-LM's expert parallelism with the all-to-all token dispatcher, on
// a training step (after mt-autodiff, on one data-parallel rank's share of
// the batch). The rows of a mixture of experts live in one of two spaces:
//
//   - the rank's own rows, `[rows, features]`, grouped by global expert as
//     the layer's `mt.moe_route` offsets say (what every op reads today);
//   - its experts' rows from every rank, `[ranks * rows, features]`, grouped
//     by local expert (what `mt.expert_dispatch` returns); `[rows,
//     features]` when the routing has a capacity (each rank sends each
//     expert at most its capacity: `capacity_bounded`).
//
// Every `mt.grouped_matmul` and its weight gradient move to the second
// space, reading only the rank's experts; so does every elementwise op
// (the SwiGLU between the projections, its gradient, the sum of two input
// gradients) all of whose row operands are already there, since a row's
// computation does not care which rank does it. A value of the first space
// such an op reads is dispatched (once); a value of the second space that
// anything else reads (`mt.moe_unpermute`, `mt.moe_weights_grad`) is
// combined back (once). Forward and backward are treated alike: the
// backward's gradient rows are dispatched and combined as the forward's
// activations are, which is what Megatron-LM's dispatcher does in its
// autograd functions.
//
//===----------------------------------------------------------------------===//

#include "passes/Parallelize/ExpertParallel.h"

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MT/IR/MTInterfaces.h"
#include "dialects/MT/IR/MTOps.h"
#include "megatron/Analysis/ShapeInference.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/BitVector.h"
#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::mt;

namespace {

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// The parameter argument `value` reads, through mixed precision's casts;
/// null for anything else.
BlockArgument parameterOf(func::FuncOp function, Value value) {
  while (auto castOp = value.getDefiningOp<CastOp>())
    value = castOp.getInput();
  auto arg = dyn_cast<BlockArgument>(value);
  if (!arg || arg.getOwner() != &function.getBody().front() ||
      !function.getArgAttr(arg.getArgNumber(), MTDialect::getParamAttrName()))
    return BlockArgument();
  return arg;
}

void copyDiscardableAttrs(Operation *from, Operation *to) {
  for (NamedAttribute attr : from->getDiscardableAttrs())
    to->setAttr(attr.getName(), attr.getValue());
}

/// Whether the rows grouped by `offsets` (an mt.moe_route's, which run()
/// checks first) are a capacity's: then no rank sends an expert more than
/// its capacity, and a rank receives at most as many rows as it holds.
bool capacityBounded(Value offsets) {
  return bool(offsets.getDefiningOp<MoeRouteOp>().getCapacityFactor());
}

struct ExpertDistribution {
  ExpertDistribution(func::FuncOp function, int64_t ranks, int16_t gridAxis,
                     StringRef grid)
      : function(function), ranks(ranks), gridAxis(gridAxis), grid(grid) {}

  func::FuncOp function;
  int64_t ranks;
  int16_t gridAxis;
  StringRef grid;

  /// The experts' rows of the second space, by the value of the first
  /// space they stand for, with the layer's offsets (the dispatch's).
  struct Local {
    Value there;
    Value offsets;
  };
  llvm::MapVector<Value, Local> local;
  /// Per layer's offsets: the local offsets and counts of its first
  /// dispatch (equal in every dispatch of the layer).
  struct Routing {
    Value localOffsets;
    Value counts;
  };
  DenseMap<Value, Routing> routing;
  /// The ops moved to the second space, erased once nothing reads them.
  llvm::SetVector<Operation *> moved;

  int64_t localExperts(int64_t experts) const { return experts / ranks; }

  /// `value` (first space, grouped by `offsets`) in the second space:
  /// dispatched before `before` unless already there.
  Value localOf(Value value, Value offsets, Operation *before) {
    if (auto it = local.find(value); it != local.end())
      return it->second.there;
    OpBuilder b(before);
    RankedTensorType rows = typeOf(value);
    int64_t experts = typeOf(offsets).getDimSize(0) - 1;
    int64_t perRank = localExperts(experts);
    auto i32 = b.getI32Type();
    bool bounded = capacityBounded(offsets);
    int64_t received =
        bounded ? rows.getDimSize(0) : ranks * rows.getDimSize(0);
    auto dispatch = ExpertDispatchOp::create(
        b, value.getLoc(),
        RankedTensorType::get({received, rows.getDimSize(1)},
                              rows.getElementType()),
        RankedTensorType::get({perRank + 1}, i32),
        RankedTensorType::get({ranks, perRank}, i32), value, offsets,
        FlatSymbolRefAttr::get(b.getContext(), grid),
        b.getI64IntegerAttr(gridAxis), bounded ? b.getUnitAttr() : UnitAttr());
    copyDiscardableAttrs(before, dispatch);
    routing.try_emplace(
        offsets, Routing{dispatch.getLocalOffsets(), dispatch.getCounts()});
    local[value] = {dispatch.getReceived(), offsets};
    return dispatch.getReceived();
  }

  void record(Value global, Value there, Value offsets) {
    local[global] = {there, offsets};
    moved.insert(global.getDefiningOp());
  }

  void moveGroupedMatmul(GroupedMatmulOp op) {
    Value offsets = op.getOffsets();
    Value input = localOf(op.getInput(), offsets, op);
    int64_t perRank = localExperts(op.getWeights().size());
    OpBuilder b(op);
    auto moved = GroupedMatmulOp::create(
        b, op.getLoc(),
        RankedTensorType::get(
            {typeOf(input).getDimSize(0), op.getType().getDimSize(1)},
            op.getType().getElementType()),
        input, routing.at(offsets).localOffsets,
        op.getWeights().take_front(perRank), op.getTransposeB());
    copyDiscardableAttrs(op, moved);
    record(op.getResult(), moved.getResult(), offsets);
  }

  /// The weight gradients of the rank's experts replace the first E/ranks
  /// results; the others are left to die with their updates.
  void moveWeightGrad(GroupedMatmulWeightGradOp op) {
    Value offsets = op.getOffsets();
    Value dy = localOf(op.getGradOutput(), offsets, op);
    Value input = localOf(op.getInput(), offsets, op);
    int64_t perRank = localExperts(op.getGradWeights().size());
    OpBuilder b(op);
    auto moved = GroupedMatmulWeightGradOp::create(
        b, op.getLoc(),
        TypeRange(op.getGradWeights().getTypes()).take_front(perRank), dy,
        input, routing.at(offsets).localOffsets, op.getTransposeB());
    copyDiscardableAttrs(op, moved);
    for (int64_t e = 0; e < perRank; ++e)
      op.getGradWeights()[e].replaceAllUsesWith(moved.getGradWeights()[e]);
    this->moved.insert(op);
  }

  /// An elementwise op reading rows of the second space joins it when its
  /// other operands can: rows of the same layer (dispatched if need be).
  LogicalResult moveElementwise(Operation *op) {
    Value offsets;
    for (Value operand : op->getOperands())
      if (auto it = local.find(operand); it != local.end())
        offsets = it->second.offsets;
    if (!offsets)
      return success();
    // Dropout draws its mask by element position, which would change with
    // the rows' places.
    if (isa<DropoutOp>(op))
      return op->emitError()
             << "mt-parallelize: ep needs the experts' rows free of dropout, "
                "whose mask follows each row's place";
    RankedTensorType rows = typeOf(op->getResult(0));
    IRMapping mapping;
    for (Value operand : op->getOperands()) {
      if (typeOf(operand).getShape() != rows.getShape())
        return op->emitError()
               << "mt-parallelize: ep: an elementwise op on the experts' rows "
                  "reads "
               << operand.getType() << " beside rows " << rows;
      mapping.map(operand, localOf(operand, offsets, op));
    }
    OpBuilder b(op);
    Operation *clone = b.clone(*op, mapping);
    FailureOr<SmallVector<Type>> types = inferResultTypes(clone);
    if (failed(types))
      return failure();
    for (auto [result, type] : llvm::zip_equal(clone->getResults(), *types))
      result.setType(type);
    for (auto [old, there] :
         llvm::zip_equal(op->getResults(), clone->getResults()))
      record(old, there, offsets);
    return success();
  }

  /// Every read of a moved value by an op that stays in the first space
  /// reads its combination instead, made right after the value.
  void combineForOthers() {
    for (auto &[global, entry] : local) {
      Value there = entry.there;
      Operation *definer = global.getDefiningOp();
      if (!definer || !moved.contains(definer))
        continue; // A dispatched value of the first space.
      SmallVector<OpOperand *> others;
      for (OpOperand &use : global.getUses())
        if (!moved.contains(use.getOwner()))
          others.push_back(&use);
      if (others.empty())
        continue;
      Value offsets = entry.offsets;
      OpBuilder b(there.getContext());
      b.setInsertionPointAfterValue(there);
      auto combine = ExpertCombineOp::create(
          b, global.getLoc(), global.getType(), there,
          routing.at(offsets).counts, offsets,
          FlatSymbolRefAttr::get(b.getContext(), grid),
          b.getI64IntegerAttr(gridAxis),
          capacityBounded(offsets) ? b.getUnitAttr() : UnitAttr());
      copyDiscardableAttrs(definer, combine);
      for (OpOperand *use : others)
        use->set(combine.getResult());
    }
  }

  LogicalResult run(llvm::DenseSet<Operation *> &localUpdates);
};

LogicalResult
ExpertDistribution::run(llvm::DenseSet<Operation *> &localUpdates) {
  Block &body = function.getBody().front();
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  MLIRContext *context = function.getContext();

  // Which expert each parameter is: rank `coordinate`'s expert `slot`
  // stands in the argument of coordinate 0's expert `slot`.
  struct Expert {
    BlockArgument kept;
    int64_t coordinate;
  };
  DenseMap<BlockArgument, Expert> experts;
  bool any = false;
  for (Operation &op : body) {
    auto grouped = dyn_cast<GroupedMatmulOp>(&op);
    if (isa<GroupedMatmulWeightGradOp>(&op))
      any = true;
    if (!grouped)
      continue;
    any = true;
    // The route says whether its rows are a capacity's, which sizes the
    // rows a rank receives.
    if (!grouped.getOffsets().getDefiningOp<MoeRouteOp>())
      return grouped.emitError()
             << "mt-parallelize: ep needs the experts' row offsets of an "
                "mt.moe_route (whose capacity, or none, sizes the rows a "
                "rank receives)";
    int64_t count = grouped.getWeights().size();
    if (count % ranks != 0)
      return grouped.emitError()
             << "mt-parallelize: ep=" << ranks << " does not divide the "
             << count << " experts of this layer";
    int64_t perRank = localExperts(count);
    for (auto [e, weight] : llvm::enumerate(grouped.getWeights())) {
      BlockArgument arg = parameterOf(function, weight);
      if (!arg)
        return grouped.emitError()
               << "mt-parallelize: ep needs each expert's weight to be a "
                  "parameter (an argument with '"
               << MTDialect::getParamAttrName() << "'), but weight #" << e
               << " is not";
      BlockArgument kept =
          parameterOf(function, grouped.getWeights()[int64_t(e) % perRank]);
      auto [it, inserted] =
          experts.try_emplace(arg, Expert{kept, int64_t(e) / perRank});
      if (!inserted && (it->second.kept != kept ||
                        it->second.coordinate != int64_t(e) / perRank))
        return grouped.emitError()
               << "mt-parallelize: ep: parameter '"
               << function.getArgAttr(arg.getArgNumber(),
                                      MTDialect::getParamAttrName())
               << "' is a different expert in two grouped matmuls";
    }
  }
  if (!any)
    return function.emitOpError()
           << "mt-parallelize: ep=" << ranks
           << " splits the experts of a mixture of experts, but the step has "
              "none (no mt.grouped_matmul)";

  // The updates: the kept experts' name every rank's expert; the others go.
  DenseMap<BlockArgument, SmallVector<Attribute>> namesOf;
  for (auto [arg, expert] : experts) {
    auto &names = namesOf[expert.kept];
    if (names.size() <= size_t(expert.coordinate))
      names.resize(expert.coordinate + 1);
    names[expert.coordinate] =
        function.getArgAttr(arg.getArgNumber(), MTDialect::getParamAttrName());
  }
  SmallVector<AdamWOp> removedUpdates;
  for (AdamWOp update : body.getOps<AdamWOp>()) {
    auto param = dyn_cast<BlockArgument>(update.getParam());
    auto it = param ? experts.find(param) : experts.end();
    if (it == experts.end())
      continue;
    if (it->second.kept != param) {
      removedUpdates.push_back(update);
      continue;
    }
    localUpdates.insert(update);
    auto names = ArrayAttr::get(context, namesOf.at(param));
    for (Value state :
         {update.getParam(), update.getExpAvg(), update.getExpAvgSq()}) {
      auto arg = dyn_cast<BlockArgument>(state);
      if (!arg)
        return update.emitOpError()
               << "mt-parallelize: ep needs an expert's parameter and moments "
                  "to be function arguments";
      function.setArgAttr(arg.getArgNumber(),
                          MTDialect::getExpertNamesAttrName(), names);
      function.setArgAttr(
          arg.getArgNumber(), MTDialect::getExpertAxisAttrName(),
          IntegerAttr::get(IntegerType::get(context, 64), gridAxis));
    }
  }

  // The rows move, in program order (a value's space is known before any
  // reader's).
  for (Operation *op : llvm::to_vector(llvm::make_pointer_range(body))) {
    if (auto grouped = dyn_cast<GroupedMatmulOp>(op)) {
      moveGroupedMatmul(grouped);
    } else if (auto weightGrad = dyn_cast<GroupedMatmulWeightGradOp>(op)) {
      moveWeightGrad(weightGrad);
    } else if (isa<ElementwiseOpInterface>(op)) {
      if (failed(moveElementwise(op)))
        return failure();
    }
  }
  combineForOthers();

  // The other ranks' experts: their updates, results and arguments.
  llvm::BitVector deadResults(function.getNumResults());
  llvm::BitVector deadArgs(function.getNumArguments());
  DenseSet<Value> deadGradients;
  for (AdamWOp update : removedUpdates) {
    for (OpOperand &use : update->getUses()) {
      if (use.getOwner() != ret)
        return update.emitOpError()
               << "mt-parallelize expects updated parameters to be returned "
                  "only";
      deadResults.set(use.getOperandNumber());
    }
    for (Value state :
         {update.getParam(), update.getExpAvg(), update.getExpAvgSq()})
      if (auto arg = dyn_cast<BlockArgument>(state))
        deadArgs.set(arg.getArgNumber());
    deadGradients.insert(update.getGrad());
  }
  ret->eraseOperands(deadResults);
  for (AdamWOp update : removedUpdates)
    update.erase();
  // The norm reads only the rank's experts' gradients (parallelizeData sums
  // their squares over the ranks).
  for (Operation &op : body)
    if (isa<GlobalNormOp, SumSquaresOp>(op)) {
      SmallVector<Value> kept;
      for (Value operand : op.getOperands())
        if (!deadGradients.contains(operand))
          kept.push_back(operand);
      op.setOperands(kept);
    }
  // Whatever only fed the removed experts and the first space's moved ops
  // dies: erased from the last op up, until nothing more is unread.
  for (bool erased = true; erased;) {
    erased = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(body))) {
      if (&op == ret || !op.use_empty() || !isMemoryEffectFree(&op))
        continue;
      bool readsDead = moved.contains(&op) ||
                       llvm::any_of(op.getOperands(), [&](Value operand) {
                         auto arg = dyn_cast<BlockArgument>(operand);
                         return arg && deadArgs.test(arg.getArgNumber());
                       });
      if (!readsDead && !isa<CastOp>(op))
        continue;
      moved.remove(&op);
      op.erase();
      erased = true;
    }
  }
  for (unsigned index : deadArgs.set_bits()) {
    BlockArgument arg = body.getArgument(index);
    if (!arg.use_empty())
      return (*arg.getUsers().begin())->emitError()
             << "mt-parallelize: ep: expert parameter '"
             << function.getArgAttr(index, MTDialect::getParamAttrName())
             << "' of another rank is read here, outside the experts' "
                "grouped matmuls";
  }
  if (failed(function.eraseArguments(deadArgs)) ||
      failed(function.eraseResults(deadResults)))
    return function.emitOpError() << "mt-parallelize: ep could not remove "
                                     "the other ranks' experts";
  return success();
}

} // namespace

LogicalResult
mlir::mt::distributeExperts(func::FuncOp function, int64_t ranks,
                            int16_t gridAxis, StringRef grid,
                            llvm::DenseSet<Operation *> &localUpdates) {
  ExpertDistribution distribution(function, ranks, gridAxis, grid);
  return distribution.run(localUpdates);
}
