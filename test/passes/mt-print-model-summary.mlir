// RUN: megatron-opt %s --mt-print-model-summary --split-input-file --verify-diagnostics -o /dev/null 2>&1 | FileCheck %s

// The summary counts parameters (a tied embedding once), layers (distinct
// mt.layer values) and 6N plus 12 S D per attention op.

// CHECK-LABEL: model @one_block
// CHECK-NEXT:   layers: 1
// 64*16 (wte) + 8*16 (wpe) = 1152
// CHECK-NEXT:   parameters: 1152
// CHECK-NEXT:   tokens per micro-batch: 16
// 6*1152 = 6912; 12 * seq 8 * (2 heads * 8 head_dim) = 1536
// CHECK-NEXT:   training FLOPs per token: 8448 (6N = 6912, attention = 1536)
// CHECK-NEXT:   training FLOPs per micro-batch: 135168
func.func @one_block(%ids: tensor<2x8xi32>, %labels: tensor<2x8xi32>,
                     %wte: tensor<64x16xf32> {mt.param = "wte.weight"},
                     %wpe: tensor<8x16xf32> {mt.param = "wpe.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<64x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  %pos = mt.position_embedding %wpe : tensor<8x16xf32> -> tensor<8x16xf32>
  %h = mt.bias_add %x, %pos : tensor<2x8x16xf32>, tensor<8x16xf32>
  %heads = mt.split_heads %h {mt.layer = 0} : tensor<2x8x16xf32> -> tensor<2x2x8x8xf32>
  %a = mt.attention %heads, %heads, %heads {mt.layer = 0} : tensor<2x2x8x8xf32>
  %m = mt.merge_heads %a {mt.layer = 0} : tensor<2x2x8x8xf32> -> tensor<2x8x16xf32>
  %logits = mt.matmul %m, %wte transpose_b : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x8x64xf32>, tensor<2x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Functions without parameters are not models and print nothing.

// CHECK-NOT: model @helper
func.func @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// expected-error @below {{cannot summarize model @negative_no_tokens: no integer tensor argument holds the token ids}}
func.func @negative_no_tokens(%w: tensor<4x4xf32> {mt.param = "w"}) -> tensor<4x4xf32> {
  return %w : tensor<4x4xf32>
}
