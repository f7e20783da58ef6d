// mt-lower-to-runtime's alignment rounds every buffer's offset up: a power
// of two from 1 to 4096 bytes. 0 divided by zero (a crash), a negative or
// huge one made a plan the runtime refuses, 3 misaligned every f32 buffer.

// RUN: not megatron-opt %s --mt-lower-to-runtime=alignment=0 2>&1 | FileCheck %s --check-prefix=ZERO
// ZERO: error: mt-lower-to-runtime: alignment must be a power of two from 1 to 4096 bytes, got 0
// RUN: not megatron-opt %s --mt-lower-to-runtime=alignment=-8 2>&1 | FileCheck %s --check-prefix=NEGATIVE
// NEGATIVE: error: mt-lower-to-runtime: alignment must be a power of two from 1 to 4096 bytes, got -8
// RUN: not megatron-opt %s --mt-lower-to-runtime=alignment=3 2>&1 | FileCheck %s --check-prefix=THREE
// THREE: error: mt-lower-to-runtime: alignment must be a power of two from 1 to 4096 bytes, got 3
// RUN: not megatron-opt %s --mt-lower-to-runtime=alignment=9223372036854775807 2>&1 | FileCheck %s --check-prefix=HUGE
// HUGE: error: mt-lower-to-runtime: alignment must be a power of two from 1 to 4096 bytes, got 9223372036854775807
// RUN: megatron-opt %s --mt-lower-to-runtime=alignment=256 | FileCheck %s --check-prefix=OK
// OK: mtrt.program

func.func @scale(%x: tensor<4xf32> {mt.param = "x"}) -> (tensor<4xf32> {mt.output = "loss"}) {
  %y = mt.scale %x {factor = 2.0 : f64} : tensor<4xf32>
  return %y : tensor<4xf32>
}
