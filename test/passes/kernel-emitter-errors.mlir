// RUN: megatron-opt %s --mt-lower-to-runtime --split-input-file --verify-diagnostics

// What the kernel emitter (lib/Target/KernelEmitter.cpp) refuses in an
// mt.fusion written by hand; mt-fuse never forms such regions.

// One kernel reads its row-broadcast operands at one row length.

func.func @two_row_lengths(%x: tensor<4x8xf32> {mt.input = "tokens"},
                           %y: tensor<8x4xf32> {mt.param = "y"},
                           %b8: tensor<8xf32> {mt.param = "b8"},
                           %b4: tensor<4xf32> {mt.param = "b4"})
    -> (tensor<4x8xf32> {mt.output = "loss"}) {
  // expected-error @+1 {{'mt.fusion' op broadcasts operands of 8 and 4 elements; a generated kernel has one row length}}
  %r:2 = mt.fusion ins(%x, %b8, %y, %b4 : tensor<4x8xf32>, tensor<8xf32>, tensor<8x4xf32>, tensor<4xf32>) -> (tensor<4x8xf32>, tensor<8x4xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %c: tensor<8xf32>, %d: tensor<8x4xf32>, %e: tensor<4xf32>):
    %h = mt.bias_add %a, %c : tensor<4x8xf32>, tensor<8xf32>
    %k = mt.bias_add %d, %e : tensor<8x4xf32>, tensor<4xf32>
    mt.yield %h, %k : tensor<4x8xf32>, tensor<8x4xf32>
  }
  return %r#0 : tensor<4x8xf32>
}

// -----

// A kernel takes at most 32 operands, inputs and results together.

func.func @too_many_operands(
    %a0: tensor<4x8xf32> {mt.param = "a0"},
    %a1: tensor<4x8xf32> {mt.param = "a1"},
    %a2: tensor<4x8xf32> {mt.param = "a2"},
    %a3: tensor<4x8xf32> {mt.param = "a3"},
    %a4: tensor<4x8xf32> {mt.param = "a4"},
    %a5: tensor<4x8xf32> {mt.param = "a5"},
    %a6: tensor<4x8xf32> {mt.param = "a6"},
    %a7: tensor<4x8xf32> {mt.param = "a7"},
    %a8: tensor<4x8xf32> {mt.param = "a8"},
    %a9: tensor<4x8xf32> {mt.param = "a9"},
    %a10: tensor<4x8xf32> {mt.param = "a10"},
    %a11: tensor<4x8xf32> {mt.param = "a11"},
    %a12: tensor<4x8xf32> {mt.param = "a12"},
    %a13: tensor<4x8xf32> {mt.param = "a13"},
    %a14: tensor<4x8xf32> {mt.param = "a14"},
    %a15: tensor<4x8xf32> {mt.param = "a15"},
    %a16: tensor<4x8xf32> {mt.param = "a16"},
    %a17: tensor<4x8xf32> {mt.param = "a17"},
    %a18: tensor<4x8xf32> {mt.param = "a18"},
    %a19: tensor<4x8xf32> {mt.param = "a19"},
    %a20: tensor<4x8xf32> {mt.param = "a20"},
    %a21: tensor<4x8xf32> {mt.param = "a21"},
    %a22: tensor<4x8xf32> {mt.param = "a22"},
    %a23: tensor<4x8xf32> {mt.param = "a23"},
    %a24: tensor<4x8xf32> {mt.param = "a24"},
    %a25: tensor<4x8xf32> {mt.param = "a25"},
    %a26: tensor<4x8xf32> {mt.param = "a26"},
    %a27: tensor<4x8xf32> {mt.param = "a27"},
    %a28: tensor<4x8xf32> {mt.param = "a28"},
    %a29: tensor<4x8xf32> {mt.param = "a29"},
    %a30: tensor<4x8xf32> {mt.param = "a30"},
    %a31: tensor<4x8xf32> {mt.param = "a31"})
    -> (tensor<4x8xf32> {mt.output = "loss"}) {
  // expected-error @+1 {{'mt.fusion' op has 33 operands; a generated kernel takes at most 32}}
  %r = mt.fusion ins(%a0, %a1, %a2, %a3, %a4, %a5, %a6, %a7, %a8, %a9, %a10, %a11, %a12, %a13, %a14, %a15, %a16, %a17, %a18, %a19, %a20, %a21, %a22, %a23, %a24, %a25, %a26, %a27, %a28, %a29, %a30, %a31 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%b0: tensor<4x8xf32>, %b1: tensor<4x8xf32>, %b2: tensor<4x8xf32>, %b3: tensor<4x8xf32>, %b4: tensor<4x8xf32>, %b5: tensor<4x8xf32>, %b6: tensor<4x8xf32>, %b7: tensor<4x8xf32>, %b8: tensor<4x8xf32>, %b9: tensor<4x8xf32>, %b10: tensor<4x8xf32>, %b11: tensor<4x8xf32>, %b12: tensor<4x8xf32>, %b13: tensor<4x8xf32>, %b14: tensor<4x8xf32>, %b15: tensor<4x8xf32>, %b16: tensor<4x8xf32>, %b17: tensor<4x8xf32>, %b18: tensor<4x8xf32>, %b19: tensor<4x8xf32>, %b20: tensor<4x8xf32>, %b21: tensor<4x8xf32>, %b22: tensor<4x8xf32>, %b23: tensor<4x8xf32>, %b24: tensor<4x8xf32>, %b25: tensor<4x8xf32>, %b26: tensor<4x8xf32>, %b27: tensor<4x8xf32>, %b28: tensor<4x8xf32>, %b29: tensor<4x8xf32>, %b30: tensor<4x8xf32>, %b31: tensor<4x8xf32>):
    %s1 = mt.add %b0, %b1 : tensor<4x8xf32>
    %s2 = mt.add %s1, %b2 : tensor<4x8xf32>
    %s3 = mt.add %s2, %b3 : tensor<4x8xf32>
    %s4 = mt.add %s3, %b4 : tensor<4x8xf32>
    %s5 = mt.add %s4, %b5 : tensor<4x8xf32>
    %s6 = mt.add %s5, %b6 : tensor<4x8xf32>
    %s7 = mt.add %s6, %b7 : tensor<4x8xf32>
    %s8 = mt.add %s7, %b8 : tensor<4x8xf32>
    %s9 = mt.add %s8, %b9 : tensor<4x8xf32>
    %s10 = mt.add %s9, %b10 : tensor<4x8xf32>
    %s11 = mt.add %s10, %b11 : tensor<4x8xf32>
    %s12 = mt.add %s11, %b12 : tensor<4x8xf32>
    %s13 = mt.add %s12, %b13 : tensor<4x8xf32>
    %s14 = mt.add %s13, %b14 : tensor<4x8xf32>
    %s15 = mt.add %s14, %b15 : tensor<4x8xf32>
    %s16 = mt.add %s15, %b16 : tensor<4x8xf32>
    %s17 = mt.add %s16, %b17 : tensor<4x8xf32>
    %s18 = mt.add %s17, %b18 : tensor<4x8xf32>
    %s19 = mt.add %s18, %b19 : tensor<4x8xf32>
    %s20 = mt.add %s19, %b20 : tensor<4x8xf32>
    %s21 = mt.add %s20, %b21 : tensor<4x8xf32>
    %s22 = mt.add %s21, %b22 : tensor<4x8xf32>
    %s23 = mt.add %s22, %b23 : tensor<4x8xf32>
    %s24 = mt.add %s23, %b24 : tensor<4x8xf32>
    %s25 = mt.add %s24, %b25 : tensor<4x8xf32>
    %s26 = mt.add %s25, %b26 : tensor<4x8xf32>
    %s27 = mt.add %s26, %b27 : tensor<4x8xf32>
    %s28 = mt.add %s27, %b28 : tensor<4x8xf32>
    %s29 = mt.add %s28, %b29 : tensor<4x8xf32>
    %s30 = mt.add %s29, %b30 : tensor<4x8xf32>
    %s31 = mt.add %s30, %b31 : tensor<4x8xf32>
    mt.yield %s31 : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

// Per-position losses come only from a row fusion: the runtime's
// cross_entropy kernel returns the mean.

func.func @per_position_losses(%l: tensor<2x4x16xf32> {mt.input = "tokens"},
                               %y: tensor<2x4xi32> {mt.input = "labels"})
    -> (tensor<2x4xf32>) {
  // expected-error @+1 {{'mt.cross_entropy' op cannot be lowered to the runtime: per-position losses are computed only inside an mt.fusion with the gradient (run mt-fuse); the cross_entropy kernel returns the mean}}
  %losses = mt.cross_entropy %l, %y : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
  return %losses : tensor<2x4xf32>
}

// -----

// Partial sums per block of rows come only from a row-block fusion: the
// runtime's layer_norm_grad kernel sums all rows.

func.func @partial_sums_unfused(%dy: tensor<2x4x8xf32> {mt.input = "tokens"},
                                %x: tensor<2x4x8xf32> {mt.param = "x"},
                                %w: tensor<8xf32> {mt.param = "w"})
    -> (tensor<2x4x8xf32>, tensor<1x8xf32>) {
  // expected-error @+1 {{'mt.layer_norm_grad' op cannot be lowered to the runtime: partial sums per block of rows (row_block) are computed only inside an mt.fusion (run mt-fuse); the host kernel sums all rows}}
  %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w {row_block = 16 : i64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<1x8xf32>
  return %dx, %dw : tensor<2x4x8xf32>, tensor<1x8xf32>
}

// -----

// A fusion passes i32 token ids (what a generated kernel reads), not i64.

func.func @row_fusion_i64_labels(%l: tensor<2x4x16xf32> {mt.input = "tokens"},
                                 %y: tensor<2x4xi64> {mt.input = "labels"})
    -> (tensor<2x4xf32>) {
  // expected-error @+1 {{'mt.fusion' op operand #1 must be variadic of statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float or 32-bit signless integer values, but got 'tensor<2x4xi64>'}}
  %r = mt.fusion ins(%l, %y : tensor<2x4x16xf32>, tensor<2x4xi64>) -> (tensor<2x4xf32>) {
  ^bb0(%la: tensor<2x4x16xf32>, %ya: tensor<2x4xi64>):
    %losses = mt.cross_entropy %la, %ya : (tensor<2x4x16xf32>, tensor<2x4xi64>) -> tensor<2x4xf32>
    mt.yield %losses : tensor<2x4xf32>
  }
  return %r : tensor<2x4xf32>
}
