// mt-check-shardings refuses hand-written shardings that upstream
// shard-partition (MLIR 22) crashes on, before it runs. Each function below
// crashed `func.func(sharding-propagation,shard-partition)` without the
// check (segmentation fault); with it, each is a diagnostic and a non-zero
// exit. Valid annotations pass: test/dialects/mt/sharding-interface.mlir
// runs every model there through the check first.
// RUN: megatron-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(mt-check-shardings,sharding-propagation,shard-partition))'
// RUN: not megatron-opt %s --split-input-file --pass-pipeline='builtin.module(func.func(mt-check-shardings,sharding-propagation,shard-partition))' -o /dev/null 2>/dev/null

// An unused argument.
shard.grid @grid(shape = 2)
// expected-error @below {{argument #2 of @unused_argument has no use: upstream shard-partition cannot partition a sharded function with unused arguments; remove it}}
func.func @unused_argument(%x: tensor<2x4x8xf32>, %w: tensor<8x32xf32>, %unused: tensor<4xf32>) -> tensor<2x4x32xf32> {
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %ws = shard.shard %w to %cols : tensor<8x32xf32>
  %h = mt.matmul %x, %ws : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  return %h : tensor<2x4x32xf32>
}

// -----

// An op none of whose results is read (one with some results read is fine,
// as mt.layer_norm_grad in sharding-interface.mlir).
shard.grid @grid(shape = 2)
func.func @unused_result(%x: tensor<2x4x8xf32>, %w: tensor<8x32xf32>) -> tensor<2x4x32xf32> {
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %ws = shard.shard %w to %cols : tensor<8x32xf32>
  // expected-error @below {{'mt.gelu' has no used result: upstream shard-partition cannot partition a sharded function with dead ops; remove it}}
  %g = mt.gelu %x : tensor<2x4x8xf32>
  %h = mt.matmul %x, %ws : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  return %h : tensor<2x4x32xf32>
}

// -----

// An annotation nothing reads.
shard.grid @grid(shape = 2)
func.func @unused_annotation(%x: tensor<2x4x8xf32>, %w: tensor<8x32xf32>) -> tensor<2x4x8xf32> {
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  // expected-error @below {{'shard.shard' has no used result}}
  %ws = shard.shard %w to %cols annotate_for_users : tensor<8x32xf32>
  %g = mt.gelu %x : tensor<2x4x8xf32>
  return %g : tensor<2x4x8xf32>
}

// -----

// A sharded weight produced by an op and also returned unannotated.
shard.grid @grid(shape = 2)
func.func @annotated_and_raw(%x: tensor<2x4x8xf32>, %w0: tensor<8x32xf32>) -> (tensor<2x4x32xf32>, tensor<8x32xf32>) {
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  // expected-error @below {{result #0 of 'mt.gelu' is annotated by shard.shard but also read directly by 'func.return': upstream shard-partition cannot partition that; annotate every use or none}}
  %w = mt.gelu %w0 : tensor<8x32xf32>
  %ws = shard.shard %w to %cols : tensor<8x32xf32>
  %h = mt.matmul %x, %ws : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  // expected-note @below {{read here}}
  return %h, %w : tensor<2x4x32xf32>, tensor<8x32xf32>
}

// -----

// A sharded argument a matmul also reads directly.
shard.grid @grid(shape = 2)
// expected-error @below {{argument #1 of @argument_annotated_and_raw is annotated by shard.shard but also read directly by 'mt.matmul'}}
func.func @argument_annotated_and_raw(%x: tensor<2x4x8xf32>, %w: tensor<8x32xf32>) -> (tensor<2x4x32xf32>, tensor<2x4x32xf32>) {
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %ws = shard.shard %w to %cols : tensor<8x32xf32>
  %h = mt.matmul %x, %ws : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  // expected-note @below {{read here}}
  %raw = mt.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  return %h, %raw : tensor<2x4x32xf32>, tensor<2x4x32xf32>
}

// -----

// Without shard.shard ops nothing is checked: an unused argument is fine.
shard.grid @grid(shape = 2)
func.func @no_annotations(%x: tensor<2x4x8xf32>, %unused: tensor<4xf32>) -> tensor<2x4x8xf32> {
  %g = mt.gelu %x : tensor<2x4x8xf32>
  return %g : tensor<2x4x8xf32>
}
