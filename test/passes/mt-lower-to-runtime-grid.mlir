// RUN: megatron-opt %s --mt-lower-to-runtime --split-input-file --verify-diagnostics

// The runtime runs collectives over one grid axis, with a sum or an average.

module {
  shard.grid @grid(shape = 2x2)
  func.func @negative_two_axes(%x: tensor<4xf32> {mt.input = "lr"}) -> tensor<4xf32> {
    // expected-error @below {{'shard.all_reduce' op cannot be lowered to the runtime: collectives over exactly one grid axis are supported}}
    %y = shard.all_reduce %x on @grid grid_axes = [0, 1] : tensor<4xf32> -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

module {
  shard.grid @grid(shape = 2x1)
  func.func @negative_max(%x: tensor<4xf32> {mt.input = "lr"}) -> tensor<4xf32> {
    // expected-error @below {{'shard.all_reduce' op cannot be lowered to the runtime: only sum and average reductions are supported}}
    %y = shard.all_reduce %x on @grid grid_axes = [0] reduction = max : tensor<4xf32> -> tensor<4xf32>
    return %y : tensor<4xf32>
  }
}

// -----

// One device grid per module.

module {
  shard.grid @grid(shape = 2x1)
  // expected-error @below {{'shard.grid' op mt-lower-to-runtime supports one device grid}}
  shard.grid @other(shape = 4x1)
}

// -----

// On a grid, the one function is the SPMD program of every rank.

// expected-error @below {{mt-lower-to-runtime: a module with a device grid must hold one function (the SPMD program), got 2}}
module {
  shard.grid @grid(shape = 2x1)
  func.func @a(%x: tensor<4xf32> {mt.input = "lr"}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  func.func @b(%x: tensor<4xf32> {mt.input = "lr"}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}
