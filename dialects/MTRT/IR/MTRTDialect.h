//===- MTRTDialect.h - The runtime-program dialect --------------*- C++ -*-===//

#ifndef MEGATRON_DIALECTS_MTRT_IR_MTRTDIALECT_H
#define MEGATRON_DIALECTS_MTRT_IR_MTRTDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/RegionKindInterface.h"
#include "mlir/IR/SymbolTable.h"

#include "dialects/MTRT/IR/MTRTOpsDialect.h.inc"

namespace mlir::mtrt {
/// The most bytes a program's arena may hold (`arena_bytes`): far beyond
/// any device, and small enough that offsets, alignment and sums of buffers
/// stay in int64. mt-lower-to-runtime plans within it; the runtime's loader
/// refuses more (its mtrt::kMaxArenaBytes, which the exporter asserts is
/// this one).
constexpr int64_t kMaxArenaBytes = int64_t(1) << 60;
} // namespace mlir::mtrt

#define GET_OP_CLASSES
#include "dialects/MTRT/IR/MTRTOps.h.inc"

#endif // MEGATRON_DIALECTS_MTRT_IR_MTRTDIALECT_H
