//===- ShapeInference.cpp - Result types of mt ops from operands ----------===//

#include "megatron/Analysis/ShapeInference.h"

#include "dialects/MT/IR/MTOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::mt;

static RankedTensorType withShape(RankedTensorType like,
                                  ArrayRef<int64_t> shape) {
  return RankedTensorType::get(shape, like.getElementType());
}

LogicalResult
mlir::mt::splitSameTypeOperands(Operation *op,
                                const llvm::DenseSet<Value> &split,
                                int64_t parts, StringRef what) {
  if (!op->hasTrait<OpTrait::SameOperandsAndResultType>())
    return success();
  OpOperand *splitOperand =
      llvm::find_if(op->getOpOperands(), [&](OpOperand &operand) {
        return split.contains(operand.get());
      });
  if (splitOperand == op->getOpOperands().end())
    return success();
  Type splitType = splitOperand->get().getType();
  for (OpOperand &operand : op->getOpOperands()) {
    if (operand.get().getType() == splitType)
      continue;
    auto constant = operand.get().getDefiningOp<arith::ConstantOp>();
    auto value =
        constant ? dyn_cast<DenseElementsAttr>(constant.getValue()) : nullptr;
    if (!value || !value.isSplat())
      return op->emitOpError()
             << "reads operand #" << operand.getOperandNumber() << " whole ("
             << operand.get().getType() << ") beside operand #"
             << splitOperand->getOperandNumber() << "'s batch split " << what
             << " (" << splitType
             << "): only the step's data inputs, what is computed from them, "
                "and splat constants read directly are split with the batch";
    OpBuilder builder(constant);
    auto type = cast<ShapedType>(splitType);
    operand.set(arith::ConstantOp::create(builder, constant.getLoc(), type,
                                          value.resizeSplat(type)));
  }
  return success();
}

FailureOr<SmallVector<Type>> mlir::mt::inferResultTypes(Operation *op) {
  // mt ops state their own rule.
  if (auto rule = dyn_cast<ShapeRuleOpInterface>(op))
    return rule.inferResultTypesFromOperands();
  // Upstream ops the passes emit around them.
  if (isa<arith::ConstantOp>(op))
    return SmallVector<Type>(op->getResultTypes());
  if (isa<shard::AllReduceOp>(op))
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
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return SmallVector<Type>{tensor::CollapseShapeOp::inferCollapsedType(
        collapse.getSrcType(), collapse.getReassociationIndices())};
  return op->emitOpError()
         << "has no shape rule: cannot retype it for parallelization";
}
