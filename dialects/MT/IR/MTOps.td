//===- MTOps.td - mt dialect operations ---------------------*- tablegen -*-===//
//
// Operations of a GPT-2 forward graph. Every op checks ranks, shapes and
// element types in its verifier and names the dimension that disagrees.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_DIALECTS_MT_IR_MTOPS_TD
#define MEGATRON_DIALECTS_MT_IR_MTOPS_TD

include "dialects/MT/IR/MTDialect.td"
include "mlir/Interfaces/InferTypeOpInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpAsmInterface.td"

//===----------------------------------------------------------------------===//
// Embeddings
//===----------------------------------------------------------------------===//

def MT_EmbeddingOp : MT_Op<"embedding", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Looks up rows of an embedding table by token id.";
  let description = [{
    `result[i..., :] = table[ids[i...], :]`. The table has shape
    `[vocab, hidden]`; the result has the shape of `ids` followed by `hidden`.
    Ids outside `[0, vocab)` are undefined behaviour at run time.

    A custom op rather than `tensor.gather`: tensor parallelism partitions
    the table by vocabulary rows (Megatron's vocab-parallel embedding), where
    each rank masks the ids it does not own and the partial results are
    summed; that partition needs to know the gathered dimension is the
    vocabulary.

    ```mlir
    %x = mt.embedding %wte, %ids
        : (tensor<50257x768xf32>, tensor<8x1024xi32>) -> tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$table, MT_TokenTensor:$ids);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $table `,` $ids attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def MT_PositionEmbeddingOp : MT_Op<"position_embedding", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Takes the embeddings of positions 0 to seq-1 from a table.";
  let description = [{
    `result[s, :] = table[s, :]` for `s` in `[0, seq)`: the learned absolute
    position embeddings of GPT-2 (`wpe.weight`, shape
    `[n_positions, hidden]`). The sequence length is the result's first
    dimension and must not exceed the table's.

    A custom op rather than `tensor.extract_slice`: under sequence
    parallelism each rank reads the rows of its own sequence chunk, an offset
    that depends on the rank; the partition of this op supplies it.

    ```mlir
    %pos = mt.position_embedding %wpe
        : tensor<1024x768xf32> -> tensor<128x768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$table);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $table attr-dict `:` type($table) `->` type($result)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Normalization and pointwise ops
//===----------------------------------------------------------------------===//

def MT_LayerNormOp : MT_Op<"layer_norm",
    [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, AllTypesMatch<["input", "result"]>,
     AllTypesMatch<["weight", "bias"]>]> {
  let summary = "Normalizes over the last dimension, then scales and shifts.";
  let description = [{
    `y = (x - mean(x)) / sqrt(var(x) + epsilon) * weight + bias`, with mean
    and biased variance over the last dimension of `input`, as
    `torch.nn.LayerNorm`. `weight` and `bias` have one element per entry of
    that dimension.

    ```mlir
    %y = mt.layer_norm %x, %w, %b {epsilon = 1.0e-05 : f64}
        : tensor<8x1024x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, MT_FloatTensor:$weight,
                       MT_FloatTensor:$bias,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight `,` $bias attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def MT_AddOp : MT_Op<"add", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, Commutative, SameOperandsAndResultType]> {
  let summary = "Adds two tensors of the same type elementwise.";
  let description = [{
    The residual connection of a transformer block.

    ```mlir
    %y = mt.add %x, %h : tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$lhs, MT_FloatTensor:$rhs);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def MT_BiasAddOp : MT_Op<"bias_add",
    [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface, ["isRowBroadcastOperand"]>, DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Adds a tensor broadcast over the leading dimensions.";
  let description = [{
    `result[i..., j...] = input[i..., j...] + bias[j...]`: the shape of
    `bias` equals the trailing dimensions of `input`. Used for linear-layer
    biases (`bias` of shape `[out]`) and for adding position embeddings
    (`bias` of shape `[seq, hidden]`).

    ```mlir
    %y = mt.bias_add %x, %b : tensor<8x1024x2304xf32>, tensor<2304xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, MT_FloatTensor:$bias);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $bias attr-dict `:` type($input) `,` type($bias)
  }];
  let hasVerifier = 1;
}

def MT_GeluOp : MT_Op<"gelu", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Applies GELU with the tanh approximation, as GPT-2 does.";
  let description = [{
    `y = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))`:
    Hugging Face's `gelu_new`, PyTorch's `gelu(x, approximate="tanh")`.

    ```mlir
    %y = mt.gelu %x : tensor<8x1024x3072xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def MT_CastOp : MT_Op<"cast", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, SameOperandsAndResultShape]> {
  let summary = "Converts a tensor to another floating-point type.";
  let description = [{
    Rounds to nearest even when narrowing (f32 to bf16 or f16, as
    `torch.Tensor.to` does), exactly when widening. `mt-mixed-precision`
    casts each fp32 master parameter to 16 bits where the forward pass reads
    it; the derivative casts the gradient back, so parameter gradients are
    fp32 and are reduced and accumulated in fp32. Upstream `arith.truncf` and
    `arith.extf` on tensors would do the same arithmetic but carry no
    derivative, sharding rule or runtime kernel.

    ```mlir
    %w16 = mt.cast %w : tensor<768x3072xf32> to tensor<768x3072xbf16>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `to` type($result)";
}

def MT_MultiCastOp : MT_Op<"multi_cast", [Pure]> {
  let summary = "Casts many tensors of one element type to another.";
  let description = [{
    `mt.cast` of each of `inputs` (one element type) to the matching result
    (one other element type, each of its input's shape), as one command:
    the multi-tensor copy of Megatron-LM's mixed precision (its main
    parameters to the model's 16-bit ones), instead of a kernel per tensor.
    `mt-fuse` forms it from the casts of a layer's parameters to 16 bits
    (the same marks: layer, phase, microbatch; casts outside the layers stay
    one per use), placed where the first of them was: a cast reads only its parameter, so the later ones may move
    up; their copies are live from there (GPT-2 124M bf16: 12 casts a layer
    become one).

    ```mlir
    %w16, %b16 = mt.multi_cast %w, %b
        : (tensor<768x3072xf32>, tensor<3072xf32>)
          -> (tensor<768x3072xbf16>, tensor<3072xbf16>)
    ```
  }];
  let arguments = (ins Variadic<MT_FloatTensor>:$inputs);
  let results = (outs Variadic<MT_FloatTensor>:$results);
  let assemblyFormat = [{
    $inputs attr-dict `:` functional-type($inputs, $results)
  }];
  let hasVerifier = 1;
}

def MT_DropoutOp : MT_Op<"dropout", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, SameOperandsAndResultType]> {
  let summary = "Zeroes elements with a probability and rescales the rest.";
  let description = [{
    Each element is zeroed with probability `probability` and otherwise
    multiplied by `1 / (1 - probability)` (inverted dropout, as
    `torch.nn.Dropout` in training mode). The mask comes from a
    counter-based generator keyed by the run's seed, the step, the op and
    the element's global index, so it does not depend on how the tensor is
    later split across ranks. `rng_stream` names the op's stream of random
    numbers; `mt-autodiff` numbers every dropout and gives its backward the
    same stream, so that the gradient is masked exactly as the forward. The
    op is not `Pure`: two dropouts of the same value draw different masks
    and must not be merged.

    A probability of 0 folds away. `mt-fuse` may put a dropout in an
    elementwise fusion (bias + dropout + residual add), whose kernel draws
    each element's mask word at the same index.

    ```mlir
    %y = mt.dropout %x {probability = 1.0e-01 : f64} : tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, F64Attr:$probability,
                       OptionalAttr<I64Attr>:$rng_stream);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
  let hasFolder = 1;
}

//===----------------------------------------------------------------------===//
// Linear algebra
//===----------------------------------------------------------------------===//

def MT_MatmulOp : MT_Op<"matmul", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Multiplies batches of matrices, optionally transposed.";
  let description = [{
    `result[b..., m, n] = sum_k A[b..., m, k] * B[b..., k, n]` where `A` is
    `lhs` or, with `transpose_a`, `lhs` with its last two dimensions
    swapped, and `B` likewise for `rhs` and `transpose_b`. The batch
    dimensions `b...` of `lhs` and `rhs` are equal, or `rhs` has rank 2 and
    is broadcast over all batch dimensions of `lhs` (a linear layer: an
    activation `[batch, seq, in]` times a weight `[in, out]`).

    The operands have one element type; the result has it too, or is f32
    where they are bf16 or f16: the product accumulates in f32 and is
    stored without rounding to 16 bits (`mt-fuse` forms it for a weight
    gradient that is only widened to f32, as Megatron-LM's gradient
    accumulation fusion does).

    With `accumulate(%acc)` the product is added to `%acc` (the result's
    type, f32) and the sum is the result: `acc + op(lhs) op(rhs)`, Megatron-LM's
    gradient accumulation fusion (`--gradient-accumulation-fusion`: the
    weight-gradient GEMM of each microbatch adds into the f32 gradient
    accumulated over the earlier ones, cuBLAS's beta = 1). `mt-fuse` forms
    it from an `mt.add` of an accumulated gradient and a weight gradient's
    product; the lowering writes the result over the accumulator, which
    nothing may read after it. The sum is rounded as the GEMM adds its
    partial products, not once after the whole product.

    ```mlir
    // Linear layer with a Hugging Face Conv1D weight of layout [in, out].
    %h = mt.matmul %x, %w
        : (tensor<8x1024x768xf32>, tensor<768x3072xf32>) -> tensor<8x1024x3072xf32>
    // Tied output head: logits = x * wte^T.
    %logits = mt.matmul %x, %wte transpose_b
        : (tensor<8x1024x768xf32>, tensor<50257x768xf32>) -> tensor<8x1024x50257xf32>
    // A weight gradient added into the gradient accumulated so far.
    %dw1 = mt.matmul %x, %dy transpose_a accumulate(%dw0)
        : (tensor<8192x768xbf16>, tensor<8192x768xbf16>, tensor<768x768xf32>)
          -> tensor<768x768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$lhs, MT_FloatTensor:$rhs,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b,
                       Optional<MT_FloatTensor>:$accumulator);
  let results = (outs MT_FloatTensor:$result);
  let builders = [
    OpBuilder<(ins "Type":$result, "Value":$lhs, "Value":$rhs,
                   "bool":$transpose_a, "bool":$transpose_b), [{
      build($_builder, $_state, result, lhs, rhs, transpose_a, transpose_b,
            /*accumulator=*/Value());
    }]>
  ];
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_a` $transpose_a^)? (`transpose_b` $transpose_b^)?
    (`accumulate` `(` $accumulator^ `)`)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def MT_MatmulBiasOp : MT_Op<"matmul_bias", [Pure]> {
  let summary = "A matmul with its bias added in the GEMM's epilogue.";
  let description = [{
    `mt.matmul` of `lhs` and `rhs` (the same transposes and broadcast)
    plus `bias`, a vector of the result's last dimension added to every
    row: `mt.bias_add(mt.matmul(lhs, rhs), bias)` as one GEMM whose
    epilogue adds the bias (cuBLASLt's `CUBLASLT_EPILOGUE_BIAS`; the CPU
    backend starts the GEMM's accumulation from the bias). The sum is
    rounded once, where the two ops round the product first.

    `mt-fuse` forms it (option `gemm-epilogues`) when the product's only
    reader is a bias addition, as the linear layers before attention and
    the MLP's activation have.

    ```mlir
    %h = mt.matmul_bias %x, %w, %b
        : (tensor<8x1024x768xf32>, tensor<768x3072xf32>, tensor<3072xf32>)
          -> tensor<8x1024x3072xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$lhs, MT_FloatTensor:$rhs,
                       MT_FloatTensor:$bias,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $bias (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def MT_MatmulBiasGeluOp : MT_Op<"matmul_bias_gelu", [Pure]> {
  let summary = "A matmul with its bias and GeLU in the GEMM's epilogue.";
  let description = [{
    `mt.matmul_bias` of `lhs`, `rhs` and `bias`, then `mt.gelu` of the sum,
    as one GEMM: `preactivation` is the sum (rounded to its type, as
    `mt.matmul_bias` writes it; the backward's `mt.gelu_grad` reads it) and
    `result` its GeLU. On the CUDA backend one cublasLtMatmul whose
    epilogue adds the bias, stores the sum as its auxiliary output and
    applies GeLU (`CUBLASLT_EPILOGUE_GELU_AUX_BIAS`, the tanh
    approximation of GPT-2's `gelu_new`, as Megatron-LM's and Transformer
    Engine's fused MLP), so the GeLU's separate pass over the sum is gone.
    cuBLASLt applies its GeLU to the unrounded sum; the CPU backend rounds
    the sum first, as the two ops do.

    `mt-fuse` forms it (option `gemm-epilogues`) from a 16-bit
    `mt.matmul_bias` that one `mt.gelu` reads; in f32 the two ops stay,
    so that an f32 step is the same on both backends to the bit.

    ```mlir
    %pre, %h = mt.matmul_bias_gelu %x, %w, %b
        : (tensor<8x1024x768xbf16>, tensor<768x3072xbf16>, tensor<3072xbf16>)
          -> (tensor<8x1024x3072xbf16>, tensor<8x1024x3072xbf16>)
    ```
  }];
  let arguments = (ins MT_FloatTensor:$lhs, MT_FloatTensor:$rhs,
                       MT_FloatTensor:$bias,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs MT_FloatTensor:$preactivation, MT_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $bias (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def MT_MatmulGeluGradOp : MT_Op<"matmul_gelu_grad", [Pure]> {
  let summary = "A matmul whose product is GeLU's output gradient, with "
                "GeLU's backward in the GEMM's epilogue.";
  let description = [{
    `mt.gelu_grad(mt.matmul(lhs, rhs), preactivation)` as one GEMM: the
    product is the gradient of a GeLU's output (the MLP's second linear
    layer's input gradient), and the result the gradient of its input
    `preactivation`. On the CUDA backend one cublasLtMatmul with
    `CUBLASLT_EPILOGUE_DGELU`, reading `preactivation` as its auxiliary
    input, so the product is never stored and read back. cuBLASLt applies
    the derivative to the unrounded product; the CPU backend rounds the
    product first, as the two ops do.

    `mt-fuse` forms it (option `gemm-epilogues`) from a 16-bit `mt.matmul`
    whose only reader is an `mt.gelu_grad` taking it as the output
    gradient.

    ```mlir
    %dpre = mt.matmul_gelu_grad %dh, %w2, %pre transpose_b
        : (tensor<8x1024x768xbf16>, tensor<3072x768xbf16>,
           tensor<8x1024x3072xbf16>) -> tensor<8x1024x3072xbf16>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$lhs, MT_FloatTensor:$rhs,
                       MT_FloatTensor:$preactivation,
                       UnitAttr:$transpose_a, UnitAttr:$transpose_b);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $lhs `,` $rhs `,` $preactivation (`transpose_a` $transpose_a^)?
    (`transpose_b` $transpose_b^)? attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def MT_MatmulBiasGradOp : MT_Op<"matmul_bias_grad", [Pure]> {
  let summary = "A weight gradient's matmul that also sums its rhs's rows: "
                "the bias gradient in the GEMM's epilogue.";
  let description = [{
    `mt.matmul(lhs, rhs)` with `rhs` a rank-2 `[k, n]` (not transposed),
    and `bias_grad`, the sum of `rhs` over its `k` rows: a linear layer's
    weight gradient `x^T dY` and its bias gradient `mt.bias_add_grad(dY)`
    as one GEMM, which reads `dY` once. On the CUDA backend one
    cublasLtMatmul whose epilogue reduces its input over the GEMM's `k`
    (`CUBLASLT_EPILOGUE_BGRADA` in the backend's column-major view, where
    `rhs` is cuBLAS's A; Transformer Engine's wgrad GEMM with its bias
    gradient); the bias gradient has the result's element type, as cuBLASLt
    writes it (f32 when the weight gradient is widened). The CPU backend
    runs the GEMM and then `mt.bias_add_grad`'s column sums, to the bit.

    `mt-fuse` forms it (option `gemm-epilogues`) for 16-bit operands from a
    weight-gradient `mt.matmul` and the `mt.bias_add_grad` of the same
    gradient (through the collapse of its leading dimensions).

    With `accumulate(%acc)` the weight gradient is added to `%acc`, as
    `mt.matmul`'s (the bias gradient is not: it is this GEMM's alone).

    ```mlir
    %dw, %db = mt.matmul_bias_grad %x, %dy transpose_a
        : (tensor<8192x768xbf16>, tensor<8192x3072xbf16>)
          -> (tensor<768x3072xf32>, tensor<3072xf32>)
    ```
  }];
  let arguments = (ins MT_FloatTensor:$lhs, MT_FloatTensor:$rhs,
                       UnitAttr:$transpose_a,
                       Optional<MT_FloatTensor>:$accumulator);
  let results = (outs MT_FloatTensor:$result, MT_FloatTensor:$bias_grad);
  let assemblyFormat = [{
    $lhs `,` $rhs (`transpose_a` $transpose_a^)?
    (`accumulate` `(` $accumulator^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

def MT_SplitHeadsOp : MT_Op<"split_heads", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Splits the hidden dimension into chunks of heads.";
  let description = [{
    Views `input` of shape `[batch, seq, chunks * heads * head_dim]` as
    `[batch, seq, chunks, heads, head_dim]` and returns one tensor
    `[batch, heads, seq, head_dim]` per chunk. With three results this splits
    the fused QKV projection of GPT-2 (`c_attn`) into queries, keys and
    values; with one, it splits any hidden state into heads.

    A custom op rather than `tensor.expand_shape` plus a transpose: tensor
    parallelism splits attention by heads, and for the fused QKV tensor a
    rank's heads are three separate column ranges. Keeping the head
    structure in one op lets its partition say so directly.

    ```mlir
    %q, %k, %v = mt.split_heads %qkv : tensor<8x1024x2304xf32>
        -> tensor<8x12x1024x64xf32>, tensor<8x12x1024x64xf32>,
           tensor<8x12x1024x64xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input);
  let results = (outs Variadic<MT_FloatTensor>:$results);
  let assemblyFormat = [{
    $input attr-dict `:` type($input) `->` type($results)
  }];
  let hasVerifier = 1;
}

def MT_MergeHeadsOp : MT_Op<"merge_heads", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Merges chunks of heads back into the hidden dimension.";
  let description = [{
    The inverse of `mt.split_heads`: each input `[batch, heads, seq,
    head_dim]` is one chunk, and the result is `[batch, seq, chunks * heads *
    head_dim]`. With one input this merges attention heads; with three it is
    the gradient of the QKV split.

    ```mlir
    %y = mt.merge_heads %a : tensor<8x12x1024x64xf32> -> tensor<8x1024x768xf32>
    ```
  }];
  let arguments = (ins Variadic<MT_FloatTensor>:$inputs);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $inputs attr-dict `:` type($inputs) `->` type($result)
  }];
  let hasVerifier = 1;
}

def MT_AttentionOp : MT_Op<"attention",
    [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>,
     AllTypesMatch<["query", "result"]>, AllTypesMatch<["key", "value"]>]> {
  let summary = "Computes causal scaled-dot-product attention per head.";
  let description = [{
    For each batch and head, `P = softmax(mask(Q K^T * scale))` and
    `result = dropout(P) V`, where `mask` sets entries above the diagonal
    (a key after the query) to minus infinity. All operands and the result
    have shape `[batch, heads, seq, head_dim]`. `scale` defaults to
    `1 / sqrt(head_dim)`. `dropout` is the probability of dropping an
    attention weight (GPT-2's `attn_pdrop`), drawn as `mt.dropout` draws.
    `window` (Mistral's `sliding_window`) masks the keys more than
    `window - 1` positions before the query too: query `i` sees keys
    `i - window < j <= i`, as Hugging Face's sliding-window mask does.
    `softcap` (Gemma 2's `attn_logit_softcapping`) caps the scaled scores
    smoothly before the mask and softmax: `s = softcap * tanh(s / softcap)`.

    `key` and `value` may hold fewer heads than `query` (grouped-query
    attention, PyTorch's `enable_gqa`): `kv_heads` dividing `heads`, query
    head `h` reads key and value head `h / (heads / kv_heads)`, which is
    what `mt.repeat_kv` would have copied out. `mt-fuse` folds the repeats
    into the op, so that neither the copies nor their stash exist.

    One op rather than its pieces: the probabilities `P` are `seq x seq` per
    head, and keeping them inside the op lets lowering choose a fused
    (flash) kernel and lets rematerialization recompute them instead of
    stashing them.

    ```mlir
    %a = mt.attention %q, %k, %v {dropout = 1.0e-01 : f64}
        : tensor<8x12x1024x64xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$query, MT_FloatTensor:$key,
                       MT_FloatTensor:$value,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<I64Attr>:$rng_stream,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:`
    custom<GroupedKeys>(type($result), type($key))
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The scale applied to Q K^T: the attribute, or 1/sqrt(head_dim).
    double getEffectiveScale();
  }];
}

def MT_QKVAttentionOp : MT_Op<"qkv_attention", []> {
  let summary = "Causal attention over a fused QKV tensor, heads merged.";
  let description = [{
    `merge_heads(attention(split_heads(qkv)))` without the two layout
    copies: `qkv` is `[batch, seq, 3 * heads * head_dim]` (GPT-2's `c_attn`
    output: queries, then keys, then values, each `heads` chunks of
    `head_dim`), and the result is `[batch, seq, heads * head_dim]`. The
    kernel reads each head's rows where they lie, with a stride (the
    leading dimension of its GEMMs), and writes its output rows the same
    way. `dropout`, `scale`, `rng_stream`, `window` and `softcap` mean what they mean
    on `mt.attention`, whose masks this op draws.

    `stats` is each query row's log-sum-exp of its scaled scores,
    `log sum_{j <= i} exp(scale q_i . k_j)`, in f32 and shaped `[batch,
    heads, seq]`, as FlashAttention-2 keeps it: with it and the output,
    the gradient needs no sweep to rebuild the softmax (each probability is
    `exp(scale q_i . k_j - stats_i)`, and `D_i = dO_i . O_i`), and it is what
    cuDNN's fused attention backward reads.

    `mt-fuse` forms it when the split's results are read only by the
    attention and by its gradients (the stash), so the stash becomes the
    QKV tensor itself: the same bytes, without the copies beside it.

    ```mlir
    %a, %lse = mt.qkv_attention %qkv {heads = 12 : i64}
        : tensor<8x1024x2304xf32> -> tensor<8x1024x768xf32>, tensor<8x12x1024xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$qkv, I64Attr:$heads,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<I64Attr>:$rng_stream,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs MT_FloatTensor:$result,
                      StaticShapeTensorOf<[F32]>:$stats);
  let assemblyFormat = [{
    $qkv attr-dict `:` type($qkv) `->` type($result) `,` type($stats)
  }];
  let hasVerifier = 1;
}

def MT_QKVAttentionGradOp : MT_Op<"qkv_attention_grad",
    [Pure, AllTypesMatch<["qkv", "grad_qkv"]>,
     AllTypesMatch<["grad_output", "output"]>]> {
  let summary = "Computes the gradient of mt.qkv_attention.";
  let description = [{
    `merge_heads(attention_grad(split_heads(grad_output), q, k, v))` for the
    `q, k, v` of `qkv`, without the layout copies: `grad_output` is
    `[batch, seq, heads * head_dim]` and the result, like `qkv`,
    `[batch, seq, 3 * heads * head_dim]`. `output` and `stats` are the
    forward's two results: the probabilities are recomputed from the stats
    without a sweep to rebuild the softmax, `D_i = dO_i . O_i` comes from
    the output, and the dropout mask is redrawn.

    ```mlir
    %dqkv = mt.qkv_attention_grad %do, %qkv, %a, %lse {heads = 12 : i64}
        : tensor<8x1024x768xf32>, tensor<8x1024x2304xf32>,
          tensor<8x12x1024xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$qkv,
                       MT_FloatTensor:$output,
                       StaticShapeTensorOf<[F32]>:$stats,
                       I64Attr:$heads,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<I64Attr>:$rng_stream,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs MT_FloatTensor:$grad_qkv);
  let assemblyFormat = [{
    $grad_output `,` $qkv `,` $output `,` $stats attr-dict `:`
    type($grad_output) `,` type($qkv) `,` type($stats)
  }];
  let hasVerifier = 1;
}

def MT_MergedAttentionOp : MT_Op<"merged_attention",
    [AllTypesMatch<["key", "value"]>]> {
  let summary = "Causal attention writing its heads merged, with its stats.";
  let description = [{
    `merge_heads(attention(query, key, value))` without the merge's copy:
    `query`, `key` and `value` are `mt.attention`'s (`[batch, heads, seq,
    head_dim]`, keys and values possibly of fewer, grouped heads), the
    result `[batch, seq, heads * head_dim]`, each head's rows written where
    the merge would have put them. `stats` is each query row's log-sum-exp
    of its scaled scores, as `mt.qkv_attention` returns it, which the
    gradient reads with the output instead of a sweep to rebuild the
    softmax. `dropout`, `scale`, `rng_stream`, `window` and `softcap` mean what they
    mean on `mt.attention`.

    `mt-fuse` forms it when a merge is the attention's only reader and the
    split before it cannot fold too (LLaMA's rotary embedding lies between
    them): the output is then the projection's input, stashed anyway.

    ```mlir
    %a, %lse = mt.merged_attention %q, %k, %v
        : tensor<8x32x1024x128xbf16>, tensor<8x8x1024x128xbf16>
          -> tensor<8x1024x4096xbf16>, tensor<8x32x1024xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$query, MT_FloatTensor:$key,
                       MT_FloatTensor:$value,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<I64Attr>:$rng_stream,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs MT_FloatTensor:$result,
                      StaticShapeTensorOf<[F32]>:$stats);
  let assemblyFormat = [{
    $query `,` $key `,` $value attr-dict `:`
    custom<GroupedKeys>(type($query), type($key)) `->` type($result) `,`
    type($stats)
  }];
  let hasVerifier = 1;
}

def MT_MergedAttentionGradOp : MT_Op<"merged_attention_grad",
    [Pure, AllTypesMatch<["grad_output", "output"]>,
     AllTypesMatch<["query", "grad_query"]>,
     AllTypesMatch<["key", "value", "grad_key", "grad_value"]>]> {
  let summary = "Computes the gradients of mt.merged_attention.";
  let description = [{
    `attention_grad(split_heads(grad_output), query, key, value)` without
    the split's copy: `grad_output` is `[batch, seq, heads * head_dim]`,
    `output` and `stats` the forward's two results (the probabilities are
    recomputed from the stats, `D_i = dO_i . O_i` comes from the output, the
    dropout mask is redrawn). The gradients are shaped as `query`, `key`
    and `value`; a grouped key or value head's sums over its query heads.

    ```mlir
    %dq, %dk, %dv = mt.merged_attention_grad %do, %q, %k, %v, %a, %lse
        : tensor<8x1024x4096xbf16>, tensor<8x32x1024x128xbf16>,
          tensor<8x8x1024x128xbf16>, tensor<8x32x1024xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$query,
                       MT_FloatTensor:$key, MT_FloatTensor:$value,
                       MT_FloatTensor:$output,
                       StaticShapeTensorOf<[F32]>:$stats,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<I64Attr>:$rng_stream,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs MT_FloatTensor:$grad_query, MT_FloatTensor:$grad_key,
                      MT_FloatTensor:$grad_value);
  let assemblyFormat = [{
    $grad_output `,` $query `,` $key `,` $value `,` $output `,` $stats
    attr-dict `:` type($grad_output) `,`
    custom<GroupedKeys>(type($query), type($key)) `,` type($stats)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// LLaMA-family blocks: RMSNorm, SwiGLU, rotary embedding, grouped-query
// attention
//===----------------------------------------------------------------------===//

def MT_RMSNormOp : MT_Op<"rms_norm",
    [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Divides by the root mean square over the last dimension, then scales.";
  let description = [{
    `y = x / sqrt(mean(x^2) + epsilon) * weight`, the mean over the last
    dimension of `input` (Zhang and Sennrich 2019; Hugging Face's
    `LlamaRMSNorm`). `weight` has one element per entry of that dimension.

    With `zero_centered_weight`, the scale is `1 + weight` (Gemma's
    `GemmaRMSNorm`; Megatron-LM's `--apply-layernorm-1p`, Transformer
    Engine's `zero_centered_gamma`): the weight starts at 0, and weight
    decay pulls the scale towards 1 rather than 0.

    ```mlir
    %y = mt.rms_norm %x, %w {epsilon = 1.0e-05 : f64}
        : tensor<8x1024x4096xf32>, tensor<4096xf32>
    %g = mt.rms_norm %x, %w {epsilon = 1.0e-06 : f64, zero_centered_weight}
        : tensor<8x1024x3072xf32>, tensor<3072xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, MT_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon,
                       UnitAttr:$zero_centered_weight);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $weight attr-dict `:` type($input) `,` type($weight)
  }];
  let hasVerifier = 1;
}

def MT_RMSNormGradOp : MT_Op<"rms_norm_grad",
    [Pure, AllTypesMatch<["grad_output", "input", "grad_input"]>]> {
  let summary = "Computes the gradients of an RMS norm.";
  let description = [{
    Given the gradient of `mt.rms_norm`'s result, returns the gradients of
    its input and weight (the root mean square is recomputed from `input`).
    With `row_block` B (inside a row fusion, set by `mt-fuse`), the weight
    gradient is `[ceil(rows / B), normalized]` partial sums, one row per
    block of B rows, which `mt.bias_add_grad` then sums (see
    `mt.layer_norm_grad`). `zero_centered_weight` as the norm's: the input
    gradient reads the scale `1 + weight`; the weight's gradient is the
    scale's.

    ```mlir
    %dx, %dw = mt.rms_norm_grad %dy, %x, %w {epsilon = 1.0e-05 : f64}
        : tensor<8x1024x4096xf32>, tensor<4096xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$input,
                       MT_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-6">:$epsilon,
                       OptionalAttr<I64Attr>:$row_block,
                       UnitAttr:$zero_centered_weight);
  let results = (outs MT_FloatTensor:$grad_input, MT_FloatTensor:$grad_weight);
  // `-> type` after the weight's type only for partial sums (row_block).
  let assemblyFormat = [{
    $grad_output `,` $input `,` $weight attr-dict `:` type($input) `,`
    custom<ParameterGradientTypes>(type($weight), type($grad_weight))
  }];
  let hasVerifier = 1;
}

def MT_SiluOp : MT_Op<"silu", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Applies SiLU (swish): x * sigmoid(x).";
  let description = [{
    The gate activation of LLaMA's SwiGLU MLP, `down(silu(gate(x)) * up(x))`
    (Shazeer 2020), `torch.nn.functional.silu`.

    ```mlir
    %y = mt.silu %x : tensor<8x1024x11008xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def MT_SiluGradOp : MT_Op<"silu_grad", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Computes the gradient of SiLU.";
  let description = [{
    `dx = dy * s * (1 + x * (1 - s))` with `s = sigmoid(x)`.

    ```mlir
    %dx = mt.silu_grad %dy, %x : tensor<8x1024x11008xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$input);
  let results = (outs MT_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($grad_input)";
}

def MT_SoftcapOp : MT_Op<"softcap", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Caps values smoothly: cap * tanh(x / cap).";
  let description = [{
    Gemma 2's soft-capping of its logits (`final_logit_softcapping`):
    values far below `cap` pass nearly unchanged, larger ones approach
    `cap`. (Its capping of the attention scores is `mt.attention`'s
    `softcap`, inside the softmax.)

    ```mlir
    %y = mt.softcap %logits {cap = 3.000000e+01 : f64} : tensor<8x1024x256000xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, F64Attr:$cap);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def MT_SoftcapGradOp : MT_Op<"softcap_grad", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Computes the gradient of a soft cap.";
  let description = [{
    `dx = dy * (1 - t^2)` with `t = tanh(x / cap)`.

    ```mlir
    %dx = mt.softcap_grad %dy, %x {cap = 3.000000e+01 : f64} : tensor<8x1024x256000xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$input,
                       F64Attr:$cap);
  let results = (outs MT_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($grad_input)";
  let hasVerifier = 1;
}

def MT_MulOp : MT_Op<"mul", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, Commutative, SameOperandsAndResultType]> {
  let summary = "Multiplies two tensors of the same type elementwise.";
  let description = [{
    The gating product of SwiGLU, `silu(gate) * up`.

    ```mlir
    %y = mt.mul %a, %b : tensor<8x1024x11008xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$lhs, MT_FloatTensor:$rhs);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def MT_RopeOp : MT_Op<"rope", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Rotates query or key heads by their position (rotary embedding).";
  let description = [{
    Rotary position embedding (Su et al. 2021) in Hugging Face's
    `rotate_half` convention, on `[batch, heads, seq, head_dim]`: for
    `i < head_dim / 2`, the pair `(x[i], x[i + head_dim / 2])` at position
    `p` is rotated by the angle `p * inv_freq[i]`, with
    `inv_freq[i] = theta^(-2i / head_dim)`. The `llama3_*` attributes, all
    or none, apply Llama 3.1's `rope_scaling` of type "llama3" to
    `inv_freq` (Hugging Face's `_compute_llama3_parameters`);
    `linear_factor` instead applies one of type "linear" (position
    interpolation, `_compute_linear_scaling_rope_parameters`: `inv_freq /
    linear_factor`, Gemma 3's global layers). With `inverse`, the rotation
    is by minus the angle: the op's gradient.

    ```mlir
    %q2 = mt.rope %q {theta = 5.0e+05 : f64} : tensor<8x32x1024x128xf32>
    %k2 = mt.rope %k {theta = 1.0e+06 : f64, linear_factor = 8.0 : f64}
        : tensor<8x16x1024x256xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input,
                       DefaultValuedAttr<F64Attr, "10000.0">:$theta,
                       OptionalAttr<F64Attr>:$llama3_factor,
                       OptionalAttr<F64Attr>:$llama3_low_freq_factor,
                       OptionalAttr<F64Attr>:$llama3_high_freq_factor,
                       OptionalAttr<I64Attr>:$llama3_original_max_positions,
                       OptionalAttr<F64Attr>:$linear_factor,
                       UnitAttr:$inverse);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def MT_RepeatKVOp : MT_Op<"repeat_kv", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Repeats each key or value head for its group of query heads.";
  let description = [{
    Grouped-query attention (Ainslie et al. 2023): `input` is
    `[batch, kv_heads, seq, head_dim]` and the result
    `[batch, kv_heads * groups, seq, head_dim]`, head `h` of the result
    being head `h / groups` of the input (Hugging Face's `repeat_kv`). Query
    head `h` then attends with key and value head `h / groups`.

    ```mlir
    %k2 = mt.repeat_kv %k {groups = 4 : i64}
        : tensor<8x8x1024x128xf32> -> tensor<8x32x1024x128xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, I64Attr:$groups);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def MT_RepeatKVGradOp : MT_Op<"repeat_kv_grad", [Pure]> {
  let summary = "Sums the gradients of each repeated head over its group.";
  let description = [{
    The gradient of `mt.repeat_kv`: head `k` of the result is the sum of
    heads `k * groups ... k * groups + groups - 1` of `grad_output`.

    ```mlir
    %dk = mt.repeat_kv_grad %dk2 {groups = 4 : i64}
        : tensor<8x32x1024x128xf32> -> tensor<8x8x1024x128xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, I64Attr:$groups);
  let results = (outs MT_FloatTensor:$grad_input);
  let assemblyFormat = [{
    $grad_output attr-dict `:` type($grad_output) `->` type($grad_input)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Mixture of experts
//
// A sparse MoE MLP (Mixtral's, Megatron-LM's dropless MoE) as static
// shapes: every token chooses k experts, so the experts' rows together are
// always tokens * k, in expert order, however they divide among experts
// (with a capacity, Megatron-LM's token dropping: at most the experts'
// capacity rows, `mt.moe_route`'s `capacity_factor`). `mt.moe_route`
// numbers them, `mt.moe_permute` copies each token to its k
// rows, `mt.grouped_matmul` multiplies each expert's rows by that expert's
// weight (the row offsets are run-time values), and `mt.moe_unpermute`
// sums each token's k rows back, weighted by the gate. The gradient of each
// is another of them, which keeps the backward in these ops too.
//===----------------------------------------------------------------------===//

def MT_TopKGatingOp : MT_Op<"top_k_gating", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Chooses each token's k experts and their gate weights.";
  let description = [{
    For the router's logits `[tokens..., num_experts]`, the `k` largest of
    each row (the lower expert first among equal logits) as `experts`
    `[tokens..., k]` (i32, in decreasing order of logit), and `weights`
    `[tokens..., k]`: the softmax of those k logits. That is Mixtral's
    routing (`softmax` over all experts, `topk`, then the k probabilities
    divided by their sum) computed without the other experts' terms. With
    `unnormalized`, the weights are the k probabilities themselves, of the
    softmax over all experts (Hugging Face's `norm_topk_prob = false`, as
    in Qwen2-MoE and OLMoE): they sum to less than 1.

    ```mlir
    %w, %e = mt.top_k_gating %logits {k = 2 : i64}
        : tensor<8x1024x8xf32> -> tensor<8x1024x2xf32>, tensor<8x1024x2xi32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$logits, I64Attr:$k,
                       UnitAttr:$unnormalized);
  let results = (outs MT_FloatTensor:$weights, MT_RoutingTensor:$experts);
  let assemblyFormat = [{
    $logits (`unnormalized` $unnormalized^)? attr-dict `:` type($logits) `->`
    type($weights) `,` type($experts)
  }];
  let hasVerifier = 1;
}

def MT_TopKGatingGradOp : MT_Op<"top_k_gating_grad",
    [Pure, AllTypesMatch<["grad_weights", "weights"]>]> {
  let summary = "Computes the gradient of the router's logits.";
  let description = [{
    The gradient of `mt.top_k_gating`'s weights through their softmax:
    `grad_logits[t, experts[t, j]] = w[t, j] * (grad_weights[t, j] -
    sum_i w[t, i] * grad_weights[t, i])`, zero for the experts a token did
    not choose (the choice itself has no gradient). For `unnormalized`
    weights, probabilities of the softmax `p` over all experts, it reads the
    `logits` too and reaches every expert: `grad_logits[t, e] = p[t, e] *
    (G[t, e] - sum_i w[t, i] * grad_weights[t, i])`, with `G[t, e]` the
    weight's gradient where `e` was chosen and 0 elsewhere.

    ```mlir
    %dlogits = mt.top_k_gating_grad %dw, %w, %e {num_experts = 8 : i64}
        : tensor<8x1024x2xf32>, tensor<8x1024x2xi32> -> tensor<8x1024x8xf32>
    %dlogits = mt.top_k_gating_grad %dw, %w, %e logits(%l : tensor<8x1024x8xf32>)
        {num_experts = 8 : i64}
        : tensor<8x1024x2xf32>, tensor<8x1024x2xi32> -> tensor<8x1024x8xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_weights, MT_FloatTensor:$weights,
                       MT_RoutingTensor:$experts,
                       Optional<MT_FloatTensor>:$logits, I64Attr:$num_experts);
  let results = (outs MT_FloatTensor:$grad_logits);
  let assemblyFormat = [{
    $grad_weights `,` $weights `,` $experts
    (`logits` `(` $logits^ `:` type($logits) `)`)? attr-dict `:`
    type($weights) `,` type($experts) `->` type($grad_logits)
  }];
  let hasVerifier = 1;
}

def MT_MoeRouteOp : MT_Op<"moe_route", [Pure]> {
  let summary = "Numbers the experts' rows: each token's k rows (or those an expert's capacity keeps), in expert order.";
  let description = [{
    For `experts` `[tokens..., k]` (values in `[0, num_experts)`), the rows
    of all experts as one `[tokens * k, ...]` list sorted by expert (and,
    within an expert, by token and choice): `positions[t, j]` is the row of
    token `t`'s `j`-th choice, and `offsets` `[num_experts + 1]` where each
    expert's rows begin (`offsets[num_experts]` is `tokens * k` without a
    capacity). An expert id out of range is an error at run time.

    With `capacity_factor` (Megatron-LM's `--moe-expert-capacity-factor`),
    each expert takes at most `capacity = min(tokens, ceil(tokens * k /
    num_experts * capacity_factor))` of its choices and the others are
    dropped: `positions` is -1 for them (they add nothing to the token's
    output and get no gradient). Which are kept is Megatron-LM's
    `--moe-token-drop-policy`: with `weights` (the gate weights `[tokens...,
    k]`, policy `probs`) the expert's `capacity` choices of largest weight,
    the earlier token first among equal weights; without (policy
    `position`) its first `capacity` choices in token order. The kept rows
    lie packed in expert order, `offsets[num_experts]` of the
    `num_experts * capacity` rows the permutation ops then hold (the rest
    are zeros), so that the experts' rows are sized by the capacity rather
    than by the tokens.

    ```mlir
    %pos, %offsets = mt.moe_route %e {num_experts = 8 : i64}
        : tensor<8x1024x2xi32> -> tensor<8x1024x2xi32>, tensor<9xi32>
    %pos, %offsets = mt.moe_route %e weights(%w : tensor<8x1024x2xf32>)
        {num_experts = 8 : i64, capacity_factor = 1.25 : f64}
        : tensor<8x1024x2xi32> -> tensor<8x1024x2xi32>, tensor<9xi32>
    ```
  }];
  let arguments = (ins MT_RoutingTensor:$experts,
                       Optional<MT_FloatTensor>:$weights,
                       I64Attr:$num_experts,
                       OptionalAttr<F64Attr>:$capacity_factor);
  let results = (outs MT_RoutingTensor:$positions, MT_RoutingTensor:$offsets);
  let assemblyFormat = [{
    $experts (`weights` `(` $weights^ `:` type($weights) `)`)? attr-dict `:`
    type($experts) `->` type($positions) `,` type($offsets)
  }];
  let hasVerifier = 1;
}

def MT_MoePermuteOp : MT_Op<"moe_permute", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Copies each token to its k experts' rows.";
  let description = [{
    `rows[positions[t, j], :] = input[t, :]` for input `[tokens..., hidden]`
    and positions `[tokens..., k]` (`mt.moe_route`'s), into
    `[tokens * k, hidden]`; with `weights` `[tokens..., k]`, times
    `weights[t, j]` (the gradient of `mt.moe_unpermute`).

    With `capacity_factor` and `num_experts` (those of the `mt.moe_route`
    the positions come from), the rows are `[num_experts * capacity,
    hidden]` and a position of -1 (a dropped choice) reads or writes no
    row; the rows no choice writes are zeros.

    ```mlir
    %rows = mt.moe_permute %x, %pos
        : tensor<8x1024x4096xf32>, tensor<8x1024x2xi32> -> tensor<16384x4096xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, MT_RoutingTensor:$positions,
                       Optional<MT_FloatTensor>:$weights,
                       OptionalAttr<F64Attr>:$capacity_factor,
                       OptionalAttr<I64Attr>:$num_experts);
  let results = (outs MT_FloatTensor:$rows);
  let assemblyFormat = [{
    $input `,` $positions (`weights` `(` $weights^ `:` type($weights) `)`)?
    attr-dict `:` type($input) `,` type($positions) `->` type($rows)
  }];
  let hasVerifier = 1;
}

def MT_MoeUnpermuteOp : MT_Op<"moe_unpermute", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Sums each token's k expert rows, weighted by its gate.";
  let description = [{
    `result[t, :] = sum_j weights[t, j] * rows[positions[t, j], :]` for rows
    `[tokens * k, hidden]` and positions and weights `[tokens..., k]`, into
    `[tokens..., hidden]`; without `weights`, the plain sum (the gradient of
    `mt.moe_permute`). The k rows are added in choice order.

    With `capacity_factor` and `num_experts` (those of the `mt.moe_route`
    the positions come from), the rows are `[num_experts * capacity,
    hidden]` and a position of -1 (a dropped choice) reads or writes no
    row.

    ```mlir
    %y = mt.moe_unpermute %rows, %pos weights(%w : tensor<8x1024x2xf32>)
        : tensor<16384x4096xf32>, tensor<8x1024x2xi32> -> tensor<8x1024x4096xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$rows, MT_RoutingTensor:$positions,
                       Optional<MT_FloatTensor>:$weights,
                       OptionalAttr<F64Attr>:$capacity_factor,
                       OptionalAttr<I64Attr>:$num_experts);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $rows `,` $positions (`weights` `(` $weights^ `:` type($weights) `)`)?
    attr-dict `:` type($rows) `,` type($positions) `->` type($result)
  }];
  let hasVerifier = 1;
}

def MT_MoeWeightsGradOp : MT_Op<"moe_weights_grad", [Pure]> {
  let summary = "Computes the gradient of the weights of a permute or unpermute.";
  let description = [{
    `grad_weights[t, j] = dot(grad_output[t, :], rows[positions[t, j], :])`:
    for `mt.moe_unpermute`, its result's gradient against its rows; for
    `mt.moe_permute`, its input against its rows' gradient.

    With `capacity_factor` and `num_experts` (those of the `mt.moe_route`
    the positions come from), the rows are `[num_experts * capacity,
    hidden]` and a position of -1 (a dropped choice) reads or writes no
    row (its gradient is 0).

    ```mlir
    %dw = mt.moe_weights_grad %dy, %rows, %pos
        : tensor<8x1024x4096xf32>, tensor<16384x4096xf32>, tensor<8x1024x2xi32>
          -> tensor<8x1024x2xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$rows,
                       MT_RoutingTensor:$positions,
                       OptionalAttr<F64Attr>:$capacity_factor,
                       OptionalAttr<I64Attr>:$num_experts);
  let results = (outs MT_FloatTensor:$grad_weights);
  let assemblyFormat = [{
    $grad_output `,` $rows `,` $positions attr-dict `:` type($grad_output)
    `,` type($rows) `,` type($positions) `->` type($grad_weights)
  }];
  let hasVerifier = 1;
}

def MT_SigmoidGateOp : MT_Op<"sigmoid_gate", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, AllTypesMatch<["input", "result"]>]> {
  let summary = "Scales each token's row by the sigmoid of its gate.";
  let description = [{
    `result[t..., :] = sigmoid(gate[t..., 0]) * input[t..., :]` for input
    `[tokens..., hidden]` and gate `[tokens..., 1]`: Qwen2-MoE's shared
    expert, whose output each token weighs by a gate of its own
    (`sigmoid(shared_expert_gate(x)) * shared_expert(x)`, Megatron-LM's
    `--moe-shared-expert-gate`).

    ```mlir
    %y = mt.sigmoid_gate %x, %g : tensor<8x1024x2048xf32>, tensor<8x1024x1xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, MT_FloatTensor:$gate);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $gate attr-dict `:` type($input) `,` type($gate)
  }];
  let hasVerifier = 1;
}

def MT_SigmoidGateGradOp : MT_Op<"sigmoid_gate_grad",
    [Pure, AllTypesMatch<["grad_output", "input", "grad_input"]>,
     AllTypesMatch<["gate", "grad_gate"]>]> {
  let summary = "Computes the gradients of a sigmoid gate.";
  let description = [{
    Given the gradient `dy` of `mt.sigmoid_gate`'s result, with
    `s = sigmoid(gate)`: `grad_input = s * dy` and
    `grad_gate[t..., 0] = s * (1 - s) * dot(dy[t..., :], input[t..., :])`.

    ```mlir
    %dx, %dg = mt.sigmoid_gate_grad %dy, %x, %g
        : tensor<8x1024x2048xf32>, tensor<8x1024x1xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$input,
                       MT_FloatTensor:$gate);
  let results = (outs MT_FloatTensor:$grad_input, MT_FloatTensor:$grad_gate);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $gate attr-dict `:` type($input) `,`
    type($gate)
  }];
  let hasVerifier = 1;
}

def MT_GroupedMatmulOp : MT_Op<"grouped_matmul", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Multiplies each expert's rows by that expert's weight.";
  let description = [{
    `input` is `[rows, k]`, its rows grouped by expert: rows `offsets[e]`
    to `offsets[e + 1]` (`mt.moe_route`'s, read at run time) are expert
    `e`'s, and multiply `weights[e]`: `[n, k]` transposed with
    `transpose_b` (an `nn.Linear` weight), else `[k, n]`. The result is
    `[rows, n]`. One weight per expert, each a parameter of its own (as
    Hugging Face's checkpoints store them). An expert with no rows
    computes nothing.

    ```mlir
    %h = mt.grouped_matmul %rows, %offsets, %w0, %w1 transpose_b
        : (tensor<16384x4096xf32>, tensor<3xi32>, tensor<14336x4096xf32>,
           tensor<14336x4096xf32>) -> tensor<16384x14336xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, MT_RoutingTensor:$offsets,
                       Variadic<MT_FloatTensor>:$weights,
                       UnitAttr:$transpose_b);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = [{
    $input `,` $offsets `,` $weights (`transpose_b` $transpose_b^)? attr-dict
    `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def MT_GroupedMatmulWeightGradOp : MT_Op<"grouped_matmul_weight_grad", [Pure]> {
  let summary = "Computes each expert's weight gradient from its rows.";
  let description = [{
    The weight gradients of `mt.grouped_matmul`: for each expert `e`, over
    its rows, `grad_output_e^T input_e` (`[n, k]`) with `transpose_b`, else
    `input_e^T grad_output_e` (`[k, n]`); zeros for an expert with no rows.

    ```mlir
    %dw0, %dw1 = mt.grouped_matmul_weight_grad %dh, %rows, %offsets transpose_b
        : (tensor<16384x14336xf32>, tensor<16384x4096xf32>, tensor<3xi32>)
          -> (tensor<14336x4096xf32>, tensor<14336x4096xf32>)
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$input,
                       MT_RoutingTensor:$offsets, UnitAttr:$transpose_b);
  let results = (outs Variadic<MT_FloatTensor>:$grad_weights);
  let assemblyFormat = [{
    $grad_output `,` $input `,` $offsets (`transpose_b` $transpose_b^)?
    attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

// Expert parallelism (Megatron-LM's alltoall token dispatcher): the experts
// are split over the ranks of a grid axis, each holding `local` of them, and
// each rank's rows travel to the rank of their expert and back. The number
// of rows a rank receives is known only at run time; its buffer holds the
// most it can receive (every row of every rank), as a static shape must.

def MT_ExpertDispatchOp : MT_Op<"expert_dispatch", [Pure]> {
  let summary = "Sends each expert's rows to the rank holding the expert.";
  let description = [{
    `rows` `[rows, hidden]` are grouped by expert as `offsets` `[experts + 1]`
    says (`mt.moe_route`'s); `grid_axis` of `grid` is groups of `ranks`
    consecutive ranks (the counts' rows), each rank holding `local`
    consecutive experts (the group's `r`-th the experts `r * local` to
    `(r + 1) * local - 1`). An all-to-all within the group exchanges first
    the row counts,
    then the rows: the result `received` `[ranks * rows, hidden]` holds this
    rank's experts' rows from every rank, grouped by local expert (and
    within one, by source rank), `local_offsets` `[local + 1]` where each
    local expert's rows begin, and `counts` `[ranks, local]` how many rows
    each rank sent for each local expert, which `mt.expert_combine` needs
    to send them back. Rows past `local_offsets[local]` are zeros.
    With `capacity_bounded` (the rows of a routing with a capacity,
    `mt.moe_route`'s `capacity_factor`: `rows` is `experts * capacity` and
    no rank sends an expert more than `capacity` rows), `received` is
    `[rows, hidden]`: the `local * ranks * capacity` rows that can come,
    not every rank's rows.

    ```mlir
    %r, %lo, %c = mt.expert_dispatch %rows, %offsets
        {grid = @grid, grid_axis = 0 : i64}
        : tensor<16384x4096xf32>, tensor<9xi32>
          -> tensor<32768x4096xf32>, tensor<5xi32>, tensor<2x4xi32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$rows, MT_RoutingTensor:$offsets,
                       FlatSymbolRefAttr:$grid, I64Attr:$grid_axis,
                       UnitAttr:$capacity_bounded);
  let results = (outs MT_FloatTensor:$received,
                      MT_RoutingTensor:$local_offsets,
                      MT_RoutingTensor:$counts);
  let assemblyFormat = [{
    $rows `,` $offsets attr-dict `:` type($rows) `,` type($offsets) `->`
    type($received) `,` type($local_offsets) `,` type($counts)
  }];
  let hasVerifier = 1;
}

def MT_ExpertCombineOp : MT_Op<"expert_combine", [Pure]> {
  let summary = "Returns the experts' rows to the ranks they came from.";
  let description = [{
    The inverse of `mt.expert_dispatch`: `received` `[ranks * rows, n]`
    (`[rows, n]` with `capacity_bounded`) holds this rank's experts' rows as the dispatch grouped them (`counts`
    `[ranks, local]`, its third result), and each goes back to the rank
    that sent it, where it takes its row's place: the result `[rows, n]`
    is grouped by expert as `offsets` `[experts + 1]` (the dispatch's
    operand) says; with `capacity_bounded`, the rows past
    `offsets[experts]` (no choice took them) are zeros.

    ```mlir
    %rows = mt.expert_combine %y, %c, %offsets
        {grid = @grid, grid_axis = 0 : i64}
        : tensor<32768x4096xf32>, tensor<2x4xi32>, tensor<9xi32>
          -> tensor<16384x4096xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$received, MT_RoutingTensor:$counts,
                       MT_RoutingTensor:$offsets, FlatSymbolRefAttr:$grid,
                       I64Attr:$grid_axis,
                       UnitAttr:$capacity_bounded);
  let results = (outs MT_FloatTensor:$rows);
  let assemblyFormat = [{
    $received `,` $counts `,` $offsets attr-dict `:` type($received) `,`
    type($counts) `,` type($offsets) `->` type($rows)
  }];
  let hasVerifier = 1;
}

def MT_StridedAllReduceOp : MT_Op<"strided_all_reduce",
    [Pure, SameOperandsAndResultType]> {
  let summary = "Sums a tensor over every stride-th rank of a grid axis.";
  let description = [{
    The sum of `input` over the ranks of `grid_axis` of `grid` whose
    coordinates on it are equal modulo `stride` (which divides the axis):
    under expert parallelism over part of the data-parallel ranks, the
    ranks holding the same experts (Megatron-LM's expert data parallel
    group), which reduce those experts' gradients. A `shard` collective
    reduces over whole axes; this group is a strided part of one.

    ```mlir
    %g = mt.strided_all_reduce %dw {grid = @grid, grid_axis = 0 : i64,
                                    stride = 2 : i64} : tensor<64x32xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, FlatSymbolRefAttr:$grid,
                       I64Attr:$grid_axis, I64Attr:$stride);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

// ZeRO's collectives over an expert's replicas: as shard.reduce_scatter,
// all_gather and all_slice along dimension 0 of a flat tensor, over the
// strided group of mt.strided_all_reduce. A rank's piece is its coordinate
// on the axis divided by the stride (the replicas in coordinate order).
class MT_StridedPieceOp<string mnemonic, string summaryText,
                        string descriptionText>
    : MT_Op<mnemonic, [Pure]> {
  let summary = summaryText;
  let description = descriptionText;
  let arguments = (ins MT_FloatTensor:$input, FlatSymbolRefAttr:$grid,
                       I64Attr:$grid_axis, I64Attr:$stride);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat =
      "$input attr-dict `:` type($input) `->` type($result)";
  let hasVerifier = 1;
}

def MT_StridedReduceScatterOp : MT_StridedPieceOp<"strided_reduce_scatter",
    "Sums a flat tensor over an expert's replicas and keeps this rank's piece.",
    [{
    The sum of the 1-D `input` over the ranks of `grid_axis` of `grid` whose
    coordinates on it are equal modulo `stride` (an expert's replicas
    under expert parallelism over part of the data-parallel ranks), of which
    this rank keeps piece `coordinate / stride`: ZeRO-2's gradient pieces of
    an expert, reduced over its expert-data-parallel group as Megatron-LM's
    distributed optimizer does. The input is the result's size times the
    group's (the axis' ranks divided by the stride).

    ```mlir
    %piece = mt.strided_reduce_scatter %flat {grid = @grid, grid_axis = 0 : i64,
                                              stride = 2 : i64}
        : tensor<4096xf32> -> tensor<2048xf32>
    ```
  }]>;

def MT_StridedAllGatherOp : MT_StridedPieceOp<"strided_all_gather",
    "Concatenates the pieces of an expert's replicas.",
    [{
    The 1-D pieces of the ranks of `grid_axis` of `grid` whose coordinates
    on it are equal modulo `stride` (an expert's replicas), concatenated in
    coordinate order: a ZeRO-sharded expert made whole again.

    ```mlir
    %full = mt.strided_all_gather %piece {grid = @grid, grid_axis = 0 : i64,
                                          stride = 2 : i64}
        : tensor<2048xf32> -> tensor<4096xf32>
    ```
  }]>;

def MT_StridedAllSliceOp : MT_StridedPieceOp<"strided_all_slice",
    "Takes this rank's piece of a flat tensor among an expert's replicas.",
    [{
    Piece `coordinate / stride` of the 1-D `input`, which every replica of
    an expert holds whole (ranks of `grid_axis` equal modulo `stride`): the
    slice of shard.all_slice over that group. Nothing is communicated.

    ```mlir
    %piece = mt.strided_all_slice %flat {grid = @grid, grid_axis = 0 : i64,
                                         stride = 2 : i64}
        : tensor<4096xf32> -> tensor<2048xf32>
    ```
  }]>;

// The auxiliary load-balancing loss (Switch Transformer's, as Hugging
// Face's Mixtral adds it with `output_router_logits`): each router's share
// of tokens per expert and mean probability per expert, then
// `coefficient * num_experts * sum_e load_e * probability_e` of their means
// over the routers. Only the probabilities carry a gradient.

def MT_RouterStatisticsOp : MT_Op<"router_statistics", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Measures a router's load and mean probability per expert.";
  let description = [{
    For the router's logits `[tokens..., num_experts]` and its choices
    `experts` `[tokens..., k]` (`mt.top_k_gating`'s): `load[e]`, the number
    of choices of expert `e` divided by the number of tokens (the loads sum
    to k), and `probability[e]`, the mean over tokens of the softmax of the
    logits over all experts (they sum to 1). Both are `[num_experts]` and
    accumulated in double precision. A choice out of range is an error at
    run time.

    ```mlir
    %load, %prob = mt.router_statistics %logits, %e
        : tensor<8x1024x8xf32>, tensor<8x1024x2xi32>
          -> tensor<8xf32>, tensor<8xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$logits, MT_RoutingTensor:$experts);
  let results = (outs MT_FloatTensor:$load, MT_FloatTensor:$probability);
  let assemblyFormat = [{
    $logits `,` $experts attr-dict `:` type($logits) `,` type($experts) `->`
    type($load) `,` type($probability)
  }];
  let hasVerifier = 1;
}

def MT_RouterProbabilityGradOp : MT_Op<"router_probability_grad", [Pure]> {
  let summary = "Computes the logits' gradient of a router's mean probability.";
  let description = [{
    With `s[t]` the softmax of `logits[t, :]` over the T tokens:
    `grad_logits[t, j] = s[t, j] * (grad[j] - sum_e grad[e] * s[t, e]) / T`,
    the gradient of `mt.router_statistics`'s `probability`.

    ```mlir
    %dlogits = mt.router_probability_grad %dprob, %logits
        : tensor<8xf32>, tensor<8x1024x8xf32> -> tensor<8x1024x8xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_probability,
                       MT_FloatTensor:$logits);
  let results = (outs MT_FloatTensor:$grad_logits);
  let assemblyFormat = [{
    $grad_probability `,` $logits attr-dict `:` type($grad_probability) `,`
    type($logits) `->` type($grad_logits)
  }];
  let hasVerifier = 1;
}

def MT_LoadBalancingLossOp : MT_Op<"load_balancing_loss",
    [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure,
     AttrSizedOperandSegments]> {
  let summary = "Computes the auxiliary load-balancing loss of the routers.";
  let description = [{
    `coefficient * num_experts * sum_e mean_l(loads[l][e]) *
    mean_l(probabilities[l][e])` over the routers `l` (one load and one
    probability per router, `[num_experts]` each, `mt.router_statistics`'s):
    Hugging Face's `load_balancing_loss_func` over all layers' routers
    concatenated, times `router_aux_loss_coef`. One router's loss alone,
    times its coefficient, is Megatron-LM's per layer. Balanced routing
    gives `coefficient * k`. The result is an f32 scalar.

    ```mlir
    %aux = mt.load_balancing_loss loads(%l0, %l1 : tensor<8xf32>, tensor<8xf32>)
        probabilities(%p0, %p1 : tensor<8xf32>, tensor<8xf32>)
        {coefficient = 1.000000e-03 : f64}
    ```
  }];
  let arguments = (ins Variadic<MT_FloatTensor>:$loads,
                       Variadic<MT_FloatTensor>:$probabilities,
                       F64Attr:$coefficient);
  let results = (outs MT_ScalarF32Tensor:$loss);
  let assemblyFormat = [{
    `loads` `(` $loads `:` type($loads) `)` `probabilities` `(`
    $probabilities `:` type($probabilities) `)` attr-dict
  }];
  let hasVerifier = 1;
}

def MT_LoadBalancingLossGradOp : MT_Op<"load_balancing_loss_grad",
    [Pure, MT_LossGradient]> {
  let summary = "Computes the probabilities' gradient of the load-balancing loss.";
  let description = [{
    `grad_probability[e] = grad * coefficient * num_experts *
    mean_l(loads[l][e]) / L` for the L routers: the gradient of each of
    `mt.load_balancing_loss`'s probabilities (the same for all of them).

    ```mlir
    %dprob = mt.load_balancing_loss_grad %dloss, %l0, %l1
        {coefficient = 1.000000e-03 : f64} : tensor<8xf32> -> tensor<8xf32>
    ```
  }];
  let arguments = (ins MT_ScalarF32Tensor:$grad, Variadic<MT_FloatTensor>:$loads,
                       F64Attr:$coefficient);
  let results = (outs MT_FloatTensor:$grad_probability);
  let assemblyFormat = [{
    $grad `,` $loads attr-dict `:` type($loads) `->` type($grad_probability)
  }];
  let hasVerifier = 1;
}

// The router z-loss (ST-MoE's, Megatron-LM's `--moe-z-loss-coeff`): the
// mean over tokens of the square of the log-sum-exp of each token's router
// logits, which keeps the logits small.

def MT_RouterZLossOp : MT_Op<"router_z_loss",
    [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Computes a router's z-loss.";
  let description = [{
    `coefficient * mean_t (log sum_e exp(logits[t, e]))^2` over the T
    tokens of the logits `[tokens..., num_experts]`: Megatron-LM's
    `z_loss_func`, one per sparse layer. Accumulated in double precision;
    the result is an f32 scalar.

    ```mlir
    %z = mt.router_z_loss %logits {coefficient = 1.000000e-03 : f64}
        : tensor<8x1024x8xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$logits, F64Attr:$coefficient);
  let results = (outs MT_ScalarF32Tensor:$loss);
  let assemblyFormat = "$logits attr-dict `:` type($logits)";
  let hasVerifier = 1;
}

def MT_RouterZLossGradOp : MT_Op<"router_z_loss_grad",
    [Pure, MT_LossGradient, AllTypesMatch<["logits", "grad_logits"]>]> {
  let summary = "Computes the logits' gradient of a router's z-loss.";
  let description = [{
    `grad_logits[t, e] = grad * coefficient * 2 * z[t] * s[t, e] / T`, with
    `z[t]` the log-sum-exp of token t's logits and `s[t, :]` their softmax:
    the gradient of `mt.router_z_loss`.

    ```mlir
    %dlogits = mt.router_z_loss_grad %dloss, %logits
        {coefficient = 1.000000e-03 : f64} : tensor<8x1024x8xf32>
    ```
  }];
  let arguments = (ins MT_ScalarF32Tensor:$grad, MT_FloatTensor:$logits,
                       F64Attr:$coefficient);
  let results = (outs MT_FloatTensor:$grad_logits);
  let assemblyFormat = "$grad `,` $logits attr-dict `:` type($logits)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Loss
//===----------------------------------------------------------------------===//

def MT_CrossEntropyOp : MT_Op<"cross_entropy", [DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure]> {
  let summary = "Computes the mean softmax cross-entropy against labels.";
  let description = [{
    `loss = mean over positions i of (logsumexp(logits[i, :]) -
    logits[i, labels[i]])`, as `torch.nn.functional.cross_entropy` with mean
    reduction. `logits` has shape `[batch, seq, vocab]` and `labels`
    `[batch, seq]`; the loss is an `f32` scalar whatever the logits' type.

    A custom op: tensor parallelism computes it vocab-parallel, each rank
    holding a slice of the vocabulary, reducing the row maximum and the sum
    of exponentials across ranks, so that no rank ever holds full logits.

    With a result of the labels' shape the op returns each position's loss
    instead of their mean (`reduction='none'` in PyTorch). `mt-fuse` uses
    that form inside an `mt.fusion` that also computes the logits'
    gradient, followed by `mt.mean`; only the mean form differentiates.

    ```mlir
    %loss = mt.cross_entropy %logits, %labels
        : (tensor<8x1024x50257xf32>, tensor<8x1024xi32>) -> tensor<f32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$logits, MT_TokenTensor:$labels);
  let results = (outs StaticShapeTensorOf<[F32]>:$loss);
  let assemblyFormat = [{
    $logits `,` $labels attr-dict `:` functional-type(operands, results)
  }];
  let hasVerifier = 1;
}


//===----------------------------------------------------------------------===//
// Gradients
//
// The derivative of each forward op that is not itself expressible with
// forward ops, as `mt-autodiff` emits them. Matmul, add, split_heads and
// merge_heads differentiate into forward ops.
//===----------------------------------------------------------------------===//

def MT_EmbeddingGradOp : MT_Op<"embedding_grad", [Pure]> {
  let summary = "Scatter-adds output gradients into the rows of the table.";
  let description = [{
    `grad_table[v, :] = sum of grad_output[i..., :] over all i with
    ids[i...] = v`; rows never looked up are zero. The table's shape is the
    result type; its element type is the output gradient's, or f32 for
    16-bit output gradients (`mt-fuse`'s `widen-gradients`: the sums are
    not rounded to 16 bits).

    With `accumulate(%acc)` (f32, the table's type) each row's sum is added
    to `%acc`'s row, and rows never looked up keep `%acc`'s values: a tied
    embedding's gradient added into the output head's, which `mt-fuse`
    forms from their `mt.add` (`gradient-accumulation-fusion`), so the
    vocabulary-sized table is neither zeroed, nor written, nor read again
    by the add; the lowering writes the result over the accumulator. Each
    row's tokens are summed first, in token order, and the sum added once:
    the add's bits (but for a -0 in a row no token reads, which the add
    made +0).

    ```mlir
    %dwte = mt.embedding_grad %dx, %ids
        : (tensor<8x1024x768xf32>, tensor<8x1024xi32>) -> tensor<50257x768xf32>
    %dwte2 = mt.embedding_grad %dx16, %ids accumulate(%dhead)
        : (tensor<8x1024x768xbf16>, tensor<8x1024xi32>, tensor<50257x768xf32>)
          -> tensor<50257x768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_TokenTensor:$ids,
                       Optional<MT_FloatTensor>:$accumulator);
  let results = (outs MT_FloatTensor:$grad_table);
  let builders = [
    OpBuilder<(ins "Type":$grad_table, "Value":$grad_output, "Value":$ids), [{
      build($_builder, $_state, grad_table, grad_output, ids,
            /*accumulator=*/Value());
    }]>
  ];
  let assemblyFormat = [{
    $grad_output `,` $ids (`accumulate` `(` $accumulator^ `)`)? attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

def MT_PositionEmbeddingGradOp : MT_Op<"position_embedding_grad", [Pure]> {
  let summary = "Places position gradients in the first rows of the table.";
  let description = [{
    `grad_table[s, :] = grad_output[s, :]` for `s < seq`, zero after.

    ```mlir
    %dwpe = mt.position_embedding_grad %dpos
        : tensor<128x768xf32> -> tensor<1024x768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output);
  let results = (outs MT_FloatTensor:$grad_table);
  let assemblyFormat = [{
    $grad_output attr-dict `:` type($grad_output) `->` type($grad_table)
  }];
  let hasVerifier = 1;
}

def MT_LayerNormGradOp : MT_Op<"layer_norm_grad",
    [Pure, AllTypesMatch<["grad_output", "input", "grad_input"]>,
     AllTypesMatch<["grad_weight", "grad_bias"]>]> {
  let summary = "Computes the gradients of a layer norm.";
  let description = [{
    Given the gradient of `mt.layer_norm`'s result, returns the gradients of
    its input, weight and bias. The statistics are recomputed from `input`
    rather than stashed: they are two values per row, cheaper to recompute
    than to keep alive across the forward pass.

    The weight and bias gradients are sums over all rows. With `row_block`
    B, set by `mt-fuse` inside a row fusion, they are instead
    `[ceil(rows / B), normalized]` f32 partial sums (whatever the weight's
    type), row k summing rows [kB, (k + 1)B): each block of rows is one work item of the generated
    kernel (a thread, or a CUDA block), which accumulates its columns
    without sharing them, and `mt.bias_add_grad` of the partial sums, in
    block order, gives the gradients. The sum then does not depend on how
    many threads ran.

    ```mlir
    %dx, %dw, %db = mt.layer_norm_grad %dy, %x, %w {epsilon = 1.0e-05 : f64}
        : tensor<8x1024x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$input,
                       MT_FloatTensor:$weight,
                       DefaultValuedAttr<F64Attr, "1.0e-5">:$epsilon,
                       OptionalAttr<I64Attr>:$row_block);
  let results = (outs MT_FloatTensor:$grad_input,
                      MT_FloatTensor:$grad_weight, MT_FloatTensor:$grad_bias);
  // `-> type` after the weight's type only for partial sums (row_block).
  let assemblyFormat = [{
    $grad_output `,` $input `,` $weight attr-dict `:` type($input) `,`
    custom<ParameterGradientTypes>(type($weight), type($grad_weight),
                                   type($grad_bias))
  }];
  let hasVerifier = 1;
}

def MT_BiasAddGradOp : MT_Op<"bias_add_grad", [Pure]> {
  let summary = "Sums a gradient over the dimensions a bias was broadcast on.";
  let description = [{
    The gradient of `mt.bias_add`'s bias: `grad_output` summed over its
    leading dimensions down to the shape of the result, which equals the
    trailing dimensions of `grad_output`. The result has `grad_output`'s
    element type, or f32 where that is bf16 or f16 (the sum is not rounded
    to 16 bits; `mt-fuse` forms it for a bias gradient only widened to f32).

    ```mlir
    %db = mt.bias_add_grad %dy : tensor<8x1024x768xf32> -> tensor<768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output);
  let results = (outs MT_FloatTensor:$grad_bias);
  let assemblyFormat = [{
    $grad_output attr-dict `:` type($grad_output) `->` type($grad_bias)
  }];
  let hasVerifier = 1;
}

def MT_GeluGradOp : MT_Op<"gelu_grad", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Computes the gradient of the tanh GELU.";
  let description = [{
    `grad_input = grad_output * gelu'(input)` with the derivative of the tanh
    approximation `mt.gelu` computes.

    ```mlir
    %dx = mt.gelu_grad %dy, %x : tensor<8x1024x3072xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$input);
  let results = (outs MT_FloatTensor:$grad_input);
  let assemblyFormat = "$grad_output `,` $input attr-dict `:` type($grad_input)";
}

def MT_AttentionGradOp : MT_Op<"attention_grad",
    [Pure, AllTypesMatch<["grad_output", "query", "grad_query"]>,
     AllTypesMatch<["key", "value", "grad_key", "grad_value"]>]> {
  let summary = "Computes the gradients of causal attention.";
  let description = [{
    Given the gradient of `mt.attention`'s result, returns the gradients of
    its query, key and value. The attention probabilities are recomputed
    from query and key (as flash attention does), and the dropout mask is
    redrawn from the same `rng_stream`, so nothing `seq x seq` is stashed.
    `dropout`, `scale`, `rng_stream`, `window` and `softcap` equal the forward op's.
    With grouped key and value heads, each key and value head's gradient
    sums over the query heads that read it.

    ```mlir
    %dq, %dk, %dv = mt.attention_grad %do, %q, %k, %v
        {dropout = 1.0e-01 : f64, rng_stream = 3 : i64}
        : tensor<8x12x1024x64xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$grad_output, MT_FloatTensor:$query,
                       MT_FloatTensor:$key, MT_FloatTensor:$value,
                       DefaultValuedAttr<F64Attr, "0.0">:$dropout,
                       OptionalAttr<F64Attr>:$scale,
                       OptionalAttr<I64Attr>:$rng_stream,
                       OptionalAttr<I64Attr>:$window,
                       OptionalAttr<F64Attr>:$softcap);
  let results = (outs MT_FloatTensor:$grad_query, MT_FloatTensor:$grad_key,
                      MT_FloatTensor:$grad_value);
  let assemblyFormat = [{
    $grad_output `,` $query `,` $key `,` $value attr-dict `:`
    custom<GroupedKeys>(type($query), type($key))
  }];
  let hasVerifier = 1;
}

def MT_CrossEntropyGradOp : MT_Op<"cross_entropy_grad",
    [Pure, MT_LossGradient, AllTypesMatch<["logits", "grad_logits"]>]> {
  let summary = "Computes the gradient of the mean cross-entropy.";
  let description = [{
    `grad_logits = grad_loss * (softmax(logits) - onehot(labels)) / N` where
    `N` is the number of positions.

    ```mlir
    %dlogits = mt.cross_entropy_grad %dloss, %logits, %labels
        : (tensor<f32>, tensor<8x1024x50257xf32>, tensor<8x1024xi32>)
        -> tensor<8x1024x50257xf32>
    ```
  }];
  let arguments = (ins MT_ScalarF32Tensor:$grad_loss, MT_FloatTensor:$logits,
                       MT_TokenTensor:$labels);
  let results = (outs MT_FloatTensor:$grad_logits);
  let assemblyFormat = [{
    $grad_loss `,` $logits `,` $labels attr-dict `:`
    functional-type(operands, results)
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Optimizer
//===----------------------------------------------------------------------===//

def MT_GlobalNormOp : MT_Op<"global_norm", [Pure]> {
  let summary = "Computes the L2 norm of all elements of all operands.";
  let description = [{
    `sqrt(sum over operands and elements of x^2)`, accumulated in double
    precision: the gradient norm that clipping and the training log use.

    ```mlir
    %norm = mt.global_norm %g0, %g1 : tensor<768x768xf32>, tensor<768xf32>
    ```
  }];
  let arguments = (ins Variadic<MT_FloatTensor>:$inputs);
  let results = (outs MT_ScalarF32Tensor:$norm);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def MT_SumSquaresOp : MT_Op<"sum_squares", [Pure]> {
  let summary = "Sums the squares of all elements of all operands.";
  let description = [{
    `sum over operands and elements of x^2`, accumulated in double precision.
    With gradients sharded across data-parallel ranks (ZeRO-2 and 3), the
    global norm is the square root of this value summed over the ranks.

    ```mlir
    %ss = mt.sum_squares %g0, %g1 : tensor<384xf32>, tensor<4xf32>
    ```
  }];
  let arguments = (ins Variadic<MT_FloatTensor>:$inputs);
  let results = (outs MT_ScalarF32Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` type($inputs)";
  let hasVerifier = 1;
}

def MT_SqrtOp : MT_Op<"sqrt", [Pure]> {
  let summary = "Takes the square root of a scalar.";
  let description = [{
    ```mlir
    %norm = mt.sqrt %ss : tensor<f32>
    ```
  }];
  let arguments = (ins MT_ScalarF32Tensor:$input);
  let results = (outs MT_ScalarF32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
}

def MT_ScaleOp : MT_Op<"scale", [DeclareOpInterfaceMethods<MT_ElementwiseOpInterface>, DeclareOpInterfaceMethods<MT_DifferentiableOpInterface>, Pure, SameOperandsAndResultType]> {
  let summary = "Multiplies a tensor by a constant factor.";
  let description = [{
    `y = factor * x`. mt-pipeline takes the mean of the microbatches'
    losses with it, and Granite's multipliers (of the embeddings, of each
    sublayer's output, of the logits) are scales in the forward graph;
    upstream `arith.mulf` would need a splat constant tensor and a
    tensor-level lowering the runtime does not have.

    ```mlir
    %mean = mt.scale %sum {factor = 2.500000e-01 : f64} : tensor<f32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$input, F64Attr:$factor);
  let results = (outs MT_FloatTensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($result)";
  let hasVerifier = 1;
}

def MT_DivOp : MT_Op<"div", [Pure]> {
  let summary = "Divides one run-time scalar by another.";
  let description = [{
    `y = a / b`. With loss scaling, `mt-autodiff` divides the gradient norm
    of the scaled gradients and the clipping factor by the loss scale, so
    the optimizer sees unscaled gradients without a pass over them.

    ```mlir
    %norm = mt.div %scaled_norm, %loss_scale : tensor<f32>
    ```
  }];
  let arguments = (ins MT_ScalarF32Tensor:$lhs, MT_ScalarF32Tensor:$rhs);
  let results = (outs MT_ScalarF32Tensor:$result);
  let assemblyFormat = "$lhs `,` $rhs attr-dict `:` type($result)";
}

def MT_MeanOp : MT_Op<"mean", [Pure]> {
  let summary = "Averages all elements of an f32 tensor.";
  let description = [{
    `sum(x) / numel(x)`, accumulated in double precision in index order, so
    that the result does not depend on how a backend splits the work. The
    mean loss after a fused cross-entropy (per-position losses) is one.

    ```mlir
    %loss = mt.mean %losses : tensor<8x1024xf32>
    ```
  }];
  let arguments = (ins StaticShapeTensorOf<[F32]>:$input);
  let results = (outs MT_ScalarF32Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` type($input)";
}

def MT_ClipScaleOp : MT_Op<"clip_scale", [Pure]> {
  let summary = "Computes the factor that clips a gradient norm.";
  let description = [{
    `min(1, max_norm / (norm + 1e-6))` as `torch.nn.utils.clip_grad_norm_`,
    or 1 when `max_norm <= 0` (clipping off). Both are run-time scalars.
    A norm that is not finite (a gradient holds inf or NaN) gives NaN,
    which makes every `mt.adamw` of the step leave its parameter and state
    unchanged: the step is skipped, as with an overflow under loss scaling.

    ```mlir
    %s = mt.clip_scale %norm, %max_norm : tensor<f32>
    ```
  }];
  let arguments = (ins MT_ScalarF32Tensor:$norm, MT_ScalarF32Tensor:$max_norm);
  let results = (outs MT_ScalarF32Tensor:$scale);
  let assemblyFormat = "$norm `,` $max_norm attr-dict `:` type($scale)";
}

def MT_AdamWOp : MT_Op<"adamw",
    [Pure, AllTypesMatch<["param", "grad", "exp_avg", "exp_avg_sq",
                          "new_param", "new_exp_avg", "new_exp_avg_sq"]>]> {
  let summary = "Applies one AdamW update to a parameter.";
  let description = [{
    `torch.optim.AdamW` for one tensor, with the gradient first multiplied by
    `grad_scale` (clipping):

    ```
    g = grad * grad_scale
    p = p - lr * weight_decay * p            (only with `decay`)
    m = beta1 * m + (1 - beta1) * g
    v = beta2 * v + (1 - beta2) * g^2
    p = p - lr / (1 - beta1^step) * m / (sqrt(v) / sqrt(1 - beta2^step) + eps)
    ```

    A `grad_scale` that is not finite skips the update: the parameter and
    both moments keep their values (`mt.clip_scale` gives NaN for a
    non-finite gradient norm).

    `step` counts from 1. Every hyperparameter is a run-time `f32` scalar
    operand, so one compiled program serves any learning-rate schedule and
    any flags of `megatron-run`. `decay` is set for weights and embeddings
    and unset for biases and norm weights, as in Megatron-LM. Lowering
    updates the parameter and both moments in place.

    ```mlir
    %p2, %m2, %v2 = mt.adamw %p, %g, %m, %v, %step, %lr, %beta1, %beta2,
        %eps, %wd, %scale decay : tensor<768x768xf32>
    ```
  }];
  let arguments = (ins MT_FloatTensor:$param, MT_FloatTensor:$grad,
                       MT_FloatTensor:$exp_avg, MT_FloatTensor:$exp_avg_sq,
                       MT_ScalarF32Tensor:$step, MT_ScalarF32Tensor:$lr,
                       MT_ScalarF32Tensor:$beta1, MT_ScalarF32Tensor:$beta2,
                       MT_ScalarF32Tensor:$eps,
                       MT_ScalarF32Tensor:$weight_decay,
                       MT_ScalarF32Tensor:$grad_scale, UnitAttr:$decay);
  let results = (outs MT_FloatTensor:$new_param, MT_FloatTensor:$new_exp_avg,
                      MT_FloatTensor:$new_exp_avg_sq);
  let assemblyFormat = [{
    $param `,` $grad `,` $exp_avg `,` $exp_avg_sq `,` $step `,` $lr `,`
    $beta1 `,` $beta2 `,` $eps `,` $weight_decay `,` $grad_scale
    (`decay` $decay^)? attr-dict `:` type($param)
  }];
}

def MT_MultiAdamWOp : MT_Op<"multi_adamw",
    [Pure, AttrSizedOperandSegments,
     DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let summary = "Applies one AdamW update to many parameters of one dtype.";
  let description = [{
    `mt.adamw` for each parameter `i` of `params`, with `grads[i]`,
    `exp_avgs[i]` and `exp_avg_sqs[i]`, the same run-time hyperparameters
    and the same `decay`: one command over all of them (the multi-tensor
    AdamW of apex and Megatron-LM), instead of one per tensor. `mt-fuse`
    forms it from the updates of one parameter group (weights with decay,
    or biases and norm weights without) of one dtype. Results are
    `new_params`, `new_exp_avgs` and `new_exp_avg_sqs`, each updated in
    place by the lowering.

    With `copies` (one per parameter, or none), each parameter also has a
    16-bit copy (bf16 or f16, the parameter's shape) that the step reads
    instead of casting the parameter: the update writes the cast of each
    updated parameter over its copy (`new_copies`), as `mt.cast` rounds,
    so that nothing reads the fp32 parameter again to cast it
    (Megatron-LM's bf16 model parameters beside fp32 main parameters, with
    the copy fused into the optimizer). A skipped update leaves the copy as
    it was, equal to the unchanged parameter's cast. `mt-fuse` forms them
    (option `parameter-copies`).

    ```mlir
    %p:2, %m:2, %v:2 = mt.multi_adamw params(%p0, %p1) grads(%g0, %g1)
        exp_avgs(%m0, %m1) exp_avg_sqs(%v0, %v1)
        scalars(%step, %lr, %beta1, %beta2, %eps, %wd, %scale) decay
        : (...) -> (...)
    %p:2, %m:2, %v:2, %c:2 = mt.multi_adamw params(%p0, %p1) ...
        scalars(...) copies(%c0, %c1) decay : (...) -> (...)
    ```

    The results are one list, `updated`: the N new parameters, the N first
    moments, the N second moments, then a new copy for each copy.
  }];
  let arguments = (ins Variadic<MT_FloatTensor>:$params,
                       Variadic<MT_FloatTensor>:$grads,
                       Variadic<MT_FloatTensor>:$exp_avgs,
                       Variadic<MT_FloatTensor>:$exp_avg_sqs,
                       MT_ScalarF32Tensor:$step, MT_ScalarF32Tensor:$lr,
                       MT_ScalarF32Tensor:$beta1, MT_ScalarF32Tensor:$beta2,
                       MT_ScalarF32Tensor:$eps,
                       MT_ScalarF32Tensor:$weight_decay,
                       MT_ScalarF32Tensor:$grad_scale,
                       Variadic<MT_FloatTensor>:$copies, UnitAttr:$decay);
  let results = (outs Variadic<MT_FloatTensor>:$updated);
  let assemblyFormat = [{
    `params` `(` $params `)` `grads` `(` $grads `)`
    `exp_avgs` `(` $exp_avgs `)` `exp_avg_sqs` `(` $exp_avg_sqs `)`
    `scalars` `(` $step `,` $lr `,` $beta1 `,` $beta2 `,` $eps `,`
    $weight_decay `,` $grad_scale `)` (`copies` `(` $copies^ `)`)?
    (`decay` $decay^)? attr-dict `:` functional-type(operands, results)
  }];
  let extraClassDeclaration = [{
    /// `updated` in its groups (one list: ODS gives several variadic result
    /// groups of different sizes no inferable textual form).
    ::mlir::ResultRange getNewParams() {
      return getUpdated().slice(0, getParams().size());
    }
    ::mlir::ResultRange getNewExpAvgs() {
      return getUpdated().slice(getParams().size(), getParams().size());
    }
    ::mlir::ResultRange getNewExpAvgSqs() {
      return getUpdated().slice(2 * getParams().size(), getParams().size());
    }
    ::mlir::ResultRange getNewCopies() {
      return getUpdated().slice(3 * getParams().size(), getCopies().size());
    }
  }];
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Fusion
//===----------------------------------------------------------------------===//

def MT_FusionOp : MT_Op<"fusion",
    [IsolatedFromAbove, RecursiveMemoryEffects, SingleBlock]> {
  let summary = "Ops that run as one generated kernel.";
  let description = [{
    `mt-fuse` groups chains of elementwise ops (`ElementwiseOpInterface`)
    into one region; `mt-lower-to-runtime` emits one kernel for it
    (megatron/Target/KernelEmitter.h), so values used only inside the
    region never reach memory. The block's arguments are `inputs`; the
    `mt.yield` returns the values used after the region, which include
    everything the backward reads (fusion never changes what is stashed).
    Every op of the body computes one element per index of the iteration
    domain (the result shape every full operand shares); a row-broadcast
    operand (a bias) is indexed modulo its size. The op carries the phase,
    microbatch and layer of its ops, which all share them. Upstream
    `linalg.generic` states the same iteration but not the mt ops'
    derivative-free scalar semantics the emitter prints, and would need a
    tensor-level lowering the runtime does not have.

    A row fusion instead iterates over the rows of a row reduction. Two
    kinds exist: `mt.cross_entropy` (per-position form) and
    `mt.cross_entropy_grad` of the same logits and labels, which share each
    row's maximum and sum of exponentials and read the logits once instead
    of twice; and elementwise ops over whole rows ending in one
    `mt.layer_norm` or `mt.rms_norm` of their result; and a norm's
    backward (`mt.layer_norm_grad` or `mt.rms_norm_grad`, first, with a
    `row_block`) followed by elementwise ops over whole rows (the residual
    gradient's add), its parameter gradients yielded as partial sums per
    block of rows. Its iteration domain is the rows; operands are whole
    rows, one value per row, one row broadcast along the rows (a bias, a
    norm's weight), a scalar, or (results of a norm's backward) one row
    per block of rows.

    ```mlir
    %h, %g = mt.fusion ins(%x, %b : tensor<4x8x32xf32>, tensor<32xf32>)
        -> (tensor<4x8x32xf32>, tensor<4x8x32xf32>) {
    ^bb0(%xa: tensor<4x8x32xf32>, %ba: tensor<32xf32>):
      %0 = mt.bias_add %xa, %ba : tensor<4x8x32xf32>, tensor<32xf32>
      %1 = mt.gelu %0 : tensor<4x8x32xf32>
      mt.yield %0, %1 : tensor<4x8x32xf32>, tensor<4x8x32xf32>
    }
    ```
  }];
  let arguments = (ins Variadic<MT_FusionTensor>:$inputs);
  let results = (outs Variadic<MT_FusionTensor>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = [{
    (`ins` `(` $inputs^ `:` type($inputs) `)`)? `->` `(` type($results) `)`
    $body attr-dict
  }];
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of elements of the iteration domain: the size of the
    /// first result, which every full operand shares (elementwise), or the
    /// number of rows (a row fusion).
    int64_t getDomainElements();
    /// The row reduction of a row fusion (the first mt.cross_entropy,
    /// mt.cross_entropy_grad, mt.layer_norm, mt.rms_norm,
    /// mt.layer_norm_grad or mt.rms_norm_grad of its body), or null for an
    /// elementwise one.
    Operation *getRowReduction();
  }];
}

def MT_YieldOp : MT_Op<"yield", [Pure, Terminator,
                                  HasParent<"FusionOp">]> {
  let summary = "Returns the values of an mt.fusion region.";
  let arguments = (ins Variadic<MT_FusionTensor>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
}

#endif // MEGATRON_DIALECTS_MT_IR_MTOPS_TD
