// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse="gemm-epilogues=false" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: megatron-opt %s --mt-fuse="gelu-epilogues=false" --split-input-file | FileCheck %s --check-prefix=NOGELU

// A 16-bit MLP's GeLU joins its GEMM: the first linear layer's sum and
// its GeLU come from one mt.matmul_bias_gelu (the sum stays a value: the
// backward reads it), and the GeLU's gradient from the second layer's
// input-gradient GEMM, mt.matmul_gelu_grad at that sum. The marks and
// transposes carry over.

// CHECK-LABEL: func.func @mlp
// CHECK-SAME:    (%[[X:.+]]: tensor<2x4x8xbf16> {mt.param = "x"}, %[[W:.+]]: tensor<8x32xbf16> {mt.param = "w"}, %[[B:.+]]: tensor<32xbf16> {mt.param = "b"}, %[[DH:.+]]: tensor<2x4x8xbf16> {mt.param = "dh"}, %[[W2:.+]]: tensor<32x8xbf16> {mt.param = "w2"})
// CHECK-NEXT:    %[[PRE:.+]], %[[H:.+]] = mt.matmul_bias_gelu %[[X]], %[[W]], %[[B]] {mt.layer = 1 : i64} : (tensor<2x4x8xbf16>, tensor<8x32xbf16>, tensor<32xbf16>) -> (tensor<2x4x32xbf16>, tensor<2x4x32xbf16>)
// CHECK-NEXT:    %[[DPRE:.+]] = mt.matmul_gelu_grad %[[DH]], %[[W2]], %[[PRE]] transpose_b {mt.layer = 1 : i64, mt.phase = "backward"} : (tensor<2x4x8xbf16>, tensor<32x8xbf16>, tensor<2x4x32xbf16>) -> tensor<2x4x32xbf16>
// CHECK-NEXT:    return %[[H]], %[[DPRE]]
// OFF-LABEL:   func.func @mlp
// OFF:           mt.matmul %
// OFF:           mt.gelu
// OFF:           mt.matmul %
// OFF:           mt.gelu_grad
// OFF-NOT:       mt.matmul_bias_gelu
// OFF-NOT:       mt.matmul_gelu_grad
// gelu-epilogues=false keeps the bias epilogue alone.
// NOGELU-LABEL: func.func @mlp
// NOGELU:         mt.matmul_bias %
// NOGELU:         mt.gelu
// NOGELU:         mt.matmul %
// NOGELU:         mt.gelu_grad
// NOGELU-NOT:     mt.matmul_bias_gelu
// NOGELU-NOT:     mt.matmul_gelu_grad
func.func @mlp(%x: tensor<2x4x8xbf16> {mt.param = "x"},
               %w: tensor<8x32xbf16> {mt.param = "w"},
               %b: tensor<32xbf16> {mt.param = "b"},
               %dh: tensor<2x4x8xbf16> {mt.param = "dh"},
               %w2: tensor<32x8xbf16> {mt.param = "w2"})
    -> (tensor<2x4x32xbf16>, tensor<2x4x32xbf16>) {
  %m = mt.matmul %x, %w {mt.layer = 1 : i64} : (tensor<2x4x8xbf16>, tensor<8x32xbf16>) -> tensor<2x4x32xbf16>
  %pre = mt.bias_add %m, %b {mt.layer = 1 : i64} : tensor<2x4x32xbf16>, tensor<32xbf16>
  %h = mt.gelu %pre {mt.layer = 1 : i64} : tensor<2x4x32xbf16>
  %dgelu = mt.matmul %dh, %w2 transpose_b {mt.layer = 1 : i64, mt.phase = "backward"} : (tensor<2x4x8xbf16>, tensor<32x8xbf16>) -> tensor<2x4x32xbf16>
  %dpre = mt.gelu_grad %dgelu, %pre {mt.layer = 1 : i64, mt.phase = "backward"} : tensor<2x4x32xbf16>
  return %h, %dpre : tensor<2x4x32xbf16>, tensor<2x4x32xbf16>
}

// -----

// In f32 the GeLU and its gradient stay ops of their own (their generated
// kernels are the CPU backend's to the bit); the bias still joins.

// CHECK-LABEL: func.func @mlp_f32
// CHECK:         mt.matmul_bias %
// CHECK:         mt.gelu
// CHECK:         mt.matmul %
// CHECK:         mt.gelu_grad
// CHECK-NOT:     mt.matmul_bias_gelu
// CHECK-NOT:     mt.matmul_gelu_grad
func.func @mlp_f32(%x: tensor<2x4x8xf32> {mt.param = "x"},
                   %w: tensor<8x32xf32> {mt.param = "w"},
                   %b: tensor<32xf32> {mt.param = "b"},
                   %dh: tensor<2x4x8xf32> {mt.param = "dh"},
                   %w2: tensor<32x8xf32> {mt.param = "w2"})
    -> (tensor<2x4x32xf32>, tensor<2x4x32xf32>) {
  %m = mt.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x32xf32>) -> tensor<2x4x32xf32>
  %pre = mt.bias_add %m, %b : tensor<2x4x32xf32>, tensor<32xf32>
  %h = mt.gelu %pre : tensor<2x4x32xf32>
  %dgelu = mt.matmul %dh, %w2 transpose_b : (tensor<2x4x8xf32>, tensor<32x8xf32>) -> tensor<2x4x32xf32>
  %dpre = mt.gelu_grad %dgelu, %pre : tensor<2x4x32xf32>
  return %h, %dpre : tensor<2x4x32xf32>, tensor<2x4x32xf32>
}

// -----

// A product something else reads too stays stored: its gradient is a
// separate op. Two GeLUs of one sum (a recomputation) leave the sum's
// GEMM with its bias alone.

// CHECK-LABEL: func.func @shared
// CHECK:         mt.matmul_bias %
// CHECK-COUNT-2: mt.gelu %
// CHECK:         mt.matmul %
// CHECK:         mt.gelu_grad
// CHECK-NOT:     mt.matmul_bias_gelu
// CHECK-NOT:     mt.matmul_gelu_grad
func.func @shared(%x: tensor<2x4x8xbf16> {mt.param = "x"},
                  %w: tensor<8x32xbf16> {mt.param = "w"},
                  %b: tensor<32xbf16> {mt.param = "b"},
                  %dh: tensor<2x4x8xbf16> {mt.param = "dh"},
                  %w2: tensor<32x8xbf16> {mt.param = "w2"})
    -> (tensor<2x4x32xbf16>, tensor<2x4x32xbf16>, tensor<2x4x32xbf16>, tensor<2x4x32xbf16>) {
  %m = mt.matmul %x, %w : (tensor<2x4x8xbf16>, tensor<8x32xbf16>) -> tensor<2x4x32xbf16>
  %pre = mt.bias_add %m, %b : tensor<2x4x32xbf16>, tensor<32xbf16>
  %h = mt.gelu %pre : tensor<2x4x32xbf16>
  %h2 = mt.gelu %pre {mt.recomputed} : tensor<2x4x32xbf16>
  %dgelu = mt.matmul %dh, %w2 transpose_b : (tensor<2x4x8xbf16>, tensor<32x8xbf16>) -> tensor<2x4x32xbf16>
  %dpre = mt.gelu_grad %dgelu, %pre : tensor<2x4x32xbf16>
  return %h, %h2, %dpre, %dgelu : tensor<2x4x32xbf16>, tensor<2x4x32xbf16>, tensor<2x4x32xbf16>, tensor<2x4x32xbf16>
}
