//===- MTOps.h - mt dialect operations --------------------------*- C++ -*-===//

#ifndef MEGATRON_DIALECTS_MT_IR_MTOPS_H
#define MEGATRON_DIALECTS_MT_IR_MTOPS_H

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MT/IR/MTInterfaces.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir::mt {
/// Operand 0 is the gradient of the step's loss (MT_LossGradient in
/// MTDialect.td).
template <typename ConcreteType>
class LossGradient : public OpTrait::TraitBase<ConcreteType, LossGradient> {};
} // namespace mlir::mt

#define GET_OP_CLASSES
#include "dialects/MT/IR/MTOps.h.inc"

namespace mlir::mt {
/// The row_block of an mt.layer_norm_grad or mt.rms_norm_grad (partial sums
/// per block of rows), if `op` is one and has it.
std::optional<uint64_t> getNormGradRowBlock(Operation *op);
/// Sets the row_block of an mt.layer_norm_grad or mt.rms_norm_grad.
void setNormGradRowBlock(Operation *op, uint64_t rows);
/// The accumulator of an accumulating op (mt.matmul, mt.matmul_bias_grad or
/// mt.embedding_grad with `accumulate`), or null.
Value getAccumulator(Operation *op);
/// Whether an accumulating op may write its sum over `acc`'s bytes, as the
/// lowering does: nothing else reads `acc`, and an op of the step computed
/// it into bytes of its own (not an argument, a view, a transfer, an empty
/// tensor or an optimizer update, whose bytes are another value's).
bool isWritableAccumulator(Value acc);
} // namespace mlir::mt

#endif // MEGATRON_DIALECTS_MT_IR_MTOPS_H
