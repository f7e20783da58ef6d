//===- ShapeInference.h - Result types of mt ops from operands --*- C++ -*-===//
//
// Recomputes the result types of an op from its operands' types. Passes that
// change the shape of an input (splitting the batch across data-parallel
// ranks) retype the function by walking its ops in order.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_ANALYSIS_SHAPEINFERENCE_H
#define MEGATRON_ANALYSIS_SHAPEINFERENCE_H

#include "mlir/IR/Operation.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::mt {

/// The result types `op` has given its current operand types: for mt ops,
/// `tensor.collapse_shape`, `shard.all_reduce` and splat `arith.constant`
/// (unchanged). Fails
/// with a diagnostic for other ops, `tensor.expand_shape` included: which of
/// its result dimensions takes a changed source dimension is ambiguous.
FailureOr<SmallVector<Type>> inferResultTypes(Operation *op);

/// Before `op`'s types are inferred in a batch split (data-parallel ranks,
/// microbatches): an op whose operands and result share one type and that
/// reads a value of `split` (its batch dimension already divided by
/// `parts`) needs every operand so divided. A splat constant read directly
/// is replaced by one of the split type (only such an op says which of a
/// constant's dimensions is the batch; a shape that merely matches says
/// nothing: a splat embedding table of the batch's size is no batch);
/// another value still whole is an error naming the operand and `what`
/// ("over dp 2 ranks").
LogicalResult splitSameTypeOperands(Operation *op,
                                    const llvm::DenseSet<Value> &split,
                                    int64_t parts, StringRef what);

} // namespace mlir::mt

#endif // MEGATRON_ANALYSIS_SHAPEINFERENCE_H
