//===- MTDerivatives.cpp - Reverse-mode derivatives of the mt ops ---------===//
//
// Each differentiable op's DifferentiableOpInterface: given the gradients of
// its results, the ops computing the gradients of its operands. mt-autodiff
// sweeps the forward graph in reverse and calls these; it knows no op.
//
//===----------------------------------------------------------------------===//

#include "dialects/MT/IR/MTOps.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::mt;

namespace {
RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

/// Collapses all but the last dimension: [b..., m, k] -> [b*...*m, k].
Value collapseLeading(GradientEmitter &g, Value value) {
  RankedTensorType type = typeOf(value);
  int64_t rank = type.getRank();
  ReassociationIndices leading;
  for (int64_t dim = 0; dim < rank - 1; ++dim)
    leading.push_back(dim);
  SmallVector<ReassociationIndices> reassociation = {leading, {rank - 1}};
  auto collapsed =
      RankedTensorType::get({type.getNumElements() / type.getDimSize(rank - 1),
                             type.getDimSize(rank - 1)},
                            type.getElementType());
  return g.create<tensor::CollapseShapeOp>(collapsed, value, reassociation);
}
} // namespace

LogicalResult EmbeddingOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getTable(),
               g.create<EmbeddingGradOp>(getTable().getType(),
                                         g.resultGradient(0), getIds()));
  return success();
}

LogicalResult PositionEmbeddingOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getTable(), g.create<PositionEmbeddingGradOp>(
                               getTable().getType(), g.resultGradient(0)));
  return success();
}

LogicalResult LayerNormOp::buildGradients(GradientEmitter &g) {
  Type weightType = getWeight().getType();
  auto grad = g.create<LayerNormGradOp>(
      getInput().getType(), weightType, weightType, g.resultGradient(0),
      getInput(), getWeight(), getEpsilonAttr(), /*row_block=*/IntegerAttr());
  g.accumulate(getInput(), grad.getGradInput());
  g.accumulate(getWeight(), grad.getGradWeight());
  g.accumulate(getBias(), grad.getGradBias());
  return success();
}

LogicalResult RMSNormOp::buildGradients(GradientEmitter &g) {
  auto grad = g.create<RMSNormGradOp>(
      getInput().getType(), getWeight().getType(), g.resultGradient(0),
      getInput(), getWeight(), getEpsilonAttr(), /*row_block=*/IntegerAttr(),
      getZeroCenteredWeightAttr());
  g.accumulate(getInput(), grad.getGradInput());
  g.accumulate(getWeight(), grad.getGradWeight());
  return success();
}

LogicalResult AddOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getLhs(), g.resultGradient(0));
  g.accumulate(getRhs(), g.resultGradient(0));
  return success();
}

LogicalResult ScaleOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getInput(), g.create<ScaleOp>(getType(), g.resultGradient(0),
                                             getFactorAttr()));
  return success();
}

LogicalResult MulOp::buildGradients(GradientEmitter &g) {
  Value dy = g.resultGradient(0);
  if (g.needsGradient(getLhs()))
    g.accumulate(getLhs(), g.create<MulOp>(getType(), dy, getRhs()));
  if (g.needsGradient(getRhs()))
    g.accumulate(getRhs(), g.create<MulOp>(getType(), dy, getLhs()));
  return success();
}

LogicalResult BiasAddOp::buildGradients(GradientEmitter &g) {
  Value dy = g.resultGradient(0);
  g.accumulate(getInput(), dy);
  if (g.needsGradient(getBias()))
    g.accumulate(getBias(), g.create<BiasAddGradOp>(getBias().getType(), dy));
  return success();
}

/// The gradient of a cast is the cast back: a 16-bit parameter copy's
/// gradient reaches its fp32 master parameter in fp32.
LogicalResult CastOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getInput(),
               g.create<CastOp>(getInput().getType(), g.resultGradient(0)));
  return success();
}

LogicalResult GeluOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getInput(), g.create<GeluGradOp>(getType(), g.resultGradient(0),
                                                getInput()));
  return success();
}

LogicalResult SoftcapOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getInput(),
               g.create<SoftcapGradOp>(getType(), g.resultGradient(0),
                                       getInput(), getCapAttr()));
  return success();
}

LogicalResult SiluOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getInput(), g.create<SiluGradOp>(getType(), g.resultGradient(0),
                                                getInput()));
  return success();
}

/// The derivative of x -> mask * x / (1 - p) is the same map: the same op on
/// the gradient, with the forward's stream.
LogicalResult DropoutOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getInput(),
               g.create<DropoutOp>(getType(), g.resultGradient(0),
                                   getProbabilityAttr(), getRngStreamAttr()));
  return success();
}

/// C = op_a(A) op_b(B) gives dA = dC op_b(B)^T and dB = op_a(A)^T dC,
/// written back in the stored layouts of A and B. A broadcast rank-2 B sums
/// its gradient over the batch, done by folding the batch into rows.
/// A widened product (16-bit operands, f32 C) is differentiated as if it
/// were the 16-bit product followed by a widening cast, as PyTorch's
/// `(a @ b).float()`: dC is rounded to the operands' type first, since a
/// matmul's operands share one type.
LogicalResult MatmulOp::buildGradients(GradientEmitter &g) {
  Value dC = g.resultGradient(0);
  Value a = getLhs(), b = getRhs();
  if (Type operandType = typeOf(a).getElementType();
      typeOf(dC).getElementType() != operandType)
    dC = g.create<CastOp>(typeOf(dC).clone(operandType), dC);
  bool ta = getTransposeA(), tb = getTransposeB();
  bool broadcast = typeOf(b).getRank() != typeOf(a).getRank();
  // acc + AB: the accumulator's gradient is the result's.
  if (Value acc = getAccumulator(); acc && g.needsGradient(acc))
    g.accumulate(acc, g.resultGradient(0));
  auto matmul = [&](Type type, Value lhs, Value rhs, bool transposeA,
                    bool transposeB) -> Value {
    return g.create<MatmulOp>(type, lhs, rhs, transposeA, transposeB);
  };
  if (broadcast && ta && (g.needsGradient(a) || g.needsGradient(b)))
    return emitOpError()
           << "cannot be differentiated: transpose_a with a broadcast rhs";
  if (g.needsGradient(a))
    g.accumulate(a, ta ? matmul(a.getType(), b, dC, tb, true)
                       : matmul(a.getType(), dC, b, false, !tb));
  if (!g.needsGradient(b))
    return success();
  if (broadcast) {
    Value a2 = collapseLeading(g, a), dC2 = collapseLeading(g, dC);
    g.accumulate(b, tb ? matmul(b.getType(), dC2, a2, true, false)
                       : matmul(b.getType(), a2, dC2, true, false));
    return success();
  }
  g.accumulate(b, tb ? matmul(b.getType(), dC, a, true, ta)
                     : matmul(b.getType(), a, dC, !ta, false));
  return success();
}

LogicalResult SplitHeadsOp::buildGradients(GradientEmitter &g) {
  SmallVector<Value> grads;
  for (unsigned i = 0, e = getNumResults(); i < e; ++i)
    grads.push_back(g.resultGradient(i));
  g.accumulate(getInput(), g.create<MergeHeadsOp>(getInput().getType(), grads));
  return success();
}

LogicalResult MergeHeadsOp::buildGradients(GradientEmitter &g) {
  auto split =
      g.create<SplitHeadsOp>(getInputs().getTypes(), g.resultGradient(0));
  for (auto [input, grad] : llvm::zip_equal(getInputs(), split.getResults()))
    g.accumulate(input, grad);
  return success();
}

LogicalResult AttentionOp::buildGradients(GradientEmitter &g) {
  Type type = getType(), keyType = getKey().getType();
  auto grad = g.create<AttentionGradOp>(
      type, keyType, keyType, g.resultGradient(0), getQuery(), getKey(),
      getValue(), getDropoutAttr(), getScaleAttr(), getRngStreamAttr(),
      getWindowAttr(), getSoftcapAttr());
  g.accumulate(getQuery(), grad.getGradQuery());
  g.accumulate(getKey(), grad.getGradKey());
  g.accumulate(getValue(), grad.getGradValue());
  return success();
}

/// A rotation's gradient is the inverse rotation.
LogicalResult RopeOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getInput(),
               g.create<RopeOp>(
                   getType(), g.resultGradient(0), getThetaAttr(),
                   getLlama3FactorAttr(), getLlama3LowFreqFactorAttr(),
                   getLlama3HighFreqFactorAttr(),
                   getLlama3OriginalMaxPositionsAttr(), getLinearFactorAttr(),
                   getInverse() ? UnitAttr() : g.getBuilder().getUnitAttr()));
  return success();
}

LogicalResult RepeatKVOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getInput(),
               g.create<RepeatKVGradOp>(getInput().getType(),
                                        g.resultGradient(0), getGroupsAttr()));
  return success();
}

// Mixture of experts: the gradients of the permutations are each other
// (a weighted copy's input gradient is the weighted sum, and back), the
// gate weights' a row dot product. The choice of experts and the row
// numbering are integers, without gradients.

/// Unnormalized weights are probabilities over every expert: their
/// gradient reads the logits and reaches the experts not chosen.
LogicalResult TopKGatingOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getLogits(),
               g.create<TopKGatingGradOp>(
                   getLogits().getType(), g.resultGradient(0), getWeights(),
                   getExperts(), getUnnormalized() ? getLogits() : Value(),
                   g.getBuilder().getI64IntegerAttr(
                       getLogits().getType().getShape().back())));
  return success();
}

/// Only the mean probability has a gradient: the load counts choices.
LogicalResult RouterStatisticsOp::buildGradients(GradientEmitter &g) {
  if (Value dProbability = g.resultGradient(1))
    g.accumulate(getLogits(),
                 g.create<RouterProbabilityGradOp>(getLogits().getType(),
                                                   dProbability, getLogits()));
  return success();
}

LogicalResult RouterZLossOp::buildGradients(GradientEmitter &g) {
  g.accumulate(getLogits(), g.create<RouterZLossGradOp>(
                                getLogits().getType(), g.resultGradient(0),
                                getLogits(), getCoefficientAttr()));
  return success();
}

/// Every router's probability gets the same gradient: the mean load.
LogicalResult LoadBalancingLossOp::buildGradients(GradientEmitter &g) {
  if (llvm::none_of(getProbabilities(),
                    [&](Value p) { return g.needsGradient(p); }))
    return success();
  Value dProbability = g.create<LoadBalancingLossGradOp>(
      getProbabilities().front().getType(), g.resultGradient(0), getLoads(),
      getCoefficientAttr());
  for (Value probability : getProbabilities())
    g.accumulate(probability, dProbability);
  return success();
}

LogicalResult MoePermuteOp::buildGradients(GradientEmitter &g) {
  Value dRows = g.resultGradient(0);
  if (g.needsGradient(getInput()))
    g.accumulate(getInput(),
                 g.create<MoeUnpermuteOp>(
                     getInput().getType(), dRows, getPositions(), getWeights(),
                     getCapacityFactorAttr(), getNumExpertsAttr()));
  if (getWeights() && g.needsGradient(getWeights()))
    g.accumulate(getWeights(),
                 g.create<MoeWeightsGradOp>(
                     getWeights().getType(), getInput(), dRows, getPositions(),
                     getCapacityFactorAttr(), getNumExpertsAttr()));
  return success();
}

LogicalResult MoeUnpermuteOp::buildGradients(GradientEmitter &g) {
  Value dy = g.resultGradient(0);
  if (g.needsGradient(getRows()))
    g.accumulate(getRows(),
                 g.create<MoePermuteOp>(getRows().getType(), dy, getPositions(),
                                        getWeights(), getCapacityFactorAttr(),
                                        getNumExpertsAttr()));
  if (getWeights() && g.needsGradient(getWeights()))
    g.accumulate(getWeights(),
                 g.create<MoeWeightsGradOp>(
                     getWeights().getType(), dy, getRows(), getPositions(),
                     getCapacityFactorAttr(), getNumExpertsAttr()));
  return success();
}

LogicalResult SigmoidGateOp::buildGradients(GradientEmitter &g) {
  auto grad =
      g.create<SigmoidGateGradOp>(getInput().getType(), getGate().getType(),
                                  g.resultGradient(0), getInput(), getGate());
  g.accumulate(getInput(), grad.getGradInput());
  g.accumulate(getGate(), grad.getGradGate());
  return success();
}

LogicalResult GroupedMatmulOp::buildGradients(GradientEmitter &g) {
  Value dy = g.resultGradient(0);
  // d(input) for rows of expert e: dy_e W_e (W_e^T without transpose_b).
  if (g.needsGradient(getInput()))
    g.accumulate(
        getInput(),
        g.create<GroupedMatmulOp>(
            getInput().getType(), dy, getOffsets(), getWeights(),
            getTransposeB() ? UnitAttr() : g.getBuilder().getUnitAttr()));
  if (llvm::none_of(getWeights(),
                    [&](Value weight) { return g.needsGradient(weight); }))
    return success();
  auto grads = g.create<GroupedMatmulWeightGradOp>(getWeights().getTypes(), dy,
                                                   getInput(), getOffsets(),
                                                   getTransposeBAttr());
  for (auto [weight, grad] : llvm::zip(getWeights(), grads.getGradWeights()))
    g.accumulate(weight, grad);
  return success();
}

LogicalResult CrossEntropyOp::buildGradients(GradientEmitter &g) {
  if (getType().getRank() != 0)
    return emitOpError() << "returns per-position losses; only the mean "
                            "loss differentiates";
  g.accumulate(getLogits(), g.create<CrossEntropyGradOp>(
                                getLogits().getType(), g.resultGradient(0),
                                getLogits(), getLabels()));
  return success();
}
