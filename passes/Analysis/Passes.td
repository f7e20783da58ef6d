//===- Passes.td - Analysis passes over mt models -----------*- tablegen -*-===//

#ifndef MEGATRON_PASSES_ANALYSIS_PASSES_TD
#define MEGATRON_PASSES_ANALYSIS_PASSES_TD

include "mlir/Pass/PassBase.td"

def PrintModelSummaryPass : Pass<"mt-print-model-summary", "ModuleOp"> {
  let summary = "Prints layers, parameter count and training FLOPs per token.";
  let description = [{
    For every function in the module that has parameters (arguments with an
    `mt.param` attribute) this prints, to standard output:

    - the number of transformer layers: distinct `mt.layer` values;
    - the parameter count `N`: the elements of all parameter arguments. A
      tied embedding is one argument used twice, so it counts once;
    - the tokens per micro-batch: the elements of the token-id argument
      (the first integer tensor argument);
    - training FLOPs per token, `6 N + 12 L S D`: the usual estimate of
      Kaplan et al. and PaLM (appendix B), where `6 N` counts the forward
      (2 FLOPs per parameter per token) and backward (4) multiply-adds of
      every weight, and `12 L S D` adds the attention scores and weighted
      sums, which have no parameters: `Q K^T` and `P V` are `2 S D` FLOPs
      per token each in the forward pass, tripled for training, summed over
      each of the `L` `mt.attention` ops with its own sequence length `S`
      and width `D = heads * head_dim`. Causal masking is not discounted,
      as in Megatron-LM's and nanoGPT's MFU accounting;
    - training FLOPs per micro-batch: the above times the tokens.

    The IR is not changed. Errors: a function with parameters but no token-id
    argument.

    Example:

    ```mlir
    func.func @tiny(%ids: tensor<2x8xi32>, %labels: tensor<2x8xi32>,
                    %wte: tensor<64x16xf32> {mt.param = "wte.weight"}) ...
    ```

    prints

    ```
    model @tiny
      layers: 0
      parameters: 1024
      tokens per micro-batch: 16
      training FLOPs per token: 6144
      training FLOPs per micro-batch: 98304
    ```
  }];
  let dependentDialects = ["::mlir::mt::MTDialect"];
}

def VerifyCollectivesPass : Pass<"mt-verify-collectives", "ModuleOp"> {
  let summary = "Checks that every rank issues matching collectives.";
  let description = [{
    A collective completes only when every rank of its group issues it, with
    the same shape and type, in the same order; otherwise training hangs,
    the most common failure of parallel training. This pass checks it before
    anything runs: for each axis of the device grid (`shard.grid`) and each
    group of ranks that differ only on that axis, every rank's program must
    issue the same sequence of collectives on that axis (kernel, reduction,
    tensor axis, input and output types) as the group's first rank.

    A mismatch fails the pass with an error at the later rank's command and
    a note at the first rank's, naming both ranks and both commands; a rank
    that issues fewer or more collectives than its group is an error naming
    the count of each.

    Runs on `mtrt.program`s (the output of `mt-lower-to-runtime`); modules
    without a grid have nothing to check.
  }];
}

#endif // MEGATRON_PASSES_ANALYSIS_PASSES_TD
