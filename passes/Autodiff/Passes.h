//===- Passes.h - Training-step construction --------------------*- C++ -*-===//

#ifndef MEGATRON_PASSES_AUTODIFF_PASSES_H
#define MEGATRON_PASSES_AUTODIFF_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::mt {

#define GEN_PASS_DECL
#include "passes/Autodiff/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Autodiff/Passes.h.inc"

} // namespace mlir::mt

#endif // MEGATRON_PASSES_AUTODIFF_PASSES_H
