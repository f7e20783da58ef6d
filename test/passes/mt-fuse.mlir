// RUN: megatron-opt %s --mt-fuse --split-input-file --verify-diagnostics | FileCheck %s
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime --split-input-file --verify-diagnostics | FileCheck %s --check-prefix=LOWER
// RUN: echo 'module {}' | not megatron-translate --export-kernels -o /dev/null 2>&1 | FileCheck %s --check-prefix=NOKERNELS
// NOKERNELS: error: no mtrt.generated_kernel to export (compile with mt-fuse

// The output projection's bias and the residual add become one region:
// nothing else reads the bias_add's result, so it is never stored. The
// GeLU's input is also read by the backward (the stash), so the GeLU stays
// a region of its own (fusing through it would keep the add's inputs, its
// result and the GeLU's alive at once); the backward op is another phase.

// CHECK-LABEL: func.func @bias_residual_gelu
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x4x8xf32> {{.*}}, %[[B:[^:]+]]: tensor<8xf32>
// CHECK:         %[[R:.+]] = mt.fusion ins(%[[X]], %[[B]] : tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>) {
// CHECK-NEXT:    ^bb0(%[[XA:.+]]: tensor<2x4x8xf32>, %[[BA:.+]]: tensor<8xf32>):
// CHECK-NEXT:      %[[H:.+]] = mt.bias_add %[[XA]], %[[BA]]
// CHECK-NEXT:      %[[S:.+]] = mt.add %[[H]], %[[XA]]
// CHECK-NEXT:      mt.yield %[[S]]
// CHECK-NEXT:    } {mt.layer = 0 : i64}
// CHECK-NEXT:    %[[G:.+]] = mt.fusion ins(%[[R]] : tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>) {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.gelu
// CHECK-NEXT:      mt.yield
// CHECK-NEXT:    } {mt.layer = 0 : i64}
// CHECK-NEXT:    %[[DX:.+]] = mt.fusion ins(%[[G]], %[[R]] : {{.*}}) -> (tensor<2x4x8xf32>) {
// CHECK:           mt.gelu_grad
// CHECK:         } {mt.layer = 0 : i64, mt.phase = "backward"}
// CHECK:         return %[[DX]]

// The element kernel's body twice: unguarded for full groups of elements,
// guarded for the last (MT_ELEMENT_GROUPS); its inputs read-only
// (MT_INPUT).
// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused0 {elements = 64 : i64, flops_per_element = 2 : i64, num_outputs = 1 : i64, operand_extents = array<i64: 64, 8, 64>, operand_types = [f32, f32, f32], source = "// stage0_fused0: mt.bias_add, mt.add\0AMT_KERNEL(stage0_fused0)
// LOWER-SAME:      MT_INPUT(float) in1 = MT_INPUT_ARG(float, 1);
// LOWER-SAME:      MT_ELEMENT_GROUPS(i, c, 8LL)
// LOWER-SAME:      const float a1_row = in1[c];
// LOWER-SAME:      const float v1 = (v0 + a0);
// LOWER-SAME:      MT_ELEMENT_GROUPS_TAIL(i, c, 8LL)
// LOWER-SAME:      const float a1_row = in1[c];
// LOWER-SAME:      const float v1 = (v0 + a0);
// LOWER-SAME:      MT_ELEMENT_GROUPS_END
// LOWER:         mtrt.kernel "fused" ins({{.*}} : memref<2x4x8xf32>, memref<8xf32>) outs({{.*}} : memref<2x4x8xf32>) {} {generated = @stage0_fused0, layer = 0 : i64, phase = "forward"}
// LOWER:         mtrt.generated_kernel @stage0_fused1 {{{.*}}const float v0 = mt_gelu(a0);
// LOWER:         mtrt.generated_kernel @stage0_fused2 {{{.*}}const float v0 = mt_gelu_grad(a0, a1);
// LOWER:         mtrt.kernel "fused" {{.*}} {generated = @stage0_fused2, layer = 0 : i64, phase = "backward"}
func.func @bias_residual_gelu(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                              %b: tensor<8xf32> {mt.param = "b"})
    -> (tensor<2x4x8xf32> {mt.output = "loss"}) {
  %h = mt.bias_add %x, %b {mt.layer = 0 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
  %r = mt.add %h, %x {mt.layer = 0 : i64} : tensor<2x4x8xf32>
  %g = mt.gelu %r {mt.layer = 0 : i64} : tensor<2x4x8xf32>
  %dx = mt.gelu_grad %g, %r {mt.layer = 0 : i64, mt.phase = "backward"} : tensor<2x4x8xf32>
  return %dx : tensor<2x4x8xf32>
}

// -----

// A value read outside the region before the region's last op would be
// read before the region exists: the add does not join the region of the
// bias_add, whose result the matmul reads first. Ops of different layers
// or phases stay apart; scalars stay host kernels.

// CHECK-LABEL: func.func @order_and_marks
// CHECK:         %[[H:.+]] = mt.fusion {{.*}} {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.bias_add
// CHECK-NEXT:      mt.yield
// CHECK-NEXT:    } {mt.layer = 0 : i64}
// CHECK-NEXT:    %[[M:.+]] = mt.matmul %[[H]]
// CHECK-NEXT:    mt.fusion ins(%[[H]], %[[M]] : {{.*}}) -> (tensor<4x8xf32>) {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.add
// CHECK-NEXT:      mt.yield
// CHECK-NEXT:    } {mt.layer = 0 : i64}
// CHECK-NEXT:    mt.fusion {{.*}} {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.gelu
// CHECK-NEXT:      mt.yield
// CHECK-NEXT:    } {mt.layer = 1 : i64}
// CHECK-NEXT:    mt.scale {{.*}} : tensor<f32>
func.func @order_and_marks(%x: tensor<4x8xf32> {mt.input = "tokens"},
                           %b: tensor<8xf32> {mt.param = "b"},
                           %w: tensor<8x8xf32> {mt.param = "w"},
                           %s: tensor<f32> {mt.input = "labels"})
    -> (tensor<4x8xf32> {mt.output = "loss"}, tensor<f32>) {
  %h = mt.bias_add %x, %b {mt.layer = 0 : i64} : tensor<4x8xf32>, tensor<8xf32>
  %m = mt.matmul %h, %w {mt.layer = 0 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = mt.add %h, %m {mt.layer = 0 : i64} : tensor<4x8xf32>
  %g = mt.gelu %r {mt.layer = 1 : i64} : tensor<4x8xf32>
  %t = mt.scale %s {factor = 2.0 : f64} : tensor<f32>
  return %g, %t : tensor<4x8xf32>, tensor<f32>
}

// -----

// mixed precision: a bf16 chain rounds each bf16 result as the unfused
// kernels store it, and a cast inside the region narrows without storing.

// CHECK-LABEL: func.func @bf16_chain
// CHECK:         mt.fusion
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.cast
// CHECK-NEXT:      mt.gelu
// CHECK-NEXT:      mt.yield
// LOWER-LABEL:   mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused0 {{{.*}}operand_types = [f32, bf16]{{.*}}const float a0 = in0[i];\0A    const uint16_t v0_bits = mt_to_bf16(a0);\0A    const float v0 = mt_from_bf16(v0_bits);\0A    const uint16_t v1_bits = mt_to_bf16(mt_gelu(v0));\0A    out0[i] = v1_bits;
func.func @bf16_chain(%x: tensor<4x8xf32> {mt.input = "tokens"})
    -> (tensor<4x8xbf16> {mt.output = "loss"}) {
  %c = mt.cast %x : tensor<4x8xf32> to tensor<4x8xbf16>
  %g = mt.gelu %c : tensor<4x8xbf16>
  return %g : tensor<4x8xbf16>
}

// -----

func.func @not_elementwise(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %r = mt.fusion ins(%x, %w : tensor<4x8xf32>, tensor<8x8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8x8xf32>):
    // expected-error @+1 {{cannot be fused: only ops with ElementwiseOpInterface may appear in an mt.fusion}}
    %m = mt.matmul %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    mt.yield %m : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

func.func @wrong_domain(%x: tensor<4x8xf32>, %y: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = mt.fusion ins(%x, %y : tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%a: tensor<4x8xf32>, %b: tensor<8xf32>):
    // expected-error @+1 {{has 'tensor<8xf32>' but the fusion's iteration domain has 32 elements}}
    %g = mt.gelu %b : tensor<8xf32>
    mt.yield %a : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

// A kernel takes at most 32 operands: a chain of 34 adds, each reading
// another argument, becomes a region of 30 adds (31 inputs, 1 result) and
// one of the remaining 4.

// CHECK-LABEL: func.func @widest_region
// CHECK:         %[[FIRST:.+]] = mt.fusion ins(%arg0, %arg1, %arg2, %arg3, %arg4, %arg5, %arg6, %arg7, %arg8, %arg9, %arg10, %arg11, %arg12, %arg13, %arg14, %arg15, %arg16, %arg17, %arg18, %arg19, %arg20, %arg21, %arg22, %arg23, %arg24, %arg25, %arg26, %arg27, %arg28, %arg29, %arg30 : {{.*}}) -> (tensor<4x8xf32>) {
// CHECK-COUNT-30:  mt.add
// CHECK:         mt.fusion ins(%[[FIRST]], %arg31, %arg32, %arg33, %arg34 : {{.*}}) -> (tensor<4x8xf32>) {
// CHECK-COUNT-4:   mt.add
// CHECK-NOT:     mt.add
// CHECK:         return
// LOWER:       mtrt.generated_kernel @stage0_fused0 {{{.*}}operand_extents = array<i64: 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32, 32>
// LOWER:       mtrt.generated_kernel @stage0_fused1 {{{.*}}operand_extents = array<i64: 32, 32, 32, 32, 32, 32>
func.func @widest_region(%x: tensor<4x8xf32> {mt.input = "tokens"},
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
    %a31: tensor<4x8xf32> {mt.param = "a31"},
    %a32: tensor<4x8xf32> {mt.param = "a32"},
    %a33: tensor<4x8xf32> {mt.param = "a33"}) -> tensor<4x8xf32> {
  %s0 = mt.add %x, %a0 : tensor<4x8xf32>
  %s1 = mt.add %s0, %a1 : tensor<4x8xf32>
  %s2 = mt.add %s1, %a2 : tensor<4x8xf32>
  %s3 = mt.add %s2, %a3 : tensor<4x8xf32>
  %s4 = mt.add %s3, %a4 : tensor<4x8xf32>
  %s5 = mt.add %s4, %a5 : tensor<4x8xf32>
  %s6 = mt.add %s5, %a6 : tensor<4x8xf32>
  %s7 = mt.add %s6, %a7 : tensor<4x8xf32>
  %s8 = mt.add %s7, %a8 : tensor<4x8xf32>
  %s9 = mt.add %s8, %a9 : tensor<4x8xf32>
  %s10 = mt.add %s9, %a10 : tensor<4x8xf32>
  %s11 = mt.add %s10, %a11 : tensor<4x8xf32>
  %s12 = mt.add %s11, %a12 : tensor<4x8xf32>
  %s13 = mt.add %s12, %a13 : tensor<4x8xf32>
  %s14 = mt.add %s13, %a14 : tensor<4x8xf32>
  %s15 = mt.add %s14, %a15 : tensor<4x8xf32>
  %s16 = mt.add %s15, %a16 : tensor<4x8xf32>
  %s17 = mt.add %s16, %a17 : tensor<4x8xf32>
  %s18 = mt.add %s17, %a18 : tensor<4x8xf32>
  %s19 = mt.add %s18, %a19 : tensor<4x8xf32>
  %s20 = mt.add %s19, %a20 : tensor<4x8xf32>
  %s21 = mt.add %s20, %a21 : tensor<4x8xf32>
  %s22 = mt.add %s21, %a22 : tensor<4x8xf32>
  %s23 = mt.add %s22, %a23 : tensor<4x8xf32>
  %s24 = mt.add %s23, %a24 : tensor<4x8xf32>
  %s25 = mt.add %s24, %a25 : tensor<4x8xf32>
  %s26 = mt.add %s25, %a26 : tensor<4x8xf32>
  %s27 = mt.add %s26, %a27 : tensor<4x8xf32>
  %s28 = mt.add %s27, %a28 : tensor<4x8xf32>
  %s29 = mt.add %s28, %a29 : tensor<4x8xf32>
  %s30 = mt.add %s29, %a30 : tensor<4x8xf32>
  %s31 = mt.add %s30, %a31 : tensor<4x8xf32>
  %s32 = mt.add %s31, %a32 : tensor<4x8xf32>
  %s33 = mt.add %s32, %a33 : tensor<4x8xf32>
  return %s33 : tensor<4x8xf32>
}
