//===- TensorParallel.h - Megatron tensor parallelism on a step -*- C++ -*-===//

#ifndef MEGATRON_PASSES_PARALLELIZE_TENSORPARALLEL_H
#define MEGATRON_PASSES_PARALLELIZE_TENSORPARALLEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::mt {

/// Pins Megatron-LM's tensor-parallel layouts in the training step
/// `function` as `shard` shardings on axis `gridAxis` of the device grid
/// `grid` (with `sequenceParallel`, also its sequence-parallel activations),
/// for upstream `sharding-propagation` and `shard-partition`; the
/// vocabulary must divide by `tp` (padVocabulary). Split arguments get the attributes the
/// runtime reads (`mt.full_shape`, `mt.shard_axis`, `mt.shard_dim`,
/// `mt.shard_chunks`). Fails with a diagnostic on a parameter it cannot
/// split.
LogicalResult annotateTensorParallel(func::FuncOp function, int64_t tp,
                                     bool sequenceParallel, int16_t gridAxis,
                                     StringRef grid);

/// After the partition: folds an all-reduce followed by the rank's slice
/// into a reduce-scatter, drops resharding casts between equal types,
/// describes split results as their arguments, and counts the collectives
/// in `numCollectives`.
void finishTensorParallel(func::FuncOp function, int64_t &numCollectives);

} // namespace mlir::mt

#endif // MEGATRON_PASSES_PARALLELIZE_TENSORPARALLEL_H
