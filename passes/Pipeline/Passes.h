//===- Passes.h - Pipeline parallelism --------------------------*- C++ -*-===//

#ifndef MEGATRON_PASSES_PIPELINE_PASSES_H
#define MEGATRON_PASSES_PIPELINE_PASSES_H

#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"

namespace mlir::mt {

#define GEN_PASS_DECL
#include "passes/Pipeline/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Pipeline/Passes.h.inc"

} // namespace mlir::mt

#endif // MEGATRON_PASSES_PIPELINE_PASSES_H
