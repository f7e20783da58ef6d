// RUN: megatron-opt %s --mt-fuse | FileCheck %s
// RUN: megatron-opt %s --mt-fuse | megatron-opt | FileCheck %s

// mt-fuse-parameter-copies.mlir's refusals, apart from its lowering: a cast
// of a parameter after the parameter's update reads bytes the in-place
// update has overwritten, which mt-lower-to-runtime refuses (the pipeline
// never orders them so).

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
