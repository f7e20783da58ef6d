//===- Passes.h - Kernel fusion ---------------------------------*- C++ -*-===//

#ifndef MEGATRON_PASSES_FUSION_PASSES_H
#define MEGATRON_PASSES_FUSION_PASSES_H

#include "dialects/MT/IR/MTDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::mt {

#define GEN_PASS_DECL
#include "passes/Fusion/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Fusion/Passes.h.inc"

} // namespace mlir::mt

#endif // MEGATRON_PASSES_FUSION_PASSES_H
