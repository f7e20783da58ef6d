//===- InitAll.cpp - Register everything megatron-mlir provides -----------===//

#include "megatron/InitAll.h"

#include "dialects/MT/IR/MTDialect.h"
#include "dialects/MT/Transforms/ShardingInterfaceImpl.h"
#include "dialects/MTRT/IR/MTRTDialect.h"
#include "megatron/Pipelines/TrainPipeline.h"
#include "passes/Analysis/Passes.h"
#include "passes/Autodiff/Passes.h"
#include "passes/Conversion/MTToMTRT/Passes.h"
#include "passes/Fusion/Passes.h"
#include "passes/Parallelize/Passes.h"
#include "passes/Pipeline/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::mt::registerAllMegatronDialects(DialectRegistry &registry) {
  registry.insert<MTDialect, mtrt::MTRTDialect, arith::ArithDialect,
                  func::FuncDialect, tensor::TensorDialect>();
  registerShardingInterfaceExternalModels(registry);
}

void mlir::mt::registerAllMegatronPasses() {
  registerMTAnalysisPasses();
  registerMTAutodiffPasses();
  registerMTToMTRTPasses();
  registerMTFusionPasses();
  registerMTParallelizePasses();
  registerMTPipelinePasses();
  registerTrainPipeline();
}
