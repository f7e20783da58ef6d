// RUN: megatron-opt %s --mt-fuse | FileCheck %s

// An update that reads another's new parameter cannot join its group: the
// group would be placed after its own reader. Both stay mt.adamw.

// CHECK-LABEL: func.func @chained
// CHECK-NOT:     mt.multi_adamw
// CHECK:         %[[P1:.+]], %{{.+}}, %{{.+}} = mt.adamw %arg0,
// CHECK-NEXT:    mt.adamw %[[P1]],
// CHECK-NOT:     mt.multi_adamw
func.func @chained(%p: tensor<4xf32>, %g: tensor<4xf32>, %m: tensor<4xf32>, %v: tensor<4xf32>, %s: tensor<f32>)
    -> (tensor<4xf32>) {
  %p1, %m1, %v1 = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %s decay : tensor<4xf32>
  %p2, %m2, %v2 = mt.adamw %p1, %g, %m1, %v1, %s, %s, %s, %s, %s, %s, %s decay : tensor<4xf32>
  return %p2 : tensor<4xf32>
}
