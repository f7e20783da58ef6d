// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse --mt-lower-to-runtime --split-input-file | FileCheck %s --check-prefix=LOWER

// GPT-2's bias + dropout + residual add: one region, so neither the
// bias_add's result nor the dropout's is stored. The layer norm after it
// stays out of the region: a fused dropout draws its mask by the element's
// index, which only an elementwise kernel's loop has.

// CHECK-LABEL: func.func @bias_dropout_residual
// CHECK-SAME:    (%[[X:[^:]+]]: tensor<2x4x8xf32> {{.*}}, %[[B:[^:]+]]: tensor<8xf32> {{.*}}, %[[R:[^:]+]]: tensor<2x4x8xf32>
// CHECK:         %[[F:.+]] = mt.fusion ins(%[[X]], %[[B]], %[[R]] : tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x4x8xf32>) -> (tensor<2x4x8xf32>) {
// CHECK-NEXT:    ^bb0(%[[XA:.+]]: tensor<2x4x8xf32>, %[[BA:.+]]: tensor<8xf32>, %[[RA:.+]]: tensor<2x4x8xf32>):
// CHECK-NEXT:      %[[H:.+]] = mt.bias_add %[[XA]], %[[BA]]
// CHECK-NEXT:      %[[D:.+]] = mt.dropout %[[H]] {mt.layer = 0 : i64, probability = 1.000000e-01 : f64, rng_stream = 3 : i64}
// CHECK-NEXT:      %[[S:.+]] = mt.add %[[RA]], %[[D]]
// CHECK-NEXT:      mt.yield %[[S]]
// CHECK-NEXT:    } {mt.layer = 0 : i64}
// CHECK-NEXT:    %[[N:.+]] = mt.fusion ins(%[[F]], {{.*}}) -> (tensor<2x4x8xf32>) {
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.layer_norm
// CHECK-NEXT:      mt.yield

// The kernel takes the dropout's parameter block after its operands and
// draws each element's mask word at its index; the command carries what
// the runtime fills the block with.
// LOWER-LABEL: mtrt.program @stage0
// LOWER:         mtrt.generated_kernel @stage0_fused0 {dropouts = 1 : i64, elements = 64 : i64, flops_per_element = 3 : i64, num_outputs = 1 : i64, operand_extents = array<i64: 64, 8, 64, 64>, operand_types = [f32, f32, f32, f32], source = "// stage0_fused0: mt.bias_add, mt.dropout, mt.add\0AMT_KERNEL(stage0_fused0)
// LOWER-SAME:      const uint64_t *MT_RESTRICT mt_rng = (const uint64_t *)MT_ARG(4);
// LOWER-SAME:      const float v1 = mt_dropout(mt_rng + 0, i, v0, mt_dropout_blocks[0]);
// LOWER:         mtrt.kernel "fused" {{.*}} {dropout0_inner = 8 : i64, dropout0_probability = 1.000000e-01 : f64, dropout0_rng_stream = 3 : i64, dropout0_seq_local = 4 : i64} {generated = @stage0_fused0, layer = 0 : i64}
func.func @bias_dropout_residual(%x: tensor<2x4x8xf32> {mt.input = "tokens"},
                                 %b: tensor<8xf32> {mt.param = "b"},
                                 %r: tensor<2x4x8xf32> {mt.input = "labels"},
                                 %w: tensor<8xf32> {mt.param = "w"})
    -> (tensor<2x4x8xf32> {mt.output = "loss"}) {
  %h = mt.bias_add %x, %b {mt.layer = 0 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
  %d = mt.dropout %h {probability = 1.0e-01 : f64, rng_stream = 3 : i64, mt.layer = 0 : i64} : tensor<2x4x8xf32>
  %s = mt.add %r, %d {mt.layer = 0 : i64} : tensor<2x4x8xf32>
  %n = mt.layer_norm %s, %w, %b {mt.layer = 0 : i64} : tensor<2x4x8xf32>, tensor<8xf32>
  return %n : tensor<2x4x8xf32>
}
