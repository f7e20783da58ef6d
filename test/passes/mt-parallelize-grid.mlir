// RUN: megatron-opt %s --mt-autodiff --mt-parallelize="dp=2" --split-input-file --verify-diagnostics

// An existing @grid must have the shape dp x tp: a 4x1 grid cannot carry a
// batch split in two.

module {
  // expected-error @below {{'shard.grid' op has shape 4x1 but mt-parallelize needs 2x1 (dp x tp)}}
  shard.grid @grid(shape = 4x1)
  func.func @negative_grid(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                           %labels: tensor<2x4xi32> {mt.input = "labels"},
                           %wte: tensor<8x4xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
    %x = mt.embedding %wte, %ids : (tensor<8x4xf32>, tensor<2x4xi32>) -> tensor<2x4x4xf32>
    %logits = mt.matmul %x, %wte transpose_b : (tensor<2x4x4xf32>, tensor<8x4xf32>) -> tensor<2x4x8xf32>
    %loss = mt.cross_entropy %logits, %labels : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
    return %loss : tensor<f32>
  }
}
