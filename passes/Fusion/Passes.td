//===- Passes.td - Kernel fusion ----------------------------*- tablegen -*-===//

#ifndef MEGATRON_PASSES_FUSION_PASSES_TD
#define MEGATRON_PASSES_FUSION_PASSES_TD

include "mlir/Pass/PassBase.td"

def FusePass : Pass<"mt-fuse", "ModuleOp"> {
  let summary = "Groups elementwise ops into mt.fusion regions, one kernel each.";
  let description = [{
    Runs last before `mt-lower-to-runtime`, on every function (the
    training step, or each pipeline stage). Every op with
    `ElementwiseOpInterface` (add, mul, bias_add, gelu, gelu_grad, silu,
    silu_grad, scale, cast) over more than one element joins the region of
    the op producing one of its full-size operands, or starts its own, so
    that each region becomes one generated kernel: vectorized and
    multithreaded on the host, a CUDA kernel from the same source
    (megatron/Target/KernelEmitter.h). Chains such as bias + GeLU or bias +
    residual add then read and write memory once.

    An op joins a producer's region only when
    - both compute the same number of elements and carry the same phase,
      microbatch, layer and recompute marks (a region is one kernel of one
      action of the schedule);
    - no op outside the region reads the region's values before this op
      (the region is placed where its last op was, so every reader still
      comes after it);
    - its row-broadcast operand (a bias) has the row length of the
      region's, if the region has one;
    - it reads the producer's value as the only reader outside the region:
      the value then never reaches memory. Through a value something else
      also reads (what the backward stashes), fusing would keep the
      producer's inputs, that value and the result alive at once and raise
      the peak, so the two stay separate kernels;
    - the region still has at most 32 operands, inputs and results
      together (mtrt::kGeneratedKernelMaxOperands, what one kernel takes).

    A value an op outside the region reads becomes a result of the region,
    so what the backward reads (the stash) is unchanged. Values read only
    inside the region are never stored. The region runs where its last op
    was, so an input of an earlier member stays alive until then: the
    planned peak can grow by such inputs where the chain spans other
    commands. The chains fused here are adjacent in practice, and
    `test/runtime/fusion.test` measures the peaks of whole models (equal
    or lower).
    The mean cross-entropy and its gradient (`mt.cross_entropy` and
    `mt.cross_entropy_grad` of the same logits and labels, whole
    vocabulary) become one row fusion, computing the per-position losses
    and the logits' gradient in one pass over the logits, followed by
    `mt.mean`. The region runs where the gradient was, or where the loss
    was if the loss is read in between (with pipelining, each
    microbatch's loss is). `mt-lower-to-runtime` writes the gradient over
    the logits when nothing reads them afterwards, which lowers the
    planned peak by one logits tensor. A vocab-parallel cross-entropy
    (tensor parallelism) reduces across ranks inside its kernel and stays
    as it is.

    A layer norm or RMS norm joins the region computing its input (the
    residual add, with the bias before it) when the rows and the marks
    agree, and ends it: a row fusion that stores the residual sum (the
    residual stream reads it later) while the norm reads it in registers,
    with each row's statistics in double as the host kernels compute
    them. Otherwise (its input comes from another layer's region, or from
    no region) the norm is a row fusion of its own.

    A norm's backward (`mt.layer_norm_grad`, `mt.rms_norm_grad`) begins a
    row-block fusion, which the elementwise ops reading its input gradient
    join as above (the residual gradient's add): one multithreaded kernel
    instead of the single-threaded host kernel and a separate add, the
    input gradient kept in registers. Its weight and bias gradients sum
    over all rows; the region computes them as f32 partial sums, one row
    per block of 16 rows (each block one work item: a thread's stack, or a
    CUDA block's registers), and `mt.bias_add_grad` after the region sums
    them in block order, so the result does not depend on the thread
    count (then `mt.cast` to a 16-bit gradient's type). Norms wider than
    8192 keep the host kernel.

    The AdamW updates of one parameter group (one dtype, with or without
    weight decay, the same run-time hyperparameters) become one
    `mt.multi_adamw`, placed where the group's last update was; an update
    joins while nothing has read the group's results yet (a ZeRO
    all-gather of an updated piece starts a new group).

    Attention folds its layout ops: `merge_heads(attention(split_heads(
    qkv)))` becomes `mt.qkv_attention`, and each of its gradients,
    `merge_heads(attention_grad(split_heads(dOut), q, k, v))`,
    `mt.qkv_attention_grad`. Their kernels read each head's rows where
    they lie in the QKV tensor and write the merged layout directly, as
    strided GEMMs (the GEMMs' leading dimension is the row stride), so the
    four copies per layer and their buffers are gone. It folds only when q,
    k and v are read by nothing else than this attention and such
    gradients: the stash is then the QKV tensor, the same bytes as q, k
    and v. (A rotary embedding between the split and the attention, as in
    LLaMA, keeps the ops apart.) The folded attention also returns its
    rows' log-sum-exp, which its gradients read with its output, as
    FlashAttention-2's backward does.

    An attention whose split cannot fold so (LLaMA's rotary embedding lies
    between them) still folds its merge: `merge_heads(attention(q, k, v))`
    becomes `mt.merged_attention`, which writes the merged layout directly
    and returns its rows' log-sum-exp, and each gradient
    `attention_grad(split_heads(dOut), q, k, v)` becomes
    `mt.merged_attention_grad`, reading dOut merged and the forward's
    output and stats instead of rebuilding the softmax.

    With `grouped-attention` (default), grouped-query attention folds its
    repeats: `attention(q,
    repeat_kv(k), repeat_kv(v))` becomes `attention(q, k, v)` with keys
    and values of fewer heads, whose kernels read key and value head `h /
    groups` for query head `h`, and each of its gradients whose key and
    value gradients only `repeat_kv_grad` reads computes them summed over
    each group. It folds only when nothing else reads the repeats: the
    copies, and the stash of keys and values repeated `groups` times, are
    then gone (Llama 3 8B's 4 groups: the stash's keys and values a
    quarter of their size).

    With `gemm-epilogues` (default), a bias addition that is the only
    reader of a matmul's product joins the GEMM as its epilogue:
    `mt.matmul_bias`, whose kernel adds the bias as it writes the product
    (cuBLASLt's bias epilogue; the CPU backend starts the accumulation from
    the bias), so the product is never stored and read back.
    In 16-bit types the MLP's GeLU joins too: `mt.gelu(mt.matmul_bias(...))`
    becomes `mt.matmul_bias_gelu`, which writes the sum (the backward reads
    it) and its GeLU (cuBLASLt's `GELU_AUX_BIAS`), and
    `mt.gelu_grad(mt.matmul(...), x)` whose product nothing else reads
    becomes `mt.matmul_gelu_grad` (cuBLASLt's `DGELU`): GeLU's forward and
    backward passes over the 8 x 1024 x 3072 activations of GPT-2 124M
    are gone. And a 16-bit linear layer's bias gradient
    `mt.bias_add_grad(dY)` joins its weight gradient's GEMM
    `mt.matmul(x, dY)`, which reads dY anyway: `mt.matmul_bias_grad`
    (cuBLASLt's `BGRADA`; four per GPT-2 layer, whose bias gradients read
    8 x 1024 x 6912 16-bit values a layer at 124M). In f32 they stay
    separate ops, whose generated kernels are the CPU backend's to the
    bit.

    With `widen-gradients` (default), a 16-bit weight gradient
    (`mt.matmul`), bias gradient (`mt.bias_add_grad`) or embedding table
    gradient (`mt.embedding_grad`, tied or not; in fp16 its sums no longer
    overflow where only their 16-bit rounding did) that is only
    widened to f32 for the fp32 master weights is computed in f32: the GEMM
    writes its f32 accumulation (bf16 operands, f32 output; Megatron-LM's
    gradient accumulation fusion), so the gradient is never rounded to 16
    bits and the cast's kernel is gone. A fused norm backward's weight and
    bias gradients, summed in f32 from their partial sums, are likewise
    left in f32 where they are only widened: neither the narrowing nor the
    widening cast runs (GPT-2 124M bf16 at 8 x 1024: 591 kernels a step
    instead of 788). The f32 gradient is then live from the GEMM on, where
    the cast may have come later, so the plan can grow (there: 1.6%).

    With `gradient-accumulation-fusion` (default; Megatron-LM's flag of
    that name), a weight gradient added into the f32 gradient accumulated
    over the step's earlier microbatches (`mt.add(acc, dW)`, which
    `mt-pipeline` writes for each microbatch after the first) is added by
    its GEMM: `mt.matmul` or `mt.matmul_bias_grad` with
    `accumulate(acc)`, written over the accumulator (cuBLAS's beta = 1),
    where nothing else reads the accumulator or the product. The add's
    kernel and its read and write of both are gone: 8 bytes a parameter
    each microbatch after the first (the 1.3B bench at 4 microbatches of
    8 x 1024: 288 kernels and 29 GB a step). Likewise a tied embedding's
    table gradient added into the output head's (`mt.embedding_grad` with
    `accumulate`): the vocabulary-sized table is no longer zeroed, written
    and added (GPT-2 124M: 154 MB zeroed and 462 MB added a step), only the
    rows of the step's tokens are; the sums are the add's bits.

    With `group-casts` (default), the casts of a layer's fp32 parameters to
    16 bits in one phase (the same marks) that remain (all of them with
    `parameter-copies=false`) become one `mt.multi_cast`, where the first of
    them was (a kernel per layer instead of one per parameter: GPT-2 124M
    bf16 casts 148 parameters a step).

    With `parameter-copies` (default), a parameter read through casts to
    one 16-bit type, all before its `mt.multi_adamw` update, whose update
    is the step's new value of it (not a ZeRO piece), gets a persistent
    16-bit copy: a new argument of the step (mt.state "param_copy") that the
    casts' readers read instead, which the update rewrites from the new
    parameter (`copies` of `mt.multi_adamw`) and the step returns. Each
    step then reads the fp32 parameters once, in the optimizer, instead of
    again to cast them (Megatron-LM keeps bf16 model parameters beside the
    fp32 main parameters; here the copy is written by the optimizer's own
    kernel). The copies are persistent (2 bytes a parameter, where the
    casts' outputs were transient); the runtime fills them from the
    parameters once they are initialized or loaded, and checkpoints leave
    them out. All the parameters of one `mt.multi_adamw` get copies, or
    none do; not in a function something calls (its signature changes).

    ```mlir
    // Before: the step casts %w where it reads it.
    func.func @step(%w: tensor<4x4xf32> {mt.param = "w"}, ...)
        -> (tensor<4x4xf32> {mt.param = "w"}, ...) {
      %c = mt.cast %w : tensor<4x4xf32> to tensor<4x4xbf16>
      ... %c ...
      %p:2, %m:2, %v:2 = mt.multi_adamw params(%w, %u) ...
      return %p#0, ...
    }
    // After: it reads %wc, which the update rewrites and the step returns.
    func.func @step(%w: tensor<4x4xf32> {mt.param = "w"}, ...,
                    %wc: tensor<4x4xbf16> {mt.param = "w", mt.state = "param_copy"}, ...)
        -> (tensor<4x4xf32> {mt.param = "w"}, ...,
            tensor<4x4xbf16> {mt.param = "w", mt.state = "param_copy"}, ...) {
      ... %wc ...
      %p:2, %m:2, %v:2, %c:2 = mt.multi_adamw params(%w, %u) ... copies(%wc, %uc)
      return %p#0, ..., %c#0, ...
    }
    ```

    A fused norm backward (a row-block kernel) sums its weight and bias
    gradients over `norm-grad-row-block` rows (default 16) before it writes
    a row of partial sums: fewer rows give a GPU more blocks to run at once
    and more partial sums to add afterwards.

    Scalars stay host kernels. `fuse=false` in `--mt-train-pipeline` skips
    the pass.

    Example: `%h = mt.bias_add %m, %b` then `%r = mt.add %x, %h` (the
    output projection's bias and the residual add, where nothing else
    reads `%h`) become one `mt.fusion` yielding `%r`; `%h` is never stored.
  }];
  let options = [
    Option<"gemmEpilogues", "gemm-epilogues", "bool", /*default=*/"true",
           "Fold a matmul's only bias addition into the GEMM (mt.matmul_bias)">,
    Option<"groupedAttention", "grouped-attention", "bool",
           /*default=*/"true",
           "Fold grouped-query attention's key and value repeats into it">,
    Option<"geluEpilogues", "gelu-epilogues", "bool", /*default=*/"true",
           "With gemm-epilogues, in 16 bits: the MLP's GeLU and its gradient "
           "join their GEMMs (mt.matmul_bias_gelu, mt.matmul_gelu_grad)">,
    Option<"biasGradEpilogues", "bias-grad-epilogues", "bool",
           /*default=*/"true",
           "With gemm-epilogues, in 16 bits: a linear layer's bias gradient "
           "joins its weight gradient's GEMM (mt.matmul_bias_grad)">,
    Option<"gradientAccumulationFusion", "gradient-accumulation-fusion",
           "bool", /*default=*/"true",
           "A weight gradient added into the f32 gradient accumulated over "
           "microbatches is added by its GEMM, a tied embedding's into the "
           "head's by mt.embedding_grad (accumulate)">,
    Option<"groupCasts", "group-casts", "bool", /*default=*/"true",
           "Cast each layer's parameters to 16 bits in one command "
           "(mt.multi_cast)">,
    Option<"parameterCopies", "parameter-copies", "bool",
           /*default=*/"true",
           "Keep persistent 16-bit copies of parameters read through casts, "
           "written by their mt.multi_adamw update">,
    Option<"widenGradients", "widen-gradients", "bool", /*default=*/"true",
           "Compute in f32 the 16-bit weight and bias gradients only widened "
           "to f32">,
    Option<"normGradRowBlock", "norm-grad-row-block", "int64_t",
           /*default=*/"16",
           "Rows a fused norm backward sums its weight and bias gradients "
           "over before it writes a row of partial sums (1 to 1024)">
  ];
  let statistics = [
    Statistic<"numEpilogues", "gemm-epilogues",
              "bias additions folded into their matmul">,
    Statistic<"numGeluEpilogues", "gelu-epilogues",
              "GeLUs and GeLU gradients folded into their GEMM">,
    Statistic<"numBiasGradEpilogues", "bias-grad-epilogues",
              "bias gradients folded into their weight gradient's GEMM">,
    Statistic<"numAccumulatingGemms", "accumulating-gemms",
              "gradient accumulations folded into their weight gradient's "
              "GEMM">,
    Statistic<"numGroupedCasts", "grouped-casts",
              "parameter casts grouped into mt.multi_cast">,
    Statistic<"numMultiCasts", "multi-casts", "mt.multi_cast commands formed">,
    Statistic<"numParameterCopies", "parameter-copies",
              "parameters given a 16-bit copy written by their update">,
    Statistic<"numWidened", "widened-gradients",
              "16-bit gradients computed in f32 instead of cast">,
    Statistic<"numRegions", "regions", "mt.fusion regions created">,
    Statistic<"numFusedOps", "fused-ops", "elementwise ops placed in them">,
    Statistic<"numRowRegions", "row-regions",
              "cross-entropy losses fused with their gradient">,
    Statistic<"numGroupedAttention", "grouped-attention",
              "grouped-query attentions folded with their key and value "
              "repeats">,
    Statistic<"numMergedAttention", "merged-attention",
              "attentions folded with their merge of heads alone">,
    Statistic<"numFoldedAttention", "folded-attention",
              "attentions folded with their split and merge of heads">,
    Statistic<"numMultiAdamW", "multi-adamw",
              "mt.multi_adamw commands created">,
    Statistic<"numFusedUpdates", "fused-updates",
              "mt.adamw updates placed in them">
  ];
  let dependentDialects = ["::mlir::mt::MTDialect"];
}

#endif // MEGATRON_PASSES_FUSION_PASSES_TD
