//===- TensorParallel.cpp - Megatron tensor parallelism on a step ---------===//
//
// Partitions a training step across the `tp` axis of the device grid as
// Megatron-LM does (Shoeybi et al. 2019): the QKV and first MLP projections
// are column-parallel, the attention and MLP output projections row-
// parallel, attention is split by heads, and the embedding table and output
// head are split by vocabulary rows. Each parameter's layout is pinned by its
// Hugging Face name; the layout of every other value follows from its
// operands, op by op, forward and backward alike:
//
//   R     replicated: every tp rank holds the whole tensor;
//   S(d)  split: each rank holds 1/tp of dimension d;
//   P     partial: each rank holds a summand; an all-reduce over tp makes it
//         R right after the op that produces it.
//
// An op whose rules do not cover its operands' layouts gets them converted:
// a split operand all-gathered (replicated), a replicated one sliced to
// match a split sibling. The all-reduces this inserts are Megatron's: one
// after each row-parallel projection and after the embedding lookup in the
// forward pass, one after the input gradient of each column-parallel
// projection and of the output head in the backward pass.
//
// With sequence parallelism (Korthikanti et al. 2022), a partial activation
// [batch, seq, hidden] is reduce-scattered along the sequence instead, so
// the activations between tensor-parallel regions (layer norms, dropout,
// residuals) are split along the sequence, and the conversion rule above
// all-gathers them in front of each column-parallel projection.
//
//===----------------------------------------------------------------------===//

#include "passes/Parallelize/TensorParallel.h"

#include "dialects/MT/IR/MTOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mt;

namespace {

struct Layout {
  enum Kind { Replicated, Split, Partial } kind = Replicated;
  int64_t dim = 0;

  static Layout r() { return {}; }
  static Layout s(int64_t dim) { return {Split, dim}; }
  static Layout p() { return {Partial, 0}; }
  bool operator==(const Layout &other) const {
    return kind == other.kind && (kind != Split || dim == other.dim);
  }
  bool operator!=(const Layout &other) const { return !(*this == other); }
};

/// How a parameter is split, from its Hugging Face GPT-2 name: `dim` and the
/// number of equal `chunks` of that dimension each rank takes a piece of
/// (c_attn holds [q | k | v] side by side: a rank's heads are three column
/// ranges).
struct ParamSplit {
  int64_t dim;
  int64_t chunks;
};

std::optional<ParamSplit> splitOf(StringRef name) {
  if (name.ends_with("attn.c_attn.weight"))
    return ParamSplit{1, 3};
  if (name.ends_with("attn.c_attn.bias"))
    return ParamSplit{0, 3};
  if (name.ends_with("mlp.c_fc.weight"))
    return ParamSplit{1, 1};
  if (name.ends_with("mlp.c_fc.bias"))
    return ParamSplit{0, 1};
  if (name.ends_with("attn.c_proj.weight") ||
      name.ends_with("mlp.c_proj.weight"))
    return ParamSplit{0, 1};
  if (name == "wte.weight" || name == "lm_head.weight")
    return ParamSplit{0, 1};
  return std::nullopt;
}

class Partitioner {
public:
  Partitioner(func::FuncOp function, int64_t tp, bool sequenceParallel,
              int16_t axis, StringRef grid, int64_t &numCollectives)
      : function(function), tp(tp), sequenceParallel(sequenceParallel),
        axis(axis), grid(grid), numCollectives(numCollectives) {}

  LogicalResult run() {
    Block &body = function.getBody().front();
    if (failed(splitParameters()))
      return failure();
    // The ops to partition: those of the step, not the collectives and norm
    // ops this inserts (their layouts are set when they are made).
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator())
      ops.push_back(&op);
    for (Operation *opPtr : ops) {
      Operation &op = *opPtr;
      if (isa<GlobalNormOp>(op)) {
        if (failed(splitGlobalNorm(cast<GlobalNormOp>(op))))
          return failure();
        continue;
      }
      if (failed(partition(&op)))
        return failure();
    }
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      Layout layout = layoutOf(value);
      if (layout.kind == Layout::Split) {
        // An updated parameter or state: say how it is split.
        auto arg = splitArgFor(index);
        if (!arg)
          return function.emitOpError()
                 << "result #" << index
                 << " is split for tensor parallelism but names no split "
                    "parameter";
        for (NamedAttribute attr : function.getArgAttrDict(*arg))
          if (attr.getName() == MTDialect::getFullShapeAttrName() ||
              attr.getName() == MTDialect::getShardAxisAttrName() ||
              attr.getName() == MTDialect::getShardDimAttrName() ||
              attr.getName() == MTDialect::getShardChunksAttrName() ||
              attr.getName() == MTDialect::getValidRowsAttrName())
            function.setResultAttr(index, attr.getName(), attr.getValue());
      } else if (layout.kind == Layout::Partial) {
        return function.emitOpError()
               << "result #" << index << " is a partial sum";
      }
    }
    function.setFunctionType(FunctionType::get(
        function.getContext(), body.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }

private:
  Layout layoutOf(Value value) const { return layouts.lookup(value); }

  static RankedTensorType splitType(Type type, int64_t dim, int64_t parts) {
    auto tensor = cast<RankedTensorType>(type);
    SmallVector<int64_t> shape(tensor.getShape());
    // Rounded up: a padded vocabulary gives every rank ceil(V / tp) rows.
    shape[dim] = (shape[dim] + parts - 1) / parts;
    return RankedTensorType::get(shape, tensor.getElementType());
  }

  /// The argument (parameter or state) result `index` replaces.
  std::optional<unsigned> splitArgFor(unsigned index) {
    auto param = function.getResultAttr(index, MTDialect::getParamAttrName());
    auto state = function.getResultAttr(index, MTDialect::getStateAttrName());
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      if (function.getArgAttr(i, MTDialect::getParamAttrName()) == param &&
          function.getArgAttr(i, MTDialect::getStateAttrName()) == state)
        return i;
    return std::nullopt;
  }

  LogicalResult splitParameters() {
    Block &body = function.getBody().front();
    Builder b(function.getContext());
    for (BlockArgument arg : body.getArguments()) {
      unsigned index = arg.getArgNumber();
      auto name = function.getArgAttrOfType<StringAttr>(
          index, MTDialect::getParamAttrName());
      std::optional<ParamSplit> split =
          name ? splitOf(name.getValue()) : std::nullopt;
      if (!split) {
        layouts[arg] = Layout::r();
        continue;
      }
      auto type = cast<RankedTensorType>(arg.getType());
      int64_t size = type.getDimSize(split->dim);
      SmallVector<int64_t> fullShape(type.getShape());
      if (isVocabulary(name.getValue()) && size % tp != 0) {
        // Megatron pads the vocabulary to a multiple of tp; the padded rows
        // are zero, never looked up, and masked out of the loss.
        int64_t padded = (size + tp - 1) / tp * tp;
        fullShape[0] = padded;
        function.setArgAttr(index, MTDialect::getValidRowsAttrName(),
                            b.getI64IntegerAttr(size));
        vocabSize = size;
        type = RankedTensorType::get(fullShape, type.getElementType());
      } else if (size % (split->chunks * tp) != 0) {
        return function.emitOpError()
               << "parameter '" << name.getValue() << "' has " << size
               << " entries in dimension " << split->dim
               << ", not divisible into " << split->chunks << " x tp " << tp
               << " pieces";
      }
      function.setArgAttr(index, MTDialect::getFullShapeAttrName(),
                          b.getDenseI64ArrayAttr(fullShape));
      function.setArgAttr(index, MTDialect::getShardAxisAttrName(),
                          b.getI64IntegerAttr(axis));
      function.setArgAttr(index, MTDialect::getShardDimAttrName(),
                          b.getI64IntegerAttr(split->dim));
      function.setArgAttr(index, MTDialect::getShardChunksAttrName(),
                          b.getI64IntegerAttr(split->chunks));
      arg.setType(splitType(type, split->dim, tp));
      layouts[arg] = Layout::s(split->dim);
    }
    return success();
  }

  LogicalResult unsupported(Operation *op) {
    InFlightDiagnostic diag =
        op->emitOpError()
        << "cannot be partitioned for tensor parallelism with operand "
           "layouts (";
    llvm::interleaveComma(op->getOperands(), diag, [&](Value value) {
      Layout layout = layoutOf(value);
      if (layout.kind == Layout::Split)
        diag << "split on dimension " << layout.dim;
      else
        diag << (layout.kind == Layout::Partial ? "partial" : "replicated");
    });
    return diag << ")";
  }

  /// Sets every result's layout (and so its local type).
  void setResults(Operation *op, Layout layout) {
    for (Value result : op->getResults()) {
      layouts[result] = layout;
      if (layout.kind == Layout::Split)
        result.setType(splitType(result.getType(), layout.dim, tp));
    }
  }

  /// Makes a partial result whole: all-reduce (sum) right after its op.

  /// Makes a partial sum whole right after its op: all-reduce, or under
  /// sequence parallelism for an activation [batch, seq, hidden],
  /// reduce-scatter along the sequence (Megatron-SP's replacement for the
  /// all-reduce after a tensor-parallel region).
  void reducePartial(Value partial) {
    OpBuilder b(partial.getContext());
    b.setInsertionPointAfterValue(partial);
    auto type = cast<RankedTensorType>(partial.getType());
    Value whole;
    if (sequenceParallel && type.getRank() == 3) {
      whole = shard::ReduceScatterOp::create(
          b, partial.getLoc(), splitType(type, 1, tp), grid,
          ArrayRef<int16_t>{axis}, partial, shard::ReductionKind::Sum,
          llvm::APInt(64, 1));
      layouts[whole] = Layout::s(1);
    } else {
      whole = shard::AllReduceOp::create(b, partial.getLoc(), type, grid,
                                         ArrayRef<int16_t>{axis}, partial,
                                         shard::ReductionKind::Sum);
      layouts[whole] = Layout::r();
    }
    partial.replaceAllUsesExcept(whole, whole.getDefiningOp());
    ++numCollectives;
  }

  /// Makes operand `operand` of its op replicated: all-gathers a split
  /// value right before the op (Megatron-SP's gather before a
  /// tensor-parallel region, and again in the backward pass).
  void makeReplicated(OpOperand &operand) {
    Value value = operand.get();
    Layout layout = layoutOf(value);
    if (layout.kind != Layout::Split)
      return;
    OpBuilder b(operand.getOwner());
    auto type = cast<RankedTensorType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    shape[layout.dim] *= tp;
    Value gathered = shard::AllGatherOp::create(
        b, value.getLoc(), RankedTensorType::get(shape, type.getElementType()),
        grid, ArrayRef<int16_t>{axis}, value, llvm::APInt(64, layout.dim));
    layouts[gathered] = Layout::r();
    operand.set(gathered);
    ++numCollectives;
  }

  /// Makes operand `operand` split along `dim` like its sibling: the rank's
  /// slice of a replicated value, no communication.
  void makeSplit(OpOperand &operand, int64_t dim) {
    Value value = operand.get();
    OpBuilder b(operand.getOwner());
    Value slice = shard::AllSliceOp::create(
        b, value.getLoc(), splitType(value.getType(), dim, tp), grid,
        ArrayRef<int16_t>{axis}, value, llvm::APInt(64, dim));
    layouts[slice] = Layout::s(dim);
    operand.set(slice);
  }

  void markVocabSplit(Operation *op) {
    op->setAttr(MTDialect::getTpVocabAxisAttrName(),
                Builder(op).getI64IntegerAttr(axis));
    if (vocabSize)
      op->setAttr(MTDialect::getVocabSizeAttrName(),
                  Builder(op).getI64IntegerAttr(*vocabSize));
  }

  static bool isVocabulary(StringRef name) {
    return name == "wte.weight" || name == "lm_head.weight";
  }

  LogicalResult partitionMatmul(MatmulOp op) {
    // A combination of layouts the rules below do not cover becomes one
    // they do by gathering the lhs, then the rhs.
    for (int attempt = 0; attempt < 3; ++attempt) {
      if (succeeded(partitionMatmulOnce(op, /*dryRun=*/true)))
        return partitionMatmulOnce(op, /*dryRun=*/false);
      OpOperand &operand =
          attempt == 0 ? op.getLhsMutable() : op.getRhsMutable();
      if (layoutOf(operand.get()).kind != Layout::Split)
        continue;
      makeReplicated(operand);
    }
    return partitionMatmulOnce(op, /*dryRun=*/false);
  }

  LogicalResult partitionMatmulOnce(MatmulOp op, bool dryRun) {
    int64_t rank = op.getLhs().getType().getRank();
    int64_t rhsRank = op.getRhs().getType().getRank();
    bool ta = op.getTransposeA(), tb = op.getTransposeB();
    enum Role { None, Batch, M, K, N };
    auto lhsRole = [&]() {
      Layout l = layoutOf(op.getLhs());
      if (l.kind == Layout::Replicated)
        return None;
      if (l.kind != Layout::Split || l.dim < rank - 2)
        return Batch;
      return l.dim == (ta ? rank - 1 : rank - 2) ? M : K;
    }();
    auto rhsRole = [&]() {
      Layout l = layoutOf(op.getRhs());
      if (l.kind == Layout::Replicated)
        return None;
      if (l.kind != Layout::Split || l.dim < rhsRank - 2)
        return Batch;
      return l.dim == (tb ? rhsRank - 1 : rhsRank - 2) ? K : N;
    }();
    std::optional<Layout> result;
    if (lhsRole == None && rhsRole == None)
      result = Layout::r();
    else if (lhsRole == None && rhsRole == N)
      result = Layout::s(rank - 1);
    else if (lhsRole == M && rhsRole == None)
      result = Layout::s(rank - 2);
    else if (lhsRole == Batch && rhsRole == None &&
             layoutOf(op.getRhs()) == Layout::r() && rhsRank == 2)
      result = layoutOf(op.getLhs());
    else if (lhsRole == K && rhsRole == K)
      result = Layout::p();
    if (!result)
      return dryRun ? failure() : unsupported(op);
    if (dryRun)
      return success();
    setResults(op, *result);
    if (result->kind == Layout::Partial)
      reducePartial(op->getResult(0));
    return success();
  }

  /// All operands share one layout, which the results take.
  LogicalResult sameLayout(Operation *op, ValueRange operands) {
    // A split operand sets the layout; replicated ones are sliced to match.
    Layout layout = layoutOf(operands.front());
    for (Value operand : operands)
      if (layoutOf(operand).kind == Layout::Split)
        layout = layoutOf(operand);
    for (OpOperand &operand : op->getOpOperands()) {
      if (!llvm::is_contained(operands, operand.get()))
        continue;
      Layout own = layoutOf(operand.get());
      if (own == layout)
        continue;
      if (own != Layout::r() || layout.kind != Layout::Split)
        return unsupported(op);
      makeSplit(operand, layout.dim);
    }
    setResults(op, layout);
    return success();
  }

  LogicalResult replicatedOnly(Operation *op) {
    for (OpOperand &operand : op->getOpOperands()) {
      if (layoutOf(operand.get()).kind == Layout::Partial)
        return unsupported(op);
      makeReplicated(operand);
    }
    setResults(op, Layout::r());
    return success();
  }

  LogicalResult partition(Operation *op) {
    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](EmbeddingOp op) {
          Layout table = layoutOf(op.getTable());
          if (table == Layout::r())
            return replicatedOnly(op);
          if (table != Layout::s(0))
            return unsupported(op);
          // Rows of other ranks' vocabulary look up zeros; the sum over
          // the ranks is the full lookup.
          vocabSplit = true;
          markVocabSplit(op);
          setResults(op, Layout::p());
          reducePartial(op->getResult(0));
          return success();
        })
        .Case([&](EmbeddingGradOp op) {
          makeReplicated(op.getGradOutputMutable());
          if (layoutOf(op.getGradOutput()) != Layout::r())
            return unsupported(op);
          if (!vocabSplit) {
            setResults(op, Layout::r());
            return success();
          }
          markVocabSplit(op);
          setResults(op, Layout::s(0));
          return success();
        })
        .Case([&](CrossEntropyOp op) {
          Layout logits = layoutOf(op.getLogits());
          if (logits == Layout::r())
            return replicatedOnly(op);
          if (logits != Layout::s(op.getLogits().getType().getRank() - 1))
            return unsupported(op);
          // Vocab-parallel: the row maximum, the sum of exponentials and the
          // target logit are reduced across the ranks inside the kernel, so
          // no rank holds full logits.
          markVocabSplit(op);
          setResults(op, Layout::r());
          return success();
        })
        .Case([&](CrossEntropyGradOp op) {
          Layout logits = layoutOf(op.getLogits());
          if (logits == Layout::r())
            return replicatedOnly(op);
          markVocabSplit(op);
          setResults(op, logits);
          return success();
        })
        .Case<PositionEmbeddingOp, PositionEmbeddingGradOp, ClipScaleOp,
              arith::ConstantOp>(
            [&](Operation *op) { return replicatedOnly(op); })
        .Case([&](LayerNormOp op) {
          // Rows are independent: a split along any but the normalized
          // dimension stays; the weights are replicated.
          Layout input = layoutOf(op.getInput());
          if (input.kind == Layout::Split &&
              input.dim == op.getType().getRank() - 1)
            makeReplicated(op.getInputMutable());
          setResults(op, layoutOf(op.getInput()));
          return success();
        })
        .Case([&](LayerNormGradOp op) {
          int64_t last = op.getInput().getType().getRank() - 1;
          for (OpOperand *operand :
               {&op.getGradOutputMutable(), &op.getInputMutable()})
            if (layoutOf(operand->get()).kind == Layout::Split &&
                layoutOf(operand->get()).dim == last)
              makeReplicated(*operand);
          if (layoutOf(op.getGradOutput()) != layoutOf(op.getInput()))
            return unsupported(op);
          Layout rows = layoutOf(op.getInput());
          layouts[op.getGradInput()] = rows;
          if (rows.kind == Layout::Split)
            op.getGradInput().setType(
                splitType(op.getGradInput().getType(), rows.dim, tp));
          if (rows.kind != Layout::Split) {
            layouts[op.getGradWeight()] = Layout::r();
            layouts[op.getGradBias()] = Layout::r();
            return success();
          }
          // Weight and bias gradients sum over rows other ranks hold.
          layouts[op.getGradWeight()] = Layout::p();
          layouts[op.getGradBias()] = Layout::p();
          reducePartial(op.getGradWeight());
          reducePartial(op.getGradBias());
          return success();
        })
        .Case([&](DropoutOp op) {
          if (failed(sameLayout(op, op->getOperands())))
            return failure();
          // Split along the sequence: each rank draws its rows of the
          // single-device mask.
          Layout layout = layoutOf(op.getResult());
          if (layout.kind == Layout::Split && layout.dim == 1 &&
              op.getType().getRank() == 3)
            op->setAttr(MTDialect::getRngSeqAxisAttrName(),
                        Builder(op).getI64IntegerAttr(axis));
          else if (layout.kind == Layout::Split)
            return unsupported(op);
          return success();
        })
        .Case<AddOp, GeluOp, GeluGradOp>(
            [&](Operation *op) { return sameLayout(op, op->getOperands()); })
        .Case([&](shard::AllReduceOp op) {
          return sameLayout(op, op->getOperands());
        })
        .Case([&](BiasAddOp op) {
          Layout input = layoutOf(op.getInput());
          Layout bias = layoutOf(op.getBias());
          int64_t rank = op.getInput().getType().getRank();
          int64_t biasRank = op.getBias().getType().getRank();
          int64_t offset = rank - biasRank;
          if (input == Layout::r() && bias == Layout::r()) {
            setResults(op, input);
            return success();
          }
          if (input.kind != Layout::Split)
            return unsupported(op);
          // Split along a broadcast dimension: the bias is whole.
          if (input.dim < offset && bias == Layout::r()) {
            setResults(op, input);
            return success();
          }
          // Split along a bias dimension: the bias is split alike (sliced
          // when replicated, as the position embedding under sequence
          // parallelism).
          if (bias == Layout::r())
            makeSplit(op.getBiasMutable(), input.dim - offset);
          if (layoutOf(op.getBias()) != Layout::s(input.dim - offset))
            return unsupported(op);
          setResults(op, input);
          return success();
        })
        .Case([&](BiasAddGradOp op) {
          Layout grad = layoutOf(op.getGradOutput());
          if (grad == Layout::r()) {
            setResults(op, grad);
            return success();
          }
          int64_t offset =
              op.getGradOutput().getType().getRank() - op.getType().getRank();
          if (grad.kind != Layout::Split)
            return unsupported(op);
          if (grad.dim < offset) {
            // Summed over a dimension other ranks hold part of.
            setResults(op, Layout::p());
            reducePartial(op->getResult(0));
            return success();
          }
          setResults(op, Layout::s(grad.dim - offset));
          return success();
        })
        .Case([&](MatmulOp op) { return partitionMatmul(op); })
        .Case([&](SplitHeadsOp op) {
          Layout input = layoutOf(op.getInput());
          if (input == Layout::r())
            return replicatedOnly(op);
          if (input != Layout::s(2))
            return unsupported(op);
          setResults(op, Layout::s(1)); // heads
          return success();
        })
        .Case([&](MergeHeadsOp op) {
          for (Value input : op.getInputs())
            if (layoutOf(input) != layoutOf(op.getInputs().front()))
              return unsupported(op);
          Layout input = layoutOf(op.getInputs().front());
          if (input == Layout::r())
            return replicatedOnly(op);
          if (input != Layout::s(1))
            return unsupported(op);
          setResults(op, Layout::s(2));
          return success();
        })
        .Case<AttentionOp, AttentionGradOp>([&](Operation *op) {
          if (failed(sameLayout(op, op->getOperands())))
            return failure();
          Layout layout = layoutOf(op->getOperand(0));
          if (layout == Layout::r())
            return success();
          if (layout != Layout::s(1))
            return unsupported(op);
          // Each rank holds some heads: their masks are the single-device
          // heads' (the random index is offset by the rank's first head).
          op->setAttr(MTDialect::getRngHeadAxisAttrName(),
                      Builder(op).getI64IntegerAttr(axis));
          return success();
        })
        .Case([&](AdamWOp op) {
          return sameLayout(op, {op.getParam(), op.getGrad(), op.getExpAvg(),
                                 op.getExpAvgSq()});
        })
        .Case([&](tensor::CollapseShapeOp op) {
          Layout src = layoutOf(op.getSrc());
          if (src == Layout::r())
            return replicatedOnly(op);
          // A split stays a contiguous split of the merged dimension only if
          // it is on the group's outermost dimension; otherwise gather first.
          for (auto [group, dims] :
               llvm::enumerate(op.getReassociationIndices()))
            if (src.kind == Layout::Split && dims.front() == src.dim) {
              setResults(op, Layout::s(group));
              return success();
            }
          makeReplicated(op.getSrcMutable());
          setResults(op, Layout::r());
          return success();
        })
        .Default([&](Operation *op) { return unsupported(op); });
  }

  /// The global norm of gradients some of which are split: the split ones'
  /// squares are summed over tp, the replicated ones' counted once.
  LogicalResult splitGlobalNorm(GlobalNormOp op) {
    SmallVector<Value> replicated, split;
    for (Value grad : op.getInputs()) {
      Layout layout = layoutOf(grad);
      if (layout.kind == Layout::Partial)
        return unsupported(op);
      (layout.kind == Layout::Split ? split : replicated).push_back(grad);
    }
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value total;
    if (!split.empty()) {
      Value local = SumSquaresOp::create(b, loc, split);
      total = shard::AllReduceOp::create(b, loc, local.getType(), grid,
                                         ArrayRef<int16_t>{axis}, local,
                                         shard::ReductionKind::Sum);
      ++numCollectives;
    }
    if (!replicated.empty()) {
      Value sum = SumSquaresOp::create(b, loc, replicated);
      total = total ? AddOp::create(b, loc, total, sum).getResult() : sum;
    }
    Value norm = SqrtOp::create(b, loc, total);
    op.getResult().replaceAllUsesWith(norm);
    layouts[norm] = Layout::r();
    op.erase();
    return success();
  }

  func::FuncOp function;
  int64_t tp;
  bool sequenceParallel;
  int16_t axis;
  StringRef grid;
  int64_t &numCollectives;
  DenseMap<Value, Layout> layouts;
  bool vocabSplit = false;
  /// The true vocabulary size when the tables are padded for tp.
  std::optional<int64_t> vocabSize;
};
} // namespace

LogicalResult
mlir::mt::partitionTensorParallel(func::FuncOp function, int64_t tp,
                                  bool sequenceParallel, int16_t gridAxis,
                                  StringRef grid, int64_t &numCollectives) {
  return Partitioner(function, tp, sequenceParallel, gridAxis, grid,
                     numCollectives)
      .run();
}
