// RUN: megatron-opt %s --canonicalize --split-input-file | FileCheck %s
// RUN: megatron-opt %s --cse --split-input-file | FileCheck %s --check-prefix=CSE

// A dropout with probability 0 is the identity and folds away.

// CHECK-LABEL: func.func @dropout_zero
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x16xf32>
// CHECK-NOT:     mt.dropout
// CHECK:         return %[[X]] : tensor<2x8x16xf32>
func.func @dropout_zero(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %y = mt.dropout %x {probability = 0.0 : f64} : tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Users of a folded dropout read its input.

// CHECK-LABEL: func.func @dropout_zero_user
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4xbf16>
// CHECK-NOT:     mt.dropout
// CHECK:         %[[G:.+]] = mt.gelu %[[X]] : tensor<4xbf16>
// CHECK:         return %[[G]]
func.func @dropout_zero_user(%x: tensor<4xbf16>) -> tensor<4xbf16> {
  %y = mt.dropout %x {probability = 0.0 : f64, rng_stream = 2 : i64} : tensor<4xbf16>
  %g = mt.gelu %y : tensor<4xbf16>
  return %g : tensor<4xbf16>
}

// -----

// A dropout with a non-zero probability stays.

// CHECK-LABEL: func.func @dropout_nonzero
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x16xf32>
// CHECK:         %[[Y:.+]] = mt.dropout %[[X]] {probability = 1.000000e-01 : f64} : tensor<2x8x16xf32>
// CHECK:         return %[[Y]] : tensor<2x8x16xf32>
func.func @dropout_nonzero(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %y = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// Two dropouts of the same value draw different masks: neither
// canonicalization nor CSE merges them.

// CHECK-LABEL: func.func @dropout_twice
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4xf32>
// CHECK:         %[[A:.+]] = mt.dropout %[[X]] {probability = 1.000000e-01 : f64} : tensor<4xf32>
// CHECK:         %[[B:.+]] = mt.dropout %[[X]] {probability = 1.000000e-01 : f64} : tensor<4xf32>
// CHECK:         mt.add %[[A]], %[[B]] : tensor<4xf32>

// CSE-LABEL:     func.func @dropout_twice
// CSE-SAME:        %[[X:[^:]+]]: tensor<4xf32>
// CSE:             %[[A:.+]] = mt.dropout %[[X]] {probability = 1.000000e-01 : f64} : tensor<4xf32>
// CSE:             %[[B:.+]] = mt.dropout %[[X]] {probability = 1.000000e-01 : f64} : tensor<4xf32>
// CSE:             mt.add %[[A]], %[[B]] : tensor<4xf32>
func.func @dropout_twice(%x: tensor<4xf32>) -> tensor<4xf32> {
  %a = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<4xf32>
  %b = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<4xf32>
  %y = mt.add %a, %b : tensor<4xf32>
  return %y : tensor<4xf32>
}
