//===- LowerToRuntime.cpp - mt functions to mtrt programs -----------------===//
//
// Assigns every tensor value an allocation (persistent, transient, or a view
// of another allocation), plans the transient ones into the arena by
// lifetime, and emits the straight-line program.
//
//===----------------------------------------------------------------------===//

#include "passes/Conversion/MTToMTRT/Passes.h"

#include "dialects/MT/IR/MTOps.h"
#include "dialects/MTRT/IR/MTRTDialect.h"
#include "megatron/Analysis/MemoryPlan.h"
#include "megatron/Analysis/ModelSummary.h"
#include "megatron/Target/KernelEmitter.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Matchers.h"
#include "llvm/Support/raw_ostream.h"

#define DEBUG_TYPE "mt-lower-to-runtime"

namespace mlir::mt {
#define GEN_PASS_DEF_LOWERTORUNTIMEPASS
#include "passes/Conversion/MTToMTRT/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

/// Storage for one or more tensor values (views share one allocation).
struct Allocation {
  int64_t bytes = 0;
  bool persistent = false;
  std::string kind; // param, param_copy, exp_avg, exp_avg_sq, input, ...
  std::string name; // parameter name or input role
  int64_t firstUse = 0;
  int64_t lastUse = 0;
  int64_t offset = 0;
  /// Set when this allocation lives in another's bytes: a parameter's new
  /// value written over the old one once nothing reads the old one.
  std::optional<unsigned> redirect;
  /// ZeRO pieces: the full shape and the grid axis of the piece index.
  DenseI64ArrayAttr fullShape;
  std::optional<int64_t> shardAxis;
  /// Tensor-parallel splits: the split dimension and its chunks (a ZeRO
  /// piece has none: it is a piece of the flattened tensor).
  std::optional<int64_t> shardDim;
  int64_t shardChunks = 1;
  /// ZeRO on top of a tensor-parallel split: the grid axis of the piece.
  std::optional<int64_t> pieceAxis;
  /// A padded vocabulary: the rows of the full tensor that are real.
  std::optional<int64_t> validRows;
  /// A data input of one microbatch of the step.
  std::optional<int64_t> microbatch;
  /// A parameter's initializer (`mt.init`).
  DictionaryAttr init;
  /// Expert parallelism: the expert each coordinate of the axis holds.
  ArrayAttr expertNames;
  std::optional<int64_t> expertAxis;
  /// A parameter's rows in a published fused tensor (mt.fused_in).
  DictionaryAttr fusedIn;
};

/// An arena plans at most mtrt::kMaxArenaBytes (2^60), which the loader
/// accepts: a shape written in the IR, or a vocabulary padded to a huge
/// multiple, wrapped to a negative arena before.
using mlir::mtrt::kMaxArenaBytes;

/// A tensor's bytes, or kMaxArenaBytes + 1 when they exceed the bound (its
/// element count, unlike getNumElements', is multiplied with a check).
int64_t tensorBytes(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  int64_t bytes = llvm::divideCeil(tensor.getElementTypeBitWidth(), 8);
  for (int64_t dim : tensor.getShape())
    if (__builtin_mul_overflow(bytes, dim, &bytes) || bytes > kMaxArenaBytes)
      return kMaxArenaBytes + 1;
  return bytes;
}

MemRefType memrefFor(Type type) {
  auto tensor = cast<RankedTensorType>(type);
  return MemRefType::get(tensor.getShape(), tensor.getElementType());
}

/// Sizes of a program's memory, for the plan report.
struct MemoryReport {
  int64_t params = 0, parameterCopies = 0, optimizerState = 0, inputs = 0,
          gradients = 0, activations = 0;
};

struct LowerToRuntimePass
    : public mt::impl::LowerToRuntimePassBase<LowerToRuntimePass> {
  using LowerToRuntimePassBase::LowerToRuntimePassBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // Offsets are rounded up to it: a power of two, at most a page (a
    // GPU's widest vector load is 16 bytes, cuBLASLt's alignment 256).
    if (alignment < 1 || alignment > 4096 || (alignment & (alignment - 1)) != 0)
      return (void)(module.emitError()
                    << "mt-lower-to-runtime: alignment must be a power of two "
                       "from 1 to 4096 bytes, got "
                    << alignment.getValue()),
             signalPassFailure();
    SmallVector<func::FuncOp> functions;
    for (auto function : module.getOps<func::FuncOp>())
      if (!function.isExternal())
        functions.push_back(function);
    SmallVector<int64_t> gridShape;
    auto grids = llvm::to_vector(module.getOps<shard::GridOp>());
    if (grids.size() > 1)
      return (void)(grids[1].emitOpError()
                    << "mt-lower-to-runtime supports one device grid"),
             signalPassFailure();
    if (!grids.empty())
      gridShape.assign(grids.front().getShape().begin(),
                       grids.front().getShape().end());
    // One SPMD program per role: the one training step, or one function per
    // pipeline stage (`mt.pipeline_stage`, set by mt-pipeline). Two
    // functions of one stage cannot both be what its ranks run.
    llvm::SmallDenseMap<int64_t, func::FuncOp> byStage;
    for (func::FuncOp function : functions) {
      int64_t stage = stageOf(function);
      auto [it, inserted] = byStage.try_emplace(stage, function);
      if (!inserted) {
        InFlightDiagnostic diag =
            function.emitOpError()
            << "is a second program for pipeline stage " << stage
            << ": a module lowers to one function per stage (mark pipeline "
               "stages with 'mt.pipeline_stage', or run mt-pipeline)";
        diag.attachNote(it->second.getLoc()) << "the first one is here";
        return signalPassFailure();
      }
    }
    for (func::FuncOp function : functions) {
      if (failed(lower(function, stageOf(function), gridShape)))
        return signalPassFailure();
      function.erase();
    }
    // The whole model's FLOPs per token now lie on every program.
    module->removeAttr(MTDialect::getFlopsPerTokenAttrName());
  }

  /// For a row fusion computing a cross-entropy gradient from logits that
  /// only it reads (through no view another op reads), the (gradient
  /// result, logits operand) pair the gradient may overwrite.
  static std::optional<std::pair<Value, Value>>
  gradientOverLogits(Operation *op) {
    auto fusion = dyn_cast<FusionOp>(op);
    if (!fusion || !fusion.getRowReduction())
      return std::nullopt;
    auto yield = cast<YieldOp>(fusion.getBody().front().getTerminator());
    for (auto [index, value] : llvm::enumerate(yield.getValues())) {
      auto grad = value.getDefiningOp<CrossEntropyGradOp>();
      if (!grad)
        continue;
      Value logits = fusion.getInputs()[cast<BlockArgument>(grad.getLogits())
                                            .getArgNumber()];
      // The logits and every view they were made through are read by
      // this op (or the next view) alone; an argument is persistent.
      for (Value value = logits;;) {
        if (!value.hasOneUse())
          return std::nullopt;
        Operation *producer = value.getDefiningOp();
        if (!producer)
          return std::nullopt;
        if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(producer))
          value = collapse.getSrc();
        else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(producer))
          value = expand.getSrc();
        else
          break;
      }
      return std::make_pair(fusion.getResult(index), logits);
    }
    return std::nullopt;
  }

  static int64_t stageOf(func::FuncOp function) {
    if (auto stage = function->getAttrOfType<IntegerAttr>(
            MTDialect::getPipelineStageAttrName()))
      return stage.getInt();
    return 0;
  }

  /// An update writes its results over `operand` (AdamW's parameter,
  /// moments and copies): nothing may read it, or a view of it, after
  /// `update`, which would find the new values.
  static LogicalResult checkNotReadAfter(Value operand, Operation *update) {
    SmallVector<Value> values = {operand};
    while (!values.empty()) {
      Value value = values.pop_back_val();
      for (Operation *user : value.getUsers()) {
        if (user == update)
          continue;
        if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(user)) {
          values.push_back(user->getResult(0));
          continue;
        }
        if (user->getBlock() == update->getBlock() &&
            user->isBeforeInBlock(update))
          continue;
        unsigned number = 0;
        for (OpOperand &use : update->getOpOperands())
          if (use.get() == operand) {
            number = use.getOperandNumber();
            break;
          }
        InFlightDiagnostic diag = update->emitOpError()
                                  << "cannot write its results over operand #"
                                  << number << ": '" << user->getName()
                                  << "' reads it after the update";
        diag.attachNote(user->getLoc()) << "read here";
        return failure();
      }
    }
    return success();
  }

  /// Whether `value` is one of `gradients`' allocations or made from one
  /// by a chain of single-operand ops (a slice, a cast, a view).
  static bool derivedFromGradient(Value value,
                                  const DenseMap<Value, unsigned> &allocOf,
                                  const DenseSet<unsigned> &gradients) {
    for (int depth = 0; value && depth < 8; ++depth) {
      auto alloc = allocOf.find(value);
      if (alloc != allocOf.end() && gradients.contains(alloc->second))
        return true;
      Operation *producer = value.getDefiningOp();
      if (!producer || producer->getNumOperands() != 1)
        return false;
      value = producer->getOperand(0);
    }
    return false;
  }

  LogicalResult lower(func::FuncOp function, int64_t stage,
                      ArrayRef<int64_t> gridShape) {
    if (!function.getBody().hasOneBlock())
      return function.emitOpError()
             << "mt-lower-to-runtime needs a single-block function";
    Block &body = function.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    SmallVector<Allocation> allocs;
    DenseMap<Value, unsigned> allocOf;
    DenseSet<Value> views; // values that share another value's allocation
    DenseSet<unsigned> gradientAllocs;
    auto newAlloc = [&](Value value, Allocation alloc) {
      alloc.bytes = tensorBytes(value.getType());
      allocOf[value] = allocs.size();
      allocs.push_back(std::move(alloc));
    };
    auto alias = [&](Value view, Value source) {
      allocOf[view] = allocOf.lookup(source);
      views.insert(view);
    };

    // Arguments are persistent: the runtime fills them before each step.
    for (BlockArgument arg : body.getArguments()) {
      if (!isa<RankedTensorType>(arg.getType()))
        return function.emitOpError()
               << "argument #" << arg.getArgNumber() << " is not a tensor";
      Allocation alloc;
      alloc.persistent = true;
      unsigned index = arg.getArgNumber();
      auto param = function.getArgAttrOfType<StringAttr>(
          index, MTDialect::getParamAttrName());
      auto state = function.getArgAttrOfType<StringAttr>(
          index, MTDialect::getStateAttrName());
      auto input = function.getArgAttrOfType<StringAttr>(
          index, MTDialect::getInputAttrName());
      alloc.fullShape = function.getArgAttrOfType<DenseI64ArrayAttr>(
          index, MTDialect::getFullShapeAttrName());
      auto intAttr = [&](StringRef name) -> std::optional<int64_t> {
        if (auto value = function.getArgAttrOfType<IntegerAttr>(index, name))
          return value.getInt();
        return std::nullopt;
      };
      alloc.shardAxis = intAttr(MTDialect::getShardAxisAttrName());
      alloc.shardDim = intAttr(MTDialect::getShardDimAttrName());
      alloc.shardChunks =
          intAttr(MTDialect::getShardChunksAttrName()).value_or(1);
      alloc.pieceAxis = intAttr(MTDialect::getPieceAxisAttrName());
      alloc.validRows = intAttr(MTDialect::getValidRowsAttrName());
      alloc.microbatch = intAttr(MTDialect::getMicrobatchAttrName());
      alloc.expertAxis = intAttr(MTDialect::getExpertAxisAttrName());
      alloc.expertNames = function.getArgAttrOfType<ArrayAttr>(
          index, MTDialect::getExpertNamesAttrName());
      if (param) {
        alloc.kind = state ? state.getValue().str() : "param";
        alloc.name = param.getValue().str();
        if (!state) {
          alloc.init = function.getArgAttrOfType<DictionaryAttr>(
              index, MTDialect::getInitAttrName());
          alloc.fusedIn = function.getArgAttrOfType<DictionaryAttr>(
              index, MTDialect::getFusedInAttrName());
        }
      } else if (input) {
        alloc.kind = "input";
        alloc.name = input.getValue().str();
      } else {
        return function.emitOpError()
               << "argument #" << index
               << " has no role: mark it 'mt.param' or 'mt.input'";
      }
      newAlloc(arg, std::move(alloc));
    }

    // An unused constant (hand-written IR, a pass's leftover) needs no
    // buffer: `arith.constant true` was refused as no splat float tensor.
    for (Operation &op : llvm::make_early_inc_range(body.without_terminator()))
      if (isa<arith::ConstantOp>(op) && op.use_empty())
        op.erase();

    // Results of ops: new transient allocations or views.
    SmallVector<Operation *> ops;
    for (Operation &op : body.without_terminator()) {
      int64_t step = ops.size();
      ops.push_back(&op);
      if (failed(checkLowerable(&op)))
        return failure();
      if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
        alias(collapse.getResult(), collapse.getSrc());
      } else if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
        alias(expand.getResult(), expand.getSrc());
      } else if (auto send = dyn_cast<shard::SendOp>(op)) {
        // The result only orders the send; it names the sent bytes.
        alias(send.getResult(), send.getInput());
      } else if (auto recv = dyn_cast<shard::RecvOp>(op)) {
        // The received bytes land in the buffer its (empty) input names.
        alias(recv.getResult(), recv.getInput());
      } else if (auto adamw = dyn_cast<AdamWOp>(op)) {
        for (auto [result, operand] :
             {std::pair{adamw.getNewParam(), adamw.getParam()},
              std::pair{adamw.getNewExpAvg(), adamw.getExpAvg()},
              std::pair{adamw.getNewExpAvgSq(), adamw.getExpAvgSq()}}) {
          if (failed(checkNotReadAfter(operand, &op)))
            return failure();
          alias(result, operand);
        }
      } else if (auto multi = dyn_cast<MultiAdamWOp>(op)) {
        for (auto [results, operands] :
             {std::pair{multi.getNewParams(), multi.getParams()},
              std::pair{multi.getNewExpAvgs(), multi.getExpAvgs()},
              std::pair{multi.getNewExpAvgSqs(), multi.getExpAvgSqs()},
              std::pair{multi.getNewCopies(), multi.getCopies()}})
          for (auto [result, operand] : llvm::zip(results, operands)) {
            if (failed(checkNotReadAfter(operand, &op)))
              return failure();
            alias(result, operand);
          }
      } else if (Value acc = getAccumulator(&op)) {
        // An accumulating op writes the sum over its accumulator (cuBLAS's
        // beta = 1, C = D), which must be a transient buffer that nothing
        // reads afterwards.
        if (!isWritableAccumulator(acc) ||
            allocs[allocOf.lookup(acc)].persistent)
          return op.emitOpError()
                 << "cannot accumulate in place: its accumulator must be "
                    "computed by an op of the step (not an argument, a view, "
                    "a transfer or an empty tensor) into bytes of its own and "
                    "read by nothing else";
        for (Value result : op.getResults()) {
          if (result == op.getResult(0)) {
            alias(result, acc);
            continue;
          }
          Allocation alloc;
          alloc.kind = "activation";
          alloc.firstUse = alloc.lastUse = step;
          newAlloc(result, std::move(alloc));
        }
      } else if (std::optional<std::pair<Value, Value>> inPlace =
                     gradientOverLogits(&op)) {
        // A fused cross-entropy writes the logits' gradient over the
        // logits, which nothing reads afterwards: one logits-sized buffer
        // less at the peak of the step.
        for (Value result : op.getResults()) {
          if (result == inPlace->first) {
            alias(result, inPlace->second);
            continue;
          }
          Allocation alloc;
          alloc.kind = "activation";
          alloc.firstUse = alloc.lastUse = step;
          newAlloc(result, std::move(alloc));
        }
      } else {
        for (Value result : op.getResults()) {
          Allocation alloc;
          alloc.kind = isa<arith::ConstantOp>(op) ? "constant" : "activation";
          alloc.firstUse = alloc.lastUse = step;
          newAlloc(result, std::move(alloc));
        }
      }
      for (Value operand : op.getOperands()) {
        Allocation &alloc = allocs[allocOf.lookup(operand)];
        alloc.lastUse = std::max(alloc.lastUse, step);
      }
      // The gradients the optimizer consumes, after any reduction: what the
      // norm reads, and what an update reads that the norm does not count
      // (the tied embedding's on the pipeline's last stage, counted on the
      // first) unless it is made from one the norm read. ZeRO-1's update
      // reads a slice of the whole reduced gradient, which lives until it
      // runs: the whole one is the gradient, as the norm's are (ZeRO-2's
      // pieces are what its reduce-scatter keeps).
      if (isa<GlobalNormOp, SumSquaresOp>(op))
        for (Value operand : op.getOperands())
          gradientAllocs.insert(allocOf.lookup(operand));
      SmallVector<Value> updated;
      if (auto update = dyn_cast<AdamWOp>(op))
        updated.push_back(update.getGrad());
      else if (auto update = dyn_cast<MultiAdamWOp>(op))
        llvm::append_range(updated, update.getGrads());
      for (Value grad : updated) {
        // Through ZeRO-1's slice, and the zeros padding it to equal pieces.
        for (Operation *def = grad.getDefiningOp();
             def &&
             isa<shard::AllSliceOp, StridedAllSliceOp, tensor::PadOp>(def);
             def = grad.getDefiningOp())
          grad = def->getOperand(0);
        if (!derivedFromGradient(grad, allocOf, gradientAllocs))
          gradientAllocs.insert(allocOf.lookup(grad));
      }
    }
    int64_t end = ops.size();
    for (Value value : ret.getOperands())
      allocs[allocOf.lookup(value)].lastUse = end;
    for (unsigned index : gradientAllocs)
      if (!allocs[index].persistent)
        allocs[index].kind = "gradient";

    // A returned parameter (or state) computed into a fresh buffer, as after
    // a ZeRO all-gather, is written over the argument it replaces: nothing
    // reads the argument by then. (The arguments by parameter and state,
    // found once: a search per result was quadratic in the parameters.)
    DenseMap<std::pair<Attribute, Attribute>, BlockArgument> argOfParam;
    for (BlockArgument arg : body.getArguments())
      if (Attribute param = function.getArgAttr(arg.getArgNumber(),
                                                MTDialect::getParamAttrName()))
        argOfParam[{param,
                    function.getArgAttr(arg.getArgNumber(),
                                        MTDialect::getStateAttrName())}] = arg;
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      auto param = function.getResultAttrOfType<StringAttr>(
          index, MTDialect::getParamAttrName());
      if (!param)
        continue;
      auto state = function.getResultAttrOfType<StringAttr>(
          index, MTDialect::getStateAttrName());
      std::optional<unsigned> argAlloc;
      if (BlockArgument arg = argOfParam.lookup({param, state}))
        argAlloc = allocOf.lookup(arg);
      unsigned resultAlloc = allocOf.lookup(value);
      if (!argAlloc || *argAlloc == resultAlloc)
        continue;
      Allocation &result = allocs[resultAlloc];
      if (result.persistent || result.redirect ||
          allocs[*argAlloc].lastUse >= result.firstUse ||
          allocs[*argAlloc].bytes != result.bytes)
        return function.emitOpError()
               << "result #" << index << " (parameter '" << param.getValue()
               << "') cannot be written in place of its argument";
      result.redirect = *argAlloc;
    }

    // Every buffer apart is an upper bound of the plan: within the bound,
    // no offset below can overflow.
    uint64_t total = 0;
    const Allocation *largest = nullptr;
    for (const Allocation &alloc : allocs) {
      if (!largest || alloc.bytes > largest->bytes)
        largest = &alloc;
      if (!alloc.redirect)
        total = std::min<uint64_t>( // unsigned: two terms past 2^60 fit
            total + alignTo(std::max<int64_t>(alloc.bytes, 1), alignment),
            kMaxArenaBytes + 1);
    }
    if (total > uint64_t(kMaxArenaBytes)) {
      InFlightDiagnostic error = function.emitOpError()
                                 << "needs more than 2^60 bytes of buffers "
                                    "(the most one arena can plan); the "
                                    "largest is "
                                 << largest->kind;
      if (!largest->name.empty())
        error << " '" << largest->name << "'";
      if (largest->bytes > kMaxArenaBytes)
        return error << ", which alone holds more";
      return error << ", of " << largest->bytes << " bytes";
    }

    // Persistent first, in argument order; then the planned transients.
    int64_t offset = 0;
    SmallVector<BufferLifetime> lifetimes;
    SmallVector<unsigned> transient;
    for (auto [index, alloc] : llvm::enumerate(allocs)) {
      if (alloc.persistent) {
        alloc.offset = offset;
        offset = alignTo(offset + std::max<int64_t>(alloc.bytes, 1), alignment);
      } else if (!alloc.redirect) {
        lifetimes.push_back({alloc.bytes, alloc.firstUse, alloc.lastUse});
        transient.push_back(index);
      }
    }
    int64_t persistentBytes = offset;
    ArenaPlacement placement =
        placeBuffers(lifetimes, persistentBytes, alignment);
    for (auto [i, index] : llvm::enumerate(transient))
      allocs[index].offset = placement.offsets[i];
    for (Allocation &alloc : allocs)
      if (alloc.redirect)
        alloc.offset = allocs[*alloc.redirect].offset;
    int64_t arena = placement.endBytes;

    if (failed(emitProgram(function, stage, gridShape, ops, allocs, allocOf,
                           views, persistentBytes, arena)))
      return failure();
    arenaBytes += arena;
    if (printMemoryPlan)
      printPlan(function.getName(), allocs, persistentBytes, arena);
    return success();
  }

  /// The rank's (batch, heads, seq) of an attention op, in whichever
  /// layout it reads its operands.
  struct AttentionExtent {
    int64_t batch, heads, seq;
  };
  static std::optional<AttentionExtent> attentionExtent(Operation *op) {
    auto headMajor = [](RankedTensorType query) {
      return AttentionExtent{query.getDimSize(0), query.getDimSize(1),
                             query.getDimSize(2)};
    };
    if (auto attention = dyn_cast<AttentionOp>(op))
      return headMajor(attention.getQuery().getType());
    if (auto grad = dyn_cast<AttentionGradOp>(op))
      return headMajor(grad.getQuery().getType());
    if (auto attention = dyn_cast<MergedAttentionOp>(op))
      return headMajor(attention.getQuery().getType());
    if (auto grad = dyn_cast<MergedAttentionGradOp>(op))
      return headMajor(grad.getQuery().getType());
    if (auto attention = dyn_cast<QKVAttentionOp>(op)) {
      RankedTensorType qkv = attention.getQkv().getType();
      return AttentionExtent{qkv.getDimSize(0), int64_t(attention.getHeads()),
                             qkv.getDimSize(1)};
    }
    if (auto grad = dyn_cast<QKVAttentionGradOp>(op)) {
      RankedTensorType qkv = grad.getQkv().getType();
      return AttentionExtent{qkv.getDimSize(0), int64_t(grad.getHeads()),
                             qkv.getDimSize(1)};
    }
    return std::nullopt;
  }

  /// Kernel parameters that depend on the rank, stated in terms of its grid
  /// coordinates so that one program serves every rank: a parameter
  /// `{grid_axis = a, stride = s, base = b}` is `b + s * coordinate(a)`,
  /// resolved by the runtime when it loads the program.
  static void addRankParams(Operation *op, ArrayRef<int64_t> gridShape,
                            OpBuilder &builder,
                            SmallVectorImpl<NamedAttribute> &params) {
    auto axisAttr = [&](StringRef name) -> std::optional<int64_t> {
      if (gridShape.empty())
        return std::nullopt;
      if (auto axis = op->getAttrOfType<IntegerAttr>(name))
        return axis.getInt();
      return std::nullopt;
    };
    auto param = [&](StringRef name, int64_t value) {
      params.push_back(
          builder.getNamedAttr(name, builder.getI64IntegerAttr(value)));
    };
    auto perRank = [&](StringRef name, std::optional<int64_t> axis,
                       int64_t stride, int64_t base) {
      if (!axis) {
        if (base != 0)
          param(name, base);
        return;
      }
      params.push_back(builder.getNamedAttr(
          name, builder.getDictionaryAttr(
                    {builder.getNamedAttr("grid_axis",
                                          builder.getI64IntegerAttr(*axis)),
                     builder.getNamedAttr("stride",
                                          builder.getI64IntegerAttr(stride)),
                     builder.getNamedAttr("base",
                                          builder.getI64IntegerAttr(base))})));
    };
    // Attention split by heads: the rank's first head and the total heads,
    // so that its masks are the single-device heads' masks.
    int64_t headParts = 1;
    std::optional<AttentionExtent> attention = attentionExtent(op);
    if (auto axis = axisAttr(MTDialect::getRngHeadAxisAttrName());
        axis && attention) {
      int64_t heads = attention->heads;
      headParts = gridShape[*axis];
      perRank("rng_head_offset", axis, heads, 0);
      param("rng_heads", heads * headParts);
    }
    // A vocabulary split: the rank's first row and the grid axis its
    // cross-entropy reduces over.
    if (auto axis = axisAttr(MTDialect::getTpVocabAxisAttrName())) {
      Value table = op->getOperand(0); // embedding table or logits
      if (isa<EmbeddingGradOp>(op))
        table = op->getResult(0);
      else if (isa<CrossEntropyGradOp>(op))
        table = op->getOperand(1);
      auto type = cast<RankedTensorType>(table.getType());
      int64_t rows = isa<EmbeddingOp, EmbeddingGradOp>(op)
                         ? type.getDimSize(0)
                         : type.getShape().back();
      perRank("vocab_offset", axis, rows, 0);
      param("vocab_grid_axis", *axis);
    }
    // A padded vocabulary (split or not): its true size, past which the
    // cross-entropy masks the logits.
    if (auto size =
            op->getAttrOfType<IntegerAttr>(MTDialect::getVocabSizeAttrName()))
      param("vocab_size", size.getInt());
    // A sequence split (sequence parallelism): the rank's rows of the
    // [batch, seq, hidden] mask.
    int64_t seqParts = 1;
    if (auto axis = axisAttr(MTDialect::getRngSeqAxisAttrName())) {
      auto type = cast<RankedTensorType>(op->getResult(0).getType());
      int64_t seq = type.getDimSize(1);
      seqParts = gridShape[*axis];
      param("rng_seq_total", seq * seqParts);
      perRank("rng_seq_offset", axis, seq, 0);
    }
    // A batch split: offset the random index by the elements of the
    // single-device tensor before this rank's share (the dropout's input or
    // attention's [batch, heads, seq, seq] probabilities), and within the
    // share by the microbatches before this one: the data-parallel rank
    // holds `microbatches` consecutive microbatches of the global batch.
    if (!isa<DropoutOp>(op) && !attention)
      return;
    int64_t elements;
    if (auto dropout = dyn_cast<DropoutOp>(op))
      elements = dropout.getType().getNumElements() * seqParts;
    else
      elements = attention->batch * attention->heads * headParts *
                 attention->seq * attention->seq;
    int64_t microbatch = 0, microbatches = 1;
    if (auto index =
            op->getAttrOfType<IntegerAttr>(MTDialect::getMicrobatchAttrName()))
      microbatch = index.getInt();
    if (auto count = op->getAttrOfType<IntegerAttr>(
            MTDialect::getMicrobatchesAttrName()))
      microbatches = count.getInt();
    perRank("rng_offset", axisAttr(MTDialect::getRngBatchAxisAttrName()),
            elements * microbatches, elements * microbatch);
  }

  /// A mask element's random index is its offset (the single-device
  /// elements before this rank's share and microbatch, addRankParams) plus
  /// its place in the share: bounded here by the share's elements times
  /// every grid axis and the microbatches, which must stay below 2^62, or
  /// the offsets would wrap and two ranks draw the same masks.
  static LogicalResult checkMaskIndicesFit(Operation *op,
                                           ArrayRef<int64_t> gridShape) {
    auto check = [&](Operation *masked) -> LogicalResult {
      int64_t bound;
      if (auto dropout = dyn_cast<DropoutOp>(masked)) {
        bound = dropout.getType().getNumElements();
      } else if (std::optional<AttentionExtent> attention =
                     attentionExtent(masked)) {
        if (__builtin_mul_overflow(attention->batch, attention->heads,
                                   &bound) ||
            __builtin_mul_overflow(bound, attention->seq, &bound) ||
            __builtin_mul_overflow(bound, attention->seq, &bound))
          bound = -1;
      } else {
        return success();
      }
      SmallVector<int64_t> factors(gridShape);
      if (auto count = masked->getAttrOfType<IntegerAttr>(
              MTDialect::getMicrobatchesAttrName()))
        factors.push_back(count.getInt());
      for (int64_t factor : factors)
        if (bound < 0 || __builtin_mul_overflow(bound, factor, &bound))
          bound = -1;
      if (bound >= 0 && bound < (int64_t(1) << 62))
        return success();
      return masked->emitOpError()
             << "draws random masks over more than 2^62 elements across its "
                "ranks and microbatches: their random indices would wrap";
    };
    if (auto fusion = dyn_cast<FusionOp>(op)) {
      for (Operation &inner : fusion.getBody().front().without_terminator())
        if (failed(check(&inner)))
          return failure();
      return success();
    }
    return check(op);
  }

  /// A fusion's dropouts' parameters, `dropout<k>_<name>` for its k-th
  /// dropout: what the unfused dropout command would carry (probability,
  /// rng_stream and the rank's offsets) and the tensor's extents, from
  /// which the runtime fills the kernel's parameter blocks.
  static void addFusedDropoutParams(FusionOp fusion,
                                    ArrayRef<int64_t> gridShape,
                                    OpBuilder &builder,
                                    SmallVectorImpl<NamedAttribute> &params) {
    int64_t slot = 0;
    for (Operation &op : fusion.getBody().front().without_terminator()) {
      auto dropout = dyn_cast<DropoutOp>(op);
      if (!dropout)
        continue;
      SmallVector<NamedAttribute> own;
      own.push_back(
          builder.getNamedAttr("probability", dropout.getProbabilityAttr()));
      if (auto stream = dropout.getRngStreamAttr())
        own.push_back(builder.getNamedAttr("rng_stream", stream));
      addRankParams(dropout, gridShape, builder, own);
      RankedTensorType type = dropout.getType();
      int64_t seqLocal = type.getRank() >= 2 ? type.getDimSize(1) : 1;
      own.push_back(builder.getNamedAttr("seq_local",
                                         builder.getI64IntegerAttr(seqLocal)));
      own.push_back(builder.getNamedAttr(
          "inner", builder.getI64IntegerAttr(
                       type.getNumElements() /
                       std::max<int64_t>(1, type.getDimSize(0) * seqLocal))));
      std::string prefix = "dropout" + std::to_string(slot++) + "_";
      for (NamedAttribute attr : own)
        params.push_back(builder.getNamedAttr(
            prefix + attr.getName().getValue().str(), attr.getValue()));
    }
  }

  /// An expert exchange's ranks (its counts' rows) are a group of its grid
  /// axis, which such groups split: the runtime sends within the group.
  static LogicalResult checkExpertRanks(Operation *op,
                                        ArrayRef<int64_t> gridShape) {
    Value counts;
    int64_t axis = 0;
    if (auto dispatch = dyn_cast<ExpertDispatchOp>(op)) {
      counts = dispatch.getCounts();
      axis = dispatch.getGridAxis();
    } else if (auto combine = dyn_cast<ExpertCombineOp>(op)) {
      counts = combine.getCounts();
      axis = combine.getGridAxis();
    } else {
      return success();
    }
    int64_t ranks = cast<RankedTensorType>(counts.getType()).getDimSize(0);
    if (axis >= int64_t(gridShape.size()) || gridShape[axis] % ranks != 0)
      return op->emitOpError()
             << "exchanges rows among groups of " << ranks
             << " ranks, which do not split grid axis " << axis << "'s "
             << (axis < int64_t(gridShape.size()) ? gridShape[axis] : 0)
             << (gridShape.empty() ? " (there is no grid)" : "");
    return success();
  }

  /// The runtime kernel of an upstream `shard` collective.
  static std::optional<std::pair<StringRef, SmallVector<NamedAttribute>>>
  collectiveKernel(Operation *op, OpBuilder &builder) {
    auto axisOf = [&](ArrayRef<int16_t> axes) {
      return builder.getNamedAttr("grid_axis",
                                  builder.getI64IntegerAttr(axes.front()));
    };
    auto average = [&](shard::ReductionKind kind) {
      return builder.getNamedAttr(
          "average",
          builder.getBoolAttr(kind == shard::ReductionKind::Average));
    };
    auto tensorAxis = [&](const APInt &axis) {
      return builder.getNamedAttr(
          "axis", builder.getI64IntegerAttr(axis.getSExtValue()));
    };
    using Kernel = std::pair<StringRef, SmallVector<NamedAttribute>>;
    if (auto reduce = dyn_cast<shard::AllReduceOp>(op))
      return Kernel{
          "all_reduce",
          {axisOf(reduce.getGridAxes()), average(reduce.getReduction())}};
    if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op))
      return Kernel{"reduce_scatter",
                    {axisOf(scatter.getGridAxes()),
                     average(scatter.getReduction()),
                     tensorAxis(scatter.getScatterAxis())}};
    // An expert's replicas' sum: an all-reduce within the axis.
    if (auto strided = dyn_cast<StridedAllReduceOp>(op))
      return Kernel{
          "all_reduce",
          {builder.getNamedAttr("grid_axis", strided.getGridAxisAttr()),
           average(shard::ReductionKind::Sum),
           builder.getNamedAttr("stride", strided.getStrideAttr())}};
    // ZeRO's pieces of an expert, over its replicas: the collectives
    // within the axis, along the flat tensor's only dimension.
    auto overReplicas = [&](IntegerAttr gridAxis, IntegerAttr stride) {
      return SmallVector<NamedAttribute>{
          builder.getNamedAttr("grid_axis", gridAxis),
          builder.getNamedAttr("stride", stride),
          builder.getNamedAttr("axis", builder.getI64IntegerAttr(0))};
    };
    if (auto scatter = dyn_cast<StridedReduceScatterOp>(op)) {
      SmallVector<NamedAttribute> params =
          overReplicas(scatter.getGridAxisAttr(), scatter.getStrideAttr());
      params.push_back(average(shard::ReductionKind::Sum));
      return Kernel{"reduce_scatter", params};
    }
    if (auto gather = dyn_cast<StridedAllGatherOp>(op))
      return Kernel{"all_gather", overReplicas(gather.getGridAxisAttr(),
                                               gather.getStrideAttr())};
    if (auto slice = dyn_cast<StridedAllSliceOp>(op))
      return Kernel{"all_slice", overReplicas(slice.getGridAxisAttr(),
                                              slice.getStrideAttr())};
    if (auto gather = dyn_cast<shard::AllGatherOp>(op))
      return Kernel{
          "all_gather",
          {axisOf(gather.getGridAxes()), tensorAxis(gather.getGatherAxis())}};
    if (auto slice = dyn_cast<shard::AllSliceOp>(op))
      return Kernel{
          "all_slice",
          {axisOf(slice.getGridAxes()), tensorAxis(slice.getSliceAxis())}};
    return std::nullopt;
  }

  LogicalResult emitProgram(func::FuncOp function, int64_t stage,
                            ArrayRef<int64_t> gridShape,
                            ArrayRef<Operation *> ops,
                            ArrayRef<Allocation> allocs,
                            const DenseMap<Value, unsigned> &allocOf,
                            const DenseSet<Value> &views,
                            int64_t persistentBytes, int64_t arena) {
    Block &body = function.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());

    // Emit the program.
    OpBuilder builder(function);
    Location loc = function.getLoc();
    auto program = mtrt::ProgramOp::create(
        builder, loc, builder.getStringAttr("stage" + std::to_string(stage)),
        builder.getI64IntegerAttr(stage), builder.getI64IntegerAttr(arena),
        builder.getI64IntegerAttr(persistentBytes), IntegerAttr());
    // Throughput reports need the model's FLOPs per token: the whole
    // model's, as mt-autodiff counted it before the step was split into
    // stages and tensor-parallel shares; else (a step written by hand,
    // lowered alone, with parameters and a token input) this function's.
    auto module = function->getParentOfType<ModuleOp>();
    if (auto whole = module ? module->getAttrOfType<IntegerAttr>(
                                  MTDialect::getFlopsPerTokenAttrName())
                            : IntegerAttr()) {
      program.setFlopsPerTokenAttr(builder.getI64IntegerAttr(whole.getInt()));
    } else if (hasTokenInput(function) && hasModelParameters(function)) {
      FailureOr<ModelSummary> summary = summarizeModel(function);
      if (failed(summary))
        return failure();
      program.setFlopsPerTokenAttr(
          builder.getI64IntegerAttr(summary->trainingFlopsPerToken));
    }
    Block *programBody = builder.createBlock(&program.getBody());
    builder.setInsertionPointToStart(programBody);

    DenseMap<Value, Value> buffers;
    auto bufferFor = [&](Value value) -> Value {
      if (Value buffer = buffers.lookup(value))
        return buffer;
      const Allocation &own = allocs[allocOf.lookup(value)];
      const Allocation &alloc = own.redirect ? allocs[*own.redirect] : own;
      bool sharded = alloc.fullShape && alloc.shardAxis && !gridShape.empty();
      // ZeRO pieces over the axis an expert's groups lie on are over the
      // expert's replicas: the axis' ranks divided by a group's.
      auto piecesOver = [&](int64_t axis) {
        int64_t ranks = gridShape[axis];
        return alloc.expertAxis && *alloc.expertAxis == axis &&
                       alloc.expertNames
                   ? ranks / int64_t(alloc.expertNames.size())
                   : ranks;
      };
      auto buffer = mtrt::BufferOp::create(
          builder, value.getLoc(), memrefFor(value.getType()),
          builder.getI64IntegerAttr(alloc.offset),
          builder.getStringAttr(alloc.kind),
          alloc.name.empty() ? StringAttr() : builder.getStringAttr(alloc.name),
          views.contains(value) || own.redirect ? builder.getUnitAttr()
                                                : UnitAttr(),
          sharded ? alloc.fullShape : DenseI64ArrayAttr(),
          sharded ? builder.getI64IntegerAttr(*alloc.shardAxis) : IntegerAttr(),
          sharded ? builder.getI64IntegerAttr(
                        alloc.shardDim ? gridShape[*alloc.shardAxis]
                                       : piecesOver(*alloc.shardAxis))
                  : IntegerAttr(),
          sharded && alloc.shardDim ? builder.getI64IntegerAttr(*alloc.shardDim)
                                    : IntegerAttr(),
          sharded && alloc.shardDim
              ? builder.getI64IntegerAttr(alloc.shardChunks)
              : IntegerAttr(),
          sharded && alloc.pieceAxis
              ? builder.getI64IntegerAttr(*alloc.pieceAxis)
              : IntegerAttr(),
          sharded && alloc.pieceAxis
              ? builder.getI64IntegerAttr(piecesOver(*alloc.pieceAxis))
              : IntegerAttr(),
          alloc.validRows ? builder.getI64IntegerAttr(*alloc.validRows)
                          : IntegerAttr(),
          alloc.microbatch ? builder.getI64IntegerAttr(*alloc.microbatch)
                           : IntegerAttr(),
          alloc.init, alloc.expertNames,
          alloc.expertAxis ? builder.getI64IntegerAttr(*alloc.expertAxis)
                           : IntegerAttr(),
          alloc.fusedIn);
      buffers[value] = buffer;
      return buffer;
    };
    for (BlockArgument arg : body.getArguments())
      bufferFor(arg);

    // Without a pipeline schedule (no microbatch marks), autodiff marks the
    // backward and optimizer ops and the model's own ops are the forward
    // pass; ops the parallelization inserted (collectives) belong to the
    // phase of the ops around them. Every kernel states its phase, so the
    // memory report can tell what the forward stashes for the backward.
    bool scheduled = llvm::any_of(ops, [](Operation *op) {
      return op->hasAttr(MTDialect::getMicrobatchAttrName());
    });
    bool trainingStep = llvm::any_of(ops, [](Operation *op) {
      return op->hasAttr(MTDialect::getPhaseAttrName());
    });
    StringAttr currentPhase = builder.getStringAttr("forward");
    int64_t numGenerated = 0;

    for (Operation *op : ops) {
      if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp>(op)) {
        bufferFor(op->getResult(0));
        continue;
      }
      if (isa<tensor::EmptyOp>(op)) {
        // Storage for a receive: written before it is read.
        bufferFor(op->getResult(0));
        continue;
      }
      if (isa<shard::SendOp, shard::RecvOp>(op)) {
        // The peer is the one index on the pipeline axis; the tag and the
        // microbatch come from mt-pipeline.
        auto tag =
            op->getAttrOfType<IntegerAttr>(MTDialect::getTransferTagAttrName());
        auto micro =
            op->getAttrOfType<IntegerAttr>(MTDialect::getMicrobatchAttrName());
        auto chunk =
            op->getAttrOfType<IntegerAttr>(MTDialect::getChunkAttrName());
        if (auto send = dyn_cast<shard::SendOp>(op)) {
          bufferFor(send.getResult());
          mtrt::SendOp::create(
              builder, op->getLoc(), bufferFor(send.getInput()),
              builder.getI64IntegerAttr(send.getDestination()[0]), tag, micro,
              chunk);
        } else {
          auto recv = cast<shard::RecvOp>(op);
          mtrt::RecvOp::create(
              builder, op->getLoc(), bufferFor(recv.getResult()),
              builder.getI64IntegerAttr((*recv.getSource())[0]), tag, micro,
              chunk);
        }
        continue;
      }
      if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
        auto splat = cast<SplatElementsAttr>(constant.getValue());
        mtrt::FillOp::create(
            builder, op->getLoc(), bufferFor(constant.getResult()),
            builder.getF64FloatAttr(
                splat.getSplatValue<APFloat>().convertToDouble()));
        continue;
      }
      SmallVector<Value> ins, outs;
      for (Value operand : op->getOperands())
        ins.push_back(bufferFor(operand));
      for (Value result : op->getResults())
        outs.push_back(bufferFor(result));
      StringRef kernel = op->getName().stripDialect();
      // A fusion region runs as the kernel generated from it, carried in
      // the program beside the command that launches it.
      FlatSymbolRefAttr generated;
      if (auto fusion = dyn_cast<FusionOp>(op)) {
        std::string name = "stage" + std::to_string(stage) + "_fused" +
                           std::to_string(numGenerated++);
        FailureOr<EmittedKernel> emitted = emitFusedKernel(fusion, name);
        if (failed(emitted))
          return failure();
        mtrt::GeneratedKernelOp::create(
            builder, op->getLoc(), builder.getStringAttr(name),
            builder.getStringAttr(emitted->source),
            builder.getI64IntegerAttr(emitted->elements),
            builder.getI64IntegerAttr(fusion.getNumResults()),
            builder.getTypeArrayAttr(emitted->operandTypes),
            builder.getDenseI64ArrayAttr(emitted->operandExtents),
            builder.getI64IntegerAttr(emitted->flopsPerElement),
            emitted->rowLength ? builder.getI64IntegerAttr(emitted->rowLength)
                               : IntegerAttr(),
            emitted->rowBlock ? builder.getI64IntegerAttr(emitted->rowBlock)
                              : IntegerAttr(),
            emitted->dropouts ? builder.getI64IntegerAttr(emitted->dropouts)
                              : IntegerAttr());
        generated = FlatSymbolRefAttr::get(builder.getContext(), name);
        kernel = "fused";
      }
      // The op's own (inherent) attributes are the kernel's parameters.
      // Discardable ones are not: the `mt.` ones are the passes'
      // annotations, of which the schedule's phase and microbatch become
      // the kernel's (typed) trace attributes, and any other (a user's
      // `user.tag = "x"`) describes the op to someone else (a string
      // became a parameter the artifact cannot encode, an integer one the
      // runtime ignored).
      SmallVector<NamedAttribute> params;
      // (Operand and result segment sizes describe the op, not the
      // kernel: its operand counts say them.)
      std::optional<RegisteredOperationName> info = op->getRegisteredInfo();
      // (Nor is the grid an exchange names: `grid_axis` says it.)
      for (NamedAttribute attr : op->getAttrs())
        if (info &&
            llvm::is_contained(info->getAttributeNames(), attr.getName()) &&
            attr.getName() != "operandSegmentSizes" &&
            attr.getName() != "resultSegmentSizes" &&
            !isa<SymbolRefAttr>(attr.getValue()))
          params.push_back(attr);
      // The runtime finds a multi_adamw's copies by their count (its
      // operands are one list).
      if (auto multi = dyn_cast<MultiAdamWOp>(op);
          multi && !multi.getCopies().empty())
        params.push_back(builder.getNamedAttr(
            "copies",
            builder.getI64IntegerAttr(int64_t(multi.getCopies().size()))));
      // A routing with a capacity states it for this shape of tokens (the
      // factor alone would leave the runtime to redo the compiler's
      // arithmetic).
      if (auto route = dyn_cast<MoeRouteOp>(op);
          route && route.getCapacityFactor()) {
        RankedTensorType choices = route.getExperts().getType();
        int64_t k = choices.getShape().back();
        params.push_back(builder.getNamedAttr(
            "capacity",
            builder.getI64IntegerAttr(expertCapacity(
                choices.getNumElements() / k, k, int64_t(route.getNumExperts()),
                route.getCapacityFactor()->convertToDouble()))));
      }
      if (auto collective = collectiveKernel(op, builder))
        std::tie(kernel, params) = *collective;
      // ZeRO's padding to equal pieces, and its cut after a gather: the
      // source's elements, then zeros to the result's length.
      if (isa<tensor::PadOp, tensor::ExtractSliceOp>(op)) {
        kernel = "copy_prefix";
        params.clear();
      }
      if (failed(checkMaskIndicesFit(op, gridShape)) ||
          failed(checkExpertRanks(op, gridShape)))
        return failure();
      addRankParams(op, gridShape, builder, params);
      if (auto fusion = dyn_cast<FusionOp>(op)) {
        addFusedDropoutParams(fusion, gridShape, builder, params);
        // A fused cross-entropy of a padded vocabulary states its true
        // size, as the unfused kernels do (the runtime checks the data's
        // tokens against it).
        for (Operation &inner : fusion.getBody().front())
          if (auto size = inner.getAttrOfType<IntegerAttr>(
                  MTDialect::getVocabSizeAttrName());
              size && isa<CrossEntropyOp, CrossEntropyGradOp>(inner)) {
            params.push_back(builder.getNamedAttr("vocab_size", size));
            break;
          }
      }
      auto phase = op->getAttrOfType<StringAttr>(MTDialect::getPhaseAttrName());
      if (phase)
        currentPhase = phase;
      else if (!scheduled && trainingStep)
        phase = currentPhase;
      auto micro =
          op->getAttrOfType<IntegerAttr>(MTDialect::getMicrobatchAttrName());
      auto chunk =
          op->getAttrOfType<IntegerAttr>(MTDialect::getChunkAttrName());
      // The runtime op's layer is an i64, whatever type `mt.layer` had.
      IntegerAttr layer;
      if (std::optional<int64_t> index = MTDialect::getLayer(op))
        layer = builder.getI64IntegerAttr(*index);
      mtrt::KernelOp::create(builder, op->getLoc(),
                             builder.getStringAttr(kernel), ins, outs,
                             builder.getDictionaryAttr(params), phase, micro,
                             chunk, layer, generated);
      ++numKernels;
    }
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      auto role = function.getResultAttrOfType<StringAttr>(
          index, MTDialect::getOutputAttrName());
      if (role)
        mtrt::OutputOp::create(builder, ret.getLoc(), role, bufferFor(value));
    }
    return success();
  }

  /// Rejects ops the runtime has no kernel for, before anything is emitted.
  LogicalResult checkLowerable(Operation *op) {
    if (isa<tensor::CollapseShapeOp, tensor::ExpandShapeOp, tensor::EmptyOp>(
            op))
      return success();
    // ZeRO's padding of a flat tensor with zeros at its end, and the cut of
    // the padding after a gather (mt-parallelize): the runtime's
    // copy_prefix.
    if (auto pad = dyn_cast<tensor::PadOp>(op)) {
      Value value = pad.getConstantPaddingValue();
      if (pad.getSourceType().getRank() != 1 || !pad.hasZeroLowPad() ||
          !pad.getResultType().hasStaticShape() || !value ||
          !matchPattern(value, m_AnyZeroFloat()))
        return op->emitOpError()
               << "cannot be lowered to the runtime: only a rank-1 tensor "
                  "padded with zeros at its end is supported";
      return success();
    }
    if (auto slice = dyn_cast<tensor::ExtractSliceOp>(op)) {
      if (slice.getSourceType().getRank() != 1 ||
          slice.getResultType().getRank() != 1 ||
          !slice.getResultType().hasStaticShape() ||
          !isZeroInteger(slice.getMixedOffsets()[0]) ||
          !isOneInteger(slice.getMixedStrides()[0]))
        return op->emitOpError()
               << "cannot be lowered to the runtime: only the leading "
                  "elements of a rank-1 tensor can be extracted";
      return success();
    }
    if (isa<shard::SendOp, shard::RecvOp>(op)) {
      auto tag =
          op->getAttrOfType<IntegerAttr>(MTDialect::getTransferTagAttrName());
      bool hasPeer = isa<shard::SendOp>(op)
                         ? cast<shard::SendOp>(op).getDestination().size() == 1
                         : cast<shard::RecvOp>(op).getSource() &&
                               cast<shard::RecvOp>(op).getSource()->size() == 1;
      if (!tag || !hasPeer)
        return op->emitOpError()
               << "cannot be lowered to the runtime: a pipeline transfer needs "
                  "one peer stage and an '"
               << MTDialect::getTransferTagAttrName()
               << "' (run mt-pipeline to create transfers)";
      return success();
    }
    if (auto constant = dyn_cast<arith::ConstantOp>(op)) {
      auto type = dyn_cast<RankedTensorType>(constant.getType());
      if (isa<SplatElementsAttr>(constant.getValue()) && type &&
          isa<FloatType>(type.getElementType()))
        return success();
      return op->emitOpError()
             << "cannot be lowered to the runtime: only splat float tensor "
                "constants are supported, got "
             << (type && !isa<SplatElementsAttr>(constant.getValue())
                     ? "a non-splat "
                     : "")
             << constant.getType();
    }
    if (isa<shard::AllReduceOp, shard::ReduceScatterOp, shard::AllGatherOp,
            shard::AllSliceOp>(op)) {
      auto axes = op->getAttrOfType<DenseI16ArrayAttr>("grid_axes");
      if (!axes || axes.size() != 1)
        return op->emitOpError()
               << "cannot be lowered to the runtime: collectives over exactly "
                  "one grid axis are supported";
      auto reduction = op->getAttrOfType<shard::ReductionKindAttr>("reduction");
      if (reduction && reduction.getValue() != shard::ReductionKind::Sum &&
          reduction.getValue() != shard::ReductionKind::Average)
        return op->emitOpError() << "cannot be lowered to the runtime: only "
                                    "sum and average reductions are supported";
      return success();
    }
    if (!isa<MTDialect>(op->getDialect()))
      return op->emitOpError() << "cannot be lowered to the runtime";
    auto needsStream = [&](double probability,
                           IntegerAttr stream) -> LogicalResult {
      if (probability == 0.0 || stream)
        return success();
      return op->emitOpError() << "has no rng_stream: run mt-autodiff before "
                                  "mt-lower-to-runtime";
    };
    if (auto loss = dyn_cast<CrossEntropyOp>(op);
        loss && loss.getType().getRank() != 0)
      return op->emitOpError()
             << "cannot be lowered to the runtime: per-position losses are "
                "computed only inside an mt.fusion with the gradient (run "
                "mt-fuse); the cross_entropy kernel returns the mean";
    if (getNormGradRowBlock(op))
      return op->emitOpError()
             << "cannot be lowered to the runtime: partial sums per block of "
                "rows (row_block) are computed only inside an mt.fusion (run "
                "mt-fuse); the host kernel sums all rows";
    if (auto dropout = dyn_cast<DropoutOp>(op))
      return needsStream(dropout.getProbability().convertToDouble(),
                         dropout.getRngStreamAttr());
    if (auto fusion = dyn_cast<FusionOp>(op))
      for (Operation &inner : fusion.getBody().front().without_terminator())
        if (auto dropout = dyn_cast<DropoutOp>(inner);
            dropout &&
            failed(needsStream(dropout.getProbability().convertToDouble(),
                               dropout.getRngStreamAttr())))
          return failure();
    if (auto attention = dyn_cast<AttentionOp>(op))
      return needsStream(attention.getDropout().convertToDouble(),
                         attention.getRngStreamAttr());
    if (auto attention = dyn_cast<QKVAttentionOp>(op))
      return needsStream(attention.getDropout().convertToDouble(),
                         attention.getRngStreamAttr());
    if (auto attention = dyn_cast<MergedAttentionOp>(op))
      return needsStream(attention.getDropout().convertToDouble(),
                         attention.getRngStreamAttr());
    return success();
  }

  void printPlan(StringRef name, ArrayRef<Allocation> allocs,
                 int64_t persistentBytes, int64_t arena) {
    MemoryReport report;
    for (const Allocation &alloc : allocs) {
      if (alloc.kind == "param")
        report.params += alloc.bytes;
      else if (alloc.kind == "param_copy")
        report.parameterCopies += alloc.bytes;
      else if (alloc.kind == "exp_avg" || alloc.kind == "exp_avg_sq")
        report.optimizerState += alloc.bytes;
      else if (alloc.kind == "input")
        report.inputs += alloc.bytes;
      else if (alloc.kind == "gradient")
        report.gradients += alloc.bytes;
      else
        report.activations += alloc.bytes;
    }
    llvm::errs() << "memory plan @" << name << "\n"
                 << "  parameters: " << report.params << " bytes\n";
    if (report.parameterCopies)
      llvm::errs() << "  16-bit parameter copies: " << report.parameterCopies
                   << " bytes\n";
    llvm::errs() << "  optimizer state: " << report.optimizerState << " bytes\n"
                 << "  inputs: " << report.inputs << " bytes\n"
                 << "  persistent (aligned): " << persistentBytes << " bytes\n"
                 << "  gradients (sum): " << report.gradients << " bytes\n"
                 << "  activations and workspace (sum): " << report.activations
                 << " bytes\n"
                 << "  transient peak: " << arena - persistentBytes
                 << " bytes\n"
                 << "  planned peak: " << arena << " bytes\n";
  }
};
} // namespace
