//===- TensorParallel.cpp - Megatron tensor parallelism as shardings ------===//
//
// States Megatron-LM's tensor parallelism (Shoeybi et al. 2019) as upstream
// `shard` shardings on the `tp` axis of the device grid, for upstream
// `sharding-propagation` and `shard-partition` (with the `mt` ops' sharding
// models, dialects/MT/Transforms) to turn into the program of every rank:
//
//   - parameters, pinned by the role their `mt.parallel` states:
//     column-parallel ones split along their stated dimension (within each
//     of their `chunks`, so that a fused [q | k | v] projection gives each
//     rank its heads of each), row-parallel ones along theirs, vocab-parallel
//     ones by vocabulary rows, replicated ones whole; a parameter stating no
//     role is an error. The importer states Megatron's roles. The optimizer
//     state and the gradient of each parameter
//     are pinned alike, and so is every use of a parameter (and of its
//     16-bit casts under mixed precision), so that
//     propagation never chooses to gather a weight to split an activation
//     (DESIGN.md: propagation is correct but not cost-aware);
//   - with sequence parallelism (Korthikanti et al. 2022), the activations
//     between tensor-parallel regions (dropouts, residual adds, layer norms
//     and their gradients) are pinned split along the sequence.
//
// The partition then inserts exactly Megatron's collectives: the
// row-parallel projections and the vocab-parallel embedding sum over `tp`
// (all-reduce) in the forward pass, the column-parallel projections' input
// gradients in the backward pass; with sequence parallelism an all-gather
// before each tensor-parallel region and, since an all-reduce followed by
// the rank's slice is a reduce-scatter, reduce-scatters after them. Where
// the partition reduces more than Megatron-LM would (each term of a sum, the
// k rows of a token routed to experts), the sum is formed first
// (sumBeforeReducing).
//
// A mixture of experts splits each expert as a dense MLP (Megatron-LM's
// expert tensor parallelism: its projections' roles are column and row) and
// runs the routing whole on every rank.
//
// A vocabulary not divisible by `tp` has been padded before
// (PadVocabulary.cpp): its tables split into equal row ranges.
//
//===----------------------------------------------------------------------===//

#include "passes/Parallelize/TensorParallel.h"

#include "dialects/MT/IR/MTOps.h"
#include "megatron/Utils/FunctionAttributeEditor.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;
using namespace mlir::mt;

namespace {

/// How a parameter is split: `dim` and the number of equal `chunks` of that
/// dimension each rank takes a piece of (a fused [q | k | v] projection is
/// three column ranges).
struct ParamSplit {
  int64_t dim;
  int64_t chunks;
};

/// For each result of the step, the argument (parameter or optimizer
/// state) it replaces: the first with the same `mt.param` and `mt.state`.
/// Found with one map (a search per result was quadratic in the
/// parameters: a mixture of 1,024 experts has 9,000).
SmallVector<std::optional<unsigned>>
argsReplacedByResults(func::FuncOp function) {
  DenseMap<std::pair<Attribute, Attribute>, unsigned> argOf;
  for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
    if (Attribute param = function.getArgAttr(i, MTDialect::getParamAttrName()))
      argOf.try_emplace(
          {param, function.getArgAttr(i, MTDialect::getStateAttrName())}, i);
  SmallVector<std::optional<unsigned>> args(function.getNumResults());
  for (unsigned index = 0, e = function.getNumResults(); index < e; ++index) {
    Attribute param =
        function.getResultAttr(index, MTDialect::getParamAttrName());
    auto it =
        param ? argOf.find({param, function.getResultAttr(
                                       index, MTDialect::getStateAttrName())})
              : argOf.end();
    if (it != argOf.end())
      args[index] = it->second;
  }
  return args;
}

class Annotator {
public:
  Annotator(func::FuncOp function, int64_t tp, bool sequenceParallel,
            int16_t axis, StringRef grid)
      : function(function), tp(tp), sequenceParallel(sequenceParallel),
        axis(axis), grid(grid),
        builder(OpBuilder::atBlockBegin(&function.getBody().front())) {}

  LogicalResult run() {
    if (failed(readRoles()) || failed(pinArguments()) || failed(pinConstants()))
      return failure();
    pinGradients();
    pinUpdateScalars();
    if (sequenceParallel)
      pinSequenceSplits();
    pinResults();
    return success();
  }

private:
  Block &body() { return function.getBody().front(); }

  /// The sharding splitting dimension `dim` over the tp axis, or the
  /// replicated one; made once at the function's entry.
  Value sharding(std::optional<int64_t> dim) {
    int64_t key = dim ? *dim : -1;
    if (Value existing = shardings.lookup(key))
      return existing;
    MLIRContext *ctx = function.getContext();
    SmallVector<shard::GridAxesAttr> axes;
    if (dim) {
      axes.assign(*dim + 1, shard::GridAxesAttr::get(ctx, {}));
      axes[*dim] = shard::GridAxesAttr::get(ctx, {axis});
    }
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&body());
    Value value = shard::ShardingOp::create(
        builder, function.getLoc(), FlatSymbolRefAttr::get(ctx, grid), axes);
    shardings[key] = value;
    return value;
  }

  /// Pins the sharding of `value` where it is defined (every use sees it).
  Value pinDefinition(Value value, std::optional<int64_t> dim) {
    Value sharding = this->sharding(dim);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointAfterValue(value);
    if (isa<BlockArgument>(value))
      builder.setInsertionPointAfterValue(sharding);
    auto pinned =
        shard::ShardOp::create(builder, value.getLoc(), value, sharding,
                               /*annotate_for_users=*/false);
    value.replaceAllUsesExcept(pinned, pinned);
    return pinned;
  }

  /// Pins the sharding `use`'s op reads its operand with.
  void pinUse(OpOperand &use, std::optional<int64_t> dim) {
    Value sharding = this->sharding(dim);
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPoint(use.getOwner());
    use.set(shard::ShardOp::create(builder, use.get().getLoc(), use.get(),
                                   sharding, /*annotate_for_users=*/true));
  }

  /// Every parameter's role, as its `mt.parallel` states it; a parameter
  /// stating none is an error naming it (tensor parallelism cannot guess).
  LogicalResult readRoles() {
    for (unsigned index = 0, e = function.getNumArguments(); index < e;
         ++index) {
      auto name = function.getArgAttrOfType<StringAttr>(
          index, MTDialect::getParamAttrName());
      if (!name || function.getArgAttr(index, MTDialect::getStateAttrName()))
        continue;
      std::optional<ParallelRole> role = ParallelRole::fromAttr(
          function.getArgAttr(index, MTDialect::getParallelAttrName()));
      if (!role)
        return function.emitOpError()
               << "parameter '" << name.getValue()
               << "' states no tensor-parallel role: tp " << tp << " needs '"
               << MTDialect::getParallelAttrName()
               << "' (column, row, vocab or replicated) on every parameter";
      roles[name] = *role;
    }
    return success();
  }

  /// The role of the parameter that argument `index` is, or holds the
  /// optimizer state of.
  std::optional<ParallelRole> roleOfArg(unsigned index) {
    auto name = function.getArgAttrOfType<StringAttr>(
        index, MTDialect::getParamAttrName());
    auto it = name ? roles.find(name) : roles.end();
    return it == roles.end() ? std::nullopt
                             : std::optional<ParallelRole>(it->second);
  }

  std::optional<ParamSplit> splitOfArg(unsigned index) {
    std::optional<ParallelRole> role = roleOfArg(index);
    if (!role || !role->isSplit())
      return std::nullopt;
    return ParamSplit{role->dim, role->chunks};
  }

  /// Parameters, their optimizer state and the data inputs, at their
  /// definition and (parameters and state) at every use; split ones say
  /// how, for the runtime to load and save their slices.
  LogicalResult pinArguments() {
    Builder b(function.getContext());
    FunctionAttributeEditor attrs(function);
    for (BlockArgument arg : body().getArguments()) {
      auto type = cast<RankedTensorType>(arg.getType());
      if (type.getRank() == 0)
        continue;
      unsigned index = arg.getArgNumber();
      std::optional<ParamSplit> split = splitOfArg(index);
      std::optional<int64_t> dim;
      if (split) {
        dim = split->dim;
        int64_t size = type.getDimSize(split->dim);
        if (size % (split->chunks * tp) != 0)
          return function.emitOpError()
                 << "parameter '"
                 << function
                        .getArgAttrOfType<StringAttr>(
                            index, MTDialect::getParamAttrName())
                        .getValue()
                 << "' has " << size << " entries in dimension " << split->dim
                 << ", not divisible into " << split->chunks << " x tp " << tp
                 << " pieces";
        attrs.setArg(index, MTDialect::getFullShapeAttrName(),
                     b.getDenseI64ArrayAttr(type.getShape()));
        attrs.setArg(index, MTDialect::getShardAxisAttrName(),
                     b.getI64IntegerAttr(axis));
        attrs.setArg(index, MTDialect::getShardDimAttrName(),
                     b.getI64IntegerAttr(split->dim));
        attrs.setArg(index, MTDialect::getShardChunksAttrName(),
                     b.getI64IntegerAttr(split->chunks));
      }
      // Mixed precision reads a parameter through its 16-bit casts
      // (mt-mixed-precision): they are pinned as the parameter is.
      SmallVector<CastOp> casts;
      for (Operation *user : arg.getUsers())
        if (auto castOp = dyn_cast<CastOp>(user))
          casts.push_back(castOp);
      Value pinned = pinDefinition(arg, dim);
      if (!function.getArgAttr(index, MTDialect::getParamAttrName()))
        continue;
      for (OpOperand &use : llvm::make_early_inc_range(pinned.getUses()))
        pinUse(use, dim);
      for (CastOp castOp : casts) {
        Value copy = pinDefinition(castOp.getResult(), dim);
        for (OpOperand &use : llvm::make_early_inc_range(copy.getUses()))
          pinUse(use, dim);
      }
    }
    return success();
  }

  /// The scalars every update reads (the step, learning rate and betas,
  /// inputs or constants, and the clipping scale the step computes) are
  /// replicated at every use. Propagation would annotate each use itself,
  /// rewriting all of the scalar's uses, one update per parameter, once per
  /// use: quadratic in the parameters (112 s for Qwen3-30B-A3B's 18,000 at
  /// tp=2).
  void pinUpdateScalars() {
    llvm::SetVector<Value> scalars;
    for (AdamWOp update : body().getOps<AdamWOp>())
      for (Value operand : update->getOperands())
        if (cast<RankedTensorType>(operand.getType()).getRank() == 0)
          scalars.insert(operand);
    for (Value scalar : scalars) {
      Value pinned = pinDefinition(scalar, std::nullopt);
      for (OpOperand &use : llvm::make_early_inc_range(pinned.getUses()))
        pinUse(use, std::nullopt);
    }
  }

  std::optional<int64_t> dimOf(Value param) {
    auto arg = dyn_cast<BlockArgument>(param);
    if (!arg)
      return std::nullopt;
    std::optional<ParamSplit> split = splitOfArg(arg.getArgNumber());
    return split ? std::optional<int64_t>(split->dim) : std::nullopt;
  }

  /// The BlockArgument behind a pinned value.
  static Value unpinned(Value value) {
    while (auto shard = value.getDefiningOp<shard::ShardOp>())
      value = shard.getSrc();
    return value;
  }

  /// Each gradient is split as its parameter, for the optimizer and for
  /// the global norm (whose many operands must not be left to propagation:
  /// it tries every combination of its operands' optional shardings).
  void pinGradients() {
    for (AdamWOp update : llvm::to_vector(body().getOps<AdamWOp>())) {
      std::optional<int64_t> dim = dimOf(unpinned(update.getParam()));
      // A gradient among several results of one op (each expert's weight
      // gradient, a norm's weight gradient) is pinned where it is made too:
      // propagation tries every combination of an op's unannotated results'
      // shardings (64 experts at tp=2 took 24 GB).
      if (Operation *producer = update.getGrad().getDefiningOp();
          producer && producer->getNumResults() > 1)
        pinDefinition(update.getGrad(), dim);
      Value grad = update.getGrad();
      for (OpOperand &use : llvm::make_early_inc_range(grad.getUses()))
        if (isa<AdamWOp, GlobalNormOp>(use.getOwner()))
          pinUse(use, dim);
    }
  }

  /// The shard dialect partitions a tensor constant only from the sharding
  /// of its result, and only a splat (arith's sharding model fails, without
  /// a message, otherwise); propagation gives a constant that feeds a
  /// replicated activation none. So every tensor constant is pinned
  /// replicated: a user that splits it takes its share locally. A constant
  /// that is not a splat is refused: neither the partition nor the runtime
  /// (mt-lower-to-runtime) holds one.
  LogicalResult pinConstants() {
    SmallVector<Value> constants;
    for (auto constant : body().getOps<arith::ConstantOp>()) {
      auto type = dyn_cast<RankedTensorType>(constant.getType());
      if (!type || type.getRank() == 0)
        continue;
      auto value = dyn_cast<DenseElementsAttr>(constant.getValue());
      if (!value || !value.isSplat())
        return constant.emitOpError()
               << "is a tensor constant that is not a splat: mt-parallelize "
                  "cannot partition it over tp "
               << tp
               << " ranks; only splat tensor constants are supported (as in "
                  "mt-lower-to-runtime)";
      constants.push_back(constant.getResult());
    }
    for (Value constant : constants)
      pinDefinition(constant, std::nullopt);
    return success();
  }

  /// Sequence parallelism: the activations between tensor-parallel regions,
  /// [batch, seq, hidden], split along the sequence, forward and backward.
  void pinSequenceSplits() {
    SmallVector<Value> activations;
    for (Operation &op : body().without_terminator()) {
      Value value;
      if (isa<DropoutOp, AddOp, LayerNormOp>(op))
        value = op.getResult(0);
      else if (auto grad = dyn_cast<LayerNormGradOp>(op))
        value = grad.getGradInput();
      if (value && cast<RankedTensorType>(value.getType()).getRank() == 3)
        activations.push_back(value);
    }
    for (Value value : activations)
      pinDefinition(value, 1);
  }

  /// Updated parameters and state are returned split as they came in.
  void pinResults() {
    auto ret = cast<func::ReturnOp>(body().getTerminator());
    SmallVector<std::optional<unsigned>> replaced =
        argsReplacedByResults(function);
    for (OpOperand &operand : ret->getOpOperands()) {
      if (cast<RankedTensorType>(operand.get().getType()).getRank() == 0)
        continue;
      std::optional<unsigned> arg = replaced[operand.getOperandNumber()];
      std::optional<ParamSplit> split = arg ? splitOfArg(*arg) : std::nullopt;
      pinUse(operand,
             split ? std::optional<int64_t>(split->dim) : std::nullopt);
    }
  }

  func::FuncOp function;
  int64_t tp;
  bool sequenceParallel;
  int16_t axis;
  StringRef grid;
  OpBuilder builder;
  DenseMap<int64_t, Value> shardings;
  /// Each parameter's tensor-parallel role, by its `mt.param` name.
  DenseMap<StringAttr, ParallelRole> roles;
};

} // namespace

LogicalResult mlir::mt::annotateTensorParallel(func::FuncOp function,
                                               int64_t tp,
                                               bool sequenceParallel,
                                               int16_t gridAxis,
                                               StringRef grid) {
  return Annotator(function, tp, sequenceParallel, gridAxis, grid).run();
}

/// `value`'s all-reduce (a sum) if it is read by nothing else.
static shard::AllReduceOp soleSum(Value value) {
  auto sum = value.getDefiningOp<shard::AllReduceOp>();
  if (!sum || !sum->hasOneUse() ||
      sum.getReduction() != shard::ReductionKind::Sum)
    return shard::AllReduceOp();
  return sum;
}

/// A term of a sum as the partition leaves it: all-reduced, then (to a
/// sequence-split value, under sp) the rank's slice of that.
struct ReducedTerm {
  shard::AllReduceOp sum;
  shard::AllSliceOp slice;

  static std::optional<ReducedTerm> of(Value value) {
    auto slice = value.getDefiningOp<shard::AllSliceOp>();
    if (slice) {
      if (!slice->hasOneUse())
        return std::nullopt;
      value = slice.getInput();
    }
    shard::AllReduceOp sum = soleSum(value);
    if (!sum || (slice && (slice.getGrid() != sum.getGrid() ||
                           slice.getGridAxes() != sum.getGridAxes())))
      return std::nullopt;
    return ReducedTerm{sum, slice};
  }
  /// Whether the sum of this and `other` is reduced (and sliced) alike.
  bool matches(ReducedTerm other) {
    if (sum == other.sum || sum.getGrid() != other.sum.getGrid() ||
        sum.getGridAxes() != other.sum.getGridAxes() ||
        bool(slice) != bool(other.slice))
      return false;
    return !slice || slice.getSliceAxis() == other.slice.getSliceAxis();
  }
};

/// An all-reduce (a sum) of `value` right after its definition, stated as
/// `like`'s (same grid and axes, same marks).
static Value reduceLike(OpBuilder &b, shard::AllReduceOp like, Value value) {
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfterValue(value);
  auto whole = shard::AllReduceOp::create(b, value.getLoc(), value.getType(),
                                          like.getGrid(), like.getGridAxes(),
                                          value, shard::ReductionKind::Sum);
  whole->setDiscardableAttrs(like->getDiscardableAttrDictionary());
  value.replaceAllUsesExcept(whole, whole);
  return whole;
}

/// The partition completes every partial sum where it is made (MLIR 22
/// shardings have no partial state); two rewrites then reduce less, as
/// Megatron-LM does:
///   - a sum of all-reduced values (or of slices of them, under sp) is the
///     all-reduce (reduce-scatter) of their sum: one collective for the
///     input gradient of separate projections reading one input (q, k and
///     v; gate and up), where Megatron-LM runs one fused GEMM and reduces
///     once;
///   - an all-reduce read only by ops linear in it that shrink it is done
///     after them: the experts' rows, k per token, are combined into their
///     tokens first (mt.moe_unpermute, and the gate weights' gradient that
///     reads the same rows), k times fewer bytes, as Megatron-LM reduces
///     the experts' output after unpermuting it.
static void sumBeforeReducing(Block &body) {
  for (AddOp add : llvm::make_early_inc_range(body.getOps<AddOp>())) {
    std::optional<ReducedTerm> lhs = ReducedTerm::of(add.getLhs());
    std::optional<ReducedTerm> rhs = ReducedTerm::of(add.getRhs());
    if (!lhs || !rhs || !lhs->matches(*rhs))
      continue;
    OpBuilder b(add);
    auto total = AddOp::create(b, add.getLoc(), lhs->sum.getInput(),
                               rhs->sum.getInput());
    total->setDiscardableAttrs(add->getDiscardableAttrDictionary());
    Value result = reduceLike(b, lhs->sum, total.getResult());
    if (lhs->slice) {
      b.setInsertionPointAfterValue(result);
      IRMapping mapping;
      mapping.map(lhs->slice.getInput(), result);
      result = b.clone(*lhs->slice, mapping)->getResult(0);
    }
    add.getResult().replaceAllUsesWith(result);
    add.erase();
    for (ReducedTerm term : {*lhs, *rhs}) {
      if (term.slice)
        term.slice.erase();
      term.sum.erase();
    }
  }
  auto shrinksLinearly = [](OpOperand &use) {
    Operation *user = use.getOwner();
    return (isa<MoeUnpermuteOp>(user) && use.getOperandNumber() == 0) ||
           (isa<MoeWeightsGradOp>(user) && use.getOperandNumber() == 1);
  };
  for (auto sum :
       llvm::make_early_inc_range(body.getOps<shard::AllReduceOp>())) {
    if (sum.getReduction() != shard::ReductionKind::Sum || sum->use_empty() ||
        !llvm::all_of(sum->getUses(), shrinksLinearly))
      continue;
    OpBuilder b(sum);
    for (OpOperand &use : llvm::make_early_inc_range(sum->getUses())) {
      use.set(sum.getInput());
      reduceLike(b, sum, use.getOwner()->getResult(0));
    }
    sum.erase();
  }
}

/// Replaces each `Op` of `body` that `repeats(earlier, later)` says
/// computes what an earlier one does by that earlier one's result.
template <typename Op, typename Repeats>
static void mergeRepeated(Block &body, Repeats repeats) {
  SmallVector<Op> ops(body.getOps<Op>());
  for (auto [index, later] : llvm::enumerate(ops))
    for (Op earlier : ArrayRef(ops).take_front(index))
      if (earlier && repeats(earlier, later)) {
        later.replaceAllUsesWith(earlier.getResult());
        later.erase();
        ops[index] = nullptr;
        break;
      }
}

void mlir::mt::finishTensorParallel(func::FuncOp function,
                                    int64_t &numCollectives) {
  Block &body = function.getBody().front();
  // The resharding casts between equal types.
  for (auto cast : llvm::make_early_inc_range(body.getOps<tensor::CastOp>()))
    if (cast.getSource().getType() == cast.getType()) {
      cast.replaceAllUsesWith(cast.getSource());
      cast.erase();
    }
  // Upstream places a gather or slice right after its source; each moves
  // down to its first use, so that a value gathered again for the backward
  // pass (Megatron-SP re-gathers rather than keeps the full activation)
  // lives only while that pass needs it.
  SmallVector<Operation *> movable;
  for (Operation &op : body)
    if (isa<shard::AllGatherOp, shard::AllSliceOp>(op) && !op.use_empty())
      movable.push_back(&op);
  for (Operation *op : movable) {
    Operation *first = nullptr;
    for (Operation *user : op->getUsers())
      if (!first || user->isBeforeInBlock(first))
        first = user;
    op->moveBefore(first);
  }
  // Two gathers of one value in the same pass are one: the backward pass of
  // a row-parallel projection gathers its output gradient once for the
  // input and the weight gradients. A gather in the forward pass is not
  // reused in the backward pass, which gathers again rather than keep the
  // full activation alive in between.
  Operation *lossOp = nullptr;
  for (Operation &op : body)
    if (isa<CrossEntropyOp>(op))
      lossOp = &op;
  auto inForward = [&](Operation *op) {
    return !lossOp || op == lossOp || op->isBeforeInBlock(lossOp);
  };
  mergeRepeated<shard::AllGatherOp>(
      body, [&](shard::AllGatherOp earlier, shard::AllGatherOp later) {
        return earlier.getInput() == later.getInput() &&
               earlier.getGridAxes() == later.getGridAxes() &&
               earlier.getGatherAxis() == later.getGatherAxis() &&
               inForward(earlier) == inForward(later);
      });
  sumBeforeReducing(body);
  // Slices of one value alike are one (upstream slices a resharded value
  // again for each use, the backward's among them): keeping the slice
  // alive costs less than keeping what it slices, and a sum then sliced
  // once becomes a reduce-scatter below.
  mergeRepeated<shard::AllSliceOp>(
      body, [](shard::AllSliceOp earlier, shard::AllSliceOp later) {
        return earlier.getInput() == later.getInput() &&
               earlier.getGrid() == later.getGrid() &&
               earlier.getGridAxes() == later.getGridAxes() &&
               earlier.getSliceAxis() == later.getSliceAxis();
      });
  // An all-reduce whose only use is the rank's slice of it is a
  // reduce-scatter (upstream reshards a whole value to a split one by
  // slicing, after the op that produced it completed its sum).
  for (auto slice :
       llvm::make_early_inc_range(body.getOps<shard::AllSliceOp>())) {
    auto sum = slice.getInput().getDefiningOp<shard::AllReduceOp>();
    if (!sum || !sum->hasOneUse() || sum.getGrid() != slice.getGrid() ||
        sum.getGridAxes() != slice.getGridAxes() ||
        sum.getReduction() != shard::ReductionKind::Sum)
      continue;
    OpBuilder b(sum);
    Value scattered = shard::ReduceScatterOp::create(
        b, slice.getLoc(), slice.getType(), sum.getGrid(), sum.getGridAxes(),
        sum.getInput(), shard::ReductionKind::Sum, slice.getSliceAxis());
    slice.replaceAllUsesWith(scattered);
    slice.erase();
    sum.erase();
  }
  // Split results say how, as the arguments they replace.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  FunctionAttributeEditor attrs(function);
  SmallVector<std::optional<unsigned>> replaced =
      argsReplacedByResults(function);
  for (unsigned index = 0, e = ret.getNumOperands(); index < e; ++index) {
    std::optional<unsigned> arg = replaced[index];
    if (!arg || !function.getArgAttr(*arg, MTDialect::getShardDimAttrName()))
      continue;
    for (NamedAttribute attr : function.getArgAttrDict(*arg))
      if (MTDialect::isShardAttrName(attr.getName()))
        attrs.setResult(index, attr.getName(), attr.getValue());
  }
  attrs.commit();
  for (Operation &op : body)
    if (isa<shard::AllReduceOp, shard::AllGatherOp, shard::ReduceScatterOp,
            shard::AllToAllOp>(op))
      ++numCollectives;
}
