// mt-parallelize rewrites a training step (the output of mt-autodiff) into
// the SPMD program of every rank of a dp x tp device grid: the batch is
// split, gradients are reduced over dp, and ZeRO keeps pieces of the
// optimizer state, the gradients and the parameters.
//
// Each section below is one input file (split-file); sections whose options
// differ cannot share a file, since an option error is reported on the
// module whatever it holds.
//
// RUN: rm -rf %t && split-file %s %t
//
// RUN: megatron-opt %t/zero0.mlir --mt-autodiff --mt-parallelize="dp=2 zero=0" --split-input-file --verify-diagnostics \
// RUN:   | FileCheck %s --check-prefix=ZERO0
// RUN: megatron-opt %t/zero1.mlir --mt-autodiff --mt-parallelize="dp=2 zero=1" --split-input-file --verify-diagnostics \
// RUN:   | FileCheck %s --check-prefix=ZERO1
// RUN: megatron-opt %t/zero2.mlir --mt-autodiff --mt-parallelize="dp=2 zero=2" --split-input-file --verify-diagnostics \
// RUN:   | FileCheck %s --check-prefix=ZERO2
// RUN: megatron-opt %t/zero3.mlir --mt-autodiff --mt-parallelize="dp=2 zero=3" --split-input-file --verify-diagnostics \
// RUN:   | FileCheck %s --check-prefix=ZERO3
//
// dp=1 changes nothing: the output is byte for byte mt-autodiff's.
// RUN: megatron-opt %t/dp1.mlir --mt-autodiff -o %t/dp1.autodiff.mlir
// RUN: megatron-opt %t/dp1.mlir --mt-autodiff --mt-parallelize=dp=1 -o %t/dp1.parallel.mlir
// RUN: diff %t/dp1.autodiff.mlir %t/dp1.parallel.mlir
// RUN: FileCheck %s --check-prefix=DP1 --input-file=%t/dp1.parallel.mlir
//
// Errors in the training step. The ZeRO divisibility error is the same at
// every stage.
// RUN: megatron-opt %t/dp-batch.mlir --mt-autodiff --mt-parallelize=dp=3 --verify-diagnostics
// RUN: megatron-opt %t/zero-pieces.mlir --mt-autodiff --mt-parallelize="dp=2 zero=1" | FileCheck %s --check-prefix=PAD1
// RUN: megatron-opt %t/zero-pieces.mlir --mt-autodiff --mt-parallelize="dp=2 zero=2" | FileCheck %s --check-prefix=PAD2
// RUN: megatron-opt %t/zero-pieces.mlir --mt-autodiff --mt-parallelize="dp=2 zero=3" | FileCheck %s --check-prefix=PAD3
// RUN: megatron-opt %t/steps.mlir --mt-parallelize="dp=2 zero=1" --split-input-file --verify-diagnostics
//
// Errors in the options, reported on the module before anything changes.
// RUN: megatron-opt %t/dp0.mlir --mt-parallelize=dp=0 --verify-diagnostics
// RUN: megatron-opt %t/tp0.mlir --mt-parallelize=tp=0 --verify-diagnostics
// RUN: megatron-opt %t/zero4.mlir --mt-parallelize=zero=4 --verify-diagnostics
// RUN: megatron-opt %t/sp.mlir --mt-parallelize=sp=true --verify-diagnostics
// RUN: megatron-opt %t/tp-heads.mlir --mt-parallelize=tp=2 --verify-diagnostics
// RUN: megatron-opt %t/tp-kv-heads.mlir --mt-parallelize=tp=2 --verify-diagnostics
// RUN: megatron-opt %t/sp-sequence.mlir --mt-parallelize="tp=2 sp=true" --verify-diagnostics
// RUN: megatron-opt %t/tp-role.mlir --mt-parallelize=tp=2 --verify-diagnostics
// RUN: not megatron-opt %t/bad-role.mlir 2>&1 | FileCheck %s --check-prefix=BADROLE
// RUN: megatron-opt %t/tp-param.mlir --mt-parallelize=tp=2 --verify-diagnostics
//
// Diagnostics that print an option's value (dp, tp, zero) are matched with
// {{.*}} in its place: the pass streams the option object, which prints as
// a character (code 2 for dp=2), not as a number.

//--- zero0.mlir

//===----------------------------------------------------------------------===//
// dp=2, ZeRO 0
//===----------------------------------------------------------------------===//

// The batch of tokens and labels is halved and every activation retyped;
// parameters and optimizer state keep their types. Each gradient is
// averaged over dp by one all_reduce right after the op that completes it;
// the global norm and AdamW read the averaged gradients; the loss is
// returned averaged. Dropout (forward and backward) gets
// mt.rng_batch_axis = 0. The NEXT chain admits no other collective.

// ZERO0:       shard.grid @grid(shape = 2x1)
// ZERO0-LABEL: func.func @step
// ZERO0-SAME:    %[[IDS:[^:]+]]: tensor<2x8xi32> {mt.input = "tokens"}
// ZERO0-SAME:    %[[LABELS:[^:]+]]: tensor<2x8xi32> {mt.input = "labels"}
// ZERO0-SAME:    %[[WTE:[^:]+]]: tensor<32x16xf32> {mt.param = "wte.weight"}
// ZERO0-SAME:    %[[W:[^:]+]]: tensor<16x32xf32> {mt.param = "head.weight"}
// ZERO0-SAME:    %[[B:[^:]+]]: tensor<32xf32> {mt.param = "head.bias"}
// ZERO0-SAME:    %[[WTE_M:[^:]+]]: tensor<32x16xf32> {mt.param = "wte.weight", mt.state = "exp_avg"}
// ZERO0-SAME:    %[[W_M:[^:]+]]: tensor<16x32xf32> {mt.param = "head.weight", mt.state = "exp_avg"}
// ZERO0-SAME:    %[[B_M:[^:]+]]: tensor<32xf32> {mt.param = "head.bias", mt.state = "exp_avg"}
// ZERO0-SAME:    %[[WTE_V:[^:]+]]: tensor<32x16xf32> {mt.param = "wte.weight", mt.state = "exp_avg_sq"}
// ZERO0-SAME:    %[[W_V:[^:]+]]: tensor<16x32xf32> {mt.param = "head.weight", mt.state = "exp_avg_sq"}
// ZERO0-SAME:    %[[B_V:[^:]+]]: tensor<32xf32> {mt.param = "head.bias", mt.state = "exp_avg_sq"}
// ZERO0-SAME:    -> (tensor<f32> {mt.output = "loss"},
// ZERO0-SAME:    tensor<32x16xf32> {mt.param = "wte.weight"}, tensor<16x32xf32> {mt.param = "head.weight"}, tensor<32xf32> {mt.param = "head.bias"},
// ZERO0-SAME:    tensor<32x16xf32> {mt.param = "wte.weight", mt.state = "exp_avg"}, tensor<16x32xf32> {mt.param = "head.weight", mt.state = "exp_avg"}, tensor<32xf32> {mt.param = "head.bias", mt.state = "exp_avg"},
// ZERO0-SAME:    tensor<32x16xf32> {mt.param = "wte.weight", mt.state = "exp_avg_sq"}, tensor<16x32xf32> {mt.param = "head.weight", mt.state = "exp_avg_sq"}, tensor<32xf32> {mt.param = "head.bias", mt.state = "exp_avg_sq"},
// ZERO0-SAME:    tensor<f32> {mt.output = "grad_norm"})
// ZERO0-NEXT:    %[[X:.+]] = mt.embedding %[[WTE]], %[[IDS]] : (tensor<32x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
// ZERO0-NEXT:    %[[D:.+]] = mt.dropout %[[X]] {mt.rng_batch_axis = 0 : i64, probability = 1.000000e-01 : f64, rng_stream = 0 : i64} : tensor<2x8x16xf32>
// ZERO0-NEXT:    %[[H:.+]] = mt.matmul %[[D]], %[[W]] : (tensor<2x8x16xf32>, tensor<16x32xf32>) -> tensor<2x8x32xf32>
// ZERO0-NEXT:    %[[Y:.+]] = mt.bias_add %[[H]], %[[B]] : tensor<2x8x32xf32>, tensor<32xf32>
// ZERO0-NEXT:    %[[LOSS:.+]] = mt.cross_entropy %[[Y]], %[[LABELS]] : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<f32>
// ZERO0-NEXT:    arith.constant
// ZERO0-NEXT:    %[[DY:.+]] = mt.cross_entropy_grad {{.*}} -> tensor<2x8x32xf32>
// ZERO0-NEXT:    %[[DB:.+]] = mt.bias_add_grad %[[DY]] {mt.phase = "backward"} : tensor<2x8x32xf32> -> tensor<32xf32>
// ZERO0-NEXT:    %[[AVG_DB:.+]] = shard.all_reduce %[[DB]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<32xf32> -> tensor<32xf32>
// ZERO0-NEXT:    %[[DD:.+]] = mt.matmul %[[DY]], %[[W]] transpose_b {mt.phase = "backward"} : (tensor<2x8x32xf32>, tensor<16x32xf32>) -> tensor<2x8x16xf32>
// ZERO0-NEXT:    tensor.collapse_shape %[[D]] {{\[\[}}0, 1], [2]] {mt.phase = "backward"} : tensor<2x8x16xf32> into tensor<16x16xf32>
// ZERO0-NEXT:    tensor.collapse_shape %[[DY]] {{\[\[}}0, 1], [2]] {mt.phase = "backward"} : tensor<2x8x32xf32> into tensor<16x32xf32>
// ZERO0-NEXT:    %[[DW:.+]] = mt.matmul {{.*}} transpose_a {mt.phase = "backward"} : (tensor<16x16xf32>, tensor<16x32xf32>) -> tensor<16x32xf32>
// ZERO0-NEXT:    %[[AVG_DW:.+]] = shard.all_reduce %[[DW]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<16x32xf32> -> tensor<16x32xf32>
// ZERO0-NEXT:    %[[DX:.+]] = mt.dropout %[[DD]] {mt.phase = "backward", mt.rng_batch_axis = 0 : i64, probability = 1.000000e-01 : f64, rng_stream = 0 : i64} : tensor<2x8x16xf32>
// ZERO0-NEXT:    %[[DWTE:.+]] = mt.embedding_grad %[[DX]], %[[IDS]] {mt.phase = "backward"} : (tensor<2x8x16xf32>, tensor<2x8xi32>) -> tensor<32x16xf32>
// ZERO0-NEXT:    %[[AVG_DWTE:.+]] = shard.all_reduce %[[DWTE]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<32x16xf32> -> tensor<32x16xf32>
// ZERO0-NEXT:    %[[NORM:.+]] = mt.global_norm %[[AVG_DWTE]], %[[AVG_DW]], %[[AVG_DB]] : tensor<32x16xf32>, tensor<16x32xf32>, tensor<32xf32>
// ZERO0-NEXT:    %[[SCALE:.+]] = mt.clip_scale %[[NORM]],
// ZERO0-NEXT:    %[[NEW_WTE:[^,]+]], %[[NEW_WTE_M:[^,]+]], %[[NEW_WTE_V:[^ ]+]] = mt.adamw %[[WTE]], %[[AVG_DWTE]], %[[WTE_M]], %[[WTE_V]], {{.*}}, %[[SCALE]] decay {mt.phase = "optimizer"} : tensor<32x16xf32>
// ZERO0-NEXT:    %[[NEW_W:[^,]+]], %[[NEW_W_M:[^,]+]], %[[NEW_W_V:[^ ]+]] = mt.adamw %[[W]], %[[AVG_DW]], %[[W_M]], %[[W_V]], {{.*}}, %[[SCALE]] decay {mt.phase = "optimizer"} : tensor<16x32xf32>
// ZERO0-NEXT:    %[[NEW_B:[^,]+]], %[[NEW_B_M:[^,]+]], %[[NEW_B_V:[^ ]+]] = mt.adamw %[[B]], %[[AVG_DB]], %[[B_M]], %[[B_V]], {{.*}}, %[[SCALE]] {mt.phase = "optimizer"} : tensor<32xf32>
// ZERO0-NEXT:    %[[AVG_LOSS:.+]] = shard.all_reduce %[[LOSS]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<f32> -> tensor<f32>
// ZERO0-NEXT:    return %[[AVG_LOSS]], %[[NEW_WTE]], %[[NEW_W]], %[[NEW_B]], %[[NEW_WTE_M]], %[[NEW_W_M]], %[[NEW_B_M]], %[[NEW_WTE_V]], %[[NEW_W_V]], %[[NEW_B_V]], %[[NORM]] :
func.func @step(%ids: tensor<4x8xi32> {mt.input = "tokens"},
                %labels: tensor<4x8xi32> {mt.input = "labels"},
                %wte: tensor<32x16xf32> {mt.param = "wte.weight"},
                %w: tensor<16x32xf32> {mt.param = "head.weight"},
                %b: tensor<32xf32> {mt.param = "head.bias"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<4x8xi32>) -> tensor<4x8x16xf32>
  %d = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<4x8x16xf32>
  %h = mt.matmul %d, %w : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  %y = mt.bias_add %h, %b : tensor<4x8x32xf32>, tensor<32xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<4x8x32xf32>, tensor<4x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Attention and its gradient draw their dropout masks over the batch-split
// probabilities (mt.rng_batch_axis = 0); a dropout of the position
// embedding, which does not depend on the batch, is the same on every rank
// and gets no batch axis, forward or backward. split_heads, attention and
// merge_heads are retyped for 2 of the 4 sequences.

// ZERO0-LABEL: func.func @attention_rng
// ZERO0:         mt.position_embedding
// ZERO0-NEXT:    mt.dropout %{{.+}} {probability = 1.000000e-01 : f64, rng_stream = 0 : i64} : tensor<8x24xf32>
// ZERO0-NEXT:    mt.bias_add %{{.+}} : tensor<2x8x24xf32>, tensor<8x24xf32>
// ZERO0-NEXT:    %[[QKV:.+]]:3 = mt.split_heads %{{.+}} : tensor<2x8x24xf32> -> tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x2x8x4xf32>
// ZERO0-NEXT:    mt.attention %[[QKV]]#0, %[[QKV]]#1, %[[QKV]]#2 {dropout = 1.000000e-01 : f64, mt.rng_batch_axis = 0 : i64, rng_stream = 1 : i64} : tensor<2x2x8x4xf32>
// ZERO0-NEXT:    mt.merge_heads %{{.+}} : tensor<2x2x8x4xf32> -> tensor<2x8x8xf32>
// ZERO0:         mt.attention_grad {{.*}} {dropout = 1.000000e-01 : f64, mt.phase = "backward", mt.rng_batch_axis = 0 : i64, rng_stream = 1 : i64} : tensor<2x2x8x4xf32>
// ZERO0:         mt.dropout %{{.+}} {mt.phase = "backward", probability = 1.000000e-01 : f64, rng_stream = 0 : i64} : tensor<8x24xf32>
// ZERO0-NEXT:    mt.position_embedding_grad
func.func @attention_rng(%ids: tensor<4x8xi32> {mt.input = "tokens"},
                         %labels: tensor<4x8xi32> {mt.input = "labels"},
                         %wte: tensor<64x24xf32> {mt.param = "wte.weight"},
                         %wpe: tensor<16x24xf32> {mt.param = "wpe.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<64x24xf32>, tensor<4x8xi32>) -> tensor<4x8x24xf32>
  %pos = mt.position_embedding %wpe : tensor<16x24xf32> -> tensor<8x24xf32>
  %dpos = mt.dropout %pos {probability = 1.0e-01 : f64} : tensor<8x24xf32>
  %xp = mt.bias_add %x, %dpos : tensor<4x8x24xf32>, tensor<8x24xf32>
  %q, %k, %v = mt.split_heads %xp : tensor<4x8x24xf32> -> tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>, tensor<4x2x8x4xf32>
  %a = mt.attention %q, %k, %v {dropout = 1.0e-01 : f64} : tensor<4x2x8x4xf32>
  %m = mt.merge_heads %a : tensor<4x2x8x4xf32> -> tensor<4x8x8xf32>
  %loss = mt.cross_entropy %m, %labels : (tensor<4x8x8xf32>, tensor<4x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// A function without mt.adamw beside the training step is not one: its
// "tokens" argument keeps its batch.

// ZERO0-LABEL: func.func @not_a_step
// ZERO0-SAME:    (%[[IDS:.+]]: tensor<4x8xi32> {mt.input = "tokens"}) -> tensor<4x8xi32>
// ZERO0-NEXT:    return %[[IDS]] : tensor<4x8xi32>
func.func @not_a_step(%ids: tensor<4x8xi32> {mt.input = "tokens"}) -> tensor<4x8xi32> {
  return %ids : tensor<4x8xi32>
}

// -----

// A module without a training step leaves dp=2 nothing to split: refused
// rather than ignored.

// expected-error@+1 {{mt-parallelize: dp=2 transforms a training step, but the module has none}}
module {
  func.func @negative_no_training_step(%ids: tensor<4x8xi32> {mt.input = "tokens"}) -> tensor<4x8xi32> {
    return %ids : tensor<4x8xi32>
  }
}

//--- zero1.mlir

//===----------------------------------------------------------------------===//
// dp=2, ZeRO 1
//===----------------------------------------------------------------------===//

// Gradients are all-reduced as in ZeRO 0. Each rank keeps half of the
// optimizer state: exp_avg and exp_avg_sq become flat pieces of N/2
// elements marked with mt.full_shape and mt.shard_axis, in the arguments and
// in the results. The parameter and its averaged gradient are flattened and
// all_sliced to the rank's piece, AdamW updates the pieces, and the updated
// pieces are all_gathered and reshaped to the full parameter that is
// returned (unmarked). Rank-1 parameters need no reshape.

// ZERO1:       shard.grid @grid(shape = 2x1)
// ZERO1-LABEL: func.func @step
// ZERO1-SAME:    %[[WTE:[^:]+]]: tensor<32x16xf32> {mt.param = "wte.weight"}
// ZERO1-SAME:    %[[W:[^:]+]]: tensor<16x32xf32> {mt.param = "head.weight"}
// ZERO1-SAME:    %[[B:[^:]+]]: tensor<32xf32> {mt.param = "head.bias"}
// ZERO1-SAME:    %[[WTE_M:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg"}
// ZERO1-SAME:    %[[W_M:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 16, 32>, mt.param = "head.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg"}
// ZERO1-SAME:    %[[B_M:[^:]+]]: tensor<16xf32> {mt.full_shape = array<i64: 32>, mt.param = "head.bias", mt.shard_axis = 0 : i64, mt.state = "exp_avg"}
// ZERO1-SAME:    %[[WTE_V:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg_sq"}
// ZERO1-SAME:    %[[W_V:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 16, 32>, mt.param = "head.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg_sq"}
// ZERO1-SAME:    %[[B_V:[^:]+]]: tensor<16xf32> {mt.full_shape = array<i64: 32>, mt.param = "head.bias", mt.shard_axis = 0 : i64, mt.state = "exp_avg_sq"}
// ZERO1-SAME:    -> (tensor<f32> {mt.output = "loss"},
// ZERO1-SAME:    tensor<32x16xf32> {mt.param = "wte.weight"}, tensor<16x32xf32> {mt.param = "head.weight"}, tensor<32xf32> {mt.param = "head.bias"},
// ZERO1-SAME:    tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg"},
// ZERO1-SAME:    tensor<256xf32> {mt.full_shape = array<i64: 16, 32>, mt.param = "head.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg"},
// ZERO1-SAME:    tensor<16xf32> {mt.full_shape = array<i64: 32>, mt.param = "head.bias", mt.shard_axis = 0 : i64, mt.state = "exp_avg"},
// ZERO1-SAME:    tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg_sq"},
// ZERO1-SAME:    tensor<256xf32> {mt.full_shape = array<i64: 16, 32>, mt.param = "head.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg_sq"},
// ZERO1-SAME:    tensor<16xf32> {mt.full_shape = array<i64: 32>, mt.param = "head.bias", mt.shard_axis = 0 : i64, mt.state = "exp_avg_sq"},
// ZERO1-SAME:    tensor<f32> {mt.output = "grad_norm"})
// ZERO1-NOT:     shard.
// ZERO1:         %[[LOSS:.+]] = mt.cross_entropy
// ZERO1-NOT:     shard.
// ZERO1:         %[[DB:.+]] = mt.bias_add_grad
// ZERO1-NEXT:    %[[AVG_DB:.+]] = shard.all_reduce %[[DB]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<32xf32> -> tensor<32xf32>
// ZERO1-NOT:     shard.
// ZERO1:         %[[DW:.+]] = mt.matmul {{.*}} transpose_a
// ZERO1-NEXT:    %[[AVG_DW:.+]] = shard.all_reduce %[[DW]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<16x32xf32> -> tensor<16x32xf32>
// ZERO1-NOT:     shard.
// ZERO1:         %[[DWTE:.+]] = mt.embedding_grad
// ZERO1-NEXT:    %[[AVG_DWTE:.+]] = shard.all_reduce %[[DWTE]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<32x16xf32> -> tensor<32x16xf32>
// ZERO1-NEXT:    %[[NORM:.+]] = mt.global_norm %[[AVG_DWTE]], %[[AVG_DW]], %[[AVG_DB]] :
// ZERO1-NEXT:    %[[SCALE:.+]] = mt.clip_scale %[[NORM]],
// ZERO1-NEXT:    %[[WTE_FLAT:.+]] = tensor.collapse_shape %[[WTE]] {{\[\[}}0, 1]] : tensor<32x16xf32> into tensor<512xf32>
// ZERO1-NEXT:    %[[WTE_P:.+]] = shard.all_slice %[[WTE_FLAT]] on @grid grid_axes = [0] slice_axis = 0 : tensor<512xf32> -> tensor<256xf32>
// ZERO1-NEXT:    %[[DWTE_FLAT:.+]] = tensor.collapse_shape %[[AVG_DWTE]] {{\[\[}}0, 1]] : tensor<32x16xf32> into tensor<512xf32>
// ZERO1-NEXT:    %[[DWTE_P:.+]] = shard.all_slice %[[DWTE_FLAT]] on @grid grid_axes = [0] slice_axis = 0 : tensor<512xf32> -> tensor<256xf32>
// ZERO1-NEXT:    %[[NEW_WTE_P:[^,]+]], %[[NEW_WTE_M:[^,]+]], %[[NEW_WTE_V:[^ ]+]] = mt.adamw %[[WTE_P]], %[[DWTE_P]], %[[WTE_M]], %[[WTE_V]], {{.*}}, %[[SCALE]] decay : tensor<256xf32>
// ZERO1-NEXT:    %[[WTE_G:.+]] = shard.all_gather %[[NEW_WTE_P]] on @grid grid_axes = [0] gather_axis = 0 : tensor<256xf32> -> tensor<512xf32>
// ZERO1-NEXT:    %[[NEW_WTE:.+]] = tensor.expand_shape %[[WTE_G]] {{\[\[}}0, 1]] output_shape [32, 16] : tensor<512xf32> into tensor<32x16xf32>
// ZERO1-NEXT:    %[[W_FLAT:.+]] = tensor.collapse_shape %[[W]] {{\[\[}}0, 1]] : tensor<16x32xf32> into tensor<512xf32>
// ZERO1-NEXT:    %[[W_P:.+]] = shard.all_slice %[[W_FLAT]]
// ZERO1-NEXT:    %[[DW_FLAT:.+]] = tensor.collapse_shape %[[AVG_DW]]
// ZERO1-NEXT:    %[[DW_P:.+]] = shard.all_slice %[[DW_FLAT]]
// ZERO1-NEXT:    %[[NEW_W_P:[^,]+]], %[[NEW_W_M:[^,]+]], %[[NEW_W_V:[^ ]+]] = mt.adamw %[[W_P]], %[[DW_P]], %[[W_M]], %[[W_V]], {{.*}} decay : tensor<256xf32>
// ZERO1-NEXT:    %[[W_G:.+]] = shard.all_gather %[[NEW_W_P]]
// ZERO1-NEXT:    %[[NEW_W:.+]] = tensor.expand_shape %[[W_G]] {{\[\[}}0, 1]] output_shape [16, 32] : tensor<512xf32> into tensor<16x32xf32>
// ZERO1-NEXT:    %[[B_P:.+]] = shard.all_slice %[[B]] on @grid grid_axes = [0] slice_axis = 0 : tensor<32xf32> -> tensor<16xf32>
// ZERO1-NEXT:    %[[DB_P:.+]] = shard.all_slice %[[AVG_DB]] on @grid grid_axes = [0] slice_axis = 0 : tensor<32xf32> -> tensor<16xf32>
// ZERO1-NEXT:    %[[NEW_B_P:[^,]+]], %[[NEW_B_M:[^,]+]], %[[NEW_B_V:[^ ]+]] = mt.adamw %[[B_P]], %[[DB_P]], %[[B_M]], %[[B_V]], {{.*}} : tensor<16xf32>
// ZERO1-NEXT:    %[[NEW_B:.+]] = shard.all_gather %[[NEW_B_P]] on @grid grid_axes = [0] gather_axis = 0 : tensor<16xf32> -> tensor<32xf32>
// ZERO1-NEXT:    %[[AVG_LOSS:.+]] = shard.all_reduce %[[LOSS]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<f32> -> tensor<f32>
// ZERO1-NEXT:    return %[[AVG_LOSS]], %[[NEW_WTE]], %[[NEW_W]], %[[NEW_B]], %[[NEW_WTE_M]], %[[NEW_W_M]], %[[NEW_B_M]], %[[NEW_WTE_V]], %[[NEW_W_V]], %[[NEW_B_V]], %[[NORM]] :
func.func @step(%ids: tensor<4x8xi32> {mt.input = "tokens"},
                %labels: tensor<4x8xi32> {mt.input = "labels"},
                %wte: tensor<32x16xf32> {mt.param = "wte.weight"},
                %w: tensor<16x32xf32> {mt.param = "head.weight"},
                %b: tensor<32xf32> {mt.param = "head.bias"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<4x8xi32>) -> tensor<4x8x16xf32>
  %d = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<4x8x16xf32>
  %h = mt.matmul %d, %w : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  %y = mt.bias_add %h, %b : tensor<4x8x32xf32>, tensor<32xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<4x8x32xf32>, tensor<4x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

//--- zero2.mlir

//===----------------------------------------------------------------------===//
// dp=2, ZeRO 2
//===----------------------------------------------------------------------===//

// Each gradient is flattened and reduce-scattered (averaged) right after the
// op that completes it: no gradient is all-reduced. The global norm is
// sqrt(sum over ranks of the pieces' sums of squares): one all_reduce with
// the default (sum) reduction. AdamW updates the parameter's all_slice with
// the gradient piece; the updated pieces are all_gathered as in ZeRO 1.

// ZERO2:       shard.grid @grid(shape = 2x1)
// ZERO2-LABEL: func.func @step
// ZERO2-SAME:    %[[WTE:[^:]+]]: tensor<32x16xf32> {mt.param = "wte.weight"}
// ZERO2-SAME:    %[[W:[^:]+]]: tensor<16x32xf32> {mt.param = "head.weight"}
// ZERO2-SAME:    %[[B:[^:]+]]: tensor<32xf32> {mt.param = "head.bias"}
// ZERO2-SAME:    %[[WTE_M:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg"}
// ZERO2-NOT:     shard.
// ZERO2:         %[[LOSS:.+]] = mt.cross_entropy
// ZERO2-NOT:     shard.
// ZERO2:         %[[DB:.+]] = mt.bias_add_grad
// ZERO2-NEXT:    %[[DB_P:.+]] = shard.reduce_scatter %[[DB]] on @grid grid_axes = [0] reduction = average scatter_axis = 0 {mt.phase = "optimizer"} : tensor<32xf32> -> tensor<16xf32>
// ZERO2-NOT:     shard.
// ZERO2:         %[[DW:.+]] = mt.matmul {{.*}} transpose_a
// ZERO2-NEXT:    %[[DW_FLAT:.+]] = tensor.collapse_shape %[[DW]] {{\[\[}}0, 1]] {mt.phase = "optimizer"} : tensor<16x32xf32> into tensor<512xf32>
// ZERO2-NEXT:    %[[DW_P:.+]] = shard.reduce_scatter %[[DW_FLAT]] on @grid grid_axes = [0] reduction = average scatter_axis = 0 {mt.phase = "optimizer"} : tensor<512xf32> -> tensor<256xf32>
// ZERO2-NOT:     shard.
// ZERO2:         %[[DWTE:.+]] = mt.embedding_grad
// ZERO2-NEXT:    %[[DWTE_FLAT:.+]] = tensor.collapse_shape %[[DWTE]] {{\[\[}}0, 1]] {mt.phase = "optimizer"} : tensor<32x16xf32> into tensor<512xf32>
// ZERO2-NEXT:    %[[DWTE_P:.+]] = shard.reduce_scatter %[[DWTE_FLAT]] on @grid grid_axes = [0] reduction = average scatter_axis = 0 {mt.phase = "optimizer"} : tensor<512xf32> -> tensor<256xf32>
// ZERO2-NEXT:    %[[SQUARES:.+]] = mt.sum_squares %[[DWTE_P]], %[[DW_P]], %[[DB_P]] : tensor<256xf32>, tensor<256xf32>, tensor<16xf32>
// ZERO2-NEXT:    %[[TOTAL:.+]] = shard.all_reduce %[[SQUARES]] on @grid grid_axes = [0] : tensor<f32> -> tensor<f32>
// ZERO2-NEXT:    %[[NORM:.+]] = mt.sqrt %[[TOTAL]] : tensor<f32>
// ZERO2-NEXT:    %[[SCALE:.+]] = mt.clip_scale %[[NORM]],
// ZERO2-NEXT:    %[[WTE_FLAT:.+]] = tensor.collapse_shape %[[WTE]] {{\[\[}}0, 1]] : tensor<32x16xf32> into tensor<512xf32>
// ZERO2-NEXT:    %[[WTE_P:.+]] = shard.all_slice %[[WTE_FLAT]] on @grid grid_axes = [0] slice_axis = 0 : tensor<512xf32> -> tensor<256xf32>
// ZERO2-NEXT:    %[[NEW_WTE_P:[^,]+]], %{{[^,]+}}, %{{[^ ]+}} = mt.adamw %[[WTE_P]], %[[DWTE_P]], %[[WTE_M]], {{.*}}, %[[SCALE]] decay : tensor<256xf32>
// ZERO2-NEXT:    %[[WTE_G:.+]] = shard.all_gather %[[NEW_WTE_P]] on @grid grid_axes = [0] gather_axis = 0 : tensor<256xf32> -> tensor<512xf32>
// ZERO2-NEXT:    %[[NEW_WTE:.+]] = tensor.expand_shape %[[WTE_G]] {{\[\[}}0, 1]] output_shape [32, 16] : tensor<512xf32> into tensor<32x16xf32>
// ZERO2-NEXT:    tensor.collapse_shape %[[W]]
// ZERO2-NEXT:    %[[W_P:.+]] = shard.all_slice
// ZERO2-NEXT:    %[[NEW_W_P:[^,]+]], %{{[^,]+}}, %{{[^ ]+}} = mt.adamw %[[W_P]], %[[DW_P]],
// ZERO2-NEXT:    %[[W_G:.+]] = shard.all_gather %[[NEW_W_P]]
// ZERO2-NEXT:    %[[NEW_W:.+]] = tensor.expand_shape %[[W_G]]
// ZERO2-NEXT:    %[[B_P:.+]] = shard.all_slice %[[B]]
// ZERO2-NEXT:    %[[NEW_B_P:[^,]+]], %{{[^,]+}}, %{{[^ ]+}} = mt.adamw %[[B_P]], %[[DB_P]],
// ZERO2-NEXT:    %[[NEW_B:.+]] = shard.all_gather %[[NEW_B_P]]
// ZERO2-NEXT:    %[[AVG_LOSS:.+]] = shard.all_reduce %[[LOSS]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<f32> -> tensor<f32>
// ZERO2-NEXT:    return %[[AVG_LOSS]], %[[NEW_WTE]], %[[NEW_W]], %[[NEW_B]], {{.*}}, %[[NORM]] :
func.func @step(%ids: tensor<4x8xi32> {mt.input = "tokens"},
                %labels: tensor<4x8xi32> {mt.input = "labels"},
                %wte: tensor<32x16xf32> {mt.param = "wte.weight"},
                %w: tensor<16x32xf32> {mt.param = "head.weight"},
                %b: tensor<32xf32> {mt.param = "head.bias"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<4x8xi32>) -> tensor<4x8x16xf32>
  %d = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<4x8x16xf32>
  %h = mt.matmul %d, %w : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  %y = mt.bias_add %h, %b : tensor<4x8x32xf32>, tensor<32xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<4x8x32xf32>, tensor<4x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

//--- zero3.mlir

//===----------------------------------------------------------------------===//
// dp=2, ZeRO 3
//===----------------------------------------------------------------------===//

// Parameters too are pieces, marked like the optimizer state. Each is
// all_gathered (and reshaped) right before its first use in the forward
// pass and again before its first use in the backward pass: head.weight is
// read by both passes and is gathered twice, wte.weight and head.bias are
// read by the forward pass only and are gathered once. AdamW updates the
// parameter piece in place of an all_slice, and the updated piece is
// returned, marked, without an all_gather.

// ZERO3:       shard.grid @grid(shape = 2x1)
// ZERO3-LABEL: func.func @step
// ZERO3-SAME:    %[[IDS:[^:]+]]: tensor<2x8xi32> {mt.input = "tokens"}
// ZERO3-SAME:    %[[LABELS:[^:]+]]: tensor<2x8xi32> {mt.input = "labels"}
// ZERO3-SAME:    %[[WTE:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64}
// ZERO3-SAME:    %[[W:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 16, 32>, mt.param = "head.weight", mt.shard_axis = 0 : i64}
// ZERO3-SAME:    %[[B:[^:]+]]: tensor<16xf32> {mt.full_shape = array<i64: 32>, mt.param = "head.bias", mt.shard_axis = 0 : i64}
// ZERO3-SAME:    %[[WTE_M:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg"}
// ZERO3-SAME:    %[[W_M:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 16, 32>, mt.param = "head.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg"}
// ZERO3-SAME:    %[[B_M:[^:]+]]: tensor<16xf32> {mt.full_shape = array<i64: 32>, mt.param = "head.bias", mt.shard_axis = 0 : i64, mt.state = "exp_avg"}
// ZERO3-SAME:    -> (tensor<f32> {mt.output = "loss"},
// ZERO3-SAME:    tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64},
// ZERO3-SAME:    tensor<256xf32> {mt.full_shape = array<i64: 16, 32>, mt.param = "head.weight", mt.shard_axis = 0 : i64},
// ZERO3-SAME:    tensor<16xf32> {mt.full_shape = array<i64: 32>, mt.param = "head.bias", mt.shard_axis = 0 : i64},
// ZERO3-SAME:    tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64, mt.state = "exp_avg"},
// ZERO3-NEXT:    %[[WTE_G:.+]] = shard.all_gather %[[WTE]] on @grid grid_axes = [0] gather_axis = 0 : tensor<256xf32> -> tensor<512xf32>
// ZERO3-NEXT:    %[[WTE_FULL:.+]] = tensor.expand_shape %[[WTE_G]] {{\[\[}}0, 1]] output_shape [32, 16] : tensor<512xf32> into tensor<32x16xf32>
// ZERO3-NEXT:    %[[X:.+]] = mt.embedding %[[WTE_FULL]], %[[IDS]] : (tensor<32x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
// ZERO3-NEXT:    %[[D:.+]] = mt.dropout %[[X]] {mt.rng_batch_axis = 0 : i64,
// ZERO3-NEXT:    %[[W_FWD_G:.+]] = shard.all_gather %[[W]] on @grid grid_axes = [0] gather_axis = 0 : tensor<256xf32> -> tensor<512xf32>
// ZERO3-NEXT:    %[[W_FWD:.+]] = tensor.expand_shape %[[W_FWD_G]] {{\[\[}}0, 1]] output_shape [16, 32] : tensor<512xf32> into tensor<16x32xf32>
// ZERO3-NEXT:    %[[H:.+]] = mt.matmul %[[D]], %[[W_FWD]] :
// ZERO3-NEXT:    %[[B_FULL:.+]] = shard.all_gather %[[B]] on @grid grid_axes = [0] gather_axis = 0 : tensor<16xf32> -> tensor<32xf32>
// ZERO3-NEXT:    %[[Y:.+]] = mt.bias_add %[[H]], %[[B_FULL]] :
// ZERO3-NEXT:    %[[LOSS:.+]] = mt.cross_entropy %[[Y]], %[[LABELS]]
// ZERO3-NEXT:    arith.constant
// ZERO3-NEXT:    %[[DY:.+]] = mt.cross_entropy_grad
// ZERO3-NEXT:    %[[DB:.+]] = mt.bias_add_grad %[[DY]]
// ZERO3-NEXT:    %[[DB_P:.+]] = shard.reduce_scatter %[[DB]] on @grid grid_axes = [0] reduction = average scatter_axis = 0 {mt.phase = "optimizer"} : tensor<32xf32> -> tensor<16xf32>
// ZERO3-NEXT:    %[[W_BWD_G:.+]] = shard.all_gather %[[W]] on @grid grid_axes = [0] gather_axis = 0 : tensor<256xf32> -> tensor<512xf32>
// ZERO3-NEXT:    %[[W_BWD:.+]] = tensor.expand_shape %[[W_BWD_G]] {{\[\[}}0, 1]] output_shape [16, 32] : tensor<512xf32> into tensor<16x32xf32>
// ZERO3-NEXT:    mt.matmul %[[DY]], %[[W_BWD]] transpose_b {mt.phase = "backward"} :
// ZERO3-NOT:     shard.all_gather
// ZERO3:         %[[DW_P:.+]] = shard.reduce_scatter
// ZERO3-NOT:     shard.all_gather
// ZERO3:         %[[DWTE_P:.+]] = shard.reduce_scatter
// ZERO3-NEXT:    mt.sum_squares %[[DWTE_P]], %[[DW_P]], %[[DB_P]] :
// ZERO3-NEXT:    shard.all_reduce
// ZERO3-NEXT:    %[[NORM:.+]] = mt.sqrt
// ZERO3-NEXT:    %[[SCALE:.+]] = mt.clip_scale %[[NORM]],
// ZERO3-NEXT:    %[[NEW_WTE:[^,]+]], %[[NEW_WTE_M:[^,]+]], %{{[^ ]+}} = mt.adamw %[[WTE]], %[[DWTE_P]], %[[WTE_M]], {{.*}}, %[[SCALE]] decay : tensor<256xf32>
// ZERO3-NEXT:    %[[NEW_W:[^,]+]], %[[NEW_W_M:[^,]+]], %{{[^ ]+}} = mt.adamw %[[W]], %[[DW_P]], %[[W_M]], {{.*}}, %[[SCALE]] decay : tensor<256xf32>
// ZERO3-NEXT:    %[[NEW_B:[^,]+]], %[[NEW_B_M:[^,]+]], %{{[^ ]+}} = mt.adamw %[[B]], %[[DB_P]], %[[B_M]], {{.*}}, %[[SCALE]] : tensor<16xf32>
// ZERO3-NEXT:    %[[AVG_LOSS:.+]] = shard.all_reduce %[[LOSS]] on @grid grid_axes = [0] reduction = average {mt.phase = "optimizer"} : tensor<f32> -> tensor<f32>
// ZERO3-NEXT:    return %[[AVG_LOSS]], %[[NEW_WTE]], %[[NEW_W]], %[[NEW_B]], %[[NEW_WTE_M]], %[[NEW_W_M]], %[[NEW_B_M]],
func.func @step(%ids: tensor<4x8xi32> {mt.input = "tokens"},
                %labels: tensor<4x8xi32> {mt.input = "labels"},
                %wte: tensor<32x16xf32> {mt.param = "wte.weight"},
                %w: tensor<16x32xf32> {mt.param = "head.weight"},
                %b: tensor<32xf32> {mt.param = "head.bias"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<4x8xi32>) -> tensor<4x8x16xf32>
  %d = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<4x8x16xf32>
  %h = mt.matmul %d, %w : (tensor<4x8x16xf32>, tensor<16x32xf32>) -> tensor<4x8x32xf32>
  %y = mt.bias_add %h, %b : tensor<4x8x32xf32>, tensor<32xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<4x8x32xf32>, tensor<4x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A tied embedding read twice by the forward pass (lookup and output head)
// is gathered once, before the first of the two reads, and both read the
// same full copy; the backward pass gathers its own copy.

// ZERO3-LABEL: func.func @tied
// ZERO3-SAME:    %[[IDS:[^:]+]]: tensor<2x8xi32> {mt.input = "tokens"}
// ZERO3-SAME:    %[[WTE:[^:]+]]: tensor<256xf32> {mt.full_shape = array<i64: 32, 16>, mt.param = "wte.weight", mt.shard_axis = 0 : i64}
// ZERO3-NEXT:    %[[FWD_G:.+]] = shard.all_gather %[[WTE]]
// ZERO3-NEXT:    %[[FWD:.+]] = tensor.expand_shape %[[FWD_G]]
// ZERO3-NEXT:    mt.embedding %[[FWD]], %[[IDS]]
// ZERO3-NEXT:    mt.gelu
// ZERO3-NEXT:    mt.matmul %{{.+}}, %[[FWD]] transpose_b
// ZERO3-NEXT:    mt.cross_entropy
// ZERO3-NEXT:    arith.constant
// ZERO3-NEXT:    %[[DY:.+]] = mt.cross_entropy_grad
// ZERO3-NEXT:    %[[BWD_G:.+]] = shard.all_gather %[[WTE]]
// ZERO3-NEXT:    %[[BWD:.+]] = tensor.expand_shape %[[BWD_G]]
// ZERO3-NEXT:    mt.matmul %[[DY]], %[[BWD]] {mt.phase = "backward"} :
// ZERO3-NOT:     shard.all_gather
// ZERO3:         mt.adamw %[[WTE]],
func.func @tied(%ids: tensor<4x8xi32> {mt.input = "tokens"},
                %labels: tensor<4x8xi32> {mt.input = "labels"},
                %wte: tensor<32x16xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<4x8xi32>) -> tensor<4x8x16xf32>
  %g = mt.gelu %x : tensor<4x8x16xf32>
  %logits = mt.matmul %g, %wte transpose_b : (tensor<4x8x16xf32>, tensor<32x16xf32>) -> tensor<4x8x32xf32>
  %loss = mt.cross_entropy %logits, %labels : (tensor<4x8x32xf32>, tensor<4x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

//--- dp1.mlir

//===----------------------------------------------------------------------===//
// dp=1
//===----------------------------------------------------------------------===//

// One data-parallel rank: no grid, no collective, the batch is kept (and
// the diff in the RUN lines shows nothing else changes).

// DP1-NOT:     shard.
// DP1-LABEL: func.func @step
// DP1-SAME:    tensor<4x8xi32> {mt.input = "tokens"}
// DP1-NOT:     shard.
// DP1-NOT:     mt.rng_batch_axis
// DP1:         mt.global_norm
// DP1-NOT:     shard.
func.func @step(%ids: tensor<4x8xi32> {mt.input = "tokens"},
                %labels: tensor<4x8xi32> {mt.input = "labels"},
                %wte: tensor<32x16xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<4x8xi32>) -> tensor<4x8x16xf32>
  %d = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<4x8x16xf32>
  %logits = mt.matmul %d, %wte transpose_b : (tensor<4x8x16xf32>, tensor<32x16xf32>) -> tensor<4x8x32xf32>
  %loss = mt.cross_entropy %logits, %labels : (tensor<4x8x32xf32>, tensor<4x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

//--- dp-batch.mlir

// dp must divide the micro-batch of the token and label arguments: 4
// sequences cannot be split over 3 ranks.

// expected-error-re @below {{'func.func' op dp {{.*}} does not divide the micro-batch of 4 sequences (argument 'tokens')}}
func.func @negative_batch_not_divisible(%ids: tensor<4x8xi32> {mt.input = "tokens"},
                                        %labels: tensor<4x8xi32> {mt.input = "labels"},
                                        %wte: tensor<32x16xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %x = mt.embedding %wte, %ids : (tensor<32x16xf32>, tensor<4x8xi32>) -> tensor<4x8x16xf32>
  %logits = mt.matmul %x, %wte transpose_b : (tensor<4x8x16xf32>, tensor<32x16xf32>) -> tensor<4x8x32xf32>
  %loss = mt.cross_entropy %logits, %labels : (tensor<4x8x32xf32>, tensor<4x8xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

//--- zero-pieces.mlir

// ZeRO splits every flattened parameter into dp equal pieces. A bias of 3
// elements over 2 ranks is padded with a zero to 4 (as Megatron-LM's
// distributed optimizer pads its buffers): pieces of 2, the padding zero in
// the parameter, gradient and moments alike, so AdamW keeps it zero and it
// adds nothing to the norm; a gathered parameter is cut back to 3. The
// 16x3 weight (48 elements) needs no padding.

func.func @odd_parameter(%x: tensor<4x4x16xf32> {mt.input = "tokens"},
                         %labels: tensor<4x4xi32> {mt.input = "labels"},
                         %w: tensor<16x3xf32> {mt.param = "w"},
                         %b: tensor<3xf32> {mt.param = "b"}) -> tensor<f32> {
  %h = mt.matmul %x, %w : (tensor<4x4x16xf32>, tensor<16x3xf32>) -> tensor<4x4x3xf32>
  %y = mt.bias_add %h, %b : tensor<4x4x3xf32>, tensor<3xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<4x4x3xf32>, tensor<4x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// ZeRO-1: the reduced gradient and the parameter are padded, then sliced;
// the updated piece is gathered and cut.
// PAD1-LABEL: func.func @odd_parameter
// PAD1-SAME: %[[B:[a-z0-9]+]]: tensor<3xf32> {mt.param = "b"}
// PAD1-SAME: tensor<2xf32> {mt.full_shape = array<i64: 3>, mt.param = "b", mt.shard_axis = 0 : i64, mt.state = "exp_avg"}
// PAD1-NOT: tensor.pad %{{.*}} : tensor<48xf32>
// PAD1: %[[PARAM:.*]] = tensor.pad %[[B]] low[0] high[1]
// PAD1: tensor.yield %{{.*}} : f32
// PAD1-NEXT: } : tensor<3xf32> to tensor<4xf32>
// PAD1: %[[PARAM_PIECE:.*]] = shard.all_slice %[[PARAM]] {{.*}} : tensor<4xf32> -> tensor<2xf32>
// PAD1: %[[GRAD:.*]] = tensor.pad %{{.*}} low[0] high[1]
// PAD1: %[[GRAD_PIECE:.*]] = shard.all_slice %[[GRAD]] {{.*}} : tensor<4xf32> -> tensor<2xf32>
// PAD1: %[[NEW:.*]], %{{.*}}, %{{.*}} = mt.adamw %[[PARAM_PIECE]], %[[GRAD_PIECE]]
// PAD1: %[[GATHERED:.*]] = shard.all_gather %[[NEW]] {{.*}} : tensor<2xf32> -> tensor<4xf32>
// PAD1: %[[CUT:.*]] = tensor.extract_slice %[[GATHERED]][0] [3] [1] : tensor<4xf32> to tensor<3xf32>
// PAD1: return %{{.*}}, %{{.*}}, %[[CUT]],

// ZeRO-2: the gradient is padded before its reduce-scatter, once per step
// (the pad is optimizer work, as the reduction is).
// PAD2: %[[GRAD:.*]] = tensor.pad %{{.*}} low[0] high[1]
// PAD2: } {mt.phase = "optimizer"} : tensor<3xf32> to tensor<4xf32>
// PAD2-NEXT: shard.reduce_scatter %[[GRAD]] {{.*}} : tensor<4xf32> -> tensor<2xf32>

// ZeRO-3: the parameter is a padded piece, gathered and cut before its use.
// PAD3-LABEL: func.func @odd_parameter
// PAD3-SAME: %[[B:[a-z0-9]+]]: tensor<2xf32> {mt.full_shape = array<i64: 3>, mt.param = "b", mt.shard_axis = 0 : i64}
// PAD3: %[[GATHERED:.*]] = shard.all_gather %[[B]] {{.*}} : tensor<2xf32> -> tensor<4xf32>
// PAD3-NEXT: %[[CUT:.*]] = tensor.extract_slice %[[GATHERED]][0] [3] [1] : tensor<4xf32> to tensor<3xf32>
// PAD3-NEXT: mt.bias_add %{{.*}}, %[[CUT]]
// PAD3: tensor.pad %{{.*}} low[0] high[1]
// PAD3: shard.reduce_scatter %{{.*}} : tensor<4xf32> -> tensor<2xf32>
// PAD3: mt.adamw %[[B]], %{{.*}} : tensor<2xf32>

//--- steps.mlir

//===----------------------------------------------------------------------===//
// Hand-written training steps (no mt-autodiff)
//===----------------------------------------------------------------------===//

// A function with mt.adamw but no mt.global_norm is not a step made by
// mt-autodiff.

// expected-error @below {{'func.func' op mt-parallelize needs a training step with one mt.global_norm (run mt-autodiff first)}}
func.func @negative_no_global_norm(%x: tensor<4x8xf32> {mt.input = "tokens"},
                                   %p: tensor<8xf32> {mt.param = "p"},
                                   %m: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg"},
                                   %v: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg_sq"},
                                   %s: tensor<f32> {mt.input = "step"}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %g = mt.gelu %p : tensor<8xf32>
  %np, %nm, %nv = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %s : tensor<8xf32>
  return %np, %nm, %nv : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// One block: a step of several is refused before anything is rewritten.

// expected-error @below {{'func.func' op mt-parallelize needs a single-block function}}
func.func @negative_multi_block(%x: tensor<4x8xf32> {mt.input = "tokens"},
                                %p: tensor<8xf32> {mt.param = "p"},
                                %m: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg"},
                                %v: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg_sq"},
                                %s: tensor<f32> {mt.input = "step"}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %g = mt.gelu %p : tensor<8xf32>
  cf.br ^bb1
^bb1:
  %np, %nm, %nv = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %s : tensor<8xf32>
  return %np, %nm, %nv : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Two global norms are not a step made by mt-autodiff either.

// expected-error @below {{'func.func' op mt-parallelize needs a training step with one mt.global_norm (run mt-autodiff first)}}
func.func @negative_two_global_norms(%x: tensor<4x8xf32> {mt.input = "tokens"},
                                     %p: tensor<8xf32> {mt.param = "p"},
                                     %m: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg"},
                                     %v: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg_sq"},
                                     %s: tensor<f32> {mt.input = "step"}) -> (tensor<8xf32>, tensor<f32>) {
  %g = mt.gelu %p : tensor<8xf32>
  %n0 = mt.global_norm %g : tensor<8xf32>
  %n1 = mt.global_norm %g : tensor<8xf32>
  %c = mt.clip_scale %n0, %s : tensor<f32>
  %np, %nm, %nv = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %c : tensor<8xf32>
  return %np, %n1 : tensor<8xf32>, tensor<f32>
}

// -----

// Under ZeRO the parameter and its moments must be arguments, whose types
// become pieces.

func.func @negative_parameter_not_argument(%x: tensor<4x8xf32> {mt.input = "tokens"},
                                           %p: tensor<8xf32> {mt.param = "p"},
                                           %m: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg"},
                                           %v: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg_sq"},
                                           %s: tensor<f32> {mt.input = "step"}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %q = mt.gelu %p : tensor<8xf32>
  %n = mt.global_norm %q : tensor<8xf32>
  %c = mt.clip_scale %n, %s : tensor<f32>
  // expected-error @below {{'mt.adamw' op mt-parallelize needs the parameter and its moments to be function arguments}}
  %np, %nm, %nv = mt.adamw %q, %q, %m, %v, %s, %s, %s, %s, %s, %s, %c : tensor<8xf32>
  return %np, %nm, %nv : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Under ZeRO the updated parameter may only be returned: another reader
// would need the full tensor that only the return gets.

func.func @negative_updated_parameter_read(%x: tensor<4x8xf32> {mt.input = "tokens"},
                                           %p: tensor<8xf32> {mt.param = "p"},
                                           %m: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg"},
                                           %v: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg_sq"},
                                           %s: tensor<f32> {mt.input = "step"}) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %g = mt.gelu %p : tensor<8xf32>
  %n = mt.global_norm %g : tensor<8xf32>
  %c = mt.clip_scale %n, %s : tensor<f32>
  // expected-error @below {{'mt.adamw' op mt-parallelize expects updated parameters to be returned only}}
  %np, %nm, %nv = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %c : tensor<8xf32>
  %r = mt.gelu %np : tensor<8xf32>
  return %np, %nm, %nv, %r : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Splitting the batch retypes every op from its operands' types: an op
// with no shape rule stops the pass.

func.func @negative_no_shape_rule(%x: tensor<4x8xf32> {mt.input = "tokens"},
                                  %p: tensor<8xf32> {mt.param = "p"},
                                  %m: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg"},
                                  %v: tensor<8xf32> {mt.param = "p", mt.state = "exp_avg_sq"},
                                  %s: tensor<f32> {mt.input = "step"}) -> (tensor<4x8xf32>, tensor<8xf32>) {
  // expected-error @below {{'arith.addf' op has no shape rule: cannot retype it for parallelization}}
  %y = arith.addf %x, %x : tensor<4x8xf32>
  %g = mt.gelu %p : tensor<8xf32>
  %n = mt.global_norm %g : tensor<8xf32>
  %c = mt.clip_scale %n, %s : tensor<f32>
  %np, %nm, %nv = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %c : tensor<8xf32>
  return %y, %np : tensor<4x8xf32>, tensor<8xf32>
}

//--- dp0.mlir

// expected-error-re @below {{mt-parallelize: dp must be positive, got {{.*}}}}
module @negative_dp0 {
}

//--- tp0.mlir

// expected-error-re @below {{mt-parallelize: tp must be positive, got {{.*}}}}
module @negative_tp0 {
}

//--- zero4.mlir

// expected-error-re @below {{mt-parallelize: zero must be 0, 1, 2 or 3, got {{.*}}}}
module @negative_zero4 {
}

//--- sp.mlir

// Sequence parallelism splits what tensor parallelism leaves replicated: it
// needs tp > 1.

// expected-error @below {{mt-parallelize: sp (sequence parallelism) needs tp > 1}}
module @negative_sp_without_tp {
}

//--- tp-heads.mlir

// Tensor parallelism splits attention by heads: 3 heads over tp = 2 is an
// error at the attention op, and no other error follows.

module @negative_tp_heads {
  func.func @heads(%q: tensor<2x3x8x4xf32>) -> tensor<2x3x8x4xf32> {
    // expected-error-re @below {{'mt.attention' op has 3 heads, not divisible by tp {{.*}}}}
    %a = mt.attention %q, %q, %q : tensor<2x3x8x4xf32>
    return %a : tensor<2x3x8x4xf32>
  }
}

//--- tp-kv-heads.mlir

// Grouped keys and values written as such split with their query heads: 1
// key head over tp = 2 is an error at the attention op.

module @negative_tp_kv_heads {
  func.func @kv_heads(%q: tensor<2x4x8x4xf32>, %k: tensor<2x1x8x4xf32>) -> tensor<2x4x8x4xf32> {
    // expected-error-re @below {{'mt.attention' op has 1 key/value heads, not divisible by tp {{.*}}}}
    %a = mt.attention %q, %k, %k : tensor<2x4x8x4xf32>, tensor<2x1x8x4xf32>
    return %a : tensor<2x4x8x4xf32>
  }
}

//--- sp-sequence.mlir

// Sequence parallelism splits the sequence between the tensor-parallel
// ranks: 15 tokens over tp = 2 is an error at the attention op, not a
// verifier's error about a cast deep in the partition.

module @negative_sp_sequence {
  func.func @sequence(%q: tensor<2x4x15x4xf32>) -> tensor<2x4x15x4xf32> {
    // expected-error @below {{'mt.attention' op attends over a sequence of 15, not divisible by tp 2 (sequence parallelism, sp, splits it between the tensor-parallel ranks)}}
    %a = mt.attention %q, %q, %q : tensor<2x4x15x4xf32>
    return %a : tensor<2x4x15x4xf32>
  }
}

//--- tp-role.mlir

// Tensor parallelism reads each parameter's role from its mt.parallel, never
// from its name: a parameter stating none is an error naming it, even one
// whose Hugging Face name would say column-parallel.

module @negative_tp_role {
  // expected-error-re @below {{'func.func' op parameter 'h.0.mlp.c_fc.weight' states no tensor-parallel role: tp {{.*}} needs 'mt.parallel' (column, row, vocab or replicated) on every parameter}}
  func.func @step(%p: tensor<4x8xf32> {mt.param = "h.0.mlp.c_fc.weight"},
                  %g: tensor<4x8xf32>,
                  %m: tensor<4x8xf32> {mt.param = "h.0.mlp.c_fc.weight", mt.state = "exp_avg"},
                  %v: tensor<4x8xf32> {mt.param = "h.0.mlp.c_fc.weight", mt.state = "exp_avg_sq"},
                  %s: tensor<f32>) -> tensor<4x8xf32> {
    %np, %nm, %nv = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %s decay : tensor<4x8xf32>
    return %np : tensor<4x8xf32>
  }
}

//--- bad-role.mlir

// A role the dialect does not know, or a split of a dimension the tensor
// lacks, is rejected by the verifier.
// BADROLE: error: 'func.func' op argument #0: 'mt.parallel' must be {role = "column" | "row" | "vocab", dim = D, chunks = K (optional, >= 1)} or {role = "replicated"}, got {dim = 1 : i64, role = "diagonal"}
func.func @step(%p: tensor<4x8xf32> {mt.param = "w", mt.parallel = {role = "diagonal", dim = 1}}) {
  return
}

//--- tp-param.mlir

// A parameter Megatron splits (here the MLP input projection, by columns)
// whose split dimension tp does not divide is an error at the step.

module @negative_tp_param {
  // expected-error @below {{'func.func' op parameter 'h.0.mlp.c_fc.weight' has 5 entries in dimension 1, not divisible into 1 x tp 2 pieces}}
  func.func @step(%p: tensor<4x5xf32> {mt.param = "h.0.mlp.c_fc.weight", mt.parallel = {role = "column", dim = 1}},
                  %g: tensor<4x5xf32>,
                  %m: tensor<4x5xf32> {mt.param = "h.0.mlp.c_fc.weight", mt.state = "exp_avg"},
                  %v: tensor<4x5xf32> {mt.param = "h.0.mlp.c_fc.weight", mt.state = "exp_avg_sq"},
                  %s: tensor<f32>) -> tensor<4x5xf32> {
    %np, %nm, %nv = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %s decay : tensor<4x5xf32>
    return %np : tensor<4x5xf32>
  }
}
