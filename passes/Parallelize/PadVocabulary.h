//===- PadVocabulary.h - Vocabulary tables padded to a multiple -*- C++ -*-===//

#ifndef MEGATRON_PASSES_PARALLELIZE_PADVOCABULARY_H
#define MEGATRON_PASSES_PARALLELIZE_PADVOCABULARY_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::mt {

/// Pads the rows of every vocabulary table of the training step `function`
/// (each parameter whose `mt.parallel` role is `vocab`, and its optimizer
/// state) to a multiple of `multiple`, as Megatron-LM pads its vocabulary
/// to a multiple of `--make-vocab-size-divisible-by` times tp. The padded
/// rows are zero, never looked up, masked out of the cross-entropy and
/// absent from checkpoints: padded arguments get `mt.valid_rows` (the true
/// vocabulary), the embedding and cross-entropy ops `mt.vocab_size`, and
/// the ops after them are retyped. A table padded before keeps its true
/// size. Fails (with a diagnostic) where an op cannot be retyped.
LogicalResult padVocabulary(func::FuncOp function, int64_t multiple);

} // namespace mlir::mt

#endif // MEGATRON_PASSES_PARALLELIZE_PADVOCABULARY_H
