// RUN: megatron-opt %s --mt-lower-to-runtime --split-input-file --verify-diagnostics
//
// A mask element's random index is the elements before its rank's share
// and microbatch plus its place in the share: an attention's masks span
// batch x heads x seq x seq elements, which overflow long before its
// buffers reach the arena's bound. Beyond 2^62 (across every grid axis and
// microbatch) the lowering refuses it instead of wrapping the offsets.

// seq 2^31: 2^62 mask elements for two heads; the buffers are 2^36 bytes.
func.func @negative_attention_masks_past_2_62(%q: tensor<1x2x2147483648x4xf32> {mt.param = "q"}) -> (tensor<1x2x2147483648x4xf32> {mt.output = "loss"}) {
  // expected-error @+1 {{'mt.attention' op draws random masks over more than 2^62 elements across its ranks and microbatches: their random indices would wrap}}
  %a = mt.attention %q, %q, %q {dropout = 1.0e-01 : f64, rng_stream = 0 : i64} : tensor<1x2x2147483648x4xf32>
  return %a : tensor<1x2x2147483648x4xf32>
}

// -----

// A dropout of 2^57 elements, past the bound over 64 microbatches.
func.func @negative_dropout_masks_past_2_62_over_microbatches(%x: tensor<144115188075855872xbf16> {mt.param = "x"}) -> (tensor<144115188075855872xbf16> {mt.output = "loss"}) {
  // expected-error @+1 {{'mt.dropout' op draws random masks over more than 2^62 elements across its ranks and microbatches: their random indices would wrap}}
  %y = mt.dropout %x {probability = 1.0e-01 : f64, rng_stream = 0 : i64, mt.microbatch = 1 : i64, mt.microbatches = 64 : i64} : tensor<144115188075855872xbf16>
  return %y : tensor<144115188075855872xbf16>
}

// -----

// Within the bound: lowered.
func.func @attention_masks_within_the_bound(%q: tensor<1x2x8x4xf32> {mt.param = "q"}) -> (tensor<1x2x8x4xf32> {mt.output = "loss"}) {
  %a = mt.attention %q, %q, %q {dropout = 1.0e-01 : f64, rng_stream = 0 : i64} : tensor<1x2x8x4xf32>
  return %a : tensor<1x2x8x4xf32>
}
