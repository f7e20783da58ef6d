//===- Parallelize.cpp - Data parallelism and ZeRO on a training step -----===//
//
// A training step is turned into the SPMD program of every rank:
//
//   1. the batch of the data inputs is split across `dp` and every op is
//      retyped for the local share (ShapeInference);
//   2. the loss is averaged across `dp`;
//   3. gradients are all-reduced (ZeRO 0, 1) or reduce-scattered (ZeRO 2, 3)
//      and the optimizer runs on the rank's piece of every flattened
//      parameter (ZeRO >= 1), whose updated pieces are all-gathered (ZeRO 1,
//      2) or kept as pieces (ZeRO 3, which all-gathers parameters before
//      their uses in the forward and in the backward pass). A flattened
//      tensor that dp does not divide is padded with zeros to the next
//      multiple first (tensor.pad), as Megatron-LM's distributed optimizer
//      pads its buffers, and a gathered one is cut back (extract_slice).
//
// Every communication decision is made here explicitly, not left to
// sharding propagation: DESIGN.md explains why.
//
//===----------------------------------------------------------------------===//

#include "passes/Parallelize/Passes.h"

#include "dialects/MT/IR/MTOps.h"
#include "dialects/MT/IR/TrainingSteps.h"
#include "dialects/MT/Transforms/ShardingInterfaceImpl.h"
#include "megatron/Analysis/ShapeInference.h"
#include "megatron/Utils/FunctionAttributeEditor.h"
#include "passes/Parallelize/ExpertParallel.h"
#include "passes/Parallelize/PadVocabulary.h"
#include "passes/Parallelize/TensorParallel.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseSet.h"

#define DEBUG_TYPE "mt-parallelize"

namespace mlir::mt {
#define GEN_PASS_DEF_PARALLELIZEPASS
#include "passes/Parallelize/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

constexpr StringLiteral kGridName = "grid";
/// Grid axes: data-parallel ranks vary along axis 0, tensor-parallel ranks
/// along axis 1 (fastest in the row-major rank order, as in Megatron-LM).
constexpr int16_t kDataAxis = 0;
constexpr int16_t kTensorAxis = 1;

RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

struct ParallelizePass : public mt::impl::ParallelizePassBase<ParallelizePass> {
  using ParallelizePassBase::ParallelizePassBase;

  void getDependentDialects(DialectRegistry &registry) const override {
    ParallelizePassBase::getDependentDialects(registry);
    // The partition of the tensor-parallel step needs the ops' models.
    registerShardingInterfaceExternalModels(registry);
  }

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> steps = getTrainingSteps(module);
    for (func::FuncOp function : steps)
      if (failed(checkNotParallelized(function)))
        return signalPassFailure();
    if (failed(validateOptions(module)))
      return signalPassFailure();
    if (std::string request = requested();
        !request.empty() &&
        failed(requireTrainingStep(module, "mt-parallelize", request)))
      return signalPassFailure();
    // The vocabulary first, as Megatron-LM pads it: to a multiple of
    // make-vocab-size-divisible-by x tp, which tp's row split needs.
    for (func::FuncOp function : steps)
      if (failed(padVocabulary(function, vocabDivisibleBy * tp)))
        return signalPassFailure();
    if (dp == 1 && tp == 1)
      return;
    if (steps.empty())
      return;
    // The grid the collectives run on: created here, or an existing one of
    // exactly this shape.
    SmallVector<int64_t> shape = {dp.getValue(), tp.getValue()};
    if (auto grid = module.lookupSymbol<shard::GridOp>(kGridName)) {
      if (grid.getShape() != ArrayRef<int64_t>(shape)) {
        InFlightDiagnostic diag = grid.emitOpError() << "has shape ";
        llvm::interleave(grid.getShape(), diag, "x");
        diag << " but mt-parallelize needs " << dp.getValue() << "x"
             << tp.getValue() << " (dp x tp)";
        return signalPassFailure();
      }
    } else {
      OpBuilder builder(module.getBodyRegion());
      shard::GridOp::create(builder, module.getLoc(), kGridName, shape);
    }
    for (func::FuncOp function : steps)
      if (failed(parallelize(function)))
        return signalPassFailure();
  }

  /// The options that ask for a change, as the user would write them (empty
  /// for the defaults, which change nothing).
  std::string requested() const {
    std::string request;
    auto add = [&](StringRef option, std::string value) {
      request += (request.empty() ? "" : " ") + option.str() + "=" + value;
    };
    if (dp > 1)
      add("dp", std::to_string(dp));
    if (tp > 1)
      add("tp", std::to_string(tp));
    if (sp)
      add("sp", "true");
    if (zero > 0)
      add("zero", std::to_string(zero));
    if (ep > 1)
      add("ep", std::to_string(ep));
    if (vocabDivisibleBy > 1)
      add("make-vocab-size-divisible-by", std::to_string(vocabDivisibleBy));
    if (!gradsInFp32)
      add("accumulate-allreduce-grads-in-fp32", "false");
    return request;
  }

  /// A step holding collectives is already some rank's share: splitting
  /// its batch and weights again would silently train a different model.
  static LogicalResult checkNotParallelized(func::FuncOp function) {
    WalkResult parallel = function.walk([&](Operation *op) {
      if (!isa<shard::ShardDialect>(op->getDialect()))
        return WalkResult::advance();
      // A pipeline stage's transfers: the passes ran out of order.
      if (isa<shard::SendOp, shard::RecvOp>(op))
        op->emitError() << "mt-parallelize: @" << function.getName()
                        << " is already a pipeline stage (it holds '"
                        << op->getName()
                        << "'); run mt-parallelize before mt-pipeline, as "
                           "--mt-train-pipeline does";
      else
        op->emitError() << "mt-parallelize: @" << function.getName()
                        << " is already parallelized (it holds '"
                        << op->getName()
                        << "'); apply mt-parallelize once, to a step for one "
                           "device";
      return WalkResult::interrupt();
    });
    return failure(parallel.wasInterrupted());
  }

  LogicalResult validateOptions(ModuleOp module) {
    auto error = [&]() { return module.emitError() << "mt-parallelize: "; };
    if (dp < 1)
      return error() << "dp must be positive, got " << dp.getValue();
    if (tp < 1)
      return error() << "tp must be positive, got " << tp.getValue();
    if (vocabDivisibleBy < 1)
      return error() << "make-vocab-size-divisible-by must be positive, got "
                     << vocabDivisibleBy.getValue();
    if (int64_t multiple; __builtin_mul_overflow(int64_t(vocabDivisibleBy),
                                                 int64_t(tp), &multiple))
      return error() << "make-vocab-size-divisible-by "
                     << vocabDivisibleBy.getValue() << " x tp " << tp.getValue()
                     << " overflows int64";
    if (zero < 0 || zero > 3)
      return error() << "zero must be 0, 1, 2 or 3, got " << zero.getValue();
    if (sp && tp == 1)
      return error() << "sp (sequence parallelism) needs tp > 1";
    if (ep < 1)
      return error() << "ep must be positive, got " << ep.getValue();
    // Megatron-LM carves the expert-parallel groups out of the
    // data-parallel ranks: groups of ep consecutive ones, each holding
    // every expert once.
    if (ep > 1 && dp % ep != 0)
      return error() << "ep=" << ep.getValue()
                     << " does not divide dp=" << dp.getValue()
                     << " (the experts are split over groups of ep "
                        "data-parallel ranks)";

    // It moves the data-parallel reduction of the gradients (and their
    // accumulation over microbatches with it) to 16 bits: with one
    // data-parallel rank there is none, and microbatches alone still
    // accumulate in fp32.
    if (!gradsInFp32 && dp == 1)
      return error() << "accumulate-allreduce-grads-in-fp32=false reduces "
                        "the data-parallel gradients in 16 bits; with dp=1 "
                        "there is no such reduction (the option would be "
                        "ignored)";
    if (tp == 1)
      return success();
    // Tensor parallelism splits attention by heads (the projections' split
    // dimensions are checked against their roles when they are pinned).
    // Grouped-query attention: the key/value heads are split across the
    // tensor-parallel ranks with their query heads. Megatron-LM would
    // replicate them when tp exceeds their number; that is not built.
    auto kvHeadsSplit = [&](Operation *op, int64_t kvHeads) {
      if (kvHeads % tp == 0)
        return true;
      op->emitOpError() << "has " << kvHeads
                        << " key/value heads, not divisible by tp "
                        << tp.getValue()
                        << " (key/value heads are split across "
                           "tensor-parallel ranks, not replicated)";
      return false;
    };
    WalkResult walk = module.walk([&](Operation *op) {
      if (auto repeat = dyn_cast<RepeatKVOp>(op))
        if (!kvHeadsSplit(op, repeat.getInput().getType().getDimSize(1)))
          return WalkResult::interrupt();
      if (auto attention = dyn_cast<AttentionOp>(op)) {
        int64_t heads = attention.getQuery().getType().getDimSize(1);
        if (heads % tp != 0) {
          attention.emitOpError()
              << "has " << heads << " heads, not divisible by tp "
              << tp.getValue();
          return WalkResult::interrupt();
        }
        // Sequence parallelism splits the sequence between the
        // tensor-parallel ranks outside attention and the MLP.
        int64_t sequence = attention.getQuery().getType().getDimSize(2);
        if (sp && sequence % tp != 0) {
          attention.emitOpError()
              << "attends over a sequence of " << sequence
              << ", not divisible by tp " << tp.getValue()
              << " (sequence parallelism, sp, splits it between the "
                 "tensor-parallel ranks)";
          return WalkResult::interrupt();
        }
        // Grouped keys and values written as such (not through repeat_kv)
        // split with their query heads too.
        if (!kvHeadsSplit(op, attention.getKey().getType().getDimSize(1)))
          return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Batch split
  //===--------------------------------------------------------------------===//

  LogicalResult splitBatch(func::FuncOp function) {
    Block &body = function.getBody().front();
    DenseSet<Value> split;
    for (BlockArgument arg : body.getArguments()) {
      auto role = function.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), MTDialect::getInputAttrName());
      if (!role || (role.getValue() != "tokens" && role.getValue() != "labels"))
        continue;
      RankedTensorType type = typeOf(arg);
      int64_t batch = type.getDimSize(0);
      if (batch % dp != 0)
        return function.emitOpError()
               << "dp " << dp.getValue()
               << " does not divide the micro-batch of " << batch
               << " sequences (argument '" << role.getValue() << "')";
      SmallVector<int64_t> shape(type.getShape());
      shape[0] /= dp;
      arg.setType(RankedTensorType::get(shape, type.getElementType()));
      split.insert(arg);
    }
    for (Operation &op : body.without_terminator()) {
      if (failed(splitSameTypeOperands(
              &op, split, dp, "over dp " + std::to_string(dp) + " ranks")))
        return failure();
      FailureOr<SmallVector<Type>> types = inferResultTypes(&op);
      if (failed(types))
        return failure();
      for (auto [result, type] : llvm::zip_equal(op.getResults(), *types))
        if (result.getType() != type) {
          result.setType(type);
          split.insert(result);
        }
      // Masks are drawn over the single-device tensor: offset the random
      // index by the rank's share of the batch.
      if (isa<DropoutOp, AttentionOp, AttentionGradOp>(op) &&
          split.contains(op.getOperand(0)))
        op.setAttr(MTDialect::getRngBatchAxisAttrName(),
                   Builder(&op).getI64IntegerAttr(kDataAxis));
    }
    return success();
  }

  //===--------------------------------------------------------------------===//
  // Collectives
  //===--------------------------------------------------------------------===//

  /// States that the op defining `value` runs once per step, after the
  /// flush, not once per microbatch.
  static void markOptimizerPhase(Value value) {
    Operation *op = value.getDefiningOp();
    op->setAttr(MTDialect::getPhaseAttrName(),
                StringAttr::get(op->getContext(), "optimizer"));
  }

  /// markOptimizerPhase for a gradient's reduction and the views and the
  /// padding it reduces (a reduce-scatter's flattened input).
  static void markReductionOptimizerPhase(Value reduced) {
    markOptimizerPhase(reduced);
    for (Operation *flat =
             reduced.getDefiningOp()->getOperand(0).getDefiningOp();
         flat && isa<tensor::CollapseShapeOp, tensor::PadOp>(flat);
         flat = flat->getOperand(0).getDefiningOp())
      markOptimizerPhase(flat->getResult(0));
  }

  Value allReduce(OpBuilder &b, Location loc, Value value,
                  shard::ReductionKind kind) {
    ++numCollectives;
    return shard::AllReduceOp::create(b, loc, value.getType(), kGridName,
                                      ArrayRef<int16_t>{kDataAxis}, value,
                                      kind);
  }

  /// The flat form of `type`, or one of its `parts` equal pieces: a
  /// length that `parts` does not divide is padded to the next multiple.
  static RankedTensorType flatType(RankedTensorType type, int64_t parts = 1) {
    return RankedTensorType::get({(type.getNumElements() + parts - 1) / parts},
                                 type.getElementType());
  }

  /// `flat` padded with zeros to `parts` equal pieces (itself when `parts`
  /// divides it). The padding is zero in every gradient, parameter and
  /// moment piece, so AdamW keeps it zero and it adds nothing to the norm.
  Value padForPieces(OpBuilder &b, Location loc, Value flat, int64_t parts) {
    RankedTensorType type = typeOf(flat);
    int64_t padded = flatType(type, parts).getNumElements() * parts;
    if (padded == type.getNumElements())
      return flat;
    auto paddedType = RankedTensorType::get({padded}, type.getElementType());
    auto pad =
        tensor::PadOp::create(b, loc, paddedType, flat, ArrayRef<int64_t>{0},
                              ArrayRef<int64_t>{padded - type.getNumElements()},
                              ValueRange{}, ValueRange{});
    // The padding value is made inside the pad's region, so nothing at the
    // step's level but the pad itself: mt-pipeline places, and the lowering
    // emits, the step's top-level ops only, and has no kernel for a scalar
    // constant.
    OpBuilder::InsertionGuard guard(b);
    b.createBlock(&pad.getRegion(), {}, {b.getIndexType()}, {loc});
    auto zero = arith::ConstantOp::create(
        b, loc, b.getFloatAttr(type.getElementType(), 0.0));
    tensor::YieldOp::create(b, loc, zero.getResult());
    return pad.getResult();
  }

  /// The first `length` elements of a gathered, padded `flat` tensor.
  static Value cutPadding(OpBuilder &b, Location loc, Value flat,
                          int64_t length) {
    if (typeOf(flat).getNumElements() == length)
      return flat;
    return tensor::ExtractSliceOp::create(
        b, loc, flat, ArrayRef<OpFoldResult>{b.getIndexAttr(0)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(length)},
        ArrayRef<OpFoldResult>{b.getIndexAttr(1)});
  }

  Value flatten(OpBuilder &b, Location loc, Value value) {
    RankedTensorType type = typeOf(value);
    if (type.getRank() == 1)
      return value;
    ReassociationIndices all;
    for (int64_t dim = 0; dim < type.getRank(); ++dim)
      all.push_back(dim);
    return tensor::CollapseShapeOp::create(b, loc, flatType(type), value,
                                           ArrayRef<ReassociationIndices>{all});
  }

  Value unflatten(OpBuilder &b, Location loc, Value value,
                  RankedTensorType type) {
    if (type.getRank() == 1)
      return value;
    ReassociationIndices all;
    for (int64_t dim = 0; dim < type.getRank(); ++dim)
      all.push_back(dim);
    return tensor::ExpandShapeOp::create(b, loc, type, value,
                                         ArrayRef<ReassociationIndices>{all});
  }

  /// The rank's piece of a flat tensor replicated over dp.
  Value slicePiece(OpBuilder &b, Location loc, Value flat) {
    flat = padForPieces(b, loc, flat, dp);
    return shard::AllSliceOp::create(b, loc, flatType(typeOf(flat), dp),
                                     kGridName, ArrayRef<int16_t>{kDataAxis},
                                     flat, llvm::APInt(64, 0));
  }

  Value gatherPieces(OpBuilder &b, Location loc, Value piece) {
    ++numCollectives;
    RankedTensorType type = typeOf(piece);
    return shard::AllGatherOp::create(
        b, loc,
        RankedTensorType::get({type.getNumElements() * dp},
                              type.getElementType()),
        kGridName, ArrayRef<int16_t>{kDataAxis}, piece, llvm::APInt(64, 0));
  }

  Value reduceScatter(OpBuilder &b, Location loc, Value flat) {
    ++numCollectives;
    flat = padForPieces(b, loc, flat, dp);
    return shard::ReduceScatterOp::create(
        b, loc, flatType(typeOf(flat), dp), kGridName,
        ArrayRef<int16_t>{kDataAxis}, flat, shard::ReductionKind::Average,
        llvm::APInt(64, 0));
  }

  //===--------------------------------------------------------------------===//
  // ZeRO over an expert's replicas
  //===--------------------------------------------------------------------===//

  /// With fewer expert-parallel ranks than data-parallel ones, each expert
  /// lives on dp / ep ranks (every ep-th: Megatron-LM's expert data
  /// parallel group). ZeRO splits its optimizer state (and gradients,
  /// parameters) over them as Megatron-LM's distributed optimizer does;
  /// with ep = dp an expert has one rank and stays whole there.
  int64_t expertReplicas() const { return dp / ep; }
  bool shardsExperts() const { return zero > 0 && ep > 1 && ep < dp; }

  /// As slicePiece, gatherPieces and reduceScatter (a sum), over an
  /// expert's replicas.
  Value sliceExpertPiece(OpBuilder &b, Location loc, Value flat) {
    flat = padForPieces(b, loc, flat, expertReplicas());
    return StridedAllSliceOp::create(
        b, loc, flatType(typeOf(flat), expertReplicas()), flat, kGridName,
        int64_t(kDataAxis), int64_t(ep));
  }

  Value gatherExpertPieces(OpBuilder &b, Location loc, Value piece) {
    ++numCollectives;
    RankedTensorType type = typeOf(piece);
    return StridedAllGatherOp::create(
        b, loc,
        RankedTensorType::get({type.getNumElements() * expertReplicas()},
                              type.getElementType()),
        piece, kGridName, int64_t(kDataAxis), int64_t(ep));
  }

  /// slicePiece and gatherPieces, or their expert forms for an expert.
  Value slicePieceOf(bool expert, OpBuilder &b, Location loc, Value flat) {
    return expert ? sliceExpertPiece(b, loc, flat) : slicePiece(b, loc, flat);
  }
  Value gatherPiecesOf(bool expert, OpBuilder &b, Location loc, Value piece) {
    return expert ? gatherExpertPieces(b, loc, piece)
                  : gatherPieces(b, loc, piece);
  }

  Value reduceScatterExpert(OpBuilder &b, Location loc, Value flat) {
    ++numCollectives;
    flat = padForPieces(b, loc, flat, expertReplicas());
    return StridedReduceScatterOp::create(
        b, loc, flatType(typeOf(flat), expertReplicas()), flat, kGridName,
        int64_t(kDataAxis), int64_t(ep));
  }

  //===--------------------------------------------------------------------===//
  // The step
  //===--------------------------------------------------------------------===//

  LogicalResult parallelize(func::FuncOp function) {
    if (!function.getBody().hasOneBlock())
      return function.emitOpError()
             << "mt-parallelize needs a single-block function";
    // Tensor parallelism first: data parallelism and ZeRO then work on the
    // rank's tensor-parallel share of every parameter.
    if (tp > 1) {
      if (failed(
              annotateTensorParallel(function, tp, sp, kTensorAxis, kGridName)))
        return failure();
      OpPassManager partition(func::FuncOp::getOperationName());
      partition.addPass(shard::createShardingPropagation());
      partition.addPass(shard::createPartition());
      if (failed(runPipeline(partition, function)))
        return failure();
      // A value split along one dimension and needed split along another
      // partitions to an all-to-all, which the runtime has no collective
      // for (Megatron's layouts never need one: a replicated tensor
      // constant standing where a split weight goes does, under sp). Said
      // here, where what needs it is known, not in the lowering.
      WalkResult allToAll = function.walk([&](shard::AllToAllOp op) {
        // The op that reads it, past the partition's own shard ops and
        // casts.
        Operation *user = op;
        while (user && (isa<shard::ShardDialect>(user->getDialect()) ||
                        isa<tensor::CastOp>(user)))
          user = user->use_empty() ? nullptr
                                   : *user->getResult(0).getUsers().begin();
        Operation *producer = op.getInput().getDefiningOp();
        InFlightDiagnostic diagnostic =
            (user ? user : op.getOperation())->emitError()
            << "mt-parallelize: under tp=" << int64_t(tp) << (sp ? " sp=1" : "")
            << ", '" << (user ? user : op.getOperation())->getName()
            << "' needs its operand resplit from one dimension to "
               "another (an all-to-all), which the runtime has no collective "
               "for; a tensor constant used as a weight is kept replicated "
               "(make it a parameter, or compile without sp)";
        if (producer)
          diagnostic.attachNote(producer->getLoc())
              << "the operand is '" << producer->getName() << "' here";
        return WalkResult::interrupt();
      });
      if (allToAll.wasInterrupted())
        return failure();
      int64_t count = 0;
      finishTensorParallel(function, count);
      numCollectives += count;
    }
    if (dp > 1 && failed(parallelizeData(function)))
      return failure();
    return success();
  }

  /// Under fp16's loss scaling (mt-autodiff's `loss_scale` input), each
  /// data-parallel rank's loss is the mean over its 1/dp of the batch, so
  /// its backward seeded with the scale gives every activation gradient dp
  /// times one device's: 16-bit values overflow at 1/dp of the scale one
  /// device tolerates, and the job skips steps one device applies. (So does
  /// Megatron-LM, whose ranks also seed their local mean with the scale.)
  /// Every use of the scale reads it divided by dp instead: the seed gives
  /// one device's per-token gradients, and the ranks' average, divided by
  /// the same value in the optimizer, is the gradient. No layout then
  /// overflows before one device does (a rank's weight gradients sum 1/dp
  /// of the tokens, so one may overflow later). Each use gets its own
  /// mt.scale in its phase, for mt-pipeline to place with it.
  void divideLossScale(func::FuncOp function) {
    for (BlockArgument arg : function.getArguments()) {
      auto role = function.getArgAttrOfType<StringAttr>(
          arg.getArgNumber(), MTDialect::getInputAttrName());
      if (!role || role.getValue() != "loss_scale")
        continue;
      for (OpOperand &use : llvm::make_early_inc_range(arg.getUses())) {
        Operation *user = use.getOwner();
        OpBuilder builder(user);
        auto divided = ScaleOp::create(builder, user->getLoc(), arg,
                                       builder.getF64FloatAttr(1.0 / dp));
        if (Attribute phase = user->getAttr(MTDialect::getPhaseAttrName()))
          divided->setAttr(MTDialect::getPhaseAttrName(), phase);
        use.set(divided);
      }
    }
  }

  /// Data parallelism and ZeRO.
  LogicalResult parallelizeData(func::FuncOp function) {
    Block &body = function.getBody().front();
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    if (failed(splitBatch(function)))
      return failure();
    divideLossScale(function);
    // Before the updates are collected: the other ranks' experts' go.
    llvm::DenseSet<Operation *> expertUpdates;
    if (ep > 1 && failed(distributeExperts(function, ep, kDataAxis, kGridName,
                                           expertUpdates)))
      return failure();

    auto globalNorms = llvm::to_vector(body.getOps<GlobalNormOp>());
    auto updates = llvm::to_vector(body.getOps<AdamWOp>());
    // After tensor parallelism the norm is already split into sums of
    // squares (mt.sum_squares ... mt.sqrt); otherwise one mt.global_norm.
    auto sqrts = llvm::to_vector(body.getOps<SqrtOp>());
    bool splitNorm = globalNorms.empty() && sqrts.size() == 1;
    if (globalNorms.size() != 1 && !splitNorm)
      return function.emitOpError()
             << "mt-parallelize needs a training step with one mt.global_norm "
                "(run mt-autodiff first)";
    GlobalNormOp globalNorm = splitNorm ? GlobalNormOp() : globalNorms.front();

    // Averaged loss: what a single device would report.
    for (auto [index, value] : llvm::enumerate(ret.getOperands())) {
      auto role = function.getResultAttrOfType<StringAttr>(
          index, MTDialect::getOutputAttrName());
      if (!role || role.getValue() != "loss")
        continue;
      OpBuilder b(ret);
      Value average =
          allReduce(b, ret.getLoc(), value, shard::ReductionKind::Average);
      markOptimizerPhase(average);
      ret.setOperand(index, average);
    }

    // Each gradient is reduced as soon as it is complete, right after the op
    // that computes it: under ZeRO-2 and 3 the full gradient then dies at
    // once instead of every full gradient living until the optimizer, and
    // the communication can overlap the rest of the backward pass.
    SmallVector<Value> reduced;
    // The fp32 widenings the 16-bit reductions replace; erased once nothing
    // reads them.
    SmallVector<CastOp> unusedWidenings;
    auto eraseUnusedWidenings = [&] {
      for (CastOp widen : unusedWidenings)
        if (widen->use_empty())
          widen->erase();
    };
    FunctionAttributeEditor attrs(function);
    // The rank's experts' gradients (ep): complete on their rank, every
    // rank's rows having come to it; their average over the ranks, as
    // every other gradient's, is their sum divided by dp.
    SmallVector<Value> expertGrads;
    for (AdamWOp update : updates) {
      Value grad = update.getGrad();
      OpBuilder g(function.getContext());
      g.setInsertionPointAfterValue(grad);
      Location gradLoc = grad.getLoc();
      if (expertUpdates.contains(update)) {
        // With fewer expert-parallel ranks than data-parallel ones, an
        // expert's replicas (every ep-th rank) sum their gradients first,
        // into pieces under ZeRO >= 2.
        Value summed = grad;
        if (shardsExperts() && zero >= 2) {
          summed = reduceScatterExpert(g, gradLoc, flatten(g, gradLoc, grad));
          markReductionOptimizerPhase(summed);
        } else if (ep < dp) {
          ++numCollectives;
          summed = StridedAllReduceOp::create(g, gradLoc, grad, kGridName,
                                              kDataAxis, int64_t(ep));
          markOptimizerPhase(summed);
        }
        Value average =
            ScaleOp::create(g, gradLoc, summed, g.getF64FloatAttr(1.0 / dp));
        markOptimizerPhase(average);
        reduced.push_back(average);
        expertGrads.push_back(average);
        continue;
      }
      // Without --accumulate-allreduce-grads-in-fp32, a gradient that
      // mixed precision widened from 16 bits (its cast back to the fp32
      // master) is reduced, and accumulated over microbatches, before the
      // widening: the cast moves after the reduction, into the optimizer.
      // A gradient that is not one widening (a tied parameter's sum of
      // two) is narrowed first.
      Type low = gradsInFp32 ? Type() : castOnlyType(update.getParam());
      CastOp widen = grad.getDefiningOp<CastOp>();
      bool reduce16 = bool(low);
      if (widen && typeOf(widen.getInput()).getElementType() != low)
        widen = CastOp();
      Value toReduce = grad;
      if (reduce16 && widen) {
        toReduce = widen.getInput();
        g.setInsertionPointAfterValue(toReduce);
      } else if (reduce16) {
        toReduce = CastOp::create(
            g, gradLoc, RankedTensorType::get(typeOf(grad).getShape(), low),
            grad);
      }
      Value result =
          zero >= 2
              ? reduceScatter(g, gradLoc, flatten(g, gradLoc, toReduce))
              : allReduce(g, gradLoc, toReduce, shard::ReductionKind::Average);
      // Reduced once per step, after the gradient is accumulated over the
      // microbatches (mt-pipeline reads this), and so are the views and the
      // padding a reduce-scatter reduces (ZeRO >= 2).
      if (zero >= 2)
        markReductionOptimizerPhase(result);
      else
        markOptimizerPhase(result);
      if (reduce16) {
        auto wide =
            CastOp::create(g, gradLoc,
                           RankedTensorType::get(typeOf(result).getShape(),
                                                 typeOf(grad).getElementType()),
                           result);
        markOptimizerPhase(wide.getResult());
        result = wide.getResult();
        if (widen)
          unusedWidenings.push_back(widen);
      }
      reduced.push_back(result);
    }
    if (splitNorm) {
      // Each gradient the sums of squares read is replaced by its reduced
      // value; pieces (ZeRO >= 2) also sum over the data-parallel ranks.
      for (auto [update, grad] : llvm::zip_equal(updates, reduced)) {
        Value old = update.getGrad();
        old.replaceUsesWithIf(grad, [](OpOperand &use) {
          return isa<SumSquaresOp>(use.getOwner());
        });
      }
      sumExpertSquaresOverRanks(body, expertGrads,
                                /*summedLater=*/zero >= 2,
                                /*pieces=*/shardsExperts() && zero >= 2);
      if (zero >= 2) {
        SqrtOp sqrt = sqrts.front();
        OpBuilder b(sqrt);
        sqrt.getInputMutable().assign(allReduce(
            b, sqrt.getLoc(), sqrt.getInput(), shard::ReductionKind::Sum));
      }
      for (auto [update, grad] : llvm::zip_equal(updates, reduced))
        if (failed(updateParameter(function, attrs, update, grad,
                                   expertUpdates.contains(update))))
          return failure();
      attrs.commit();
      eraseUnusedWidenings();
      if (zero > 0)
        gatherParametersBeforeUse(function);
      function.setFunctionType(FunctionType::get(function.getContext(),
                                                 body.getArgumentTypes(),
                                                 ret.getOperandTypes()));
      return success();
    }
    OpBuilder b(globalNorm);
    Location loc = globalNorm.getLoc();
    Value norm;
    if (zero >= 2) {
      // Pieces: the global norm sums their squares over the ranks (and so
      // the ranks' experts').
      Value local = SumSquaresOp::create(b, loc, reduced);
      norm = SqrtOp::create(
          b, loc, allReduce(b, loc, local, shard::ReductionKind::Sum));
      sumExpertSquaresOverRanks(body, expertGrads, /*summedLater=*/true,
                                /*pieces=*/shardsExperts());
    } else if (!expertGrads.empty()) {
      norm = SqrtOp::create(b, loc, SumSquaresOp::create(b, loc, reduced));
      sumExpertSquaresOverRanks(body, expertGrads, /*summedLater=*/false,
                                /*pieces=*/false);
    } else {
      norm = GlobalNormOp::create(b, loc, reduced);
    }
    globalNorm.getResult().replaceAllUsesWith(norm);
    globalNorm.erase();

    for (auto [update, grad] : llvm::zip_equal(updates, reduced))
      if (failed(updateParameter(function, attrs, update, grad,
                                 expertUpdates.contains(update))))
        return failure();
    attrs.commit();
    eraseUnusedWidenings();

    if (zero > 0)
      gatherParametersBeforeUse(function);

    function.setFunctionType(FunctionType::get(
        function.getContext(), body.getArgumentTypes(), ret.getOperandTypes()));
    return success();
  }

  /// Expert parallelism: each group of ep ranks holds every expert once,
  /// so a sum of squares reading the experts' gradients sums their part
  /// over the ranks (the replicated gradients' part once) and counts it
  /// once, not dp/ep times: sum_squares(others) + ep/dp *
  /// all_reduce(sum_squares(experts)). With `summedLater` (ZeRO >= 2,
  /// whose pieces are summed over the ranks after) the all-reduce is that
  /// later one's. With `pieces` the experts' gradients are ZeRO pieces
  /// over their replicas, each held by one rank: counted once without the
  /// scale.
  void sumExpertSquaresOverRanks(Block &body, ArrayRef<Value> expertGrads,
                                 bool summedLater, bool pieces) {
    if (expertGrads.empty())
      return;
    llvm::DenseSet<Value> ofExperts(expertGrads.begin(), expertGrads.end());
    for (SumSquaresOp sum : llvm::to_vector(body.getOps<SumSquaresOp>())) {
      SmallVector<Value> experts, others;
      for (Value input : sum.getInputs())
        (ofExperts.contains(input) ? experts : others).push_back(input);
      if (experts.empty())
        continue;
      OpBuilder b(sum);
      Location loc = sum.getLoc();
      Value total = SumSquaresOp::create(b, loc, experts);
      if (!summedLater)
        total = allReduce(b, loc, total, shard::ReductionKind::Sum);
      if (ep < dp && !pieces)
        total = ScaleOp::create(b, loc, total,
                                b.getF64FloatAttr(double(ep) / double(dp)));
      if (!others.empty())
        total =
            AddOp::create(b, loc, SumSquaresOp::create(b, loc, others), total);
      for (NamedAttribute attr : sum->getDiscardableAttrs())
        total.getDefiningOp()->setAttr(attr.getName(), attr.getValue());
      sum.getResult().replaceAllUsesWith(total);
      sum.erase();
    }
  }

  /// Marks argument or result `index` of `function` as a ZeRO piece.
  void markSharded(FunctionAttributeEditor &attrs, std::optional<unsigned> arg,
                   std::optional<unsigned> result, RankedTensorType full) {
    Builder b(full.getContext());
    auto shape = b.getDenseI64ArrayAttr(full.getShape());
    auto axis = b.getI64IntegerAttr(kDataAxis);
    // A tensor-parallel split is already described: the ZeRO piece is a
    // piece of it.
    if (arg && attrs.getArg(*arg, MTDialect::getShardDimAttrName())) {
      attrs.setArg(*arg, MTDialect::getPieceAxisAttrName(), axis);
      arg.reset();
    }
    if (result && attrs.getResult(*result, MTDialect::getShardDimAttrName())) {
      attrs.setResult(*result, MTDialect::getPieceAxisAttrName(), axis);
      result.reset();
    }
    if (arg) {
      attrs.setArg(*arg, MTDialect::getFullShapeAttrName(), shape);
      attrs.setArg(*arg, MTDialect::getShardAxisAttrName(), axis);
    }
    if (result) {
      attrs.setResult(*result, MTDialect::getFullShapeAttrName(), shape);
      attrs.setResult(*result, MTDialect::getShardAxisAttrName(), axis);
    }
  }

  /// Rewrites `update` to use the reduced gradient `grad`: unchanged for
  /// ZeRO 0, on the rank's pieces for ZeRO >= 1 (an expert's: over its
  /// replicas).
  LogicalResult updateParameter(func::FuncOp function,
                                FunctionAttributeEditor &attrs, AdamWOp update,
                                Value grad, bool expert) {
    // An expert without replicas (ep = dp) is whole on its one rank.
    if (zero == 0 || (expert && !shardsExperts())) {
      update.getGradMutable().assign(grad);
      return success();
    }
    auto ret = cast<func::ReturnOp>(function.getBody().front().getTerminator());
    auto param = dyn_cast<BlockArgument>(update.getParam());
    auto expAvg = dyn_cast<BlockArgument>(update.getExpAvg());
    auto expAvgSq = dyn_cast<BlockArgument>(update.getExpAvgSq());
    if (!param || !expAvg || !expAvgSq)
      return update.emitOpError()
             << "mt-parallelize needs the parameter and its moments to be "
                "function arguments";
    RankedTensorType full = update.getParam().getType();
    RankedTensorType pieceType =
        flatType(full, expert ? expertReplicas() : int64_t(dp));

    // The moments are pieces from now on.
    for (BlockArgument state : {expAvg, expAvgSq}) {
      state.setType(pieceType);
      markSharded(attrs, state.getArgNumber(), std::nullopt, full);
    }
    OpBuilder b(update);
    Location loc = update.getLoc();
    Value paramPiece;
    // Under mixed precision the parameter is an fp32 master that the step
    // reads only through 16-bit casts: ZeRO-1 and 2 shard it with the
    // optimizer state, as Megatron-LM's distributed optimizer does, and
    // gather its 16-bit copy once per step (gatherParametersBeforeUse).
    bool shardParam = zero == 3 || bool(castOnlyType(param));
    if (shardParam) {
      param.setType(pieceType);
      markSharded(attrs, param.getArgNumber(), std::nullopt, full);
      paramPiece = param;
    } else {
      paramPiece = slicePieceOf(expert, b, loc, flatten(b, loc, param));
    }
    Value gradPiece =
        zero >= 2 ? grad : slicePieceOf(expert, b, loc, flatten(b, loc, grad));
    auto piece = AdamWOp::create(
        b, loc, pieceType, pieceType, pieceType, paramPiece, gradPiece, expAvg,
        expAvgSq, update.getStep(), update.getLr(), update.getBeta1(),
        update.getBeta2(), update.getEps(), update.getWeightDecay(),
        update.getGradScale(), update.getDecay());
    Value newParam =
        shardParam ? piece.getNewParam()
                   : unflatten(b, loc,
                               cutPadding(b, loc,
                                          gatherPiecesOf(expert, b, loc,
                                                         piece.getNewParam()),
                                          full.getNumElements()),
                               full);
    // Results: the new parameter (full or piece) and the new moments.
    for (OpOperand &use : llvm::make_early_inc_range(update->getUses())) {
      if (use.getOwner() != ret)
        return update.emitOpError()
               << "mt-parallelize expects updated parameters to be returned "
                  "only";
      unsigned index = use.getOperandNumber();
      unsigned which = cast<OpResult>(use.get()).getResultNumber();
      Value replacement = which == 0   ? newParam
                          : which == 1 ? piece.getNewExpAvg()
                                       : piece.getNewExpAvgSq();
      use.set(replacement);
      if (which != 0 || shardParam)
        markSharded(attrs, std::nullopt, index, full);
    }
    update.erase();
    return success();
  }

  /// Under mixed precision the step reads an fp32 master (besides its
  /// update) only through mt.casts to one 16-bit type
  /// (mt-mixed-precision): that type; null for any other parameter.
  static Type castOnlyType(Value param) {
    Type low;
    for (Operation *user : param.getUsers()) {
      if (isa<AdamWOp>(user))
        continue;
      auto castOp = dyn_cast<CastOp>(user);
      if (!castOp)
        return Type();
      Type type = typeOf(castOp.getResult()).getElementType();
      if (low && low != type)
        return Type();
      low = type;
    }
    return low;
  }

  /// ZeRO-3: each parameter piece is all-gathered right before its first use
  /// in the forward pass and again before its first use in the backward
  /// pass, so a full copy lives only while that pass needs it. ZeRO-1 and 2
  /// under mixed precision (sharded fp32 masters): the 16-bit copy is
  /// gathered once per step, before the first use, and serves the forward
  /// and the backward, as the distributed optimizer's all-gather does.
  void gatherParametersBeforeUse(func::FuncOp function) {
    Block &body = function.getBody().front();
    // Which pass a use belongs to, as mt-autodiff stated it (mt.phase).
    auto isBackward = [](Operation *user) {
      auto phase =
          user->getAttrOfType<StringAttr>(MTDialect::getPhaseAttrName());
      return phase && phase.getValue() == "backward";
    };
    for (BlockArgument arg : body.getArguments()) {
      unsigned index = arg.getArgNumber();
      auto fullShape = function.getArgAttrOfType<DenseI64ArrayAttr>(
          index, MTDialect::getFullShapeAttrName());
      auto tpDim = function.getArgAttrOfType<IntegerAttr>(
          index, MTDialect::getShardDimAttrName());
      bool piece = tpDim ? bool(function.getArgAttr(
                               index, MTDialect::getPieceAxisAttrName()))
                         : bool(fullShape);
      if (!piece ||
          !function.getArgAttr(index, MTDialect::getParamAttrName()) ||
          function.getArgAttr(index, MTDialect::getStateAttrName()))
        continue;
      // An expert's pieces are over its replicas.
      bool expert =
          bool(function.getArgAttr(index, MTDialect::getExpertAxisAttrName()));
      // What the all-gather rebuilds: the full tensor, or the rank's
      // tensor-parallel share of it.
      SmallVector<int64_t> shape(fullShape.asArrayRef());
      if (tpDim)
        shape[tpDim.getInt()] /= tp;
      auto full = RankedTensorType::get(shape, typeOf(arg).getElementType());
      SmallVector<OpOperand *> forward, backward;
      for (OpOperand &use : arg.getUses()) {
        Operation *user = use.getOwner();
        if (isa<AdamWOp>(user))
          continue;
        (isBackward(user) && zero == 3 ? backward : forward).push_back(&use);
      }
      for (auto *uses : {&forward, &backward}) {
        if (uses->empty())
          continue;
        Operation *first = (*uses)[0]->getOwner();
        for (OpOperand *use : *uses)
          if (use->getOwner()->isBeforeInBlock(first))
            first = use->getOwner();
        OpBuilder b(first);
        // Mixed precision reads the fp32 master only through 16-bit casts
        // (mt-mixed-precision): cast the piece and gather 16 bits, half the
        // bytes of gathering the master. Casting commutes with gathering,
        // so every rank computes the same values.
        if (Type low = castOnlyType(arg)) {
          auto pieceCast = CastOp::create(
              b, arg.getLoc(),
              RankedTensorType::get(typeOf(arg).getShape(), low), arg);
          for (NamedAttribute attr : first->getDiscardableAttrs())
            pieceCast->setAttr(attr.getName(), attr.getValue());
          Value gathered = unflatten(
              b, arg.getLoc(),
              cutPadding(b, arg.getLoc(),
                         gatherPiecesOf(expert, b, arg.getLoc(), pieceCast),
                         full.getNumElements()),
              RankedTensorType::get(shape, low));
          for (OpOperand *use : *uses) {
            Operation *castOp = use->getOwner();
            castOp->getResult(0).replaceAllUsesWith(gathered);
            castOp->erase();
          }
          continue;
        }
        Value gathered =
            unflatten(b, arg.getLoc(),
                      cutPadding(b, arg.getLoc(),
                                 gatherPiecesOf(expert, b, arg.getLoc(), arg),
                                 full.getNumElements()),
                      full);
        for (OpOperand *use : *uses)
          use->set(gathered);
      }
    }
  }
};
} // namespace
