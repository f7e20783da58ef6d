//===- MTInterfaces.h - Interfaces of the mt ops ----------------*- C++ -*-===//

#ifndef MEGATRON_DIALECTS_MT_IR_MTINTERFACES_H
#define MEGATRON_DIALECTS_MT_IR_MTINTERFACES_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpDefinition.h"

namespace mlir::mt {

/// What a derivative rule (DifferentiableOpInterface) is given by
/// mt-autodiff: the gradients of the op's results, which operands need
/// gradients, where to accumulate them, and a builder whose ops are tagged
/// as the backward of the op being differentiated (its layer, the backward
/// phase).
class GradientEmitter {
public:
  virtual ~GradientEmitter() = default;

  /// The gradient of result `index` of the op being differentiated; null
  /// when the loss does not depend on that result.
  virtual Value resultGradient(unsigned index) = 0;
  /// Whether the loss depends on `value` (only such values get gradients).
  virtual bool needsGradient(Value value) = 0;
  /// Adds `grad` to the gradient of `value` (nothing if it needs none).
  virtual void accumulate(Value value, Value grad) = 0;
  virtual OpBuilder &getBuilder() = 0;

  /// Creates a gradient op at the insertion point.
  template <typename OpTy, typename... Args> OpTy create(Args &&...args) {
    auto op =
        OpTy::create(getBuilder(), currentLoc(), std::forward<Args>(args)...);
    tag(op);
    return op;
  }

protected:
  virtual Location currentLoc() = 0;
  virtual void tag(Operation *op) = 0;
};

} // namespace mlir::mt

#include "dialects/MT/IR/MTInterfaces.h.inc"

#endif // MEGATRON_DIALECTS_MT_IR_MTINTERFACES_H
