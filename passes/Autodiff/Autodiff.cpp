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
#include "dialects/MTRT/IR/MTRTDialect.h"
#include "megatron/Analysis/ModelSummary.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseSet.h"

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

/// Builds the backward pass of one function. Each op's derivative rule is
/// its DifferentiableOpInterface (dialects/MT/IR/MTDerivatives.cpp); this
/// class is the emitter the rules use: gradient ops are created at the
/// builder's insertion point and tagged with the `mt.layer` of the forward
/// op being differentiated and the backward phase.
class BackwardBuilder : public GradientEmitter {
public:
  BackwardBuilder(OpBuilder &builder, const DenseSet<Value> &active)
      : builder(builder), active(active) {}

  /// Seeds d(loss)/d(loss) = 1 and differentiates `ops` in reverse.
  LogicalResult run(ArrayRef<Operation *> ops, Value loss) {
    seed = constant(cast<RankedTensorType>(loss.getType()), 1.0);
    grads[loss] = seed;
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

  // GradientEmitter.
  Value resultGradient(unsigned index) override { return resultGrads[index]; }
  bool needsGradient(Value value) override { return active.contains(value); }
  /// Adds `grad` to the gradient of `value`, if the loss can depend on it.
  void accumulate(Value value, Value grad) override {
    if (!active.contains(value))
      return;
    Value &slot = grads[value];
    slot = slot ? create<AddOp>(slot, grad).getResult() : grad;
  }
  OpBuilder &getBuilder() override { return builder; }

  int64_t numCreatedOps = 0;
  /// d(loss)/d(loss): the constant 1 the backward pass starts from.
  Value seed;

protected:
  Location currentLoc() override {
    return current ? current->getLoc() : builder.getUnknownLoc();
  }
  void tag(Operation *op) override {
    if (current)
      if (Attribute layer = current->getAttr(MTDialect::getLayerAttrName()))
        op->setAttr(MTDialect::getLayerAttrName(), layer);
    op->setAttr(MTDialect::getPhaseAttrName(),
                builder.getStringAttr("backward"));
    ++numCreatedOps;
  }

private:
  Value constant(RankedTensorType type, double value) {
    auto attr = DenseElementsAttr::get(
        type, builder.getFloatAttr(type.getElementType(), value));
    return create<arith::ConstantOp>(type, attr);
  }

  LogicalResult differentiate(Operation *op) {
    // Ops with several results may have gradients for only some of them.
    resultGrads.clear();
    for (Value result : op->getResults())
      resultGrads.push_back(active.contains(result) ? gradientOf(result)
                                                    : Value());
    if (auto rule = dyn_cast<DifferentiableOpInterface>(op))
      return rule.buildGradients(*this);
    // Reshapes (upstream ops) invert each other.
    if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op)) {
      accumulate(collapse.getSrc(), create<tensor::ExpandShapeOp>(
                                        collapse.getSrcType(), resultGrads[0],
                                        collapse.getReassociationIndices()));
      return success();
    }
    if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op)) {
      accumulate(expand.getSrc(), create<tensor::CollapseShapeOp>(
                                      expand.getSrcType(), resultGrads[0],
                                      expand.getReassociationIndices()));
      return success();
    }
    return op->emitOpError() << "cannot be differentiated by mt-autodiff";
  }

  OpBuilder &builder;
  const DenseSet<Value> &active;
  DenseMap<Value, Value> grads;
  SmallVector<Value> resultGrads;
  Operation *current = nullptr;
};

struct AutodiffPass : public mt::impl::AutodiffPassBase<AutodiffPass> {
  using AutodiffPassBase::AutodiffPassBase;

  void runOnOperation() override {
    bool found = false;
    for (auto function : getOperation().getOps<func::FuncOp>()) {
      if (function.isExternal() || !hasModelParameters(function))
        continue;
      found = true;
      // The whole model's FLOPs per token, before parallelization splits
      // the step (the programs' throughput reports read it).
      if (hasTokenInput(function)) {
        FailureOr<ModelSummary> summary = summarizeModel(function);
        if (failed(summary))
          return signalPassFailure();
        getOperation()->setAttr(
            MTDialect::getFlopsPerTokenAttrName(),
            IntegerAttr::get(IntegerType::get(&getContext(), 64),
                             summary->trainingFlopsPerToken));
      }
      if (failed(buildTrainingStep(function)))
        return signalPassFailure();
    }
    if (!found && requireModel) {
      getOperation().emitError()
          << "mt-autodiff: no model function to train (a func.func with "
             "mt.param arguments returning the loss)"
          << (getOperation().getOps<mtrt::ProgramOp>().empty()
                  ? ""
                  : ": the module holds mtrt programs, so it is compiled "
                    "already; compile the model (megatron-translate "
                    "--import-hf-config) instead");
      return signalPassFailure();
    }
  }

  LogicalResult buildTrainingStep(func::FuncOp function) {
    Block &body = function.getBody().front();
    if (!function.getBody().hasOneBlock())
      return function.emitOpError()
             << "mt-autodiff needs a single-block function";
    auto ret = cast<func::ReturnOp>(body.getTerminator());
    // mt-autodiff applied twice: the step returns its updated state too.
    if (auto adamw = function.getOps<AdamWOp>(); !adamw.empty())
      return function.emitOpError()
             << "is a training step already (it holds "
             << (*adamw.begin())->getName()
             << "); mt-autodiff turns a forward graph returning its loss "
                "into one: apply it once";
    // An empty tensor (a zero-size dimension) has no gradient to take: the
    // derivatives divide by the sizes of rows.
    for (Operation &op : body)
      for (Type type :
           llvm::concat<const Type>(op.getOperandTypes(), op.getResultTypes()))
        if (auto tensor = dyn_cast<RankedTensorType>(type);
            tensor && llvm::is_contained(tensor.getShape(), 0))
          return op.emitOpError()
                 << "has the empty tensor type " << tensor
                 << ": every tensor of a training step needs positive "
                    "dimensions";
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
      // Integer results (a mixture of experts' routing) have no gradient.
      if (llvm::any_of(op.getOperands(),
                       [&](Value v) { return active.contains(v); }))
        for (Value result : op.getResults())
          if (isa<FloatType>(getElementTypeOrSelf(result.getType())))
            active.insert(result);
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
    // The moments (AdamW's state; a 16-bit copy is mt-fuse's).
    for (StringRef kind : MTDialect::getMomentKinds())
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
    SmallVector<StringRef> scalarRoles(std::begin(kScalarRoles),
                                       std::end(kScalarRoles));
    if (lossScaling)
      scalarRoles.push_back("loss_scale");
    for (StringRef role : scalarRoles) {
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
      size_t index = llvm::find(scalarRoles, role) - scalarRoles.begin();
      return body.getArgument(end + 2 * numParams + index);
    };
    // Loss scaling: the backward pass starts from the run-time scale
    // instead of 1, so every gradient is scaled by it.
    if (lossScaling) {
      Operation *one = backward.seed.getDefiningOp();
      backward.seed.replaceAllUsesWith(scalar("loss_scale"));
      one->erase();
    }

    // Clip by the global norm, then update every parameter.
    Location loc = function.getLoc();
    NamedAttribute optimizerPhase = builder.getNamedAttr(
        MTDialect::getPhaseAttrName(), builder.getStringAttr("optimizer"));
    Value norm = GlobalNormOp::create(builder, loc, paramGrads);
    norm.getDefiningOp()->setAttr(optimizerPhase.getName(),
                                  optimizerPhase.getValue());
    // With loss scaling the norm of the scaled gradients, and the clipping
    // factor that multiplies them, are divided by the scale: two scalar
    // divisions instead of a pass over every gradient. An overflow makes
    // the norm non-finite, the clipping factor NaN, and every update a
    // no-op (mt.clip_scale, mt.adamw): the step is skipped.
    auto divide = [&](Value value) {
      auto quotient = DivOp::create(builder, loc, value, scalar("loss_scale"));
      quotient->setAttr(optimizerPhase.getName(), optimizerPhase.getValue());
      return quotient.getResult();
    };
    if (lossScaling)
      norm = divide(norm);
    Value clipScale =
        ClipScaleOp::create(builder, loc, norm, scalar("clip_grad"));
    clipScale.getDefiningOp()->setAttr(optimizerPhase.getName(),
                                       optimizerPhase.getValue());
    if (lossScaling)
      clipScale = divide(clipScale);
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
