//===- Passes.h - Parallelization of training steps -------------*- C++ -*-===//

#ifndef MEGATRON_PASSES_PARALLELIZE_PASSES_H
#define MEGATRON_PASSES_PARALLELIZE_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::mt {

#define GEN_PASS_DECL
#include "passes/Parallelize/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Parallelize/Passes.h.inc"

} // namespace mlir::mt

#endif // MEGATRON_PASSES_PARALLELIZE_PASSES_H
