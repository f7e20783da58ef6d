//===- Passes.h - Analysis passes over mt models ----------------*- C++ -*-===//

#ifndef MEGATRON_PASSES_ANALYSIS_PASSES_H
#define MEGATRON_PASSES_ANALYSIS_PASSES_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::mt {

#define GEN_PASS_DECL
#include "passes/Analysis/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Analysis/Passes.h.inc"

} // namespace mlir::mt

#endif // MEGATRON_PASSES_ANALYSIS_PASSES_H
