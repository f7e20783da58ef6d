//===- ShapeInference.cpp - Result types of mt ops from operands ----------===//

#include "megatron/Analysis/ShapeInference.h"

#include "dialects/MT/IR/MTOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::mt;

static RankedTensorType typeOf(Value value) {
  return cast<RankedTensorType>(value.getType());
}

static RankedTensorType withShape(RankedTensorType like,
                                  ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, like.getElementType());
}

FailureOr<SmallVector<Type>> mlir::mt::inferResultTypes(Operation *op) {
  // Ops whose results keep their types whatever the operands: parameter- and
  // scalar-shaped results.
  if (isa<PositionEmbeddingOp, PositionEmbeddingGradOp, EmbeddingGradOp,
          BiasAddGradOp, CrossEntropyOp, GlobalNormOp, SumSquaresOp, SqrtOp,
          ClipScaleOp, arith::ConstantOp>(op))
    return SmallVector<Type>(op->getResultTypes());
  // Ops whose results have the type of their first operand.
  if (isa<LayerNormOp, AddOp, BiasAddOp, GeluOp, DropoutOp, AttentionOp,
          ScaleOp, RMSNormOp, SiluOp, SiluGradOp, MulOp, RopeOp,
          shard::AllReduceOp>(op))
    return SmallVector<Type>(op->getNumResults(), op->getOperand(0).getType());

  // A collective that gathers, scatters or slices along dimension `axis`
  // keeps that dimension's result size; the others follow the operand (the
  // batch split of data parallelism is along another dimension).
  std::optional<int64_t> axis;
  if (auto gather = dyn_cast<shard::AllGatherOp>(op))
    axis = gather.getGatherAxis().getSExtValue();
  else if (auto scatter = dyn_cast<shard::ReduceScatterOp>(op))
    axis = scatter.getScatterAxis().getSExtValue();
  else if (auto slice = dyn_cast<shard::AllSliceOp>(op))
    axis = slice.getSliceAxis().getSExtValue();
  if (axis) {
    auto operand = cast<RankedTensorType>(op->getOperand(0).getType());
    auto result = cast<RankedTensorType>(op->getResult(0).getType());
    SmallVector<int64_t> shape(operand.getShape());
    shape[*axis] = result.getDimSize(*axis);
    return SmallVector<Type>{withShape(result, shape)};
  }
  using Result = FailureOr<SmallVector<Type>>;
  return llvm::TypeSwitch<Operation *, Result>(op)
      .Case([](EmbeddingOp op) -> Result {
        SmallVector<int64_t> shape(op.getIds().getType().getShape());
        shape.push_back(op.getTable().getType().getDimSize(1));
        return SmallVector<Type>{withShape(op.getType(), shape)};
      })
      .Case([](LayerNormGradOp op) -> Result {
        Type weight = op.getWeight().getType();
        return SmallVector<Type>{op.getInput().getType(), weight, weight};
      })
      .Case([](RMSNormGradOp op) -> Result {
        return SmallVector<Type>{op.getInput().getType(),
                                 op.getWeight().getType()};
      })
      .Case([](RepeatKVOp op) -> Result {
        RankedTensorType input = op.getInput().getType();
        SmallVector<int64_t> shape(input.getShape());
        shape[1] *= int64_t(op.getGroups());
        return SmallVector<Type>{withShape(op.getType(), shape)};
      })
      .Case([](RepeatKVGradOp op) -> Result {
        RankedTensorType output = op.getGradOutput().getType();
        SmallVector<int64_t> shape(output.getShape());
        shape[1] /= int64_t(op.getGroups());
        return SmallVector<Type>{withShape(op.getType(), shape)};
      })
      .Case([](GeluGradOp op) -> Result {
        return SmallVector<Type>{op.getInput().getType()};
      })
      .Case([](AttentionGradOp op) -> Result {
        return SmallVector<Type>(3, op.getQuery().getType());
      })
      .Case([](CrossEntropyGradOp op) -> Result {
        return SmallVector<Type>{op.getLogits().getType()};
      })
      .Case([](AdamWOp op) -> Result {
        return SmallVector<Type>(3, op.getParam().getType());
      })
      .Case([](MatmulOp op) -> Result {
        RankedTensorType lhs = typeOf(op.getLhs()), rhs = typeOf(op.getRhs());
        int64_t rank = lhs.getRank();
        SmallVector<int64_t> shape(lhs.getShape().drop_back(2));
        shape.push_back(
            lhs.getDimSize(op.getTransposeA() ? rank - 1 : rank - 2));
        int64_t rhsRank = rhs.getRank();
        shape.push_back(
            rhs.getDimSize(op.getTransposeB() ? rhsRank - 2 : rhsRank - 1));
        return SmallVector<Type>{withShape(op.getType(), shape)};
      })
      .Case([](SplitHeadsOp op) -> Result {
        RankedTensorType input = op.getInput().getType();
        RankedTensorType old = typeOf(op.getResult(0));
        RankedTensorType type =
            withShape(old, {input.getDimSize(0), old.getDimSize(1),
                            input.getDimSize(1), old.getDimSize(3)});
        return SmallVector<Type>(op.getNumResults(), type);
      })
      .Case([](MergeHeadsOp op) -> Result {
        RankedTensorType input = typeOf(op.getInputs().front());
        int64_t width = int64_t(op.getInputs().size()) * input.getDimSize(1) *
                        input.getDimSize(3);
        return SmallVector<Type>{withShape(
            op.getType(), {input.getDimSize(0), input.getDimSize(2), width})};
      })
      .Case([](tensor::CollapseShapeOp op) -> Result {
        return SmallVector<Type>{tensor::CollapseShapeOp::inferCollapsedType(
            op.getSrcType(), op.getReassociationIndices())};
      })
      .Default([](Operation *op) -> Result {
        return op->emitOpError()
               << "has no shape rule: cannot retype it for parallelization";
      });
}
