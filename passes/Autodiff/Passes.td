//===- Passes.td - Training-step construction ---------------*- tablegen -*-===//

#ifndef MEGATRON_PASSES_AUTODIFF_PASSES_TD
#define MEGATRON_PASSES_AUTODIFF_PASSES_TD

include "mlir/Pass/PassBase.td"

def AutodiffPass : Pass<"mt-autodiff", "ModuleOp"> {
  let summary = "Turns a forward graph into a training step with AdamW.";
  let description = [{
    Rewrites every function with parameters (`mt.param` arguments) that
    returns a scalar loss into one training step: the forward graph, its
    reverse-mode derivative, the gradient norm, clipping and the AdamW update
    of every parameter.

    Preconditions: the function returns one `tensor<f32>` loss; every
    argument is a parameter or has an `mt.input` role; every op that depends
    on a parameter is one this pass differentiates (all `mt` forward ops and
    `tensor.collapse_shape` / `tensor.expand_shape`).

    Postconditions:
    - Arguments: the forward arguments, then per parameter its `exp_avg` and
      then its `exp_avg_sq` state (`mt.param` + `mt.state`), then the
      run-time scalars `step`, `lr`, `adam_beta1`, `adam_beta2`, `adam_eps`,
      `weight_decay`, `clip_grad` (`mt.input`), and with `loss-scaling`
      `loss_scale`.
    - Results: `loss`, the updated parameters, their updated `exp_avg` and
      `exp_avg_sq`, and `grad_norm` (before clipping).
    - Gradients of a value used twice are summed: the tied embedding gets
      the sum of its lookup and output-head gradients.
    - Each `mt.dropout` and `mt.attention` gets a distinct `rng_stream`, and
      its derivative uses the same stream, so the backward applies the
      forward's mask.
    - Weight decay applies to parameters of rank 2 and above (weights and
      embeddings), not to biases and norm weights, as in Megatron-LM.
    - Backward ops carry the `mt.layer` of the forward op they differentiate.

    Example (a linear model):

    ```mlir
    func.func @f(%x: tensor<4x8xf32> {mt.input = "tokens"},
                 %w: tensor<8x2xf32> {mt.param = "w"}) -> tensor<f32>
    ```

    becomes

    ```mlir
    func.func @f(%x, %w, %m {mt.param = "w", mt.state = "exp_avg"},
                 %v {mt.param = "w", mt.state = "exp_avg_sq"},
                 %step {mt.input = "step"}, %lr {mt.input = "lr"}, ...)
        -> (tensor<f32> {mt.output = "loss"}, tensor<8x2xf32> {mt.param = "w"},
            ..., tensor<f32> {mt.output = "grad_norm"})
    ```
  }];
  let options = [
    Option<"lossScaling", "loss-scaling", "bool", "false",
           "add a run-time `loss_scale` scalar: the backward pass is seeded "
           "with it, and the norm and the clipping factor are divided by it "
           "(mt.div), so the optimizer sees unscaled gradients; a step whose "
           "scaled gradients overflow is skipped">,
    Option<"requireModel", "require-model", "bool", "false",
           "fail on a module without a model function to differentiate "
           "(--mt-train-pipeline sets it: an input already compiled, or "
           "without mt.param arguments, is a mistake there)">,
  ];
  let dependentDialects = ["::mlir::mt::MTDialect",
                           "::mlir::arith::ArithDialect",
                           "::mlir::tensor::TensorDialect"];
  let statistics = [
    Statistic<"numGradientOps", "gradient-ops",
              "Number of ops created for the backward pass">,
    Statistic<"numParameters", "parameters",
              "Number of parameters updated by AdamW">
  ];
}

def MixedPrecisionPass : Pass<"mt-mixed-precision", "ModuleOp"> {
  let summary = "Stores activations in bf16 or fp16, keeping fp32 master "
                "weights.";
  let description = [{
    Runs on a forward graph, before `mt-autodiff`, and makes its training
    step mixed precision as Megatron-LM's `--bf16` and `--fp16` do:

    - Parameters stay fp32 arguments (the master weights, which the
      optimizer updates and checkpoints save). Each use of one (or of a
      floating-point input) in the forward pass reads its own `mt.cast` to
      `precision`.
    - Every floating-point forward value of rank 1 or more becomes
      `precision`; scalars (the loss) stay fp32.
    - The kernels compute in fp32 and store 16 bits: GEMMs accumulate in
      fp32, and softmax, layer-norm and RMSNorm statistics and the
      cross-entropy are fp32 (the runtime's kernel contract).
    - `mt-autodiff` then differentiates the casts into casts back, so each
      parameter gradient is fp32 from the op that reads the parameter on:
      summed (tied embeddings), reduced across data-parallel ranks and
      accumulated over microbatches in fp32, as Megatron-LM's
      `--accumulate-allreduce-grads-in-fp32` (`mt-parallelize` option of
      that name; false reduces and accumulates them in `precision`).
      Activation gradients are `precision`.

    `precision=fp32` leaves the graph unchanged. fp16 needs loss scaling
    (`mt-autodiff loss-scaling=true`; `--mt-train-pipeline="precision=fp16"`
    sets it).
  }];
  let options = [
    Option<"precision", "precision", "std::string", "\"bf16\"",
           "storage type of activations: bf16, fp16 or fp32">,
  ];
  let dependentDialects = ["::mlir::mt::MTDialect"];
  let statistics = [
    Statistic<"numCasts", "casts", "Number of parameter casts inserted">,
    Statistic<"numRetyped", "retyped-values",
              "Number of forward values stored in 16 bits">
  ];
}

def RematPass : Pass<"mt-remat", "ModuleOp"> {
  let summary = "Recomputes activations in the backward pass instead of "
                "stashing them (activation checkpointing).";
  let description = [{
    Runs on a training step (after `mt-autodiff`, before `mt-parallelize`)
    and trades FLOPs for memory, as Megatron-LM's `--recompute-granularity`
    does:

    - `remat=full` stashes each layer's input only: the layer's forward ops
      are cloned just before its backward pass, and every backward use of a
      forward value of the layer reads the clone. One more forward per layer.
    - `remat=selective` recomputes the attention core (the attention and the
      merge of its heads) from the stashed queries, keys and values, as
      Korthikanti et al. 2022 do. Our attention kernel never stores the
      s x s score matrix (its gradient recomputes the scores), so what this
      saves is the attention output, 1 x s·b·h per layer, not the paper's
      5·a·s²·b; the report in `megatron-run --memory-report` shows it.
    - `remat=none` changes nothing.

    Values a layer hands to another (its output, the next layer's input)
    stay stashed. Clones keep their `mt.layer` and `rng_stream`, so dropout
    draws the same masks, and carry `mt.phase = "backward"`, so pipeline
    parallelism runs them in the layer's backward action of each microbatch,
    and the stash of every microbatch in flight shrinks alike.
    `remat=full full-layers=0,1` recomputes layers 0 and 1 fully and the
    attention core of the others (what `remat=budget` of the training
    pipeline chooses between). Clones carry `mt.recomputed`.
    `print-recompute=true` prints what is recomputed and its FLOPs.

    By default the backward casts each 16-bit copy of an fp32 master
    weight matrix (mt-mixed-precision) again just before its first backward
    use (a vector's copy, a norm weight's, is kept: its bytes grow with the
    width, and a cast is a kernel launch),
    so a copy lives within one layer's forward or backward (under
    `remat=full` the layer's recomputation casts it again anyway).
    `recast-parameters=false` keeps the forward's copy until then instead,
    as PyTorch's autocast does within a step: 2 bytes per parameter live
    through the step, one elementwise kernel per parameter fewer (under
    ZeRO-3 the gathered parameter is kept too, not gathered again). With
    microbatches (mt-pipeline), a kept copy is cast once per step, by the
    first microbatch, and read by all of them: one copy of the stage's
    weights for the step, not one per microbatch in flight (GPT-2 124M
    bf16, pp=4, 8 microbatches of 1 x 1024: 4,144 kernels a step over the
    four stages instead of 5,166, with the vectors' copies, which are
    shared in either mode; stages 0 to 2 plan 7.7%, 12% and 7.4% less, the
    last 8.3% more: it keeps the tied embedding's copy, received once per
    step). Under ZeRO-3 the gathered copy a
    recast-parameters=false keeps is likewise gathered once per step.
  }];
  let options = [
    Option<"policy", "remat", "std::string", "\"none\"",
           "none, full or selective">,
    Option<"ignoredBudget", "remat-budget", "int64_t", "0",
           "A memory budget: refused here (it is remat=budget's, "
           "mt-remat-budget's), so that one given with another policy is "
           "not silently ignored">,
    Option<"recastParameters", "recast-parameters", "bool", "true",
           "cast the 16-bit parameter copies again for the backward, or "
           "keep the forward's (false)">,
    Option<"printRecompute", "print-recompute", "bool", "false",
           "print the recomputed ops and FLOPs per training step (to "
           "standard error: standard output carries the IR)">,
    ListOption<"fullLayers", "full-layers", "int64_t",
               "with remat=full: recompute only these layers fully and the "
               "attention core of the others">,
  ];
  let dependentDialects = ["::mlir::mt::MTDialect"];
  let statistics = [
    Statistic<"numRecomputedOps", "recomputed-ops",
              "Number of forward ops cloned into the backward pass">
  ];
}

def RematBudgetPass : Pass<"mt-remat-budget", "ModuleOp"> {
  let summary = "Chooses the cheapest recomputation on a ladder of policies "
                "that fits a memory budget per rank.";
  let description = [{
    Chooses the activation recomputation of the training step (before
    `mt-parallelize`) with the fewest recompute FLOPs, among the ladder of
    candidates below, whose planned peak per rank is at most `budget` bytes, applies it with `mt-remat`, and
    reports the choice as a remark: the policy, the layers recomputed
    fully, the planned peak and the recompute FLOPs per step.

    Candidates, in increasing recompute FLOPs: none; selective (the
    attention core of every layer); full on the first k layers and
    selective on the rest, k = 1..L. The first layers go first because, in
    a pipeline, the first stages hold the most microbatches in flight.
    Each candidate's peak is measured, not estimated: a copy of the module
    is compiled by `mt-remat` and `lowering`, the textual pipeline of the
    passes that follow (`mt-parallelize`, `mt-pipeline` and
    `mt-lower-to-runtime` with the job's options, as
    `--mt-train-pipeline="remat=budget remat-budget=N ..."` sets it), so
    the stashes of every microbatch in flight, the interleaving factor,
    ZeRO's shards and tensor parallelism's splits all count; the peak is
    the largest `arena_bytes` of its stage programs. A binary search over k
    (peaks fall as k grows) compiles about log2(L) + 3 copies.

    The ladder is whole layers, not single tensors: a tensor-by-tensor
    choice could fit the same budget with fewer FLOPs, which this pass does
    not search for. A budget nothing fits is an error naming the smallest
    peak there is.
  }];
  let options = [
    Option<"budget", "budget", "int64_t", "0",
           "bytes per rank the planned peak must not exceed">,
    Option<"recastParameters", "recast-parameters", "bool", "true",
           "as mt-remat's option of that name">,
    Option<"lowering", "lowering", "std::string",
           "\"mt-lower-to-runtime\"",
           "textual pipeline that compiles a copy after mt-remat into "
           "mtrt.program ops, whose arena_bytes are the peaks">,
  ];
  let dependentDialects = ["::mlir::mt::MTDialect"];
}

#endif // MEGATRON_PASSES_AUTODIFF_PASSES_TD
