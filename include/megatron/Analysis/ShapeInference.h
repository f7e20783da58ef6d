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

namespace mlir::mt {

/// The result types `op` has given its current operand types: for mt ops,
/// `tensor.collapse_shape`, `shard.all_reduce` and splat `arith.constant`
/// (unchanged). Fails
/// with a diagnostic for other ops, `tensor.expand_shape` included: which of
/// its result dimensions takes a changed source dimension is ambiguous.
FailureOr<SmallVector<Type>> inferResultTypes(Operation *op);

} // namespace mlir::mt

#endif // MEGATRON_ANALYSIS_SHAPEINFERENCE_H
