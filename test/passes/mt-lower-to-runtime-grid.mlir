// RUN: megatron-opt %s --mt-lower-to-runtime --split-input-file --verify-diagnostics | FileCheck %s

// On a device grid the program is SPMD: one mtrt.program per pipeline stage,
// shared by every rank of the stage. What differs between those ranks is
// stated relative to their grid coordinates, never as one rank's value: a
// sharded buffer names the grid axis whose coordinate picks its piece, and a
// per-rank kernel parameter is a dictionary {base, grid_axis, stride} whose
// value on a rank is base + stride * coord[grid_axis].

//===----------------------------------------------------------------------===//
// One program for a dp x tp grid
//===----------------------------------------------------------------------===//

// A 2x2 (dp x tp) grid has four ranks but gets one program, @stage0, and the
// function is gone. Sharded arguments keep their full shape and name grid
// axes, with the axis' size as the count: a tensor-parallel split of wte's
// rows over tp (axis 1); its moment additionally cut into ZeRO pieces over
// dp (piece_axis 0); a plain ZeRO piece of b over dp (shard_axis 0).
// The embedding's first vocabulary row is 8 * coord[tp] (8 rows per rank),
// the dropout's first random index 32 * coord[dp] (the 1x4x8 elements of
// each data-parallel rank's share); a collective keeps its grid axis.

// CHECK-LABEL: mtrt.program @stage0 attributes {arena_bytes = {{[0-9]+}} : i64, flops_per_token = {{[0-9]+}} : i64, persistent_bytes = {{[0-9]+}} : i64, stage = 0 : i64}
// CHECK-NEXT:    mtrt.buffer {kind = "input", name = "tokens", offset = 0 : i64} : memref<1x4xi32>
// CHECK-NEXT:    %[[WTE:.+]] = mtrt.buffer {full_shape = array<i64: 16, 8>, kind = "param", name = "wte.weight", offset = {{[0-9]+}} : i64, shard_axis = 1 : i64, shard_chunks = 1 : i64, shard_count = 2 : i64, shard_dim = 0 : i64} : memref<8x8xf32>
// CHECK-NEXT:    mtrt.buffer {full_shape = array<i64: 16, 8>, kind = "exp_avg", name = "wte.weight", offset = {{[0-9]+}} : i64, piece_axis = 0 : i64, piece_count = 2 : i64, shard_axis = 1 : i64, shard_chunks = 1 : i64, shard_count = 2 : i64, shard_dim = 0 : i64} : memref<32xf32>
// CHECK-NEXT:    mtrt.buffer {full_shape = array<i64: 8>, kind = "param", name = "b", offset = {{[0-9]+}} : i64, shard_axis = 0 : i64, shard_count = 2 : i64} : memref<4xf32>
// CHECK:         mtrt.kernel "embedding" ins(%[[WTE]], %{{.+}} : memref<8x8xf32>, memref<1x4xi32>) outs(%{{.+}} : memref<1x4x8xf32>) {vocab_grid_axis = 1 : i64, vocab_offset = {base = 0 : i64, grid_axis = 1 : i64, stride = 8 : i64}, vocab_size = 16 : i64}
// CHECK:         mtrt.kernel "dropout" {{.*}} {probability = 1.000000e-01 : f64, rng_offset = {base = 0 : i64, grid_axis = 0 : i64, stride = 32 : i64}, rng_stream = 0 : i64}
// CHECK:         mtrt.kernel "all_reduce" ins(%{{.+}} : memref<1x4x8xf32>) outs(%{{.+}} : memref<1x4x8xf32>) {average = false, grid_axis = 1 : i64}
// CHECK-NEXT:  {{^  [}]$}}
// CHECK-NOT:   mtrt.program
// CHECK-NOT:   func.func
// CHECK:       // -----
module {
  shard.grid @grid(shape = 2x2)
  func.func @step(%ids: tensor<1x4xi32> {mt.input = "tokens"},
                  %wte: tensor<8x8xf32> {mt.param = "wte.weight", mt.full_shape = array<i64: 16, 8>, mt.shard_axis = 1 : i64, mt.shard_dim = 0 : i64, mt.shard_chunks = 1 : i64},
                  %m: tensor<32xf32> {mt.param = "wte.weight", mt.state = "exp_avg", mt.full_shape = array<i64: 16, 8>, mt.shard_axis = 1 : i64, mt.shard_dim = 0 : i64, mt.shard_chunks = 1 : i64, mt.piece_axis = 0 : i64},
                  %b: tensor<4xf32> {mt.param = "b", mt.full_shape = array<i64: 8>, mt.shard_axis = 0 : i64})
      -> tensor<1x4x8xf32> {
    %x = mt.embedding %wte, %ids {mt.tp_vocab_axis = 1 : i64, mt.vocab_size = 16 : i64} : (tensor<8x8xf32>, tensor<1x4xi32>) -> tensor<1x4x8xf32>
    %d = mt.dropout %x {probability = 1.0e-01 : f64, rng_stream = 0 : i64, mt.rng_batch_axis = 0 : i64} : tensor<1x4x8xf32>
    %r = shard.all_reduce %d on @grid grid_axes = [1] : tensor<1x4x8xf32> -> tensor<1x4x8xf32>
    return %r : tensor<1x4x8xf32>
  }
}

// -----

// Per-rank random offsets, each relative to a grid coordinate, on a 2x2
// (dp x tp) grid:
// - attention split by heads over tp: 2 local heads of 4, the first at
//   2 * coord[tp]; the batch offset counts the 1x4x4x4 probabilities of all
//   heads, 64 per data-parallel rank;
// - dropout split by sequence over tp: 2 local rows of 4, the first at
//   2 * coord[tp]; the batch offset counts the 1x4x8 elements of the whole
//   sequence, 32 per data-parallel rank;
// - dropout of microbatch 1 of the 2 each data-parallel rank runs: rank d
//   holds microbatches 2d and 2d + 1 of 16 elements, so the offset is
//   16 + 32 * coord[dp];
// - cross-entropy over a vocabulary split over tp: 8 columns per rank.

// CHECK-LABEL: mtrt.program @stage0 attributes {{{.*}}stage = 0 : i64}
// CHECK:         mtrt.kernel "attention" {{.*}} {dropout = 1.000000e-01 : f64, rng_head_offset = {base = 0 : i64, grid_axis = 1 : i64, stride = 2 : i64}, rng_heads = 4 : i64, rng_offset = {base = 0 : i64, grid_axis = 0 : i64, stride = 64 : i64}, rng_stream = 1 : i64}
// CHECK:         mtrt.kernel "dropout" {{.*}} {probability = 1.000000e-01 : f64, rng_offset = {base = 0 : i64, grid_axis = 0 : i64, stride = 32 : i64}, rng_seq_offset = {base = 0 : i64, grid_axis = 1 : i64, stride = 2 : i64}, rng_seq_total = 4 : i64, rng_stream = 0 : i64}
// CHECK:         mtrt.kernel "dropout" {{.*}} {probability = 1.000000e-01 : f64, rng_offset = {base = 16 : i64, grid_axis = 0 : i64, stride = 32 : i64}, rng_stream = 2 : i64} {microbatch = 1 : i64}
// CHECK:         mtrt.kernel "cross_entropy" {{.*}} {vocab_grid_axis = 1 : i64, vocab_offset = {base = 0 : i64, grid_axis = 1 : i64, stride = 8 : i64}}
// CHECK-NEXT:  {{^  [}]$}}
// CHECK-NOT:   mtrt.program
// CHECK:       // -----
module {
  shard.grid @grid(shape = 2x2)
  func.func @rng(%q: tensor<1x2x4x4xf32> {mt.param = "q"},
                 %x: tensor<1x2x8xf32> {mt.param = "x"},
                 %logits: tensor<1x4x8xf32> {mt.param = "logits"},
                 %labels: tensor<1x4xi32> {mt.input = "labels"})
      -> (tensor<1x2x4x4xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<f32>) {
    %a = mt.attention %q, %q, %q {dropout = 1.0e-01 : f64, rng_stream = 1 : i64, mt.rng_batch_axis = 0 : i64, mt.rng_head_axis = 1 : i64} : tensor<1x2x4x4xf32>
    %d = mt.dropout %x {probability = 1.0e-01 : f64, rng_stream = 0 : i64, mt.rng_batch_axis = 0 : i64, mt.rng_seq_axis = 1 : i64} : tensor<1x2x8xf32>
    %m = mt.dropout %x {probability = 1.0e-01 : f64, rng_stream = 2 : i64, mt.rng_batch_axis = 0 : i64, mt.microbatch = 1 : i64, mt.microbatches = 2 : i64} : tensor<1x2x8xf32>
    %l = mt.cross_entropy %logits, %labels {mt.tp_vocab_axis = 1 : i64} : (tensor<1x4x8xf32>, tensor<1x4xi32>) -> tensor<f32>
    return %a, %d, %m, %l : tensor<1x2x4x4xf32>, tensor<1x2x8xf32>, tensor<1x2x8xf32>, tensor<f32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// One program per pipeline stage
//===----------------------------------------------------------------------===//

// On a pp x dp x tp grid, each function marked with its 'mt.pipeline_stage'
// becomes that stage's program, @stage<N> with stage = N. A tagged
// shard.send / shard.recv over the pipeline axis becomes mtrt.send /
// mtrt.recv naming the peer stage, the tag and the microbatch; the receive
// writes into the buffer of its (empty) input, which the add then reads.

// CHECK-LABEL: mtrt.program @stage0 attributes {{{.*}}stage = 0 : i64}
// CHECK:         mtrt.buffer {kind = "input", microbatch = 0 : i64, name = "tokens", offset = 0 : i64} : memref<1x4xi32>
// CHECK:         %[[X:.+]] = mtrt.buffer {kind = "activation", offset = {{[0-9]+}} : i64} : memref<8xf32>
// CHECK-NEXT:    mtrt.kernel "gelu" {{.*}} outs(%[[X]] : memref<8xf32>)
// CHECK:         mtrt.send %[[X]] to 1 {microbatch = 0 : i64, tag = 3 : i64} : memref<8xf32>
// CHECK-NEXT:  {{^  [}]$}}
// CHECK-LABEL: mtrt.program @stage1 attributes {{{.*}}stage = 1 : i64}
// CHECK:         %[[IN:.+]] = mtrt.buffer {alias, kind = "activation", offset = {{[0-9]+}} : i64} : memref<8xf32>
// CHECK-NEXT:    mtrt.recv %[[IN]] from 0 {microbatch = 0 : i64, tag = 3 : i64} : memref<8xf32>
// CHECK:         mtrt.kernel "add" ins(%[[IN]], %{{.+}} : memref<8xf32>, memref<8xf32>)
// CHECK-NEXT:  {{^  [}]$}}
// CHECK-NOT:   mtrt.program
// CHECK-NOT:   func.func
// CHECK:       // -----
module {
  shard.grid @grid(shape = 2x1x1)
  func.func @gpt2_stage0(%ids: tensor<1x4xi32> {mt.input = "tokens", mt.microbatch = 0 : i64},
                         %w: tensor<8xf32> {mt.param = "w"}) attributes {mt.pipeline_stage = 0 : i64} {
    %x = mt.gelu %w : tensor<8xf32>
    %s = shard.send %x on @grid grid_axes = [0] destination = [1] {mt.transfer_tag = 3 : i64, mt.microbatch = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    return
  }
  func.func @gpt2_stage1(%v: tensor<8xf32> {mt.param = "v"}) -> tensor<8xf32> attributes {mt.pipeline_stage = 1 : i64} {
    %e = tensor.empty() : tensor<8xf32>
    %r = shard.recv %e on @grid grid_axes = [0] source = [0] {mt.transfer_tag = 3 : i64, mt.microbatch = 0 : i64} : (tensor<8xf32>) -> tensor<8xf32>
    %y = mt.add %r, %v : tensor<8xf32>
    return %y : tensor<8xf32>
  }
}

// -----

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

// The ranks of a stage run one program: two functions of the same stage
// (here both unmarked, so both stage 0) cannot both be it.

module {
  shard.grid @grid(shape = 2x2)
  // expected-note @below {{the first one is here}}
  func.func @a(%x: tensor<4xf32> {mt.input = "lr"}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
  // expected-error @below {{'func.func' op is a second program for pipeline stage 0: a module lowers to one function per stage (mark pipeline stages with 'mt.pipeline_stage', or run mt-pipeline)}}
  func.func @negative_same_stage(%x: tensor<4xf32> {mt.input = "lr"}) -> tensor<4xf32> {
    return %x : tensor<4xf32>
  }
}

// -----

// The same with explicit stages: two functions marked stage 1 on a pipeline
// grid.

module {
  shard.grid @grid(shape = 2x1x1)
  func.func @stage0(%x: tensor<4xf32> {mt.input = "lr"}) -> tensor<4xf32> attributes {mt.pipeline_stage = 0 : i64} {
    return %x : tensor<4xf32>
  }
  // expected-note @below {{the first one is here}}
  func.func @stage1(%x: tensor<4xf32> {mt.input = "lr"}) -> tensor<4xf32> attributes {mt.pipeline_stage = 1 : i64} {
    return %x : tensor<4xf32>
  }
  // expected-error @below {{'func.func' op is a second program for pipeline stage 1}}
  func.func @negative_stage1_again(%x: tensor<4xf32> {mt.input = "lr"}) -> tensor<4xf32> attributes {mt.pipeline_stage = 1 : i64} {
    return %x : tensor<4xf32>
  }
}

// -----

// A pipeline transfer needs a tag to pair the send with its receive.

module {
  shard.grid @grid(shape = 2x1x1)
  func.func @negative_untagged_send(%w: tensor<8xf32> {mt.param = "w"}) attributes {mt.pipeline_stage = 0 : i64} {
    // expected-error @below {{'shard.send' op cannot be lowered to the runtime: a pipeline transfer needs one peer stage and an 'mt.transfer_tag' (run mt-pipeline to create transfers)}}
    %s = shard.send %w on @grid grid_axes = [0] destination = [1] : (tensor<8xf32>) -> tensor<8xf32>
    return
  }
}

// -----

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

// An expert exchange sends within a group of its grid axis: its counts'
// rows (a group's ranks) must split the axis (here 2 for an axis of 3).

module {
  shard.grid @grid(shape = 3x1)
  func.func @moe(%rows: tensor<8x4xf32> {mt.param = "rows"}, %offsets: tensor<5xi32> {mt.input = "tokens"}) -> tensor<16x4xf32> {
    // expected-error @+1 {{'mt.expert_dispatch' op exchanges rows among groups of 2 ranks, which do not split grid axis 0's 3}}
    %r, %lo, %c = mt.expert_dispatch %rows, %offsets {grid = @grid, grid_axis = 0 : i64}
        : tensor<8x4xf32>, tensor<5xi32> -> tensor<16x4xf32>, tensor<3xi32>, tensor<2x2xi32>
    return %r : tensor<16x4xf32>
  }
}
