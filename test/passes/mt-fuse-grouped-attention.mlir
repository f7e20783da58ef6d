// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime --split-input-file | FileCheck %s --check-prefix=LOWER
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime=print-memory-plan --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=LOWERPLAN
// RUN: megatron-opt %s --mt-lower-to-runtime=print-memory-plan --split-input-file 2>&1 >/dev/null | FileCheck %s --check-prefix=UNFUSED
// RUN: megatron-opt %s --mt-fuse="grouped-attention=false" --split-input-file | FileCheck %s --check-prefix=OFF

// Grouped-query attention folds its repeats: keys and values of 2 heads
// serve 4 query heads (groups of 2) in the attention itself, and its
// gradient sums each key and value head's group, so neither repeat_kv nor
// repeat_kv_grad remains. The marks, the dropout and its stream carry over.

// CHECK-LABEL: func.func @grouped
// CHECK-SAME:    (%[[Q:[^:]+]]: tensor<1x4x8x4xf32> {{.*}}, %[[K:[^:]+]]: tensor<1x2x8x4xf32> {{.*}}, %[[V:[^:]+]]: tensor<1x2x8x4xf32> {{.*}}, %[[DY:[^:]+]]: tensor<1x4x8x4xf32>
// CHECK-NEXT:    %[[Y:.+]] = mt.attention %[[Q]], %[[K]], %[[V]] {dropout = 1.000000e-01 : f64, mt.layer = 0 : i64, rng_stream = 3 : i64} : tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>
// CHECK-NEXT:    %[[DQ:.+]], %[[DK:.+]], %[[DV:.+]] = mt.attention_grad %[[DY]], %[[Q]], %[[K]], %[[V]] {dropout = 1.000000e-01 : f64, mt.layer = 0 : i64, mt.phase = "backward", rng_stream = 3 : i64} : tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>
// CHECK-NEXT:    return %[[Y]], %[[DQ]], %[[DK]], %[[DV]]
// CHECK-NOT:     repeat_kv
// grouped-attention=false keeps the repeats.
// OFF-LABEL: func.func @grouped
// OFF-COUNT-2: mt.repeat_kv
// OFF:         mt.attention %{{.*}}, %{{.*}}, %{{.*}} {{.*}}: tensor<1x4x8x4xf32>{{$}}
// OFF-COUNT-2: mt.repeat_kv_grad

// No buffer of repeated keys or values is planned: the peak is 3072
// bytes instead of 4608.
// LOWERPLAN-LABEL: memory plan @grouped
// LOWERPLAN:     planned peak: 3072 bytes
// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.kernel "attention" ins({{.*}} : memref<1x4x8x4xf32>, memref<1x2x8x4xf32>, memref<1x2x8x4xf32>)
// LOWER:         mtrt.kernel "attention_grad" ins({{.*}} : memref<1x4x8x4xf32>, memref<1x4x8x4xf32>, memref<1x2x8x4xf32>, memref<1x2x8x4xf32>) outs({{.*}} : memref<1x4x8x4xf32>, memref<1x2x8x4xf32>, memref<1x2x8x4xf32>)
// LOWER-NOT:     repeat_kv
// LOWER:         // -----
// LOWERPLAN:     memory plan
// UNFUSED-LABEL: memory plan @grouped
// UNFUSED:         planned peak: 4608 bytes
func.func @grouped(%q: tensor<1x4x8x4xf32> {mt.param = "q"},
                   %k: tensor<1x2x8x4xf32> {mt.param = "k"},
                   %v: tensor<1x2x8x4xf32> {mt.param = "v"},
                   %dy: tensor<1x4x8x4xf32> {mt.input = "tokens"})
    -> (tensor<1x4x8x4xf32>, tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>) {
  %kr = mt.repeat_kv %k {groups = 2 : i64, mt.layer = 0 : i64} : tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %vr = mt.repeat_kv %v {groups = 2 : i64, mt.layer = 0 : i64} : tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %y = mt.attention %q, %kr, %vr {dropout = 1.0e-01 : f64, rng_stream = 3 : i64, mt.layer = 0 : i64} : tensor<1x4x8x4xf32>
  %dq, %dkr, %dvr = mt.attention_grad %dy, %q, %kr, %vr {dropout = 1.0e-01 : f64, rng_stream = 3 : i64, mt.layer = 0 : i64, mt.phase = "backward"} : tensor<1x4x8x4xf32>
  %dk = mt.repeat_kv_grad %dkr {groups = 2 : i64, mt.layer = 0 : i64, mt.phase = "backward"} : tensor<1x4x8x4xf32> -> tensor<1x2x8x4xf32>
  %dv = mt.repeat_kv_grad %dvr {groups = 2 : i64, mt.layer = 0 : i64, mt.phase = "backward"} : tensor<1x4x8x4xf32> -> tensor<1x2x8x4xf32>
  return %y, %dq, %dk, %dv : tensor<1x4x8x4xf32>, tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// A repeat that something else reads (here the function's result) keeps
// the attention on repeated keys and values.

// CHECK-LABEL: func.func @read_elsewhere
// CHECK:         mt.repeat_kv
// CHECK:         mt.repeat_kv
// CHECK:         mt.attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x8x4xf32>
// CHECK-NOT:     tensor<1x2x8x4xf32>
// CHECK:         return
func.func @read_elsewhere(%q: tensor<1x4x8x4xf32> {mt.param = "q"},
                          %k: tensor<1x2x8x4xf32> {mt.param = "k"},
                          %v: tensor<1x2x8x4xf32> {mt.param = "v"})
    -> (tensor<1x4x8x4xf32>, tensor<1x4x8x4xf32>) {
  %kr = mt.repeat_kv %k {groups = 2 : i64} : tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %vr = mt.repeat_kv %v {groups = 2 : i64} : tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %y = mt.attention %q, %kr, %vr : tensor<1x4x8x4xf32>
  return %y, %kr : tensor<1x4x8x4xf32>, tensor<1x4x8x4xf32>
}

// -----

// A recomputed attention (mt-remat's selective recompute) on the same
// stashed repeats: both forwards and the gradient fold, and the repeats go.

// CHECK-LABEL: func.func @recomputed
// CHECK-NOT:     repeat_kv
// CHECK:         mt.attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>
// CHECK:         mt.attention %{{.*}}, %{{.*}}, %{{.*}} {mt.recomputed} : tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>
// CHECK:         mt.attention_grad {{.*}} : tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>
// CHECK-NOT:     repeat_kv
func.func @recomputed(%q: tensor<1x4x8x4xf32> {mt.param = "q"},
                      %k: tensor<1x2x8x4xf32> {mt.param = "k"},
                      %v: tensor<1x2x8x4xf32> {mt.param = "v"},
                      %dy: tensor<1x4x8x4xf32> {mt.input = "tokens"})
    -> (tensor<1x4x8x4xf32>, tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>) {
  %kr = mt.repeat_kv %k {groups = 2 : i64} : tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %vr = mt.repeat_kv %v {groups = 2 : i64} : tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %y = mt.attention %q, %kr, %vr : tensor<1x4x8x4xf32>
  %r = mt.attention %q, %kr, %vr {mt.recomputed} : tensor<1x4x8x4xf32>
  %dq, %dkr, %dvr = mt.attention_grad %dy, %q, %kr, %vr : tensor<1x4x8x4xf32>
  %dk = mt.repeat_kv_grad %dkr {groups = 2 : i64} : tensor<1x4x8x4xf32> -> tensor<1x2x8x4xf32>
  %dv = mt.repeat_kv_grad %dvr {groups = 2 : i64} : tensor<1x4x8x4xf32> -> tensor<1x2x8x4xf32>
  return %y, %r, %dk : tensor<1x4x8x4xf32>, tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>
}

// -----

// A repeat also read as the query: nothing folds (the repeat stays).

// CHECK-LABEL: func.func @repeat_as_query
// CHECK:         mt.repeat_kv
// CHECK:         mt.attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<1x4x8x4xf32>{{$}}
func.func @repeat_as_query(%k: tensor<1x2x8x4xf32> {mt.param = "k"},
                           %v: tensor<1x2x8x4xf32> {mt.param = "v"})
    -> tensor<1x4x8x4xf32> {
  %kr = mt.repeat_kv %k {groups = 2 : i64} : tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %vr = mt.repeat_kv %v {groups = 2 : i64} : tensor<1x2x8x4xf32> -> tensor<1x4x8x4xf32>
  %y = mt.attention %kr, %kr, %vr : tensor<1x4x8x4xf32>
  return %y : tensor<1x4x8x4xf32>
}
