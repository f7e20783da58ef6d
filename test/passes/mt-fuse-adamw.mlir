// RUN: megatron-opt %s --mt-fuse | FileCheck %s
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime | FileCheck %s --check-prefix=LOWER

// The updates of one parameter group (same dtype, same decay, same
// hyperparameter operands) become one mt.multi_adamw where the group's last
// update was: here the two weights with decay, and the two biases without.
// The third weight's update comes after something reads the first
// weight's new value (as a ZeRO all-gather of an updated piece would), so
// it cannot join that group: it starts its own and, alone, stays mt.adamw.

// CHECK-LABEL: func.func @groups
// CHECK:         %[[W:[^:]+]]:2, %{{.+}}:2, %{{.+}}:2 = mt.multi_adamw params(%arg0, %arg1) grads(%arg4, %arg5) exp_avgs(%arg8, %arg9) exp_avg_sqs(%arg12, %arg13) scalars(%arg16, %arg17, %arg18, %arg19, %arg20, %arg21, %arg22) decay {mt.phase = "optimizer"}
// CHECK-NEXT:    %[[READ:.+]] = mt.fusion ins(%[[W]]#0
// CHECK:         %[[B:[^:]+]]:2, %{{.+}}:2, %{{.+}}:2 = mt.multi_adamw params(%arg2, %arg3) grads(%arg6, %arg7) exp_avgs(%arg10, %arg11) exp_avg_sqs(%arg14, %arg15) scalars(%arg16, %arg17, %arg18, %arg19, %arg20, %arg21, %arg22) {mt.phase = "optimizer"}
// CHECK-NEXT:    %{{.+}}, %{{.+}}, %{{.+}} = mt.adamw %arg23, {{.*}} decay {mt.phase = "optimizer"} : tensor<4x4xf32>
// CHECK:         return %[[W]]#0, %[[W]]#1, %[[B]]#0, %[[B]]#1

// LOWER-LABEL: mtrt.program @stage0
// LOWER:         %[[P0:.+]] = mtrt.buffer {kind = "param", name = "w0", offset = [[O0:[0-9]+]] : i64} : memref<4x4xf32>
// LOWER:         %[[NEW0:.+]] = mtrt.buffer {alias, kind = "param", name = "w0", offset = [[O0]] : i64} : memref<4x4xf32>
// LOWER:         mtrt.kernel "multi_adamw" ins(%[[P0]], {{.*}}) outs(%[[NEW0]], {{.*}}) {decay} {phase = "optimizer"}
// LOWER:         mtrt.kernel "multi_adamw" ins({{.*}}) outs({{.*}}) {} {phase = "optimizer"}
// LOWER:         mtrt.kernel "adamw"
func.func @groups(%w0: tensor<4x4xf32> {mt.param = "w0"}, %w1: tensor<4x8xf32> {mt.param = "w1"},
                  %b0: tensor<4xf32> {mt.param = "b0"}, %b1: tensor<8xf32> {mt.param = "b1"},
                  %gw0: tensor<4x4xf32> {mt.input = "tokens"}, %gw1: tensor<4x8xf32> {mt.input = "labels"},
                  %gb0: tensor<4xf32> {mt.param = "gb0"}, %gb1: tensor<8xf32> {mt.param = "gb1"},
                  %mw0: tensor<4x4xf32> {mt.param = "w0", mt.state = "exp_avg"}, %mw1: tensor<4x8xf32> {mt.param = "w1", mt.state = "exp_avg"},
                  %mb0: tensor<4xf32> {mt.param = "b0", mt.state = "exp_avg"}, %mb1: tensor<8xf32> {mt.param = "b1", mt.state = "exp_avg"},
                  %vw0: tensor<4x4xf32> {mt.param = "w0", mt.state = "exp_avg_sq"}, %vw1: tensor<4x8xf32> {mt.param = "w1", mt.state = "exp_avg_sq"},
                  %vb0: tensor<4xf32> {mt.param = "b0", mt.state = "exp_avg_sq"}, %vb1: tensor<8xf32> {mt.param = "b1", mt.state = "exp_avg_sq"},
                  %step: tensor<f32> {mt.input = "step"}, %lr: tensor<f32> {mt.input = "lr"},
                  %beta1: tensor<f32> {mt.input = "adam_beta1"}, %beta2: tensor<f32> {mt.input = "adam_beta2"},
                  %eps: tensor<f32> {mt.input = "adam_eps"}, %wd: tensor<f32> {mt.input = "weight_decay"},
                  %clip: tensor<f32> {mt.input = "clip_grad"},
                  %w2: tensor<4x4xf32> {mt.param = "w2"},
                  %mw2: tensor<4x4xf32> {mt.param = "w2", mt.state = "exp_avg"},
                  %vw2: tensor<4x4xf32> {mt.param = "w2", mt.state = "exp_avg_sq"})
    -> (tensor<4x4xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %pw0, %mw0n, %vw0n = mt.adamw %w0, %gw0, %mw0, %vw0, %step, %lr, %beta1, %beta2, %eps, %wd, %clip decay {mt.phase = "optimizer"} : tensor<4x4xf32>
  %pb0, %mb0n, %vb0n = mt.adamw %b0, %gb0, %mb0, %vb0, %step, %lr, %beta1, %beta2, %eps, %wd, %clip {mt.phase = "optimizer"} : tensor<4xf32>
  %pw1, %mw1n, %vw1n = mt.adamw %w1, %gw1, %mw1, %vw1, %step, %lr, %beta1, %beta2, %eps, %wd, %clip decay {mt.phase = "optimizer"} : tensor<4x8xf32>
  %read = mt.scale %pw0 {factor = 2.0 : f64} : tensor<4x4xf32>
  %pb1, %mb1n, %vb1n = mt.adamw %b1, %gb1, %mb1, %vb1, %step, %lr, %beta1, %beta2, %eps, %wd, %clip {mt.phase = "optimizer"} : tensor<8xf32>
  %pw2, %mw2n, %vw2n = mt.adamw %w2, %gw0, %mw2, %vw2, %step, %lr, %beta1, %beta2, %eps, %wd, %clip decay {mt.phase = "optimizer"} : tensor<4x4xf32>
  return %pw0, %pw1, %pb0, %pb1, %read, %pw2 : tensor<4x4xf32>, tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}
