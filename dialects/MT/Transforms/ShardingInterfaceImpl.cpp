//===- ShardingInterfaceImpl.cpp - mt ops' sharding models ----------------===//
//
// Each model describes its op as a loop nest, as upstream's linalg models
// do: the loops, and which loops index each dimension of each operand and
// result. Propagation reads shardings through these maps; the partition
// clones the op with the rank's local types and then:
//
//   - a result that does not index a split loop is a sum of every rank's
//     part (a split contraction, a gradient summed over split rows, a
//     vocab-parallel lookup): an all-reduce over that loop's grid axes
//     follows the op (MLIR 22 shardings have no "partial" state, so every
//     reduction is completed by the op that produces it);
//   - ops that draw dropout masks learn which grid axes split the batch,
//     the heads or the sequence (`mt.rng_*_axis`), so that every rank draws
//     its part of the single-device mask;
//   - the vocab-parallel ops (embedding, cross-entropy and their gradients)
//     learn the grid axis that splits the vocabulary (`mt.tp_vocab_axis`):
//     their kernels mask the rows other ranks own, and the cross-entropy
//     reduces its row maximum and sums inside the kernel, so no rank holds
//     full logits.
//
// Loops an op cannot split (the normalized dimension of a layer norm, the
// sequence inside attention, the rows of the loss) are left out of every
// sharding option, so propagation asks for those operands whole.
//
// Where upstream's defaults fall short, the models here differ:
//   - the option is built here: upstream's default reports "no sharding"
//     whenever the last annotated operand is replicated (so an op whose
//     split operand comes first was never annotated) and rejects a grid
//     axis on two loops, which the global norm of several split gradients
//     needs; an option here is empty only while nothing is split and some
//     operand is still unannotated, so a replicated annotation met during
//     backward propagation does not force replication onto values not yet
//     seen;
//   - `tensor.collapse_shape` gets a model (upstream has none): a split
//     stays a split of a merged dimension only on the group's outermost
//     dimension.
//
//===----------------------------------------------------------------------===//

#include "dialects/MT/Transforms/ShardingInterfaceImpl.h"

#include "dialects/MT/IR/MTOps.h"

#include "mlir/Dialect/Func/Extensions/ShardingExtensions.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"

#include <type_traits>

using namespace mlir;
using namespace mlir::mt;
using shard::GridAxis;
using shard::Sharding;
using shard::ShardingOption;
using utils::IteratorType;

namespace {

/// An op as a loop nest: its loops and, for every operand then every
/// result, the loops indexing each of its dimensions.
struct LoopNest {
  SmallVector<IteratorType> loops;
  SmallVector<AffineMap> maps;
};

using LoopAxes = SmallVector<SmallVector<GridAxis>>;

int64_t rankOf(Value value) {
  return cast<RankedTensorType>(value.getType()).getRank();
}

SmallVector<unsigned> iota(unsigned begin, unsigned end) {
  return llvm::to_vector(llvm::seq<unsigned>(begin, end));
}

AffineMap mapOf(MLIRContext *ctx, unsigned numLoops, ArrayRef<unsigned> loops) {
  SmallVector<AffineExpr> exprs;
  for (unsigned loop : loops)
    exprs.push_back(getAffineDimExpr(loop, ctx));
  return AffineMap::get(numLoops, 0, exprs, ctx);
}

/// Every loop parallel; each tensor operand and result indexed by the loops
/// in order; scalars (rank 0) by none.
LoopNest elementwise(Operation *op) {
  unsigned rank = 0;
  for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
    rank = std::max<unsigned>(rank, rankOf(value));
  LoopNest nest{SmallVector<IteratorType>(rank, IteratorType::parallel), {}};
  for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
    nest.maps.push_back(
        mapOf(op->getContext(), rank,
              rankOf(value) == 0 ? SmallVector<unsigned>() : iota(0, rank)));
  return nest;
}

/// The grid axes every loop is split over, read off the shardings the
/// partition was given.
LoopAxes loopAxes(const LoopNest &nest, ArrayRef<Sharding> operandShardings,
                  ArrayRef<Sharding> resultShardings) {
  LoopAxes axes(nest.loops.size());
  auto visit = [&](const Sharding &sharding, AffineMap map) {
    if (!sharding)
      return;
    for (auto [split, expr] :
         llvm::zip(sharding.getSplitAxes(), map.getResults()))
      if (auto dim = dyn_cast<AffineDimExpr>(expr))
        if (!split.empty() && axes[dim.getPosition()].empty())
          axes[dim.getPosition()] = llvm::to_vector(split.asArrayRef());
  };
  for (auto [index, sharding] : llvm::enumerate(operandShardings))
    visit(sharding, nest.maps[index]);
  for (auto [index, sharding] : llvm::enumerate(resultShardings))
    visit(sharding, nest.maps[operandShardings.size() + index]);
  return axes;
}

/// The first grid axis splitting `loop`, if any, as the attribute the
/// runtime reads; fails when more than one axis splits it.
FailureOr<std::optional<int64_t>>
singleAxis(Operation *op, const LoopAxes &axes, unsigned loop, StringRef what) {
  if (loop >= axes.size() || axes[loop].empty())
    return std::optional<int64_t>();
  if (axes[loop].size() != 1)
    return op->emitOpError()
           << "cannot split its " << what << " over more than one grid axis";
  return std::optional<int64_t>(axes[loop].front());
}

LogicalResult setAxisAttr(Operation *op, const LoopAxes &axes, unsigned loop,
                          StringRef what, StringRef attrName) {
  FailureOr<std::optional<int64_t>> axis = singleAxis(op, axes, loop, what);
  if (failed(axis))
    return failure();
  if (*axis)
    op->setAttr(attrName, Builder(op).getI64IntegerAttr(**axis));
  return success();
}

/// The sharding model shared by every op here. `Model` provides
/// `LoopNest nest(Op)` and may override `unsplittable` (loops never split),
/// `axesMayRepeat` (one grid axis on several loops), `reducedInside` (a
/// split loop whose sum the kernel itself completes) and `finish` (sets
/// the local op's attributes).
template <typename Model, typename Op>
struct OpModel : public shard::ShardingInterface::ExternalModel<Model, Op> {
  const Model &self() const { return static_cast<const Model &>(*this); }

  SmallVector<unsigned> unsplittable(Op) const { return {}; }
  bool axesMayRepeat() const { return false; }
  bool reducedInside(Op, unsigned) const { return false; }
  LogicalResult finish(Op, const LoopAxes &) const { return success(); }

  SmallVector<IteratorType> getLoopIteratorTypes(Operation *op) const {
    return self().nest(cast<Op>(op)).loops;
  }

  SmallVector<shard::ReductionKind>
  getReductionLoopIteratorKinds(Operation *op) const {
    SmallVector<shard::ReductionKind> kinds;
    for (IteratorType type : self().nest(cast<Op>(op)).loops)
      if (type == IteratorType::reduction)
        kinds.push_back(shard::ReductionKind::Sum);
    return kinds;
  }

  SmallVector<AffineMap> getIndexingMaps(Operation *op) const {
    return self().nest(cast<Op>(op)).maps;
  }

  FailureOr<ShardingOption>
  getShardingOption(Operation *op, ArrayRef<Sharding> operandShardings,
                    ArrayRef<Sharding> resultShardings) const {
    Op typed = cast<Op>(op);
    LoopNest nest = self().nest(typed);
    SmallVector<unsigned> fixed = self().unsplittable(typed);
    ShardingOption option;
    option.shardingArray.resize(nest.loops.size());
    FlatSymbolRefAttr grid;
    bool anySplit = false;
    // An operand or result split along a loop that never splits: the op
    // runs unsplit, and its annotations must say so (an op left
    // unannotated beside a split operand crashed upstream shard-partition).
    bool fixedSplit = false;
    auto visit = [&](const Sharding &sharding, AffineMap map) {
      if (!sharding)
        return;
      if (!grid)
        grid = sharding.getGridAttr();
      for (auto [split, expr] :
           llvm::zip(sharding.getSplitAxes(), map.getResults())) {
        auto dim = dyn_cast<AffineDimExpr>(expr);
        if (split.empty() || !dim)
          continue;
        unsigned loop = dim.getPosition();
        // First annotation wins; propagation tries the others in other
        // combinations and ranks them by the resharding they need.
        if (llvm::is_contained(fixed, loop)) {
          fixedSplit = true;
          continue;
        }
        if (!option.shardingArray[loop].empty())
          continue;
        bool taken = llvm::any_of(split.asArrayRef(), [&](GridAxis axis) {
          return llvm::any_of(option.shardingArray, [&](auto &axes) {
            return llvm::is_contained(axes, axis);
          });
        });
        if (taken && !self().axesMayRepeat())
          continue;
        option.shardingArray[loop] = llvm::to_vector(split.asArrayRef());
        anySplit = true;
      }
    };
    unsigned numOperands = op->getNumOperands();
    for (auto [index, sharding] : llvm::enumerate(resultShardings))
      visit(sharding, nest.maps[numOperands + index]);
    for (auto [index, sharding] : llvm::enumerate(operandShardings))
      visit(sharding, nest.maps[index]);
    bool allAnnotated = llvm::all_of(
        llvm::zip(op->getOperands(), operandShardings), [](auto pair) {
          return rankOf(std::get<0>(pair)) == 0 || bool(std::get<1>(pair));
        });
    if (!grid || (!anySplit && !allAnnotated && !fixedSplit))
      return ShardingOption::makeEmpty();
    option.grid = grid;
    shard::removeTrailingEmptySubArray(option.shardingArray);
    return option;
  }

  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap,
                          SymbolTableCollection &symbolTable,
                          OpBuilder &builder) const {
    Op typed = cast<Op>(op);
    LoopNest nest = self().nest(typed);
    LoopAxes axes = loopAxes(nest, operandShardings, resultShardings);
    Operation *local = builder.clone(*op, partitionMap);
    FlatSymbolRefAttr grid;
    for (const Sharding &sharding :
         llvm::concat<const Sharding>(operandShardings, resultShardings))
      if (sharding)
        grid = sharding.getGridAttr();
    shard::GridOp gridOp = shard::getGridOrNull(op, grid, symbolTable);
    unsigned numOperands = op->getNumOperands();
    for (auto [result, sharding] :
         llvm::zip_equal(local->getResults(), resultShardings)) {
      if (sharding) {
        result.setType(shard::shardType(result.getType(), gridOp, sharding));
        continue;
      }
      // An unused result has no annotation: its split follows the loops.
      auto type = cast<RankedTensorType>(result.getType());
      SmallVector<int64_t> shape(type.getShape());
      AffineMap map = nest.maps[numOperands + result.getResultNumber()];
      for (auto [dim, expr] : llvm::enumerate(map.getResults()))
        for (GridAxis axis : axes[cast<AffineDimExpr>(expr).getPosition()])
          shape[dim] =
              shard::shardDimension(shape[dim], gridOp.getShape()[axis]);
      result.setType(type.clone(shape));
    }
    if (failed(self().finish(cast<Op>(local), axes)))
      return failure();
    for (OpResult result : local->getResults()) {
      AffineMap map = nest.maps[numOperands + result.getResultNumber()];
      SmallVector<GridAxis> summed;
      for (auto [loop, loopAxes] : llvm::enumerate(axes)) {
        if (loopAxes.empty() || map.isFunctionOfDim(loop) ||
            self().reducedInside(typed, loop))
          continue;
        llvm::append_range(summed, loopAxes);
      }
      if (summed.empty())
        continue;
      llvm::sort(summed);
      Value whole = shard::AllReduceOp::create(
          builder, op->getLoc(), result.getType(), grid.getValue(), summed,
          result, shard::ReductionKind::Sum);
      partitionMap.map(op->getResult(result.getResultNumber()), whole);
    }
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Elementwise and broadcast
//===----------------------------------------------------------------------===//

template <typename Op>
struct ElementwiseModel : public OpModel<ElementwiseModel<Op>, Op> {
  LoopNest nest(Op op) const { return elementwise(op); }
};

/// Rotary embedding is elementwise over [batch, heads, seq, head_dim], but
/// a position's angle needs its index in the whole sequence and each pair
/// spans both halves of head_dim: neither of those splits.
template <typename Op> struct RopeModel : public OpModel<RopeModel<Op>, Op> {
  LoopNest nest(Op op) const { return elementwise(op); }
  SmallVector<unsigned> unsplittable(Op) const { return {2, 3}; }
};

/// Grouped-query heads: kv head k serves query heads k * groups ...
/// (k + 1) * groups - 1, so a split of the query heads into equal blocks is
/// the same split of the kv heads (kv_heads divisible by tp). Both head
/// dimensions are indexed by one loop.
template <typename Op>
struct RepeatKVModel : public OpModel<RepeatKVModel<Op>, Op> {
  LoopNest nest(Op op) const {
    MLIRContext *ctx = op.getContext();
    AffineMap all = mapOf(ctx, 4, iota(0, 4));
    return {SmallVector<IteratorType>(4, IteratorType::parallel), {all, all}};
  }
  SmallVector<unsigned> unsplittable(Op) const { return {2, 3}; }
};

struct DropoutModel : public OpModel<DropoutModel, DropoutOp> {
  LoopNest nest(DropoutOp op) const { return elementwise(op); }
  LogicalResult finish(DropoutOp op, const LoopAxes &axes) const {
    // Masks are drawn over the single-device tensor: a split batch or
    // sequence offsets the random index.
    for (auto [dim, dimAxes] : llvm::enumerate(axes))
      if (!dimAxes.empty() && dim > 1)
        return op.emitOpError()
               << "can only be split along the batch or the sequence";
    if (failed(setAxisAttr(op, axes, 0, "batch",
                           MTDialect::getRngBatchAxisAttrName())))
      return failure();
    if (axes.size() > 1 && !axes[1].empty() && op.getType().getRank() != 3)
      return op.emitOpError() << "splits its sequence but is not "
                                 "[batch, sequence, hidden]";
    return setAxisAttr(op, axes, 1, "sequence",
                       MTDialect::getRngSeqAxisAttrName());
  }
};

/// `input[i..., j...] + bias[j...]`.
struct BiasAddModel : public OpModel<BiasAddModel, BiasAddOp> {
  LoopNest nest(BiasAddOp op) const {
    unsigned rank = rankOf(op.getInput());
    unsigned biasRank = rankOf(op.getBias());
    MLIRContext *ctx = op.getContext();
    return {SmallVector<IteratorType>(rank, IteratorType::parallel),
            {mapOf(ctx, rank, iota(0, rank)),
             mapOf(ctx, rank, iota(rank - biasRank, rank)),
             mapOf(ctx, rank, iota(0, rank))}};
  }
};

/// The bias gradient sums over the broadcast (leading) loops.
struct BiasAddGradModel : public OpModel<BiasAddGradModel, BiasAddGradOp> {
  LoopNest nest(BiasAddGradOp op) const {
    unsigned rank = rankOf(op.getGradOutput());
    unsigned biasRank = op.getType().getRank();
    MLIRContext *ctx = op.getContext();
    SmallVector<IteratorType> loops(rank, IteratorType::reduction);
    for (unsigned loop = rank - biasRank; loop < rank; ++loop)
      loops[loop] = IteratorType::parallel;
    return {loops,
            {mapOf(ctx, rank, iota(0, rank)),
             mapOf(ctx, rank, iota(rank - biasRank, rank))}};
  }
};

//===----------------------------------------------------------------------===//
// Layer norm: rows are independent, the last dimension is normalized
//===----------------------------------------------------------------------===//

/// Layer and RMS norms and their gradients: one loop per dimension of the
/// input; tensors of the input's rank (input, output, their gradients) are
/// indexed by all loops, the per-feature ones (weight, bias, their
/// gradients) by the last. The weight and bias gradients sum over the rows.
template <typename Op>
struct RowNormModel : public OpModel<RowNormModel<Op>, Op> {
  LoopNest nest(Op op) const {
    unsigned rank = rankOf(op.getInput());
    MLIRContext *ctx = op.getContext();
    AffineMap all = mapOf(ctx, rank, iota(0, rank));
    AffineMap last = mapOf(ctx, rank, {rank - 1});
    LoopNest nest{SmallVector<IteratorType>(rank, IteratorType::parallel), {}};
    for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
      nest.maps.push_back(rankOf(value) == rank ? all : last);
    return nest;
  }
  SmallVector<unsigned> unsplittable(Op op) const {
    return {unsigned(rankOf(op.getInput()) - 1)};
  }
};

//===----------------------------------------------------------------------===//
// Matmul: loops (batch..., m, n, k)
//===----------------------------------------------------------------------===//

struct MatmulModel : public OpModel<MatmulModel, MatmulOp> {
  /// An accumulating matmul adds its accumulator once: a split of its sum
  /// (k) would add it on every rank before the partial sums are reduced.
  LogicalResult finish(MatmulOp op, const LoopAxes &axes) const {
    if (op.getAccumulator() && !axes[rankOf(op.getLhs())].empty())
      return op.emitOpError()
             << "cannot split the sum of an accumulating matmul: each rank "
                "would add the accumulator to its partial sum";
    return success();
  }

  LoopNest nest(MatmulOp op) const {
    unsigned rank = rankOf(op.getLhs());
    unsigned rhsRank = rankOf(op.getRhs());
    unsigned m = rank - 2, n = rank - 1, k = rank;
    MLIRContext *ctx = op.getContext();
    SmallVector<IteratorType> loops(rank + 1, IteratorType::parallel);
    loops[k] = IteratorType::reduction;
    SmallVector<unsigned> lhs = iota(0, rank - 2), rhs, result;
    lhs.append(op.getTransposeA() ? SmallVector<unsigned>{k, m}
                                  : SmallVector<unsigned>{m, k});
    if (rhsRank == rank)
      rhs = iota(0, rank - 2);
    rhs.append(op.getTransposeB() ? SmallVector<unsigned>{n, k}
                                  : SmallVector<unsigned>{k, n});
    result = iota(0, rank);
    // The accumulator is indexed as the result.
    SmallVector<AffineMap> maps = {mapOf(ctx, rank + 1, lhs),
                                   mapOf(ctx, rank + 1, rhs)};
    if (op.getAccumulator())
      maps.push_back(mapOf(ctx, rank + 1, result));
    maps.push_back(mapOf(ctx, rank + 1, result));
    return {loops, maps};
  }
};

//===----------------------------------------------------------------------===//
// Heads and attention: loops (batch, head, seq, head_dim[, key seq])
//===----------------------------------------------------------------------===//

/// `[b, s, chunks * heads * d]` <-> chunks x `[b, heads, s, d]`. The hidden
/// dimension is indexed by the head loop: a split of it is a split of the
/// heads, each rank holding its heads of every chunk (how mt-parallelize
/// lays out the fused QKV projection, `mt.shard_chunks`).
template <typename Model, typename Op>
struct HeadsModel : public OpModel<Model, Op> {
  LoopNest headsNest(Op op, unsigned numHeadTensors, bool headsFirst) const {
    MLIRContext *ctx = op.getContext();
    AffineMap hidden = mapOf(ctx, 4, {0, 2, 1});
    AffineMap heads = mapOf(ctx, 4, {0, 1, 2, 3});
    LoopNest nest{SmallVector<IteratorType>(4, IteratorType::parallel), {}};
    if (headsFirst)
      nest.maps.append(numHeadTensors, heads);
    nest.maps.push_back(hidden);
    if (!headsFirst)
      nest.maps.append(numHeadTensors, heads);
    return nest;
  }
  SmallVector<unsigned> unsplittable(Op) const { return {3}; }
};

struct SplitHeadsModel : public HeadsModel<SplitHeadsModel, SplitHeadsOp> {
  LoopNest nest(SplitHeadsOp op) const {
    return headsNest(op, op.getNumResults(), /*headsFirst=*/false);
  }
};

struct MergeHeadsModel : public HeadsModel<MergeHeadsModel, MergeHeadsOp> {
  LoopNest nest(MergeHeadsOp op) const {
    return headsNest(op, op.getInputs().size(), /*headsFirst=*/true);
  }
};

/// Causal attention needs every key of the sequence: only the batch and
/// the heads split.
template <typename Model, typename Op>
struct AttentionModelBase : public OpModel<Model, Op> {
  LoopNest attentionNest(Op op) const {
    MLIRContext *ctx = op.getContext();
    AffineMap queries = mapOf(ctx, 5, {0, 1, 2, 3});
    AffineMap keys = mapOf(ctx, 5, {0, 1, 4, 3});
    LoopNest nest{SmallVector<IteratorType>(5, IteratorType::parallel), {}};
    nest.loops[4] = IteratorType::reduction;
    // Operands: [grad_output,] query, key, value; results: output, or the
    // gradients of query, key and value.
    for (unsigned index = 0, e = op->getNumOperands(); index < e; ++index)
      nest.maps.push_back(index + 2 >= e ? keys : queries);
    if (op->getNumResults() == 1)
      nest.maps.push_back(queries);
    else
      nest.maps.append({queries, keys, keys});
    return nest;
  }
  SmallVector<unsigned> unsplittable(Op) const { return {2, 3, 4}; }
  LogicalResult finish(Op op, const LoopAxes &axes) const {
    if (failed(setAxisAttr(op, axes, 0, "batch",
                           MTDialect::getRngBatchAxisAttrName())))
      return failure();
    return setAxisAttr(op, axes, 1, "heads",
                       MTDialect::getRngHeadAxisAttrName());
  }
};

struct AttentionModel : public AttentionModelBase<AttentionModel, AttentionOp> {
  LoopNest nest(AttentionOp op) const { return attentionNest(op); }
};

struct AttentionGradModel
    : public AttentionModelBase<AttentionGradModel, AttentionGradOp> {
  LoopNest nest(AttentionGradOp op) const { return attentionNest(op); }
};

//===----------------------------------------------------------------------===//
// Embeddings and the loss: the vocabulary loop
//===----------------------------------------------------------------------===//

/// The loops of a table lookup and of its gradient: (ids..., hidden,
/// vocab), and how they index the table [vocab, hidden], the ids and the
/// looked-up rows [ids..., hidden].
struct LookupNest {
  unsigned numLoops;
  AffineMap table, ids, rows;
};

LookupNest lookupNest(Value ids) {
  unsigned n = rankOf(ids);
  MLIRContext *ctx = ids.getContext();
  SmallVector<unsigned> rows = iota(0, n);
  rows.push_back(n);
  return {n + 2, mapOf(ctx, n + 2, {n + 1, n}), mapOf(ctx, n + 2, iota(0, n)),
          mapOf(ctx, n + 2, rows)};
}

/// A lookup is a contraction with a one-hot matrix over the vocabulary; a
/// rank holding some rows of the table looks up zeros for the others' ids,
/// and the sum over ranks is the lookup.
struct EmbeddingModel : public OpModel<EmbeddingModel, EmbeddingOp> {
  LoopNest nest(EmbeddingOp op) const {
    LookupNest lookup = lookupNest(op.getIds());
    SmallVector<IteratorType> loops(lookup.numLoops, IteratorType::parallel);
    loops.back() = IteratorType::reduction;
    return {loops, {lookup.table, lookup.ids, lookup.rows}};
  }
  LogicalResult finish(EmbeddingOp op, const LoopAxes &axes) const {
    return setAxisAttr(op, axes, rankOf(op.getIds()) + 1, "vocabulary",
                       MTDialect::getTpVocabAxisAttrName());
  }
};

/// The table gradient scatters rows of the output gradient: each rank
/// keeps the rows of its vocabulary. The token loops are never split:
/// summing split tokens' table gradients would all-reduce a table where
/// gathering the (much smaller) output gradient suffices.
struct EmbeddingGradModel
    : public OpModel<EmbeddingGradModel, EmbeddingGradOp> {
  LoopNest nest(EmbeddingGradOp op) const {
    LookupNest lookup = lookupNest(op.getIds());
    SmallVector<IteratorType> loops(lookup.numLoops, IteratorType::parallel);
    for (unsigned loop = 0; loop + 2 < lookup.numLoops; ++loop)
      loops[loop] = IteratorType::reduction;
    // An accumulator is indexed as the table (its token loops are never
    // split: it is added once).
    if (op.getAccumulator())
      return {loops, {lookup.rows, lookup.ids, lookup.table, lookup.table}};
    return {loops, {lookup.rows, lookup.ids, lookup.table}};
  }
  SmallVector<unsigned> unsplittable(EmbeddingGradOp op) const {
    return iota(0, rankOf(op.getIds()));
  }
  LogicalResult finish(EmbeddingGradOp op, const LoopAxes &axes) const {
    return setAxisAttr(op, axes, rankOf(op.getIds()) + 1, "vocabulary",
                       MTDialect::getTpVocabAxisAttrName());
  }
};

/// The position table is small and read whole: the op stays replicated
/// (a sequence split of its result is a slice of it, no communication).
template <typename Op>
struct ReplicatedModel : public OpModel<ReplicatedModel<Op>, Op> {
  LoopNest nest(Op op) const {
    // Loops (rows of the result or operand, hidden, rows of the table).
    MLIRContext *ctx = op.getContext();
    AffineMap rows = mapOf(ctx, 3, {0, 1});
    AffineMap table = mapOf(ctx, 3, {2, 1});
    bool tableIsOperand = isa<PositionEmbeddingOp>(op);
    return {SmallVector<IteratorType>(3, IteratorType::parallel),
            tableIsOperand ? SmallVector<AffineMap>{table, rows}
                           : SmallVector<AffineMap>{rows, table}};
  }
  SmallVector<unsigned> unsplittable(Op) const { return {0, 1, 2}; }
};

/// Loops (rows..., vocab). The loss is the mean over rows, which must not
/// split here (data parallelism averages the loss itself); a split
/// vocabulary is reduced inside the kernel.
template <typename Model, typename Op>
struct LossModelBase : public OpModel<Model, Op> {
  unsigned vocabLoop(Op op) const { return rankOf(op.getLogits()) - 1; }
  SmallVector<unsigned> unsplittable(Op op) const {
    return iota(0, vocabLoop(op));
  }
  bool reducedInside(Op op, unsigned loop) const {
    return loop == vocabLoop(op);
  }
  LogicalResult finish(Op op, const LoopAxes &axes) const {
    return setAxisAttr(op, axes, vocabLoop(op), "vocabulary",
                       MTDialect::getTpVocabAxisAttrName());
  }
};

struct CrossEntropyModel
    : public LossModelBase<CrossEntropyModel, CrossEntropyOp> {
  LoopNest nest(CrossEntropyOp op) const {
    unsigned rank = rankOf(op.getLogits());
    MLIRContext *ctx = op.getContext();
    return {SmallVector<IteratorType>(rank, IteratorType::reduction),
            {mapOf(ctx, rank, iota(0, rank)),
             mapOf(ctx, rank, iota(0, rank - 1)), mapOf(ctx, rank, {})}};
  }
};

struct CrossEntropyGradModel
    : public LossModelBase<CrossEntropyGradModel, CrossEntropyGradOp> {
  LoopNest nest(CrossEntropyGradOp op) const {
    unsigned rank = rankOf(op.getLogits());
    MLIRContext *ctx = op.getContext();
    AffineMap all = mapOf(ctx, rank, iota(0, rank));
    return {
        SmallVector<IteratorType>(rank, IteratorType::parallel),
        {mapOf(ctx, rank, {}), all, mapOf(ctx, rank, iota(0, rank - 1)), all}};
  }
};

//===----------------------------------------------------------------------===//
// Global norm: loops of every input side by side
//===----------------------------------------------------------------------===//

struct GlobalNormModel : public OpModel<GlobalNormModel, GlobalNormOp> {
  LoopNest nest(GlobalNormOp op) const {
    unsigned total = 0;
    for (Value input : op.getInputs())
      total += rankOf(input);
    LoopNest nest{SmallVector<IteratorType>(total, IteratorType::reduction),
                  {}};
    unsigned next = 0;
    for (Value input : op.getInputs()) {
      unsigned rank = rankOf(input);
      nest.maps.push_back(
          mapOf(op.getContext(), total, iota(next, next + rank)));
      next += rank;
    }
    nest.maps.push_back(mapOf(op.getContext(), total, {}));
    return nest;
  }
  // Several gradients split over the same grid axis.
  bool axesMayRepeat() const { return true; }

  /// The squares of split gradients are summed over their grid axes, the
  /// replicated ones' counted once: sqrt(sum_axes(split) + replicated).
  LogicalResult partition(Operation *op, ArrayRef<Value> partitionedOperands,
                          ArrayRef<Sharding> operandShardings,
                          ArrayRef<Sharding> resultShardings,
                          IRMapping &partitionMap, SymbolTableCollection &,
                          OpBuilder &builder) const {
    Location loc = op->getLoc();
    SmallVector<Value> replicated;
    // Split gradients grouped by the grid axes they are split over.
    SmallVector<std::pair<SmallVector<GridAxis>, SmallVector<Value>>> split;
    FlatSymbolRefAttr grid;
    for (auto [value, sharding] :
         llvm::zip_equal(partitionedOperands, operandShardings)) {
      SmallVector<GridAxis> axes;
      if (sharding) {
        grid = sharding.getGridAttr();
        for (shard::GridAxesAttr dimAxes : sharding.getSplitAxes())
          llvm::append_range(axes, dimAxes.asArrayRef());
      }
      llvm::sort(axes);
      if (axes.empty()) {
        replicated.push_back(value);
        continue;
      }
      auto *group =
          llvm::find_if(split, [&](auto &g) { return g.first == axes; });
      if (group == split.end()) {
        split.push_back({axes, {}});
        group = std::prev(split.end());
      }
      group->second.push_back(value);
    }
    Value total;
    for (auto &[axes, values] : split) {
      Value local = SumSquaresOp::create(builder, loc, values);
      Value sum = shard::AllReduceOp::create(builder, loc, local.getType(),
                                             grid.getValue(), axes, local,
                                             shard::ReductionKind::Sum);
      total = total ? AddOp::create(builder, loc, total, sum).getResult() : sum;
    }
    if (!replicated.empty()) {
      Value sum = SumSquaresOp::create(builder, loc, replicated);
      total = total ? AddOp::create(builder, loc, total, sum).getResult() : sum;
    }
    partitionMap.map(op->getResult(0), SqrtOp::create(builder, loc, total));
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

/// Every dimension of every operand and result its own loop, none of them
/// split: the routing (each token's choices, the rows' order, the copies of
/// tokens to rows and back), the router's statistics and the load-balancing
/// loss run whole on every tensor-parallel rank, as Megatron-LM's router
/// does; an operand split elsewhere (the sequence, under sp) is gathered.
template <typename Op> struct WholeModel : public OpModel<WholeModel<Op>, Op> {
  static unsigned numLoops(Op op) {
    unsigned total = 0;
    for (Value value : llvm::concat<Value>(op->getOperands(), op->getResults()))
      total += rankOf(value);
    return total;
  }
  LoopNest nest(Op op) const {
    unsigned total = numLoops(op), next = 0;
    LoopNest nest{SmallVector<IteratorType>(total, IteratorType::parallel), {}};
    for (Value value :
         llvm::concat<Value>(op->getOperands(), op->getResults())) {
      unsigned rank = rankOf(value);
      nest.maps.push_back(
          mapOf(op->getContext(), total, iota(next, next + rank)));
      next += rank;
    }
    return nest;
  }
  SmallVector<unsigned> unsplittable(Op op) const {
    return iota(0, numLoops(op));
  }
};

/// The experts' projections. Loops (rows, n, k, offsets): the rows never
/// split (the offsets, read at run time, say which expert each is), and
/// every expert's weight splits as a dense projection's does (experts
/// under tensor parallelism, Megatron-LM's expert tensor parallelism):
/// along n, column-parallel, or along k, row-parallel, whose partial sums
/// are all-reduced.
template <typename Op>
struct GroupedMatmulModelBase : public OpModel<GroupedMatmulModelBase<Op>, Op> {
  static constexpr unsigned kRows = 0, kN = 1, kK = 2, kOffsets = 3;
  LoopNest nest(Op op) const {
    MLIRContext *ctx = op.getContext();
    bool forward = std::is_same_v<Op, GroupedMatmulOp>;
    AffineMap weight =
        mapOf(ctx, 4,
              op.getTransposeB() ? SmallVector<unsigned>{kN, kK}
                                 : SmallVector<unsigned>{kK, kN});
    AffineMap input = mapOf(ctx, 4, {kRows, kK});
    AffineMap product = mapOf(ctx, 4, {kRows, kN});
    AffineMap offsets = mapOf(ctx, 4, {kOffsets});
    // The forward pass sums over k, the weights' gradient over the rows.
    SmallVector<IteratorType> loops(4, IteratorType::parallel);
    loops[forward ? kK : kRows] = IteratorType::reduction;
    LoopNest nest{loops, {}};
    if (forward) {
      nest.maps = {input, offsets};
      nest.maps.append(op->getNumOperands() - 2, weight);
      nest.maps.push_back(product);
    } else {
      nest.maps = {product, input, offsets};
      nest.maps.append(op->getNumResults(), weight);
    }
    return nest;
  }
  SmallVector<unsigned> unsplittable(Op) const { return {kRows, kOffsets}; }
};

//===----------------------------------------------------------------------===//
// tensor.collapse_shape
//===----------------------------------------------------------------------===//

/// Loops are the source's dimensions; a merged result dimension is indexed
/// by its group's outermost loop, the only one whose split is a contiguous
/// split of the merged dimension.
struct CollapseShapeModel
    : public OpModel<CollapseShapeModel, tensor::CollapseShapeOp> {
  LoopNest nest(tensor::CollapseShapeOp op) const {
    unsigned rank = op.getSrcType().getRank();
    SmallVector<unsigned> outer;
    for (ReassociationIndices group : op.getReassociationIndices())
      outer.push_back(group.front());
    MLIRContext *ctx = op.getContext();
    return {SmallVector<IteratorType>(rank, IteratorType::parallel),
            {mapOf(ctx, rank, iota(0, rank)), mapOf(ctx, rank, outer)}};
  }
  SmallVector<unsigned> unsplittable(tensor::CollapseShapeOp op) const {
    SmallVector<unsigned> inner;
    for (ReassociationIndices group : op.getReassociationIndices())
      for (int64_t dim : llvm::drop_begin(group))
        inner.push_back(dim);
    return inner;
  }
};

} // namespace

void mlir::mt::registerShardingInterfaceExternalModels(
    DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *ctx, MTDialect *) {
    EmbeddingOp::attachInterface<EmbeddingModel>(*ctx);
    PositionEmbeddingOp::attachInterface<ReplicatedModel<PositionEmbeddingOp>>(
        *ctx);
    LayerNormOp::attachInterface<RowNormModel<LayerNormOp>>(*ctx);
    AddOp::attachInterface<ElementwiseModel<AddOp>>(*ctx);
    BiasAddOp::attachInterface<BiasAddModel>(*ctx);
    GeluOp::attachInterface<ElementwiseModel<GeluOp>>(*ctx);
    CastOp::attachInterface<ElementwiseModel<CastOp>>(*ctx);
    SiluOp::attachInterface<ElementwiseModel<SiluOp>>(*ctx);
    SiluGradOp::attachInterface<ElementwiseModel<SiluGradOp>>(*ctx);
    SoftcapOp::attachInterface<ElementwiseModel<SoftcapOp>>(*ctx);
    SoftcapGradOp::attachInterface<ElementwiseModel<SoftcapGradOp>>(*ctx);
    MulOp::attachInterface<ElementwiseModel<MulOp>>(*ctx);
    ScaleOp::attachInterface<ElementwiseModel<ScaleOp>>(*ctx);
    RMSNormOp::attachInterface<RowNormModel<RMSNormOp>>(*ctx);
    RopeOp::attachInterface<RopeModel<RopeOp>>(*ctx);
    RepeatKVOp::attachInterface<RepeatKVModel<RepeatKVOp>>(*ctx);
    RepeatKVGradOp::attachInterface<RepeatKVModel<RepeatKVGradOp>>(*ctx);
    RMSNormGradOp::attachInterface<RowNormModel<RMSNormGradOp>>(*ctx);
    DropoutOp::attachInterface<DropoutModel>(*ctx);
    MatmulOp::attachInterface<MatmulModel>(*ctx);
    SplitHeadsOp::attachInterface<SplitHeadsModel>(*ctx);
    MergeHeadsOp::attachInterface<MergeHeadsModel>(*ctx);
    AttentionOp::attachInterface<AttentionModel>(*ctx);
    CrossEntropyOp::attachInterface<CrossEntropyModel>(*ctx);
    EmbeddingGradOp::attachInterface<EmbeddingGradModel>(*ctx);
    PositionEmbeddingGradOp::attachInterface<
        ReplicatedModel<PositionEmbeddingGradOp>>(*ctx);
    LayerNormGradOp::attachInterface<RowNormModel<LayerNormGradOp>>(*ctx);
    BiasAddGradOp::attachInterface<BiasAddGradModel>(*ctx);
    GeluGradOp::attachInterface<ElementwiseModel<GeluGradOp>>(*ctx);
    AttentionGradOp::attachInterface<AttentionGradModel>(*ctx);
    CrossEntropyGradOp::attachInterface<CrossEntropyGradModel>(*ctx);
    GlobalNormOp::attachInterface<GlobalNormModel>(*ctx);
    SqrtOp::attachInterface<ElementwiseModel<SqrtOp>>(*ctx);
    ClipScaleOp::attachInterface<ElementwiseModel<ClipScaleOp>>(*ctx);
    DivOp::attachInterface<ElementwiseModel<DivOp>>(*ctx);
    AdamWOp::attachInterface<ElementwiseModel<AdamWOp>>(*ctx);
  });
  registry.addExtension(+[](MLIRContext *ctx, tensor::TensorDialect *) {
    TopKGatingOp::attachInterface<WholeModel<TopKGatingOp>>(*ctx);
    TopKGatingGradOp::attachInterface<WholeModel<TopKGatingGradOp>>(*ctx);
    MoeRouteOp::attachInterface<WholeModel<MoeRouteOp>>(*ctx);
    MoePermuteOp::attachInterface<WholeModel<MoePermuteOp>>(*ctx);
    // A token's gate and row: rows split as a norm's do, the hidden
    // dimension (the gate's 1) never.
    SigmoidGateOp::attachInterface<RowNormModel<SigmoidGateOp>>(*ctx);
    SigmoidGateGradOp::attachInterface<RowNormModel<SigmoidGateGradOp>>(*ctx);
    MoeUnpermuteOp::attachInterface<WholeModel<MoeUnpermuteOp>>(*ctx);
    MoeWeightsGradOp::attachInterface<WholeModel<MoeWeightsGradOp>>(*ctx);
    RouterStatisticsOp::attachInterface<WholeModel<RouterStatisticsOp>>(*ctx);
    RouterProbabilityGradOp::attachInterface<
        WholeModel<RouterProbabilityGradOp>>(*ctx);
    LoadBalancingLossOp::attachInterface<WholeModel<LoadBalancingLossOp>>(*ctx);
    RouterZLossOp::attachInterface<WholeModel<RouterZLossOp>>(*ctx);
    RouterZLossGradOp::attachInterface<WholeModel<RouterZLossGradOp>>(*ctx);
    LoadBalancingLossGradOp::attachInterface<
        WholeModel<LoadBalancingLossGradOp>>(*ctx);
    GroupedMatmulOp::attachInterface<GroupedMatmulModelBase<GroupedMatmulOp>>(
        *ctx);
    GroupedMatmulWeightGradOp::attachInterface<
        GroupedMatmulModelBase<GroupedMatmulWeightGradOp>>(*ctx);
    tensor::CollapseShapeOp::attachInterface<CollapseShapeModel>(*ctx);
  });
  func::registerShardingInterfaceExternalModels(registry);
}
