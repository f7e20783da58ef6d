// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse="gemm-epilogues=false" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: megatron-opt %s --mt-fuse="bias-grad-epilogues=false" --split-input-file | FileCheck %s --check-prefix=OFF

// A 16-bit linear layer's bias gradient joins its weight gradient's GEMM,
// which reads the same gradient dY (through the collapse of its leading
// dimensions): mt.matmul_bias_grad, where the first of the two was; the
// views it reads (dY's and the activation's rows) move up to it. Both
// gradients are f32 (widened for the fp32 master weights).

// CHECK-LABEL: func.func @linear_grad
// CHECK-SAME:    (%[[X:.+]]: tensor<2x4x8xbf16> {mt.param = "x"}, %[[DY:.+]]: tensor<2x4x16xbf16> {mt.param = "dy"})
// CHECK-NEXT:    %[[XR:.+]] = tensor.collapse_shape %[[X]] {{\[}}[0, 1], [2]] : tensor<2x4x8xbf16> into tensor<8x8xbf16>
// CHECK-NEXT:    %[[DYR:.+]] = tensor.collapse_shape %[[DY]] {{\[}}[0, 1], [2]] : tensor<2x4x16xbf16> into tensor<8x16xbf16>
// CHECK-NEXT:    %[[DW:.+]], %[[DB:.+]] = mt.matmul_bias_grad %[[XR]], %[[DYR]] transpose_a {mt.layer = 2 : i64, mt.phase = "backward"} : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> (tensor<8x16xf32>, tensor<16xf32>)
// CHECK-NEXT:    return %[[DB]], %[[DW]]
// OFF-LABEL:   func.func @linear_grad
// OFF:           mt.bias_add_grad
// OFF:           mt.matmul
// OFF-NOT:       mt.matmul_bias_grad
func.func @linear_grad(%x: tensor<2x4x8xbf16> {mt.param = "x"},
                       %dy: tensor<2x4x16xbf16> {mt.param = "dy"})
    -> (tensor<16xf32>, tensor<8x16xf32>) {
  %db = mt.bias_add_grad %dy {mt.layer = 2 : i64, mt.phase = "backward"} : tensor<2x4x16xbf16> -> tensor<16xf32>
  %xr = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x4x8xbf16> into tensor<8x8xbf16>
  %dyr = tensor.collapse_shape %dy [[0, 1], [2]] : tensor<2x4x16xbf16> into tensor<8x16xbf16>
  %dw = mt.matmul %xr, %dyr transpose_a {mt.layer = 2 : i64, mt.phase = "backward"} : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  return %db, %dw : tensor<16xf32>, tensor<8x16xf32>
}

// -----

// f32 stays two ops (the generated and host kernels are the CPU
// backend's to the bit); so do gradients of two element types (cuBLASLt
// writes the bias gradient in the GEMM's output type), and a dY read
// transposed.

// CHECK-LABEL: func.func @apart
// CHECK-COUNT-3: mt.bias_add_grad
// CHECK-NOT:     mt.matmul_bias_grad
func.func @apart(%x: tensor<8x8xf32> {mt.param = "x"},
                 %dy: tensor<8x16xf32> {mt.param = "dy"},
                 %xh: tensor<8x8xbf16> {mt.param = "xh"},
                 %dyh: tensor<8x16xbf16> {mt.param = "dyh"},
                 %dyt: tensor<16x8xbf16> {mt.param = "dyt"})
    -> (tensor<16xf32>, tensor<8x16xf32>, tensor<16xbf16>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x8xbf16>) {
  %db = mt.bias_add_grad %dy : tensor<8x16xf32> -> tensor<16xf32>
  %dw = mt.matmul %x, %dy transpose_a : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %dbh = mt.bias_add_grad %dyh : tensor<8x16xbf16> -> tensor<16xbf16>
  %dwh = mt.matmul %xh, %dyh transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> tensor<8x16xf32>
  %dbt = mt.bias_add_grad %dyt : tensor<16x8xbf16> -> tensor<8xf32>
  %dwt = mt.matmul %xh, %dyt transpose_b : (tensor<8x8xbf16>, tensor<16x8xbf16>) -> tensor<8x16xbf16>
  return %db, %dw, %dbh, %dwh, %dbt, %xh : tensor<16xf32>, tensor<8x16xf32>, tensor<16xbf16>, tensor<8x16xf32>, tensor<8xf32>, tensor<8x8xbf16>
}
