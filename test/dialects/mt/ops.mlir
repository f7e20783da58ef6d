// RUN: megatron-opt %s --split-input-file | megatron-opt --split-input-file | FileCheck %s
// RUN: megatron-opt %s --split-input-file --mlir-print-op-generic | megatron-opt --split-input-file | FileCheck %s

// Every mt op prints in its custom form and parses back unchanged, from the
// custom form and from the generic form.

// mt.embedding gathers rows of an f32 table with i32 ids.

// CHECK-LABEL: func.func @embedding
// CHECK-SAME:    %[[TABLE:.+]]: tensor<64x16xf32>, %[[IDS:.+]]: tensor<2x8xi32>
// CHECK:         %[[X:.+]] = mt.embedding %[[TABLE]], %[[IDS]] : (tensor<64x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
// CHECK:         return %[[X]]
func.func @embedding(%table: tensor<64x16xf32>, %ids: tensor<2x8xi32>) -> tensor<2x8x16xf32> {
  %x = mt.embedding %table, %ids : (tensor<64x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  return %x : tensor<2x8x16xf32>
}

// -----

// mt.embedding accepts a bf16 table and i64 ids of any rank.

// CHECK-LABEL: func.func @embedding_bf16_i64
// CHECK-SAME:    %[[TABLE:.+]]: tensor<64x16xbf16>, %[[IDS:.+]]: tensor<8xi64>
// CHECK:         mt.embedding %[[TABLE]], %[[IDS]] : (tensor<64x16xbf16>, tensor<8xi64>) -> tensor<8x16xbf16>
func.func @embedding_bf16_i64(%table: tensor<64x16xbf16>, %ids: tensor<8xi64>) -> tensor<8x16xbf16> {
  %x = mt.embedding %table, %ids : (tensor<64x16xbf16>, tensor<8xi64>) -> tensor<8x16xbf16>
  return %x : tensor<8x16xbf16>
}

// -----

// mt.position_embedding takes the first rows of the table.

// CHECK-LABEL: func.func @position_embedding
// CHECK-SAME:    %[[TABLE:.+]]: tensor<32x16xf32>
// CHECK:         mt.position_embedding %[[TABLE]] : tensor<32x16xf32> -> tensor<8x16xf32>
func.func @position_embedding(%table: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %pos = mt.position_embedding %table : tensor<32x16xf32> -> tensor<8x16xf32>
  return %pos : tensor<8x16xf32>
}

// -----

// mt.layer_norm without an epsilon uses the default, which is not printed.

// CHECK-LABEL: func.func @layer_norm_default_epsilon
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x16xf32>, %[[W:[^:]+]]: tensor<16xf32>, %[[B:[^:]+]]: tensor<16xf32>
// CHECK:         mt.layer_norm %[[X]], %[[W]], %[[B]] : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK-NOT:     epsilon
func.func @layer_norm_default_epsilon(%x: tensor<2x8x16xf32>, %w: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x8x16xf32> {
  %y = mt.layer_norm %x, %w, %b : tensor<2x8x16xf32>, tensor<16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// mt.layer_norm keeps an explicit epsilon other than the default.

// CHECK-LABEL: func.func @layer_norm_epsilon
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x16xf16>, %[[W:[^:]+]]: tensor<16xf16>, %[[B:[^:]+]]: tensor<16xf16>
// CHECK:         mt.layer_norm %[[X]], %[[W]], %[[B]] {epsilon = 1.000000e-03 : f64} : tensor<2x8x16xf16>, tensor<16xf16>
func.func @layer_norm_epsilon(%x: tensor<2x8x16xf16>, %w: tensor<16xf16>, %b: tensor<16xf16>) -> tensor<2x8x16xf16> {
  %y = mt.layer_norm %x, %w, %b {epsilon = 1.0e-03 : f64} : tensor<2x8x16xf16>, tensor<16xf16>
  return %y : tensor<2x8x16xf16>
}

// -----

// mt.add adds two tensors of one type.

// CHECK-LABEL: func.func @add
// CHECK-SAME:    %[[LHS:[^:]+]]: tensor<2x8x16xbf16>, %[[RHS:[^:]+]]: tensor<2x8x16xbf16>
// CHECK:         mt.add %[[LHS]], %[[RHS]] : tensor<2x8x16xbf16>
func.func @add(%lhs: tensor<2x8x16xbf16>, %rhs: tensor<2x8x16xbf16>) -> tensor<2x8x16xbf16> {
  %y = mt.add %lhs, %rhs : tensor<2x8x16xbf16>
  return %y : tensor<2x8x16xbf16>
}

// -----

// mt.bias_add with a rank-1 bias: a linear layer's bias.

// CHECK-LABEL: func.func @bias_add_rank1
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x48xf32>, %[[B:[^:]+]]: tensor<48xf32>
// CHECK:         mt.bias_add %[[X]], %[[B]] : tensor<2x8x48xf32>, tensor<48xf32>
func.func @bias_add_rank1(%x: tensor<2x8x48xf32>, %b: tensor<48xf32>) -> tensor<2x8x48xf32> {
  %y = mt.bias_add %x, %b : tensor<2x8x48xf32>, tensor<48xf32>
  return %y : tensor<2x8x48xf32>
}

// -----

// mt.bias_add with a rank-2 bias: position embeddings added to every batch.

// CHECK-LABEL: func.func @bias_add_rank2
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x16xf32>, %[[POS:[^:]+]]: tensor<8x16xf32>
// CHECK:         mt.bias_add %[[X]], %[[POS]] : tensor<2x8x16xf32>, tensor<8x16xf32>
func.func @bias_add_rank2(%x: tensor<2x8x16xf32>, %pos: tensor<8x16xf32>) -> tensor<2x8x16xf32> {
  %y = mt.bias_add %x, %pos : tensor<2x8x16xf32>, tensor<8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// mt.gelu applies pointwise to one tensor type.

// CHECK-LABEL: func.func @gelu
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x64xf16>
// CHECK:         mt.gelu %[[X]] : tensor<2x8x64xf16>
func.func @gelu(%x: tensor<2x8x64xf16>) -> tensor<2x8x64xf16> {
  %y = mt.gelu %x : tensor<2x8x64xf16>
  return %y : tensor<2x8x64xf16>
}

// -----

// mt.dropout prints its probability in the attribute dictionary.

// CHECK-LABEL: func.func @dropout
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x16xf32>
// CHECK:         mt.dropout %[[X]] {probability = 1.000000e-01 : f64} : tensor<2x8x16xf32>
func.func @dropout(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %y = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// mt.matmul with a rank-2 weight broadcast over the batch dimensions.

// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x16xf32>, %[[W:[^:]+]]: tensor<16x64xf32>
// CHECK:         mt.matmul %[[X]], %[[W]] : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
func.func @matmul(%x: tensor<2x8x16xf32>, %w: tensor<16x64xf32>) -> tensor<2x8x64xf32> {
  %y = mt.matmul %x, %w : (tensor<2x8x16xf32>, tensor<16x64xf32>) -> tensor<2x8x64xf32>
  return %y : tensor<2x8x64xf32>
}

// -----

// mt.matmul with transpose_a contracts the second-to-last lhs dimension.

// CHECK-LABEL: func.func @matmul_transpose_a
// CHECK-SAME:    %[[A:[^:]+]]: tensor<16x8xf32>, %[[B:[^:]+]]: tensor<16x4xf32>
// CHECK:         mt.matmul %[[A]], %[[B]] transpose_a : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
func.func @matmul_transpose_a(%a: tensor<16x8xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %y = mt.matmul %a, %b transpose_a : (tensor<16x8xf32>, tensor<16x4xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// An accumulating weight gradient (mt.matmul and mt.matmul_bias_grad with
// accumulate): the product added to an f32 accumulator.

// CHECK-LABEL: func.func @matmul_accumulate
// CHECK-SAME:    %[[A:[^:]+]]: tensor<16x8xbf16>, %[[B:[^:]+]]: tensor<16x4xbf16>, %[[ACC:[^:]+]]: tensor<8x4xf32>
// CHECK:         %[[W:.+]] = mt.matmul %[[A]], %[[B]] transpose_a accumulate(%[[ACC]]) : (tensor<16x8xbf16>, tensor<16x4xbf16>, tensor<8x4xf32>) -> tensor<8x4xf32>
// CHECK:         mt.matmul_bias_grad %[[A]], %[[B]] transpose_a accumulate(%[[W]]) : (tensor<16x8xbf16>, tensor<16x4xbf16>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
func.func @matmul_accumulate(%a: tensor<16x8xbf16>, %b: tensor<16x4xbf16>, %acc: tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>) {
  %w = mt.matmul %a, %b transpose_a accumulate(%acc) : (tensor<16x8xbf16>, tensor<16x4xbf16>, tensor<8x4xf32>) -> tensor<8x4xf32>
  %w2, %db = mt.matmul_bias_grad %a, %b transpose_a accumulate(%w) : (tensor<16x8xbf16>, tensor<16x4xbf16>, tensor<8x4xf32>) -> (tensor<8x4xf32>, tensor<4xf32>)
  return %w2, %db : tensor<8x4xf32>, tensor<4xf32>
}

// -----

// mt.matmul with transpose_b: the tied output head, x * wte^T.

// CHECK-LABEL: func.func @matmul_transpose_b
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x16xbf16>, %[[WTE:[^:]+]]: tensor<64x16xbf16>
// CHECK:         mt.matmul %[[X]], %[[WTE]] transpose_b : (tensor<2x8x16xbf16>, tensor<64x16xbf16>) -> tensor<2x8x64xbf16>
func.func @matmul_transpose_b(%x: tensor<2x8x16xbf16>, %wte: tensor<64x16xbf16>) -> tensor<2x8x64xbf16> {
  %y = mt.matmul %x, %wte transpose_b : (tensor<2x8x16xbf16>, tensor<64x16xbf16>) -> tensor<2x8x64xbf16>
  return %y : tensor<2x8x64xbf16>
}

// -----

// mt.matmul with both transposes prints them in a fixed order.

// CHECK-LABEL: func.func @matmul_transpose_a_b
// CHECK-SAME:    %[[A:[^:]+]]: tensor<16x8xf32>, %[[B:[^:]+]]: tensor<4x16xf32>
// CHECK:         mt.matmul %[[A]], %[[B]] transpose_a transpose_b : (tensor<16x8xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
func.func @matmul_transpose_a_b(%a: tensor<16x8xf32>, %b: tensor<4x16xf32>) -> tensor<8x4xf32> {
  %y = mt.matmul %a, %b transpose_a transpose_b : (tensor<16x8xf32>, tensor<4x16xf32>) -> tensor<8x4xf32>
  return %y : tensor<8x4xf32>
}

// -----

// mt.matmul of two rank-4 tensors with equal batch dimensions: Q K^T per head.

// CHECK-LABEL: func.func @matmul_batched
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x4x8x16xf32>, %[[K:[^:]+]]: tensor<2x4x8x16xf32>
// CHECK:         mt.matmul %[[Q]], %[[K]] transpose_b : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
func.func @matmul_batched(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32> {
  %s = mt.matmul %q, %k transpose_b : (tensor<2x4x8x16xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x8xf32>
  return %s : tensor<2x4x8x8xf32>
}

// -----

// mt.split_heads with one result splits a hidden state into heads.

// CHECK-LABEL: func.func @split_heads_one
// CHECK-SAME:    %[[X:[^:]+]]: tensor<2x8x16xf32>
// CHECK:         %[[H:.+]] = mt.split_heads %[[X]] : tensor<2x8x16xf32> -> tensor<2x4x8x4xf32>
// CHECK:         return %[[H]]
func.func @split_heads_one(%x: tensor<2x8x16xf32>) -> tensor<2x4x8x4xf32> {
  %h = mt.split_heads %x : tensor<2x8x16xf32> -> tensor<2x4x8x4xf32>
  return %h : tensor<2x4x8x4xf32>
}

// -----

// mt.split_heads with three results splits the fused QKV projection.

// CHECK-LABEL: func.func @split_heads_qkv
// CHECK-SAME:    %[[QKV:[^:]+]]: tensor<2x8x48xf32>
// CHECK:         %[[R:.+]]:3 = mt.split_heads %[[QKV]] : tensor<2x8x48xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
// CHECK:         return %[[R]]#0, %[[R]]#1, %[[R]]#2
func.func @split_heads_qkv(%qkv: tensor<2x8x48xf32>) -> (tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>) {
  %q, %k, %v = mt.split_heads %qkv : tensor<2x8x48xf32> -> tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
  return %q, %k, %v : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>
}

// -----

// mt.merge_heads folds heads back into the hidden dimension.

// CHECK-LABEL: func.func @merge_heads
// CHECK-SAME:    %[[A:[^:]+]]: tensor<2x4x8x4xf32>
// CHECK:         mt.merge_heads %[[A]] : tensor<2x4x8x4xf32> -> tensor<2x8x16xf32>
func.func @merge_heads(%a: tensor<2x4x8x4xf32>) -> tensor<2x8x16xf32> {
  %y = mt.merge_heads %a : tensor<2x4x8x4xf32> -> tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// mt.attention without scale or dropout prints no attributes: dropout 0 is
// the default and is elided.

// CHECK-LABEL: func.func @attention_defaults
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x4x8x4xf32>, %[[K:[^:]+]]: tensor<2x4x8x4xf32>, %[[V:[^:]+]]: tensor<2x4x8x4xf32>
// CHECK:         mt.attention %[[Q]], %[[K]], %[[V]] : tensor<2x4x8x4xf32>
// CHECK-NOT:     dropout
func.func @attention_defaults(%q: tensor<2x4x8x4xf32>, %k: tensor<2x4x8x4xf32>, %v: tensor<2x4x8x4xf32>) -> tensor<2x4x8x4xf32> {
  %a = mt.attention %q, %k, %v : tensor<2x4x8x4xf32>
  return %a : tensor<2x4x8x4xf32>
}

// -----

// Grouped-query attention: keys and values of fewer heads print their type
// after the query's; the gradients of keys and values are typed as they are.

// CHECK-LABEL: func.func @attention_grouped
// CHECK:         %[[A:.*]] = mt.attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>
// CHECK:         mt.attention_grad %[[A]], %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>
func.func @attention_grouped(%q: tensor<2x4x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>) -> tensor<2x2x8x4xf32> {
  %a = mt.attention %q, %k, %v : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>
  %dq, %dk, %dv = mt.attention_grad %a, %q, %k, %v : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>
  return %dk : tensor<2x2x8x4xf32>
}

// -----

// mt.merged_attention and its gradient, grouped keys included.

// CHECK-LABEL: func.func @merged_attention
// CHECK:         %[[A:.*]], %[[S:.*]] = mt.merged_attention %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x8x16xf32>, tensor<2x4x8xf32>
// CHECK:         mt.merged_attention_grad %[[A]], %{{.*}}, %{{.*}}, %{{.*}}, %[[A]], %[[S]] : tensor<2x8x16xf32>, tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x4x8xf32>
func.func @merged_attention(%q: tensor<2x4x8x4xf32>, %k: tensor<2x2x8x4xf32>, %v: tensor<2x2x8x4xf32>) -> tensor<2x2x8x4xf32> {
  %a, %s = mt.merged_attention %q, %k, %v : tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32> -> tensor<2x8x16xf32>, tensor<2x4x8xf32>
  %dq, %dk, %dv = mt.merged_attention_grad %a, %q, %k, %v, %a, %s : tensor<2x8x16xf32>, tensor<2x4x8x4xf32>, tensor<2x2x8x4xf32>, tensor<2x4x8xf32>
  return %dk : tensor<2x2x8x4xf32>
}

// -----

// mt.attention keeps an explicit scale and dropout probability.

// CHECK-LABEL: func.func @attention_scale_dropout
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x4x8x4xbf16>, %[[K:[^:]+]]: tensor<2x4x8x4xbf16>, %[[V:[^:]+]]: tensor<2x4x8x4xbf16>
// CHECK:         mt.attention %[[Q]], %[[K]], %[[V]] {dropout = 1.000000e-01 : f64, scale = 1.250000e-01 : f64} : tensor<2x4x8x4xbf16>
func.func @attention_scale_dropout(%q: tensor<2x4x8x4xbf16>, %k: tensor<2x4x8x4xbf16>, %v: tensor<2x4x8x4xbf16>) -> tensor<2x4x8x4xbf16> {
  %a = mt.attention %q, %k, %v {dropout = 1.0e-01 : f64, scale = 0.125 : f64} : tensor<2x4x8x4xbf16>
  return %a : tensor<2x4x8x4xbf16>
}

// -----

// mt.cross_entropy reduces bf16 logits and i64 labels to an f32 scalar.

// CHECK-LABEL: func.func @cross_entropy
// CHECK-SAME:    %[[LOGITS:[^:]+]]: tensor<2x8x64xbf16>, %[[LABELS:[^:]+]]: tensor<2x8xi64>
// CHECK:         %[[LOSS:.+]] = mt.cross_entropy %[[LOGITS]], %[[LABELS]] : (tensor<2x8x64xbf16>, tensor<2x8xi64>) -> tensor<f32>
// CHECK:         return %[[LOSS]]
func.func @cross_entropy(%logits: tensor<2x8x64xbf16>, %labels: tensor<2x8xi64>) -> tensor<f32> {
  %loss = mt.cross_entropy %logits, %labels : (tensor<2x8x64xbf16>, tensor<2x8xi64>) -> tensor<f32>
  return %loss : tensor<f32>
}

// -----

// A model keeps mt.param on its arguments and mt.layer on its block's ops.

// CHECK-LABEL: func.func @model
// CHECK-SAME:    %[[IDS:[^:]+]]: tensor<2x8xi32>
// CHECK-SAME:    %[[WTE:[^:]+]]: tensor<64x16xf32> {mt.param = "wte.weight"}
// CHECK-SAME:    %[[LNW:[^:]+]]: tensor<16xf32> {mt.param = "h.0.ln_1.weight"}
// CHECK-SAME:    %[[LNB:[^:]+]]: tensor<16xf32> {mt.param = "h.0.ln_1.bias"}
// CHECK:         %[[X:.+]] = mt.embedding %[[WTE]], %[[IDS]] :
// CHECK:         %[[N:.+]] = mt.layer_norm %[[X]], %[[LNW]], %[[LNB]] {mt.layer = 0 : i64} : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK:         %[[G:.+]] = mt.gelu %[[N]] {mt.layer = 0 : i64} : tensor<2x8x16xf32>
// CHECK:         mt.add %[[X]], %[[G]] {mt.layer = 0 : i64} : tensor<2x8x16xf32>
func.func @model(%ids: tensor<2x8xi32>,
                 %wte: tensor<64x16xf32> {mt.param = "wte.weight"},
                 %ln_w: tensor<16xf32> {mt.param = "h.0.ln_1.weight"},
                 %ln_b: tensor<16xf32> {mt.param = "h.0.ln_1.bias"}) -> tensor<2x8x16xf32> {
  %x = mt.embedding %wte, %ids : (tensor<64x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
  %n = mt.layer_norm %x, %ln_w, %ln_b {mt.layer = 0} : tensor<2x8x16xf32>, tensor<16xf32>
  %g = mt.gelu %n {mt.layer = 0} : tensor<2x8x16xf32>
  %y = mt.add %x, %g {mt.layer = 0} : tensor<2x8x16xf32>
  return %y : tensor<2x8x16xf32>
}

// -----

// mt.layer may be any non-negative integer attribute, of any width and
// signedness; an unsigned one is never negative, so 255 : ui8 is layer 255.

// CHECK-LABEL: func.func @layer_unsigned
// CHECK:         mt.gelu %{{.+}} {mt.layer = 255 : ui8} : tensor<4xf32>
// CHECK:         mt.gelu %{{.+}} {mt.layer = 7 : si8} : tensor<4xf32>
func.func @layer_unsigned(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = mt.gelu %x {mt.layer = 255 : ui8} : tensor<4xf32>
  %z = mt.gelu %y {mt.layer = 7 : si8} : tensor<4xf32>
  return %z : tensor<4xf32>
}

// -----

// mt.dropout keeps its rng_stream.

// CHECK-LABEL: func.func @dropout_rng_stream
// CHECK-SAME:    %[[X:[^:]+]]: tensor<4xf32>
// CHECK:         mt.dropout %[[X]] {probability = 1.000000e-01 : f64, rng_stream = 7 : i64} : tensor<4xf32>
func.func @dropout_rng_stream(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = mt.dropout %x {probability = 1.0e-01 : f64, rng_stream = 7 : i64} : tensor<4xf32>
  return %y : tensor<4xf32>
}

// -----

// mt.merge_heads with three inputs is the gradient of the QKV split.

// CHECK-LABEL: func.func @merge_heads_three
// CHECK-SAME:    %[[Q:[^:]+]]: tensor<2x4x8x4xf32>, %[[K:[^:]+]]: tensor<2x4x8x4xf32>, %[[V:[^:]+]]: tensor<2x4x8x4xf32>
// CHECK:         mt.merge_heads %[[Q]], %[[K]], %[[V]] : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x8x48xf32>
func.func @merge_heads_three(%q: tensor<2x4x8x4xf32>, %k: tensor<2x4x8x4xf32>, %v: tensor<2x4x8x4xf32>) -> tensor<2x8x48xf32> {
  %y = mt.merge_heads %q, %k, %v : tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32>, tensor<2x4x8x4xf32> -> tensor<2x8x48xf32>
  return %y : tensor<2x8x48xf32>
}

// -----

// mt.embedding_grad scatters output gradients into a table.

// CHECK-LABEL: func.func @embedding_grad
// CHECK-SAME:    %[[DX:[^:]+]]: tensor<2x8x16xf32>, %[[IDS:[^:]+]]: tensor<2x8xi64>
// CHECK:         mt.embedding_grad %[[DX]], %[[IDS]] : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<64x16xf32>
func.func @embedding_grad(%dx: tensor<2x8x16xf32>, %ids: tensor<2x8xi64>) -> tensor<64x16xf32> {
  %d = mt.embedding_grad %dx, %ids : (tensor<2x8x16xf32>, tensor<2x8xi64>) -> tensor<64x16xf32>
  return %d : tensor<64x16xf32>
}

// -----

// Widened to an f32 table, and added into an accumulator (a tied head's
// gradient).

// CHECK-LABEL: func.func @embedding_grad_accumulate
// CHECK-SAME:    %[[DX:[^:]+]]: tensor<2x8x16xbf16>, %[[IDS:[^:]+]]: tensor<2x8xi32>, %[[HEAD:[^:]+]]: tensor<64x16xf32>
// CHECK:         mt.embedding_grad %[[DX]], %[[IDS]] accumulate(%[[HEAD]]) : (tensor<2x8x16xbf16>, tensor<2x8xi32>, tensor<64x16xf32>) -> tensor<64x16xf32>
func.func @embedding_grad_accumulate(%dx: tensor<2x8x16xbf16>, %ids: tensor<2x8xi32>, %head: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %d = mt.embedding_grad %dx, %ids accumulate(%head) : (tensor<2x8x16xbf16>, tensor<2x8xi32>, tensor<64x16xf32>) -> tensor<64x16xf32>
  return %d : tensor<64x16xf32>
}

// -----

// mt.position_embedding_grad places gradients in the first table rows.

// CHECK-LABEL: func.func @position_embedding_grad
// CHECK-SAME:    %[[DPOS:[^:]+]]: tensor<8x16xbf16>
// CHECK:         mt.position_embedding_grad %[[DPOS]] : tensor<8x16xbf16> -> tensor<32x16xbf16>
func.func @position_embedding_grad(%dpos: tensor<8x16xbf16>) -> tensor<32x16xbf16> {
  %d = mt.position_embedding_grad %dpos : tensor<8x16xbf16> -> tensor<32x16xbf16>
  return %d : tensor<32x16xbf16>
}

// -----

// mt.layer_norm_grad returns three gradients and keeps an explicit epsilon.

// CHECK-LABEL: func.func @layer_norm_grad
// CHECK-SAME:    %[[DY:[^:]+]]: tensor<2x8x16xf32>, %[[X:[^:]+]]: tensor<2x8x16xf32>, %[[W:[^:]+]]: tensor<16xf32>
// CHECK:         %[[DX:[^ ,]+]], %[[DW:[^ ,]+]], %[[DB:[^ ,]+]] = mt.layer_norm_grad %[[DY]], %[[X]], %[[W]] {epsilon = 1.000000e-03 : f64} : tensor<2x8x16xf32>, tensor<16xf32>
// CHECK:         return %[[DX]], %[[DW]], %[[DB]]
func.func @layer_norm_grad(%dy: tensor<2x8x16xf32>, %x: tensor<2x8x16xf32>, %w: tensor<16xf32>) -> (tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>) {
  %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w {epsilon = 1.0e-03 : f64} : tensor<2x8x16xf32>, tensor<16xf32>
  return %dx, %dw, %db : tensor<2x8x16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// mt.bias_add_grad sums down to the bias shape.

// CHECK-LABEL: func.func @bias_add_grad
// CHECK-SAME:    %[[DY:[^:]+]]: tensor<2x8x48xf16>
// CHECK:         mt.bias_add_grad %[[DY]] : tensor<2x8x48xf16> -> tensor<48xf16>
func.func @bias_add_grad(%dy: tensor<2x8x48xf16>) -> tensor<48xf16> {
  %db = mt.bias_add_grad %dy : tensor<2x8x48xf16> -> tensor<48xf16>
  return %db : tensor<48xf16>
}

// -----

// mt.gelu_grad takes the output gradient and the forward input.

// CHECK-LABEL: func.func @gelu_grad
// CHECK-SAME:    %[[DY:[^:]+]]: tensor<2x8x64xf32>, %[[X:[^:]+]]: tensor<2x8x64xf32>
// CHECK:         mt.gelu_grad %[[DY]], %[[X]] : tensor<2x8x64xf32>
func.func @gelu_grad(%dy: tensor<2x8x64xf32>, %x: tensor<2x8x64xf32>) -> tensor<2x8x64xf32> {
  %dx = mt.gelu_grad %dy, %x : tensor<2x8x64xf32>
  return %dx : tensor<2x8x64xf32>
}

// -----

// mt.attention_grad keeps the forward op's dropout, scale and rng_stream.

// CHECK-LABEL: func.func @attention_grad
// CHECK-SAME:    %[[DO:[^:]+]]: tensor<2x4x8x4xf32>, %[[Q:[^:]+]]: tensor<2x4x8x4xf32>, %[[K:[^:]+]]: tensor<2x4x8x4xf32>, %[[V:[^:]+]]: tensor<2x4x8x4xf32>
// CHECK:         %{{.+}}, %{{.+}}, %{{.+}} = mt.attention_grad %[[DO]], %[[Q]], %[[K]], %[[V]] {dropout = 1.000000e-01 : f64, rng_stream = 3 : i64, scale = 5.000000e-01 : f64} : tensor<2x4x8x4xf32>
func.func @attention_grad(%do: tensor<2x4x8x4xf32>, %q: tensor<2x4x8x4xf32>, %k: tensor<2x4x8x4xf32>, %v: tensor<2x4x8x4xf32>) -> tensor<2x4x8x4xf32> {
  %dq, %dk, %dv = mt.attention_grad %do, %q, %k, %v {dropout = 1.0e-01 : f64, scale = 0.5 : f64, rng_stream = 3 : i64} : tensor<2x4x8x4xf32>
  return %dq : tensor<2x4x8x4xf32>
}

// -----

// mt.cross_entropy_grad returns a gradient of the logits' type.

// CHECK-LABEL: func.func @cross_entropy_grad
// CHECK-SAME:    %[[DLOSS:[^:]+]]: tensor<f32>, %[[LOGITS:[^:]+]]: tensor<2x8x64xbf16>, %[[LABELS:[^:]+]]: tensor<2x8xi32>
// CHECK:         mt.cross_entropy_grad %[[DLOSS]], %[[LOGITS]], %[[LABELS]] : (tensor<f32>, tensor<2x8x64xbf16>, tensor<2x8xi32>) -> tensor<2x8x64xbf16>
func.func @cross_entropy_grad(%dloss: tensor<f32>, %logits: tensor<2x8x64xbf16>, %labels: tensor<2x8xi32>) -> tensor<2x8x64xbf16> {
  %d = mt.cross_entropy_grad %dloss, %logits, %labels : (tensor<f32>, tensor<2x8x64xbf16>, tensor<2x8xi32>) -> tensor<2x8x64xbf16>
  return %d : tensor<2x8x64xbf16>
}

// -----

// mt.global_norm and mt.clip_scale compute the clipping factor.

// CHECK-LABEL: func.func @clip
// CHECK-SAME:    %[[G0:[^:]+]]: tensor<16x16xf32>, %[[G1:[^:]+]]: tensor<16xbf16>, %[[MAX:[^:]+]]: tensor<f32>
// CHECK:         %[[NORM:.+]] = mt.global_norm %[[G0]], %[[G1]] : tensor<16x16xf32>, tensor<16xbf16>
// CHECK:         mt.clip_scale %[[NORM]], %[[MAX]] : tensor<f32>
func.func @clip(%g0: tensor<16x16xf32>, %g1: tensor<16xbf16>, %max: tensor<f32>) -> tensor<f32> {
  %norm = mt.global_norm %g0, %g1 : tensor<16x16xf32>, tensor<16xbf16>
  %s = mt.clip_scale %norm, %max : tensor<f32>
  return %s : tensor<f32>
}

// -----

// mt.adamw prints `decay` only when it is set.

// CHECK-LABEL: func.func @adamw
// CHECK-SAME:    %[[P:[^:]+]]: tensor<16xf32>, %[[G:[^:]+]]: tensor<16xf32>, %[[M:[^:]+]]: tensor<16xf32>, %[[V:[^:]+]]: tensor<16xf32>, %[[S:[^:]+]]: tensor<f32>
// CHECK:         mt.adamw %[[P]], %[[G]], %[[M]], %[[V]], %[[S]], %[[S]], %[[S]], %[[S]], %[[S]], %[[S]], %[[S]] decay : tensor<16xf32>
// CHECK:         mt.adamw %[[P]], %[[G]], %[[M]], %[[V]], %[[S]], %[[S]], %[[S]], %[[S]], %[[S]], %[[S]], %[[S]] : tensor<16xf32>
func.func @adamw(%p: tensor<16xf32>, %g: tensor<16xf32>, %m: tensor<16xf32>, %v: tensor<16xf32>, %s: tensor<f32>) -> (tensor<16xf32>, tensor<16xf32>) {
  %p1, %m1, %v1 = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %s decay : tensor<16xf32>
  %p2, %m2, %v2 = mt.adamw %p, %g, %m, %v, %s, %s, %s, %s, %s, %s, %s : tensor<16xf32>
  return %p1, %p2 : tensor<16xf32>, tensor<16xf32>
}

// -----

// A training step keeps mt.input, mt.state and mt.output; a parameter and its
// two moments may share one mt.param.

// CHECK-LABEL: func.func @train_step
// CHECK-SAME:    tensor<2x8xi32> {mt.input = "tokens"}
// CHECK-SAME:    tensor<f32> {mt.input = "lr"}
// CHECK-SAME:    tensor<16xf32> {mt.param = "w"}
// CHECK-SAME:    tensor<16xf32> {mt.param = "w", mt.state = "exp_avg"}
// CHECK-SAME:    tensor<16xf32> {mt.param = "w", mt.state = "exp_avg_sq"}
// CHECK-SAME:    -> (tensor<f32> {mt.output = "loss"}, tensor<16xf32> {mt.param = "w"}, tensor<16xf32> {mt.param = "w", mt.state = "exp_avg"})
func.func @train_step(%ids: tensor<2x8xi32> {mt.input = "tokens"},
                      %lr: tensor<f32> {mt.input = "lr"},
                      %w: tensor<16xf32> {mt.param = "w"},
                      %m: tensor<16xf32> {mt.param = "w", mt.state = "exp_avg"},
                      %v: tensor<16xf32> {mt.param = "w", mt.state = "exp_avg_sq"})
    -> (tensor<f32> {mt.output = "loss"}, tensor<16xf32> {mt.param = "w"},
        tensor<16xf32> {mt.param = "w", mt.state = "exp_avg"}) {
  return %lr, %w, %m : tensor<f32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// A function declaration (no body) carries the same argument and result
// attributes; the parameter types come from its signature.

// CHECK-LABEL: func.func private @train_step_decl
// CHECK-SAME:    (tensor<2x8xi32> {mt.input = "tokens"}, tensor<16x4xf32> {mt.param = "w"}, tensor<16x4xf32> {mt.param = "w", mt.state = "exp_avg"})
// CHECK-SAME:    -> (tensor<f32> {mt.output = "loss"}, tensor<16x4xf32> {mt.param = "w"})
func.func private @train_step_decl(tensor<2x8xi32> {mt.input = "tokens"},
                                   tensor<16x4xf32> {mt.param = "w"},
                                   tensor<16x4xf32> {mt.param = "w", mt.state = "exp_avg"})
    -> (tensor<f32> {mt.output = "loss"}, tensor<16x4xf32> {mt.param = "w"})

// -----

// A role's copies for each microbatch (as mt-pipeline makes them) are
// distinct inputs.
// CHECK-LABEL: func.func private @input_role_per_microbatch
func.func private @input_role_per_microbatch(tensor<2x8xi32> {mt.input = "tokens", mt.microbatch = 0 : i64}, tensor<2x8xi32> {mt.input = "tokens", mt.microbatch = 1 : i64})

// -----

// Expert parallelism: a rank's rows to its experts' ranks and back.

// CHECK-LABEL: func.func @expert_exchange
// CHECK:         %{{.*}}, %{{.*}}, %[[COUNTS:.+]] = mt.expert_dispatch %{{.*}}, %{{.*}} {grid = @grid, grid_axis = 0 : i64} : tensor<8x4xf32>, tensor<5xi32> -> tensor<16x4xf32>, tensor<3xi32>, tensor<2x2xi32>
// CHECK:         mt.expert_combine %{{.*}}, %[[COUNTS]], %{{.*}} {grid = @grid, grid_axis = 0 : i64} : tensor<16x4xf32>, tensor<2x2xi32>, tensor<5xi32> -> tensor<8x4xf32>
// CHECK:         mt.strided_all_reduce %{{.*}} {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<8x4xf32>
func.func @expert_exchange(%rows: tensor<8x4xf32>, %offsets: tensor<5xi32>) -> tensor<8x4xf32> {
  %r, %lo, %c = mt.expert_dispatch %rows, %offsets {grid = @grid, grid_axis = 0 : i64}
      : tensor<8x4xf32>, tensor<5xi32> -> tensor<16x4xf32>, tensor<3xi32>, tensor<2x2xi32>
  %back = mt.expert_combine %r, %c, %offsets {grid = @grid, grid_axis = 0 : i64}
      : tensor<16x4xf32>, tensor<2x2xi32>, tensor<5xi32> -> tensor<8x4xf32>
  %summed = mt.strided_all_reduce %back {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<8x4xf32>
  return %summed : tensor<8x4xf32>
}

// ZeRO's pieces of an expert over its replicas (every second rank).
// CHECK-LABEL: func.func @expert_pieces
// CHECK:         mt.strided_reduce_scatter %{{.*}} {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<32xf32> -> tensor<16xf32>
// CHECK:         mt.strided_all_slice %{{.*}} {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<32xbf16> -> tensor<16xbf16>
// CHECK:         mt.strided_all_gather %{{.*}} {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<16xf32> -> tensor<32xf32>
func.func @expert_pieces(%grad: tensor<32xf32>, %param: tensor<32xbf16>) -> (tensor<32xf32>, tensor<16xbf16>) {
  %piece = mt.strided_reduce_scatter %grad {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<32xf32> -> tensor<16xf32>
  %mine = mt.strided_all_slice %param {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<32xbf16> -> tensor<16xbf16>
  %whole = mt.strided_all_gather %piece {grid = @grid, grid_axis = 0 : i64, stride = 2 : i64} : tensor<16xf32> -> tensor<32xf32>
  return %whole, %mine : tensor<32xf32>, tensor<16xbf16>
}

// A routing with a capacity (Megatron-LM's token dropping): 8 tokens of 2
// choices over 3 experts at factor 1 take ceil(16 / 3) = 6 rows an expert,
// ranked by the gate weights (the probs policy) or, without them, by
// position; an exchange of a capacity's rows receives as many as it sends.

// CHECK-LABEL: func.func @mixture_of_experts_capacity
// CHECK:         mt.moe_route %{{.*}} weights(%{{.*}} : tensor<2x4x2xf32>) {capacity_factor = 1.000000e+00 : f64, num_experts = 3 : i64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
// CHECK:         mt.moe_route %{{.*}} {capacity_factor = 5.000000e-01 : f64, num_experts = 3 : i64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
// CHECK:         mt.moe_permute %{{.*}}, %{{.*}} {capacity_factor = 1.000000e+00 : f64, num_experts = 3 : i64} : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<18x8xf32>
// CHECK:         mt.moe_unpermute %{{.*}}, %{{.*}} weights(%{{.*}} : tensor<2x4x2xf32>) {capacity_factor = 1.000000e+00 : f64, num_experts = 3 : i64} : tensor<18x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
// CHECK:         mt.moe_weights_grad %{{.*}}, %{{.*}}, %{{.*}} {capacity_factor = 1.000000e+00 : f64, num_experts = 3 : i64} : tensor<2x4x8xf32>, tensor<18x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x2xf32>
// CHECK:         %{{.*}}, %{{.*}}, %[[COUNTS:.+]] = mt.expert_dispatch %{{.*}}, %{{.*}} {capacity_bounded, grid = @grid, grid_axis = 0 : i64} : tensor<8x4xf32>, tensor<5xi32> -> tensor<8x4xf32>, tensor<3xi32>, tensor<2x2xi32>
// CHECK:         mt.expert_combine %{{.*}}, %[[COUNTS]], %{{.*}} {capacity_bounded, grid = @grid, grid_axis = 0 : i64} : tensor<8x4xf32>, tensor<2x2xi32>, tensor<5xi32> -> tensor<8x4xf32>
func.func @mixture_of_experts_capacity(%x: tensor<2x4x8xf32>, %w: tensor<2x4x2xf32>,
                                       %e: tensor<2x4x2xi32>, %rows4: tensor<8x4xf32>,
                                       %offsets4: tensor<5xi32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x2xf32>, tensor<4xi32>, tensor<8x4xf32>) {
  %pos, %offsets = mt.moe_route %e weights(%w : tensor<2x4x2xf32>)
      {num_experts = 3 : i64, capacity_factor = 1.0 : f64}
      : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
  %pos2, %offsets2 = mt.moe_route %e {num_experts = 3 : i64, capacity_factor = 0.5 : f64}
      : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
  %rows = mt.moe_permute %x, %pos {capacity_factor = 1.0 : f64, num_experts = 3 : i64}
      : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<18x8xf32>
  %y = mt.moe_unpermute %rows, %pos weights(%w : tensor<2x4x2xf32>)
      {capacity_factor = 1.0 : f64, num_experts = 3 : i64}
      : tensor<18x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
  %dw = mt.moe_weights_grad %x, %rows, %pos {capacity_factor = 1.0 : f64, num_experts = 3 : i64}
      : tensor<2x4x8xf32>, tensor<18x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x2xf32>
  %r, %lo, %c = mt.expert_dispatch %rows4, %offsets4 {grid = @grid, grid_axis = 0 : i64, capacity_bounded}
      : tensor<8x4xf32>, tensor<5xi32> -> tensor<8x4xf32>, tensor<3xi32>, tensor<2x2xi32>
  %back = mt.expert_combine %r, %c, %offsets4 {grid = @grid, grid_axis = 0 : i64, capacity_bounded}
      : tensor<8x4xf32>, tensor<2x2xi32>, tensor<5xi32> -> tensor<8x4xf32>
  return %y, %dw, %offsets2, %back
      : tensor<2x4x8xf32>, tensor<2x4x2xf32>, tensor<4xi32>, tensor<8x4xf32>
}

// A mixture of experts: the router's choice, the rows in expert order, each
// expert's SwiGLU as grouped matmuls, and the weighted sum back; then the
// gradients of each.

// CHECK-LABEL: func.func @mixture_of_experts
// CHECK:         mt.top_k_gating %{{.*}} {k = 2 : i64} : tensor<2x4x3xf32> -> tensor<2x4x2xf32>, tensor<2x4x2xi32>
// CHECK:         mt.moe_route %{{.*}} {num_experts = 3 : i64} : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
// CHECK:         mt.moe_permute %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<16x8xf32>
// CHECK:         mt.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} transpose_b : (tensor<16x8xf32>, tensor<4xi32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<16x6xf32>
// CHECK:         mt.grouped_matmul %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<16x6xf32>, tensor<4xi32>, tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>) -> tensor<16x8xf32>
// CHECK:         mt.grouped_matmul_weight_grad %{{.*}}, %{{.*}}, %{{.*}} transpose_b : (tensor<16x6xf32>, tensor<16x8xf32>, tensor<4xi32>) -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>)
// CHECK:         mt.moe_unpermute %{{.*}}, %{{.*}} weights(%{{.*}} : tensor<2x4x2xf32>) : tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
// CHECK:         mt.moe_permute %{{.*}}, %{{.*}} weights(%{{.*}} : tensor<2x4x2xf32>) : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<16x8xf32>
// CHECK:         mt.moe_unpermute %{{.*}}, %{{.*}} : tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
// CHECK:         mt.moe_weights_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x2xf32>
// CHECK:         mt.top_k_gating_grad %{{.*}}, %{{.*}}, %{{.*}} {num_experts = 3 : i64} : tensor<2x4x2xf32>, tensor<2x4x2xi32> -> tensor<2x4x3xf32>
func.func @mixture_of_experts(%x: tensor<2x4x8xf32>, %logits: tensor<2x4x3xf32>,
                              %w0: tensor<6x8xf32>, %w1: tensor<6x8xf32>,
                              %w2: tensor<6x8xf32>, %dy: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>,
        tensor<2x4x2xf32>, tensor<2x4x3xf32>, tensor<6x8xf32>) {
  %w, %e = mt.top_k_gating %logits {k = 2 : i64}
      : tensor<2x4x3xf32> -> tensor<2x4x2xf32>, tensor<2x4x2xi32>
  %pos, %offsets = mt.moe_route %e {num_experts = 3 : i64}
      : tensor<2x4x2xi32> -> tensor<2x4x2xi32>, tensor<4xi32>
  %rows = mt.moe_permute %x, %pos
      : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<16x8xf32>
  %h = mt.grouped_matmul %rows, %offsets, %w0, %w1, %w2 transpose_b
      : (tensor<16x8xf32>, tensor<4xi32>, tensor<6x8xf32>, tensor<6x8xf32>,
         tensor<6x8xf32>) -> tensor<16x6xf32>
  %dx = mt.grouped_matmul %h, %offsets, %w0, %w1, %w2
      : (tensor<16x6xf32>, tensor<4xi32>, tensor<6x8xf32>, tensor<6x8xf32>,
         tensor<6x8xf32>) -> tensor<16x8xf32>
  %dw0, %dw1, %dw2 = mt.grouped_matmul_weight_grad %h, %rows, %offsets transpose_b
      : (tensor<16x6xf32>, tensor<16x8xf32>, tensor<4xi32>)
        -> (tensor<6x8xf32>, tensor<6x8xf32>, tensor<6x8xf32>)
  %y = mt.moe_unpermute %dx, %pos weights(%w : tensor<2x4x2xf32>)
      : tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
  %drows = mt.moe_permute %dy, %pos weights(%w : tensor<2x4x2xf32>)
      : tensor<2x4x8xf32>, tensor<2x4x2xi32> -> tensor<16x8xf32>
  %sum = mt.moe_unpermute %drows, %pos
      : tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x8xf32>
  %dw = mt.moe_weights_grad %dy, %drows, %pos
      : tensor<2x4x8xf32>, tensor<16x8xf32>, tensor<2x4x2xi32> -> tensor<2x4x2xf32>
  %dlogits = mt.top_k_gating_grad %dw, %w, %e {num_experts = 3 : i64}
      : tensor<2x4x2xf32>, tensor<2x4x2xi32> -> tensor<2x4x3xf32>
  return %y, %sum, %x, %dw, %dlogits, %dw0
      : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<2x4x8xf32>,
        tensor<2x4x2xf32>, tensor<2x4x3xf32>, tensor<6x8xf32>
}

// -----

// A shared expert's per-token sigmoid gate (Qwen2-MoE) and its gradient.

// CHECK-LABEL: func.func @sigmoid_gate
// CHECK:         mt.sigmoid_gate %{{.*}}, %{{.*}} : tensor<2x4x8xf32>, tensor<2x4x1xf32>
// CHECK:         mt.sigmoid_gate_grad %{{.*}}, %{{.*}}, %{{.*}} : tensor<2x4x8xbf16>, tensor<2x4x1xbf16>
func.func @sigmoid_gate(%x: tensor<2x4x8xf32>, %g: tensor<2x4x1xf32>,
                        %dy: tensor<2x4x8xbf16>, %xb: tensor<2x4x8xbf16>,
                        %gb: tensor<2x4x1xbf16>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x1xbf16>) {
  %y = mt.sigmoid_gate %x, %g : tensor<2x4x8xf32>, tensor<2x4x1xf32>
  %dx, %dg = mt.sigmoid_gate_grad %dy, %xb, %gb : tensor<2x4x8xbf16>, tensor<2x4x1xbf16>
  return %y, %dx, %dg : tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x1xbf16>
}

// -----

// Rotary embeddings: unscaled, llama3-scaled, linear-scaled (Gemma 3's
// global layers), and the inverse rotation.

// CHECK-LABEL: func.func @ropes
// CHECK:         mt.rope %{{.*}} : tensor<1x2x4x8xf32>
// CHECK:         mt.rope %{{.*}} {llama3_factor = 8.000000e+00 : f64, llama3_high_freq_factor = 4.000000e+00 : f64, llama3_low_freq_factor = 1.000000e+00 : f64, llama3_original_max_positions = 8 : i64, theta = 5.000000e+05 : f64} : tensor<1x2x4x8xf32>
// CHECK:         mt.rope %{{.*}} {inverse, linear_factor = 8.000000e+00 : f64, theta = 1.000000e+06 : f64} : tensor<1x2x4x8xf32>
func.func @ropes(%x: tensor<1x2x4x8xf32>) -> (tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>) {
  %a = mt.rope %x : tensor<1x2x4x8xf32>
  %b = mt.rope %x {theta = 5.0e5 : f64, llama3_factor = 8.0 : f64, llama3_low_freq_factor = 1.0 : f64, llama3_high_freq_factor = 4.0 : f64, llama3_original_max_positions = 8 : i64} : tensor<1x2x4x8xf32>
  %c = mt.rope %x {theta = 1.0e6 : f64, linear_factor = 8.0 : f64, inverse} : tensor<1x2x4x8xf32>
  return %a, %b, %c : tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>, tensor<1x2x4x8xf32>
}

// -----

// RMS norms, plain (Llama's) and zero-centered (Gemma's scale 1 + w), and
// their gradients (the partial-sum form with row_block).

// CHECK-LABEL: func.func @rms_norms
// CHECK:         mt.rms_norm %{{.*}}, %{{.*}} {epsilon = 1.000000e-05 : f64} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK:         mt.rms_norm %{{.*}}, %{{.*}} {zero_centered_weight} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK:         mt.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {zero_centered_weight} : tensor<2x4x8xf32>, tensor<8xf32>
// CHECK:         mt.rms_norm_grad %{{.*}}, %{{.*}}, %{{.*}} {row_block = 4 : i64, zero_centered_weight} : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
func.func @rms_norms(%x: tensor<2x4x8xf32>, %w: tensor<8xf32>, %dy: tensor<2x4x8xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x8xf32>) {
  %y = mt.rms_norm %x, %w {epsilon = 1.0e-05 : f64} : tensor<2x4x8xf32>, tensor<8xf32>
  %z = mt.rms_norm %x, %w {zero_centered_weight} : tensor<2x4x8xf32>, tensor<8xf32>
  %dx, %dw = mt.rms_norm_grad %dy, %x, %w {zero_centered_weight} : tensor<2x4x8xf32>, tensor<8xf32>
  %dx2, %dw2 = mt.rms_norm_grad %dy, %x, %w {row_block = 4 : i64, zero_centered_weight}
      : tensor<2x4x8xf32>, tensor<8xf32> -> tensor<2x8xf32>
  return %y, %z, %dw, %dw2 : tensor<2x4x8xf32>, tensor<2x4x8xf32>, tensor<8xf32>, tensor<2x8xf32>
}

// -----

// Gemma 2's soft caps: of the logits (mt.softcap and its gradient) and of
// the attention's scores (`softcap`).

// CHECK-LABEL: func.func @soft_caps
// CHECK:         mt.softcap %{{.*}} {cap = 3.000000e+01 : f64} : tensor<2x4x8xf32>
// CHECK:         mt.softcap_grad %{{.*}}, %{{.*}} {cap = 3.000000e+01 : f64} : tensor<2x4x8xbf16>
// CHECK:         mt.attention %{{.*}}, %{{.*}}, %{{.*}} {softcap = 5.000000e+01 : f64, window = 4 : i64} : tensor<2x4x8x4xf32>
func.func @soft_caps(%x: tensor<2x4x8xf32>, %dy: tensor<2x4x8xbf16>, %xb: tensor<2x4x8xbf16>,
                     %q: tensor<2x4x8x4xf32>)
    -> (tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x8x4xf32>) {
  %y = mt.softcap %x {cap = 30.0 : f64} : tensor<2x4x8xf32>
  %dx = mt.softcap_grad %dy, %xb {cap = 30.0 : f64} : tensor<2x4x8xbf16>
  %a = mt.attention %q, %q, %q {softcap = 50.0 : f64, window = 4 : i64} : tensor<2x4x8x4xf32>
  return %y, %dx, %a : tensor<2x4x8xf32>, tensor<2x4x8xbf16>, tensor<2x4x8x4xf32>
}

// -----

// Unnormalized weights (Hugging Face's norm_topk_prob = false): the gradient
// reads the logits.

// CHECK-LABEL: func.func @unnormalized_gating
// CHECK:         %[[W:.+]], %[[E:.+]] = mt.top_k_gating %[[L:.+]] unnormalized {k = 2 : i64} : tensor<2x4x3xf32> -> tensor<2x4x2xf32>, tensor<2x4x2xi32>
// CHECK:         mt.top_k_gating_grad %{{.*}}, %[[W]], %[[E]] logits(%[[L]] : tensor<2x4x3xf32>) {num_experts = 3 : i64} : tensor<2x4x2xf32>, tensor<2x4x2xi32> -> tensor<2x4x3xf32>
func.func @unnormalized_gating(%logits: tensor<2x4x3xf32>, %dw: tensor<2x4x2xf32>)
    -> tensor<2x4x3xf32> {
  %w, %e = mt.top_k_gating %logits unnormalized {k = 2 : i64}
      : tensor<2x4x3xf32> -> tensor<2x4x2xf32>, tensor<2x4x2xi32>
  %dlogits = mt.top_k_gating_grad %dw, %w, %e logits(%logits : tensor<2x4x3xf32>)
      {num_experts = 3 : i64}
      : tensor<2x4x2xf32>, tensor<2x4x2xi32> -> tensor<2x4x3xf32>
  return %dlogits : tensor<2x4x3xf32>
}

// -----

// A router's z-loss and its gradient (Megatron-LM's --moe-z-loss-coeff),
// on tokens [batch, seq] and [tokens] alike.

// CHECK-LABEL: func.func @router_z_loss
// CHECK:         mt.router_z_loss %{{.*}} {coefficient = 1.000000e-03 : f64} : tensor<2x4x3xf32>
// CHECK:         mt.router_z_loss_grad %{{.*}}, %{{.*}} {coefficient = 1.000000e-03 : f64} : tensor<2x4x3xf32>
// CHECK:         mt.router_z_loss %{{.*}} {coefficient = 5.000000e-01 : f64} : tensor<8x3xbf16>
// CHECK:         mt.router_z_loss_grad %{{.*}}, %{{.*}} {coefficient = 5.000000e-01 : f64} : tensor<8x3xbf16>
func.func @router_z_loss(%l0: tensor<2x4x3xf32>, %l1: tensor<8x3xbf16>,
                         %seed: tensor<f32>)
    -> (tensor<f32>, tensor<2x4x3xf32>, tensor<f32>, tensor<8x3xbf16>) {
  %z = mt.router_z_loss %l0 {coefficient = 1.000000e-03 : f64} : tensor<2x4x3xf32>
  %d = mt.router_z_loss_grad %seed, %l0 {coefficient = 1.000000e-03 : f64} : tensor<2x4x3xf32>
  %z1 = mt.router_z_loss %l1 {coefficient = 5.000000e-01 : f64} : tensor<8x3xbf16>
  %d1 = mt.router_z_loss_grad %seed, %l1 {coefficient = 5.000000e-01 : f64} : tensor<8x3xbf16>
  return %z, %d, %z1, %d1 : tensor<f32>, tensor<2x4x3xf32>, tensor<f32>, tensor<8x3xbf16>
}

// The load-balancing loss of two routers (Hugging Face's over all layers),
// and its gradient down to the first router's logits.

// CHECK-LABEL: func.func @load_balancing_loss
// CHECK:         mt.router_statistics %{{.*}}, %{{.*}} : tensor<2x4x3xf32>, tensor<2x4x2xi32> -> tensor<3xf32>, tensor<3xf32>
// CHECK:         mt.load_balancing_loss loads(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>) probabilities(%{{.*}}, %{{.*}} : tensor<3xf32>, tensor<3xf32>) {coefficient = 2.000000e-02 : f64}
// CHECK:         mt.load_balancing_loss_grad %{{.*}}, %{{.*}}, %{{.*}} {coefficient = 2.000000e-02 : f64} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
// CHECK:         mt.router_probability_grad %{{.*}}, %{{.*}} : tensor<3xf32>, tensor<2x4x3xf32> -> tensor<2x4x3xf32>
func.func @load_balancing_loss(%l0: tensor<2x4x3xf32>, %e0: tensor<2x4x2xi32>,
                               %l1: tensor<8x3xbf16>, %e1: tensor<8x1xi32>,
                               %seed: tensor<f32>)
    -> (tensor<f32>, tensor<2x4x3xf32>, tensor<3xbf16>, tensor<3xbf16>) {
  %load0, %p0 = mt.router_statistics %l0, %e0
      : tensor<2x4x3xf32>, tensor<2x4x2xi32> -> tensor<3xf32>, tensor<3xf32>
  %load1, %p1 = mt.router_statistics %l1, %e1
      : tensor<8x3xbf16>, tensor<8x1xi32> -> tensor<3xbf16>, tensor<3xbf16>
  %aux = mt.load_balancing_loss loads(%load0, %load0 : tensor<3xf32>, tensor<3xf32>)
      probabilities(%p0, %p0 : tensor<3xf32>, tensor<3xf32>)
      {coefficient = 2.000000e-02 : f64}
  %dp = mt.load_balancing_loss_grad %seed, %load0, %load0
      {coefficient = 2.000000e-02 : f64} : tensor<3xf32>, tensor<3xf32> -> tensor<3xf32>
  %dlogits = mt.router_probability_grad %dp, %l0
      : tensor<3xf32>, tensor<2x4x3xf32> -> tensor<2x4x3xf32>
  return %aux, %dlogits, %load1, %p1
      : tensor<f32>, tensor<2x4x3xf32>, tensor<3xbf16>, tensor<3xbf16>
}
