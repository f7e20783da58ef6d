//===- Passes.h - Lowering mt to runtime programs ---------------*- C++ -*-===//

#ifndef MEGATRON_PASSES_CONVERSION_MTTOMTRT_PASSES_H
#define MEGATRON_PASSES_CONVERSION_MTTOMTRT_PASSES_H

#include "dialects/MTRT/IR/MTRTDialect.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::mt {

#define GEN_PASS_DECL
#include "passes/Conversion/MTToMTRT/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Conversion/MTToMTRT/Passes.h.inc"

} // namespace mlir::mt

#endif // MEGATRON_PASSES_CONVERSION_MTTOMTRT_PASSES_H
