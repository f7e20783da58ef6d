//===- MTShapeRules.cpp - Result types of the mt ops from their operands
//---===//
//
// Each op's ShapeRuleOpInterface: the result types that follow from its
// operands' current types. Passes that change operand types (a
// tensor-parallel split, a batch split, a microbatch) retype every op
// through these rules (megatron/Analysis/ShapeInference.h).
//
//===----------------------------------------------------------------------===//

#include "dialects/MT/IR/MTOps.h"

using namespace mlir;
using namespace mlir::mt;

using Types = FailureOr<SmallVector<Type>>;

namespace {
RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

RankedTensorType withShape(Type like, ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape,
                               cast<RankedTensorType>(like).getElementType());
}

/// Results keep their types whatever the operands: parameter- and
/// scalar-shaped results.
Types unchanged(Operation *op) {
  return SmallVector<Type>(op->getResultTypes());
}

/// Every result has the type of the first operand.
Types likeFirstOperand(Operation *op) {
  return SmallVector<Type>(op->getNumResults(), op->getOperand(0).getType());
}
} // namespace

// Results shaped like a parameter or a scalar.
Types PositionEmbeddingOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types PositionEmbeddingGradOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types EmbeddingGradOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types BiasAddGradOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types CrossEntropyOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types GlobalNormOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types SumSquaresOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types SqrtOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types MeanOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types MultiAdamWOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types ClipScaleOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types DivOp::inferResultTypesFromOperands() { return unchanged(*this); }

// The operand's shape, the result's own element type.
Types CastOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{withShape(getType(), typeOf(getInput()).getShape())};
}

// Results shaped like the first operand.
Types LayerNormOp::inferResultTypesFromOperands() {
  return likeFirstOperand(*this);
}
Types AddOp::inferResultTypesFromOperands() { return likeFirstOperand(*this); }
Types BiasAddOp::inferResultTypesFromOperands() {
  return likeFirstOperand(*this);
}
Types GeluOp::inferResultTypesFromOperands() { return likeFirstOperand(*this); }
Types DropoutOp::inferResultTypesFromOperands() {
  return likeFirstOperand(*this);
}
Types AttentionOp::inferResultTypesFromOperands() {
  return likeFirstOperand(*this);
}
Types ScaleOp::inferResultTypesFromOperands() {
  return likeFirstOperand(*this);
}
Types RMSNormOp::inferResultTypesFromOperands() {
  return likeFirstOperand(*this);
}
Types SiluOp::inferResultTypesFromOperands() { return likeFirstOperand(*this); }
Types SoftcapOp::inferResultTypesFromOperands() {
  return likeFirstOperand(*this);
}
Types MulOp::inferResultTypesFromOperands() { return likeFirstOperand(*this); }
Types RopeOp::inferResultTypesFromOperands() { return likeFirstOperand(*this); }

// Gradients shaped like what they are the gradient of.
Types SiluGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{getInput().getType()};
}
Types GeluGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{getInput().getType()};
}
Types SoftcapGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{getInput().getType()};
}
Types LayerNormGradOp::inferResultTypesFromOperands() {
  Type weight = getWeight().getType();
  return SmallVector<Type>{getInput().getType(), weight, weight};
}
Types RMSNormGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{getInput().getType(), getWeight().getType()};
}
Types AttentionGradOp::inferResultTypesFromOperands() {
  Type key = getKey().getType();
  return SmallVector<Type>{getQuery().getType(), key, key};
}
Types CrossEntropyGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{getLogits().getType()};
}
Types AdamWOp::inferResultTypesFromOperands() {
  return SmallVector<Type>(3, getParam().getType());
}

// Shape-changing ops.
Types EmbeddingOp::inferResultTypesFromOperands() {
  SmallVector<int64_t> shape(getIds().getType().getShape());
  shape.push_back(getTable().getType().getDimSize(1));
  return SmallVector<Type>{withShape(getType(), shape)};
}

Types MatmulOp::inferResultTypesFromOperands() {
  RankedTensorType lhs = typeOf(getLhs()), rhs = typeOf(getRhs());
  int64_t rank = lhs.getRank(), rhsRank = rhs.getRank();
  SmallVector<int64_t> shape(lhs.getShape().drop_back(2));
  shape.push_back(lhs.getDimSize(getTransposeA() ? rank - 1 : rank - 2));
  shape.push_back(rhs.getDimSize(getTransposeB() ? rhsRank - 2 : rhsRank - 1));
  return SmallVector<Type>{withShape(getType(), shape)};
}

/// The head count of each result is kept (a tensor-parallel split changes
/// it by retyping the result, which mt-parallelize's partition does); the
/// batch and sequence follow the input.
Types SplitHeadsOp::inferResultTypesFromOperands() {
  RankedTensorType input = getInput().getType();
  RankedTensorType old = typeOf(getResult(0));
  RankedTensorType type =
      withShape(old, {input.getDimSize(0), old.getDimSize(1),
                      input.getDimSize(1), old.getDimSize(3)});
  return SmallVector<Type>(getNumResults(), type);
}

Types MergeHeadsOp::inferResultTypesFromOperands() {
  RankedTensorType input = typeOf(getInputs().front());
  int64_t width =
      int64_t(getInputs().size()) * input.getDimSize(1) * input.getDimSize(3);
  return SmallVector<Type>{
      withShape(getType(), {input.getDimSize(0), input.getDimSize(2), width})};
}

Types RepeatKVOp::inferResultTypesFromOperands() {
  SmallVector<int64_t> shape(getInput().getType().getShape());
  shape[1] *= int64_t(getGroups());
  return SmallVector<Type>{withShape(getType(), shape)};
}

Types RepeatKVGradOp::inferResultTypesFromOperands() {
  SmallVector<int64_t> shape(getGradOutput().getType().getShape());
  shape[1] /= int64_t(getGroups());
  return SmallVector<Type>{withShape(getType(), shape)};
}

// Mixture of experts: per-token results follow the tokens; the experts'
// rows are a row per token and choice, or with a capacity the experts'
// capacity rows.

/// `like`'s tokens, then `last`, of `element`'s element type.
static RankedTensorType perToken(Value like, int64_t last, Type element) {
  SmallVector<int64_t> shape(typeOf(like).getShape().drop_back());
  shape.push_back(last);
  return RankedTensorType::get(
      shape, cast<RankedTensorType>(element).getElementType());
}

Types TopKGatingOp::inferResultTypesFromOperands() {
  int64_t k = int64_t(getK());
  return SmallVector<Type>{perToken(getLogits(), k, getWeights().getType()),
                           perToken(getLogits(), k, getExperts().getType())};
}

Types TopKGatingGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{perToken(getWeights(), int64_t(getNumExperts()),
                                    getGradLogits().getType())};
}

// The routers' statistics and their loss are per expert, whatever the
// tokens.
Types RouterStatisticsOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types RouterProbabilityGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{getLogits().getType()};
}
Types LoadBalancingLossOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types LoadBalancingLossGradOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
// The z-loss is a scalar whatever the tokens; its gradient, the logits'.
Types RouterZLossOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types RouterZLossGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{getLogits().getType()};
}

Types MoeRouteOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{getExperts().getType(), getOffsets().getType()};
}

// With a capacity, the rows follow the tokens through the capacity.
Types MoePermuteOp::inferResultTypesFromOperands() {
  RankedTensorType positions = getPositions().getType();
  int64_t k = positions.getShape().back();
  int64_t rows = routedRows(
      positions.getNumElements() / std::max<int64_t>(k, 1), k,
      int64_t(getNumExperts().value_or(0)), asDouble(getCapacityFactor()));
  return SmallVector<Type>{withShape(
      getRows().getType(), {rows, getInput().getType().getShape().back()})};
}

Types MoeUnpermuteOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{
      perToken(getPositions(), getRows().getType().getDimSize(1), getType())};
}

Types MoeWeightsGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{
      withShape(getType(), getPositions().getType().getShape())};
}

Types SigmoidGateOp::inferResultTypesFromOperands() {
  return likeFirstOperand(*this);
}

Types SigmoidGateGradOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{getInput().getType(), getGate().getType()};
}

Types GroupedMatmulOp::inferResultTypesFromOperands() {
  return SmallVector<Type>{
      withShape(getType(),
                {getInput().getType().getDimSize(0), getType().getDimSize(1)})};
}

Types GroupedMatmulWeightGradOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}

Types StridedAllReduceOp::inferResultTypesFromOperands() {
  return likeFirstOperand(*this);
}

// ZeRO's pieces of an expert: flat tensors no batch split reaches, whose
// sizes the op states.
Types StridedReduceScatterOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}

Types StridedAllGatherOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}

Types StridedAllSliceOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}

// Every rank's rows may reach this rank's experts: [ranks x rows, hidden];
// with a capacity, at most as many as the rank's own rows.
Types ExpertDispatchOp::inferResultTypesFromOperands() {
  RankedTensorType rows = getRows().getType();
  int64_t ranks = getCounts().getType().getDimSize(0);
  int64_t received =
      getCapacityBounded() ? rows.getDimSize(0) : ranks * rows.getDimSize(0);
  return SmallVector<Type>{
      withShape(getReceived().getType(), {received, rows.getDimSize(1)}),
      getLocalOffsets().getType(), getCounts().getType()};
}

Types ExpertCombineOp::inferResultTypesFromOperands() {
  RankedTensorType received = getReceived().getType();
  int64_t ranks = getCounts().getType().getDimSize(0);
  int64_t rows = getCapacityBounded() ? received.getDimSize(0)
                                      : received.getDimSize(0) / ranks;
  return SmallVector<Type>{
      withShape(getType(), {rows, received.getDimSize(1)})};
}

// mt-fuse runs after every pass that retypes ops; a fusion, a multi-tensor
// update and an attention folded with its layout ops keep their types.
Types FusionOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types MatmulBiasOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types MatmulBiasGeluOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types MatmulGeluGradOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types MultiCastOp::inferResultTypesFromOperands() { return unchanged(*this); }
Types MatmulBiasGradOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types QKVAttentionOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types QKVAttentionGradOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types MergedAttentionOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types MergedAttentionGradOp::inferResultTypesFromOperands() {
  return unchanged(*this);
}
Types YieldOp::inferResultTypesFromOperands() { return unchanged(*this); }
