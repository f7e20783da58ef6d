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
    A collective or a receive completes only when its peers issue the
    matching operation, with the same shape and type, in a compatible order;
    otherwise training hangs, the most common failure of parallel training.
    This pass proves it before anything runs, on the SPMD programs of
    `mt-lower-to-runtime`. The ranks of one stage share one program, so
    their collectives over the data- and tensor-parallel axes match by
    construction; what remains is between stages. The pass simulates the
    stage programs together: a send never waits (the runtime copies its
    bytes out), a receive waits for the send of its tag from its peer stage,
    a collective over the pipeline axis waits for every stage.

    Errors, each naming the stages, microbatches and ops: a receive whose
    send differs in shape or type; a send nobody receives; a tag sent twice;
    a peer that is not another stage; collectives over the pipeline axis
    that differ; a deadlock (every unfinished stage waits: the error is at
    one stage's op, with a note at each other stage's); two programs for one
    stage, a missing stage, a transfer without a pipeline axis, a
    collective on an axis the grid does not have.
  }];
}

#endif // MEGATRON_PASSES_ANALYSIS_PASSES_TD
