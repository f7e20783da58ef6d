//===- MTDialect.h - The mt dialect -----------------------------*- C++ -*-===//

#ifndef MEGATRON_DIALECTS_MT_IR_MTDIALECT_H
#define MEGATRON_DIALECTS_MT_IR_MTDIALECT_H

#include "mlir/IR/Dialect.h"

#include "dialects/MT/IR/MTOpsDialect.h.inc"

#endif // MEGATRON_DIALECTS_MT_IR_MTDIALECT_H
