//===- ExpertParallel.h - Experts split over ranks -------------*- C++ -*-===//

#ifndef MEGATRON_PASSES_PARALLELIZE_EXPERTPARALLEL_H
#define MEGATRON_PASSES_PARALLELIZE_EXPERTPARALLEL_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/DenseSet.h"

namespace mlir::mt {

/// Expert parallelism, as Megatron-LM's `--expert-model-parallel-size` with
/// its all-to-all token dispatcher: the experts of every `mt.grouped_matmul`
/// in the training step `function` are split over groups of `ranks`
/// consecutive ranks of axis `gridAxis` of grid `grid` (which they divide),
/// the r-th rank of a group holding experts r * E/ranks to (r + 1) *
/// E/ranks - 1. Each rank's rows go to their experts' ranks in its group
/// before the grouped matmuls (`mt.expert_dispatch`) and come back before
/// anything that is not one row's computation reads them
/// (`mt.expert_combine`). The step keeps the arguments, updates and results
/// of the first E/ranks experts, each naming every group rank's expert
/// (`mt.expert_names`, `mt.expert_axis`), and loses the others'.
/// `localUpdates` receives the updates of the experts kept: their
/// gradients are complete on their rank once summed over the groups (the
/// caller's reduction). Fails with a diagnostic on a step whose experts it
/// cannot split.
LogicalResult distributeExperts(func::FuncOp function, int64_t ranks,
                                int16_t gridAxis, StringRef grid,
                                llvm::DenseSet<Operation *> &localUpdates);

} // namespace mlir::mt

#endif // MEGATRON_PASSES_PARALLELIZE_EXPERTPARALLEL_H
