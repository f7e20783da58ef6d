func.func @shared16(%ids: tensor<2x4xi32> {mt.input = "tokens"}, %labels: tensor<2x4xi32> {mt.input = "labels"},
  %wte: tensor<32x8xf32> {mt.param = "wte.weight", mt.init = {kind = "normal", std = 2.0e-01 : f64}},
  %router: tensor<8x16xf32> {mt.param = "router.weight", mt.init = {kind = "normal", std = 2.0e-01 : f64}},
  %w0: tensor<6x8xf32> {mt.param = "expert0.weight", mt.init = {kind = "normal", std = 2.0e-01 : f64}},
  %head: tensor<6x32xf32> {mt.param = "head.weight", mt.init = {kind = "normal", std = 2.0e-01 : f64}}) -> tensor<f32> {
  %x3 = mt.embedding %wte, %ids : (tensor<32x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %logits = mt.matmul %x3, %router : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %w, %e = mt.top_k_gating %logits {k = 1 : i64} : tensor<2x4x16xf32> -> tensor<2x4x1xf32>, tensor<2x4x1xi32>
  %pos, %offsets = mt.moe_route %e {num_experts = 16 : i64} : tensor<2x4x1xi32> -> tensor<2x4x1xi32>, tensor<17xi32>
  %rows = mt.moe_permute %x3, %pos : tensor<2x4x8xf32>, tensor<2x4x1xi32> -> tensor<8x8xf32>
  %h = mt.grouped_matmul %rows, %offsets, %w0, %w0, %w0, %w0, %w0, %w0, %w0, %w0, %w0, %w0, %w0, %w0, %w0, %w0, %w0, %w0 transpose_b : (tensor<8x8xf32>, tensor<17xi32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<8x6xf32>
  %y = mt.moe_unpermute %h, %pos weights(%w : tensor<2x4x1xf32>) : tensor<8x6xf32>, tensor<2x4x1xi32> -> tensor<2x4x6xf32>
  %y3 = mt.silu %y : tensor<2x4x6xf32>
  %out = mt.matmul %y3, %head : (tensor<2x4x6xf32>, tensor<6x32xf32>) -> tensor<2x4x32xf32>
  %loss = mt.cross_entropy %out, %labels : (tensor<2x4x32xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
