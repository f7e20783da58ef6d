// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse="gradient-accumulation-fusion=false" --split-input-file | FileCheck %s --check-prefix=OFF

// Gradient accumulation over microbatches, as mt-pipeline writes it: the
// first microbatch's weight gradient is the accumulator, each later one is
// added to it (mt.add in f32). The later GEMMs add their product to the
// accumulator themselves (accumulate), mt.matmul's and, after the bias
// gradient's fold, mt.matmul_bias_grad's; the bias gradients' adds stay.

// CHECK-LABEL: func.func @three_microbatches
// CHECK-SAME:    (%[[X0:[^:]+]]: tensor<8x8xbf16> {{.*}}, %[[DY0:[^:]+]]: tensor<8x16xbf16> {{.*}}, %[[X1:[^:]+]]: tensor<8x8xbf16> {{.*}}, %[[DY1:[^:]+]]: tensor<8x16xbf16> {{.*}}, %[[X2:[^:]+]]: tensor<8x8xbf16> {{.*}}, %[[DY2:[^:]+]]: tensor<8x16xbf16>
// CHECK-NEXT:    %[[W0:.+]], %[[B0:.+]] = mt.matmul_bias_grad %[[X0]], %[[DY0]] transpose_a {mt.microbatch = 0 : i64} : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> (tensor<8x16xf32>, tensor<16xf32>)
// CHECK-NEXT:    %[[W1:.+]], %[[B1:.+]] = mt.matmul_bias_grad %[[X1]], %[[DY1]] transpose_a accumulate(%[[W0]]) {mt.microbatch = 1 : i64} : (tensor<8x8xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
// CHECK-NEXT:    %[[BSUM:.+]] = mt.fusion ins(%[[B0]], %[[B1]] :
// CHECK:           mt.add
// CHECK:         %[[W2:.+]] = mt.matmul %[[X2]], %[[DY2]] transpose_a accumulate(%[[W1]]) {mt.microbatch = 2 : i64} : (tensor<8x8xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:    return %[[W2]], %[[BSUM]]
// OFF-LABEL:   func.func @three_microbatches
// OFF-NOT:       accumulate
// OFF-COUNT-3:   mt.add
// OFF-NOT:       accumulate
func.func @three_microbatches(%x0: tensor<8x8xbf16> {mt.param = "x0"}, %dy0: tensor<8x16xbf16> {mt.param = "dy0"},
                              %x1: tensor<8x8xbf16> {mt.param = "x1"}, %dy1: tensor<8x16xbf16> {mt.param = "dy1"},
                              %x2: tensor<8x8xbf16> {mt.param = "x2"}, %dy2: tensor<8x16xbf16> {mt.param = "dy2"})
    -> (tensor<8x16xf32>, tensor<16xf32>) {
  %b0 = mt.bias_add_grad %dy0 {mt.microbatch = 0 : i64} : tensor<8x16xbf16> -> tensor<16xf32>
  %w0 = mt.matmul %x0, %dy0 transpose_a {mt.microbatch = 0 : i64} : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %b1 = mt.bias_add_grad %dy1 {mt.microbatch = 1 : i64} : tensor<8x16xbf16> -> tensor<16xf32>
  %w1 = mt.matmul %x1, %dy1 transpose_a {mt.microbatch = 1 : i64} : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %acc1 = mt.add %w0, %w1 {mt.microbatch = 1 : i64} : tensor<8x16xf32>
  %bsum = mt.add %b0, %b1 {mt.microbatch = 1 : i64} : tensor<16xf32>
  // The product first this time: the add is folded in either order.
  %w2 = mt.matmul %x2, %dy2 transpose_a {mt.microbatch = 2 : i64} : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %acc2 = mt.add %w2, %acc1 {mt.microbatch = 2 : i64} : tensor<8x16xf32>
  return %acc2, %bsum : tensor<8x16xf32>, tensor<16xf32>
}

// -----

// The add stays where the GEMM could not write over the accumulator or
// would lose its product: an accumulator read again afterwards, a product
// read elsewhere, an accumulator that is an argument (persistent: a
// parameter's bytes), one computed after the GEMM, one that is a view, and
// a 16-bit sum (accumulated in bf16, as accumulate-allreduce-grads-in-fp32=false has it),
// and an activation gradient's product (dY W^T, transpose_b: not a weight
// gradient).

// CHECK-LABEL: func.func @kept
// CHECK-NOT:     accumulate
// CHECK-COUNT-8: mt.add
// CHECK-NOT:     accumulate
func.func @kept(%x: tensor<8x8xbf16> {mt.param = "x"}, %dy: tensor<8x16xbf16> {mt.param = "dy"},
                %arg: tensor<8x16xf32> {mt.param = "acc"}, %flat: tensor<128xf32> {mt.param = "flat"},
                %w: tensor<16x8xbf16> {mt.param = "w"})
    -> (tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xbf16>, tensor<8x16xf32>) {
  %w0 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %acc0 = mt.add %w0, %w0 : tensor<8x16xf32>
  // The accumulator %acc0 is returned too.
  %w1 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %sum1 = mt.add %acc0, %w1 : tensor<8x16xf32>
  // The product %w2 is returned too.
  %w2 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %sum2 = mt.add %sum1, %w2 : tensor<8x16xf32>
  // An argument as the accumulator.
  %w3 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %sum3 = mt.add %arg, %w3 : tensor<8x16xf32>
  // An accumulator computed after the GEMM (read by the add alone).
  %w4 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %late = mt.scale %sum3 {factor = 2.0 : f64} : tensor<8x16xf32>
  %sum4 = mt.add %late, %w4 : tensor<8x16xf32>
  // A view as the accumulator.
  %view = tensor.expand_shape %flat [[0, 1]] output_shape [8, 16] : tensor<128xf32> into tensor<8x16xf32>
  %w5 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %sum5 = mt.add %view, %w5 : tensor<8x16xf32>
  // A 16-bit sum.
  %h0 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %h1 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xbf16>
  %hsum = mt.add %h0, %h1 : tensor<8x16xbf16>
  // An activation gradient.
  %d0 = mt.matmul %x, %w transpose_b : (tensor<8x8xbf16>, tensor<16x8xbf16>) -> tensor<8x16xf32>
  %d1 = mt.matmul %x, %w transpose_b : (tensor<8x8xbf16>, tensor<16x8xbf16>) -> tensor<8x16xf32>
  %dsum = mt.add %d0, %d1 : tensor<8x16xf32>
  return %acc0, %sum2, %w2, %sum3, %sum4, %sum5, %hsum, %dsum : tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xf32>, tensor<8x16xbf16>, tensor<8x16xf32>
}

// -----

// A tied embedding's gradient added into the output head's (f32, the head's
// weight gradient first): mt.embedding_grad adds its rows' sums into the
// head's gradient itself, after its 16-bit table gradient, only widened to
// f32, is computed in f32 (widen-gradients).

// CHECK-LABEL: func.func @tied_embedding
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<8x16xbf16> {{.*}}, %[[DLOGITS:[^:]+]]: tensor<8x32xbf16> {{.*}}, %[[DX:[^:]+]]: tensor<2x4x16xbf16> {{.*}}, %[[IDS:[^:]+]]: tensor<2x4xi32>
// CHECK-NEXT:    %[[HEAD:.+]] = mt.matmul %[[DLOGITS]], %[[X]] transpose_a : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xf32>
// CHECK-NEXT:    %[[WTE:.+]] = mt.embedding_grad %[[DX]], %[[IDS]] accumulate(%[[HEAD]]) : (tensor<2x4x16xbf16>, tensor<2x4xi32>, tensor<32x16xf32>) -> tensor<32x16xf32>
// CHECK-NEXT:    return %[[WTE]]
// OFF-LABEL:   func.func @tied_embedding
// OFF:           mt.embedding_grad %{{.+}}, %{{.+}} : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<32x16xf32>
// OFF:           mt.add
func.func @tied_embedding(%x: tensor<8x16xbf16> {mt.param = "x"}, %dlogits: tensor<8x32xbf16> {mt.param = "dlogits"},
                          %dx: tensor<2x4x16xbf16> {mt.param = "dx"}, %ids: tensor<2x4xi32> {mt.input = "tokens"})
    -> tensor<32x16xf32> {
  %head16 = mt.matmul %dlogits, %x transpose_a : (tensor<8x32xbf16>, tensor<8x16xbf16>) -> tensor<32x16xbf16>
  %head = mt.cast %head16 : tensor<32x16xbf16> to tensor<32x16xf32>
  %emb16 = mt.embedding_grad %dx, %ids : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<32x16xbf16>
  %emb = mt.cast %emb16 : tensor<32x16xbf16> to tensor<32x16xf32>
  %wte = mt.add %head, %emb : tensor<32x16xf32>
  return %wte : tensor<32x16xf32>
}
