// RUN: megatron-opt %s --mt-fuse --split-input-file --verify-diagnostics | FileCheck %s
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=LOWER

// The mean cross-entropy and its gradient become one row fusion (the
// per-position losses and the logits' gradient from one pass over the
// logits) placed where the gradient was, and mt.mean of the losses takes
// the loss's place. Nothing reads the logits afterwards, so the lowering
// writes the gradient over them: its buffer is an alias of theirs.

// CHECK-LABEL: func.func @loss_and_gradient
// CHECK:         %[[LOGITS:.+]] = mt.matmul
// CHECK-NEXT:    %[[F:.+]]:2 = mt.fusion ins(%{{.+}}, %[[LOGITS]], %{{.+}} : tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<2x4xf32>, tensor<2x4x16xf32>) {
// CHECK-NEXT:    ^bb0(%[[G:.+]]: tensor<f32>, %[[L:.+]]: tensor<2x4x16xf32>, %[[Y:.+]]: tensor<2x4xi32>):
// CHECK-NEXT:      %[[LOSSES:.+]] = mt.cross_entropy %[[L]], %[[Y]] : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
// CHECK-NEXT:      %[[D:.+]] = mt.cross_entropy_grad %[[G]], %[[L]], %[[Y]]
// CHECK-NEXT:      mt.yield %[[LOSSES]], %[[D]]
// CHECK-NEXT:    } {mt.phase = "backward"}
// CHECK-NEXT:    %[[LOSS:.+]] = mt.mean %[[F]]#0 {mt.phase = "backward"} : tensor<2x4xf32>
// CHECK:         return %[[LOSS]], %[[F]]#1

// The logits, which the gradient overwrites, are a plain pointer; the
// labels a read-only input (MT_INPUT: __ldg on CUDA).
// LOWER-LABEL: mtrt.program @stage0
// LOWER:         %[[LOGITS:.+]] = mtrt.buffer {kind = "activation", offset = [[OFFSET:[0-9]+]] : i64} : memref<2x4x16xf32>
// LOWER:         mtrt.kernel "matmul" {{.*}} outs(%[[LOGITS]] : memref<2x4x16xf32>)
// LOWER:         %[[LOSSES:.+]] = mtrt.buffer {kind = "activation", offset = {{[0-9]+}} : i64} : memref<2x4xf32>
// LOWER-NEXT:    %[[GRAD:.+]] = mtrt.buffer {alias, kind = "activation", offset = [[OFFSET]] : i64} : memref<2x4x16xf32>
// LOWER-NEXT:    mtrt.generated_kernel @stage0_fused0 {elements = 8 : i64, flops_per_element = 26 : i64, num_outputs = 2 : i64, operand_extents = array<i64: 1, 128, 8, 8, 128>, operand_types = [f32, f32, i32, f32, f32], row_length = 16 : i64, source = "// stage0_fused0: a row fusion of mt.cross_entropy, mt.cross_entropy_grad, 8 rows of 16
// LOWER-SAME:      const float *in1 = (const float *)MT_ARG(1);
// LOWER-SAME:      MT_INPUT(int32_t) in2 = MT_INPUT_ARG(int32_t, 2);
// LOWER-SAME:      float *out1 = (float *)MT_ARG(4);
// LOWER-SAME:      const float picked = labeled ? in1[mt_row + label] : 0.0f;
// LOWER-SAME:      const mt_softmax_stats mt_st = mt_row_softmax_stats<MT_ROW_THREADS>(16LL,
// LOWER-SAME:      const float m = mt_st.m;
// LOWER-SAME:      const double s = mt_st.s;
// LOWER-SAME:      MT_ROW_LEADER out0[r] = (float)((double)m + log(s) - (double)picked);
// LOWER-SAME:      const double kd = (double)in0[0] / 8.0;
// LOWER-SAME:      const float k = (float)kd, ks = (float)(kd / s);
// LOWER-SAME:      MT_ROW_FOR_CHUNK(mt_c0, 16LL)
// LOWER-SAME:      mt_xs[mt_k] = c < 16LL ? in1[mt_row + c] : 0.0f;
// LOWER-SAME:      if (c < 16LL)
// LOWER-SAME:      out1[mt_row + c] = mt_exp(mt_xs[mt_k] - m) * ks - (c == label ? k : 0.0f);
// LOWER-SAME:      MT_ROW_LAUNCHER(stage0_fused0)
// LOWER-NEXT:    mtrt.kernel "fused" ins({{.*}}, %[[LOGITS]], {{.*}} : memref<f32>, memref<2x4x16xf32>, memref<2x4xi32>) outs(%[[LOSSES]], %[[GRAD]] : memref<2x4xf32>, memref<2x4x16xf32>) {} {generated = @stage0_fused0, phase = "backward"}
// LOWER:         mtrt.kernel "mean" ins(%[[LOSSES]] : memref<2x4xf32>)
func.func @loss_and_gradient(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                             %w: tensor<16x8xf32> {mt.param = "w"},
                             %labels: tensor<2x4xi32> {mt.input = "labels"},
                             %seed: tensor<f32> {mt.input = "loss_scale"})
    -> (tensor<f32> {mt.output = "loss"}, tensor<2x4x16xf32>) {
  %logits = mt.matmul %x, %w {transpose_b} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = mt.cross_entropy %logits, %labels {mt.phase = "forward"} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %d = mt.cross_entropy_grad %seed, %logits, %labels {mt.phase = "backward"} : (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  return %loss, %d : tensor<f32>, tensor<2x4x16xf32>
}

// -----

// The loss is read before the gradient (as with one microbatch's loss in
// a pipeline schedule): the region goes where the loss was, its gradient
// operand being ready there. The logits are read again afterwards, so the
// gradient gets a buffer of its own.

// CHECK-LABEL: func.func @loss_read_early
// CHECK:         %[[F:.+]]:2 = mt.fusion
// CHECK:         } {mt.phase = "forward"}
// CHECK-NEXT:    %[[LOSS:.+]] = mt.mean %[[F]]#0
// CHECK-NEXT:    %[[SCALED:.+]] = mt.div %[[LOSS]]
// CHECK:         mt.scale
// CHECK:         return %[[SCALED]], %[[F]]#1

// LOWER-LABEL: mtrt.program @stage0
// LOWER-NOT:     alias
// LOWER:         mtrt.kernel "fused"
func.func @loss_read_early(%logits: tensor<2x4x16xf32> {mt.input = "tokens"},
                           %labels: tensor<2x4xi32> {mt.input = "labels"},
                           %seed: tensor<f32> {mt.input = "loss_scale"})
    -> (tensor<f32> {mt.output = "loss"}, tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
  %loss = mt.cross_entropy %logits, %labels {mt.phase = "forward"} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %scaled = mt.div %loss, %seed : tensor<f32>
  %d = mt.cross_entropy_grad %seed, %logits, %labels {mt.phase = "backward"} : (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  %s = mt.scale %logits {factor = 2.0 : f64} : tensor<2x4x16xf32>
  return %scaled, %d, %s : tensor<f32>, tensor<2x4x16xf32>, tensor<2x4x16xf32>
}

// -----

// A padded vocabulary (16 columns, 13 real, as mt-parallelize's
// make-vocab-size-divisible-by leaves it): the region's ops keep the true
// size, and the kernel masks the padding out of the max and the sum, and
// writes it a zero gradient. The command states the true size for the
// runtime.

// CHECK-LABEL: func.func @padded_vocabulary
// CHECK:         mt.fusion
// CHECK:           mt.cross_entropy %{{.+}}, %{{.+}} {mt.vocab_size = 13 : i64}
// CHECK:           mt.cross_entropy_grad %{{.+}}, %{{.+}}, %{{.+}} {mt.vocab_size = 13 : i64}

// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused0 {{.*}}row_length = 16 : i64
// LOWER-SAME:      const bool labeled = label >= 0 && label < 13LL;
// LOWER-SAME:      const mt_softmax_stats mt_st = mt_row_softmax_stats<MT_ROW_THREADS>(13LL,
// LOWER-SAME:      const float m = mt_st.m;
// LOWER-SAME:      const double s = mt_st.s;
// LOWER-SAME:      MT_ROW_FOR_CHUNK(mt_c0, 16LL)
// LOWER-SAME:      out1[mt_row + c] = c < 13LL ? mt_exp(mt_xs[mt_k] - m) * ks - (c == label ? k : 0.0f) : 0.0f;
// LOWER:         mtrt.kernel "fused" {{.*}} {vocab_size = 13 : i64} {generated = @stage0_fused0, phase = "backward"}
func.func @padded_vocabulary(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                             %w: tensor<16x8xf32> {mt.param = "w"},
                             %labels: tensor<2x4xi32> {mt.input = "labels"},
                             %seed: tensor<f32> {mt.input = "loss_scale"})
    -> (tensor<f32> {mt.output = "loss"}, tensor<2x4x16xf32>) {
  %logits = mt.matmul %x, %w {transpose_b} : (tensor<2x4x8xf32>, tensor<16x8xf32>) -> tensor<2x4x16xf32>
  %loss = mt.cross_entropy %logits, %labels {mt.phase = "forward", mt.vocab_size = 13 : i64} : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
  %d = mt.cross_entropy_grad %seed, %logits, %labels {mt.phase = "backward", mt.vocab_size = 13 : i64} : (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
  return %loss, %d : tensor<f32>, tensor<2x4x16xf32>
}
