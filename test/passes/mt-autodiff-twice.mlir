// mt-autodiff applied to its own output: the step returns its loss and its
// updated parameters and state, and was refused as "needs a function
// returning one tensor<f32> loss, got ..." with the whole signature.
// RUN: megatron-opt %s --mt-autodiff -o %t.mlir
// RUN: not megatron-opt %t.mlir --mt-autodiff 2>&1 | FileCheck %s
// RUN: not megatron-opt %t.mlir --mt-train-pipeline 2>&1 | FileCheck %s
// CHECK: error: 'func.func' op is a training step already (it holds mt.adamw); mt-autodiff turns a forward graph returning its loss into one: apply it once

func.func @step(%x: tensor<2x4x16xf32> {mt.input = "tokens"},
                %labels: tensor<2x4xi32> {mt.input = "labels"},
                %b: tensor<16xf32> {mt.param = "b"}) -> tensor<f32> {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
