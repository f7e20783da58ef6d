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
/// Megatron-LM's expert capacity (moe_utils.get_capacity, of `tokens * k`
/// choices): the most choices of `tokens` tokens, `k` each, that one of
/// `experts` experts takes at capacity factor `factor`, ceil(tokens * k /
/// experts * factor), at least 1 and at most `tokens` (an expert takes a
/// token once). The factor is positive and finite.
int64_t expertCapacity(int64_t tokens, int64_t k, int64_t experts,
                       double factor);
/// The rows of a mixture of experts' routing of `tokens` tokens, `k` choices
/// each: `tokens * k`, or with a capacity factor (when `experts` > 0), the
/// experts' capacity rows `experts * expertCapacity(...)`.
int64_t routedRows(int64_t tokens, int64_t k, int64_t experts,
                   std::optional<double> factor);
/// An optional float attribute's value as a double (the accessors of an
/// OptionalAttr<F64Attr>, such as a routing's capacity_factor, return an
/// APFloat).
inline std::optional<double> asDouble(std::optional<llvm::APFloat> value) {
  if (!value)
    return std::nullopt;
  return value->convertToDouble();
}
} // namespace mlir::mt

#endif // MEGATRON_DIALECTS_MT_IR_MTOPS_H
