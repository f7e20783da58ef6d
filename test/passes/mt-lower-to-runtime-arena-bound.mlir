// RUN: megatron-opt %s --mt-lower-to-runtime --split-input-file --verify-diagnostics
//
// An arena plans at most 2^60 bytes (mtrt::kMaxArenaBytes, which the
// artifact loader accepts): beyond, a shape written in the IR (or
// a vocabulary padded to a huge multiple) wrapped the byte counts of the
// plan to negative ones, which the runtime ops then refused with an
// unrelated message ("bytes [...] lie outside the arena").

// One tensor past the bound: 2^61 f32 elements, 2^63 bytes (an int64
// product that overflows).
// expected-error @+1 {{'func.func' op needs more than 2^60 bytes of buffers (the most one arena can plan); the largest is param 'x', which alone holds more}}
func.func @negative_one_tensor_past_the_bound(%x: tensor<2305843009213693952xf32> {mt.param = "x"}) -> (tensor<2305843009213693952xf32> {mt.output = "loss"}) {
  %y = mt.scale %x {factor = 2.0 : f64} : tensor<2305843009213693952xf32>
  return %y : tensor<2305843009213693952xf32>
}

// -----

// Two tensors of 3 x 2^58 bytes each: each within the bound, not together.
// expected-error @+1 {{'func.func' op needs more than 2^60 bytes of buffers (the most one arena can plan); the largest is param 'x', of 864691128455135232 bytes}}
func.func @negative_tensors_past_the_bound_together(%x: tensor<216172782113783808xf32> {mt.param = "x"}) -> (tensor<216172782113783808xf32> {mt.output = "loss"}) {
  %y = mt.scale %x {factor = 2.0 : f64} : tensor<216172782113783808xf32>
  return %y : tensor<216172782113783808xf32>
}
