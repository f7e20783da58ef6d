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

#define GET_OP_CLASSES
#include "dialects/MT/IR/MTOps.h.inc"

#endif // MEGATRON_DIALECTS_MT_IR_MTOPS_H
