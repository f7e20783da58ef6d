// The mt ops' ShardingInterface models under upstream sharding-propagation
// and shard-partition alone (no mt-parallelize): weights pinned as Megatron
// does, everything else propagated, collectives inserted by the partition.
// RUN: megatron-opt %s --split-input-file --verify-diagnostics --pass-pipeline='builtin.module(func.func(mt-check-shardings,sharding-propagation,shard-partition))' | FileCheck %s

shard.grid @grid(shape = 2)

// Column-parallel then row-parallel MLP: one all-reduce, after the second
// matmul, whose contraction is split.
// CHECK-LABEL: func.func @mlp
// CHECK-SAME: %{{.*}}: tensor<2x4x8xf32>, %{{.*}}: tensor<8x16xf32>, %{{.*}}: tensor<16xf32>, %{{.*}}: tensor<16x8xf32>
// CHECK: mt.matmul {{.*}} -> tensor<2x4x16xf32>
// CHECK: mt.bias_add {{.*}} : tensor<2x4x16xf32>, tensor<16xf32>
// CHECK: mt.gelu {{.*}} : tensor<2x4x16xf32>
// CHECK: %[[Y:.+]] = mt.matmul {{.*}} : (tensor<2x4x16xf32>, tensor<16x8xf32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[SUM:.+]] = shard.all_reduce %[[Y]] on @grid grid_axes = [0] : tensor<2x4x8xf32> -> tensor<2x4x8xf32>
// CHECK-NEXT: return %[[SUM]]
// CHECK-NOT: shard.{{all|reduce}}
func.func @mlp(%x: tensor<2x4x8xf32>, %w1: tensor<8x32xf32>, %b1: tensor<32xf32>, %w2: tensor<32x8xf32>) -> tensor<2x4x8xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<2x4x8xf32>
  %w1s = shard.shard %w1 to %cols : tensor<8x32xf32>
  %b1s = shard.shard %b1 to %rows : tensor<32xf32>
  %w2s = shard.shard %w2 to %rows : tensor<32x8xf32>
  %h = mt.matmul %xs, %w1s : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %hb = mt.bias_add %h, %b1s : tensor<2x4x32xf32>, tensor<32xf32>
  %g = mt.gelu %hb : tensor<2x4x32xf32>
  %y = mt.matmul %g, %w2s : (tensor<2x4x32xf32>, tensor<32x8xf32>) -> tensor<2x4x8xf32>
  %ys = shard.shard %y to %r annotate_for_users : tensor<2x4x8xf32>
  return %ys : tensor<2x4x8xf32>
}

// -----

shard.grid @grid(shape = 2)

// Attention split by heads: the fused QKV projection's columns hold each
// rank's heads of q, k and v; attention draws its heads' dropout masks.
// CHECK-LABEL: func.func @attention
// CHECK: mt.split_heads {{.*}} : tensor<2x4x12xf32> -> tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>, tensor<2x1x4x4xf32>
// CHECK: mt.attention {{.*}}mt.rng_head_axis = 0 : i64{{.*}} : tensor<2x1x4x4xf32>
// CHECK: mt.merge_heads {{.*}} : tensor<2x1x4x4xf32> -> tensor<2x4x4xf32>
// CHECK: %[[O:.+]] = mt.matmul {{.*}} -> tensor<2x4x8xf32>
// CHECK-NEXT: shard.all_reduce %[[O]] on @grid grid_axes = [0]
func.func @attention(%x: tensor<2x4x8xf32>, %wqkv: tensor<8x24xf32>, %wo: tensor<8x8xf32>) -> tensor<2x4x8xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %r : tensor<2x4x8xf32>
  %wqkvs = shard.shard %wqkv to %cols : tensor<8x24xf32>
  %wos = shard.shard %wo to %rows : tensor<8x8xf32>
  %qkv = mt.matmul %xs, %wqkvs : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %q, %k, %v = mt.split_heads %qkv : tensor<2x4x24xf32> -> tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %a = mt.attention %q, %k, %v {dropout = 1.0e-01 : f64} : tensor<2x2x4x4xf32>
  %m = mt.merge_heads %a : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  %o = mt.matmul %m, %wos : (tensor<2x4x8xf32>, tensor<8x8xf32>) -> tensor<2x4x8xf32>
  %os = shard.shard %o to %r annotate_for_users : tensor<2x4x8xf32>
  return %os : tensor<2x4x8xf32>
}

// -----

shard.grid @grid(shape = 2)

// Vocab-parallel embedding and cross-entropy: each rank holds half the
// table; the lookup sums over ranks (all-reduce); the loss reduces inside
// its kernel, so no rank holds full logits.
// CHECK-LABEL: func.func @vocab
// CHECK-SAME: %{{.*}}: tensor<32x8xf32>
// CHECK: %[[E:.+]] = mt.embedding {{.*}}mt.tp_vocab_axis = 0 : i64{{.*}} : (tensor<32x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
// CHECK-NEXT: %[[X:.+]] = shard.all_reduce %[[E]] on @grid grid_axes = [0]
// CHECK: mt.matmul %[[X]], %{{.*}} transpose_b : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
// CHECK-NEXT: mt.cross_entropy {{.*}}mt.tp_vocab_axis = 0 : i64{{.*}} : (tensor<2x4x32xf32>, tensor<2x4xi32>) -> tensor<f32>
// CHECK-NOT: shard.all_gather
func.func @vocab(%wte: tensor<64x8xf32>, %ids: tensor<2x4xi32>, %labels: tensor<2x4xi32>) -> tensor<f32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %wtes = shard.shard %wte to %rows : tensor<64x8xf32>
  %wte_embed = shard.shard %wtes to %rows annotate_for_users : tensor<64x8xf32>
  %wte_head = shard.shard %wtes to %rows annotate_for_users : tensor<64x8xf32>
  %idss = shard.shard %ids to %r : tensor<2x4xi32>
  %labelss = shard.shard %labels to %r : tensor<2x4xi32>
  %x = mt.embedding %wte_embed, %idss : (tensor<64x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %logits = mt.matmul %x, %wte_head transpose_b : (tensor<2x4x8xf32>, tensor<64x8xf32>) -> tensor<2x4x64xf32>
  %loss = mt.cross_entropy %logits, %labelss : (tensor<2x4x64xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

shard.grid @grid(shape = 2)

// Sequence split: layer norm and dropout work on the rank's rows (dropout
// offsets its mask by the rank's rows); the layer norm's weight gradient
// sums over the rows of every rank.
// CHECK-LABEL: func.func @rows
// CHECK: mt.layer_norm {{.*}} : tensor<2x2x8xf32>, tensor<8xf32>
// CHECK: mt.dropout {{.*}}mt.rng_seq_axis = 0 : i64{{.*}} : tensor<2x2x8xf32>
// CHECK: %{{.*}}, %[[GW:.+]], %[[GB:.+]] = mt.layer_norm_grad {{.*}} : tensor<2x2x8xf32>, tensor<8xf32>
// CHECK-DAG: shard.all_reduce %[[GW]] on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
// CHECK-DAG: shard.all_reduce %[[GB]] on @grid grid_axes = [0] : tensor<8xf32> -> tensor<8xf32>
func.func @rows(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %b: tensor<8xf32>, %dy: tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>, tensor<8xf32>) {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %seq = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %seq : tensor<2x4x8xf32>
  %dys = shard.shard %dy to %seq : tensor<2x4x8xf32>
  %ws = shard.shard %w to %r : tensor<8xf32>
  %bs = shard.shard %b to %r : tensor<8xf32>
  %y = mt.layer_norm %xs, %ws, %bs : tensor<2x4x8xf32>, tensor<8xf32>
  %d = mt.dropout %y {probability = 1.0e-01 : f64} : tensor<2x4x8xf32>
  %dx, %dw, %db = mt.layer_norm_grad %dys, %xs, %ws : tensor<2x4x8xf32>, tensor<8xf32>
  %ds = shard.shard %d to %seq annotate_for_users : tensor<2x4x8xf32>
  %dws = shard.shard %dw to %r annotate_for_users : tensor<8xf32>
  return %ds, %dws : tensor<2x4x8xf32>, tensor<8xf32>
}

// -----

shard.grid @grid(shape = 2)

// A dropout split along its hidden dimension cannot draw the single-device
// mask: the partition says so.
func.func @dropout_hidden(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  %hidden = shard.sharding @grid split_axes = [[], [], [0]] : !shard.sharding
  %xs = shard.shard %x to %hidden : tensor<2x4x8xf32>
  // expected-error @+1 {{'mt.dropout' op can only be split along the batch or the sequence}}
  %d = mt.dropout %xs {probability = 1.0e-01 : f64} : tensor<2x4x8xf32>
  %ds = shard.shard %d to %hidden annotate_for_users : tensor<2x4x8xf32>
  return %ds : tensor<2x4x8xf32>
}

// -----

shard.grid @grid(shape = 2x2)

// The kernels take one vocabulary axis.
func.func @vocab_two_axes(%wte: tensor<64x8xf32>, %ids: tensor<2x4xi32>) -> tensor<2x4x8xf32> {
  %r = shard.sharding @grid split_axes = [[]] : !shard.sharding
  %rows = shard.sharding @grid split_axes = [[0, 1]] : !shard.sharding
  %wtes = shard.shard %wte to %rows : tensor<64x8xf32>
  %idss = shard.shard %ids to %r : tensor<2x4xi32>
  // expected-error @+1 {{'mt.embedding' op cannot split its vocabulary over more than one grid axis}}
  %x = mt.embedding %wtes, %idss : (tensor<64x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %xs = shard.shard %x to %r annotate_for_users : tensor<2x4x8xf32>
  return %xs : tensor<2x4x8xf32>
}

// -----

shard.grid @grid(shape = 2)

// Only a [batch, sequence, hidden] dropout knows its second dimension is the
// sequence.
func.func @dropout_rank2(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %cols = shard.sharding @grid split_axes = [[], [0]] : !shard.sharding
  %xs = shard.shard %x to %cols : tensor<4x8xf32>
  // expected-error @+1 {{'mt.dropout' op splits its sequence but is not [batch, sequence, hidden]}}
  %d = mt.dropout %xs {probability = 1.0e-01 : f64} : tensor<4x8xf32>
  %ds = shard.shard %d to %cols annotate_for_users : tensor<4x8xf32>
  return %ds : tensor<4x8xf32>
}

// -----

shard.grid @grid(shape = 2)

// An accumulating weight gradient whose tokens (its sum) arrive split: each
// rank would add the accumulator to its partial sum before the all-reduce,
// so the partition refuses.
func.func @accumulate_split_sum(%x: tensor<8x4xf32>, %dy: tensor<8x6xf32>, %acc: tensor<4x6xf32>) -> tensor<4x6xf32> {
  %tokens = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %xs = shard.shard %x to %tokens : tensor<8x4xf32>
  %dys = shard.shard %dy to %tokens : tensor<8x6xf32>
  // expected-error @+1 {{'mt.matmul' op cannot split the sum of an accumulating matmul: each rank would add the accumulator to its partial sum}}
  %w = mt.matmul %xs, %dys transpose_a accumulate(%acc) : (tensor<8x4xf32>, tensor<8x6xf32>, tensor<4x6xf32>) -> tensor<4x6xf32>
  return %w : tensor<4x6xf32>
}

// -----

shard.grid @grid(shape = 2)

// A table gradient whose output gradient arrives split along the batch (a
// loop the model never splits) and whose ids are not annotated: the op runs
// unsplit, its output gradient all-gathered. (Left unannotated, the op
// crashed upstream shard-partition.)
// CHECK-LABEL: func.func @embedding_grad_split_tokens
// CHECK-SAME:    (%[[DY:.+]]: tensor<2x8x16xf32>, %[[IDS:.+]]: tensor<4x8xi32>)
// CHECK:         %[[ALL:.+]] = shard.all_gather %[[DY]] on @grid grid_axes = [0] gather_axis = 0 : tensor<2x8x16xf32> -> tensor<4x8x16xf32>
// CHECK:         mt.embedding_grad {{.*}}, %[[IDS]] : (tensor<4x8x16xf32>, tensor<4x8xi32>) -> tensor<64x16xf32>
func.func @embedding_grad_split_tokens(%dy: tensor<4x8x16xf32>, %ids: tensor<4x8xi32>) -> tensor<64x16xf32> {
  %batch = shard.sharding @grid split_axes = [[0]] : !shard.sharding
  %dys = shard.shard %dy to %batch : tensor<4x8x16xf32>
  %g = mt.embedding_grad %dys, %ids : (tensor<4x8x16xf32>, tensor<4x8xi32>) -> tensor<64x16xf32>
  return %g : tensor<64x16xf32>
}
