// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse="parameter-copies=false" --split-input-file | FileCheck %s --check-prefix=CASTS
// RUN: megatron-opt %s --mt-fuse --split-input-file | megatron-opt --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse --split-input-file --mt-lower-to-runtime | FileCheck %s --check-prefix=LOWER

// Parameters read through 16-bit casts, all before their multi_adamw
// update, whose updates are the step's new values: each cast becomes a
// read of a new argument, the parameter's persistent bf16 copy, which the
// update rewrites (copies(...)) and the step returns. A parameter may be
// read in fp32 as well (w1 here); its casts still go.

// CHECK-LABEL: func.func @copies
// CHECK-SAME:    %arg0: tensor<4x4xf32> {mt.init = {kind = "zeros"}, mt.param = "w0"}
// CHECK-SAME:    %[[C0:[^:]+]]: tensor<4x4xbf16> {mt.param = "w0", mt.state = "param_copy"}
// CHECK-SAME:    %[[C1:[^:]+]]: tensor<4x8xbf16> {mt.param = "w1", mt.state = "param_copy"}
// CHECK-SAME:    -> (tensor<4x4xf32> {mt.param = "w0"}, tensor<4x8xf32> {mt.param = "w1"}, tensor<4x4xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>, tensor<4x4xbf16> {mt.param = "w0", mt.state = "param_copy"}, tensor<4x8xbf16> {mt.param = "w1", mt.state = "param_copy"})
// CHECK-NOT:     mt.cast
// CHECK-NOT:     mt.multi_cast
// CHECK:         %[[S0:.+]] = mt.fusion ins(%[[C0]] :
// CHECK:         %[[S1:.+]] = mt.fusion ins(%[[C1]] :
// CHECK:         %[[W:[^:]+]]:2, %{{.+}}:2, %{{.+}}:2, %[[NEW:[^:]+]]:2 = mt.multi_adamw params(%arg0, %arg1) grads(%arg2, %arg3) exp_avgs(%arg4, %arg5) exp_avg_sqs(%arg6, %arg7) scalars(%arg8, %arg9, %arg10, %arg11, %arg12, %arg13, %arg14) copies(%[[C0]], %[[C1]]) decay {mt.phase = "optimizer"}
// CHECK:         return %[[W]]#0, %[[W]]#1, %[[S0]], %[[S1]], %{{.+}}, %[[NEW]]#0, %[[NEW]]#1

// CASTS-LABEL: func.func @copies
// CASTS-NOT:     param_copy
// CASTS:         mt.multi_cast %arg0, %arg1
// CASTS:         mt.multi_adamw
// CASTS-NOT:     copies(

// LOWER-LABEL: mtrt.program @stage0
// LOWER:         %[[COPY:.+]] = mtrt.buffer {kind = "param_copy", name = "w0", offset = [[O:[0-9]+]] : i64} : memref<4x4xbf16>
// LOWER:         %[[NEWCOPY:.+]] = mtrt.buffer {alias, kind = "param_copy", name = "w0", offset = [[O]] : i64} : memref<4x4xbf16>
// LOWER:         mtrt.kernel "multi_adamw" ins({{.*}}, %[[COPY]], %{{.+}} : {{.*}}) outs({{.*}}, %[[NEWCOPY]], %{{.+}} : {{.*}}) {copies = 2 : i64, decay} {phase = "optimizer"}
func.func @copies(%w0: tensor<4x4xf32> {mt.param = "w0", mt.init = {kind = "zeros"}}, %w1: tensor<4x8xf32> {mt.param = "w1"},
                  %g0: tensor<4x4xf32> {mt.input = "tokens"}, %g1: tensor<4x8xf32> {mt.input = "labels"},
                  %m0: tensor<4x4xf32> {mt.param = "w0", mt.state = "exp_avg"}, %m1: tensor<4x8xf32> {mt.param = "w1", mt.state = "exp_avg"},
                  %v0: tensor<4x4xf32> {mt.param = "w0", mt.state = "exp_avg_sq"}, %v1: tensor<4x8xf32> {mt.param = "w1", mt.state = "exp_avg_sq"},
                  %step: tensor<f32> {mt.input = "step"}, %lr: tensor<f32> {mt.input = "lr"},
                  %beta1: tensor<f32> {mt.input = "adam_beta1"}, %beta2: tensor<f32> {mt.input = "adam_beta2"},
                  %eps: tensor<f32> {mt.input = "adam_eps"}, %wd: tensor<f32> {mt.input = "weight_decay"},
                  %clip: tensor<f32> {mt.input = "clip_grad"})
    -> (tensor<4x4xf32> {mt.param = "w0"}, tensor<4x8xf32> {mt.param = "w1"}, tensor<4x4xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>) {
  %c0 = mt.cast %w0 {mt.layer = 0 : i64} : tensor<4x4xf32> to tensor<4x4xbf16>
  %c1 = mt.cast %w1 {mt.layer = 0 : i64} : tensor<4x8xf32> to tensor<4x8xbf16>
  %s0 = mt.scale %c0 {factor = 2.0 : f64} : tensor<4x4xbf16>
  %s1 = mt.scale %c1 {factor = 2.0 : f64} : tensor<4x8xbf16>
  %wide = mt.scale %w1 {factor = 3.0 : f64} : tensor<4x8xf32>
  %p0, %m0n, %v0n = mt.adamw %w0, %g0, %m0, %v0, %step, %lr, %beta1, %beta2, %eps, %wd, %clip decay {mt.phase = "optimizer"} : tensor<4x4xf32>
  %p1, %m1n, %v1n = mt.adamw %w1, %g1, %m1, %v1, %step, %lr, %beta1, %beta2, %eps, %wd, %clip decay {mt.phase = "optimizer"} : tensor<4x8xf32>
  return %p0, %p1, %s0, %s1, %wide : tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x4xbf16>, tensor<4x8xbf16>, tensor<4x8xf32>
}
