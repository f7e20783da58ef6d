//===- TensorParallel.h - Megatron tensor parallelism on a step -*- C++ -*-===//

#ifndef MEGATRON_PASSES_PARALLELIZE_TENSORPARALLEL_H
#define MEGATRON_PASSES_PARALLELIZE_TENSORPARALLEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::mt {

/// Partitions the training step `function` across `tp` ranks on axis
/// `gridAxis` of the device grid `grid`, inserting the collectives
/// Megatron-LM's tensor parallelism needs (with `sequenceParallel`, its
/// sequence parallelism: activations between tensor-parallel regions split
/// along the sequence, reduce-scatters instead of all-reduces, all-gathers
/// before each region); counts them in
/// `numCollectives`. Fails with a diagnostic on an op it cannot partition.
LogicalResult partitionTensorParallel(func::FuncOp function, int64_t tp,
                                      bool sequenceParallel, int16_t gridAxis,
                                      StringRef grid, int64_t &numCollectives);

} // namespace mlir::mt

#endif // MEGATRON_PASSES_PARALLELIZE_TENSORPARALLEL_H
