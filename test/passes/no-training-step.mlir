// The passes that transform a training step refuse a module without one
// (a forward graph, before mt-autodiff) when asked for work; see also
// no-training-step.test (the importer's GPT-2, and the defaults' no-op).
// RUN: rm -rf %t && split-file %s %t
// RUN: megatron-opt %t/parallelize.mlir --mt-parallelize="tp=2" --verify-diagnostics
// RUN: megatron-opt %t/pipeline.mlir --mt-pipeline="pp=2 microbatches=2" --verify-diagnostics
// RUN: megatron-opt %t/remat.mlir --mt-remat="remat=full" --verify-diagnostics
// RUN: megatron-opt %t/budget.mlir --mt-remat-budget="budget=4096" --verify-diagnostics

//--- parallelize.mlir
// expected-error@+1 {{mt-parallelize: tp=2 transforms a training step, but the module has none (no function holds an mt.adamw): run mt-autodiff first, or --mt-train-pipeline, which runs the passes in order}}
module {
  func.func @negative_forward_graph(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {mt.param = "w"}) -> tensor<4x8xf32> {
    %y = mt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

//--- pipeline.mlir
// expected-error@+1 {{mt-pipeline: pp=2 transforms a training step, but the module has none}}
module {
  func.func @negative_forward_graph(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {mt.param = "w"}) -> tensor<4x8xf32> {
    %y = mt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

//--- remat.mlir
// expected-error@+1 {{mt-remat: remat=full transforms a training step, but the module has none}}
module {
  func.func @negative_forward_graph(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {mt.param = "w"}) -> tensor<4x8xf32> {
    %y = mt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}

//--- budget.mlir
// expected-error@+1 {{mt-remat-budget: budget=4096 transforms a training step, but the module has none}}
module {
  func.func @negative_forward_graph(%x: tensor<4x8xf32>, %w: tensor<8x8xf32> {mt.param = "w"}) -> tensor<4x8xf32> {
    %y = mt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    return %y : tensor<4x8xf32>
  }
}
