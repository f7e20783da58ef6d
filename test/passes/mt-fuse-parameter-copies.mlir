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

// -----

// No copies where the step would read them after the update wrote them
// (a cast after it, or a cast before it whose value is read after it: here
// returned), where the update's new value is read by more than the return
// (as a ZeRO all-gather of an updated piece is), or where one parameter of
// the update has no cast: all of one multi_adamw's parameters get copies,
// or none do.

// CHECK-LABEL: func.func @none
// CHECK-NOT:     param_copy
// CHECK-NOT:     copies(
// CHECK:         return
func.func @none(%w0: tensor<4x4xf32> {mt.param = "w0"}, %w1: tensor<4x8xf32> {mt.param = "w1"},
                %g0: tensor<4x4xf32> {mt.input = "tokens"}, %g1: tensor<4x8xf32> {mt.input = "labels"},
                %m0: tensor<4x4xf32> {mt.param = "w0", mt.state = "exp_avg"}, %m1: tensor<4x8xf32> {mt.param = "w1", mt.state = "exp_avg"},
                %v0: tensor<4x4xf32> {mt.param = "w0", mt.state = "exp_avg_sq"}, %v1: tensor<4x8xf32> {mt.param = "w1", mt.state = "exp_avg_sq"},
                %step: tensor<f32> {mt.input = "step"}, %lr: tensor<f32> {mt.input = "lr"},
                %beta1: tensor<f32> {mt.input = "adam_beta1"}, %beta2: tensor<f32> {mt.input = "adam_beta2"},
                %eps: tensor<f32> {mt.input = "adam_eps"}, %wd: tensor<f32> {mt.input = "weight_decay"},
                %clip: tensor<f32> {mt.input = "clip_grad"},
                %b0: tensor<4xf32> {mt.param = "b0"}, %b1: tensor<8xf32> {mt.param = "b1"},
                %gb0: tensor<4xf32> {mt.param = "gb0"}, %gb1: tensor<8xf32> {mt.param = "gb1"},
                %mb0: tensor<4xf32> {mt.param = "b0", mt.state = "exp_avg"}, %mb1: tensor<8xf32> {mt.param = "b1", mt.state = "exp_avg"},
                %vb0: tensor<4xf32> {mt.param = "b0", mt.state = "exp_avg_sq"}, %vb1: tensor<8xf32> {mt.param = "b1", mt.state = "exp_avg_sq"},
                %u0: tensor<4x4xf32> {mt.param = "u0"}, %u1: tensor<4x4xf32> {mt.param = "u1"},
                %mu0: tensor<4x4xf32> {mt.param = "u0", mt.state = "exp_avg"}, %mu1: tensor<4x4xf32> {mt.param = "u1", mt.state = "exp_avg"},
                %vu0: tensor<4x4xf32> {mt.param = "u0", mt.state = "exp_avg_sq"}, %vu1: tensor<4x4xf32> {mt.param = "u1", mt.state = "exp_avg_sq"},
                %r0: tensor<4x4xf32> {mt.param = "r0"}, %r1: tensor<4x4xf32> {mt.param = "r1"},
                %mr0: tensor<4x4xf32> {mt.param = "r0", mt.state = "exp_avg"}, %mr1: tensor<4x4xf32> {mt.param = "r1", mt.state = "exp_avg"},
                %vr0: tensor<4x4xf32> {mt.param = "r0", mt.state = "exp_avg_sq"}, %vr1: tensor<4x4xf32> {mt.param = "r1", mt.state = "exp_avg_sq"})
    -> (tensor<4x4xf32> {mt.param = "w0"}, tensor<4x8xf32> {mt.param = "w1"}, tensor<4x4xbf16>, tensor<4x8xbf16>,
        tensor<4xf32> {mt.param = "b0"}, tensor<8xf32> {mt.param = "b1"}, tensor<4xbf16>, tensor<4xf32>,
        tensor<4x4xf32> {mt.param = "u0"}, tensor<4x4xf32> {mt.param = "u1"}, tensor<4x4xbf16>,
        tensor<4x4xf32> {mt.param = "r0"}, tensor<4x4xf32> {mt.param = "r1"}, tensor<4x4xbf16>, tensor<4x4xbf16>) {
  // w0 and w1: w1's cast comes after the update.
  %c0 = mt.cast %w0 : tensor<4x4xf32> to tensor<4x4xbf16>
  %p0, %m0n, %v0n = mt.adamw %w0, %g0, %m0, %v0, %step, %lr, %beta1, %beta2, %eps, %wd, %clip decay {mt.phase = "optimizer"} : tensor<4x4xf32>
  %p1, %m1n, %v1n = mt.adamw %w1, %g1, %m1, %v1, %step, %lr, %beta1, %beta2, %eps, %wd, %clip decay {mt.phase = "optimizer"} : tensor<4x8xf32>
  %c1 = mt.cast %w1 : tensor<4x8xf32> to tensor<4x8xbf16>
  // b0 and b1: b0's new value is read besides being returned.
  %cb0 = mt.cast %b0 : tensor<4xf32> to tensor<4xbf16>
  %cb1 = mt.cast %b1 : tensor<8xf32> to tensor<8xbf16>
  %pb0, %mb0n, %vb0n = mt.adamw %b0, %gb0, %mb0, %vb0, %step, %lr, %beta1, %beta2, %eps, %wd, %clip {mt.phase = "optimizer"} : tensor<4xf32>
  %pb1, %mb1n, %vb1n = mt.adamw %b1, %gb1, %mb1, %vb1, %step, %lr, %beta1, %beta2, %eps, %wd, %clip {mt.phase = "optimizer"} : tensor<8xf32>
  %gather = mt.scale %pb0 {factor = 1.0 : f64} : tensor<4xf32>
  // u0 and u1 (their own group: other moments): u1 has no cast.
  %cu0 = mt.cast %u0 : tensor<4x4xf32> to tensor<4x4xbf16>
  %pu0, %mu0n, %vu0n = mt.adamw %u0, %g0, %mu0, %vu0, %step, %lr, %beta1, %beta2, %eps, %wd, %wd {mt.phase = "optimizer"} : tensor<4x4xf32>
  %pu1, %mu1n, %vu1n = mt.adamw %u1, %g0, %mu1, %vu1, %step, %lr, %beta1, %beta2, %eps, %wd, %wd {mt.phase = "optimizer"} : tensor<4x4xf32>
  // r0 and r1 (another group: another gradient scale): both cast before
  // their update, but r0's cast is returned, read after the update.
  %cr0 = mt.cast %r0 : tensor<4x4xf32> to tensor<4x4xbf16>
  %cr1 = mt.cast %r1 : tensor<4x4xf32> to tensor<4x4xbf16>
  %sr1 = mt.scale %cr1 {factor = 2.0 : f64} : tensor<4x4xbf16>
  %pr0, %mr0n, %vr0n = mt.adamw %r0, %g0, %mr0, %vr0, %step, %lr, %beta1, %beta2, %eps, %wd, %eps {mt.phase = "optimizer"} : tensor<4x4xf32>
  %pr1, %mr1n, %vr1n = mt.adamw %r1, %g0, %mr1, %vr1, %step, %lr, %beta1, %beta2, %eps, %wd, %eps {mt.phase = "optimizer"} : tensor<4x4xf32>
  return %p0, %p1, %c0, %c1, %pb0, %pb1, %cb0, %gather, %pu0, %pu1, %cu0, %pr0, %pr1, %cr0, %sr1 : tensor<4x4xf32>, tensor<4x8xf32>, tensor<4x4xbf16>, tensor<4x8xbf16>, tensor<4xf32>, tensor<8xf32>, tensor<4xbf16>, tensor<4xf32>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xbf16>, tensor<4x4xf32>, tensor<4x4xf32>, tensor<4x4xbf16>, tensor<4x4xbf16>
}
