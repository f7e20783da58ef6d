// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse="gemm-epilogues=false" --split-input-file | FileCheck %s --check-prefix=OFF

// A bias addition that is the only reader of a matmul's product becomes
// the GEMM's epilogue: mt.matmul_bias, with the matmul's transposes and
// marks; the product is never a value of its own.

// CHECK-LABEL: func.func @linear
// CHECK-SAME:    (%[[X:.+]]: tensor<2x4x8xf32> {mt.param = "x"}, %[[W:.+]]: tensor<8x16xf32> {mt.param = "w"}, %[[B:.+]]: tensor<16xf32> {mt.param = "b"})
// CHECK-NEXT:    %[[Y:.+]] = mt.matmul_bias %[[X]], %[[W]], %[[B]] {mt.layer = 3 : i64} : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT:    return %[[Y]]
// OFF-LABEL:   func.func @linear
// OFF:           mt.matmul
// OFF-NOT:       mt.matmul_bias
func.func @linear(%x: tensor<2x4x8xf32> {mt.param = "x"},
                  %w: tensor<8x16xf32> {mt.param = "w"},
                  %b: tensor<16xf32> {mt.param = "b"}) -> tensor<2x4x16xf32> {
  %h = mt.matmul %x, %w {mt.layer = 3 : i64} : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %y = mt.bias_add %h, %b {mt.layer = 3 : i64} : tensor<2x4x16xf32>, tensor<16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// A transposed weight (a head) keeps its transpose; bf16 stays bf16.

// CHECK-LABEL: func.func @transposed
// CHECK:         mt.matmul_bias %{{.+}}, %{{.+}}, %{{.+}} transpose_b : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<16xbf16>) -> tensor<2x4x16xbf16>
func.func @transposed(%x: tensor<2x4x8xbf16> {mt.param = "x"},
                      %w: tensor<16x8xbf16> {mt.param = "w"},
                      %b: tensor<16xbf16> {mt.param = "b"}) -> tensor<2x4x16xbf16> {
  %h = mt.matmul %x, %w transpose_b : (tensor<2x4x8xbf16>, tensor<16x8xbf16>) -> tensor<2x4x16xbf16>
  %y = mt.bias_add %h, %b : tensor<2x4x16xbf16>, tensor<16xbf16>
  return %y : tensor<2x4x16xbf16>
}

// -----

// A product something else reads too stays stored: no epilogue.

// CHECK-LABEL: func.func @product_read_twice
// CHECK:         mt.matmul %
// CHECK-NOT:     mt.matmul_bias
func.func @product_read_twice(%x: tensor<2x4x8xf32> {mt.param = "x"},
                              %w: tensor<8x16xf32> {mt.param = "w"},
                              %b: tensor<16xf32> {mt.param = "b"})
    -> (tensor<2x4x16xf32>, tensor<2x4x16xf32>) {
  %h = mt.matmul %x, %w : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %y = mt.bias_add %h, %b : tensor<2x4x16xf32>, tensor<16xf32>
  return %y, %h : tensor<2x4x16xf32>, tensor<2x4x16xf32>
}

// -----

// The product as the bias (not the input) of a bias addition is not an
// epilogue.

// CHECK-LABEL: func.func @product_is_the_bias
// CHECK-NOT:     mt.matmul_bias
func.func @product_is_the_bias(%x: tensor<4x8xf32> {mt.param = "x"},
                               %w: tensor<8x16xf32> {mt.param = "w"},
                               %h0: tensor<3x4x16xf32> {mt.param = "h"}) -> tensor<3x4x16xf32> {
  %h = mt.matmul %x, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %y = mt.bias_add %h0, %h : tensor<3x4x16xf32>, tensor<4x16xf32>
  return %y : tensor<3x4x16xf32>
}
