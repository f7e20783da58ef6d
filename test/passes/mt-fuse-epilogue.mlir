// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse="gemm-epilogues=false" --split-input-file | FileCheck %s --check-prefix=OFF
// RUN: megatron-opt %s --mt-fuse="widen-gradients=false" --split-input-file | FileCheck %s --check-prefix=WIDEOFF

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

// -----

// Widened gradients: a 16-bit weight gradient or bias gradient whose only
// reader widens it to f32 is computed in f32 (the GEMM writes its f32
// accumulation); the cast is gone. A product something else reads, and a
// narrowing cast, stay as they are. widen-gradients=false keeps the casts.

// CHECK-LABEL: func.func @widened_gradients
// CHECK-SAME:    (%[[X:.+]]: tensor<2x4x8xbf16> {mt.param = "x"}, %[[DY:.+]]: tensor<2x4x16xbf16> {mt.param = "dy"})
// CHECK-NEXT:    %[[DW:.+]] = mt.matmul %[[X]], %[[DY]] transpose_a {mt.phase = "backward"} : (tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) -> tensor<2x8x16xf32>
// CHECK-NEXT:    %[[DB:.+]] = mt.bias_add_grad %[[DY]] {mt.phase = "backward"} : tensor<2x4x16xbf16> -> tensor<16xf32>
// CHECK-NEXT:    return %[[DW]], %[[DB]]
// WIDEOFF-LABEL: func.func @widened_gradients
// WIDEOFF-COUNT-2: mt.cast
func.func @widened_gradients(%x: tensor<2x4x8xbf16> {mt.param = "x"},
                             %dy: tensor<2x4x16xbf16> {mt.param = "dy"})
    -> (tensor<2x8x16xf32>, tensor<16xf32>) {
  %dw = mt.matmul %x, %dy transpose_a {mt.phase = "backward"} : (tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) -> tensor<2x8x16xbf16>
  %dw32 = mt.cast %dw {mt.phase = "backward"} : tensor<2x8x16xbf16> to tensor<2x8x16xf32>
  %db = mt.bias_add_grad %dy {mt.phase = "backward"} : tensor<2x4x16xbf16> -> tensor<16xbf16>
  %db32 = mt.cast %db {mt.phase = "backward"} : tensor<16xbf16> to tensor<16xf32>
  return %dw32, %db32 : tensor<2x8x16xf32>, tensor<16xf32>
}

// -----

// CHECK-LABEL: func.func @gradient_read_twice
// CHECK:         mt.matmul {{.+}} -> tensor<2x8x16xbf16>
// CHECK:         mt.cast
func.func @gradient_read_twice(%x: tensor<2x4x8xbf16> {mt.param = "x"},
                               %dy: tensor<2x4x16xbf16> {mt.param = "dy"})
    -> (tensor<2x8x16xf32>, tensor<2x8x16xbf16>) {
  %dw = mt.matmul %x, %dy transpose_a : (tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) -> tensor<2x8x16xbf16>
  %dw32 = mt.cast %dw : tensor<2x8x16xbf16> to tensor<2x8x16xf32>
  return %dw32, %dw : tensor<2x8x16xf32>, tensor<2x8x16xbf16>
}

// -----

// CHECK-LABEL: func.func @narrowed_product
// CHECK:         mt.matmul {{.+}} -> tensor<8x16xf32>
// CHECK:         mt.cast
func.func @narrowed_product(%x: tensor<8x8xf32> {mt.param = "x"},
                            %w: tensor<8x16xf32> {mt.param = "w"}) -> tensor<8x16xbf16> {
  %y = mt.matmul %x, %w : (tensor<8x8xf32>, tensor<8x16xf32>) -> tensor<8x16xf32>
  %y16 = mt.cast %y : tensor<8x16xf32> to tensor<8x16xbf16>
  return %y16 : tensor<8x16xbf16>
}
