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

#define GET_OP_CLASSES
#include "dialects/MTRT/IR/MTRTOps.h.inc"

#endif // MEGATRON_DIALECTS_MTRT_IR_MTRTDIALECT_H
