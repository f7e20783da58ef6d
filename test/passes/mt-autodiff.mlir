// RUN: megatron-opt %s --mt-autodiff --split-input-file --verify-diagnostics | FileCheck %s

// mt-autodiff turns a forward graph returning a scalar loss into one training
// step: forward, reverse-mode backward, global norm, clipping and AdamW.
// Every op it emits states its phase (mt.phase = "backward" or "optimizer";
// the model's own ops are the forward pass), which later passes read.

//===----------------------------------------------------------------------===//
// Signature of the training step
//===----------------------------------------------------------------------===//

// The forward arguments stay first; then exp_avg of every parameter, then
// exp_avg_sq of every parameter (each with mt.param and mt.state), then the
// seven run-time scalars. Results: loss, the updated parameters, exp_avg,
// exp_avg_sq, grad_norm.

// CHECK-LABEL: func.func @signature
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32> {mt.input = "tokens"}
// CHECK-SAME:    %[[LABELS:[^:]+]]: tensor<2x4xi32> {mt.input = "labels"}
// CHECK-SAME:    %[[W:[^:]+]]: tensor<8x16xf32> {mt.param = "fc.weight"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<16xf32> {mt.param = "fc.bias"}
// CHECK-SAME:    %[[W_M:[^:]+]]: tensor<8x16xf32> {mt.param = "fc.weight", mt.state = "exp_avg"}
// CHECK-SAME:    %[[B_M:[^:]+]]: tensor<16xf32> {mt.param = "fc.bias", mt.state = "exp_avg"}
// CHECK-SAME:    %[[W_V:[^:]+]]: tensor<8x16xf32> {mt.param = "fc.weight", mt.state = "exp_avg_sq"}
// CHECK-SAME:    %[[B_V:[^:]+]]: tensor<16xf32> {mt.param = "fc.bias", mt.state = "exp_avg_sq"}
// CHECK-SAME:    %[[STEP:[^:]+]]: tensor<f32> {mt.input = "step"}
// CHECK-SAME:    %[[LR:[^:]+]]: tensor<f32> {mt.input = "lr"}
// CHECK-SAME:    %[[BETA1:[^:]+]]: tensor<f32> {mt.input = "adam_beta1"}
// CHECK-SAME:    %[[BETA2:[^:]+]]: tensor<f32> {mt.input = "adam_beta2"}
// CHECK-SAME:    %[[EPS:[^:]+]]: tensor<f32> {mt.input = "adam_eps"}
// CHECK-SAME:    %[[WD:[^:]+]]: tensor<f32> {mt.input = "weight_decay"}
// CHECK-SAME:    %[[CLIP:[^:]+]]: tensor<f32> {mt.input = "clip_grad"})
// CHECK-SAME:    -> (tensor<f32> {mt.output = "loss"},
// CHECK-SAME:    tensor<8x16xf32> {mt.param = "fc.weight"}, tensor<16xf32> {mt.param = "fc.bias"},
// CHECK-SAME:    tensor<8x16xf32> {mt.param = "fc.weight", mt.state = "exp_avg"}, tensor<16xf32> {mt.param = "fc.bias", mt.state = "exp_avg"},
// CHECK-SAME:    tensor<8x16xf32> {mt.param = "fc.weight", mt.state = "exp_avg_sq"}, tensor<16xf32> {mt.param = "fc.bias", mt.state = "exp_avg_sq"},
// CHECK-SAME:    tensor<f32> {mt.output = "grad_norm"})
// CHECK:         %[[LOSS:.+]] = mt.cross_entropy
// CHECK:         %[[DB:.+]] = mt.bias_add_grad
// CHECK:         %[[DW:.+]] = mt.matmul {{.*}} transpose_a
// CHECK:         %[[NORM:.+]] = mt.global_norm %[[DW]], %[[DB]] {mt.phase = "optimizer"} : tensor<8x16xf32>, tensor<16xf32>
// CHECK:         %[[SCALE:.+]] = mt.clip_scale %[[NORM]], %[[CLIP]] {mt.phase = "optimizer"} : tensor<f32>
// CHECK:         %[[NEW_W:.+]], %[[NEW_W_M:.+]], %[[NEW_W_V:.+]] = mt.adamw %[[W]], %[[DW]], %[[W_M]], %[[W_V]], %[[STEP]], %[[LR]], %[[BETA1]], %[[BETA2]], %[[EPS]], %[[WD]], %[[SCALE]] decay {mt.phase = "optimizer"} : tensor<8x16xf32>
// CHECK:         %[[NEW_B:.+]], %[[NEW_B_M:.+]], %[[NEW_B_V:.+]] = mt.adamw %[[B]], %[[DB]], %[[B_M]], %[[B_V]], %[[STEP]], %[[LR]], %[[BETA1]], %[[BETA2]], %[[EPS]], %[[WD]], %[[SCALE]] {mt.phase = "optimizer"} : tensor<16xf32>
// CHECK:         return %[[LOSS]], %[[NEW_W]], %[[NEW_B]], %[[NEW_W_M]], %[[NEW_B_M]], %[[NEW_W_V]], %[[NEW_B_V]], %[[NORM]] :
func.func @signature(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                     %labels: tensor<2x4xi32> {mt.input = "labels"},
                     %w: tensor<8x16xf32> {mt.param = "fc.weight"},
                     %b: tensor<16xf32> {mt.param = "fc.bias"}) -> tensor<f32> {
  %h = mt.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %y = mt.bias_add %h, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The backward starts from d(loss)/d(loss) = 1, a splat f32 constant fed to
// mt.cross_entropy_grad with the forward logits and labels.

// CHECK-LABEL: func.func @cross_entropy_seed
// CHECK-SAME:    %[[LABELS:[^:]+]]: tensor<2x4xi32> {mt.input = "labels"}
// CHECK:         %[[LOGITS:.+]] = mt.bias_add
// CHECK:         mt.cross_entropy %[[LOGITS]], %[[LABELS]]
// CHECK-NEXT:    %[[ONE:.+]] = arith.constant {mt.phase = "backward"} dense<1.000000e+00> : tensor<f32>
// CHECK-NEXT:    %[[DLOGITS:.+]] = mt.cross_entropy_grad %[[ONE]], %[[LOGITS]], %[[LABELS]] {mt.phase = "backward"} : (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
// CHECK-NEXT:    mt.bias_add_grad %[[DLOGITS]] {mt.phase = "backward"} : tensor<2x4x16xf32> -> tensor<16xf32>
func.func @cross_entropy_seed(%x: tensor<2x4x16xf32> {mt.input = "tokens"},
                              %labels: tensor<2x4xi32> {mt.input = "labels"},
                              %b: tensor<16xf32> {mt.param = "b"}) -> tensor<f32> {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

//===----------------------------------------------------------------------===//
// Gradients of the forward ops
//===----------------------------------------------------------------------===//

// A linear layer (rank-3 activation times a broadcast rank-2 weight): the
// weight gradient folds the batch into rows (collapse_shape of the input and
// of dY) and multiplies with transpose_a; the input gradient is dY W^T, a
// matmul with transpose_b. The bias gradient sums dY over the batch.

// CHECK-LABEL: func.func @linear_layer
// CHECK-SAME:    %[[IDS:[^:]+]]: tensor<2x4xi32> {mt.input = "tokens"}
// CHECK-SAME:    %[[WTE:[^:]+]]: tensor<32x8xf32> {mt.param = "wte.weight"}
// CHECK-SAME:    %[[W:[^:]+]]: tensor<8x16xf32> {mt.param = "fc.weight"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<16xf32> {mt.param = "fc.bias"}
// CHECK:         %[[X:.+]] = mt.embedding %[[WTE]], %[[IDS]]
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DB:.+]] = mt.bias_add_grad %[[DY]] {mt.phase = "backward"} : tensor<2x4x16xf32> -> tensor<16xf32>
// CHECK-NEXT:    %[[DX:.+]] = mt.matmul %[[DY]], %[[W]] transpose_b {mt.phase = "backward"} : (tensor<2x4x16xf32>, tensor<8x16xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    %[[X2:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] {mt.phase = "backward"} : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK-NEXT:    %[[DY2:.+]] = tensor.collapse_shape %[[DY]] {{\[\[}}0, 1], [2]] {mt.phase = "backward"} : tensor<2x4x16xf32> into tensor<8x16xf32>
// CHECK-NEXT:    %[[DW:.+]] = mt.matmul %[[X2]], %[[DY2]] transpose_a {mt.phase = "backward"} : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
// CHECK-NEXT:    %[[DWTE:.+]] = mt.embedding_grad %[[DX]], %[[IDS]] {mt.phase = "backward"} : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<32x8xf32>
// CHECK-NEXT:    mt.global_norm %[[DWTE]], %[[DW]], %[[DB]] {mt.phase = "optimizer"} : tensor<32x8xf32>, tensor<8x16xf32>, tensor<16xf32>
func.func @linear_layer(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                        %labels: tensor<2x4xi32> {mt.input = "labels"},
                        %wte: tensor<32x8xf32> {mt.param = "wte.weight"},
                        %w: tensor<8x16xf32> {mt.param = "fc.weight"},
                        %b: tensor<16xf32> {mt.param = "fc.bias"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %h = mt.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %y = mt.bias_add %h, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The tied output head (x wte^T, transpose_b with a broadcast rhs): the
// input gradient is dY wte with no transpose, the table's head gradient is
// dY^T x over the folded batch (transpose_a on the collapsed dY). The table
// is used twice, so its lookup and head gradients are summed with mt.add.

// CHECK-LABEL: func.func @tied_head
// CHECK-SAME:    %[[IDS:[^:]+]]: tensor<2x4xi32> {mt.input = "tokens"}
// CHECK-SAME:    %[[WTE:[^:]+]]: tensor<16x8xf32> {mt.param = "wte.weight"}
// CHECK:         %[[X:.+]] = mt.embedding %[[WTE]], %[[IDS]]
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DX:.+]] = mt.matmul %[[DY]], %[[WTE]] {mt.phase = "backward"} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT:    %[[X2:.+]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] {mt.phase = "backward"} : tensor<2x4x8xf32> into tensor<8x8xf32>
// CHECK-NEXT:    %[[DY2:.+]] = tensor.collapse_shape %[[DY]] {{\[\[}}0, 1], [2]] {mt.phase = "backward"} : tensor<2x4x16xf32> into tensor<8x16xf32>
// CHECK-NEXT:    %[[DHEAD:.+]] = mt.matmul %[[DY2]], %[[X2]] transpose_a {mt.phase = "backward"} : (tensor<8x16xf32>, tensor<8x8xf32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %[[DLOOKUP:.+]] = mt.embedding_grad %[[DX]], %[[IDS]] {mt.phase = "backward"} : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<16x8xf32>
// CHECK-NEXT:    %[[DWTE:.+]] = mt.add %[[DHEAD]], %[[DLOOKUP]] {mt.phase = "backward"} : tensor<16x8xf32>
// CHECK-NEXT:    %[[NORM:.+]] = mt.global_norm %[[DWTE]] {mt.phase = "optimizer"} : tensor<16x8xf32>
// CHECK:         mt.adamw %[[WTE]], %[[DWTE]],
func.func @tied_head(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                     %labels: tensor<2x4xi32> {mt.input = "labels"},
                     %wte: tensor<16x8xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %logits = mt.matmul %x, %wte transpose_b : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// transpose_a on operands of the same rank: C = A^T B gives the stored
// gradients dA = B dC^T (transpose_b) and dB = A dC (no transpose).

// CHECK-LABEL: func.func @matmul_transpose_a
// CHECK-SAME:    %[[A:[^:]+]]: tensor<2x8x4xf32> {mt.param = "a"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<2x8x6xf32> {mt.param = "b"}
// CHECK:         %[[DC:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DA:.+]] = mt.matmul %[[B]], %[[DC]] transpose_b {mt.phase = "backward"} : (tensor<2x8x6xf32>, tensor<2x4x6xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:    %[[DB:.+]] = mt.matmul %[[A]], %[[DC]] {mt.phase = "backward"} : (tensor<2x8x4xf32>, tensor<2x4x6xf32>) -> tensor<2x8x6xf32>
// CHECK-NEXT:    mt.global_norm %[[DA]], %[[DB]]
func.func @matmul_transpose_a(%labels: tensor<2x4xi32> {mt.input = "labels"},
                              %a: tensor<2x8x4xf32> {mt.param = "a"},
                              %b: tensor<2x8x6xf32> {mt.param = "b"}) -> tensor<f32> {
  %c = mt.matmul %a, %b transpose_a : (tensor<2x8x4xf32>, tensor<2x8x6xf32>) -> tensor<2x4x6xf32>
  %loss = mt.cross_entropy %c, %labels : (tensor<2x4x6xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Both transposes on operands of the same rank: C = A^T B^T gives
// dA = B^T dC^T and dB = dC^T A^T, both with transpose_a and transpose_b.

// CHECK-LABEL: func.func @matmul_transpose_both
// CHECK-SAME:    %[[A:[^:]+]]: tensor<2x8x4xf32> {mt.param = "a"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<2x6x8xf32> {mt.param = "b"}
// CHECK:         %[[DC:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DA:.+]] = mt.matmul %[[B]], %[[DC]] transpose_a transpose_b {mt.phase = "backward"} : (tensor<2x6x8xf32>, tensor<2x4x6xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:    %[[DB:.+]] = mt.matmul %[[DC]], %[[A]] transpose_a transpose_b {mt.phase = "backward"} : (tensor<2x4x6xf32>, tensor<2x8x4xf32>) -> tensor<2x6x8xf32>
// CHECK-NEXT:    mt.global_norm %[[DA]], %[[DB]]
func.func @matmul_transpose_both(%labels: tensor<2x4xi32> {mt.input = "labels"},
                                 %a: tensor<2x8x4xf32> {mt.param = "a"},
                                 %b: tensor<2x6x8xf32> {mt.param = "b"}) -> tensor<f32> {
  %c = mt.matmul %a, %b transpose_a transpose_b : (tensor<2x8x4xf32>, tensor<2x6x8xf32>) -> tensor<2x4x6xf32>
  %loss = mt.cross_entropy %c, %labels : (tensor<2x4x6xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Only operands that depend on a parameter get a gradient: the input x of a
// linear layer gets no dY W^T matmul, and an arith op computed from inputs
// alone is not differentiated.

// CHECK-LABEL: func.func @inactive_operand
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NOT:     mt.matmul %[[DY]]
// CHECK:         tensor.collapse_shape
// CHECK-NEXT:    tensor.collapse_shape %[[DY]]
// CHECK-NEXT:    %[[DW:.+]] = mt.matmul {{.*}} transpose_a
// CHECK-NEXT:    mt.global_norm %[[DW]] {mt.phase = "optimizer"} : tensor<8x16xf32>
func.func @inactive_operand(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                            %labels: tensor<2x4xi32> {mt.input = "labels"},
                            %w: tensor<8x16xf32> {mt.param = "w"}) -> tensor<f32> {
  %x2 = arith.addf %x, %x : tensor<2x4x8xf32>
  %h = mt.matmul %x2, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %loss = mt.cross_entropy %h, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// mt.layer_norm differentiates into one mt.layer_norm_grad (same epsilon)
// whose three results are the input, weight and bias gradients; weight and
// bias (rank 1) are updated without weight decay.

// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME:    %[[WTE:[^:]+]]: tensor<16x8xf32> {mt.param = "wte.weight"}
// CHECK-SAME:    %[[LN_W:[^:]+]]: tensor<8xf32> {mt.param = "ln.weight"}
// CHECK-SAME:    %[[LN_B:[^:]+]]: tensor<8xf32> {mt.param = "ln.bias"}
// CHECK:         %[[X:.+]] = mt.embedding
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DX:.+]], %[[DLN_W:.+]], %[[DLN_B:.+]] = mt.layer_norm_grad %[[DY]], %[[X]], %[[LN_W]] {epsilon = 9.765625E-4 : f64, mt.phase = "backward"} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK-NEXT:    %[[DWTE:.+]] = mt.embedding_grad %[[DX]],
// CHECK-NEXT:    mt.global_norm %[[DWTE]], %[[DLN_W]], %[[DLN_B]] {mt.phase = "optimizer"} :
// CHECK:         mt.adamw %[[WTE]], %[[DWTE]], {{.*}} decay {mt.phase = "optimizer"} : tensor<16x8xf32>
// CHECK:         mt.adamw %[[LN_W]], %[[DLN_W]], {{[^d]*}} : tensor<8xf32>
// CHECK:         mt.adamw %[[LN_B]], %[[DLN_B]], {{[^d]*}} : tensor<8xf32>
func.func @layer_norm(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                      %labels: tensor<2x4xi32> {mt.input = "labels"},
                      %wte: tensor<16x8xf32> {mt.param = "wte.weight"},
                      %w: tensor<8xf32> {mt.param = "ln.weight"},
                      %b: tensor<8xf32> {mt.param = "ln.bias"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %y = mt.layer_norm %x, %w, %b {epsilon = 9.765625E-4 : f64} : tensor<2x4x8xf32>, tensor<8xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// mt.gelu differentiates into mt.gelu_grad of dY and the forward input; a
// residual connection (mt.add) passes dY to both operands, and the two
// gradients of x are summed.

// CHECK-LABEL: func.func @gelu_residual
// CHECK:         %[[X:.+]] = mt.embedding
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DG:.+]] = mt.gelu_grad %[[DY]], %[[X]] {mt.phase = "backward"} : tensor<2x4x16xf32>
// CHECK-NEXT:    %[[DX:.+]] = mt.add %[[DY]], %[[DG]] {mt.phase = "backward"} : tensor<2x4x16xf32>
// CHECK-NEXT:    mt.embedding_grad %[[DX]],
func.func @gelu_residual(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                         %labels: tensor<2x4xi32> {mt.input = "labels"},
                         %wte: tensor<32x16xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %g = mt.gelu %x : tensor<2x4x16xf32>
  %y = mt.add %x, %g : tensor<2x4x16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Every mt.dropout gets a distinct rng_stream in forward order, and its
// derivative is an mt.dropout of the gradient with the same probability and
// the same stream (the forward's mask).

// CHECK-LABEL: func.func @dropout_streams
// CHECK:         %[[D0:.+]] = mt.dropout %{{.+}} {probability = 1.000000e-01 : f64, rng_stream = 0 : i64} : tensor<2x4x16xf32>
// CHECK-NEXT:    %[[D1:.+]] = mt.dropout %[[D0]] {probability = 2.000000e-01 : f64, rng_stream = 1 : i64} : tensor<2x4x16xf32>
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DD0:.+]] = mt.dropout %[[DY]] {mt.phase = "backward", probability = 2.000000e-01 : f64, rng_stream = 1 : i64} : tensor<2x4x16xf32>
// CHECK-NEXT:    %[[DX:.+]] = mt.dropout %[[DD0]] {mt.phase = "backward", probability = 1.000000e-01 : f64, rng_stream = 0 : i64} : tensor<2x4x16xf32>
// CHECK-NEXT:    mt.embedding_grad %[[DX]],
func.func @dropout_streams(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                           %labels: tensor<2x4xi32> {mt.input = "labels"},
                           %wte: tensor<32x16xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %d0 = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<2x4x16xf32>
  %d1 = mt.dropout %d0 {probability = 2.0e-01 : f64} : tensor<2x4x16xf32>
  %loss = mt.cross_entropy %d1, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// mt.dropout and mt.attention share one stream counter, numbered in forward
// order, including ops that do not depend on a parameter.

// CHECK-LABEL: func.func @stream_numbering
// CHECK:         mt.dropout %{{.+}} {probability = 1.000000e-01 : f64, rng_stream = 0 : i64}
// CHECK:         mt.attention {{.*}}rng_stream = 1 : i64
// CHECK:         mt.dropout %{{.+}} {probability = 1.000000e-01 : f64, rng_stream = 2 : i64}
func.func @stream_numbering(%ids: tensor<2x8xi32> {mt.input = "tokens"},
                            %labels: tensor<2x8xi32> {mt.input = "labels"},
                            %wte: tensor<64x8xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %noise = arith.constant dense<1.0> : tensor<2x8x8xf32>
  %n = mt.dropout %noise {probability = 1.0e-01 : f64} : tensor<2x8x8xf32>
  %x = mt.embedding %wte, %ids : (tensor<64x8xf32>, tensor<2x8xi32>) -> tensor<2x8x8xf32>
  %h = mt.split_heads %x : tensor<2x8x8xf32> -> tensor<2x2x8x4xf32>
  %a = mt.attention %h, %h, %h : tensor<2x2x8x4xf32>
  %m = mt.merge_heads %a : tensor<2x2x8x4xf32> -> tensor<2x8x8xf32>
  %d = mt.dropout %m {probability = 1.0e-01 : f64} : tensor<2x8x8xf32>
  %y = mt.add %d, %n : tensor<2x8x8xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x8x8xf32>, tensor<2x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// mt.attention differentiates into mt.attention_grad with the forward's
// dropout, scale and rng_stream. split_heads and merge_heads are each
// other's derivative: merge_heads -> split_heads of dY, and the three QKV
// gradients merge back into the fused hidden dimension.

// CHECK-LABEL: func.func @attention
// CHECK:         %[[QKV:.+]]:3 = mt.split_heads
// CHECK-NEXT:    mt.attention %[[QKV]]#0, %[[QKV]]#1, %[[QKV]]#2 {dropout = 1.000000e-01 : f64, mt.layer = 0 : i64, rng_stream = 0 : i64, scale = 5.000000e-01 : f64}
// CHECK:         %[[DM:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DA:.+]] = mt.split_heads %[[DM]] {mt.layer = 0 : i64, mt.phase = "backward"} : tensor<2x8x8xf32> -> tensor<2x2x8x4xf32>
// CHECK-NEXT:    %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = mt.attention_grad %[[DA]], %[[QKV]]#0, %[[QKV]]#1, %[[QKV]]#2 {dropout = 1.000000e-01 : f64, mt.layer = 0 : i64, mt.phase = "backward", rng_stream = 0 : i64, scale = 5.000000e-01 : f64} : tensor<2x2x8x4xf32>
// CHECK-NEXT:    %[[DX:.+]] = mt.merge_heads %[[DQ]], %[[DK]], %[[DV]] {mt.layer = 0 : i64, mt.phase = "backward"} : tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x8x24xf32>
// CHECK-NEXT:    mt.embedding_grad %[[DX]],
func.func @attention(%ids: tensor<2x8xi32> {mt.input = "tokens"},
                     %labels: tensor<2x8xi32> {mt.input = "labels"},
                     %wte: tensor<64x24xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<64x24xf32>, tensor<2x8xi32>) -> tensor<2x8x24xf32>
  %q, %k, %v = mt.split_heads %x {mt.layer = 0} : tensor<2x8x24xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>
  %a = mt.attention %q, %k, %v {dropout = 1.0e-01 : f64, scale = 5.0e-01 : f64, mt.layer = 0} : tensor<2x2x8x4xf32>
  %m = mt.merge_heads %a {mt.layer = 0} : tensor<2x2x8x4xf32> -> tensor<2x8x8xf32>
  %loss = mt.cross_entropy %m, %labels : (tensor<2x8x8xf32>, tensor<2x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Token embedding and position embedding: mt.embedding_grad scatters dX into
// the table by the same ids; the position table gets bias_add_grad (summed
// over the batch) placed in its first rows by mt.position_embedding_grad.

// CHECK-LABEL: func.func @embeddings
// CHECK-SAME:    %[[IDS:[^:]+]]: tensor<2x8xi32> {mt.input = "tokens"}
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DPOS:.+]] = mt.bias_add_grad %[[DY]] {mt.phase = "backward"} : tensor<2x8x16xf32> -> tensor<8x16xf32>
// CHECK-NEXT:    %[[DWPE:.+]] = mt.position_embedding_grad %[[DPOS]] {mt.phase = "backward"} : tensor<8x16xf32> -> tensor<32x16xf32>
// CHECK-NEXT:    %[[DWTE:.+]] = mt.embedding_grad %[[DY]], %[[IDS]] {mt.phase = "backward"} : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<64x16xf32>
// CHECK-NEXT:    mt.global_norm %[[DWTE]], %[[DWPE]] {mt.phase = "optimizer"} : tensor<64x16xf32>, tensor<32x16xf32>
func.func @embeddings(%ids: tensor<2x8xi32> {mt.input = "tokens"},
                      %labels: tensor<2x8xi32> {mt.input = "labels"},
                      %wte: tensor<64x16xf32> {mt.param = "wte.weight"},
                      %wpe: tensor<32x16xf32> {mt.param = "wpe.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<64x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  %pos = mt.position_embedding %wpe : tensor<32x16xf32> -> tensor<8x16xf32>
  %h = mt.bias_add %x, %pos : tensor<2x8x16xf32>, tensor<8x16xf32>
  %loss = mt.cross_entropy %h, %labels : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Reshapes are differentiable: the gradient of a collapse_shape is an
// expand_shape of dY and vice versa, with the same reassociation.

// CHECK-LABEL: func.func @reshapes
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DC:.+]] = tensor.collapse_shape %[[DY]] {{\[\[}}0, 1], [2]] {mt.phase = "backward"} : tensor<2x4x16xf32> into tensor<8x16xf32>
// CHECK-NEXT:    %[[DX:.+]] = tensor.expand_shape %[[DC]] {{\[\[}}0, 1], [2]] output_shape [2, 4, 16] {mt.phase = "backward"} : tensor<8x16xf32> into tensor<2x4x16xf32>
// CHECK-NEXT:    mt.embedding_grad %[[DX]],
func.func @reshapes(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                    %labels: tensor<2x4xi32> {mt.input = "labels"},
                    %wte: tensor<32x16xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x16xf32> into tensor<8x16xf32>
  %e = tensor.expand_shape %c [[0, 1], [2]] output_shape [2, 4, 16] : tensor<8x16xf32> into tensor<2x4x16xf32>
  %loss = mt.cross_entropy %e, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Backward ops carry the mt.layer of the forward op they differentiate;
// ops of untagged forward ops (embedding, loss) and the optimizer carry none.

// CHECK-LABEL: func.func @layer_attribute
// CHECK:         mt.cross_entropy_grad
// CHECK-NOT:     mt.layer
// CHECK-SAME:    -> tensor<2x4x16xf32>
// CHECK-NEXT:    mt.bias_add_grad {{.*}} {mt.layer = 7 : i64, mt.phase = "backward"}
// CHECK-NEXT:    mt.gelu_grad {{.*}} {mt.layer = 5 : i64, mt.phase = "backward"}
// CHECK-NEXT:    mt.embedding_grad
// CHECK-NOT:     mt.layer
// CHECK:         return
func.func @layer_attribute(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                           %labels: tensor<2x4xi32> {mt.input = "labels"},
                           %wte: tensor<32x16xf32> {mt.param = "wte.weight"},
                           %b: tensor<16xf32> {mt.param = "b"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %g = mt.gelu %x {mt.layer = 5} : tensor<2x4x16xf32>
  %y = mt.bias_add %g, %b {mt.layer = 7} : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A parameter the loss does not depend on gets a zero gradient: it is still
// part of the norm and still updated (here without decay: rank 1).

// CHECK-LABEL: func.func @unused_parameter
// CHECK-SAME:    %[[UNUSED:[^:]+]]: tensor<4xf32> {mt.param = "unused"}
// CHECK:         %[[DB:.+]] = mt.bias_add_grad
// CHECK-NEXT:    %[[ZERO:.+]] = arith.constant {mt.phase = "backward"} dense<0.000000e+00> : tensor<4xf32>
// CHECK-NEXT:    %[[NORM:.+]] = mt.global_norm %[[DB]], %[[ZERO]] {mt.phase = "optimizer"} : tensor<16xf32>, tensor<4xf32>
// CHECK:         mt.adamw %[[UNUSED]], %[[ZERO]], {{[^d]*}} : tensor<4xf32>
func.func @unused_parameter(%x: tensor<2x4x16xf32> {mt.input = "tokens"},
                            %labels: tensor<2x4xi32> {mt.input = "labels"},
                            %b: tensor<16xf32> {mt.param = "b"},
                            %unused: tensor<4xf32> {mt.param = "unused"}) -> tensor<f32> {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A function without parameters is not a model: it is left unchanged, even
// with arguments that have no role and ops the pass cannot differentiate.

// CHECK-LABEL: func.func @no_parameters
// CHECK-SAME:    (%[[X:.+]]: tensor<4xf32>) -> tensor<4xf32>
// CHECK-NEXT:    %[[Y:.+]] = arith.addf %[[X]], %[[X]] : tensor<4xf32>
// CHECK-NEXT:    return %[[Y]] : tensor<4xf32>
func.func @no_parameters(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

// A training step needs exactly one loss.

// expected-error @below {{'func.func' op mt-autodiff needs a function returning one tensor<f32> loss, got 'tensor<f32>', 'tensor<f32>'}}
func.func @negative_two_results(%x: tensor<2x4x16xf32> {mt.input = "tokens"},
                                %labels: tensor<2x4xi32> {mt.input = "labels"},
                                %b: tensor<16xf32> {mt.param = "b"}) -> (tensor<f32>, tensor<f32>) {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss, %loss : tensor<f32>, tensor<f32>
}

// -----

// The loss must be a scalar.

// expected-error @below {{'func.func' op mt-autodiff needs a function returning one tensor<f32> loss, got 'tensor<16xf32>'}}
func.func @negative_non_scalar_loss(%b: tensor<16xf32> {mt.param = "b"}) -> tensor<16xf32> {
  %y = mt.gelu %b : tensor<16xf32>
  return %y : tensor<16xf32>
}

// -----

// The loss must be f32, not another float type.

// expected-error @below {{'func.func' op mt-autodiff needs a function returning one tensor<f32> loss, got 'tensor<bf16>'}}
func.func @negative_bf16_loss(%b: tensor<bf16> {mt.param = "b"}) -> tensor<bf16> {
  return %b : tensor<bf16>
}

// -----

// Every argument needs a role.

// expected-error @below {{'func.func' op argument #1 is neither a parameter ('mt.param') nor a run-time input ('mt.input')}}
func.func @negative_argument_without_role(%b: tensor<16xf32> {mt.param = "b"},
                                          %x: tensor<2x4x16xf32>,
                                          %labels: tensor<2x4xi32> {mt.input = "labels"}) -> tensor<f32> {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Optimizer state means the function already is a training step.

// expected-error @below {{'func.func' op argument #1 is optimizer state: mt-autodiff runs on a forward graph}}
func.func @negative_state_argument(%b: tensor<16xf32> {mt.param = "b"},
                                   %m: tensor<16xf32> {mt.param = "b", mt.state = "exp_avg"},
                                   %x: tensor<2x4x16xf32> {mt.input = "tokens"},
                                   %labels: tensor<2x4xi32> {mt.input = "labels"}) -> tensor<f32> {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// An op outside the mt forward set on the path from a parameter to the loss.

func.func @negative_not_differentiable(%x: tensor<2x4x16xf32> {mt.input = "tokens"},
                                       %labels: tensor<2x4xi32> {mt.input = "labels"},
                                       %b: tensor<16xf32> {mt.param = "b"}) -> tensor<f32> {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  // expected-error @below {{'arith.mulf' op cannot be differentiated by mt-autodiff}}
  %z = arith.mulf %y, %y : tensor<2x4x16xf32>
  %loss = mt.cross_entropy %z, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// transpose_a with a broadcast rank-2 rhs has no gradient rule.

func.func @negative_transpose_a_broadcast(%labels: tensor<2x4xi32> {mt.input = "labels"},
                                          %a: tensor<2x8x4xf32> {mt.param = "a"},
                                          %w: tensor<8x6xf32> {mt.param = "w"}) -> tensor<f32> {
  // expected-error @below {{'mt.matmul' op cannot be differentiated: transpose_a with a broadcast rhs}}
  %c = mt.matmul %a, %w transpose_a : (tensor<2x8x4xf32>, tensor<8x6xf32>) -> tensor<2x4x6xf32>
  %loss = mt.cross_entropy %c, %labels : (tensor<2x4x6xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A widened product (bf16 operands, f32 result) differentiates as the bf16
// product then a widening cast: its gradient is rounded to bf16 before the
// two gradient GEMMs, which take one operand type.

// CHECK-LABEL: func.func @widened_matmul
// CHECK:         mt.matmul {{.*}} : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xf32>
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK:         %[[DY16:.+]] = mt.cast %[[DY]] {mt.phase = "backward"} : tensor<2x4x16xf32> to tensor<2x4x16xbf16>
// CHECK:         mt.matmul {{.*}} transpose_a {mt.phase = "backward"} : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xbf16>
func.func @widened_matmul(%x: tensor<2x4x8xbf16> {mt.input = "tokens"},
                          %labels: tensor<2x4xi32> {mt.input = "labels"},
                          %w: tensor<8x16xbf16> {mt.param = "w"}) -> tensor<f32> {
  %y = mt.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// An empty tensor has no gradient to take (the derivatives divide by row
// sizes): refused before anything is built.

func.func @negative_zero_width(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                               %labels: tensor<2x4xi32> {mt.input = "labels"},
                               %w: tensor<8x0xf32> {mt.param = "w"}) -> tensor<f32> {
  // expected-error @below {{'mt.matmul' op has the empty tensor type 'tensor<8x0xf32>': every tensor of a training step needs positive dimensions}}
  %y = mt.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x0xf32>) -> tensor<2x4x0xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x0xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// The backward is one reverse sweep over one block.

// expected-error @below {{'func.func' op mt-autodiff needs a single-block function}}
func.func @negative_multi_block(%x: tensor<2x4x16xf32> {mt.input = "tokens"},
                                %labels: tensor<2x4xi32> {mt.input = "labels"},
                                %b: tensor<16xf32> {mt.param = "b"}) -> tensor<f32> {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  cf.br ^bb1
^bb1:
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Only the mean cross-entropy differentiates: per-position losses and
// mt.mean are what mt-fuse makes of it after the backward exists.

func.func @negative_per_position_losses(%x: tensor<2x4x16xf32> {mt.input = "tokens"},
                                        %labels: tensor<2x4xi32> {mt.input = "labels"},
                                        %b: tensor<16xf32> {mt.param = "b"}) -> tensor<f32> {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %losses = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
  // expected-error @below {{'mt.mean' op cannot be differentiated by mt-autodiff}}
  %loss = mt.mean %losses : tensor<2x4xf32>
  return %loss : tensor<f32>
}

// -----

// A shared expert's sigmoid gate (Qwen2-MoE) differentiates into one
// mt.sigmoid_gate_grad giving both the rows' and the gate's gradients; a
// constant scale (Granite's multipliers) into the same scale of dY.

// CHECK-LABEL: func.func @sigmoid_gate_and_scale
// CHECK:         %[[X:.+]] = mt.embedding
// CHECK-NEXT:    %[[S:.+]] = mt.scale %[[X]] {factor = 1.200000e+01 : f64}
// CHECK-NEXT:    %[[G:.+]] = mt.matmul %[[S]], %{{.+}} : (tensor<2x4x16xf32>, tensor<16x1xf32>) -> tensor<2x4x1xf32>
// CHECK-NEXT:    %[[Y:.+]] = mt.sigmoid_gate %[[S]], %[[G]] : tensor<2x4x16xf32>, tensor<2x4x1xf32>
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DX:.+]], %[[DG:.+]] = mt.sigmoid_gate_grad %[[DY]], %[[S]], %[[G]] {mt.phase = "backward"} : tensor<2x4x16xf32>, tensor<2x4x1xf32>
// CHECK-NEXT:    %[[DN:.+]] = mt.matmul %[[DG]], %{{.+}} transpose_b {mt.phase = "backward"}
// CHECK-NEXT:    %[[DS:.+]] = mt.add %[[DX]], %[[DN]] {mt.phase = "backward"} : tensor<2x4x16xf32>
// CHECK:         mt.matmul %{{.+}}, %{{.+}} transpose_a {mt.phase = "backward"} : (tensor<8x16xf32>, tensor<8x1xf32>) -> tensor<16x1xf32>
// CHECK-NEXT:    %[[DE:.+]] = mt.scale %[[DS]] {factor = 1.200000e+01 : f64, mt.phase = "backward"} : tensor<2x4x16xf32>
// CHECK-NEXT:    mt.embedding_grad %[[DE]],
func.func @sigmoid_gate_and_scale(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                                  %labels: tensor<2x4xi32> {mt.input = "labels"},
                                  %wte: tensor<32x16xf32> {mt.param = "wte.weight"},
                                  %gate: tensor<16x1xf32> {mt.param = "gate.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %s = mt.scale %x {factor = 12.0 : f64} : tensor<2x4x16xf32>
  %g = mt.matmul %s, %gate : (tensor<2x4x16xf32>, tensor<16x1xf32>) -> tensor<2x4x1xf32>
  %y = mt.sigmoid_gate %s, %g : tensor<2x4x16xf32>, tensor<2x4x1xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A router's z-loss added to the loss differentiates into an
// mt.router_z_loss_grad that reads the step's seed itself (a loss term, as
// mt-pipeline's microbatches need), whose logits' gradient reaches the
// router's weight.

// CHECK-LABEL: func.func @router_z_loss
// CHECK:         %[[L:.+]] = mt.matmul %[[X:.+]], %{{.+}} : (tensor<2x4x16xf32>, tensor<16x4xf32>) -> tensor<2x4x4xf32>
// CHECK:         %[[Z:.+]] = mt.router_z_loss %[[L]] {coefficient = 1.000000e-02 : f64} : tensor<2x4x4xf32>
// CHECK:         %[[SEED:.+]] = arith.constant {mt.phase = "backward"} dense<1.000000e+00> : tensor<f32>
// CHECK:         %[[DL:.+]] = mt.router_z_loss_grad %[[SEED]], %[[L]] {coefficient = 1.000000e-02 : f64, mt.phase = "backward"} : tensor<2x4x4xf32>
// CHECK:         %[[FLAT:.+]] = tensor.collapse_shape %[[DL]]
// CHECK-NEXT:    mt.matmul %{{.+}}, %[[FLAT]] transpose_a {mt.phase = "backward"} : (tensor<8x16xf32>, tensor<8x4xf32>) -> tensor<16x4xf32>
func.func @router_z_loss(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                         %labels: tensor<2x4xi32> {mt.input = "labels"},
                         %wte: tensor<32x16xf32> {mt.param = "wte.weight"},
                         %router: tensor<16x4xf32> {mt.param = "gate.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %l = mt.matmul %x, %router : (tensor<2x4x16xf32>, tensor<16x4xf32>) -> tensor<2x4x4xf32>
  %z = mt.router_z_loss %l {coefficient = 1.0e-02 : f64} : tensor<2x4x4xf32>
  %ce = mt.cross_entropy %x, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %loss = mt.add %ce, %z : tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A zero-centered RMS norm (Gemma's scale 1 + w) differentiates into a
// zero-centered mt.rms_norm_grad with its epsilon.

// CHECK-LABEL: func.func @zero_centered_rms_norm
// CHECK:         %[[N:.+]] = mt.rms_norm %[[X:.+]], %[[W:[^ ]+]] {epsilon = 1.000000e-05 : f64, zero_centered_weight}
// CHECK:         %[[DY:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    mt.rms_norm_grad %[[DY]], %[[X]], %[[W]] {epsilon = 1.000000e-05 : f64, mt.phase = "backward", zero_centered_weight}
func.func @zero_centered_rms_norm(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                                  %labels: tensor<2x4xi32> {mt.input = "labels"},
                                  %wte: tensor<32x16xf32> {mt.param = "wte.weight"},
                                  %w: tensor<16xf32> {mt.param = "norm.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %n = mt.rms_norm %x, %w {epsilon = 1.0e-05 : f64, zero_centered_weight} : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %n, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Gemma 2's soft caps: the logits' mt.softcap differentiates into an
// mt.softcap_grad of its input with its cap; the attention's `softcap`
// goes to its gradient op with the window and scale.

// CHECK-LABEL: func.func @soft_caps
// CHECK:         %[[A:.+]] = mt.attention %[[Q:[^,]+]], %[[Q]], %[[Q]] {rng_stream = 0 : i64, scale = 2.500000e-01 : f64, softcap = 5.000000e+01 : f64, window = 2 : i64}
// CHECK:         %[[L:.+]] = mt.merge_heads
// CHECK-NEXT:    %[[C:.+]] = mt.softcap %[[L]] {cap = 3.000000e+01 : f64}
// CHECK:         %[[DC:.+]] = mt.cross_entropy_grad
// CHECK-NEXT:    %[[DL:.+]] = mt.softcap_grad %[[DC]], %[[L]] {cap = 3.000000e+01 : f64, mt.phase = "backward"}
// CHECK:         mt.attention_grad %{{.+}}, %[[Q]], %[[Q]], %[[Q]] {mt.phase = "backward", rng_stream = 0 : i64, scale = 2.500000e-01 : f64, softcap = 5.000000e+01 : f64, window = 2 : i64}
func.func @soft_caps(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                     %labels: tensor<2x4xi32> {mt.input = "labels"},
                     %wte: tensor<32x16xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %q = mt.split_heads %x : tensor<2x4x16xf32> -> tensor<2x4x4x4xf32>
  %a = mt.attention %q, %q, %q {scale = 0.25 : f64, softcap = 50.0 : f64, window = 2 : i64} : tensor<2x4x4x4xf32>
  %l = mt.merge_heads %a : tensor<2x4x4x4xf32> -> tensor<2x4x16xf32>
  %c = mt.softcap %l {cap = 30.0 : f64} : tensor<2x4x16xf32>
  %loss = mt.cross_entropy %c, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A mixture of experts: the routing (top_k_gating's experts, moe_route's
// positions and offsets) is integer and gets no gradient; the gate
// weights' gradient is a moe_weights_grad of the combine, and reaches the
// router's logits through top_k_gating_grad. The rows' gradient comes back
// through the grouped matmul (the non-transposed product with the same
// weights, and one weight gradient per expert) and the permutation's
// gradient, an unweighted unpermute.

// CHECK-LABEL: func.func @mixture_of_experts
// CHECK-SAME:    %[[W0:[^:]+]]: tensor<6x8xf32> {mt.param = "expert0.weight"}
// CHECK-SAME:    %[[W1:[^:]+]]: tensor<6x8xf32> {mt.param = "expert1.weight"}
// CHECK:         %[[GW:[^,]+]], %[[E:.+]] = mt.top_k_gating %[[LOGITS:[^ ]+]] {k = 2 : i64}
// CHECK:         %[[POS:[^,]+]], %[[OFF:.+]] = mt.moe_route %[[E]] {num_experts = 2 : i64}
// CHECK:         %[[ROWS:.+]] = mt.moe_permute %[[N:[^,]+]], %[[POS]] :
// CHECK:         %[[H:.+]] = mt.grouped_matmul %[[ROWS]], %[[OFF]], %[[W0]], %[[W1]] transpose_b :
// CHECK:         %[[Y:.+]] = mt.moe_unpermute %[[H]], %[[POS]] weights(%[[GW]] : tensor<2x4x2xf32>) :
// CHECK:         mt.cross_entropy_grad
// CHECK:         %[[DY:.+]] = mt.matmul %{{.*}}, %{{.*}} transpose_b {mt.phase = "backward"} : (tensor<2x4x32xf32>, tensor<6x32xf32>) -> tensor<2x4x6xf32>
// CHECK:         %[[DH:.+]] = mt.moe_permute %[[DY]], %[[POS]] weights(%[[GW]] : tensor<2x4x2xf32>) {mt.phase = "backward"}
// CHECK-NEXT:    %[[DGW:.+]] = mt.moe_weights_grad %[[DY]], %[[H]], %[[POS]] {mt.phase = "backward"}
// CHECK-NEXT:    %[[DROWS:.+]] = mt.grouped_matmul %[[DH]], %[[OFF]], %[[W0]], %[[W1]] {mt.phase = "backward"}
// CHECK-NEXT:    %[[DW:.+]]:2 = mt.grouped_matmul_weight_grad %[[DH]], %[[ROWS]], %[[OFF]] transpose_b {mt.phase = "backward"}
// CHECK-NEXT:    %[[DN:.+]] = mt.moe_unpermute %[[DROWS]], %[[POS]] {mt.phase = "backward"}
// CHECK-NEXT:    %[[DLOGITS:.+]] = mt.top_k_gating_grad %[[DGW]], %[[GW]], %[[E]] {mt.phase = "backward", num_experts = 2 : i64}
// CHECK:         mt.global_norm {{.*}}%[[DW]]#0, %[[DW]]#1
func.func @mixture_of_experts(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                              %labels: tensor<2x4xi32> {mt.input = "labels"},
                              %wte: tensor<32x8xf32> {mt.param = "wte.weight"},
                              %router: tensor<8x2xf32> {mt.param = "router.weight"},
                              %w0: tensor<6x8xf32> {mt.param = "expert0.weight"},
                              %w1: tensor<6x8xf32> {mt.param = "expert1.weight"},
                              %head: tensor<6x32xf32> {mt.param = "head.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %logits = mt.matmul %x, %router : (tensor<2x4x8xf32>, tensor<8x2xf32>) -> tensor<2x4x2xf32>
  %w, %e = mt.top_k_gating %logits {k = 2 : i64} : tensor<2x4x2xf32> -> tensor<2x4x2xf32>, tensor<2x4x2xi32>
  %pos, %offsets = mt.moe_route %e {num_experts = 2 : i64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<3xi32>
  %rows = mt.moe_permute %x, %pos : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<16x8xf32>
  %h = mt.grouped_matmul %rows, %offsets, %w0, %w1 transpose_b
      : (tensor<16x8xf32>, tensor<3xi32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<16x6xf32>
  %y = mt.moe_unpermute %h, %pos weights(%w : tensor<2x4x2xf32>)
      : tensor<16x6xf32>, tensor<2x4x2xi32> -> tensor<2x4x6xf32>
  %out = mt.matmul %y, %head : (tensor<2x4x6xf32>, tensor<6x32xf32>) -> tensor<2x4x32xf32>
  %loss = mt.cross_entropy %out, %labels : (tensor<2x4x32xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// With a capacity (8 tokens of 2 choices over 2 experts at factor 0.5: 4
// rows an expert, 8 in all), every permutation of the backward states the
// forward's capacity, so that its rows are the forward's.

// CHECK-LABEL: func.func @mixture_of_experts_capacity
// CHECK:         %[[POS:[^,]+]], %[[OFF:.+]] = mt.moe_route %[[E:[^ ]+]] weights(%[[GW:[^ ]+]] : tensor<2x4x2xf32>) {capacity_factor = 5.000000e-01 : f64, num_experts = 2 : i64}
// CHECK:         mt.moe_permute %{{.*}}, %[[POS]] {capacity_factor = 5.000000e-01 : f64, num_experts = 2 : i64} : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<8x8xf32>
// CHECK:         mt.moe_permute %{{.*}}, %[[POS]] weights(%[[GW]] : tensor<2x4x2xf32>) {capacity_factor = 5.000000e-01 : f64, mt.phase = "backward", num_experts = 2 : i64} : tensor<2x4x6xf32>, tensor<2x4x2xi32> -> tensor<8x6xf32>
// CHECK-NEXT:    mt.moe_weights_grad %{{.*}}, %{{.*}}, %[[POS]] {capacity_factor = 5.000000e-01 : f64, mt.phase = "backward", num_experts = 2 : i64} : tensor<2x4x6xf32>, tensor<8x6xf32>, tensor<2x4x2xi32> -> tensor<2x4x2xf32>
// CHECK:         mt.moe_unpermute %{{.*}}, %[[POS]] {capacity_factor = 5.000000e-01 : f64, mt.phase = "backward", num_experts = 2 : i64} : tensor<8x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
func.func @mixture_of_experts_capacity(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                              %labels: tensor<2x4xi32> {mt.input = "labels"},
                              %wte: tensor<32x8xf32> {mt.param = "wte.weight"},
                              %router: tensor<8x2xf32> {mt.param = "router.weight"},
                              %w0: tensor<6x8xf32> {mt.param = "expert0.weight"},
                              %w1: tensor<6x8xf32> {mt.param = "expert1.weight"},
                              %head: tensor<6x32xf32> {mt.param = "head.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %logits = mt.matmul %x, %router : (tensor<2x4x8xf32>, tensor<8x2xf32>) -> tensor<2x4x2xf32>
  %w, %e = mt.top_k_gating %logits {k = 2 : i64} : tensor<2x4x2xf32> -> tensor<2x4x2xf32>, tensor<2x4x2xi32>
  %pos, %offsets = mt.moe_route %e weights(%w : tensor<2x4x2xf32>) {num_experts = 2 : i64, capacity_factor = 0.5 : f64}
      : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<3xi32>
  %rows = mt.moe_permute %x, %pos {capacity_factor = 0.5 : f64, num_experts = 2 : i64}
      : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<8x8xf32>
  %h = mt.grouped_matmul %rows, %offsets, %w0, %w1 transpose_b
      : (tensor<8x8xf32>, tensor<3xi32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<8x6xf32>
  %y = mt.moe_unpermute %h, %pos weights(%w : tensor<2x4x2xf32>) {capacity_factor = 0.5 : f64, num_experts = 2 : i64}
      : tensor<8x6xf32>, tensor<2x4x2xi32> -> tensor<2x4x6xf32>
  %out = mt.matmul %y, %head : (tensor<2x4x6xf32>, tensor<6x32xf32>) -> tensor<2x4x32xf32>
  %loss = mt.cross_entropy %out, %labels : (tensor<2x4x32xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
