// RUN: megatron-opt %s --mt-lower-to-runtime --split-input-file --verify-diagnostics | FileCheck %s
// RUN: megatron-opt %s --mt-lower-to-runtime=print-memory-plan=true --split-input-file --verify-diagnostics 2>&1 >/dev/null | FileCheck %s --check-prefix=PLAN
// RUN: megatron-opt %s --mt-lower-to-runtime=alignment=16 --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=ALIGN16

// mt-lower-to-runtime turns each function into an mtrt.program: one buffer
// per tensor value at a static arena offset, one kernel per op.
//
// Offsets below are computed by hand from the planner's rules: arguments
// are persistent and placed first, in argument order, each starting at a
// multiple of the alignment (64 by default); every other value lives from
// the op that defines it to its last use, both inclusive (returned values to
// the end), and is placed largest first (ties: earlier first) at the lowest
// aligned offset not used by a value alive at the same time. The arena ends
// at the last byte of the highest buffer.

//===----------------------------------------------------------------------===//
// Persistent buffers
//===----------------------------------------------------------------------===//

// Parameters, optimizer state and inputs are placed in argument order, each
// aligned: ids 24 B at 0, w/m/v 64 B at 64/128/192, lr 4 B at 256, b 12 B at
// 320; persistent_bytes = 384. The only transient (64 B) follows at 384, so
// the arena is 448 bytes.

// CHECK-LABEL: mtrt.program @stage0 attributes {arena_bytes = 448 : i64, {{(flops_per_token = [0-9]+ : i64, )?}}persistent_bytes = 384 : i64, stage = 0 : i64}
// CHECK-NEXT:    mtrt.buffer {kind = "input", name = "tokens", offset = 0 : i64} : memref<2x3xi32>
// CHECK-NEXT:    %[[W:.+]] = mtrt.buffer {kind = "param", name = "w", offset = 64 : i64} : memref<4x4xf32>
// CHECK-NEXT:    mtrt.buffer {kind = "exp_avg", name = "w", offset = 128 : i64} : memref<4x4xf32>
// CHECK-NEXT:    mtrt.buffer {kind = "exp_avg_sq", name = "w", offset = 192 : i64} : memref<4x4xf32>
// CHECK-NEXT:    mtrt.buffer {kind = "input", name = "lr", offset = 256 : i64} : memref<f32>
// CHECK-NEXT:    mtrt.buffer {kind = "param", name = "b", offset = 320 : i64} : memref<3xf32>
// CHECK-NEXT:    %[[Y:.+]] = mtrt.buffer {kind = "activation", offset = 384 : i64} : memref<4x4xf32>
// CHECK-NEXT:    mtrt.kernel "gelu" ins(%[[W]] : memref<4x4xf32>) outs(%[[Y]] : memref<4x4xf32>) {}
// CHECK-NEXT:  }
// CHECK-NOT:   func.func

// With alignment=16: ids at 0, w/m/v at 32/96/160, lr at 224, b at 240;
// persistent_bytes = 256, the transient at 256, arena 320.

// ALIGN16-LABEL: mtrt.program @stage0 attributes {arena_bytes = 320 : i64, {{(flops_per_token = [0-9]+ : i64, )?}}persistent_bytes = 256 : i64, stage = 0 : i64}
// ALIGN16-NEXT:    mtrt.buffer {kind = "input", name = "tokens", offset = 0 : i64}
// ALIGN16-NEXT:    mtrt.buffer {kind = "param", name = "w", offset = 32 : i64}
// ALIGN16-NEXT:    mtrt.buffer {kind = "exp_avg", name = "w", offset = 96 : i64}
// ALIGN16-NEXT:    mtrt.buffer {kind = "exp_avg_sq", name = "w", offset = 160 : i64}
// ALIGN16-NEXT:    mtrt.buffer {kind = "input", name = "lr", offset = 224 : i64}
// ALIGN16-NEXT:    mtrt.buffer {kind = "param", name = "b", offset = 240 : i64}
// ALIGN16-NEXT:    mtrt.buffer {kind = "activation", offset = 256 : i64}
func.func @persistent_layout(%ids: tensor<2x3xi32> {mt.input = "tokens"},
                             %w: tensor<4x4xf32> {mt.param = "w"},
                             %m: tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg"},
                             %v: tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg_sq"},
                             %lr: tensor<f32> {mt.input = "lr"},
                             %b: tensor<3xf32> {mt.param = "b"}) -> tensor<4x4xf32> {
  // A discardable attribute of another dialect describes the op, not the
  // kernel: it is no kernel parameter (a string one was carried into the
  // kernel, which --export-artifact then refused; the CHECK's `{}`).
  %y = mt.gelu %w {user.tag = "hello", user.n = 3 : i64} : tensor<4x4xf32>
  return %y : tensor<4x4xf32>
}

// -----

// mt.adamw updates in place: its three results are alias buffers at the
// offsets of the parameter and its two moments. The gradient it reads is a
// "gradient" buffer. Persistent: p/m/v at 0/64/128, seven scalars at 192 to
// 576, persistent_bytes = 640. Transients: g (64 B, steps 0-3) at 640, norm
// (4 B, steps 1-4, returned) at 704, scale (4 B, steps 2-3) at 768, alive
// with both; the arena ends at 772.

// CHECK-LABEL: mtrt.program @stage0 attributes {arena_bytes = 772 : i64, {{(flops_per_token = [0-9]+ : i64, )?}}persistent_bytes = 640 : i64, stage = 0 : i64}
// CHECK-NEXT:    %[[P:.+]] = mtrt.buffer {kind = "param", name = "w", offset = 0 : i64} : memref<4x4xf32>
// CHECK-NEXT:    %[[M:.+]] = mtrt.buffer {kind = "exp_avg", name = "w", offset = 64 : i64} : memref<4x4xf32>
// CHECK-NEXT:    %[[V:.+]] = mtrt.buffer {kind = "exp_avg_sq", name = "w", offset = 128 : i64} : memref<4x4xf32>
// CHECK-NEXT:    %[[STEP:.+]] = mtrt.buffer {kind = "input", name = "step", offset = 192 : i64} : memref<f32>
// CHECK-NEXT:    %[[LR:.+]] = mtrt.buffer {kind = "input", name = "lr", offset = 256 : i64} : memref<f32>
// CHECK-NEXT:    %[[BETA1:.+]] = mtrt.buffer {kind = "input", name = "adam_beta1", offset = 320 : i64} : memref<f32>
// CHECK-NEXT:    %[[BETA2:.+]] = mtrt.buffer {kind = "input", name = "adam_beta2", offset = 384 : i64} : memref<f32>
// CHECK-NEXT:    %[[EPS:.+]] = mtrt.buffer {kind = "input", name = "adam_eps", offset = 448 : i64} : memref<f32>
// CHECK-NEXT:    %[[WD:.+]] = mtrt.buffer {kind = "input", name = "weight_decay", offset = 512 : i64} : memref<f32>
// CHECK-NEXT:    %[[CLIP:.+]] = mtrt.buffer {kind = "input", name = "clip_grad", offset = 576 : i64} : memref<f32>
// CHECK-NEXT:    %[[G:.+]] = mtrt.buffer {kind = "gradient", offset = 640 : i64} : memref<4x4xf32>
// CHECK-NEXT:    mtrt.kernel "gelu" ins(%[[P]] : memref<4x4xf32>) outs(%[[G]] : memref<4x4xf32>) {}
// CHECK-NEXT:    %[[NORM:.+]] = mtrt.buffer {kind = "activation", offset = 704 : i64} : memref<f32>
// CHECK-NEXT:    mtrt.kernel "global_norm" ins(%[[G]] : memref<4x4xf32>) outs(%[[NORM]] : memref<f32>) {}
// CHECK-NEXT:    %[[SCALE:.+]] = mtrt.buffer {kind = "activation", offset = 768 : i64} : memref<f32>
// CHECK-NEXT:    mtrt.kernel "clip_scale" ins(%[[NORM]], %[[CLIP]] : memref<f32>, memref<f32>) outs(%[[SCALE]] : memref<f32>) {}
// CHECK-NEXT:    %[[NEW_P:.+]] = mtrt.buffer {alias, kind = "param", name = "w", offset = 0 : i64} : memref<4x4xf32>
// CHECK-NEXT:    %[[NEW_M:.+]] = mtrt.buffer {alias, kind = "exp_avg", name = "w", offset = 64 : i64} : memref<4x4xf32>
// CHECK-NEXT:    %[[NEW_V:.+]] = mtrt.buffer {alias, kind = "exp_avg_sq", name = "w", offset = 128 : i64} : memref<4x4xf32>
// CHECK-NEXT:    mtrt.kernel "adamw" ins(%[[P]], %[[G]], %[[M]], %[[V]], %[[STEP]], %[[LR]], %[[BETA1]], %[[BETA2]], %[[EPS]], %[[WD]], %[[SCALE]] :
// CHECK-SAME:        outs(%[[NEW_P]], %[[NEW_M]], %[[NEW_V]] : memref<4x4xf32>, memref<4x4xf32>, memref<4x4xf32>) {decay}
// CHECK-NEXT:    mtrt.output "grad_norm", %[[NORM]] : memref<f32>
// CHECK-NEXT:  }

// The memory plan of the same program: parameters 64 B, optimizer state
// 2 x 64 B, inputs 7 x 4 B, gradients 64 B (g), activations 4 + 4 B (norm,
// scale); transient peak 772 - 640 = 132 B.

// PLAN-LABEL: memory plan @adamw_in_place
// PLAN-NEXT:    parameters: 64 bytes
// PLAN-NEXT:    optimizer state: 128 bytes
// PLAN-NEXT:    inputs: 28 bytes
// PLAN-NEXT:    persistent (aligned): 640 bytes
// PLAN-NEXT:    gradients (sum): 64 bytes
// PLAN-NEXT:    activations and workspace (sum): 8 bytes
// PLAN-NEXT:    transient peak: 132 bytes
// PLAN-NEXT:    planned peak: 772 bytes
func.func @adamw_in_place(%p: tensor<4x4xf32> {mt.param = "w"},
                          %m: tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg"},
                          %v: tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg_sq"},
                          %step: tensor<f32> {mt.input = "step"},
                          %lr: tensor<f32> {mt.input = "lr"},
                          %beta1: tensor<f32> {mt.input = "adam_beta1"},
                          %beta2: tensor<f32> {mt.input = "adam_beta2"},
                          %eps: tensor<f32> {mt.input = "adam_eps"},
                          %wd: tensor<f32> {mt.input = "weight_decay"},
                          %clip: tensor<f32> {mt.input = "clip_grad"})
    -> (tensor<4x4xf32> {mt.param = "w"},
        tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg"},
        tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg_sq"},
        tensor<f32> {mt.output = "grad_norm"}) {
  %g = mt.gelu %p : tensor<4x4xf32>
  %norm = mt.global_norm %g : tensor<4x4xf32>
  %scale = mt.clip_scale %norm, %clip : tensor<f32>
  %p2, %m2, %v2 = mt.adamw %p, %g, %m, %v, %step, %lr, %beta1, %beta2, %eps, %wd, %scale decay : tensor<4x4xf32>
  return %p2, %m2, %v2, %norm : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// Views
//===----------------------------------------------------------------------===//

// tensor.collapse_shape launches no kernel: its result is an alias buffer at
// the source's offset, and its uses keep the source alive. p and w (256 B
// each) fill [0, 512); x (steps 0-2: the matmul reads it through the view)
// is at 512, so y (steps 2-3) cannot reuse it and goes to 768.

// CHECK-LABEL: mtrt.program @stage0 attributes {arena_bytes = 1024 : i64, {{(flops_per_token = [0-9]+ : i64, )?}}persistent_bytes = 512 : i64, stage = 0 : i64}
// CHECK:         %[[X:.+]] = mtrt.buffer {kind = "activation", offset = 512 : i64} : memref<2x4x8xf32>
// CHECK-NEXT:    mtrt.kernel "gelu" ins(%{{.+}} : memref<2x4x8xf32>) outs(%[[X]] : memref<2x4x8xf32>) {}
// CHECK-NEXT:    %[[VIEW:.+]] = mtrt.buffer {alias, kind = "activation", offset = 512 : i64} : memref<8x8xf32>
// CHECK-NEXT:    %[[Y:.+]] = mtrt.buffer {kind = "activation", offset = 768 : i64} : memref<8x8xf32>
// CHECK-NEXT:    mtrt.kernel "matmul" ins(%[[VIEW]], %{{.+}} : memref<8x8xf32>, memref<8x8xf32>) outs(%[[Y]] : memref<8x8xf32>) {}
// CHECK-NEXT:  }
func.func @collapse_view(%p: tensor<2x4x8xf32> {mt.param = "p"},
                         %w: tensor<8x8xf32> {mt.param = "w"}) -> tensor<8x8xf32> {
  %x = mt.gelu %p : tensor<2x4x8xf32>
  %c = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xf32> into tensor<8x8xf32>
  %y = mt.matmul %c, %w : (tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}

// -----

// tensor.expand_shape of a parameter is an alias of the parameter buffer,
// with its kind and name.

// CHECK-LABEL: mtrt.program @stage0
// CHECK-NEXT:    %[[W:.+]] = mtrt.buffer {kind = "param", name = "w", offset = 0 : i64} : memref<8x8xf32>
// CHECK-NEXT:    %[[VIEW:.+]] = mtrt.buffer {alias, kind = "param", name = "w", offset = 0 : i64} : memref<2x4x8xf32>
// CHECK-NEXT:    %[[Y:.+]] = mtrt.buffer {kind = "activation", offset = 256 : i64} : memref<2x4x8xf32>
// CHECK-NEXT:    mtrt.kernel "gelu" ins(%[[VIEW]] : memref<2x4x8xf32>) outs(%[[Y]] : memref<2x4x8xf32>) {}
// CHECK-NOT:     mtrt.kernel
func.func @expand_view(%w: tensor<8x8xf32> {mt.param = "w"}) -> tensor<2x4x8xf32> {
  %e = tensor.expand_shape %w [[0, 1], [2]] output_shape [2, 4, 8] : tensor<8x8xf32> into tensor<2x4x8xf32>
  %y = mt.gelu %e : tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Transient placement
//===----------------------------------------------------------------------===//

// A value whose lifetime has ended frees its bytes: in a chain a -> b -> c,
// a (steps 0-1) is at 256, b (steps 1-2) at 512, and c (steps 2-3) reuses
// a's offset.

// CHECK-LABEL: mtrt.program @stage0 attributes {arena_bytes = 768 : i64, {{(flops_per_token = [0-9]+ : i64, )?}}persistent_bytes = 256 : i64, stage = 0 : i64}
// CHECK-NEXT:    %[[P:.+]] = mtrt.buffer {kind = "param", name = "p", offset = 0 : i64}
// CHECK-NEXT:    %[[A:.+]] = mtrt.buffer {kind = "activation", offset = 256 : i64}
// CHECK-NEXT:    mtrt.kernel "gelu" ins(%[[P]] : memref<4x16xf32>) outs(%[[A]] : memref<4x16xf32>)
// CHECK-NEXT:    %[[B:.+]] = mtrt.buffer {kind = "activation", offset = 512 : i64}
// CHECK-NEXT:    mtrt.kernel "gelu" ins(%[[A]] : memref<4x16xf32>) outs(%[[B]] : memref<4x16xf32>)
// CHECK-NEXT:    %[[C:.+]] = mtrt.buffer {kind = "activation", offset = 256 : i64}
// CHECK-NEXT:    mtrt.kernel "gelu" ins(%[[B]] : memref<4x16xf32>) outs(%[[C]] : memref<4x16xf32>)
func.func @reuse(%p: tensor<4x16xf32> {mt.param = "p"}) -> tensor<4x16xf32> {
  %a = mt.gelu %p : tensor<4x16xf32>
  %b = mt.gelu %a : tensor<4x16xf32>
  %c = mt.gelu %b : tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// -----

// Values alive at the same time never share bytes: a (steps 0-2) and b
// (steps 1-2) are both read by the add at step 2, which writes c; all three
// get their own range.

// CHECK-LABEL: mtrt.program @stage0 attributes {arena_bytes = 1024 : i64, {{(flops_per_token = [0-9]+ : i64, )?}}persistent_bytes = 256 : i64, stage = 0 : i64}
// CHECK:         %[[A:.+]] = mtrt.buffer {kind = "activation", offset = 256 : i64}
// CHECK:         %[[B:.+]] = mtrt.buffer {kind = "activation", offset = 512 : i64}
// CHECK:         %[[C:.+]] = mtrt.buffer {kind = "activation", offset = 768 : i64}
// CHECK-NEXT:    mtrt.kernel "add" ins(%[[A]], %[[B]] : memref<4x16xf32>, memref<4x16xf32>) outs(%[[C]] : memref<4x16xf32>)
func.func @no_overlap(%p: tensor<4x16xf32> {mt.param = "p"}) -> tensor<4x16xf32> {
  %a = mt.gelu %p : tensor<4x16xf32>
  %b = mt.gelu %p : tensor<4x16xf32>
  %c = mt.add %a, %b : tensor<4x16xf32>
  return %c : tensor<4x16xf32>
}

// -----

// The largest buffer is placed first: the 512 B matmul result (defined
// later) gets the lowest transient offset, 2304, and the 256 B gelu result
// it is alive with goes above it, to 2816.

// CHECK-LABEL: mtrt.program @stage0 attributes {arena_bytes = 3072 : i64, {{(flops_per_token = [0-9]+ : i64, )?}}persistent_bytes = 2304 : i64, stage = 0 : i64}
// CHECK:         %[[A:.+]] = mtrt.buffer {kind = "activation", offset = 2816 : i64} : memref<4x16xf32>
// CHECK:         %[[BIG:.+]] = mtrt.buffer {kind = "activation", offset = 2304 : i64} : memref<4x32xf32>
// CHECK-NEXT:    mtrt.kernel "matmul" ins(%[[A]], %{{.+}} : memref<4x16xf32>, memref<16x32xf32>) outs(%[[BIG]] : memref<4x32xf32>)
func.func @largest_first(%p: tensor<4x16xf32> {mt.param = "p"},
                         %w: tensor<16x32xf32> {mt.param = "w"}) -> tensor<4x32xf32> {
  %a = mt.gelu %p : tensor<4x16xf32>
  %big = mt.matmul %a, %w : (tensor<4x16xf32>, tensor<16x32xf32>) -> tensor<4x32xf32>
  return %big : tensor<4x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Constants, kernels, outputs
//===----------------------------------------------------------------------===//

// A splat constant becomes a "constant" buffer filled by mtrt.fill, not a
// kernel.

// CHECK-LABEL: mtrt.program @stage0
// CHECK-NEXT:    %[[X:.+]] = mtrt.buffer {kind = "param", name = "x", offset = 0 : i64} : memref<4xf32>
// CHECK-NEXT:    %[[C:.+]] = mtrt.buffer {kind = "constant", offset = 64 : i64} : memref<4xf32>
// CHECK-NEXT:    mtrt.fill %[[C]], 2.500000e+00 : memref<4xf32>
// CHECK-NEXT:    %[[Y:.+]] = mtrt.buffer {kind = "activation", offset = 128 : i64} : memref<4xf32>
// CHECK-NEXT:    mtrt.kernel "add" ins(%[[X]], %[[C]] : memref<4xf32>, memref<4xf32>) outs(%[[Y]] : memref<4xf32>) {}
// CHECK-NEXT:  }
func.func @splat_constant(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<4xf32> {
  %c = arith.constant dense<2.5> : tensor<4xf32>
  %y = mt.add %x, %c : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A kernel is named by its mt op without the dialect prefix and carries the
// op's inherent attributes as its params dictionary; mt.layer becomes its
// typed layer.

// CHECK-LABEL: mtrt.program @stage0
// CHECK:         mtrt.kernel "layer_norm" ins(%{{.+}}, %{{.+}}, %{{.+}} : memref<2x4x8xf32>, memref<8xf32>, memref<8xf32>) outs(%{{.+}} : memref<2x4x8xf32>) {epsilon = 9.765625E-4 : f64} {layer = 2 : i64}{{$}}
// CHECK:         mtrt.kernel "dropout" ins(%{{.+}} : memref<2x4x8xf32>) outs(%{{.+}} : memref<2x4x8xf32>) {probability = 1.000000e-01 : f64, rng_stream = 4 : i64} {layer = 2 : i64}{{$}}
// CHECK:         mtrt.kernel "matmul" ins(%{{.+}}, %{{.+}} : memref<2x4x8xf32>, memref<16x8xf32>) outs(%{{.+}} : memref<2x4x16xf32>) {transpose_b}
// CHECK:         mtrt.kernel "cross_entropy" ins(%{{.+}}, %{{.+}} : memref<2x4x16xf32>, memref<2x4xi32>) outs(%{{.+}} : memref<f32>) {}
func.func @kernel_params(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                         %labels: tensor<2x4xi32> {mt.input = "labels"},
                         %w: tensor<8xf32> {mt.param = "ln.weight"},
                         %b: tensor<8xf32> {mt.param = "ln.bias"},
                         %wte: tensor<16x8xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %y = mt.layer_norm %x, %w, %b {epsilon = 9.765625e-04 : f64, mt.layer = 2} : tensor<2x4x8xf32>, tensor<8xf32>
  %d = mt.dropout %y {probability = 1.0e-01 : f64, rng_stream = 4, mt.layer = 2} : tensor<2x4x8xf32>
  %logits = mt.matmul %d, %wte transpose_b : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Dropout of probability 0 needs no stream.

// CHECK-LABEL: mtrt.program @stage0
// CHECK:         mtrt.kernel "dropout" ins({{.*}}) outs({{.*}}) {probability = 0.000000e+00 : f64}
func.func @dropout_zero(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<4xf32> {
  %y = mt.dropout %x {probability = 0.0 : f64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Results with an mt.output role become mtrt.output, in result order;
// returned parameters do not.

// CHECK-LABEL: mtrt.program @stage0
// CHECK:         %[[LOSS:.+]] = mtrt.buffer {kind = "activation", {{.*}}} : memref<f32>
// CHECK-NEXT:    mtrt.kernel "cross_entropy" {{.*}} outs(%[[LOSS]] : memref<f32>)
// CHECK:         %[[NORM:.+]] = mtrt.buffer {kind = "activation", {{.*}}} : memref<f32>
// CHECK-NEXT:    mtrt.kernel "global_norm" {{.*}} outs(%[[NORM]] : memref<f32>)
// CHECK-NEXT:    mtrt.output "loss", %[[LOSS]] : memref<f32>
// CHECK-NEXT:    mtrt.output "grad_norm", %[[NORM]] : memref<f32>
// CHECK-NEXT:  }
func.func @outputs(%p: tensor<2x4x8xf32> {mt.param = "p"},
                   %labels: tensor<2x4xi32> {mt.input = "labels"})
    -> (tensor<f32> {mt.output = "loss"}, tensor<2x4x8xf32> {mt.param = "p"},
        tensor<f32> {mt.output = "grad_norm"}) {
  %loss = mt.cross_entropy %p, %labels : (tensor<2x4x8xf32>, tensor<2x4xi32>) -> tensor<f32>
  %norm = mt.global_norm %p : tensor<2x4x8xf32>
  return %loss, %p, %norm : tensor<f32>, tensor<2x4x8xf32>, tensor<f32>
}

// -----

// Without a grid, a random offset has no per-rank part: the dropout of
// microbatch 1 starts after the 16 elements of microbatch 0, a plain number.

// CHECK-LABEL: mtrt.program @stage0
// CHECK:         mtrt.kernel "dropout" {{.*}} {probability = 1.000000e-01 : f64, rng_offset = 16 : i64, rng_stream = 0 : i64} {microbatch = 1 : i64}
func.func @microbatch_offset(%x: tensor<2x8xf32> {mt.param = "x"}) -> tensor<2x8xf32> {
  %y = mt.dropout %x {probability = 1.0e-01 : f64, rng_stream = 0 : i64, mt.microbatch = 1 : i64, mt.microbatches = 2 : i64} : tensor<2x8xf32>
  return %y : tensor<2x8xf32>
}

// -----

// Each function becomes the program of its pipeline stage
// ('mt.pipeline_stage', 0 when absent), @stage<N>, in function order; the
// functions are removed.

// CHECK-LABEL: mtrt.program @stage1 attributes {{{.*}}stage = 1 : i64}
// CHECK:         mtrt.kernel "gelu"
// CHECK-LABEL: mtrt.program @stage0 attributes {{{.*}}stage = 0 : i64}
// CHECK:         mtrt.kernel "add"
// CHECK-NOT:   func.func
func.func @second(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<4xf32> attributes {mt.pipeline_stage = 1 : i64} {
  %y = mt.gelu %x : tensor<4xf32>
  return %y : tensor<4xf32>
}
func.func @first(%x: tensor<4xf32> {mt.param = "y"}) -> tensor<4xf32> {
  %y = mt.add %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// ZeRO's padding of a flat tensor to equal pieces and its cut after a
// gather (mt-parallelize) are each a copy_prefix: the source's elements,
// then zeros to the result's length. Neither is a view: each has its own
// buffer.

// CHECK-LABEL: mtrt.program @stage0
// CHECK-NEXT:    %[[X:.+]] = mtrt.buffer {kind = "param", name = "x", offset = 0 : i64} : memref<3xf32>
// CHECK-NEXT:    %[[PADDED:.+]] = mtrt.buffer {kind = "activation", offset = 64 : i64} : memref<4xf32>
// CHECK-NEXT:    mtrt.kernel "copy_prefix" ins(%[[X]] : memref<3xf32>) outs(%[[PADDED]] : memref<4xf32>) {}
// CHECK-NEXT:    %[[CUT:.+]] = mtrt.buffer {kind = "activation", offset = 128 : i64} : memref<3xf32>
// CHECK-NEXT:    mtrt.kernel "copy_prefix" ins(%[[PADDED]] : memref<4xf32>) outs(%[[CUT]] : memref<3xf32>) {}
// CHECK-NEXT:  }
func.func @zero_padding(%x: tensor<3xf32> {mt.param = "x"}) -> tensor<3xf32> {
  %padded = tensor.pad %x low[0] high[1] {
  ^bb0(%i: index):
    %zero = arith.constant 0.0 : f32
    tensor.yield %zero : f32
  } : tensor<3xf32> to tensor<4xf32>
  %cut = tensor.extract_slice %padded[0] [3] [1] : tensor<4xf32> to tensor<3xf32>
  return %cut : tensor<3xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Errors
//===----------------------------------------------------------------------===//

// Padding other than zeros at the end of a rank-1 tensor has no kernel.

func.func @negative_pad_nonzero(%x: tensor<3xf32> {mt.param = "x"}) -> tensor<4xf32> {
  // expected-error @below {{'tensor.pad' op cannot be lowered to the runtime: only a rank-1 tensor padded with zeros at its end is supported}}
  %padded = tensor.pad %x low[0] high[1] {
  ^bb0(%i: index):
    %one = arith.constant 1.0 : f32
    tensor.yield %one : f32
  } : tensor<3xf32> to tensor<4xf32>
  return %padded : tensor<4xf32>
}

// -----

func.func @negative_pad_front(%x: tensor<3xf32> {mt.param = "x"}) -> tensor<4xf32> {
  // expected-error @below {{'tensor.pad' op cannot be lowered to the runtime: only a rank-1 tensor padded with zeros at its end is supported}}
  %padded = tensor.pad %x low[1] high[0] {
  ^bb0(%i: index):
    %zero = arith.constant 0.0 : f32
    tensor.yield %zero : f32
  } : tensor<3xf32> to tensor<4xf32>
  return %padded : tensor<4xf32>
}

// -----

// Only the leading elements of a rank-1 tensor are extracted.

func.func @negative_slice_offset(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<3xf32> {
  // expected-error @below {{'tensor.extract_slice' op cannot be lowered to the runtime: only the leading elements of a rank-1 tensor can be extracted}}
  %cut = tensor.extract_slice %x[1] [3] [1] : tensor<4xf32> to tensor<3xf32>
  return %cut : tensor<3xf32>
}

// -----

// A dropout that drops something needs the stream mt-autodiff assigns.

func.func @negative_dropout_without_stream(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<4xf32> {
  // expected-error @below {{'mt.dropout' op has no rng_stream: run mt-autodiff before mt-lower-to-runtime}}
  %y = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// So does attention with dropout.

func.func @negative_attention_without_stream(%q: tensor<1x2x4x4xf32> {mt.param = "q"}) -> tensor<1x2x4x4xf32> {
  // expected-error @below {{'mt.attention' op has no rng_stream: run mt-autodiff before mt-lower-to-runtime}}
  %y = mt.attention %q, %q, %q {dropout = 1.0e-01 : f64} : tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// Only splat constants have a fill command.

func.func @negative_non_splat_constant(%x: tensor<2xf32> {mt.param = "x"}) -> tensor<2xf32> {
  // expected-error @below {{'arith.constant' op cannot be lowered to the runtime: only splat float tensor constants are supported, got a non-splat 'tensor<2xf32>'}}
  %c = arith.constant dense<[1.0, 2.0]> : tensor<2xf32>
  %y = mt.add %x, %c : tensor<2xf32>
  return %y : tensor<2xf32>
}

// -----

// A scalar (non-tensor) constant has no buffer: refused where it is read,
// dropped where nothing reads it (hand-written IR's `arith.constant true`
// was refused).

func.func @negative_scalar_constant(%x: tensor<2xf32> {mt.param = "x"}) -> (tensor<2xf32>, i1) {
  // expected-error @below {{'arith.constant' op cannot be lowered to the runtime: only splat float tensor constants are supported, got 'i1'}}
  %c = arith.constant true
  return %x, %c : tensor<2xf32>, i1
}

// -----

// CHECK-LABEL: mtrt.program @stage0
// CHECK-NEXT:    mtrt.buffer {kind = "param", name = "unused_constants_x"
// CHECK-NEXT:    mtrt.output "loss"
func.func @unused_constants(%x: tensor<2xf32> {mt.param = "unused_constants_x"}) -> (tensor<2xf32> {mt.output = "loss"}) {
  %t = arith.constant true
  %f = arith.constant 1.0 : f32
  %s = arith.constant dense<2.0> : tensor<2xf32>
  return %x : tensor<2xf32>
}

// -----

// Ops of other dialects have no kernel.

func.func @negative_other_dialect(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<4xf32> {
  // expected-error @below {{'arith.addf' op cannot be lowered to the runtime}}
  %y = arith.addf %x, %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// Every argument needs a role, to be bound by the runtime.

// expected-error @below {{'func.func' op argument #1 has no role: mark it 'mt.param' or 'mt.input'}}
func.func @negative_argument_without_role(%x: tensor<4xf32> {mt.param = "x"},
                                          %y: tensor<4xf32>) -> tensor<4xf32> {
  %z = mt.add %x, %y : tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

// Every argument must be a tensor.

// expected-error @below {{'func.func' op argument #1 is not a tensor}}
func.func @negative_non_tensor_argument(%x: tensor<4xf32> {mt.param = "x"},
                                        %n: i32) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// The program is a straight line.

// expected-error @below {{'func.func' op mt-lower-to-runtime needs a single-block function}}
func.func @negative_multi_block(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<4xf32> {
  cf.br ^bb1
^bb1:
  return %x : tensor<4xf32>
}

// -----

// Two functions of one stage (here both unmarked: stage 0) cannot both be
// its program; nothing is lowered.

// expected-note @below {{the first one is here}}
func.func @first(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
// expected-error @below {{'func.func' op is a second program for pipeline stage 0: a module lowers to one function per stage (mark pipeline stages with 'mt.pipeline_stage', or run mt-pipeline)}}
func.func @negative_second_stage0(%x: tensor<4xf32> {mt.param = "x"}) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}

// -----

// An accumulating GEMM (mt-fuse's gradient accumulation fusion) writes the
// sum over its accumulator: its output is a view of the accumulator's
// bytes, which it also reads (input 2), and the chain of microbatches'
// weight gradients lives in one buffer.

// CHECK-LABEL: mtrt.program @stage0
// CHECK:         %[[X:.+]] = mtrt.buffer {kind = "param", name = "x", offset = 0 : i64} : memref<8x8xbf16>
// CHECK:         %[[DY:.+]] = mtrt.buffer {kind = "param", name = "dy", offset = 128 : i64} : memref<8x16xbf16>
// CHECK:         %[[W0:.+]] = mtrt.buffer {kind = "activation", offset = [[ACC:[0-9]+]] : i64} : memref<8x16xf32>
// CHECK:         mtrt.kernel "matmul" ins(%[[X]], %[[DY]] : memref<8x8xbf16>, memref<8x16xbf16>) outs(%[[W0]] : memref<8x16xf32>) {transpose_a}
// CHECK:         %[[W1:.+]] = mtrt.buffer {alias, kind = "activation", offset = [[ACC]] : i64} : memref<8x16xf32>
// CHECK:         %[[B1:.+]] = mtrt.buffer {kind = "activation", offset = {{[0-9]+}} : i64} : memref<16xf32>
// CHECK:         mtrt.kernel "matmul_bias_grad" ins(%[[X]], %[[DY]], %[[W0]] : memref<8x8xbf16>, memref<8x16xbf16>, memref<8x16xf32>) outs(%[[W1]], %[[B1]] : memref<8x16xf32>, memref<16xf32>) {transpose_a}
// CHECK:         %[[W2:.+]] = mtrt.buffer {alias, kind = "activation", offset = [[ACC]] : i64} : memref<8x16xf32>
// CHECK:         mtrt.kernel "matmul" ins(%[[X]], %[[DY]], %[[W1]] : memref<8x8xbf16>, memref<8x16xbf16>, memref<8x16xf32>) outs(%[[W2]] : memref<8x16xf32>) {transpose_a}
// PLAN-LABEL:  memory plan @accumulate
// PLAN:          activations and workspace (sum): 576 bytes
func.func @accumulate(%x: tensor<8x8xbf16> {mt.param = "x"}, %dy: tensor<8x16xbf16> {mt.param = "dy"}) -> (tensor<8x16xf32>, tensor<16xf32>) {
  %w0 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %w1, %b1 = mt.matmul_bias_grad %x, %dy transpose_a accumulate(%w0) : (tensor<8x8xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
  %w2 = mt.matmul %x, %dy transpose_a accumulate(%w1) : (tensor<8x8xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %w2, %b1 : tensor<8x16xf32>, tensor<16xf32>
}

// -----

// An accumulator the GEMM could not write over: a parameter (an argument,
// persistent), a value read again afterwards, a view of another value.

func.func @negative_accumulate_argument(%x: tensor<8x8xbf16> {mt.param = "x"}, %dy: tensor<8x16xbf16> {mt.param = "dy"}, %acc: tensor<8x16xf32> {mt.param = "acc"}) -> tensor<8x16xf32> {
  // expected-error @below {{'mt.matmul' op cannot accumulate in place: its accumulator must be computed by an op of the step (not an argument, a view, a transfer or an empty tensor) into bytes of its own and read by nothing else}}
  %w = mt.matmul %x, %dy transpose_a accumulate(%acc) : (tensor<8x8xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %w : tensor<8x16xf32>
}

// -----

func.func @negative_accumulate_read_after(%x: tensor<8x8xbf16> {mt.param = "x"}, %dy: tensor<8x16xbf16> {mt.param = "dy"}) -> (tensor<8x16xf32>, tensor<8x16xf32>) {
  %w0 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  // expected-error @below {{'mt.matmul_bias_grad' op cannot accumulate in place}}
  %w1, %b1 = mt.matmul_bias_grad %x, %dy transpose_a accumulate(%w0) : (tensor<8x8xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
  return %w0, %w1 : tensor<8x16xf32>, tensor<8x16xf32>
}

// -----

func.func @negative_accumulate_view(%x: tensor<8x8xbf16> {mt.param = "x"}, %dy: tensor<8x16xbf16> {mt.param = "dy"}) -> tensor<8x16xf32> {
  %w0 = mt.matmul %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %flat = tensor.collapse_shape %w0 [[0, 1]] : tensor<8x16xf32> into tensor<128xf32>
  %view = tensor.expand_shape %flat [[0, 1]] output_shape [8, 16] : tensor<128xf32> into tensor<8x16xf32>
  // expected-error @below {{'mt.matmul' op cannot accumulate in place}}
  %w1 = mt.matmul %x, %dy transpose_a accumulate(%view) : (tensor<8x8xbf16>, tensor<8x16xbf16>, tensor<8x16xf32>) -> tensor<8x16xf32>
  return %w1 : tensor<8x16xf32>
}

// -----

// AdamW writes its results over its parameter and moments: nothing may read
// the old parameter after the update, which would find the new one.

func.func @negative_parameter_read_after_update(
    %p: tensor<4x4xf32> {mt.param = "w"},
    %m: tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg"},
    %v: tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg_sq"},
    %step: tensor<f32> {mt.input = "step"}, %lr: tensor<f32> {mt.input = "lr"},
    %beta1: tensor<f32> {mt.input = "adam_beta1"},
    %beta2: tensor<f32> {mt.input = "adam_beta2"},
    %eps: tensor<f32> {mt.input = "adam_eps"},
    %wd: tensor<f32> {mt.input = "weight_decay"},
    %clip: tensor<f32> {mt.input = "clip_grad"})
    -> (tensor<4x4xf32> {mt.param = "w"},
        tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg"},
        tensor<4x4xf32> {mt.param = "w", mt.state = "exp_avg_sq"},
        tensor<f32> {mt.output = "grad_norm"}, tensor<f32> {mt.output = "loss"}) {
  %g = mt.gelu %p : tensor<4x4xf32>
  %norm = mt.global_norm %g : tensor<4x4xf32>
  %scale = mt.clip_scale %norm, %clip : tensor<f32>
  // expected-error @below {{'mt.adamw' op cannot write its results over operand #0: 'mt.global_norm' reads it after the update}}
  %p2, %m2, %v2 = mt.adamw %p, %g, %m, %v, %step, %lr, %beta1, %beta2, %eps, %wd, %scale decay : tensor<4x4xf32>
  // expected-note @below {{read here}}
  %late = mt.global_norm %p : tensor<4x4xf32>
  return %p2, %m2, %v2, %norm, %late : tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<f32>, tensor<f32>
}
