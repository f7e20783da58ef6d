// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime --split-input-file | FileCheck %s --check-prefix=LOWER
// RUN: megatron-opt %s --mt-fuse="widen-gradients=false" --split-input-file | FileCheck %s --check-prefix=WIDEOFF
// RUN: megatron-opt %s --mt-fuse="norm-grad-row-block=4" --split-input-file | FileCheck %s --check-prefix=BLOCK4
// RUN: not megatron-opt %s --mt-fuse="norm-grad-row-block=0" --split-input-file 2>&1 | FileCheck %s --check-prefix=BADBLOCK
// RUN: not megatron-opt %s --mt-fuse="norm-grad-row-block=4096" --split-input-file 2>&1 | FileCheck %s --check-prefix=BIGBLOCK

// A layer norm's backward and the residual gradient's add after it become
// one row-block fusion: the input gradient stays in registers, and the
// weight and bias gradients leave the region as f32 partial sums, one row
// per block of 16 rows (20 rows: 2 blocks), which mt.bias_add_grad sums in
// block order.

// CHECK-LABEL: func.func @layer_norm_grad_residual
// CHECK-SAME:    (%[[DY:[^:]+]]: tensor<4x5x8xf32> {{.*}}, %[[X:[^:]+]]: tensor<4x5x8xf32> {{.*}}, %[[W:[^:]+]]: tensor<8xf32> {{.*}}, %[[R:[^:]+]]: tensor<4x5x8xf32>
// CHECK:         %[[F:.+]]:3 = mt.fusion ins(%[[DY]], %[[X]], %[[W]], %[[R]] : {{.*}}) -> (tensor<2x8xf32>, tensor<2x8xf32>, tensor<4x5x8xf32>) {
// CHECK-NEXT:    ^bb0(%[[DYA:.+]]: tensor<4x5x8xf32>, %[[XA:.+]]: tensor<4x5x8xf32>, %[[WA:.+]]: tensor<8xf32>, %[[RA:.+]]: tensor<4x5x8xf32>):
// CHECK-NEXT:      %[[GX:.+]], %[[GW:.+]], %[[GB:.+]] = mt.layer_norm_grad %[[DYA]], %[[XA]], %[[WA]] {mt.layer = 1 : i64, mt.phase = "backward", row_block = 16 : i64} : tensor<4x5x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
// CHECK-NEXT:      %[[S:.+]] = mt.add %[[RA]], %[[GX]]
// CHECK-NEXT:      mt.yield %[[GW]], %[[GB]], %[[S]]
// CHECK-NEXT:    } {mt.layer = 1 : i64, mt.phase = "backward"}
// CHECK-NEXT:    %[[DW:.+]] = mt.bias_add_grad %[[F]]#0 {mt.layer = 1 : i64, mt.phase = "backward"} : tensor<2x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[DB:.+]] = mt.bias_add_grad %[[F]]#1 {mt.layer = 1 : i64, mt.phase = "backward"} : tensor<2x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    return %[[F]]#2, %[[DW]], %[[DB]]

// With norm-grad-row-block=4, blocks of 4 rows: 5 rows of partial sums.
// BLOCK4-LABEL: func.func @layer_norm_grad_residual
// BLOCK4:         mt.layer_norm_grad {{.*}} row_block = 4 : i64} : tensor<4x5x8xf32>, tensor<8xf32> -> tensor<5x8xf32>
// BLOCK4:         mt.bias_add_grad %{{.+}}#0 {{.*}} : tensor<5x8xf32> -> tensor<8xf32>
// BADBLOCK: error: mt-fuse: norm-grad-row-block must be from 1 to 1024 (got 0)
// BIGBLOCK: error: mt-fuse: norm-grad-row-block must be from 1 to 1024 (got 4096)

// The kernel runs blocks of 16 rows in two phases: the rows (on CUDA a
// warp each, MT_NORM_GRAD_ROW_THREADS, the block's rows at once) with
// their statistics kept, then the block's column sums in double, each
// column's terms in row order, written as one row of partial sums.
// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused0 {elements = 20 : i64, flops_per_element = 21 : i64, num_outputs = 3 : i64, operand_extents = array<i64: 160, 160, 8, 160, 16, 16, 160>, operand_types = [f32, f32, f32, f32, f32, f32, f32], row_block = 16 : i64, row_length = 8 : i64, source = "// stage0_fused0: a row fusion of mt.layer_norm_grad, mt.add, 20 rows of 8
// LOWER-SAME:      #define MT_ROW_THREADS MT_NORM_GRAD_ROW_THREADS
// LOWER-SAME:      MT_ROW_BLOCK_LOOP(mt_block, mt_r0, mt_r1, 16LL)
// LOWER-SAME:      MT_ROW_BLOCK_STATS(mt_stats, 16LL)
// LOWER-SAME:      MT_BLOCK_ROWS(r, mt_r0, mt_r1)
// LOWER-SAME:      const mt_f64x<4> mt_s = mt_row_sums_f64<4, MT_ROW_THREADS>(8LL, [&](int64_t c) {
// LOWER-SAME:      const double mt_x = (double)in1[mt_row + c], mt_g = (double)in0[mt_row + c] * (double)in2[c];
// LOWER-SAME:      const double meanG = mt_s.v[2] / 8.0;
// LOWER-SAME:      const double meanGXhat = rstd * (mt_s.v[3] / 8.0 - mean * meanG);
// LOWER-SAME:      MT_ROW_LEADER {
// LOWER-SAME:      mt_stats[r - mt_r0][0] = mean;
// LOWER-SAME:      mt_stats[r - mt_r0][1] = rstd;
// LOWER-SAME:      const float v0 = (float)(rstd * (g - meanG - xhat * meanGXhat));
// LOWER-SAME:      const float v1 = (a3 + v0);
// LOWER-SAME:      out2[i] = v1;
// LOWER-SAME:      MT_BLOCK_ROWS_END
// LOWER-SAME:      MT_BLOCK_SYNC
// LOWER-SAME:      MT_COLUMN_SUMS(mt_sum0, 8LL)
// LOWER-SAME:      MT_COLUMN_SUMS(mt_sum1, 8LL)
// LOWER-SAME:      for (int64_t mt_k = 0; mt_k < 16LL; ++mt_k) {
// LOWER-SAME:      const double mean = mt_stats[mt_k][0];
// LOWER-SAME:      const double rstd = mt_stats[mt_k][1];
// LOWER-SAME:      MT_BLOCK_FOR(c, 8LL)
// LOWER-SAME:      const double xhat = ((double)in1[mt_row + c] - mean) * rstd;
// LOWER-SAME:      MT_COLUMN_AT(mt_sum0, c) += dy * xhat;
// LOWER-SAME:      MT_COLUMN_AT(mt_sum1, c) += dy;
// LOWER-SAME:      MT_BLOCK_FOR(c, 8LL)
// LOWER-SAME:      out0[mt_block * 8LL + c] = (float)MT_COLUMN_AT(mt_sum0, c);
// LOWER-SAME:      MT_BLOCK_SYNC
// LOWER-SAME:      MT_ROW_BLOCK_LAUNCHER(stage0_fused0, 16LL)
// LOWER:         mtrt.kernel "fused" {{.*}} outs({{.*}} : memref<2x8xf32>, memref<2x8xf32>, memref<4x5x8xf32>) {} {generated = @stage0_fused0, layer = 1 : i64, phase = "backward"}
// LOWER-NEXT:    mtrt.buffer
// LOWER-NEXT:    mtrt.kernel "bias_add_grad" ins({{.*}} : memref<2x8xf32>) outs({{.*}} : memref<8xf32>)
func.func @layer_norm_grad_residual(%dy: tensor<4x5x8xf32> {mt.input = "tokens"},
                                    %x: tensor<4x5x8xf32> {mt.param = "x"},
                                    %w: tensor<8xf32> {mt.param = "w"},
                                    %r: tensor<4x5x8xf32> {mt.param = "r"})
    -> (tensor<4x5x8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w {mt.layer = 1 : i64, mt.phase = "backward"} : tensor<4x5x8xf32>, tensor<8xf32>
  %s = mt.add %r, %dx {mt.layer = 1 : i64, mt.phase = "backward"} : tensor<4x5x8xf32>
  return %s, %dw, %db : tensor<4x5x8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// An RMS norm's backward in bf16 (mixed precision) whose input gradient
// is read elsewhere too: the add does not join (the gradient would be kept
// alive beside it), the norm's backward is a row-block fusion of its own,
// and its weight gradient's partial sums stay f32, cast to bf16 once summed.

// CHECK-LABEL: func.func @rms_norm_grad_bf16
// CHECK:         %[[F:.+]]:2 = mt.fusion ins({{.*}}) -> (tensor<2x3x8xbf16>, tensor<1x8xf32>) {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      %[[GX:.+]], %[[GW:.+]] = mt.rms_norm_grad {{.*}} {row_block = 16 : i64} : tensor<2x3x8xbf16>, tensor<8xbf16> -> tensor<1x8xf32>
// CHECK-NEXT:      mt.yield %[[GX]], %[[GW]]
// CHECK-NEXT:    }
// CHECK-NEXT:    %[[SUM:.+]] = mt.bias_add_grad %[[F]]#1 : tensor<1x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[DW:.+]] = mt.cast %[[SUM]] : tensor<8xf32> to tensor<8xbf16>
// CHECK:         mt.add
// CHECK:         return {{.*}}, %[[DW]], %[[F]]#0

// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused0 {elements = 6 : i64, flops_per_element = 14 : i64, num_outputs = 2 : i64, operand_extents = array<i64: 48, 48, 8, 48, 8>, operand_types = [bf16, bf16, bf16, bf16, f32], row_block = 16 : i64, row_length = 8 : i64, source = "// stage0_fused0: a row fusion of mt.rms_norm_grad, 6 rows of 8
// LOWER-SAME:      const mt_f64x<2> mt_s = mt_row_sums_f64<2, MT_ROW_THREADS>(8LL, [&](int64_t c) {
// LOWER-SAME:      const double mt_x = (double)mt_from_bf16(in1[mt_row + c]);
// LOWER-SAME:      const double rstd = 1.0 / sqrt(mt_s.v[0] / 8.0 + 9.99999999999999955e-07);
// LOWER-SAME:      const double meanGXhat = rstd * mt_s.v[1] / 8.0;
// LOWER-SAME:      const uint16_t v0_bits = mt_to_bf16((float)(rstd * (g - xhat * meanGXhat)));
// LOWER-SAME:      const float v0 = mt_from_bf16(v0_bits);
// LOWER-SAME:      out0[i] = v0_bits;
// LOWER-SAME:      const double rstd = mt_stats[mt_k][1];
// LOWER-SAME:      const double xhat = (double)mt_from_bf16(in1[mt_row + c]) * rstd;
// LOWER-SAME:      out1[mt_block * 8LL + c] = (float)MT_COLUMN_AT(mt_sum1, c);
func.func @rms_norm_grad_bf16(%dy: tensor<2x3x8xbf16> {mt.input = "tokens"},
                              %x: tensor<2x3x8xbf16> {mt.param = "x"},
                              %w: tensor<8xbf16> {mt.param = "w"},
                              %r: tensor<2x3x8xbf16> {mt.param = "r"})
    -> (tensor<2x3x8xbf16>, tensor<8xbf16>, tensor<2x3x8xbf16>) {
  %dx, %dw = mt.rms_norm_grad %dy, %x, %w : tensor<2x3x8xbf16>, tensor<8xbf16>
  %s = mt.add %r, %dx : tensor<2x3x8xbf16>
  return %s, %dw, %dx : tensor<2x3x8xbf16>, tensor<8xbf16>, tensor<2x3x8xbf16>
}

// -----

// A zero-centered weight (Gemma's): the input gradient's g reads the scale
// 1 + w, in the row sums and per column; the weight's terms are unchanged.

// CHECK-LABEL: func.func @zero_centered_rms_norm_grad
// CHECK:         mt.rms_norm_grad {{.*}} {row_block = 16 : i64, zero_centered_weight}

// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused0 {{{.*}}source = "// stage0_fused0: a row fusion of mt.rms_norm_grad, 6 rows of 8
// LOWER-SAME:      return mt_f64x<2>{{[{][{]}}mt_x * mt_x, (double)in0[mt_row + c] * (1.0 + (double)in2[c]) * mt_x}};
// LOWER-SAME:      const double g = dy * (1.0 + (double)in2[c]);
// LOWER-SAME:      MT_COLUMN_AT(mt_sum1, c) += dy * xhat;
func.func @zero_centered_rms_norm_grad(%dy: tensor<2x3x8xf32> {mt.input = "tokens"},
                                       %x: tensor<2x3x8xf32> {mt.param = "x"},
                                       %w: tensor<8xf32> {mt.param = "w"})
    -> (tensor<2x3x8xf32>, tensor<8xf32>) {
  %dx, %dw = mt.rms_norm_grad %dy, %x, %w {epsilon = 1.0e-06 : f64, zero_centered_weight}
      : tensor<2x3x8xf32>, tensor<8xf32>
  return %dx, %dw : tensor<2x3x8xf32>, tensor<8xf32>
}

// -----

// A bf16 layer norm's weight and bias gradients only widened to f32 (for
// the fp32 master weights) stay the f32 sums of their partial sums: no
// rounding to bf16 and back. widen-gradients=false narrows and widens.

// CHECK-LABEL: func.func @layer_norm_grad_widened
// CHECK:         %[[F:.+]]:3 = mt.fusion
// CHECK:         %[[DW:.+]] = mt.bias_add_grad %[[F]]#1 : tensor<1x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[DB:.+]] = mt.bias_add_grad %[[F]]#2 : tensor<1x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    return %[[F]]#0, %[[DW]], %[[DB]]
// WIDEOFF-LABEL: func.func @layer_norm_grad_widened
// WIDEOFF-COUNT-4: mt.cast
// WIDEOFF-NOT: mt.cast
// WIDEOFF-LABEL: func.func @layer_norm_grad_read_twice
func.func @layer_norm_grad_widened(%dy: tensor<2x3x8xbf16> {mt.input = "tokens"},
                                   %x: tensor<2x3x8xbf16> {mt.param = "x"},
                                   %w: tensor<8xbf16> {mt.param = "w"})
    -> (tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xf32>) {
  %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w : tensor<2x3x8xbf16>, tensor<8xbf16>
  %dw32 = mt.cast %dw : tensor<8xbf16> to tensor<8xf32>
  %db32 = mt.cast %db : tensor<8xbf16> to tensor<8xf32>
  return %dx, %dw32, %db32 : tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xf32>
}

// -----

// A gradient read elsewhere too in bf16 stays rounded to bf16.

// CHECK-LABEL: func.func @layer_norm_grad_read_twice
// CHECK:         %[[F:.+]]:2 = mt.fusion
// CHECK:         %[[DW:.+]] = mt.bias_add_grad %[[F]]#1 : tensor<1x8xf32> -> tensor<8xf32>
// CHECK-NEXT:    %[[DW16:.+]] = mt.cast %[[DW]] : tensor<8xf32> to tensor<8xbf16>
// CHECK:         mt.cast %{{.+}} : tensor<8xbf16> to tensor<8xf32>
// CHECK:         return {{.*}}, %[[DW16]]
// WIDEOFF-COUNT-2: mt.cast
// WIDEOFF-NOT: mt.cast
// WIDEOFF-LABEL: func.func @too_wide
func.func @layer_norm_grad_read_twice(%dy: tensor<2x3x8xbf16> {mt.input = "tokens"},
                                      %x: tensor<2x3x8xbf16> {mt.param = "x"},
                                      %w: tensor<8xbf16> {mt.param = "w"})
    -> (tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xbf16>) {
  %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w : tensor<2x3x8xbf16>, tensor<8xbf16>
  %dw32 = mt.cast %dw : tensor<8xbf16> to tensor<8xf32>
  return %dx, %dw32, %dw : tensor<2x3x8xbf16>, tensor<8xf32>, tensor<8xbf16>
}

// -----

// Wider than 8192 columns (a CPU thread's column sums live on its stack),
// the norm's backward stays the host kernel.

// CHECK-LABEL: func.func @too_wide
// CHECK-NOT:     mt.fusion
// CHECK:         mt.layer_norm_grad {{.*}} : tensor<1x2x8200xf32>, tensor<8200xf32>{{$}}
func.func @too_wide(%dy: tensor<1x2x8200xf32> {mt.input = "tokens"},
                    %x: tensor<1x2x8200xf32> {mt.param = "x"},
                    %w: tensor<8200xf32> {mt.param = "w"})
    -> (tensor<1x2x8200xf32>, tensor<8200xf32>, tensor<8200xf32>) {
  %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w : tensor<1x2x8200xf32>, tensor<8200xf32>
  return %dx, %dw, %db : tensor<1x2x8200xf32>, tensor<8200xf32>, tensor<8200xf32>
}
