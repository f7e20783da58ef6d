//===- Autodiff.cpp - Forward graph to training step ----------------------===//
//
// Reverse-mode differentiation of a straight-line mt function, followed by
// gradient-norm clipping and AdamW. The forward graph is a single block of
// value-semantic ops, so the backward pass is one sweep over that block in
// reverse, accumulating the gradient of every value that depends on a
// parameter.
//
//===----------------------------------------------------------------------===//

#include "passes/Autodiff/Passes.h"

#include "dialects/MT/IR/MTOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/TypeSwitch.h"

#define DEBUG_TYPE "mt-autodiff"

namespace mlir::mt {
#define GEN_PASS_DEF_AUTODIFFPASS
#include "passes/Autodiff/Passes.h.inc"
} // namespace mlir::mt

using namespace mlir;
using namespace mlir::mt;

namespace {

/// The run-time scalars a training step takes, in argument order.
constexpr StringLiteral kScalarRoles[] = {
    "step",     "lr",           "adam_beta1", "adam_beta2",
    "adam_eps", "weight_decay", "clip_grad"};

/// Builds the backward pass of one function. Gradient ops are created at the
/// builder's insertion point and tagged with the `mt.layer` of the forward op
/// being differentiated.
class BackwardBuilder {
public:
  BackwardBuilder(OpBuilder &builder, const DenseSet<Value> &active)
      : builder(builder), active(active) {}

  /// Seeds d(loss)/d(loss) = 1 and differentiates `ops` in reverse.
  LogicalResult run(ArrayRef<Operation *> ops, Value loss) {
    grads[loss] = constant(cast<RankedTensorType>(loss.getType()), 1.0);
    for (Operation *op : llvm::reverse(ops)) {
      if (llvm::none_of(op->getResults(),
                        [&](Value result) { return grads.count(result); }))
        continue;
      current = op;
      if (failed(differentiate(op)))
        return failure();
    }
    current = nullptr;
    return success();
  }

  /// The accumulated gradient of `value`, or zeros when the loss does not
  /// depend on it.
  Value gradientOf(Value value) {
    if (Value grad = grads.lookup(value))
      return grad;
    return constant(cast<RankedTensorType>(value.getType()), 0.0);
  }

  int64_t numCreatedOps = 0;

private:
  /// Creates an op and tags it with the layer of the op being differentiated.
  template <typename OpTy, typename... Args> OpTy make(Args &&...args) {
    Location loc = current ? current->getLoc() : builder.getUnknownLoc();
    auto op = OpTy::create(builder, loc, std::forward<Args>(args)...);
    if (current)
      if (Attribute layer = current->getAttr(MTDialect::getLayerAttrName()))
        op->setAttr(MTDialect::getLayerAttrName(), layer);
    op->setAttr(MTDialect::getPhaseAttrName(),
                builder.getStringAttr("backward"));
    ++numCreatedOps;
    return op;
  }

  Value constant(RankedTensorType type, double value) {
    auto attr = DenseElementsAttr::get(
        type, builder.getFloatAttr(type.getElementType(), value));
    return make<arith::ConstantOp>(type, attr);
  }

  /// Adds `grad` to the gradient of `value`, if the loss can depend on it.
  void accumulate(Value value, Value grad) {
    if (!active.contains(value))
      return;
    Value &slot = grads[value];
    slot = slot ? make<AddOp>(slot, grad).getResult() : grad;
  }

  static RankedTensorType typeOf(Value value) {
    return cast<RankedTensorType>(value.getType());
  }

  /// Collapses all but the last dimension: [b..., m, k] -> [b*...*m, k].
  Value collapseLeading(Value value) {
    RankedTensorType type = typeOf(value);
    int64_t rank = type.getRank();
    ReassociationIndices leading;
    for (int64_t dim = 0; dim < rank - 1; ++dim)
      leading.push_back(dim);
    SmallVector<ReassociationIndices> reassociation = {leading, {rank - 1}};
    auto collapsed = RankedTensorType::get(
        {type.getNumElements() / type.getDimSize(rank - 1),
         type.getDimSize(rank - 1)},
        type.getElementType());
    return make<tensor::CollapseShapeOp>(collapsed, value, reassociation);
  }

  Value matmul(Type type, Value lhs, Value rhs, bool transposeA,
               bool transposeB) {
    return make<MatmulOp>(type, lhs, rhs, transposeA, transposeB);
  }

  /// C = op_a(A) op_b(B) gives dA = dC op_b(B)^T and dB = op_a(A)^T dC,
  /// written back in the stored layouts of A and B. A broadcast rank-2 B
  /// sums its gradient over the batch, done by folding the batch into rows.
  LogicalResult differentiateMatmul(MatmulOp op, Value dC) {
    Value a = op.getLhs(), b = op.getRhs();
    bool ta = op.getTransposeA(), tb = op.getTransposeB();
    bool broadcast = typeOf(b).getRank() != typeOf(a).getRank();
    if (broadcast && ta && (active.contains(a) || active.contains(b)))
      return op.emitOpError()
             << "cannot be differentiated: transpose_a with a broadcast rhs";
    if (active.contains(a))
      accumulate(a, ta ? matmul(a.getType(), b, dC, tb, true)
                       : matmul(a.getType(), dC, b, false, !tb));
    if (!active.contains(b))
      return success();
    if (broadcast) {
      Value a2 = collapseLeading(a), dC2 = collapseLeading(dC);
      accumulate(b, tb ? matmul(b.getType(), dC2, a2, true, false)
                       : matmul(b.getType(), a2, dC2, true, false));
      return success();
    }
    accumulate(b, tb ? matmul(b.getType(), dC, a, true, ta)
                     : matmul(b.getType(), a, dC, !ta, false));
    return success();
  }

  LogicalResult differentiate(Operation *op) {
    // Ops with several results may have gradients for only some of them.
    SmallVector<Value> resultGrads;
    for (Value result : op->getResults())
      resultGrads.push_back(gradientOf(result));
    Value dy = resultGrads.front();

    return llvm::TypeSwitch<Operation *, LogicalResult>(op)
        .Case([&](EmbeddingOp op) {
          accumulate(
              op.getTable(),
              make<EmbeddingGradOp>(op.getTable().getType(), dy, op.getIds()));
          return success();
        })
        .Case([&](PositionEmbeddingOp op) {
          accumulate(op.getTable(), make<PositionEmbeddingGradOp>(
                                        op.getTable().getType(), dy));
          return success();
        })
        .Case([&](LayerNormOp op) {
          Type weightType = op.getWeight().getType();
          auto grad = make<LayerNormGradOp>(
              op.getInput().getType(), weightType, weightType, dy,
              op.getInput(), op.getWeight(), op.getEpsilonAttr());
          accumulate(op.getInput(), grad.getGradInput());
          accumulate(op.getWeight(), grad.getGradWeight());
          accumulate(op.getBias(), grad.getGradBias());
          return success();
        })
        .Case([&](RMSNormOp op) {
          auto grad = make<RMSNormGradOp>(
              op.getInput().getType(), op.getWeight().getType(), dy,
              op.getInput(), op.getWeight(), op.getEpsilonAttr());
          accumulate(op.getInput(), grad.getGradInput());
          accumulate(op.getWeight(), grad.getGradWeight());
          return success();
        })
        .Case([&](SiluOp op) {
          accumulate(op.getInput(),
                     make<SiluGradOp>(op.getType(), dy, op.getInput()));
          return success();
        })
        .Case([&](MulOp op) {
          if (active.contains(op.getLhs()))
            accumulate(op.getLhs(), make<MulOp>(op.getType(), dy, op.getRhs()));
          if (active.contains(op.getRhs()))
            accumulate(op.getRhs(), make<MulOp>(op.getType(), dy, op.getLhs()));
          return success();
        })
        .Case([&](RopeOp op) {
          // A rotation's gradient is the inverse rotation.
          auto grad = make<RopeOp>(
              op.getType(), dy, op.getThetaAttr(), op.getLlama3FactorAttr(),
              op.getLlama3LowFreqFactorAttr(), op.getLlama3HighFreqFactorAttr(),
              op.getLlama3OriginalMaxPositionsAttr(),
              op.getInverse() ? UnitAttr() : builder.getUnitAttr());
          accumulate(op.getInput(), grad);
          return success();
        })
        .Case([&](RepeatKVOp op) {
          accumulate(op.getInput(),
                     make<RepeatKVGradOp>(op.getInput().getType(), dy,
                                          op.getGroupsAttr()));
          return success();
        })
        .Case([&](AddOp op) {
          accumulate(op.getLhs(), dy);
          accumulate(op.getRhs(), dy);
          return success();
        })
        .Case([&](BiasAddOp op) {
          accumulate(op.getInput(), dy);
          if (active.contains(op.getBias()))
            accumulate(op.getBias(),
                       make<BiasAddGradOp>(op.getBias().getType(), dy));
          return success();
        })
        .Case([&](GeluOp op) {
          accumulate(op.getInput(),
                     make<GeluGradOp>(op.getType(), dy, op.getInput()));
          return success();
        })
        .Case([&](DropoutOp op) {
          // The derivative of x -> mask * x / (1 - p) is the same map: the
          // same op on the gradient, with the forward's stream.
          accumulate(op.getInput(),
                     make<DropoutOp>(op.getType(), dy, op.getProbabilityAttr(),
                                     op.getRngStreamAttr()));
          return success();
        })
        .Case([&](MatmulOp op) { return differentiateMatmul(op, dy); })
        .Case([&](SplitHeadsOp op) {
          accumulate(op.getInput(),
                     make<MergeHeadsOp>(op.getInput().getType(), resultGrads));
          return success();
        })
        .Case([&](MergeHeadsOp op) {
          auto split = make<SplitHeadsOp>(op.getInputs().getTypes(), dy);
          for (auto [input, grad] :
               llvm::zip_equal(op.getInputs(), split.getResults()))
            accumulate(input, grad);
          return success();
        })
        .Case([&](AttentionOp op) {
          Type type = op.getType();
          auto grad = make<AttentionGradOp>(
              type, type, type, dy, op.getQuery(), op.getKey(), op.getValue(),
              op.getDropoutAttr(), op.getScaleAttr(), op.getRngStreamAttr());
          accumulate(op.getQuery(), grad.getGradQuery());
          accumulate(op.getKey(), grad.getGradKey());
          accumulate(op.getValue(), grad.getGradValue());
          return success();
        })
        .Case([&](CrossEntropyOp op) {
          accumulate(op.getLogits(),
                     make<CrossEntropyGradOp>(op.getLogits().getType(), dy,
                                              op.getLogits(), op.getLabels()));
          return success();
        })
        .Case([&](tensor::CollapseShapeOp op) {
          accumulate(op.getSrc(),
                     make<tensor::ExpandShapeOp>(op.getSrcType(), dy,
                                                 op.getReassociationIndices()));
          return success();
        })
        .Case([&](tensor::ExpandShapeOp op) {
          accumulate(op.getSrc(),
                     make<tensor::CollapseShapeOp>(
                         op.getSrcType(), dy, op.getReassociationIndices()));
          return success();
        })
        .Default([&](Operation *op) {
          return op->emitOpError() << "cannot be differentiated by mt-autodiff";
        });
  }

  OpBuilder &builder;
  const DenseSet<Value> &active;
  DenseMap<Value, Value> grads;
  Operation *current = nullptr;
};

struct AutodiffPass : public mt::impl::AutodiffPassBase<AutodiffPass> {
  void runOnOperation() override {
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal() || !isModel(function))
        continue;
      if (failed(buildTrainingStep(function)))
        return signalPassFailure();
    }
  }

  static bool isModel(func::FuncOp function) {
    for (unsigned i = 0, e = function.getNumArguments(); i < e; ++i)
      if (function.getArgAttr(i, MTDialect::getParamAttrName()))
        return true;
    return false;
  }

  LogicalResult buildTrainingStep(func::FuncOp function) {
    Block &body = function.getBody().front();
    if (!function.getBody().hasOneBlock())
      return function.emitOpError()
             << "mt-autodiff needs a single-block function";
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    auto scalarF32 = RankedTensorType::get({}, Float32Type::get(&getContext()));
    if (ret.getNumOperands() != 1 || ret.getOperand(0).getType() != scalarF32)
      return function.emitOpError()
             << "mt-autodiff needs a function returning one tensor<f32> "
                "loss, got "
             << function.getFunctionType().getResults();

    // Classify arguments: parameters are differentiated, inputs are not.
    SmallVector<BlockArgument> params;
    for (BlockArgument arg : body.getArguments()) {
      if (function.getArgAttr(arg.getArgNumber(),
                              MTDialect::getStateAttrName()))
        return function.emitOpError()
               << "argument #" << arg.getArgNumber()
               << " is optimizer state: mt-autodiff runs on a forward graph";
      if (function.getArgAttr(arg.getArgNumber(),
                              MTDialect::getParamAttrName()))
        params.push_back(arg);
      else if (!function.getArgAttr(arg.getArgNumber(),
                                    MTDialect::getInputAttrName()))
        return function.emitOpError()
               << "argument #" << arg.getArgNumber()
               << " is neither a parameter ('mt.param') nor a run-time input "
                  "('mt.input')";
    }

    // Number the random streams, and find what depends on a parameter.
    SmallVector<Operation *> forwardOps;
    int64_t stream = 0;
    DenseSet<Value> active(params.begin(), params.end());
    OpBuilder builder(&getContext());
    // Every op this pass emits says which phase of the step it belongs to
    // (backward or optimizer; the model's own ops are the forward pass):
    // the passes after this one read it.
    for (Operation &op : body.without_terminator()) {
      forwardOps.push_back(&op);
      if (isa<DropoutOp, AttentionOp>(op))
        op.setAttr("rng_stream", builder.getI64IntegerAttr(stream++));
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return active.contains(v); }))
        active.insert(op.getResults().begin(), op.getResults().end());
    }

    builder.setInsertionPoint(ret);
    Value loss = ret.getOperand(0);
    BackwardBuilder backward(builder, active);
    if (failed(backward.run(forwardOps, loss)))
      return failure();
    SmallVector<Value> paramGrads;
    for (BlockArgument param : params)
      paramGrads.push_back(backward.gradientOf(param));
    numGradientOps += backward.numCreatedOps;
    numParameters += params.size();

    // New arguments: exp_avg per parameter, exp_avg_sq per parameter, then
    // the scalars.
    unsigned end = function.getNumArguments();
    SmallVector<unsigned> indices;
    SmallVector<Type> types;
    SmallVector<DictionaryAttr> attrs;
    SmallVector<Location> locs;
    auto paramName = [&](BlockArgument param) {
      return function.getArgAttr(param.getArgNumber(),
                                 MTDialect::getParamAttrName());
    };
    for (StringRef kind : MTDialect::getStateKinds())
      for (BlockArgument param : params) {
        indices.push_back(end);
        types.push_back(param.getType());
        attrs.push_back(builder.getDictionaryAttr(
            {builder.getNamedAttr(MTDialect::getParamAttrName(),
                                  paramName(param)),
             builder.getNamedAttr(MTDialect::getStateAttrName(),
                                  builder.getStringAttr(kind))}));
        locs.push_back(param.getLoc());
      }
    for (StringRef role : kScalarRoles) {
      indices.push_back(end);
      types.push_back(scalarF32);
      attrs.push_back(builder.getDictionaryAttr(builder.getNamedAttr(
          MTDialect::getInputAttrName(), builder.getStringAttr(role))));
      locs.push_back(function.getLoc());
    }
    if (failed(function.insertArguments(indices, types, attrs, locs)))
      return function.emitOpError() << "could not add training arguments";

    size_t numParams = params.size();
    auto expAvg = [&](size_t i) { return body.getArgument(end + i); };
    auto expAvgSq = [&](size_t i) {
      return body.getArgument(end + numParams + i);
    };
    auto scalar = [&](StringRef role) {
      size_t index = llvm::find(kScalarRoles, role) - std::begin(kScalarRoles);
      return body.getArgument(end + 2 * numParams + index);
    };

    // Clip by the global norm, then update every parameter.
    Location loc = function.getLoc();
    NamedAttribute optimizerPhase = builder.getNamedAttr(
        MTDialect::getPhaseAttrName(), builder.getStringAttr("optimizer"));
    auto norm = GlobalNormOp::create(builder, loc, paramGrads);
    norm->setAttr(optimizerPhase.getName(), optimizerPhase.getValue());
    auto clipScale =
        ClipScaleOp::create(builder, loc, norm, scalar("clip_grad"));
    clipScale->setAttr(optimizerPhase.getName(), optimizerPhase.getValue());
    SmallVector<Value> newParams, newExpAvgs, newExpAvgSqs;
    for (auto [i, param] : llvm::enumerate(params)) {
      bool decay = cast<RankedTensorType>(param.getType()).getRank() >= 2;
      auto update = AdamWOp::create(
          builder, param.getLoc(), param.getType(), param.getType(),
          param.getType(), param, paramGrads[i], expAvg(i), expAvgSq(i),
          scalar("step"), scalar("lr"), scalar("adam_beta1"),
          scalar("adam_beta2"), scalar("adam_eps"), scalar("weight_decay"),
          clipScale, decay);
      update->setAttr(optimizerPhase.getName(), optimizerPhase.getValue());
      newParams.push_back(update.getNewParam());
      newExpAvgs.push_back(update.getNewExpAvg());
      newExpAvgSqs.push_back(update.getNewExpAvgSq());
    }

    // Results: loss, parameters, exp_avg, exp_avg_sq, grad_norm.
    SmallVector<Value> results = {loss};
    llvm::append_range(results, newParams);
    llvm::append_range(results, newExpAvgs);
    llvm::append_range(results, newExpAvgSqs);
    results.push_back(norm);
    func::ReturnOp::create(builder, ret.getLoc(), results);
    ret.erase();

    function.setFunctionType(builder.getFunctionType(
        function.getArgumentTypes(), ValueRange(results).getTypes()));
    auto outputAttr = [&](StringRef role) {
      return builder.getDictionaryAttr(builder.getNamedAttr(
          MTDialect::getOutputAttrName(), builder.getStringAttr(role)));
    };
    SmallVector<Attribute> resultAttrs = {outputAttr("loss")};
    for (StringRef kind :
         {StringRef(), StringRef("exp_avg"), StringRef("exp_avg_sq")})
      for (BlockArgument param : params) {
        SmallVector<NamedAttribute> named = {builder.getNamedAttr(
            MTDialect::getParamAttrName(), paramName(param))};
        if (!kind.empty())
          named.push_back(builder.getNamedAttr(MTDialect::getStateAttrName(),
                                               builder.getStringAttr(kind)));
        resultAttrs.push_back(builder.getDictionaryAttr(named));
      }
    resultAttrs.push_back(outputAttr("grad_norm"));
    function.setAllResultAttrs(resultAttrs);
    return success();
  }
};
} // namespace
