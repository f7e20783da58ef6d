// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime --split-input-file | FileCheck %s --check-prefix=LOWER
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime=print-memory-plan --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=LOWERPLAN
// RUN: megatron-opt %s --mt-lower-to-runtime=print-memory-plan --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=UNFUSED

// Attention folds its layout ops: the split of the fused QKV projection,
// the attention and the merge of its heads become mt.qkv_attention, and the
// gradient's split, attention_grad and merge mt.qkv_attention_grad, which
// read and write the heads in place. The marks, the dropout and its stream
// carry over; the backward reads the QKV tensor itself (the stash), and the
// forward's output and rows' log-sum-exp (stats [batch, heads, seq], f32).

// CHECK-LABEL: func.func @folded
// CHECK-SAME:    (%[[X:.+]]: tensor<2x4x8xf32> {mt.input = "tokens"}, %[[W:.+]]: tensor<8x24xf32> {mt.param = "w"}, %[[DY:.+]]: tensor<2x4x8xf32> {mt.param = "dy"})
// CHECK-NEXT:    %[[QKV:.+]] = mt.matmul %[[X]], %[[W]]
// CHECK-NEXT:    %[[Y:.+]], %[[LSE:.+]] = mt.qkv_attention %[[QKV]] {dropout = 1.000000e-01 : f64, heads = 2 : i64, mt.layer = 0 : i64, rng_stream = 3 : i64} : tensor<2x4x24xf32> -> tensor<2x4x8xf32>, tensor<2x2x4xf32>
// CHECK-NEXT:    %[[DQKV:.+]] = mt.qkv_attention_grad %[[DY]], %[[QKV]], %[[Y]], %[[LSE]] {dropout = 1.000000e-01 : f64, heads = 2 : i64, mt.layer = 0 : i64, mt.phase = "backward", rng_stream = 3 : i64} : tensor<2x4x8xf32>, tensor<2x4x24xf32>, tensor<2x2x4xf32>
// CHECK-NEXT:    return %[[Y]], %[[DQKV]]
// CHECK-NOT:     split_heads
// CHECK-NOT:     merge_heads

// The kernels read the QKV buffer in place; no head-major buffer is
// planned, and the peak is 3136 bytes instead of 3840 unfolded (q, k, v,
// the attention's heads and their gradients); the stats add 64 bytes.
// LOWERPLAN-LABEL: memory plan @folded
// LOWERPLAN:     activations and workspace (sum): 1856 bytes
// LOWERPLAN:     planned peak: 3136 bytes
// LOWER-LABEL: mtrt.program @stage0
// LOWER:         %[[QKV:.+]] = mtrt.buffer {{.*}} : memref<2x4x24xf32>
// LOWER:         mtrt.kernel "qkv_attention" ins(%[[QKV]] : memref<2x4x24xf32>) outs(%[[OUT:.+]], %[[STATS:.+]] : memref<2x4x8xf32>, memref<2x2x4xf32>) {dropout = 1.000000e-01 : f64, heads = 2 : i64, rng_stream = 3 : i64} {layer = 0 : i64, phase = "forward"}
// LOWER:         mtrt.kernel "qkv_attention_grad" ins(%{{.+}}, %[[QKV]], %[[OUT]], %[[STATS]] : memref<2x4x8xf32>, memref<2x4x24xf32>, memref<2x4x8xf32>, memref<2x2x4xf32>) outs(%{{.+}} : memref<2x4x24xf32>) {dropout = 1.000000e-01 : f64, heads = 2 : i64, rng_stream = 3 : i64} {layer = 0 : i64, phase = "backward"}
// LOWER-NOT:     memref<2x2x4x4xf32>
// LOWER:         // -----
// LOWERPLAN:     memory plan
// UNFUSED-LABEL: memory plan @folded
// UNFUSED:         activations and workspace (sum): 3840 bytes
// UNFUSED:         planned peak: 3840 bytes
func.func @folded(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                  %w: tensor<8x24xf32> {mt.param = "w"},
                  %dy: tensor<2x4x8xf32> {mt.param = "dy"})
    -> (tensor<2x4x8xf32>, tensor<2x4x24xf32>) {
  %qkv = mt.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x24xf32>) -> tensor<2x4x24xf32>
  %q, %k, %v = mt.split_heads %qkv {mt.layer = 0 : i64} : tensor<2x4x24xf32> -> tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %a = mt.attention %q, %k, %v {dropout = 1.0e-01 : f64, rng_stream = 3 : i64, mt.layer = 0 : i64} : tensor<2x2x4x4xf32>
  %y = mt.merge_heads %a {mt.layer = 0 : i64} : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  %g = mt.split_heads %dy {mt.layer = 0 : i64, mt.phase = "backward"} : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %dq, %dk, %dv = mt.attention_grad %g, %q, %k, %v {dropout = 1.0e-01 : f64, rng_stream = 3 : i64, mt.layer = 0 : i64, mt.phase = "backward"} : tensor<2x2x4x4xf32>
  %dqkv = mt.merge_heads %dq, %dk, %dv {mt.layer = 0 : i64, mt.phase = "backward"} : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32> -> tensor<2x4x24xf32>
  return %y, %dqkv : tensor<2x4x8xf32>, tensor<2x4x24xf32>
}

// -----

// The values are read by something else (here returned): the split is
// needed anyway and stays; only the merge folds (mt.merged_attention).

// CHECK-LABEL: func.func @values_read_elsewhere
// CHECK:         mt.split_heads
// CHECK-NEXT:    mt.merged_attention
// CHECK-NOT:     mt.merge_heads
// CHECK-NOT:     qkv_attention
func.func @values_read_elsewhere(%qkv: tensor<2x4x24xf32> {mt.param = "qkv"})
    -> (tensor<2x4x8xf32>, tensor<2x2x4x4xf32>) {
  %q, %k, %v = mt.split_heads %qkv : tensor<2x4x24xf32> -> tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %a = mt.attention %q, %k, %v : tensor<2x2x4x4xf32>
  %y = mt.merge_heads %a : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  return %y, %v : tensor<2x4x8xf32>, tensor<2x2x4x4xf32>
}

// -----

// The attention's heads are read unmerged: nothing folds.

// CHECK-LABEL: func.func @output_read_unmerged
// CHECK:         mt.split_heads
// CHECK-NEXT:    mt.attention
// CHECK-NOT:     qkv_attention
func.func @output_read_unmerged(%qkv: tensor<2x4x24xf32> {mt.param = "qkv"})
    -> (tensor<2x4x8xf32>, tensor<2x2x4x4xf32>) {
  %q, %k, %v = mt.split_heads %qkv : tensor<2x4x24xf32> -> tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %a = mt.attention %q, %k, %v : tensor<2x2x4x4xf32>
  %y = mt.merge_heads %a : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  return %y, %a : tensor<2x4x8xf32>, tensor<2x2x4x4xf32>
}

// -----

// A gradient whose key gradient is read apart from the merge: the backward
// needs q, k and v as tensors of their own, so the split stays; the
// merges of the output and of its gradient's input still fold.

// CHECK-LABEL: func.func @gradient_read_unmerged
// CHECK:         mt.merged_attention
// CHECK:         mt.merged_attention_grad
// CHECK-NOT:     qkv_attention
func.func @gradient_read_unmerged(%qkv: tensor<2x4x24xf32> {mt.param = "qkv"},
                                  %dy: tensor<2x4x8xf32> {mt.param = "dy"})
    -> (tensor<2x4x8xf32>, tensor<2x4x24xf32>, tensor<2x2x4x4xf32>) {
  %q, %k, %v = mt.split_heads %qkv : tensor<2x4x24xf32> -> tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %a = mt.attention %q, %k, %v : tensor<2x2x4x4xf32>
  %y = mt.merge_heads %a : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  %g = mt.split_heads %dy : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %dq, %dk, %dv = mt.attention_grad %g, %q, %k, %v : tensor<2x2x4x4xf32>
  %dqkv = mt.merge_heads %dq, %dk, %dv : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32> -> tensor<2x4x24xf32>
  return %y, %dqkv, %dk : tensor<2x4x8xf32>, tensor<2x4x24xf32>, tensor<2x2x4x4xf32>
}

// -----

// A sliding window folds with the attention (the fused op masks it too),
// but only with a gradient of the same window: the gradient reads the
// forward's log-sum-exp, which another window would make wrong.

// CHECK-LABEL: func.func @window_folds
// CHECK:         mt.qkv_attention %{{.+}} {heads = 2 : i64, window = 3 : i64}
// CHECK:         mt.qkv_attention_grad {{.*}} {heads = 2 : i64, window = 3 : i64}
func.func @window_folds(%qkv: tensor<2x4x24xf32> {mt.param = "qkv"},
                        %dy: tensor<2x4x8xf32> {mt.param = "dy"})
    -> (tensor<2x4x8xf32>, tensor<2x4x24xf32>) {
  %q, %k, %v = mt.split_heads %qkv : tensor<2x4x24xf32> -> tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %a = mt.attention %q, %k, %v {window = 3 : i64} : tensor<2x2x4x4xf32>
  %y = mt.merge_heads %a : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  %g = mt.split_heads %dy : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %dq, %dk, %dv = mt.attention_grad %g, %q, %k, %v {window = 3 : i64} : tensor<2x2x4x4xf32>
  %dqkv = mt.merge_heads %dq, %dk, %dv : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32> -> tensor<2x4x24xf32>
  return %y, %dqkv : tensor<2x4x8xf32>, tensor<2x4x24xf32>
}

// -----

// CHECK-LABEL: func.func @window_differs
// CHECK:         mt.merged_attention
// CHECK:         mt.attention_grad
// CHECK-NOT:     qkv_attention
func.func @window_differs(%qkv: tensor<2x4x24xf32> {mt.param = "qkv"},
                          %dy: tensor<2x4x8xf32> {mt.param = "dy"})
    -> (tensor<2x4x8xf32>, tensor<2x4x24xf32>) {
  %q, %k, %v = mt.split_heads %qkv : tensor<2x4x24xf32> -> tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
  %a = mt.attention %q, %k, %v {window = 3 : i64} : tensor<2x2x4x4xf32>
  %y = mt.merge_heads %a : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  %g = mt.split_heads %dy : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %dq, %dk, %dv = mt.attention_grad %g, %q, %k, %v {window = 2 : i64} : tensor<2x2x4x4xf32>
  %dqkv = mt.merge_heads %dq, %dk, %dv : tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32> -> tensor<2x4x24xf32>
  return %y, %dqkv : tensor<2x4x8xf32>, tensor<2x4x24xf32>
}

// -----

// Queries, keys and values split apart (LLaMA's projections, with the
// rotary embedding between the split and the attention): the split stays,
// the merge folds (mt.merged_attention).

// CHECK-LABEL: func.func @separate_projections
// CHECK-COUNT-3: mt.split_heads
// CHECK:         mt.rope
// CHECK:         mt.merged_attention
// CHECK-NOT:     qkv_attention
func.func @separate_projections(%x: tensor<2x4x8xf32> {mt.param = "x"})
    -> tensor<2x4x8xf32> {
  %q = mt.split_heads %x : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %k = mt.split_heads %x : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %v = mt.split_heads %x : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %qr = mt.rope %q : tensor<2x2x4x4xf32>
  %a = mt.attention %qr, %k, %v : tensor<2x2x4x4xf32>
  %y = mt.merge_heads %a : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

// The merge alone folds: mt.merged_attention writes the merged layout and
// its rows' log-sum-exp, and the gradient reads dOut merged (its split
// gone), the forward's output and the stats.

// CHECK-LABEL: func.func @merged
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<2x2x4x4xf32> {{.*}}, %[[K:[^:]+]]: tensor<2x2x4x4xf32> {{.*}}, %[[V:[^:]+]]: tensor<2x2x4x4xf32> {{.*}}, %[[DY:[^:]+]]: tensor<2x4x8xf32>
// CHECK-NEXT:    %[[Y:.+]], %[[LSE:.+]] = mt.merged_attention %[[Q]], %[[K]], %[[V]] {mt.layer = 1 : i64, window = 3 : i64} : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>, tensor<2x2x4xf32>
// CHECK-NEXT:    %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = mt.merged_attention_grad %[[DY]], %[[Q]], %[[K]], %[[V]], %[[Y]], %[[LSE]] {mt.layer = 1 : i64, window = 3 : i64} : tensor<2x4x8xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4xf32>
// CHECK-NEXT:    return %[[Y]], %[[DQ]], %[[DK]], %[[DV]]
// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.kernel "merged_attention" ins({{.*}} : memref<2x2x4x4xf32>, memref<2x2x4x4xf32>, memref<2x2x4x4xf32>) outs(%[[OUT:.+]], %[[STATS:.+]] : memref<2x4x8xf32>, memref<2x2x4xf32>)
// LOWER:         mtrt.kernel "merged_attention_grad" ins({{.*}}, %[[OUT]], %[[STATS]] : memref<2x4x8xf32>, memref<2x2x4x4xf32>, memref<2x2x4x4xf32>, memref<2x2x4x4xf32>, memref<2x4x8xf32>, memref<2x2x4xf32>)
func.func @merged(%q: tensor<2x2x4x4xf32> {mt.param = "q"},
                  %k: tensor<2x2x4x4xf32> {mt.param = "k"},
                  %v: tensor<2x2x4x4xf32> {mt.param = "v"},
                  %dy: tensor<2x4x8xf32> {mt.input = "tokens"})
    -> (tensor<2x4x8xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>) {
  %a = mt.attention %q, %k, %v {window = 3 : i64, mt.layer = 1 : i64} : tensor<2x2x4x4xf32>
  %y = mt.merge_heads %a : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  %g = mt.split_heads %dy : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %dq, %dk, %dv = mt.attention_grad %g, %q, %k, %v {window = 3 : i64, mt.layer = 1 : i64} : tensor<2x2x4x4xf32>
  return %y, %dq, %dk, %dv : tensor<2x4x8xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>, tensor<2x2x4x4xf32>
}

// -----

// A recomputed attention (mt-remat) between the forward and the gradient:
// the gradient reads the recomputed output and stats, so the forward's
// output need not live until the backward.

// CHECK-LABEL: func.func @recomputed
// CHECK:         %[[Y:.+]], %{{.+}} = mt.merged_attention
// CHECK:         %[[R:.+]], %[[RLSE:.+]] = mt.merged_attention {{.*}}mt.recomputed
// CHECK:         mt.merged_attention_grad %{{.+}}, %{{.+}}, %{{.+}}, %{{.+}}, %[[R]], %[[RLSE]]
func.func @recomputed(%q: tensor<2x2x4x4xf32> {mt.param = "q"},
                      %k: tensor<2x2x4x4xf32> {mt.param = "k"},
                      %v: tensor<2x2x4x4xf32> {mt.param = "v"},
                      %dy: tensor<2x4x8xf32> {mt.input = "tokens"})
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4x4xf32>) {
  %a = mt.attention %q, %k, %v : tensor<2x2x4x4xf32>
  %y = mt.merge_heads %a : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  %r = mt.attention %q, %k, %v {mt.recomputed} : tensor<2x2x4x4xf32>
  %ry = mt.merge_heads %r : tensor<2x2x4x4xf32> -> tensor<2x4x8xf32>
  %g = mt.split_heads %dy : tensor<2x4x8xf32> -> tensor<2x2x4x4xf32>
  %dq, %dk, %dv = mt.attention_grad %g, %q, %k, %v : tensor<2x2x4x4xf32>
  return %y, %ry, %dq : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x2x4x4xf32>
}
