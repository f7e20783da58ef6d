// RUN: megatron-opt %s --mt-fuse | FileCheck %s

// Neither place works: the loss is read before the gradient, whose loss
// gradient is computed from it. The ops stay apart; so does a
// vocab-parallel loss (tensor parallelism reduces across ranks inside its
// kernel), and one with i64 labels (generated kernels read i32).

// CHECK-LABEL: func.func @stays_apart
// CHECK-NOT:     mt.fusion
// CHECK:         mt.cross_entropy %{{.+}}, %{{.+}} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
// CHECK:         mt.cross_entropy_grad
// CHECK-LABEL: func.func @vocab_parallel
// CHECK-NOT:     mt.fusion
// CHECK-LABEL: func.func @i64_labels
// CHECK-NOT:     mt.fusion
func.func @stays_apart(%logits: tensor<2x4x16xf32>, %labels: tensor<2x4xi32>)
    -> (tensor<f32>, tensor<2x4x16xf32>) {
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %g = mt.sqrt %loss : tensor<f32>
  %d = mt.cross_entropy_grad %g, %logits, %labels : (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  return %loss, %d : tensor<f32>, tensor<2x4x16xf32>
}
func.func @vocab_parallel(%logits: tensor<2x4x16xf32>, %labels: tensor<2x4xi32>, %seed: tensor<f32>)
    -> (tensor<f32>, tensor<2x4x16xf32>) {
  %loss = mt.cross_entropy %logits, %labels {mt.tp_vocab_axis = 0 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %d = mt.cross_entropy_grad %seed, %logits, %labels {mt.tp_vocab_axis = 0 : i64} : (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  return %loss, %d : tensor<f32>, tensor<2x4x16xf32>
}
func.func @i64_labels(%logits: tensor<2x4x16xf32>, %labels: tensor<2x4xi64>, %seed: tensor<f32>)
    -> (tensor<f32>, tensor<2x4x16xf32>) {
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi64>) -> tensor<f32>
  %d = mt.cross_entropy_grad %seed, %logits, %labels : (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi64>) -> tensor<2x4x16xf32>
  return %loss, %d : tensor<f32>, tensor<2x4x16xf32>
}
