// RUN: megatron-opt %s --mt-fuse --split-input-file | FileCheck %s
// RUN: megatron-opt %s --mt-fuse="group-casts=false" --split-input-file | FileCheck %s --check-prefix=OFF

// The casts of a layer's parameters to 16 bits with the same marks become
// one mt.multi_cast where the first of them was; a cast of another layer
// or phase, of an activation, or alone in its group stays mt.cast (a
// generated kernel of its own).

// CHECK-LABEL: func.func @layer
// CHECK-SAME:    (%[[W:[^:]+]]: tensor<8x16xf32>{{.*}}, %[[B:[^:]+]]: tensor<16xf32>{{.*}}, %[[X:[^:]+]]: tensor<4x8xbf16>{{.*}}, %[[W2:[^:]+]]: tensor<16x8xf32>{{.*}}, %[[V:[^:]+]]: tensor<8xf32>
// CHECK-NEXT:    %[[C:.+]]:3 = mt.multi_cast %[[W]], %[[B]], %[[W2]] {mt.layer = 0 : i64} : (tensor<8x16xf32>, tensor<16xf32>, tensor<16x8xf32>) -> (tensor<8x16xbf16>, tensor<16xbf16>, tensor<16x8xbf16>)
// CHECK-NEXT:    mt.matmul_bias %[[X]], %[[C]]#0, %[[C]]#1
// CHECK:         mt.matmul %{{.+}}, %[[C]]#2
// CHECK:         mt.fusion ins(%[[V]] : tensor<8xf32>)
// CHECK-NEXT:    ^bb0
// CHECK-NEXT:      mt.cast {{.*}}{mt.layer = 1 : i64}
// CHECK-NOT:     mt.multi_cast
// OFF-LABEL:   func.func @layer
// OFF-NOT:       mt.multi_cast
func.func @layer(%w: tensor<8x16xf32> {mt.param = "w"},
                 %b: tensor<16xf32> {mt.param = "b"},
                 %x: tensor<4x8xbf16> {mt.param = "x"},
                 %w2: tensor<16x8xf32> {mt.param = "w2"},
                 %v: tensor<8xf32> {mt.param = "v"})
    -> (tensor<4x8xbf16>, tensor<8xbf16>) {
  %w16 = mt.cast %w {mt.layer = 0 : i64} : tensor<8x16xf32> to tensor<8x16xbf16>
  %h = mt.matmul %x, %w16 : (tensor<4x8xbf16>, tensor<8x16xbf16>) -> tensor<4x16xbf16>
  %b16 = mt.cast %b {mt.layer = 0 : i64} : tensor<16xf32> to tensor<16xbf16>
  %hb = mt.bias_add %h, %b16 : tensor<4x16xbf16>, tensor<16xbf16>
  %w216 = mt.cast %w2 {mt.layer = 0 : i64} : tensor<16x8xf32> to tensor<16x8xbf16>
  %y = mt.matmul %hb, %w216 : (tensor<4x16xbf16>, tensor<16x8xbf16>) -> tensor<4x8xbf16>
  %v16 = mt.cast %v {mt.layer = 1 : i64} : tensor<8xf32> to tensor<8xbf16>
  return %y, %v16 : tensor<4x8xbf16>, tensor<8xbf16>
}

// -----

// Casts outside the layers (no layer mark: the embedding, the final norm,
// the head) stay one per use, so that the head's copy is not live from the
// embedding on; a layer's parameter cast twice is cast once.

// CHECK-LABEL: func.func @outside_and_twice
// CHECK-SAME:    (%[[E:[^:]+]]: tensor<16x8xf32>{{.*}}, %[[W:[^:]+]]: tensor<8x8xf32>{{.*}}, %[[B:[^:]+]]: tensor<8xf32>
// CHECK:         %[[C:.+]]:2 = mt.multi_cast %[[W]], %[[B]] {mt.layer = 0 : i64} : (tensor<8x8xf32>, tensor<8xf32>) -> (tensor<8x8xbf16>, tensor<8xbf16>)
// CHECK-NOT:     mt.multi_cast
// CHECK:         return %{{.+}}, %[[C]]#0, %[[C]]#1, %[[C]]#0, %{{.+}} :
func.func @outside_and_twice(%e: tensor<16x8xf32> {mt.param = "wte"},
                             %w: tensor<8x8xf32> {mt.param = "w"},
                             %b: tensor<8xf32> {mt.param = "b"})
    -> (tensor<16x8xbf16>, tensor<8x8xbf16>, tensor<8xbf16>, tensor<8x8xbf16>, tensor<16x8xbf16>) {
  %e16 = mt.cast %e : tensor<16x8xf32> to tensor<16x8xbf16>
  %w16 = mt.cast %w {mt.layer = 0 : i64} : tensor<8x8xf32> to tensor<8x8xbf16>
  %b16 = mt.cast %b {mt.layer = 0 : i64} : tensor<8xf32> to tensor<8xbf16>
  %w16b = mt.cast %w {mt.layer = 0 : i64} : tensor<8x8xf32> to tensor<8x8xbf16>
  %head = mt.cast %e : tensor<16x8xf32> to tensor<16x8xbf16>
  return %e16, %w16, %b16, %w16b, %head : tensor<16x8xbf16>, tensor<8x8xbf16>, tensor<8xbf16>, tensor<8x8xbf16>, tensor<16x8xbf16>
}
