// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime --split-input-file | FileCheck %s --check-prefix=LOWER

// The output projection's bias, the residual add and the layer norm after
// them become one row fusion: the residual sum is stored (the residual
// stream reads it later) while the norm reads it in registers, its row
// statistics in double as the host kernel computes them. The region
// yields both.

// CHECK-LABEL: func.func @residual_layer_norm
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x4x8xf32> {{.*}}, %[[M:[^:]+]]: tensor<2x4x8xf32> {{.*}}, %[[B:[^:]+]]: tensor<8xf32> {{.*}}, %[[W:[^:]+]]: tensor<8xf32> {{.*}}, %[[LB:[^:]+]]: tensor<8xf32>
// CHECK:         %[[F:.+]]:2 = mt.fusion ins(%[[M]], %[[B]], %[[X]], %[[W]], %[[LB]] : {{.*}}) -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
// CHECK-NEXT:    ^bb0(%[[MA:.+]]: tensor<2x4x8xf32>, %[[BA:.+]]: tensor<8xf32>, %[[XA:.+]]: tensor<2x4x8xf32>, %[[WA:.+]]: tensor<8xf32>, %[[LBA:.+]]: tensor<8xf32>):
// CHECK-NEXT:      %[[H:.+]] = mt.bias_add %[[MA]], %[[BA]]
// CHECK-NEXT:      %[[S:.+]] = mt.add %[[XA]], %[[H]]
// CHECK-NEXT:      %[[Y:.+]] = mt.layer_norm %[[S]], %[[WA]], %[[LBA]]
// CHECK-NEXT:      mt.yield %[[S]], %[[Y]]
// CHECK-NEXT:    } {mt.layer = 0 : i64}
// CHECK:         return %[[F]]#0, %[[F]]#1

// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused0 {elements = 8 : i64, flops_per_element = 14 : i64, num_outputs = 2 : i64, operand_extents = array<i64: 64, 8, 64, 8, 8, 64, 64>, operand_types = [f32, f32, f32, f32, f32, f32, f32], row_length = 8 : i64, source = "// stage0_fused0: a row fusion of mt.bias_add, mt.add, mt.layer_norm, 8 rows of 8
// LOWER-SAME:      #define MT_ROW_THREADS 32
// LOWER-SAME:      const mt_f64x<2> mt_s = mt_row_sums_f64<2, MT_ROW_THREADS>(8LL, [&](int64_t c) {
// LOWER-SAME:      const float a1_row = in1[c];
// LOWER-SAME:      const float v1 = (a2 + v0);
// LOWER-SAME:      out0[i] = v1;
// LOWER-SAME:      const double mt_x = (double)v1;
// LOWER-SAME:      return mt_f64x<2>{{[{][{]}}mt_x, mt_x * mt_x{{[}][}]}};
// LOWER-SAME:      const double mean = mt_s.v[0] / 8.0;
// LOWER-SAME:      const double rstd = 1.0 / sqrt(mt_max2(mt_s.v[1] / 8.0 - mean * mean, 0.0) + 1.00000000000000008e-05);
// LOWER-SAME:      MT_ROW_FOR(c, 8LL)
// LOWER-SAME:      out1[i] = (float)(((double)v1 - mean) * rstd * (double)in3[c] + (double)in4[c]);
// LOWER-SAME:      MT_ROW_LAUNCHER(stage0_fused0)
// LOWER:         mtrt.kernel "fused" {{.*}} {generated = @stage0_fused0, layer = 0 : i64}
func.func @residual_layer_norm(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                               %m: tensor<2x4x8xf32> {mt.param = "m"},
                               %b: tensor<8xf32> {mt.param = "b"},
                               %w: tensor<8xf32> {mt.param = "w"},
                               %lb: tensor<8xf32> {mt.param = "lb"})
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %h = mt.bias_add %m, %b {mt.layer = 0 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
  %s = mt.add %x, %h {mt.layer = 0 : i64} : tensor<2x4x8xf32>
  %y = mt.layer_norm %s, %w, %lb {mt.layer = 0 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
  return %s, %y : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// A norm whose input comes from another layer's region (the next layer's
// first norm after the MLP's residual add) or from no region is a row
// fusion of its own: a region is one kernel of one layer. An RMS norm
// sums squares only.

// CHECK-LABEL: func.func @norms_alone
// CHECK:         mt.fusion
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.add
// CHECK-NEXT:      mt.yield
// CHECK-NEXT:    } {mt.layer = 0 : i64}
// CHECK:         mt.fusion
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.rms_norm
// CHECK-NEXT:      mt.yield
// CHECK-NEXT:    } {mt.layer = 1 : i64}

// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused1 {{{.*}}row_length = 8 : i64, source = "// stage0_fused1: a row fusion of mt.rms_norm, 8 rows of 8
// LOWER-SAME:      const double rstd = 1.0 / sqrt(mt_row_sum_f64<MT_ROW_THREADS>(8LL, [&](int64_t c) {
// LOWER-SAME:      return (double)a0 * (double)a0;
// LOWER-SAME:      }) / 8.0 + 9.99999999999999955e-07);
// LOWER-SAME:      out0[i] = (float)((double)a0 * rstd * (double)in1[c]);
func.func @norms_alone(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                       %r: tensor<2x4x8xf32> {mt.param = "r"},
                       %w: tensor<8xf32> {mt.param = "w"})
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>) {
  %s = mt.add %x, %r {mt.layer = 0 : i64} : tensor<2x4x8xf32>
  %y = mt.rms_norm %s, %w {mt.layer = 1 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
  return %s, %y : tensor<2x4x8xf32>, tensor<2x4x8xf32>
}

// -----

// A zero-centered weight (Gemma's) scales the normalized row by 1 + w.

// CHECK-LABEL: func.func @zero_centered_rms_norm
// CHECK:         mt.fusion
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.rms_norm {{.*}} {zero_centered_weight}
// CHECK-NEXT:      mt.yield

// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused0 {{{.*}}source = "// stage0_fused0: a row fusion of mt.rms_norm, 8 rows of 8
// LOWER-SAME:      out0[i] = (float)((double)a0 * rstd * (1.0 + (double)in1[c]));
func.func @zero_centered_rms_norm(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                                  %w: tensor<8xf32> {mt.param = "w"})
    -> tensor<2x4x8xf32> {
  %y = mt.rms_norm %x, %w {epsilon = 1.0e-06 : f64, zero_centered_weight}
      : tensor<2x4x8xf32>, tensor<8xf32>
  return %y : tensor<2x4x8xf32>
}
