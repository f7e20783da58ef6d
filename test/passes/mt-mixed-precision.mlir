// RUN: megatron-opt %s --mt-mixed-precision --split-input-file --verify-diagnostics | FileCheck %s
// RUN: megatron-opt %s --mt-mixed-precision=precision=fp16 --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=FP16
// RUN: megatron-opt %s --mt-mixed-precision --mt-autodiff --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=STEP
// RUN: megatron-opt %s --mt-mixed-precision=precision=fp16 --mt-autodiff=loss-scaling=true --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=SCALED
// RUN: megatron-opt %s --mt-mixed-precision --mt-autodiff --mt-remat --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=RECAST
// RUN: megatron-opt %s --mt-mixed-precision --mt-autodiff --mt-remat=recast-parameters=false --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=KEEP
// RUN: not megatron-opt %s --mt-mixed-precision=precision=fp8 -o /dev/null 2>&1 | FileCheck %s --check-prefix=BADPRECISION
// RUN: megatron-opt %s --mt-mixed-precision=precision=fp32 --split-input-file | FileCheck %s --check-prefix=FP32

// mt-mixed-precision stores every forward activation in 16 bits and reads
// each parameter (an fp32 master weight) through its own cast at each use;
// the loss stays an fp32 scalar. mt-autodiff then differentiates each cast
// into a cast back, so parameter gradients, the norm and AdamW are fp32.

// CHECK-LABEL: func.func @linear
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32> {mt.input = "tokens"}
// CHECK-SAME:    %[[W:[^:]+]]: tensor<8x16xf32> {mt.param = "fc.weight"}
// CHECK-SAME:    %[[B:[^:]+]]: tensor<16xf32> {mt.param = "fc.bias"}) -> tensor<f32>
// CHECK:         %[[X16:.+]] = mt.cast %[[X]] : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// CHECK-NEXT:    %[[W16:.+]] = mt.cast %[[W]] : tensor<8x16xf32> to tensor<8x16xbf16>
// CHECK-NEXT:    %[[H:.+]] = mt.matmul %[[X16]], %[[W16]] : (tensor<2x4x8xbf16>, tensor<8x16xbf16>) -> tensor<2x4x16xbf16>
// CHECK-NEXT:    %[[B16:.+]] = mt.cast %[[B]] : tensor<16xf32> to tensor<16xbf16>
// CHECK-NEXT:    %[[Y:.+]] = mt.bias_add %[[H]], %[[B16]] : tensor<2x4x16xbf16>, tensor<16xbf16>
// CHECK-NEXT:    %[[LOSS:.+]] = mt.cross_entropy %[[Y]], {{.+}} : (tensor<2x4x16xbf16>, tensor<2x4xi32>) -> tensor<f32>
// CHECK-NEXT:    return %[[LOSS]] : tensor<f32>

// FP16-LABEL: func.func @linear
// FP16:         mt.matmul {{.*}} -> tensor<2x4x16xf16>
// FP32-LABEL: func.func @linear
// FP32-NOT:     mt.cast
// FP32:         mt.matmul {{.*}} -> tensor<2x4x16xf32>

// The step: activation gradients are bf16, each cast's gradient is cast
// back, and the optimizer sees fp32 gradients of the fp32 parameters.
// STEP-LABEL: func.func @linear
// STEP:         %[[DY:.+]] = mt.cross_entropy_grad {{.*}} -> tensor<2x4x16xbf16>
// STEP:         %[[DB16:.+]] = mt.bias_add_grad %[[DY]] {{.*}} : tensor<2x4x16xbf16> -> tensor<16xbf16>
// STEP-NEXT:    %[[DB:.+]] = mt.cast %[[DB16]] {mt.phase = "backward"} : tensor<16xbf16> to tensor<16xf32>
// STEP:         %[[DW16:.+]] = mt.matmul {{.*}} -> tensor<8x16xbf16>
// STEP-NEXT:    %[[DW:.+]] = mt.cast %[[DW16]] {mt.phase = "backward"} : tensor<8x16xbf16> to tensor<8x16xf32>
// STEP:         %[[NORM:.+]] = mt.global_norm %[[DW]], %[[DB]] {mt.phase = "optimizer"} : tensor<8x16xf32>, tensor<16xf32>
// STEP:         mt.adamw {{.*}}, %[[DW]], {{.*}} : tensor<8x16xf32>

// Loss scaling: the backward starts from the run-time scale, and the norm
// and the clipping factor are divided by it.
// SCALED-LABEL: func.func @linear
// SCALED-SAME:    %[[CLIP:[^:]+]]: tensor<f32> {mt.input = "clip_grad"}
// SCALED-SAME:    %[[SCALE:[^:]+]]: tensor<f32> {mt.input = "loss_scale"})
// SCALED:         mt.cross_entropy_grad %[[SCALE]], {{.*}} -> tensor<2x4x16xf16>
// SCALED:         %[[SCALED_NORM:.+]] = mt.global_norm
// SCALED-NEXT:    %[[NORM:.+]] = mt.div %[[SCALED_NORM]], %[[SCALE]] {mt.phase = "optimizer"} : tensor<f32>
// SCALED-NEXT:    %[[CLIPPED:.+]] = mt.clip_scale %[[NORM]], %[[CLIP]] {mt.phase = "optimizer"} : tensor<f32>
// SCALED-NEXT:    %[[FACTOR:.+]] = mt.div %[[CLIPPED]], %[[SCALE]] {mt.phase = "optimizer"} : tensor<f32>
// SCALED:         mt.adamw {{.*}}, %[[FACTOR]] decay
// SCALED:         return {{.*}}, %[[NORM]] :

// mt-remat (every policy) casts a parameter again for the backward instead
// of keeping the forward's 16-bit copy until then.
// RECAST-LABEL: func.func @linear
// RECAST-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32> {mt.input = "tokens"}
// RECAST:         %[[X16:.+]] = mt.cast %[[X]] : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// RECAST:         mt.matmul %[[X16]],
// RECAST:         %[[AGAIN:.+]] = mt.cast %[[X]] {mt.phase = "backward", mt.recomputed} : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// RECAST-NEXT:    tensor.collapse_shape %[[AGAIN]]

// recast-parameters=false keeps the forward's copy for the backward.
// KEEP-LABEL: func.func @linear
// KEEP-SAME:    %[[X:[^:]+]]: tensor<2x4x8xf32> {mt.input = "tokens"}
// KEEP:         %[[X16:.+]] = mt.cast %[[X]] : tensor<2x4x8xf32> to tensor<2x4x8xbf16>
// KEEP-NOT:     mt.recomputed
// KEEP:         tensor.collapse_shape %[[X16]]

// BADPRECISION: error: mt-mixed-precision: precision='fp8' is not one of bf16, fp16, fp32
func.func @linear(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                  %labels: tensor<2x4xi32> {mt.input = "labels"},
                  %w: tensor<8x16xf32> {mt.param = "fc.weight"},
                  %b: tensor<16xf32> {mt.param = "fc.bias"}) -> tensor<f32> {
  %h = mt.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %y = mt.bias_add %h, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A vector's copy (a norm weight's) is kept for the backward under every
// policy: its bytes grow with the width, and a cast is a kernel launch.
// RECAST-LABEL: func.func @norm
// RECAST-SAME:    %[[W:[^:]+]]: tensor<16xf32> {mt.param = "ln.weight"}
// RECAST:         %[[W16:.+]] = mt.cast %[[W]] : tensor<16xf32> to tensor<16xbf16>
// RECAST-NOT:     mt.cast %[[W]]
// RECAST:         mt.layer_norm_grad {{.*}}, %[[W16]]
// RECAST-NOT:     mt.cast %[[W]]
// RECAST:         return
func.func @norm(%x: tensor<2x4x16xf32> {mt.input = "tokens"},
                %labels: tensor<2x4xi32> {mt.input = "labels"},
                %w: tensor<16xf32> {mt.param = "ln.weight"},
                %b: tensor<16xf32> {mt.param = "ln.bias"}) -> tensor<f32> {
  %y = mt.layer_norm %x, %w, %b : tensor<2x4x16xf32>, tensor<16xf32>
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A parameter read twice (a tied embedding) gets a cast per use: its two
// gradients reach it in fp32 and add in fp32.

// STEP-LABEL: func.func @tied
// STEP:         %[[G1:.+]] = mt.cast {{.*}} : tensor<16x8xbf16> to tensor<16x8xf32>
// STEP:         %[[G2:.+]] = mt.cast {{.*}} : tensor<16x8xbf16> to tensor<16x8xf32>
// STEP:         mt.add {{.*}} : tensor<16x8xf32>
func.func @tied(%ids: tensor<2x4xi32> {mt.input = "tokens"},
                %labels: tensor<2x4xi32> {mt.input = "labels"},
                %wte: tensor<16x8xf32> {mt.param = "wte.weight"}) -> tensor<f32> {
  %e = mt.embedding %wte, %ids : (tensor<16x8xf32>, tensor<2x4xi32>) -> tensor<2x4x8xf32>
  %logits = mt.matmul %e, %wte transpose_b : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// It runs on a forward graph, before mt-autodiff.
func.func @step(%p: tensor<4xf32> {mt.param = "p"}, %g: tensor<4xf32> {mt.input = "tokens"},
                %m: tensor<4xf32> {mt.param = "p", mt.state = "exp_avg"},
                %v: tensor<4xf32> {mt.param = "p", mt.state = "exp_avg_sq"},
                %s: tensor<f32> {mt.input = "step"}) -> tensor<4xf32> {
  // expected-error @-4 {{is already a training step: mt-mixed-precision runs on the forward graph, before mt-autodiff}}
  %p2, %m2, %v2 = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %s : tensor<4xf32>
  return %p2 : tensor<4xf32>
}

// -----

// A forward graph returns its loss only: a returned parameter would have to
// be both the fp32 master and its 16-bit copy.
func.func @returns_parameter(%w: tensor<4xf32> {mt.param = "w"}) -> tensor<4xf32> {
  // expected-error @+1 {{'func.return' op returns argument #0: mt-mixed-precision needs a forward graph returning its loss only}}
  return %w : tensor<4xf32>
}

// -----

// A graph already converted is refused: a second conversion would cast its
// 16-bit values to themselves (or to the other 16-bit type).

func.func @negative_converted_twice(%w: tensor<4x4xf32> {mt.param = "w"}) -> tensor<4x4xbf16> {
  // expected-error @below {{'mt.cast' op is a precision cast: the graph is already mixed precision (mt-mixed-precision runs once, on an fp32 forward graph)}}
  %c = mt.cast %w : tensor<4x4xf32> to tensor<4x4xbf16>
  return %c : tensor<4x4xbf16>
}

// -----

// Casts are placed in one block.

// expected-error @below {{'func.func' op mt-mixed-precision needs a single-block function}}
func.func @negative_multi_block(%x: tensor<2x4x16xf32> {mt.input = "tokens"},
                                %labels: tensor<2x4xi32> {mt.input = "labels"},
                                %b: tensor<16xf32> {mt.param = "b"}) -> tensor<f32> {
  %y = mt.bias_add %x, %b : tensor<2x4x16xf32>, tensor<16xf32>
  cf.br ^bb1
^bb1:
  %loss = mt.cross_entropy %y, %labels : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}
