// RUN: megatron-opt %s --split-input-file --verify-diagnostics

// Every verifier message of the mt ops and of the mt dialect's attributes,
// one per split, plus the type constraints that ODS generates.

//===----------------------------------------------------------------------===//
// Type constraints generated from ODS
//===----------------------------------------------------------------------===//

// An integer tensor is not a float tensor.

func.func @negative_gelu_integer(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'mt.gelu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<4xi32>'}}
  %y = mt.gelu %x : tensor<4xi32>
  return %y : tensor<4xi32>
}

// -----

// A dynamically shaped tensor is rejected.

func.func @negative_gelu_dynamic(%x: tensor<?xf32>) -> tensor<?xf32> {
  // expected-error @+1 {{'mt.gelu' op operand #0 must be statically shaped tensor of 32-bit float or bfloat16 type or 16-bit float values, but got 'tensor<?xf32>'}}
  %y = mt.gelu %x : tensor<?xf32>
  return %y : tensor<?xf32>
}

// -----

// Token ids must be integers.

func.func @negative_embedding_float_ids(%table: tensor<64x16xf32>, %ids: tensor<8xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'mt.embedding' op operand #1 must be statically shaped tensor of 32-bit signless integer or 64-bit signless integer values, but got 'tensor<8xf32>'}}
  %x = mt.embedding %table, %ids : (tensor<64x16xf32>, tensor<8xf32>) -> tensor<8x16xf32>
  return %x : tensor<8x16xf32>
}

// -----

// The loss is an f32 scalar whatever the logits' type.

func.func @negative_cross_entropy_bf16_loss(%logits: tensor<2x8x64xbf16>, %labels: tensor<2x8xi32>) -> tensor<bf16> {
  // expected-error @+1 {{'mt.cross_entropy' op result #0 must be statically shaped tensor of 32-bit float values, but got 'tensor<bf16>'}}
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x8x64xbf16>, tensor<2x8xi32>) -> tensor<bf16>
  return %loss : tensor<bf16>
}

// -----

// mt.dropout requires its probability attribute.

func.func @negative_dropout_no_probability(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.dropout' op requires attribute 'probability'}}
  %y = mt.dropout %x : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// mt.layer_norm weight and bias have one type.

func.func @negative_layer_norm_bias_type(%x: tensor<2x16xf32>, %w: tensor<16xf32>, %b: tensor<16xbf16>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.layer_norm' op failed to verify that all of {weight, bias} have same type}}
  %y = "mt.layer_norm"(%x, %w, %b) : (tensor<2x16xf32>, tensor<16xf32>, tensor<16xbf16>) -> tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// mt.add operands and result have one type.

func.func @negative_add_types(%x: tensor<4xf32>, %h: tensor<4xf16>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.add' op requires the same type for all operands and results}}
  %y = "mt.add"(%x, %h) : (tensor<4xf32>, tensor<4xf16>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// mt.attention's keys and values match the query but for their heads.

func.func @negative_attention_types(%q: tensor<1x2x8x4xf32>, %k: tensor<1x2x4x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'mt.attention' op key dimension 2 is 4 but query dimension 2 is 8}}
  %a = "mt.attention"(%q, %k, %k) : (tensor<1x2x8x4xf32>, tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x8x4xf32>
  return %a : tensor<1x2x8x4xf32>
}

// -----

func.func @negative_attention_value_type(%q: tensor<1x4x8x4xf32>, %k: tensor<1x2x8x4xf32>, %v: tensor<1x4x8x4xf32>) -> tensor<1x4x8x4xf32> {
  // expected-error @+1 {{'mt.attention' op failed to verify that all of {key, value} have same type}}
  %a = "mt.attention"(%q, %k, %v) : (tensor<1x4x8x4xf32>, tensor<1x2x8x4xf32>, tensor<1x4x8x4xf32>) -> tensor<1x4x8x4xf32>
  return %a : tensor<1x4x8x4xf32>
}

// -----

// Grouped-query attention: the key heads divide the query heads.

func.func @negative_attention_groups(%q: tensor<1x4x8x4xf32>, %k: tensor<1x3x8x4xf32>) -> tensor<1x4x8x4xf32> {
  // expected-error @+1 {{'mt.attention' op key and value have 3 heads, which do not divide the query's 4}}
  %a = mt.attention %q, %k, %k : tensor<1x4x8x4xf32>, tensor<1x3x8x4xf32>
  return %a : tensor<1x4x8x4xf32>
}

// -----

func.func @negative_attention_grad_groups(%q: tensor<1x4x8x4xf32>, %k: tensor<1x3x8x4xf32>) -> tensor<1x4x8x4xf32> {
  // expected-error @+1 {{'mt.attention_grad' op key and value have 3 heads, which do not divide the query's 4}}
  %dq, %dk, %dv = mt.attention_grad %q, %q, %k, %k : tensor<1x4x8x4xf32>, tensor<1x3x8x4xf32>
  return %dq : tensor<1x4x8x4xf32>
}

// -----

// A sliding window sees at least the query's own key.

func.func @negative_attention_window(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'mt.attention' op window must be at least 1, got 0}}
  %a = mt.attention %q, %q, %q {window = 0 : i64} : tensor<1x2x8x4xf32>
  return %a : tensor<1x2x8x4xf32>
}

// -----

// A soft cap of the scores (Gemma 2's) is positive: the scores are
// divided by it.

func.func @negative_attention_softcap(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'mt.attention' op softcap -5.000000e+01 is not a positive single-precision number}}
  %a = mt.attention %q, %q, %q {softcap = -50.0 : f64} : tensor<1x2x8x4xf32>
  return %a : tensor<1x2x8x4xf32>
}

// -----

func.func @negative_qkv_attention_softcap(%qkv: tensor<1x8x24xf32>) -> (tensor<1x8x8xf32>, tensor<1x2x8xf32>) {
  // expected-error @+1 {{'mt.qkv_attention' op softcap 0.000000e+00 is not a positive single-precision number}}
  %a, %s = mt.qkv_attention %qkv {heads = 2 : i64, softcap = 0.0 : f64} : tensor<1x8x24xf32> -> tensor<1x8x8xf32>, tensor<1x2x8xf32>
  return %a, %s : tensor<1x8x8xf32>, tensor<1x2x8xf32>
}

// -----

// A cap beyond float32 would be infinite in the kernels.

func.func @negative_attention_grad_softcap(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'mt.attention_grad' op softcap 1.000000e+300 is not a positive single-precision number}}
  %dq, %dk, %dv = mt.attention_grad %q, %q, %q, %q {softcap = 1.0e300 : f64} : tensor<1x2x8x4xf32>
  return %dq : tensor<1x2x8x4xf32>
}

// -----

// mt.softcap's and mt.softcap_grad's cap is a positive float: the kernels
// divide by it in float32.

func.func @negative_softcap_zero(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'mt.softcap' op cap 0.000000e+00 is not a positive single-precision number}}
  %y = mt.softcap %x {cap = 0.0 : f64} : tensor<2x4xf32>
  return %y : tensor<2x4xf32>
}

// -----

func.func @negative_softcap_grad_huge(%dy: tensor<2x4xf32>, %x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'mt.softcap_grad' op cap 1.000000e+300 is not a positive single-precision number}}
  %dx = mt.softcap_grad %dy, %x {cap = 1.0e300 : f64} : tensor<2x4xf32>
  return %dx : tensor<2x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.embedding
//===----------------------------------------------------------------------===//

// The embedding table has rank 2.

func.func @negative_embedding_table_rank(%table: tensor<4x64x16xf32>, %ids: tensor<8xi32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'mt.embedding' op table must have rank 2 ([vocab, hidden]), got rank 3}}
  %x = mt.embedding %table, %ids : (tensor<4x64x16xf32>, tensor<8xi32>) -> tensor<8x16xf32>
  return %x : tensor<8x16xf32>
}

// -----

// The embedding result has the ids' rank plus one.

func.func @negative_embedding_result_rank(%table: tensor<64x16xf32>, %ids: tensor<2x8xi32>) -> tensor<16x16xf32> {
  // expected-error @+1 {{'mt.embedding' op result must have rank 3 (the ids' rank plus hidden), got rank 2}}
  %x = mt.embedding %table, %ids : (tensor<64x16xf32>, tensor<2x8xi32>) -> tensor<16x16xf32>
  return %x : tensor<16x16xf32>
}

// -----

// The embedding result's leading dimensions are those of the ids.

func.func @negative_embedding_ids_dim(%table: tensor<64x16xf32>, %ids: tensor<2x8xi32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'mt.embedding' op result dimension 1 is 4 but ids dimension 1 is 8}}
  %x = mt.embedding %table, %ids : (tensor<64x16xf32>, tensor<2x8xi32>) -> tensor<2x4x16xf32>
  return %x : tensor<2x4x16xf32>
}

// -----

// The embedding result's last dimension is the table's hidden size.

func.func @negative_embedding_hidden(%table: tensor<64x16xf32>, %ids: tensor<2x8xi32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'mt.embedding' op result dimension 2 is 32 but table dimension 1 is 16}}
  %x = mt.embedding %table, %ids : (tensor<64x16xf32>, tensor<2x8xi32>) -> tensor<2x8x32xf32>
  return %x : tensor<2x8x32xf32>
}

// -----

// The embedding result has the table's element type.

func.func @negative_embedding_element_type(%table: tensor<64x16xf32>, %ids: tensor<8xi64>) -> tensor<8x16xbf16> {
  // expected-error @+1 {{'mt.embedding' op result element type 'bf16' does not match table element type 'f32'}}
  %x = mt.embedding %table, %ids : (tensor<64x16xf32>, tensor<8xi64>) -> tensor<8x16xbf16>
  return %x : tensor<8x16xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// mt.position_embedding
//===----------------------------------------------------------------------===//

// The position table has rank 2.

func.func @negative_position_embedding_table_rank(%table: tensor<32xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'mt.position_embedding' op table must have rank 2 ([positions, hidden]), got rank 1}}
  %pos = mt.position_embedding %table : tensor<32xf32> -> tensor<8x16xf32>
  return %pos : tensor<8x16xf32>
}

// -----

// The position embedding result has rank 2.

func.func @negative_position_embedding_result_rank(%table: tensor<32x16xf32>) -> tensor<1x8x16xf32> {
  // expected-error @+1 {{'mt.position_embedding' op result must have rank 2 ([seq, hidden]), got rank 3}}
  %pos = mt.position_embedding %table : tensor<32x16xf32> -> tensor<1x8x16xf32>
  return %pos : tensor<1x8x16xf32>
}

// -----

// The sequence may not be longer than the table has positions.

func.func @negative_position_embedding_too_long(%table: tensor<32x16xf32>) -> tensor<64x16xf32> {
  // expected-error @+1 {{'mt.position_embedding' op result dimension 0 (sequence length) is 64, more than the 32 positions of table dimension 0}}
  %pos = mt.position_embedding %table : tensor<32x16xf32> -> tensor<64x16xf32>
  return %pos : tensor<64x16xf32>
}

// -----

// The position embedding result has the table's hidden size.

func.func @negative_position_embedding_hidden(%table: tensor<32x16xf32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'mt.position_embedding' op result dimension 1 is 8 but table dimension 1 is 16}}
  %pos = mt.position_embedding %table : tensor<32x16xf32> -> tensor<8x8xf32>
  return %pos : tensor<8x8xf32>
}

// -----

// The position embedding result has the table's element type.

func.func @negative_position_embedding_element_type(%table: tensor<32x16xbf16>) -> tensor<8x16xf16> {
  // expected-error @+1 {{'mt.position_embedding' op result element type 'f16' does not match table element type 'bf16'}}
  %pos = mt.position_embedding %table : tensor<32x16xbf16> -> tensor<8x16xf16>
  return %pos : tensor<8x16xf16>
}

// -----

//===----------------------------------------------------------------------===//
// mt.layer_norm
//===----------------------------------------------------------------------===//

// mt.layer_norm needs a dimension to normalize over.

func.func @negative_layer_norm_scalar(%x: tensor<f32>, %w: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{'mt.layer_norm' op input must have rank >= 1, got rank 0}}
  %y = mt.layer_norm %x, %w, %w : tensor<f32>, tensor<1xf32>
  return %y : tensor<f32>
}

// -----

// The layer norm weight has rank 1.

func.func @negative_layer_norm_weight_rank(%x: tensor<2x16xf32>, %w: tensor<2x16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.layer_norm' op weight must have rank 1 ([normalized]), got rank 2}}
  %y = mt.layer_norm %x, %w, %w : tensor<2x16xf32>, tensor<2x16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// The layer norm weight has one element per entry of the last input dimension.

func.func @negative_layer_norm_weight_size(%x: tensor<2x16xf32>, %w: tensor<8xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.layer_norm' op weight dimension 0 is 8 but input dimension 1 is 16}}
  %y = mt.layer_norm %x, %w, %w : tensor<2x16xf32>, tensor<8xf32>
  return %y : tensor<2x16xf32>
}

// -----

// The layer norm weight has the input's element type.

func.func @negative_layer_norm_weight_element_type(%x: tensor<2x16xbf16>, %w: tensor<16xf32>) -> tensor<2x16xbf16> {
  // expected-error @+1 {{'mt.layer_norm' op weight element type 'f32' does not match input element type 'bf16'}}
  %y = mt.layer_norm %x, %w, %w : tensor<2x16xbf16>, tensor<16xf32>
  return %y : tensor<2x16xbf16>
}

// -----

// The layer norm epsilon is positive.

func.func @negative_layer_norm_epsilon(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.layer_norm' op epsilon must be positive and finite, got 0.000000e+00}}
  %y = mt.layer_norm %x, %w, %w {epsilon = 0.0 : f64} : tensor<2x16xf32>, tensor<16xf32>
  return %y : tensor<2x16xf32>
}

// -----

// ... and finite: 2e702 parses as infinity, which compiled and then the
// artifact (JSON) could not hold.

func.func @negative_layer_norm_epsilon_infinite(%x: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.layer_norm' op epsilon must be positive and finite, got INF}}
  %y = mt.layer_norm %x, %w, %w {epsilon = 2.0e702 : f64} : tensor<2x16xf32>, tensor<16xf32>
  return %y : tensor<2x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.bias_add
//===----------------------------------------------------------------------===//

// The bias may not have a higher rank than the input.

func.func @negative_bias_add_rank(%x: tensor<16xf32>, %b: tensor<2x16xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'mt.bias_add' op bias must have rank between 1 and the input rank 1, got rank 2}}
  %y = mt.bias_add %x, %b : tensor<16xf32>, tensor<2x16xf32>
  return %y : tensor<16xf32>
}

// -----

// A scalar bias is rejected.

func.func @negative_bias_add_scalar(%x: tensor<2x16xf32>, %b: tensor<f32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.bias_add' op bias must have rank between 1 and the input rank 2, got rank 0}}
  %y = mt.bias_add %x, %b : tensor<2x16xf32>, tensor<f32>
  return %y : tensor<2x16xf32>
}

// -----

// The bias shape equals the trailing dimensions of the input.

func.func @negative_bias_add_shape(%x: tensor<2x8x16xf32>, %b: tensor<4x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.bias_add' op bias dimension 0 is 4 but input dimension 1 is 8}}
  %y = mt.bias_add %x, %b : tensor<2x8x16xf32>, tensor<4x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The bias has the input's element type.

func.func @negative_bias_add_element_type(%x: tensor<2x16xf32>, %b: tensor<16xf16>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.bias_add' op bias element type 'f16' does not match input element type 'f32'}}
  %y = mt.bias_add %x, %b : tensor<2x16xf32>, tensor<16xf16>
  return %y : tensor<2x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.dropout
//===----------------------------------------------------------------------===//

// A dropout probability of 1 would drop everything.

func.func @negative_dropout_probability_one(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.dropout' op probability must be in [0, 1), got 1.000000e+00}}
  %y = mt.dropout %x {probability = 1.0 : f64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A negative dropout probability is rejected.

func.func @negative_dropout_probability_negative(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.dropout' op probability must be in [0, 1), got -1.000000e-01}}
  %y = mt.dropout %x {probability = -0.1 : f64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.matmul
//===----------------------------------------------------------------------===//

// The matmul lhs is at least a matrix.

func.func @negative_matmul_lhs_rank(%x: tensor<16xf32>, %w: tensor<16x4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.matmul' op lhs must have rank >= 2, got rank 1}}
  %y = mt.matmul %x, %w : (tensor<16xf32>, tensor<16x4xf32>) -> tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The matmul rhs is a matrix or has the lhs rank.

func.func @negative_matmul_rhs_rank(%x: tensor<2x4x8x16xf32>, %w: tensor<4x16x8xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{'mt.matmul' op rhs must have rank 2 (broadcast over batch dimensions) or the lhs rank 4, got rank 3}}
  %y = mt.matmul %x, %w : (tensor<2x4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<2x4x8x8xf32>
  return %y : tensor<2x4x8x8xf32>
}

// -----

// The matmul result has the lhs rank.

func.func @negative_matmul_result_rank(%x: tensor<2x8x16xf32>, %w: tensor<16x4xf32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'mt.matmul' op result must have the lhs rank 3, got rank 2}}
  %y = mt.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<16x4xf32>
  return %y : tensor<16x4xf32>
}

// -----

// The batch dimensions of a batched matmul's operands are equal.

func.func @negative_matmul_rhs_batch(%q: tensor<2x4x8x16xf32>, %k: tensor<2x2x8x16xf32>) -> tensor<2x4x8x8xf32> {
  // expected-error @+1 {{'mt.matmul' op rhs batch dimension 1 is 2 but lhs dimension 1 is 4}}
  %s = mt.matmul %q, %k transpose_b : (tensor<2x4x8x16xf32>, tensor<2x2x8x16xf32>) -> tensor<2x4x8x8xf32>
  return %s : tensor<2x4x8x8xf32>
}

// -----

// The matmul result has the lhs batch dimensions.

func.func @negative_matmul_result_batch(%x: tensor<2x8x16xf32>, %w: tensor<16x4xf32>) -> tensor<3x8x4xf32> {
  // expected-error @+1 {{'mt.matmul' op result dimension 0 is 3 but lhs dimension 0 is 2}}
  %y = mt.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<3x8x4xf32>
  return %y : tensor<3x8x4xf32>
}

// -----

// The contraction dimensions of a plain matmul agree.

func.func @negative_matmul_contraction(%x: tensor<2x8x16xf32>, %w: tensor<8x4xf32>) -> tensor<2x8x4xf32> {
  // expected-error @+1 {{'mt.matmul' op contraction dimensions differ: lhs dimension 2 is 16 but rhs dimension 0 is 8}}
  %y = mt.matmul %x, %w : (tensor<2x8x16xf32>, tensor<8x4xf32>) -> tensor<2x8x4xf32>
  return %y : tensor<2x8x4xf32>
}

// -----

// With transpose_a and transpose_b the contraction uses the other dimensions
// and the message names them.

func.func @negative_matmul_contraction_transposed(%a: tensor<16x8xf32>, %b: tensor<4x8xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'mt.matmul' op contraction dimensions differ: lhs dimension 0 is 16 but rhs dimension 1 is 8}}
  %y = mt.matmul %a, %b transpose_a transpose_b : (tensor<16x8xf32>, tensor<4x8xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// The matmul result rows are the lhs rows.

func.func @negative_matmul_result_rows(%x: tensor<2x8x16xf32>, %w: tensor<16x4xf32>) -> tensor<2x6x4xf32> {
  // expected-error @+1 {{'mt.matmul' op result dimension 1 is 6 but lhs dimension 1 is 8}}
  %y = mt.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x4xf32>) -> tensor<2x6x4xf32>
  return %y : tensor<2x6x4xf32>
}

// -----

// The matmul result columns are the rhs columns, here rhs rows under
// transpose_b.

func.func @negative_matmul_result_cols(%x: tensor<2x8x16xf32>, %wte: tensor<64x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.matmul' op result dimension 2 is 16 but rhs dimension 0 is 64}}
  %y = mt.matmul %x, %wte transpose_b : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The matmul operands have one element type.

func.func @negative_matmul_rhs_element_type(%x: tensor<8x16xf32>, %w: tensor<16x4xbf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'mt.matmul' op rhs element type 'bf16' does not match lhs element type 'f32'}}
  %y = mt.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xbf16>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// The matmul result has the operands' element type, or f32 where they are
// 16-bit (a widened gradient); nothing else.

func.func @negative_matmul_result_element_type(%x: tensor<8x16xbf16>, %w: tensor<16x4xbf16>) -> tensor<8x4xf16> {
  // expected-error @+1 {{'mt.matmul' op result element type 'f16' does not match lhs element type 'bf16'}}
  %y = mt.matmul %x, %w : (tensor<8x16xbf16>, tensor<16x4xbf16>) -> tensor<8x4xf16>
  return %y : tensor<8x4xf16>
}

// -----

func.func @negative_matmul_narrowed_result(%x: tensor<8x16xf32>, %w: tensor<16x4xf32>) -> tensor<8x4xbf16> {
  // expected-error @+1 {{'mt.matmul' op result element type 'bf16' does not match lhs element type 'f32'}}
  %y = mt.matmul %x, %w : (tensor<8x16xf32>, tensor<16x4xf32>) -> tensor<8x4xbf16>
  return %y : tensor<8x4xbf16>
}

// -----

// A widened bias gradient: f32 from bf16; not f16.

func.func @negative_bias_grad_element_type(%dy: tensor<8x4xbf16>) -> tensor<4xf16> {
  // expected-error @+1 {{'mt.bias_add_grad' op grad_bias element type 'f16' does not match grad_output element type 'bf16'}}
  %db = mt.bias_add_grad %dy : tensor<8x4xbf16> -> tensor<4xf16>
  return %db : tensor<4xf16>
}

// -----

// The matmul_bias result keeps its operands' type: its epilogue's bias
// is of the result's type.

func.func @negative_matmul_bias_widened(%x: tensor<8x16xbf16>, %w: tensor<16x4xbf16>, %b: tensor<4xbf16>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'mt.matmul_bias' op result element type 'f32' does not match lhs element type 'bf16'}}
  %y = mt.matmul_bias %x, %w, %b : (tensor<8x16xbf16>, tensor<16x4xbf16>, tensor<4xbf16>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.split_heads
//===----------------------------------------------------------------------===//

// mt.split_heads has at least one result (reachable in the generic form).

func.func @negative_split_heads_no_results(%x: tensor<2x8x16xf32>) {
  // expected-error @+1 {{'mt.split_heads' op must have at least one result}}
  "mt.split_heads"(%x) : (tensor<2x8x16xf32>) -> ()
  return
}

// -----

// The split_heads input has rank 3.

func.func @negative_split_heads_input_rank(%x: tensor<16x16xf32>) -> tensor<2x4x8x4xf32> {
  // expected-error @+1 {{'mt.split_heads' op input must have rank 3 ([batch, seq, chunks * heads * head_dim]), got rank 2}}
  %h = mt.split_heads %x : tensor<16x16xf32> -> tensor<2x4x8x4xf32>
  return %h : tensor<2x4x8x4xf32>
}

// -----

// The split_heads results have rank 4.

func.func @negative_split_heads_result_rank(%x: tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'mt.split_heads' op result must have rank 4 ([batch, heads, seq, head_dim]), got rank 3}}
  %h = mt.split_heads %x : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  return %h : tensor<2x8x16xf32>
}

// -----

// All split_heads results have one type.

func.func @negative_split_heads_result_types(%qkv: tensor<2x8x48xf32>) -> tensor<2x4x8x4xf32> {
  // expected-error @+1 {{'mt.split_heads' op result #2 has type 'tensor<2x2x8x8xf32>' but result #0 has type 'tensor<2x4x8x4xf32>'}}
  %q, %k, %v = mt.split_heads %qkv : tensor<2x8x48xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x2x8x8xf32>
  return %q : tensor<2x4x8x4xf32>
}

// -----

// The split_heads batch dimension is the input's.

func.func @negative_split_heads_batch(%x: tensor<2x8x16xf32>) -> tensor<1x4x8x4xf32> {
  // expected-error @+1 {{'mt.split_heads' op result dimension 0 is 1 but input dimension 0 is 2}}
  %h = mt.split_heads %x : tensor<2x8x16xf32> -> tensor<1x4x8x4xf32>
  return %h : tensor<1x4x8x4xf32>
}

// -----

// The split_heads sequence dimension moves from input dimension 1 to result
// dimension 2.

func.func @negative_split_heads_seq(%x: tensor<2x8x16xf32>) -> tensor<2x8x4x4xf32> {
  // expected-error @+1 {{'mt.split_heads' op result dimension 2 is 4 but input dimension 1 is 8}}
  %h = mt.split_heads %x : tensor<2x8x16xf32> -> tensor<2x8x4x4xf32>
  return %h : tensor<2x8x4x4xf32>
}

// -----

// The split_heads results have the input's element type.

func.func @negative_split_heads_element_type(%x: tensor<2x8x16xf32>) -> tensor<2x4x8x4xf16> {
  // expected-error @+1 {{'mt.split_heads' op result element type 'f16' does not match input element type 'f32'}}
  %h = mt.split_heads %x : tensor<2x8x16xf32> -> tensor<2x4x8x4xf16>
  return %h : tensor<2x4x8x4xf16>
}

// -----

// The input hidden size is results x heads x head_dim.

func.func @negative_split_heads_count(%qkv: tensor<2x8x48xf32>) -> tensor<2x4x8x4xf32> {
  // expected-error @+1 {{'mt.split_heads' op input dimension 2 is 48 but 2 results x 4 heads x 4 head_dim is 32}}
  %q, %k = mt.split_heads %qkv : tensor<2x8x48xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
  return %q : tensor<2x4x8x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.merge_heads
//===----------------------------------------------------------------------===//

// mt.merge_heads has at least one input (reachable in the generic form).

func.func @negative_merge_heads_no_inputs() -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.merge_heads' op must have at least one input}}
  %y = "mt.merge_heads"() : () -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// All merge_heads inputs have one type.

func.func @negative_merge_heads_input_types(%q: tensor<2x4x8x4xf32>, %v: tensor<2x2x8x8xf32>) -> tensor<2x8x48xf32> {
  // expected-error @+1 {{'mt.merge_heads' op input #2 has type 'tensor<2x2x8x8xf32>' but input #0 has type 'tensor<2x4x8x4xf32>'}}
  %y = mt.merge_heads %q, %q, %v : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x2x8x8xf32> -> tensor<2x8x48xf32>
  return %y : tensor<2x8x48xf32>
}

// -----

// The merge_heads inputs have rank 4.

func.func @negative_merge_heads_input_rank(%a: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.merge_heads' op input must have rank 4 ([batch, heads, seq, head_dim]), got rank 3}}
  %y = mt.merge_heads %a : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// The merge_heads result has rank 3.

func.func @negative_merge_heads_result_rank(%a: tensor<2x4x8x4xf32>) -> tensor<16x16xf32> {
  // expected-error @+1 {{'mt.merge_heads' op result must have rank 3 ([batch, seq, chunks * heads * head_dim]), got rank 2}}
  %y = mt.merge_heads %a : tensor<2x4x8x4xf32> -> tensor<16x16xf32>
  return %y : tensor<16x16xf32>
}

// -----

// The merge_heads batch dimension is the input's.

func.func @negative_merge_heads_batch(%a: tensor<2x4x8x4xf32>) -> tensor<4x8x16xf32> {
  // expected-error @+1 {{'mt.merge_heads' op result dimension 0 is 4 but input dimension 0 is 2}}
  %y = mt.merge_heads %a : tensor<2x4x8x4xf32> -> tensor<4x8x16xf32>
  return %y : tensor<4x8x16xf32>
}

// -----

// The merge_heads sequence dimension moves from input dimension 2 to result
// dimension 1.

func.func @negative_merge_heads_seq(%a: tensor<2x4x8x4xf32>) -> tensor<2x4x32xf32> {
  // expected-error @+1 {{'mt.merge_heads' op result dimension 1 is 4 but input dimension 2 is 8}}
  %y = mt.merge_heads %a : tensor<2x4x8x4xf32> -> tensor<2x4x32xf32>
  return %y : tensor<2x4x32xf32>
}

// -----

// The merge_heads result has the input's element type.

func.func @negative_merge_heads_element_type(%a: tensor<2x4x8x4xbf16>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.merge_heads' op result element type 'f32' does not match input element type 'bf16'}}
  %y = mt.merge_heads %a : tensor<2x4x8x4xbf16> -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// With one input the merged hidden size is heads x head_dim.

func.func @negative_merge_heads_hidden(%a: tensor<2x4x8x4xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'mt.merge_heads' op result dimension 2 is 32 but 4 heads x 4 head_dim is 16}}
  %y = mt.merge_heads %a : tensor<2x4x8x4xf32> -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

// With several inputs the merged hidden size is inputs x heads x head_dim.

func.func @negative_merge_heads_hidden_chunks(%q: tensor<2x4x8x4xf32>) -> tensor<2x8x32xf32> {
  // expected-error @+1 {{'mt.merge_heads' op result dimension 2 is 32 but 3 inputs x 4 heads x 4 head_dim is 48}}
  %y = mt.merge_heads %q, %q, %q : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x8x32xf32>
  return %y : tensor<2x8x32xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.attention
//===----------------------------------------------------------------------===//

// Attention operands have rank 4.

func.func @negative_attention_rank(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.attention' op query must have rank 4 ([batch, heads, seq, head_dim]), got rank 3}}
  %a = mt.attention %x, %x, %x : tensor<2x8x16xf32>
  return %a : tensor<2x8x16xf32>
}

// -----

// The attention dropout probability is in [0, 1).

func.func @negative_attention_dropout(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'mt.attention' op dropout must be in [0, 1), got 1.500000e+00}}
  %a = mt.attention %q, %q, %q {dropout = 1.5 : f64} : tensor<1x2x8x4xf32>
  return %a : tensor<1x2x8x4xf32>
}

// -----

// The attention scale is positive.

func.func @negative_attention_scale(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'mt.attention' op scale must be positive and finite, got -5.000000e-01}}
  %a = mt.attention %q, %q, %q {scale = -0.5 : f64} : tensor<1x2x8x4xf32>
  return %a : tensor<1x2x8x4xf32>
}

// -----

func.func @negative_attention_scale_infinite(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'mt.attention' op scale must be positive and finite, got INF}}
  %a = mt.attention %q, %q, %q {scale = 2.0e702 : f64} : tensor<1x2x8x4xf32>
  return %a : tensor<1x2x8x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.layer_norm_grad, mt.rms_norm_grad with row_block
//===----------------------------------------------------------------------===//

// With row_block, the parameter gradients are f32 partial sums, one row per
// block of rows: 8 rows in blocks of 4 are 2 rows.

func.func @negative_norm_grad_partial_rows(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'mt.layer_norm_grad' op grad_weight has type 'tensor<3x8xf32>' but with row_block 4 it holds the partial sums of 8 rows: 'tensor<2x8xf32>'}}
  %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w {row_block = 4 : i64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<3x8xf32>
  return %dw : tensor<3x8xf32>
}

// -----

func.func @negative_norm_grad_partial_bf16(%dy: tensor<2x4x8xbf16>, %x: tensor<2x4x8xbf16>, %w: tensor<8xbf16>) -> tensor<2x8xbf16> {
  // expected-error @+1 {{'mt.rms_norm_grad' op grad_weight has type 'tensor<2x8xbf16>' but with row_block 4 it holds the partial sums of 8 rows: 'tensor<2x8xf32>'}}
  %dx, %dw = mt.rms_norm_grad %dy, %x, %w {row_block = 4 : i64} : tensor<2x4x8xbf16>, tensor<8xbf16> -> tensor<2x8xbf16>
  return %dw : tensor<2x8xbf16>
}

// -----

func.func @negative_norm_grad_row_block(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mt.layer_norm_grad' op row_block must be positive, got 0}}
  %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w {row_block = 0 : i64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<8xf32>
  return %dw : tensor<8xf32>
}

// -----

// Without row_block the gradients are shaped as the weight.

func.func @negative_norm_grad_whole(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  // expected-error @+1 {{'mt.layer_norm_grad' op grad_weight has type 'tensor<2x8xf32>' but the weight has 'tensor<8xf32>'}}
  %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %dw : tensor<2x8xf32>
}

// -----

// A norm's backward in a row fusion writes partial sums: it needs its
// row_block, and it comes first.

func.func @negative_norm_grad_fusion_block(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %r = mt.fusion ins(%dy, %x, %w : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>) {
  ^bb0(%a: tensor<2x4x8xf32>, %b: tensor<2x4x8xf32>, %c: tensor<8xf32>):
    // expected-error @+1 {{'mt.layer_norm_grad' op needs a row_block in a row fusion: the kernel writes its parameter gradients as partial sums per block of rows}}
    %dx, %dw, %db = mt.layer_norm_grad %a, %b, %c : tensor<2x4x8xf32>, tensor<8xf32>
    mt.yield %dx : tensor<2x4x8xf32>
  }
  return %r : tensor<2x4x8xf32>
}

// -----

func.func @negative_norm_grad_fusion_partial_read(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x8xf32> {
  %r = mt.fusion ins(%dy, %x, %w : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x8xf32>) {
  ^bb0(%a: tensor<2x4x8xf32>, %b: tensor<2x4x8xf32>, %c: tensor<8xf32>):
    %dx, %dw, %db = mt.layer_norm_grad %a, %b, %c {row_block = 4 : i64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    // expected-error @+1 {{'mt.gelu' op reads a parameter gradient of the norm's backward: in a row fusion those are partial sums per block of rows}}
    %g = mt.gelu %dw : tensor<2x8xf32>
    mt.yield %g : tensor<2x8xf32>
  }
  return %r : tensor<2x8xf32>
}

// -----

func.func @negative_norm_grad_fusion_first(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %w: tensor<8xf32>) -> tensor<2x4x8xf32> {
  %r = mt.fusion ins(%dy, %x, %w : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>) -> (tensor<2x4x8xf32>) {
  ^bb0(%a: tensor<2x4x8xf32>, %b: tensor<2x4x8xf32>, %c: tensor<8xf32>):
    %g = mt.gelu %a : tensor<2x4x8xf32>
    // expected-error @+1 {{'mt.layer_norm_grad' op must begin its row fusion}}
    %dx, %dw, %db = mt.layer_norm_grad %g, %b, %c {row_block = 4 : i64} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
    mt.yield %dx : tensor<2x4x8xf32>
  }
  return %r : tensor<2x4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.qkv_attention, mt.qkv_attention_grad
//===----------------------------------------------------------------------===//

// The fused QKV tensor holds three times the merged width.

func.func @negative_qkv_attention_width(%qkv: tensor<2x8x40xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.qkv_attention' op qkv dimension 2 is 40 but 3 x result dimension 2 is 48}}
  %a, %lse = mt.qkv_attention %qkv {heads = 4 : i64} : tensor<2x8x40xf32> -> tensor<2x8x16xf32>, tensor<2x4x8xf32>
  return %a : tensor<2x8x16xf32>
}

// -----

// The merged width splits into whole heads.

func.func @negative_qkv_attention_heads(%qkv: tensor<2x8x48xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.qkv_attention' op result dimension 2 (16) is not a multiple of 3 heads}}
  %a, %lse = mt.qkv_attention %qkv {heads = 3 : i64} : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x3x8xf32>
  return %a : tensor<2x8x16xf32>
}

// -----

func.func @negative_qkv_attention_no_heads(%qkv: tensor<2x8x48xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.qkv_attention' op heads must be positive, got 0}}
  %a, %lse = mt.qkv_attention %qkv {heads = 0 : i64} : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x1x8xf32>
  return %a : tensor<2x8x16xf32>
}

// -----

// The stats hold one log-sum-exp per query row of each head.

func.func @negative_qkv_attention_stats_heads(%qkv: tensor<2x8x48xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.qkv_attention' op stats dimension 1 is 2 but there are 4 heads}}
  %a, %lse = mt.qkv_attention %qkv {heads = 4 : i64} : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x2x8xf32>
  return %a : tensor<2x8x16xf32>
}

// -----

func.func @negative_qkv_attention_stats_seq(%qkv: tensor<2x8x48xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.qkv_attention' op stats dimension 2 is 4 but qkv dimension 1 is 8}}
  %a, %lse = mt.qkv_attention %qkv {heads = 4 : i64} : tensor<2x8x48xf32> -> tensor<2x8x16xf32>, tensor<2x4x4xf32>
  return %a : tensor<2x8x16xf32>
}

// -----

// The stats stay f32 when the activations are 16-bit.

func.func @negative_qkv_attention_stats_bf16(%qkv: tensor<2x8x48xbf16>) -> tensor<2x8x16xbf16> {
  // expected-error @+1 {{'mt.qkv_attention' op result #1 must be statically shaped tensor of 32-bit float values}}
  %a, %lse = mt.qkv_attention %qkv {heads = 4 : i64} : tensor<2x8x48xbf16> -> tensor<2x8x16xbf16>, tensor<2x4x8xbf16>
  return %a : tensor<2x8x16xbf16>
}

// -----

// The output gradient has the batch and sequence of the QKV tensor.

func.func @negative_qkv_attention_grad_seq(%dy: tensor<2x4x16xf32>, %qkv: tensor<2x8x48xf32>, %lse: tensor<2x4x8xf32>) -> tensor<2x8x48xf32> {
  // expected-error @+1 {{'mt.qkv_attention_grad' op grad_output dimension 1 is 4 but qkv dimension 1 is 8}}
  %d = mt.qkv_attention_grad %dy, %qkv, %dy, %lse {heads = 4 : i64} : tensor<2x4x16xf32>, tensor<2x8x48xf32>, tensor<2x4x8xf32>
  return %d : tensor<2x8x48xf32>
}

// -----

func.func @negative_qkv_attention_grad_dropout(%dy: tensor<2x8x16xf32>, %qkv: tensor<2x8x48xf32>, %a: tensor<2x8x16xf32>, %lse: tensor<2x4x8xf32>) -> tensor<2x8x48xf32> {
  // expected-error @+1 {{'mt.qkv_attention_grad' op dropout must be in [0, 1), got 1.000000e+00}}
  %d = mt.qkv_attention_grad %dy, %qkv, %a, %lse {heads = 4 : i64, dropout = 1.0 : f64} : tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<2x4x8xf32>
  return %d : tensor<2x8x48xf32>
}

// -----

func.func @negative_qkv_attention_grad_stats_batch(%dy: tensor<2x8x16xf32>, %qkv: tensor<2x8x48xf32>, %a: tensor<2x8x16xf32>, %lse: tensor<1x4x8xf32>) -> tensor<2x8x48xf32> {
  // expected-error @+1 {{'mt.qkv_attention_grad' op stats dimension 0 is 1 but qkv dimension 0 is 2}}
  %d = mt.qkv_attention_grad %dy, %qkv, %a, %lse {heads = 4 : i64} : tensor<2x8x16xf32>, tensor<2x8x48xf32>, tensor<1x4x8xf32>
  return %d : tensor<2x8x48xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.cross_entropy
//===----------------------------------------------------------------------===//

// Logits have a vocabulary dimension after at least one position dimension.

func.func @negative_cross_entropy_logits_rank(%logits: tensor<64xf32>, %labels: tensor<i32>) -> tensor<f32> {
  // expected-error @+1 {{'mt.cross_entropy' op logits must have rank >= 2 ([positions..., vocab]), got rank 1}}
  %loss = mt.cross_entropy %logits, %labels : (tensor<64xf32>, tensor<i32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Labels have the logits' rank without vocab.

func.func @negative_cross_entropy_labels_rank(%logits: tensor<2x8x64xf32>, %labels: tensor<16xi32>) -> tensor<f32> {
  // expected-error @+1 {{'mt.cross_entropy' op labels must have rank 2 (the logits' rank without vocab), got rank 1}}
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x8x64xf32>, tensor<16xi32>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// Labels have the logits' position dimensions.

func.func @negative_cross_entropy_labels_shape(%logits: tensor<2x8x64xf32>, %labels: tensor<2x4xi64>) -> tensor<f32> {
  // expected-error @+1 {{'mt.cross_entropy' op labels dimension 1 is 4 but logits dimension 1 is 8}}
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x8x64xf32>, tensor<2x4xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.embedding_grad
//===----------------------------------------------------------------------===//

// The embedding gradient table has rank 2.

func.func @negative_embedding_grad_table_rank(%dx: tensor<8x16xf32>, %ids: tensor<8xi32>) -> tensor<1024xf32> {
  // expected-error @+1 {{'mt.embedding_grad' op grad_table must have rank 2 ([vocab, hidden]), got rank 1}}
  %d = mt.embedding_grad %dx, %ids : (tensor<8x16xf32>, tensor<8xi32>) -> tensor<1024xf32>
  return %d : tensor<1024xf32>
}

// -----

// The output gradient has the ids' rank plus one.

func.func @negative_embedding_grad_output_rank(%dx: tensor<16x16xf32>, %ids: tensor<2x8xi32>) -> tensor<64x16xf32> {
  // expected-error @+1 {{'mt.embedding_grad' op grad_output must have rank 3 (the ids' rank plus hidden), got rank 2}}
  %d = mt.embedding_grad %dx, %ids : (tensor<16x16xf32>, tensor<2x8xi32>) -> tensor<64x16xf32>
  return %d : tensor<64x16xf32>
}

// -----

// The output gradient's leading dimensions are those of the ids.

func.func @negative_embedding_grad_ids_dim(%dx: tensor<2x4x16xf32>, %ids: tensor<2x8xi32>) -> tensor<64x16xf32> {
  // expected-error @+1 {{'mt.embedding_grad' op grad_output dimension 1 is 4 but ids dimension 1 is 8}}
  %d = mt.embedding_grad %dx, %ids : (tensor<2x4x16xf32>, tensor<2x8xi32>) -> tensor<64x16xf32>
  return %d : tensor<64x16xf32>
}

// -----

// The output gradient's last dimension is the table's hidden size.

func.func @negative_embedding_grad_hidden(%dx: tensor<2x8x32xf32>, %ids: tensor<2x8xi32>) -> tensor<64x16xf32> {
  // expected-error @+1 {{'mt.embedding_grad' op grad_output dimension 2 is 32 but grad_table dimension 1 is 16}}
  %d = mt.embedding_grad %dx, %ids : (tensor<2x8x32xf32>, tensor<2x8xi32>) -> tensor<64x16xf32>
  return %d : tensor<64x16xf32>
}

// -----

// The embedding gradient keeps the element type, or widens 16 bits to f32
// (never narrows).

func.func @negative_embedding_grad_element_type(%dx: tensor<8x16xf32>, %ids: tensor<8xi64>) -> tensor<64x16xbf16> {
  // expected-error @+1 {{'mt.embedding_grad' op grad_table element type 'bf16' does not match grad_output element type 'f32'}}
  %d = mt.embedding_grad %dx, %ids : (tensor<8x16xf32>, tensor<8xi64>) -> tensor<64x16xbf16>
  return %d : tensor<64x16xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// mt.position_embedding_grad
//===----------------------------------------------------------------------===//

// The position gradient table has rank 2.

func.func @negative_position_embedding_grad_table_rank(%dpos: tensor<8x16xf32>) -> tensor<512xf32> {
  // expected-error @+1 {{'mt.position_embedding_grad' op grad_table must have rank 2 ([positions, hidden]), got rank 1}}
  %d = mt.position_embedding_grad %dpos : tensor<8x16xf32> -> tensor<512xf32>
  return %d : tensor<512xf32>
}

// -----

// The position output gradient has rank 2.

func.func @negative_position_embedding_grad_output_rank(%dpos: tensor<1x8x16xf32>) -> tensor<32x16xf32> {
  // expected-error @+1 {{'mt.position_embedding_grad' op grad_output must have rank 2 ([seq, hidden]), got rank 3}}
  %d = mt.position_embedding_grad %dpos : tensor<1x8x16xf32> -> tensor<32x16xf32>
  return %d : tensor<32x16xf32>
}

// -----

// The position output gradient has no more rows than the table.

func.func @negative_position_embedding_grad_too_long(%dpos: tensor<64x16xf32>) -> tensor<32x16xf32> {
  // expected-error @+1 {{'mt.position_embedding_grad' op grad_output dimension 0 (sequence length) is 64, more than the 32 positions of grad_table dimension 0}}
  %d = mt.position_embedding_grad %dpos : tensor<64x16xf32> -> tensor<32x16xf32>
  return %d : tensor<32x16xf32>
}

// -----

// The position output gradient has the table's hidden size.

func.func @negative_position_embedding_grad_hidden(%dpos: tensor<8x8xf32>) -> tensor<32x16xf32> {
  // expected-error @+1 {{'mt.position_embedding_grad' op grad_output dimension 1 is 8 but grad_table dimension 1 is 16}}
  %d = mt.position_embedding_grad %dpos : tensor<8x8xf32> -> tensor<32x16xf32>
  return %d : tensor<32x16xf32>
}

// -----

// The position gradient keeps the element type.

func.func @negative_position_embedding_grad_element_type(%dpos: tensor<8x16xf16>) -> tensor<32x16xf32> {
  // expected-error @+1 {{'mt.position_embedding_grad' op grad_output element type 'f16' does not match grad_table element type 'f32'}}
  %d = mt.position_embedding_grad %dpos : tensor<8x16xf16> -> tensor<32x16xf32>
  return %d : tensor<32x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.layer_norm_grad
//===----------------------------------------------------------------------===//

// mt.layer_norm_grad needs a dimension to normalize over.

func.func @negative_layer_norm_grad_scalar(%dy: tensor<f32>, %w: tensor<1xf32>) -> tensor<f32> {
  // expected-error @+1 {{'mt.layer_norm_grad' op input must have rank >= 1, got rank 0}}
  %dx, %dw, %db = mt.layer_norm_grad %dy, %dy, %w : tensor<f32>, tensor<1xf32>
  return %dx : tensor<f32>
}

// -----

// The layer norm gradient's weight has rank 1.

func.func @negative_layer_norm_grad_weight_rank(%dy: tensor<2x16xf32>, %w: tensor<2x16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.layer_norm_grad' op weight must have rank 1 ([normalized]), got rank 2}}
  %dx, %dw, %db = mt.layer_norm_grad %dy, %dy, %w : tensor<2x16xf32>, tensor<2x16xf32>
  return %dx : tensor<2x16xf32>
}

// -----

// The layer norm gradient's weight matches the last input dimension.

func.func @negative_layer_norm_grad_weight_size(%dy: tensor<2x16xf32>, %w: tensor<8xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.layer_norm_grad' op weight dimension 0 is 8 but input dimension 1 is 16}}
  %dx, %dw, %db = mt.layer_norm_grad %dy, %dy, %w : tensor<2x16xf32>, tensor<8xf32>
  return %dx : tensor<2x16xf32>
}

// -----

// The layer norm gradient's weight has the input's element type.

func.func @negative_layer_norm_grad_weight_element_type(%dy: tensor<2x16xf16>, %w: tensor<16xf32>) -> tensor<2x16xf16> {
  // expected-error @+1 {{'mt.layer_norm_grad' op weight element type 'f32' does not match input element type 'f16'}}
  %dx, %dw, %db = mt.layer_norm_grad %dy, %dy, %w : tensor<2x16xf16>, tensor<16xf32>
  return %dx : tensor<2x16xf16>
}

// -----

// The layer norm gradient's epsilon is positive.

func.func @negative_layer_norm_grad_epsilon(%dy: tensor<2x16xf32>, %w: tensor<16xf32>) -> tensor<2x16xf32> {
  // expected-error @+1 {{'mt.layer_norm_grad' op epsilon must be positive and finite, got -1.000000e-05}}
  %dx, %dw, %db = mt.layer_norm_grad %dy, %dy, %w {epsilon = -1.0e-05 : f64} : tensor<2x16xf32>, tensor<16xf32>
  return %dx : tensor<2x16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.bias_add_grad
//===----------------------------------------------------------------------===//

// The bias gradient may not have a higher rank than the output gradient.

func.func @negative_bias_add_grad_rank(%dy: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.bias_add_grad' op grad_bias must have rank between 1 and the grad_output rank 2, got rank 3}}
  %db = mt.bias_add_grad %dy : tensor<8x16xf32> -> tensor<2x8x16xf32>
  return %db : tensor<2x8x16xf32>
}

// -----

// The bias gradient has the trailing dimensions of the output gradient.

func.func @negative_bias_add_grad_shape(%dy: tensor<2x8x16xf32>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'mt.bias_add_grad' op grad_bias dimension 0 is 4 but grad_output dimension 1 is 8}}
  %db = mt.bias_add_grad %dy : tensor<2x8x16xf32> -> tensor<4x16xf32>
  return %db : tensor<4x16xf32>
}

// -----

// The bias gradient keeps the element type.

func.func @negative_bias_add_grad_element_type(%dy: tensor<2x16xf32>) -> tensor<16xf16> {
  // expected-error @+1 {{'mt.bias_add_grad' op grad_bias element type 'f16' does not match grad_output element type 'f32'}}
  %db = mt.bias_add_grad %dy : tensor<2x16xf32> -> tensor<16xf16>
  return %db : tensor<16xf16>
}

// -----

//===----------------------------------------------------------------------===//
// mt.attention_grad
//===----------------------------------------------------------------------===//

// Attention gradient operands have rank 4.

func.func @negative_attention_grad_rank(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.attention_grad' op query must have rank 4 ([batch, heads, seq, head_dim]), got rank 3}}
  %dq, %dk, %dv = mt.attention_grad %x, %x, %x, %x : tensor<2x8x16xf32>
  return %dq : tensor<2x8x16xf32>
}

// -----

// The attention gradient's dropout probability is in [0, 1).

func.func @negative_attention_grad_dropout(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'mt.attention_grad' op dropout must be in [0, 1), got 1.000000e+00}}
  %dq, %dk, %dv = mt.attention_grad %q, %q, %q, %q {dropout = 1.0 : f64} : tensor<1x2x8x4xf32>
  return %dq : tensor<1x2x8x4xf32>
}

// -----

// The attention gradient's scale is positive.

func.func @negative_attention_grad_scale(%q: tensor<1x2x8x4xf32>) -> tensor<1x2x8x4xf32> {
  // expected-error @+1 {{'mt.attention_grad' op scale must be positive and finite, got 0.000000e+00}}
  %dq, %dk, %dv = mt.attention_grad %q, %q, %q, %q {scale = 0.0 : f64} : tensor<1x2x8x4xf32>
  return %dq : tensor<1x2x8x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.cross_entropy_grad
//===----------------------------------------------------------------------===//

// The cross-entropy gradient's logits have rank >= 2.

func.func @negative_cross_entropy_grad_logits_rank(%dloss: tensor<f32>, %logits: tensor<64xf32>, %labels: tensor<i32>) -> tensor<64xf32> {
  // expected-error @+1 {{'mt.cross_entropy_grad' op logits must have rank >= 2 ([positions..., vocab]), got rank 1}}
  %d = mt.cross_entropy_grad %dloss, %logits, %labels : (tensor<f32>, tensor<64xf32>, tensor<i32>) -> tensor<64xf32>
  return %d : tensor<64xf32>
}

// -----

// The cross-entropy gradient's labels have the logits' rank without vocab.

func.func @negative_cross_entropy_grad_labels_rank(%dloss: tensor<f32>, %logits: tensor<2x8x64xf32>, %labels: tensor<16xi32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{'mt.cross_entropy_grad' op labels must have rank 2 (the logits' rank without vocab), got rank 1}}
  %d = mt.cross_entropy_grad %dloss, %logits, %labels : (tensor<f32>, tensor<2x8x64xf32>, tensor<16xi32>) -> tensor<2x8x64xf32>
  return %d : tensor<2x8x64xf32>
}

// -----

// The cross-entropy gradient's labels have the logits' position dimensions.

func.func @negative_cross_entropy_grad_labels_shape(%dloss: tensor<f32>, %logits: tensor<2x8x64xf32>, %labels: tensor<3x8xi32>) -> tensor<2x8x64xf32> {
  // expected-error @+1 {{'mt.cross_entropy_grad' op labels dimension 0 is 3 but logits dimension 0 is 2}}
  %d = mt.cross_entropy_grad %dloss, %logits, %labels : (tensor<f32>, tensor<2x8x64xf32>, tensor<3x8xi32>) -> tensor<2x8x64xf32>
  return %d : tensor<2x8x64xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.adamw
//===----------------------------------------------------------------------===//

// AdamW hyperparameters are f32 scalars.

func.func @negative_adamw_vector_step(%p: tensor<16xf32>, %s: tensor<f32>, %step: tensor<1xf32>) -> tensor<16xf32> {
  // expected-error @+1 {{'mt.adamw' op operand #4 must be 0D tensor of 32-bit float values, but got 'tensor<1xf32>'}}
  %p2, %m2, %v2 = "mt.adamw"(%p, %p, %p, %p, %step, %s, %s, %s, %s, %s, %s) : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<1xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>)
  return %p2 : tensor<16xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.global_norm
//===----------------------------------------------------------------------===//

// mt.global_norm has at least one input (reachable in the generic form).

func.func @negative_global_norm_no_inputs() -> tensor<f32> {
  // expected-error @+1 {{'mt.global_norm' op must have at least one input}}
  %n = "mt.global_norm"() : () -> tensor<f32>
  return %n : tensor<f32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.layer on operations
//===----------------------------------------------------------------------===//

// mt.layer is an integer, not a string.

func.func @negative_layer_string(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.gelu' op attribute 'mt.layer' must be a non-negative integer up to 2^63 - 1, got "0"}}
  %y = mt.gelu %x {mt.layer = "0"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// mt.layer is not negative.

func.func @negative_layer_negative(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.gelu' op attribute 'mt.layer' must be a non-negative integer up to 2^63 - 1, got -1 : i64}}
  %y = mt.gelu %x {mt.layer = -1} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// mt.layer is not an index.

func.func @negative_layer_index(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.gelu' op attribute 'mt.layer' must be a non-negative integer up to 2^63 - 1, got 0 : index}}
  %y = mt.gelu %x {mt.layer = 0 : index} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// A signed mt.layer is not negative either.

func.func @negative_layer_negative_si8(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.gelu' op attribute 'mt.layer' must be a non-negative integer up to 2^63 - 1, got -1 : si8}}
  %y = mt.gelu %x {mt.layer = -1 : si8} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// An unsigned mt.layer beyond int64, which the passes read it as.

func.func @negative_layer_beyond_int64(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.gelu' op attribute 'mt.layer' must be a non-negative integer up to 2^63 - 1, got 18446744073709551615 : ui64}}
  %y = mt.gelu %x {mt.layer = 18446744073709551615 : ui64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// mt.param names function arguments; on an operation it is an error.

func.func @negative_param_on_op(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.gelu' op attribute 'mt.param' belongs on a function argument, not on an operation}}
  %y = mt.gelu %x {mt.param = "h.0.mlp.c_fc.weight"} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// The mt dialect knows no other operation attribute.

func.func @negative_unknown_op_attr(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.gelu' op unknown mt dialect attribute 'mt.stage'}}
  %y = mt.gelu %x {mt.stage = 1} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.param on function arguments
//===----------------------------------------------------------------------===//

// The mt dialect knows no other argument attribute.

// expected-error @below {{'func.func' op unknown mt dialect argument attribute 'mt.layer' on argument #1}}
func.func @negative_unknown_arg_attr(%ids: tensor<8xi32>, %w: tensor<4xf32> {mt.layer = 0}) {
  return
}

// -----

// A function declaration's arguments are verified like a definition's, with
// the types taken from the signature.

// expected-error @below {{'func.func' op argument #1 ('w') is a parameter and must be a statically shaped float tensor, got 'tensor<?x4xf32>'}}
func.func private @negative_param_declaration(tensor<2x8xi32> {mt.input = "tokens"}, tensor<?x4xf32> {mt.param = "w"})

// -----

// Two arguments of a declaration may not name the same parameter either.

// expected-error @below {{'func.func' op arguments #0 and #1 both name parameter 'w'}}
func.func private @negative_param_declaration_duplicate(tensor<4xf32> {mt.param = "w"}, tensor<4xf32> {mt.param = "w"})

// -----

// A parameter name is not empty.

// expected-error @below {{'func.func' op argument #0: 'mt.param' must be a non-empty string, got ""}}
func.func @negative_param_empty(%w: tensor<4xf32> {mt.param = ""}) {
  return
}

// -----

// A parameter name is a string.

// expected-error @below {{'func.func' op argument #0: 'mt.param' must be a non-empty string, got 3 : i64}}
func.func @negative_param_not_string(%w: tensor<4xf32> {mt.param = 3}) {
  return
}

// -----

// A parameter name is UTF-8: it names the tensor in checkpoints and the
// artifact, JSON documents (a name written "w\99" passed every pass and
// aborted the export).

// expected-error @below {{'func.func' op argument #0: 'mt.param' must be UTF-8 (it names the parameter in checkpoints and the artifact), but byte 1 is not}}
func.func @negative_param_not_utf8(%w: tensor<4xf32> {mt.param = "w\99"}) {
  return
}

// -----

// A parameter has a float element type.

// expected-error @below {{'func.func' op argument #1 ('wte.weight') is a parameter and must be a statically shaped float tensor, got 'tensor<64x16xi32>'}}
func.func @negative_param_integer(%ids: tensor<8xi32>, %wte: tensor<64x16xi32> {mt.param = "wte.weight"}) {
  return
}

// -----

// A parameter is a tensor.

// expected-error @below {{'func.func' op argument #0 ('scale') is a parameter and must be a statically shaped float tensor, got 'f32'}}
func.func @negative_param_scalar(%s: f32 {mt.param = "scale"}) {
  return
}

// -----

// A parameter has a static shape.

// expected-error @below {{'func.func' op argument #0 ('wte.weight') is a parameter and must be a statically shaped float tensor, got 'tensor<?x16xf32>'}}
func.func @negative_param_dynamic(%wte: tensor<?x16xf32> {mt.param = "wte.weight"}) {
  return
}

// -----

// Two arguments may not name the same checkpoint tensor.

// expected-error @below {{'func.func' op arguments #0 and #2 both name parameter 'wte.weight'}}
func.func @negative_param_duplicate(%wte: tensor<64x16xf32> {mt.param = "wte.weight"},
                                    %wpe: tensor<8x16xf32> {mt.param = "wpe.weight"},
                                    %head: tensor<64x16xf32> {mt.param = "wte.weight"}) {
  return
}

// -----

// A parameter and its optimizer states are told apart by mt.state; two
// arguments naming the same state of one parameter are rejected.

// expected-error @below {{'func.func' op arguments #1 and #2 both name exp_avg of parameter 'w'}}
func.func @negative_state_duplicate(%w: tensor<4xf32> {mt.param = "w"},
                                    %m: tensor<4xf32> {mt.param = "w", mt.state = "exp_avg"},
                                    %m2: tensor<4xf32> {mt.param = "w", mt.state = "exp_avg"}) {
  return
}

// -----

// mt.state names one of the AdamW moments.

// expected-error @below {{'func.func' op argument #1: 'mt.state' must be one of "exp_avg", "exp_avg_sq", "param_copy", got "momentum"}}
func.func @negative_state_unknown(%w: tensor<4xf32> {mt.param = "w"},
                                  %m: tensor<4xf32> {mt.param = "w", mt.state = "momentum"}) {
  return
}

// -----

// mt.state needs an mt.param beside it.

// expected-error @below {{'func.func' op argument #0: 'mt.state' needs an 'mt.param' naming the parameter whose state it is}}
func.func @negative_state_without_param(%m: tensor<4xf32> {mt.state = "exp_avg"}) {
  return
}

// -----

// mt.input names one of the run-time input roles.

// expected-error @below {{'func.func' op argument #0: 'mt.input' must be one of "tokens", "labels", "step", "lr", "adam_beta1", "adam_beta2", "adam_eps", "weight_decay", "clip_grad", "loss_scale", got "ids"}}
func.func @negative_input_unknown(%ids: tensor<2x8xi32> {mt.input = "ids"}) {
  return
}

// -----

// mt.input is a string.

// expected-error @below {{'func.func' op argument #0: 'mt.input' must be one of "tokens", "labels", "step", "lr", "adam_beta1", "adam_beta2", "adam_eps", "weight_decay", "clip_grad", "loss_scale", got 0 : i64}}
func.func @negative_input_not_string(%ids: tensor<2x8xi32> {mt.input = 0}) {
  return
}

// -----

//===----------------------------------------------------------------------===//
// mt attributes on function results
//===----------------------------------------------------------------------===//

// mt.output names one of the reported output roles.

// expected-error @below {{'func.func' op result #0: 'mt.output' must be one of "loss", "grad_norm", got "perplexity"}}
func.func @negative_output_unknown(%loss: tensor<f32>) -> (tensor<f32> {mt.output = "perplexity"}) {
  return %loss : tensor<f32>
}

// -----

// The mt dialect knows no other result attribute.

// expected-error @below {{'func.func' op unknown mt dialect result attribute 'mt.input' on result #0}}
func.func @negative_unknown_result_attr(%x: tensor<4xf32>) -> (tensor<4xf32> {mt.input = "tokens"}) {
  return %x : tensor<4xf32>
}

// -----

// A result's parameter name is not empty.

// expected-error @below {{'func.func' op result #0: 'mt.param' must be a non-empty string, got ""}}
func.func @negative_result_param_empty(%w: tensor<4xf32> {mt.param = "w"}) -> (tensor<4xf32> {mt.param = ""}) {
  return %w : tensor<4xf32>
}

// -----

// A parameter result is a statically shaped float tensor.

// expected-error @below {{'func.func' op result #0 ('scale') is a parameter and must be a statically shaped float tensor, got 'f32'}}
func.func @negative_result_param_scalar(%s: f32) -> (f32 {mt.param = "scale"}) {
  return %s : f32
}

// -----

// Two results may not name the same parameter.

// expected-error @below {{'func.func' op results #0 and #1 both name parameter 'w'}}
func.func @negative_result_param_duplicate(%w: tensor<4xf32> {mt.param = "w"}) -> (tensor<4xf32> {mt.param = "w"}, tensor<4xf32> {mt.param = "w"}) {
  return %w, %w : tensor<4xf32>, tensor<4xf32>
}

// -----

// A result's mt.state needs an mt.param beside it.

// expected-error @below {{'func.func' op result #0: 'mt.state' needs an 'mt.param' naming the parameter whose state it is}}
func.func @negative_result_state_without_param(%m: tensor<4xf32>) -> (tensor<4xf32> {mt.state = "exp_avg_sq"}) {
  return %m : tensor<4xf32>
}

// -----

// mt.full_shape needs positive dimensions.

// expected-error @below {{'func.func' op argument #0: 'mt.full_shape' must be an array of positive i64 dimensions, got array<i64: 4, 0>}}
func.func private @negative_full_shape(tensor<4xf32> {mt.param = "w", mt.full_shape = array<i64: 4, 0>})

// -----

// The other sharding attributes are non-negative integers, on results too.

// expected-error @below {{'func.func' op result #0: 'mt.shard_dim' must be a non-negative i64, got -1 : i64}}
func.func private @negative_shard_dim() -> (tensor<4xf32> {mt.param = "w", mt.shard_dim = -1 : i64})

// -----

// expected-error @below {{'func.func' op argument #0: 'mt.valid_rows' must be a non-negative i64, got "63"}}
func.func private @negative_valid_rows(tensor<4xf32> {mt.param = "w", mt.valid_rows = "63"})

// -----

// Rank-dependent op attributes name a grid axis.

func.func @negative_rng_seq_axis(%x: tensor<2x4x8xf32>) -> tensor<2x4x8xf32> {
  // expected-error @below {{'mt.dropout' op attribute 'mt.rng_seq_axis' must be a non-negative i64, got -1 : i64}}
  %y = mt.dropout %x {probability = 1.0e-01 : f64, mt.rng_seq_axis = -1 : i64} : tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.parallel and mt.init: the structure a parameter states
//===----------------------------------------------------------------------===//

// A split names a dimension the parameter has.

// expected-error @below {{'func.func' op argument #0: 'mt.parallel' splits dimension 2 of a tensor of rank 2}}
func.func private @negative_parallel_dim(tensor<4x8xf32> {mt.param = "w", mt.parallel = {role = "column", dim = 2}})

// -----

// A replicated parameter states no dimension.

// expected-error @below {{'func.func' op argument #0: 'mt.parallel' must be {role = "column" | "row" | "vocab", dim = D, chunks = K (optional, >= 1)} or {role = "replicated"}, got {dim = 0 : i64, role = "replicated"}}}
func.func private @negative_parallel_replicated_dim(tensor<4xf32> {mt.param = "w", mt.parallel = {role = "replicated", dim = 0}})

// -----

// Roles belong on parameters, not on their optimizer state or on inputs.

// expected-error @below {{'func.func' op argument #0: 'mt.parallel' belongs on a parameter (with 'mt.param' and no 'mt.state')}}
func.func private @negative_parallel_on_state(tensor<4xf32> {mt.param = "w", mt.state = "exp_avg", mt.parallel = {role = "replicated"}})

// -----

// A normal initializer needs a positive standard deviation.

// expected-error @below {{'func.func' op argument #0: 'mt.init' must be {kind = "normal", std = S} with a finite S > 0, {kind = "zeros"} or {kind = "ones"}, got {kind = "normal", std = 0.000000e+00 : f64}}}
func.func private @negative_init_std(tensor<4xf32> {mt.param = "w", mt.init = {kind = "normal", std = 0.0 : f64}})

// -----

// ... and a finite one: 2e702 reads as infinity, which the artifact (JSON)
// cannot hold (the compile fuzzer's finding: it compiled, then the export
// wrote null and refused it).

// expected-error @below {{'func.func' op argument #0: 'mt.init' must be {kind = "normal", std = S} with a finite S > 0, {kind = "zeros"} or {kind = "ones"}, got {kind = "normal", std = 0x7FF0000000000000 : f64}}}
func.func private @negative_init_std_infinite(tensor<4xf32> {mt.param = "w", mt.init = {kind = "normal", std = 2.0e702 : f64}})

// -----

// expected-error @below {{'func.func' op argument #0: 'mt.init' must be {kind = "normal", std = S} with a finite S > 0, {kind = "zeros"} or {kind = "ones"}, got {kind = "uniform"}}}
func.func private @negative_init_kind(tensor<4xf32> {mt.param = "w", mt.init = {kind = "uniform"}})

// -----

// A parameter's rows in a published fused tensor (Phi-3's qkv_proj):
// {tensor = "name", row = R} with a non-negative row, on a parameter with
// rows.

// expected-error @below {{'func.func' op argument #0: 'mt.fused_in' must be {tensor = "name", row = R} with a non-negative i64 row, got {row = -1 : i64, tensor = "qkv.weight"}}}
func.func private @negative_fused_in_row(tensor<4x2xf32> {mt.param = "q.weight", mt.fused_in = {tensor = "qkv.weight", row = -1 : i64}})

// -----

// expected-error @below {{'func.func' op argument #0: 'mt.fused_in' must be {tensor = "name", row = R} with a non-negative i64 row, got {row = 0 : i64, tensor = ""}}}
func.func private @negative_fused_in_tensor(tensor<4x2xf32> {mt.param = "q.weight", mt.fused_in = {tensor = "", row = 0 : i64}})

// -----

// expected-error @below {{'func.func' op argument #0: 'mt.fused_in' needs 'mt.param' beside it}}
func.func private @negative_fused_in_not_param(tensor<4x2xf32> {mt.fused_in = {tensor = "qkv.weight", row = 0 : i64}})

// -----

// expected-error @below {{'func.func' op argument #0: 'mt.fused_in' states rows of a tensor; the argument has none ('tensor<f32>')}}
func.func private @negative_fused_in_scalar(tensor<f32> {mt.param = "s", mt.fused_in = {tensor = "qkv.weight", row = 0 : i64}})

// -----

//===----------------------------------------------------------------------===//
// mt.rope, mt.repeat_kv
//===----------------------------------------------------------------------===//

func.func @negative_rope_odd(%x: tensor<1x2x4x5xf32>) -> tensor<1x2x4x5xf32> {
  // expected-error @below {{'mt.rope' op input must be [batch, heads, seq, head_dim] with an even head_dim, got 'tensor<1x2x4x5xf32>'}}
  %y = mt.rope %x : tensor<1x2x4x5xf32>
  return %y : tensor<1x2x4x5xf32>
}

// -----

func.func @negative_rope_scaling(%x: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @below {{'mt.rope' op llama3 rope scaling needs all of llama3_factor, llama3_low_freq_factor, llama3_high_freq_factor and llama3_original_max_positions}}
  %y = mt.rope %x {llama3_factor = 8.0 : f64} : tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// -----

func.func @negative_rope_theta(%x: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @below {{'mt.rope' op theta must be greater than 1 and finite, got 5.000000e-01}}
  %y = mt.rope %x {theta = 0.5 : f64} : tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// -----

func.func @negative_rope_theta_infinite(%x: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @below {{'mt.rope' op theta must be greater than 1 and finite, got INF}}
  %y = mt.rope %x {theta = 2.0e702 : f64} : tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// -----

func.func @negative_rope_llama3_factor_infinite(%x: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @below {{'mt.rope' op llama3_factor must be positive and finite, got INF}}
  %y = mt.rope %x {llama3_factor = 2.0e702 : f64, llama3_low_freq_factor = 1.0 : f64, llama3_high_freq_factor = 4.0 : f64, llama3_original_max_positions = 8 : i64} : tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// -----

// A linear rope scaling: a positive finite factor.
func.func @negative_rope_linear_factor(%x: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @below {{'mt.rope' op linear_factor must be positive and finite, got 0}}
  %y = mt.rope %x {linear_factor = 0.0 : f64} : tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// -----

// Two rope scalings at once: one would be left unapplied.
func.func @negative_rope_two_scalings(%x: tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32> {
  // expected-error @below {{'mt.rope' op takes one rope scaling: llama3 or linear_factor}}
  %y = mt.rope %x {linear_factor = 8.0 : f64, llama3_factor = 8.0 : f64, llama3_low_freq_factor = 1.0 : f64, llama3_high_freq_factor = 4.0 : f64, llama3_original_max_positions = 8 : i64} : tensor<1x2x4x8xf32>
  return %y : tensor<1x2x4x8xf32>
}

// -----

func.func @negative_repeat_kv(%x: tensor<1x2x4x8xf32>) -> tensor<1x6x4x8xf32> {
  // expected-error @below {{'mt.repeat_kv' op needs [batch, kv_heads, seq, head_dim] and [batch, kv_heads * groups, seq, head_dim] with groups = 2, got 'tensor<1x2x4x8xf32>' and 'tensor<1x6x4x8xf32>'}}
  %y = mt.repeat_kv %x {groups = 2 : i64} : tensor<1x2x4x8xf32> -> tensor<1x6x4x8xf32>
  return %y : tensor<1x6x4x8xf32>
}

// -----

func.func @cast_changes_shape(%x: tensor<4x8xf32>) -> tensor<4x4xbf16> {
  // expected-error @below {{'mt.cast' op requires the same shape for all operands and results}}
  %y = mt.cast %x : tensor<4x8xf32> to tensor<4x4xbf16>
  return %y : tensor<4x4xbf16>
}

// -----

func.func @div_of_tensors(%a: tensor<4xf32>, %b: tensor<f32>) -> tensor<f32> {
  // expected-error @below {{'mt.div' op operand #0 must be 0D tensor of 32-bit float values}}
  %y = "mt.div"(%a, %b) : (tensor<4xf32>, tensor<f32>) -> tensor<f32>
  return %y : tensor<f32>
}

//===----------------------------------------------------------------------===//
// mt.fusion, mt.yield and the factor of mt.scale
//===----------------------------------------------------------------------===//

// The region's block takes one argument per input.

func.func @negative_fusion_argument_count(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mt.fusion' op has 1 inputs but its block has 2 arguments}}
  %y = mt.fusion ins(%x : tensor<8xf32>) -> (tensor<8xf32>) {
  ^bb0(%a: tensor<8xf32>, %b: tensor<8xf32>):
    %s = mt.add %a, %b : tensor<8xf32>
    mt.yield %s : tensor<8xf32>
  }
  return %y : tensor<8xf32>
}

// -----

// Block arguments have their inputs' types.

func.func @negative_fusion_argument_type(%x: tensor<8xf32>) -> tensor<8xbf16> {
  // expected-error @+1 {{'mt.fusion' op input #0 has type 'tensor<8xf32>' but block argument #0 has 'tensor<8xbf16>'}}
  %y = mt.fusion ins(%x : tensor<8xf32>) -> (tensor<8xbf16>) {
  ^bb0(%a: tensor<8xbf16>):
    %g = mt.gelu %a : tensor<8xbf16>
    mt.yield %g : tensor<8xbf16>
  }
  return %y : tensor<8xbf16>
}

// -----

// The yielded values are the results.

func.func @negative_fusion_yield_types(%x: tensor<8xf32>) -> tensor<8xbf16> {
  // expected-error @+1 {{'mt.fusion' op yields 'tensor<8xf32>' but has results 'tensor<8xbf16>'}}
  %y = mt.fusion ins(%x : tensor<8xf32>) -> (tensor<8xbf16>) {
  ^bb0(%a: tensor<8xf32>):
    %g = mt.gelu %a : tensor<8xf32>
    mt.yield %g : tensor<8xf32>
  }
  return %y : tensor<8xbf16>
}

// -----

// A body without its terminator is refused, not dereferenced.

func.func @negative_fusion_no_yield(%x: tensor<8xf32>) {
  // expected-error @+1 {{'mt.fusion' op must end with mt.yield}}
  "mt.fusion"(%x) ({
  ^bb0(%a: tensor<8xf32>):
    %g = mt.gelu %a : tensor<8xf32>
  }) : (tensor<8xf32>) -> tensor<8xf32>
  return
}

// -----

// mt.yield ends an mt.fusion, nothing else.

func.func @negative_yield_outside_fusion(%x: tensor<8xf32>) {
  // expected-error @+1 {{'mt.yield' op expects parent op 'mt.fusion'}}
  mt.yield %x : tensor<8xf32>
}

// -----

// A generated kernel writes the factor as a float literal.

func.func @negative_scale_infinite(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mt.scale' op factor INF is not a finite single-precision number}}
  %y = mt.scale %x {factor = 0x7FF0000000000000 : f64} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @negative_scale_beyond_float(%x: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mt.scale' op factor 1.000000e+300 is not a finite single-precision number}}
  %y = mt.scale %x {factor = 1.0e300 : f64} : tensor<8xf32>
  return %y : tensor<8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// Per-position cross-entropy and row fusions
//===----------------------------------------------------------------------===//

// The loss is the mean (a scalar) or one loss per position.

func.func @negative_cross_entropy_losses_shape(%l: tensor<2x4x16xf32>, %y: tensor<2x4xi32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mt.cross_entropy' op result must be tensor<f32> (the mean loss) or have the labels' shape (one loss per position), got 'tensor<8xf32>'}}
  %loss = mt.cross_entropy %l, %y : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<8xf32>
  return %loss : tensor<8xf32>
}

// -----

// Inside a row fusion the loss is per position (the mean follows it).

func.func @negative_row_fusion_mean(%l: tensor<2x4x16xf32>, %y: tensor<2x4xi32>) -> tensor<f32> {
  %r = mt.fusion ins(%l, %y : tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<f32>) {
  ^bb0(%la: tensor<2x4x16xf32>, %ya: tensor<2x4xi32>):
    // expected-error @+1 {{'mt.cross_entropy' op computes the mean loss; inside an mt.fusion it must return the per-position losses (followed by mt.mean)}}
    %loss = mt.cross_entropy %la, %ya : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<f32>
    mt.yield %loss : tensor<f32>
  }
  return %r : tensor<f32>
}

// -----

// A row fusion holds the cross-entropy ops alone.

func.func @negative_row_fusion_elementwise(%l: tensor<2x4x16xf32>, %y: tensor<2x4xi32>) -> tensor<2x4x16xf32> {
  %r = mt.fusion ins(%l, %y : tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<2x4x16xf32>) {
  ^bb0(%la: tensor<2x4x16xf32>, %ya: tensor<2x4xi32>):
    %losses = mt.cross_entropy %la, %ya : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
    // expected-error @+1 {{'mt.gelu' op cannot join a row fusion: only mt.cross_entropy and mt.cross_entropy_grad may appear beside each other}}
    %g = mt.gelu %la : tensor<2x4x16xf32>
    mt.yield %g : tensor<2x4x16xf32>
  }
  return %r : tensor<2x4x16xf32>
}

// -----

// Both ops read one pair of logits and labels, from the region's inputs.

func.func @negative_row_fusion_other_logits(%l: tensor<2x4x16xf32>, %m: tensor<2x4x16xf32>, %y: tensor<2x4xi32>, %g: tensor<f32>) -> tensor<2x4x16xf32> {
  %r:2 = mt.fusion ins(%l, %m, %y, %g : tensor<2x4x16xf32>, tensor<2x4x16xf32>, tensor<2x4xi32>, tensor<f32>) -> (tensor<2x4xf32>, tensor<2x4x16xf32>) {
  ^bb0(%la: tensor<2x4x16xf32>, %ma: tensor<2x4x16xf32>, %ya: tensor<2x4xi32>, %ga: tensor<f32>):
    %losses = mt.cross_entropy %la, %ya : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
    // expected-error @+1 {{'mt.cross_entropy_grad' op reads other logits or labels than the row fusion's first op}}
    %d = mt.cross_entropy_grad %ga, %ma, %ya : (tensor<f32>, tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4x16xf32>
    mt.yield %losses, %d : tensor<2x4xf32>, tensor<2x4x16xf32>
  }
  return %r#1 : tensor<2x4x16xf32>
}

// -----

// A norm ends its row fusion: nothing in the region reads its result.

func.func @negative_norm_fusion_epilogue(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = mt.fusion ins(%x, %w : tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%xa: tensor<4x8xf32>, %wa: tensor<8xf32>):
    // expected-error @+1 {{'mt.rms_norm' op must end its row fusion: nothing in the region may read the normalized rows}}
    %y = mt.rms_norm %xa, %wa : tensor<4x8xf32>, tensor<8xf32>
    %g = mt.gelu %y : tensor<4x8xf32>
    mt.yield %g : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

// The norm's weight comes from the region's inputs.

func.func @negative_norm_fusion_weight(%x: tensor<1x8xf32>, %w: tensor<8xf32>) -> tensor<1x8xf32> {
  %r = mt.fusion ins(%x, %w : tensor<1x8xf32>, tensor<8xf32>) -> (tensor<1x8xf32>) {
  ^bb0(%xa: tensor<1x8xf32>, %wa: tensor<8xf32>):
    %ws = mt.gelu %wa : tensor<8xf32>
    // expected-error @+1 {{'mt.rms_norm' op must read its weight and bias from the fusion's inputs}}
    %y = mt.rms_norm %xa, %ws : tensor<1x8xf32>, tensor<8xf32>
    mt.yield %y : tensor<1x8xf32>
  }
  return %r : tensor<1x8xf32>
}

// -----

// The ops before a norm compute whole rows of its input.

func.func @negative_norm_fusion_rows(%x: tensor<4x8xf32>, %b: tensor<4xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = mt.fusion ins(%x, %b, %w : tensor<4x8xf32>, tensor<4xf32>, tensor<8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%xa: tensor<4x8xf32>, %ba: tensor<4xf32>, %wa: tensor<8xf32>):
    // expected-error @+1 {{'mt.bias_add' op operand #1 has 4 elements: a row fusion reads whole rows of 8 or one row broadcast along them}}
    %h = "mt.bias_add"(%xa, %ba) : (tensor<4x8xf32>, tensor<4xf32>) -> tensor<4x8xf32>
    %y = mt.rms_norm %h, %wa : tensor<4x8xf32>, tensor<8xf32>
    mt.yield %y : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

// A fused dropout draws its mask by the element's index: not in a norm's
// row fusion, whose loops index rows.

func.func @negative_norm_fusion_dropout(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = mt.fusion ins(%x, %w : tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%xa: tensor<4x8xf32>, %wa: tensor<8xf32>):
    // expected-error @+1 {{'mt.dropout' op cannot join a row fusion of a norm: a fused dropout draws its mask by the element's index, which only an elementwise fusion's loop has}}
    %h = mt.dropout %xa {probability = 1.0e-01 : f64, rng_stream = 0 : i64} : tensor<4x8xf32>
    %y = mt.rms_norm %h, %wa : tensor<4x8xf32>, tensor<8xf32>
    mt.yield %y : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

// Only elementwise ops compute a norm's input inside the region.

func.func @negative_norm_fusion_matmul(%x: tensor<4x8xf32>, %m: tensor<8x8xf32>, %w: tensor<8xf32>) -> tensor<4x8xf32> {
  %r = mt.fusion ins(%x, %m, %w : tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>) {
  ^bb0(%xa: tensor<4x8xf32>, %ma: tensor<8x8xf32>, %wa: tensor<8xf32>):
    // expected-error @+1 {{'mt.matmul' op cannot join a row fusion of a norm: only ops with ElementwiseOpInterface may compute the norm's input}}
    %h = mt.matmul %xa, %ma : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
    %y = mt.rms_norm %h, %wa : tensor<4x8xf32>, tensor<8xf32>
    mt.yield %y : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.multi_adamw
//===----------------------------------------------------------------------===//

// One gradient and one of each moment per parameter.

func.func @negative_multi_adamw_counts(%p: tensor<4xf32>, %q: tensor<8xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'mt.multi_adamw' op takes 2 parameters but 1 gradients, 2 first moments and 2 second moments; each needs one of each}}
  %r:6 = mt.multi_adamw params(%p, %q) grads(%p) exp_avgs(%p, %q) exp_avg_sqs(%p, %q) scalars(%s, %s, %s, %s, %s, %s, %s)
      : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
      -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// One dtype per command.

func.func @negative_multi_adamw_dtypes(%p: tensor<4xf32>, %q: tensor<8xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'mt.multi_adamw' op parameter #1 is 'tensor<8xbf16>'; one multi_adamw updates one dtype ('f32')}}
  %r:6 = mt.multi_adamw params(%p, %q) grads(%p, %q) exp_avgs(%p, %q) exp_avg_sqs(%p, %q) scalars(%s, %s, %s, %s, %s, %s, %s)
      : (tensor<4xf32>, tensor<8xbf16>, tensor<4xf32>, tensor<8xbf16>, tensor<4xf32>, tensor<8xbf16>, tensor<4xf32>, tensor<8xbf16>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
      -> (tensor<4xf32>, tensor<8xbf16>, tensor<4xf32>, tensor<8xbf16>, tensor<4xf32>, tensor<8xbf16>)
  return
}

// -----

// Each gradient, moment and result has its parameter's type.

func.func @negative_multi_adamw_types(%p: tensor<4xf32>, %q: tensor<8xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'mt.multi_adamw' op parameter #1 is 'tensor<8xf32>' but its gradient, moments or results are 'tensor<4xf32>'}}
  %r:6 = mt.multi_adamw params(%p, %q) grads(%p, %p) exp_avgs(%p, %q) exp_avg_sqs(%p, %q) scalars(%s, %s, %s, %s, %s, %s, %s)
      : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>)
      -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>)
  return
}

// -----

// 16-bit copies: one per parameter or none.

func.func @negative_multi_adamw_copy_count(%p: tensor<4xf32>, %q: tensor<8xf32>, %c: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'mt.multi_adamw' op takes 2 parameters but 1 16-bit copies; give each parameter one, or none}}
  %r:7 = mt.multi_adamw params(%p, %q) grads(%p, %q) exp_avgs(%p, %q) exp_avg_sqs(%p, %q) scalars(%s, %s, %s, %s, %s, %s, %s) copies(%c)
      : (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xbf16>)
      -> (tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xf32>, tensor<8xf32>, tensor<4xbf16>)
  return
}

// -----

// A new copy for each copy.

func.func @negative_multi_adamw_copy_results(%p: tensor<4xf32>, %c: tensor<4xbf16>, %s: tensor<f32>) {
  // expected-error @+1 {{'mt.multi_adamw' op has 3 results; 1 parameter, their moments and copies need 4}}
  %r:3 = mt.multi_adamw params(%p) grads(%p) exp_avgs(%p) exp_avg_sqs(%p) scalars(%s, %s, %s, %s, %s, %s, %s) copies(%c)
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xbf16>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// A copy is the parameter's shape, in bf16 or f16.

func.func @negative_multi_adamw_copy_type(%p: tensor<4xf32>, %c: tensor<4xf32>, %s: tensor<f32>) {
  // expected-error @+1 {{'mt.multi_adamw' op parameter #0 is 'tensor<4xf32>' but its copy is 'tensor<4xf32>'; a copy is the parameter's shape in bf16 or f16, one type for all the copies}}
  %r:4 = mt.multi_adamw params(%p) grads(%p) exp_avgs(%p) exp_avg_sqs(%p) scalars(%s, %s, %s, %s, %s, %s, %s) copies(%c)
      : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<f32>, tensor<4xf32>)
      -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
  return
}

// -----

// A row fusion's kernel writes what its ops compute: not an input.

func.func @negative_norm_fusion_yields_input(%x: tensor<4x8xf32>, %w: tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  // expected-error @+1 {{'mt.fusion' op yields an input or a value twice; a row fusion yields what its ops compute, once each}}
  %r:2 = mt.fusion ins(%x, %w : tensor<4x8xf32>, tensor<8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) {
  ^bb0(%xa: tensor<4x8xf32>, %wa: tensor<8xf32>):
    %y = mt.rms_norm %xa, %wa : tensor<4x8xf32>, tensor<8xf32>
    mt.yield %y, %xa : tensor<4x8xf32>, tensor<4x8xf32>
  }
  return %r#0, %r#1 : tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Token ids reach only a fused cross-entropy.

func.func @negative_elementwise_fusion_ids(%x: tensor<4x8xf32>, %y: tensor<4x8xi32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{'mt.fusion' op input #1 is 'tensor<4x8xi32>'; an elementwise fusion reads floats (token ids only reach a fused cross-entropy)}}
  %r = mt.fusion ins(%x, %y : tensor<4x8xf32>, tensor<4x8xi32>) -> (tensor<4x8xf32>) {
  ^bb0(%xa: tensor<4x8xf32>, %ya: tensor<4x8xi32>):
    %g = mt.gelu %xa : tensor<4x8xf32>
    mt.yield %g : tensor<4x8xf32>
  }
  return %r : tensor<4x8xf32>
}

// -----

// A row fusion computes one loss and one gradient.

func.func @negative_row_fusion_two_losses(%l: tensor<2x4x16xf32>, %y: tensor<2x4xi32>) -> tensor<2x4xf32> {
  %r = mt.fusion ins(%l, %y : tensor<2x4x16xf32>, tensor<2x4xi32>) -> (tensor<2x4xf32>) {
  ^bb0(%la: tensor<2x4x16xf32>, %ya: tensor<2x4xi32>):
    // expected-error @+1 {{'mt.cross_entropy' op appears twice in one row fusion}}
    %a = mt.cross_entropy %la, %ya : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
    %b = mt.cross_entropy %la, %ya : (tensor<2x4x16xf32>, tensor<2x4xi32>) -> tensor<2x4xf32>
    mt.yield %a : tensor<2x4xf32>
  }
  return %r : tensor<2x4xf32>
}

// -----

//===----------------------------------------------------------------------===//
// mt.matmul_bias
//===----------------------------------------------------------------------===//

// The bias is a vector of the result's last dimension.

func.func @negative_matmul_bias_length(%x: tensor<2x4x8xf32>, %w: tensor<8x16xf32>, %b: tensor<8xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'mt.matmul_bias' op bias dimension 0 is 8 but result dimension 2 is 16}}
  %y = mt.matmul_bias %x, %w, %b : (tensor<2x4x8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

func.func @negative_matmul_bias_type(%x: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xf32>) -> tensor<2x4x16xbf16> {
  // expected-error @+1 {{'mt.matmul_bias' op}}
  %y = mt.matmul_bias %x, %w, %b : (tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<16xf32>) -> tensor<2x4x16xbf16>
  return %y : tensor<2x4x16xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// mt.multi_cast
//===----------------------------------------------------------------------===//

func.func @negative_multi_cast_count(%a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'mt.multi_cast' op must cast one or more tensors, one result each; got 2 inputs and 1 results}}
  %r = mt.multi_cast %a, %b : (tensor<4xf32>, tensor<8xf32>) -> tensor<4xbf16>
  return %r : tensor<4xbf16>
}

// -----

func.func @negative_multi_cast_types(%a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'mt.multi_cast' op casts one element type to another: input 1 is 'tensor<8xf32>' and result 1 is 'tensor<8xf16>', expected 'f32' to 'bf16'}}
  %r:2 = mt.multi_cast %a, %b : (tensor<4xf32>, tensor<8xf32>) -> (tensor<4xbf16>, tensor<8xf16>)
  return %r#0 : tensor<4xbf16>
}

// -----

func.func @negative_multi_cast_shape(%a: tensor<4xf32>, %b: tensor<8xf32>) -> tensor<4xbf16> {
  // expected-error @+1 {{'mt.multi_cast' op result 1 must have input 1's shape: 'tensor<8xf32>' to 'tensor<2x4xbf16>'}}
  %r:2 = mt.multi_cast %a, %b : (tensor<4xf32>, tensor<8xf32>) -> (tensor<4xbf16>, tensor<2x4xbf16>)
  return %r#0 : tensor<4xbf16>
}

// -----

//===----------------------------------------------------------------------===//
// mt.matmul_bias_gelu, mt.matmul_gelu_grad
//===----------------------------------------------------------------------===//

// The sum the GeLU's epilogue stores has the GeLU's type.

func.func @negative_matmul_bias_gelu_preactivation(%x: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<16xbf16>) -> tensor<2x4x16xbf16> {
  // expected-error @+1 {{'mt.matmul_bias_gelu' op preactivation must have the result's type 'tensor<2x4x16xbf16>', got 'tensor<2x4x16xf32>'}}
  %pre, %y = mt.matmul_bias_gelu %x, %w, %b : (tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<16xbf16>) -> (tensor<2x4x16xf32>, tensor<2x4x16xbf16>)
  return %y : tensor<2x4x16xbf16>
}

// -----

func.func @negative_matmul_bias_gelu_bias(%x: tensor<2x4x8xbf16>, %w: tensor<8x16xbf16>, %b: tensor<8xbf16>) -> tensor<2x4x16xbf16> {
  // expected-error @+1 {{'mt.matmul_bias_gelu' op bias dimension 0 is 8 but result dimension 2 is 16}}
  %pre, %y = mt.matmul_bias_gelu %x, %w, %b : (tensor<2x4x8xbf16>, tensor<8x16xbf16>, tensor<8xbf16>) -> (tensor<2x4x16xbf16>, tensor<2x4x16xbf16>)
  return %y : tensor<2x4x16xbf16>
}

// -----

// The GeLU's input the gradient is taken at has the gradient's type.

func.func @negative_matmul_gelu_grad_preactivation(%dh: tensor<2x4x8xbf16>, %w2: tensor<16x8xbf16>, %pre: tensor<2x4x8xbf16>) -> tensor<2x4x16xbf16> {
  // expected-error @+1 {{'mt.matmul_gelu_grad' op preactivation must have the result's type 'tensor<2x4x16xbf16>', got 'tensor<2x4x8xbf16>'}}
  %d = mt.matmul_gelu_grad %dh, %w2, %pre transpose_b : (tensor<2x4x8xbf16>, tensor<16x8xbf16>, tensor<2x4x8xbf16>) -> tensor<2x4x16xbf16>
  return %d : tensor<2x4x16xbf16>
}

// -----

func.func @negative_matmul_gelu_grad_contraction(%dh: tensor<2x4x8xbf16>, %w2: tensor<16x4xbf16>, %pre: tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16> {
  // expected-error @+1 {{'mt.matmul_gelu_grad' op contraction dimensions differ}}
  %d = mt.matmul_gelu_grad %dh, %w2, %pre transpose_b : (tensor<2x4x8xbf16>, tensor<16x4xbf16>, tensor<2x4x16xbf16>) -> tensor<2x4x16xbf16>
  return %d : tensor<2x4x16xbf16>
}

// -----

// The bias gradient sums a [k, n] rhs's rows, in the weight gradient's
// element type.

func.func @negative_matmul_bias_grad_rank(%x: tensor<2x4x8xbf16>, %dy: tensor<2x4x16xbf16>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.matmul_bias_grad' op rhs must have rank 2 ([k, n], summed over k), got rank 3}}
  %dw, %db = mt.matmul_bias_grad %x, %dy transpose_a : (tensor<2x4x8xbf16>, tensor<2x4x16xbf16>) -> (tensor<2x8x16xf32>, tensor<16xf32>)
  return %dw : tensor<2x8x16xf32>
}

// -----

func.func @negative_matmul_bias_grad_length(%x: tensor<8x8xbf16>, %dy: tensor<8x16xbf16>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'mt.matmul_bias_grad' op bias_grad dimension 0 is 8 but rhs dimension 1 is 16}}
  %dw, %db = mt.matmul_bias_grad %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> (tensor<8x16xf32>, tensor<8xf32>)
  return %dw : tensor<8x16xf32>
}

// -----

// An accumulator is f32, of the result's type.

func.func @negative_embedding_grad_accumulator(%dx: tensor<2x8x16xf32>, %ids: tensor<2x8xi32>, %acc: tensor<32x16xf32>) -> tensor<64x16xf32> {
  // expected-error @+1 {{'mt.embedding_grad' op accumulates into an f32 tensor of the result's type: the accumulator is 'tensor<32x16xf32>' and the result 'tensor<64x16xf32>'}}
  %d = mt.embedding_grad %dx, %ids accumulate(%acc) : (tensor<2x8x16xf32>, tensor<2x8xi32>, tensor<32x16xf32>) -> tensor<64x16xf32>
  return %d : tensor<64x16xf32>
}

// -----


func.func @negative_matmul_accumulator_type(%x: tensor<8x8xbf16>, %dy: tensor<8x16xbf16>, %acc: tensor<8x16xbf16>) -> tensor<8x16xbf16> {
  // expected-error @+1 {{'mt.matmul' op accumulates into an f32 tensor of the result's type: the accumulator is 'tensor<8x16xbf16>' and the result 'tensor<8x16xbf16>'}}
  %dw = mt.matmul %x, %dy transpose_a accumulate(%acc) : (tensor<8x8xbf16>, tensor<8x16xbf16>, tensor<8x16xbf16>) -> tensor<8x16xbf16>
  return %dw : tensor<8x16xbf16>
}

// -----

func.func @negative_matmul_bias_grad_accumulator_shape(%x: tensor<8x8xbf16>, %dy: tensor<8x16xbf16>, %acc: tensor<16x8xf32>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'mt.matmul_bias_grad' op accumulates into an f32 tensor of the result's type: the accumulator is 'tensor<16x8xf32>' and the result 'tensor<8x16xf32>'}}
  %dw, %db = mt.matmul_bias_grad %x, %dy transpose_a accumulate(%acc) : (tensor<8x8xbf16>, tensor<8x16xbf16>, tensor<16x8xf32>) -> (tensor<8x16xf32>, tensor<16xf32>)
  return %dw : tensor<8x16xf32>
}

// -----

func.func @negative_matmul_bias_grad_type(%x: tensor<8x8xbf16>, %dy: tensor<8x16xbf16>) -> tensor<8x16xf32> {
  // expected-error @+1 {{'mt.matmul_bias_grad' op bias_grad element type 'bf16' does not match result element type 'f32'}}
  %dw, %db = mt.matmul_bias_grad %x, %dy transpose_a : (tensor<8x8xbf16>, tensor<8x16xbf16>) -> (tensor<8x16xf32>, tensor<16xbf16>)
  return %dw : tensor<8x16xf32>
}

// -----

// The product's shapes are a matmul's.

func.func @negative_matmul_bias_contraction(%x: tensor<2x4x8xf32>, %w: tensor<6x16xf32>, %b: tensor<16xf32>) -> tensor<2x4x16xf32> {
  // expected-error @+1 {{'mt.matmul_bias' op contraction dimensions differ: lhs dimension 2 is 8 but rhs dimension 0 is 6}}
  %y = mt.matmul_bias %x, %w, %b : (tensor<2x4x8xf32>, tensor<6x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  return %y : tensor<2x4x16xf32>
}

// -----

// mt.merged_attention's result is its queries' heads merged, its stats
// [batch, heads, seq].

func.func @negative_merged_attention_result(%q: tensor<2x4x8x4xf32>) -> tensor<2x8x12xf32> {
  // expected-error @+1 {{'mt.merged_attention' op result is 'tensor<2x8x12xf32>' but queries of shape 'tensor<2x4x8x4xf32>' merge into [batch, seq, heads * head_dim] = [2, 8, 16]}}
  %a, %s = mt.merged_attention %q, %q, %q : tensor<2x4x8x4xf32> -> tensor<2x8x12xf32>, tensor<2x4x8xf32>
  return %a : tensor<2x8x12xf32>
}

// -----

func.func @negative_merged_attention_stats(%q: tensor<2x4x8x4xf32>) -> tensor<2x8x16xf32> {
  // expected-error @+1 {{'mt.merged_attention' op stats is 'tensor<2x8x4xf32>' but the queries' [batch, heads, seq] is [2, 4, 8]}}
  %a, %s = mt.merged_attention %q, %q, %q : tensor<2x4x8x4xf32> -> tensor<2x8x16xf32>, tensor<2x8x4xf32>
  return %a : tensor<2x8x16xf32>
}

// -----

// The runtime fills each input role once: a second argument of the role
// was read uninitialized (or overwritten).

// expected-error @below {{'func.func' op arguments #0 and #2 are both input 'tokens'}}
func.func private @negative_input_role_twice(tensor<2x8xi32> {mt.input = "tokens"}, tensor<2x8xi32> {mt.input = "labels"}, tensor<2x8xi32> {mt.input = "tokens"})

// -----

// expected-error @below {{'func.func' op arguments #0 and #1 are both input 'tokens'}}
func.func private @negative_input_role_twice_same_microbatch(tensor<2x8xi32> {mt.input = "tokens", mt.microbatch = 1 : i64}, tensor<2x8xi32> {mt.input = "tokens", mt.microbatch = 1 : i64})

// -----

// expected-error @below {{'func.func' op argument #1 is both input 'lr' and parameter 'w'}}
func.func private @negative_input_and_parameter(tensor<2x8xi32> {mt.input = "tokens"}, tensor<f32> {mt.input = "lr", mt.param = "w"})

// -----

//===----------------------------------------------------------------------===//
// Mixture of experts
//===----------------------------------------------------------------------===//

// The router chooses at most every expert.

func.func @negative_top_k_gating_k(%logits: tensor<2x4x3xf32>) -> tensor<2x4x4xf32> {
  // expected-error @+1 {{'mt.top_k_gating' op k must be between 1 and the number of experts 3, got 4}}
  %w, %e = mt.top_k_gating %logits {k = 4 : i64} : tensor<2x4x3xf32> -> tensor<2x4x4xf32>, tensor<2x4x4xi32>
  return %w : tensor<2x4x4xf32>
}

// -----

func.func @negative_top_k_gating_tokens(%logits: tensor<2x4x3xf32>) -> tensor<2x5x2xf32> {
  // expected-error @+1 {{'mt.top_k_gating' op weights must be [2x4x2] (the tokens of logits, then 2), got 'tensor<2x5x2xf32>'}}
  %w, %e = mt.top_k_gating %logits {k = 2 : i64} : tensor<2x4x3xf32> -> tensor<2x5x2xf32>, tensor<2x4x2xi32>
  return %w : tensor<2x5x2xf32>
}

// -----

func.func @negative_top_k_gating_rank(%logits: tensor<3xf32>) -> tensor<2xf32> {
  // expected-error @+1 {{'mt.top_k_gating' op logits must have rank 2 or more ([tokens..., features]), got 'tensor<3xf32>'}}
  %w, %e = mt.top_k_gating %logits {k = 2 : i64} : tensor<3xf32> -> tensor<2xf32>, tensor<2xi32>
  return %w : tensor<2xf32>
}

// -----

// The choice is an i32 routing.

func.func @negative_top_k_gating_experts_type(%logits: tensor<2x4x3xf32>) -> tensor<2x4x2xf32> {
  // expected-error @+1 {{'mt.top_k_gating' op result #1 must be statically shaped tensor of 32-bit signless integer values, but got 'tensor<2x4x2xf32>'}}
  %w, %e = mt.top_k_gating %logits {k = 2 : i64} : tensor<2x4x3xf32> -> tensor<2x4x2xf32>, tensor<2x4x2xf32>
  return %w : tensor<2x4x2xf32>
}

// -----

func.func @negative_top_k_gating_grad_logits(%dw: tensor<2x4x2xf32>, %w: tensor<2x4x2xf32>, %e: tensor<2x4x2xi32>, %l: tensor<2x4x4xf32>) -> tensor<2x4x3xf32> {
  // expected-error @+1 {{'mt.top_k_gating_grad' op logits must have grad_logits' type 'tensor<2x4x3xf32>', got 'tensor<2x4x4xf32>'}}
  %d = mt.top_k_gating_grad %dw, %w, %e logits(%l : tensor<2x4x4xf32>) {num_experts = 3 : i64} : tensor<2x4x2xf32>, tensor<2x4x2xi32> -> tensor<2x4x3xf32>
  return %d : tensor<2x4x3xf32>
}

// -----

func.func @negative_top_k_gating_grad_experts(%dw: tensor<2x4x2xf32>, %w: tensor<2x4x2xf32>, %e: tensor<2x4x2xi32>) -> tensor<2x4x1xf32> {
  // expected-error @+1 {{'mt.top_k_gating_grad' op num_experts must be at least k = 2, got 1}}
  %d = mt.top_k_gating_grad %dw, %w, %e {num_experts = 1 : i64} : tensor<2x4x2xf32>, tensor<2x4x2xi32> -> tensor<2x4x1xf32>
  return %d : tensor<2x4x1xf32>
}

// -----

func.func @negative_router_statistics_tokens(%l: tensor<2x4x3xf32>, %e: tensor<2x3x2xi32>) -> tensor<3xf32> {
  // expected-error @+1 {{'mt.router_statistics' op experts 'tensor<2x3x2xi32>' must have the tokens of logits 'tensor<2x4x3xf32>'}}
  %load, %p = mt.router_statistics %l, %e : tensor<2x4x3xf32>, tensor<2x3x2xi32> -> tensor<3xf32>, tensor<3xf32>
  return %load : tensor<3xf32>
}

// -----

func.func @negative_router_statistics_k(%l: tensor<8x3xf32>, %e: tensor<8x4xi32>) -> tensor<3xf32> {
  // expected-error @+1 {{'mt.router_statistics' op experts choose 4 of 3 experts per token}}
  %load, %p = mt.router_statistics %l, %e : tensor<8x3xf32>, tensor<8x4xi32> -> tensor<3xf32>, tensor<3xf32>
  return %load : tensor<3xf32>
}

// -----

func.func @negative_router_statistics_per_expert(%l: tensor<8x3xf32>, %e: tensor<8x2xi32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.router_statistics' op probability must be [3] (one per expert), got 'tensor<4xf32>'}}
  %load, %p = mt.router_statistics %l, %e : tensor<8x3xf32>, tensor<8x2xi32> -> tensor<3xf32>, tensor<4xf32>
  return %p : tensor<4xf32>
}

// -----

func.func @negative_router_statistics_type(%l: tensor<8x3xf32>, %e: tensor<8x2xi32>) -> tensor<3xbf16> {
  // expected-error @+1 {{'mt.router_statistics' op load element type 'bf16' does not match logits element type 'f32'}}
  %load, %p = mt.router_statistics %l, %e : tensor<8x3xf32>, tensor<8x2xi32> -> tensor<3xbf16>, tensor<3xf32>
  return %load : tensor<3xbf16>
}

// -----

func.func @negative_router_probability_grad(%dp: tensor<3xf32>, %l: tensor<8x3xf32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'mt.router_probability_grad' op grad_logits must have the logits' type 'tensor<8x3xf32>', got 'tensor<8x4xf32>'}}
  %d = mt.router_probability_grad %dp, %l : tensor<3xf32>, tensor<8x3xf32> -> tensor<8x4xf32>
  return %d : tensor<8x4xf32>
}

// -----

func.func @negative_router_z_loss_coefficient(%l: tensor<8x3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'mt.router_z_loss' op coefficient must be positive and finite, got 0.000000e+00}}
  %z = mt.router_z_loss %l {coefficient = 0.0 : f64} : tensor<8x3xf32>
  return %z : tensor<f32>
}

// -----

func.func @negative_router_z_loss_rank(%l: tensor<3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'mt.router_z_loss' op logits must have rank 2 or more ([tokens..., features]), got 'tensor<3xf32>'}}
  %z = mt.router_z_loss %l {coefficient = 1.0e-03 : f64} : tensor<3xf32>
  return %z : tensor<f32>
}

// -----

func.func @negative_router_z_loss_grad_coefficient(%s: tensor<f32>, %l: tensor<8x3xf32>) -> tensor<8x3xf32> {
  // expected-error @+1 {{'mt.router_z_loss_grad' op coefficient must be positive and finite, got INF}}
  %d = mt.router_z_loss_grad %s, %l {coefficient = 0x7FF0000000000000 : f64} : tensor<8x3xf32>
  return %d : tensor<8x3xf32>
}

// -----

func.func @negative_load_balancing_loss_counts(%l: tensor<3xf32>, %p: tensor<3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'mt.load_balancing_loss' op has 2 loads but 1 probabilities (one of each per router)}}
  %aux = mt.load_balancing_loss loads(%l, %l : tensor<3xf32>, tensor<3xf32>) probabilities(%p : tensor<3xf32>) {coefficient = 1.0e-02 : f64}
  return %aux : tensor<f32>
}

// -----

func.func @negative_load_balancing_loss_experts(%l: tensor<3xf32>, %m: tensor<4xf32>, %p: tensor<3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'mt.load_balancing_loss' op loads #1 has type 'tensor<4xf32>', expected 'tensor<3xf32>' as #0}}
  %aux = mt.load_balancing_loss loads(%l, %m : tensor<3xf32>, tensor<4xf32>) probabilities(%p, %p : tensor<3xf32>, tensor<3xf32>) {coefficient = 1.0e-02 : f64}
  return %aux : tensor<f32>
}

// -----

func.func @negative_load_balancing_loss_types(%l: tensor<3xf32>, %p: tensor<3xbf16>) -> tensor<f32> {
  // expected-error @+1 {{'mt.load_balancing_loss' op probabilities have type 'tensor<3xbf16>' but loads 'tensor<3xf32>'}}
  %aux = mt.load_balancing_loss loads(%l : tensor<3xf32>) probabilities(%p : tensor<3xbf16>) {coefficient = 1.0e-02 : f64}
  return %aux : tensor<f32>
}

// -----

func.func @negative_load_balancing_loss_coefficient(%l: tensor<3xf32>, %p: tensor<3xf32>) -> tensor<f32> {
  // expected-error @+1 {{'mt.load_balancing_loss' op coefficient must be positive and finite, got -1.000000e+00}}
  %aux = mt.load_balancing_loss loads(%l : tensor<3xf32>) probabilities(%p : tensor<3xf32>) {coefficient = -1.0 : f64}
  return %aux : tensor<f32>
}

// -----

func.func @negative_load_balancing_loss_empty() -> tensor<f32> {
  // expected-error @+1 {{'mt.load_balancing_loss' op needs the loads of one router or more}}
  %aux = "mt.load_balancing_loss"() {coefficient = 1.0e-02 : f64, operandSegmentSizes = array<i32: 0, 0>} : () -> tensor<f32>
  return %aux : tensor<f32>
}

// -----

func.func @negative_load_balancing_loss_grad(%g: tensor<f32>, %l: tensor<3xf32>) -> tensor<3xbf16> {
  // expected-error @+1 {{'mt.load_balancing_loss_grad' op grad_probability must have the loads' type 'tensor<3xf32>', got 'tensor<3xbf16>'}}
  %d = mt.load_balancing_loss_grad %g, %l {coefficient = 1.0e-02 : f64} : tensor<3xf32> -> tensor<3xbf16>
  return %d : tensor<3xbf16>
}

// -----

func.func @negative_moe_route_offsets(%e: tensor<2x4x2xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{'mt.moe_route' op offsets must be [4] (where each of 3 experts' rows begin, then the end), got 'tensor<3xi32>'}}
  %pos, %offsets = mt.moe_route %e {num_experts = 3 : i64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<3xi32>
  return %offsets : tensor<3xi32>
}

// -----

func.func @negative_moe_route_experts(%e: tensor<2x4x2xi32>) -> tensor<1xi32> {
  // expected-error @+1 {{'mt.moe_route' op num_experts must be positive, got 0}}
  %pos, %offsets = mt.moe_route %e {num_experts = 0 : i64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<1xi32>
  return %offsets : tensor<1xi32>
}

// -----

// Expert ids are i32; INT64_MAX experts overflowed the offsets' expected
// size in this message.
func.func @negative_moe_route_too_many_experts(%e: tensor<2x4x2xi32>) -> tensor<3xi32> {
  // expected-error @+1 {{'mt.moe_route' op num_experts must be at most 2147483647 (expert ids are i32), got 9223372036854775807}}
  %pos, %offsets = mt.moe_route %e {num_experts = 9223372036854775807 : i64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<3xi32>
  return %offsets : tensor<3xi32>
}

// -----

// A capacity (token dropping): a positive finite factor; weights rank the
// choices a full expert keeps, so only a capacity reads them.
func.func @negative_moe_route_capacity_factor(%e: tensor<2x4x2xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{'mt.moe_route' op capacity_factor must be positive and finite, got 0}}
  %pos, %offsets = mt.moe_route %e {num_experts = 3 : i64, capacity_factor = 0.0 : f64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
  return %offsets : tensor<4xi32>
}

// -----

func.func @negative_moe_route_weights_without_capacity(%e: tensor<2x4x2xi32>, %w: tensor<2x4x2xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{'mt.moe_route' op takes weights only with a capacity_factor (they choose the choices a full expert keeps)}}
  %pos, %offsets = mt.moe_route %e weights(%w : tensor<2x4x2xf32>) {num_experts = 3 : i64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
  return %offsets : tensor<4xi32>
}

// -----

func.func @negative_moe_route_weights_shape(%e: tensor<2x4x2xi32>, %w: tensor<2x4x1xf32>) -> tensor<4xi32> {
  // expected-error @+1 {{'mt.moe_route' op weights must have the experts' shape 'tensor<2x4x2xi32>', got 'tensor<2x4x1xf32>'}}
  %pos, %offsets = mt.moe_route %e weights(%w : tensor<2x4x1xf32>) {num_experts = 3 : i64, capacity_factor = 1.0 : f64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
  return %offsets : tensor<4xi32>
}

// -----

// A capacity's rows: each of 3 experts ceil(16 / 3 * 0.5) = 3.
func.func @negative_moe_permute_capacity_rows(%x: tensor<2x4x8xf32>, %pos: tensor<2x4x2xi32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{'mt.moe_permute' op rows must be [9x8] (3 experts of capacity 3 for positions 'tensor<2x4x2xi32>' at capacity factor 5.000000e-01), got 'tensor<16x8xf32>'}}
  %rows = mt.moe_permute %x, %pos {capacity_factor = 0.5 : f64, num_experts = 3 : i64} : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<16x8xf32>
  return %rows : tensor<16x8xf32>
}

// -----

// The permutation's capacity is its route's.
func.func @negative_moe_permute_capacity_of_route(%x: tensor<2x4x8xf32>, %e: tensor<2x4x2xi32>) -> tensor<9x8xf32> {
  %pos, %offsets = mt.moe_route %e {num_experts = 3 : i64, capacity_factor = 1.0 : f64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
  // expected-error @+1 {{'mt.moe_permute' op must have the capacity of the mt.moe_route of its positions (capacity_factor and num_experts)}}
  %rows = mt.moe_permute %x, %pos {capacity_factor = 0.5 : f64, num_experts = 3 : i64} : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<9x8xf32>
  return %rows : tensor<9x8xf32>
}

// -----

func.func @negative_moe_unpermute_dropless_of_capacity(%rows: tensor<16x8xf32>, %e: tensor<2x4x2xi32>) -> tensor<2x4x8xf32> {
  %pos, %offsets = mt.moe_route %e {num_experts = 2 : i64, capacity_factor = 1.0 : f64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<3xi32>
  // expected-error @+1 {{'mt.moe_unpermute' op must have the capacity of the mt.moe_route of its positions (capacity_factor and num_experts)}}
  %y = mt.moe_unpermute %rows, %pos : tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

func.func @negative_moe_unpermute_capacity_alone(%rows: tensor<16x8xf32>, %pos: tensor<2x4x2xi32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'mt.moe_unpermute' op needs capacity_factor and num_experts together, got only capacity_factor}}
  %y = mt.moe_unpermute %rows, %pos {capacity_factor = 1.0 : f64} : tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

func.func @negative_moe_weights_grad_capacity_experts(%dy: tensor<2x4x8xf32>, %rows: tensor<16x8xf32>, %pos: tensor<2x4x2xi32>) -> tensor<2x4x2xf32> {
  // expected-error @+1 {{'mt.moe_weights_grad' op num_experts must be in [1, 2147483647], got 0}}
  %dw = mt.moe_weights_grad %dy, %rows, %pos {capacity_factor = 1.0 : f64, num_experts = 0 : i64} : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x2xf32>
  return %dw : tensor<2x4x2xf32>
}

// -----

// A row per token and choice.

func.func @negative_moe_permute_rows(%x: tensor<2x4x8xf32>, %pos: tensor<2x4x2xi32>) -> tensor<8x8xf32> {
  // expected-error @+1 {{'mt.moe_permute' op rows must be [16x8] (a row per token and choice of positions 'tensor<2x4x2xi32>'), got 'tensor<8x8xf32>'}}
  %rows = mt.moe_permute %x, %pos : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<8x8xf32>
  return %rows : tensor<8x8xf32>
}

// -----

func.func @negative_moe_permute_tokens(%x: tensor<2x4x8xf32>, %pos: tensor<4x2x2xi32>) -> tensor<16x8xf32> {
  // expected-error @+1 {{'mt.moe_permute' op positions 'tensor<4x2x2xi32>' must have the tokens of input 'tensor<2x4x8xf32>'}}
  %rows = mt.moe_permute %x, %pos : tensor<2x4x8xf32>, tensor<4x2x2xi32> -> tensor<16x8xf32>
  return %rows : tensor<16x8xf32>
}

// -----

func.func @negative_moe_unpermute_weights(%rows: tensor<16x8xf32>, %pos: tensor<2x4x2xi32>, %w: tensor<2x4x1xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'mt.moe_unpermute' op weights must have the positions' shape, got 'tensor<2x4x1xf32>' and 'tensor<2x4x2xi32>'}}
  %y = mt.moe_unpermute %rows, %pos weights(%w : tensor<2x4x1xf32>) : tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

func.func @negative_sigmoid_gate_rank(%x: tensor<8xf32>, %g: tensor<1xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'mt.sigmoid_gate' op input must have rank 2 or more ([tokens..., features]), got 'tensor<8xf32>'}}
  %y = mt.sigmoid_gate %x, %g : tensor<8xf32>, tensor<1xf32>
  return %y : tensor<8xf32>
}

// -----

func.func @negative_sigmoid_gate_width(%x: tensor<2x4x8xf32>, %g: tensor<2x4x2xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'mt.sigmoid_gate' op gate must be [2x4x1] (the tokens of input, then 1), got 'tensor<2x4x2xf32>'}}
  %y = mt.sigmoid_gate %x, %g : tensor<2x4x8xf32>, tensor<2x4x2xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

func.func @negative_sigmoid_gate_tokens(%x: tensor<2x4x8xf32>, %g: tensor<2x3x1xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'mt.sigmoid_gate' op gate must be [2x4x1] (the tokens of input, then 1), got 'tensor<2x3x1xf32>'}}
  %y = mt.sigmoid_gate %x, %g : tensor<2x4x8xf32>, tensor<2x3x1xf32>
  return %y : tensor<2x4x8xf32>
}

// -----

func.func @negative_sigmoid_gate_type(%x: tensor<2x4x8xbf16>, %g: tensor<2x4x1xf32>) -> tensor<2x4x8xbf16> {
  // expected-error @+1 {{'mt.sigmoid_gate' op gate element type 'f32' does not match input element type 'bf16'}}
  %y = mt.sigmoid_gate %x, %g : tensor<2x4x8xbf16>, tensor<2x4x1xf32>
  return %y : tensor<2x4x8xbf16>
}

// -----

func.func @negative_sigmoid_gate_grad_gate(%dy: tensor<2x4x8xf32>, %x: tensor<2x4x8xf32>, %g: tensor<2x4xf32>) -> tensor<2x4x8xf32> {
  // expected-error @+1 {{'mt.sigmoid_gate_grad' op gate must be [2x4x1] (the tokens of input, then 1), got 'tensor<2x4xf32>'}}
  %dx, %dg = mt.sigmoid_gate_grad %dy, %x, %g : tensor<2x4x8xf32>, tensor<2x4xf32>
  return %dx : tensor<2x4x8xf32>
}

// -----

func.func @negative_moe_weights_grad_type(%dy: tensor<2x4x8xf32>, %rows: tensor<16x8xbf16>, %pos: tensor<2x4x2xi32>) -> tensor<2x4x2xf32> {
  // expected-error @+1 {{'mt.moe_weights_grad' op rows element type 'bf16' does not match grad_output element type 'f32'}}
  %dw = mt.moe_weights_grad %dy, %rows, %pos : tensor<2x4x8xf32>, tensor<16x8xbf16>, tensor<2x4x2xi32> -> tensor<2x4x2xf32>
  return %dw : tensor<2x4x2xf32>
}

// -----

// One weight per expert, each [n, k] with transpose_b.

func.func @negative_grouped_matmul_offsets(%rows: tensor<16x8xf32>, %offsets: tensor<3xi32>, %w0: tensor<6x8xf32>, %w1: tensor<6x8xf32>, %w2: tensor<6x8xf32>) -> tensor<16x6xf32> {
  // expected-error @+1 {{'mt.grouped_matmul' op offsets must be [4] for 3 experts, got 'tensor<3xi32>'}}
  %h = mt.grouped_matmul %rows, %offsets, %w0, %w1, %w2 transpose_b : (tensor<16x8xf32>, tensor<3xi32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<16x6xf32>
  return %h : tensor<16x6xf32>
}

// -----

func.func @negative_grouped_matmul_weight(%rows: tensor<16x8xf32>, %offsets: tensor<3xi32>, %w0: tensor<6x8xf32>, %w1: tensor<8x6xf32>) -> tensor<16x6xf32> {
  // expected-error @+1 {{'mt.grouped_matmul' op weight 1 must be [6x8] (transpose_b), got 'tensor<8x6xf32>'}}
  %h = mt.grouped_matmul %rows, %offsets, %w0, %w1 transpose_b : (tensor<16x8xf32>, tensor<3xi32>, tensor<6x8xf32>, tensor<8x6xf32>) -> tensor<16x6xf32>
  return %h : tensor<16x6xf32>
}

// -----

func.func @negative_grouped_matmul_no_weights(%rows: tensor<16x8xf32>, %offsets: tensor<1xi32>) -> tensor<16x6xf32> {
  // expected-error @+1 {{'mt.grouped_matmul' op needs one weight per expert, got none}}
  %h = mt.grouped_matmul %rows, %offsets, transpose_b : (tensor<16x8xf32>, tensor<1xi32>) -> tensor<16x6xf32>
  return %h : tensor<16x6xf32>
}

// -----

func.func @negative_grouped_matmul_rows(%rows: tensor<16x8xf32>, %offsets: tensor<2xi32>, %w0: tensor<6x8xf32>) -> tensor<12x6xf32> {
  // expected-error @+1 {{'mt.grouped_matmul' op result dimension 0 is 12 but input dimension 0 is 16}}
  %h = mt.grouped_matmul %rows, %offsets, %w0 transpose_b : (tensor<16x8xf32>, tensor<2xi32>, tensor<6x8xf32>) -> tensor<12x6xf32>
  return %h : tensor<12x6xf32>
}

// -----

func.func @negative_grouped_matmul_weight_grad_shape(%dy: tensor<16x6xf32>, %rows: tensor<16x8xf32>, %offsets: tensor<2xi32>) -> tensor<8x6xf32> {
  // expected-error @+1 {{'mt.grouped_matmul_weight_grad' op grad_weight 0 must be [6x8] (transpose_b), got 'tensor<8x6xf32>'}}
  %dw = mt.grouped_matmul_weight_grad %dy, %rows, %offsets transpose_b : (tensor<16x6xf32>, tensor<16x8xf32>, tensor<2xi32>) -> tensor<8x6xf32>
  return %dw : tensor<8x6xf32>
}

// -----

// Expert parallelism's exchanges: every rank's rows may arrive.
func.func @negative_expert_dispatch_received(%rows: tensor<8x4xf32>, %offsets: tensor<5xi32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'mt.expert_dispatch' op the rows received must be [2 x 8, 4] (every row of 2 ranks), got 'tensor<8x4xf32>'}}
  %r, %lo, %c = mt.expert_dispatch %rows, %offsets {grid = @grid, grid_axis = 0 : i64} : tensor<8x4xf32>, tensor<5xi32> -> tensor<8x4xf32>, tensor<3xi32>, tensor<2x2xi32>
  return %r : tensor<8x4xf32>
}

// -----

// A capacity's exchange receives as many rows as it sends: its experts'
// capacity from each rank.
func.func @negative_expert_dispatch_capacity_received(%rows: tensor<8x4xf32>, %offsets: tensor<5xi32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'mt.expert_dispatch' op the rows received must be as many as the rows sent 'tensor<8x4xf32>' (capacity_bounded: 2 local experts' capacity from each of 2 ranks), got 'tensor<16x4xf32>'}}
  %r, %lo, %c = mt.expert_dispatch %rows, %offsets {grid = @grid, grid_axis = 0 : i64, capacity_bounded} : tensor<8x4xf32>, tensor<5xi32> -> tensor<16x4xf32>, tensor<3xi32>, tensor<2x2xi32>
  return %r : tensor<16x4xf32>
}

// -----

func.func @negative_expert_combine_capacity_rows(%r: tensor<6x4xf32>, %c: tensor<2x2xi32>, %offsets: tensor<5xi32>) -> tensor<6x4xf32> {
  // expected-error @+1 {{'mt.expert_combine' op capacity_bounded rows must be the 4 experts' capacity rows, got 'tensor<6x4xf32>'}}
  %rows = mt.expert_combine %r, %c, %offsets {grid = @grid, grid_axis = 0 : i64, capacity_bounded} : tensor<6x4xf32>, tensor<2x2xi32>, tensor<5xi32> -> tensor<6x4xf32>
  return %rows : tensor<6x4xf32>
}

// -----

func.func @negative_expert_dispatch_offsets(%rows: tensor<8x4xf32>, %offsets: tensor<4xi32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'mt.expert_dispatch' op offsets must be [5] for 4 experts, got 'tensor<4xi32>'}}
  %r, %lo, %c = mt.expert_dispatch %rows, %offsets {grid = @grid, grid_axis = 0 : i64} : tensor<8x4xf32>, tensor<4xi32> -> tensor<16x4xf32>, tensor<3xi32>, tensor<2x2xi32>
  return %r : tensor<16x4xf32>
}

// -----

func.func @negative_expert_dispatch_local_offsets(%rows: tensor<8x4xf32>, %offsets: tensor<5xi32>) -> tensor<16x4xf32> {
  // expected-error @+1 {{'mt.expert_dispatch' op local_offsets must be [3] for 2 local experts, got 'tensor<5xi32>'}}
  %r, %lo, %c = mt.expert_dispatch %rows, %offsets {grid = @grid, grid_axis = 0 : i64} : tensor<8x4xf32>, tensor<5xi32> -> tensor<16x4xf32>, tensor<5xi32>, tensor<2x2xi32>
  return %r : tensor<16x4xf32>
}

// -----

func.func @negative_expert_combine_counts(%received: tensor<16x4xf32>, %counts: tensor<4xi32>, %offsets: tensor<5xi32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'mt.expert_combine' op counts must be [ranks, local experts], got 'tensor<4xi32>'}}
  %rows = mt.expert_combine %received, %counts, %offsets {grid = @grid, grid_axis = 0 : i64} : tensor<16x4xf32>, tensor<4xi32>, tensor<5xi32> -> tensor<8x4xf32>
  return %rows : tensor<8x4xf32>
}

// -----

func.func @negative_expert_combine_axis(%received: tensor<16x4xf32>, %counts: tensor<2x2xi32>, %offsets: tensor<5xi32>) -> tensor<8x4xf32> {
  // expected-error @+1 {{'mt.expert_combine' op grid_axis must be non-negative, got -1}}
  %rows = mt.expert_combine %received, %counts, %offsets {grid = @grid, grid_axis = -1 : i64} : tensor<16x4xf32>, tensor<2x2xi32>, tensor<5xi32> -> tensor<8x4xf32>
  return %rows : tensor<8x4xf32>
}

// -----

// A parameter held per rank names each rank's expert, beside its axis.
// expected-error @+1 {{'func.func' op argument #0: 'mt.expert_names' needs 'mt.param' and 'mt.expert_axis' beside it}}
func.func @negative_expert_names_alone(%w: tensor<4x4xf32> {mt.param = "e0", mt.expert_names = ["e0", "e1"]}) {
  return
}

// -----

// expected-error @+1 {{'func.func' op argument #0: 'mt.expert_names' must be a non-empty array of parameter names, got ["e0", 1]}}
func.func @negative_expert_names_not_names(%w: tensor<4x4xf32> {mt.param = "e0", mt.expert_axis = 0 : i64, mt.expert_names = ["e0", 1]}) {
  return
}

// -----

func.func @negative_strided_all_reduce_stride(%g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'mt.strided_all_reduce' op stride must be positive, got 0}}
  %r = mt.strided_all_reduce %g {grid = @grid, grid_axis = 0 : i64, stride = 0 : i64} : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @negative_strided_all_reduce_axis(%g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'mt.strided_all_reduce' op grid_axis must be non-negative, got -1}}
  %r = mt.strided_all_reduce %g {grid = @grid, grid_axis = -1 : i64, stride = 2 : i64} : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @negative_strided_all_reduce_negative_stride(%g: tensor<4x4xf32>) -> tensor<4x4xf32> {
  // expected-error @+1 {{'mt.strided_all_reduce' op stride must be positive, got -2}}
  %r = mt.strided_all_reduce %g {grid = @grid, grid_axis = 0 : i64, stride = -2 : i64} : tensor<4x4xf32>
  return %r : tensor<4x4xf32>
}

// -----

func.func @negative_strided_reduce_scatter_not_flat(%g: tensor<4x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'mt.strided_reduce_scatter' op takes and gives flat (1-D) tensors, got 'tensor<4x4xf32>' and 'tensor<2x4xf32>'}}
  %r = mt.strided_reduce_scatter %g {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<4x4xf32> -> tensor<2x4xf32>
  return %r : tensor<2x4xf32>
}

// -----

func.func @negative_strided_reduce_scatter_pieces(%g: tensor<10xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.strided_reduce_scatter' op the whole 'tensor<10xf32>' is not a whole number of pieces 'tensor<4xf32>'}}
  %r = mt.strided_reduce_scatter %g {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<10xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @negative_strided_all_gather_type(%p: tensor<4xf32>) -> tensor<8xbf16> {
  // expected-error @+1 {{'mt.strided_all_gather' op the whole 'tensor<8xbf16>' and the piece 'tensor<4xf32>' differ in element type}}
  %r = mt.strided_all_gather %p {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<4xf32> -> tensor<8xbf16>
  return %r : tensor<8xbf16>
}

// -----

func.func @negative_strided_all_gather_smaller(%p: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.strided_all_gather' op the whole 'tensor<4xf32>' is not a whole number of pieces 'tensor<8xf32>'}}
  %r = mt.strided_all_gather %p {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @negative_strided_all_slice_stride(%p: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.strided_all_slice' op stride must be positive, got 0}}
  %r = mt.strided_all_slice %p {grid = @grid, grid_axis = 0 : i64, stride = 0 : i64} : tensor<8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}

// -----

func.func @negative_strided_all_slice_axis(%p: tensor<8xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{'mt.strided_all_slice' op grid_axis must be non-negative, got -1}}
  %r = mt.strided_all_slice %p {grid = @grid, grid_axis = -1 : i64, stride = 2 : i64} : tensor<8xf32> -> tensor<4xf32>
  return %r : tensor<4xf32>
}
