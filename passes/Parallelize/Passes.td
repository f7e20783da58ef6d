//===- Passes.td - Parallelization of training steps --------*- tablegen -*-===//

#ifndef MEGATRON_PASSES_PARALLELIZE_PASSES_TD
#define MEGATRON_PASSES_PARALLELIZE_PASSES_TD

include "mlir/Pass/PassBase.td"

def ParallelizePass : Pass<"mt-parallelize", "ModuleOp"> {
  let summary = "Splits a training step across data- and tensor-parallel ranks.";
  let description = [{
    Runs on training steps (the output of `mt-autodiff`) and rewrites each
    into the program every rank of a `dp x tp` device grid runs (SPMD), with
    upstream `shard` collectives on the grid `@grid` it creates (axis 0 is
    `dp`, axis 1 is `tp`; Megatron's rank layout, tensor-parallel ranks
    fastest, is the grid's row-major order).

    Data parallelism (`dp`): the micro-batch of `tokens` and `labels` is
    split along the batch dimension and every op is retyped for its share;
    dropout and attention keep drawing the single-device masks (their
    random index is offset by the rank's share, `mt.rng_batch_axis`); the
    reported loss is averaged over `dp`.

    Gradients and ZeRO (`zero`, as in Rajbhandari et al. 2020):
    - 0: every gradient is all-reduced (averaged) over `dp`; every rank
      updates every parameter;
    - 1: gradients are all-reduced; each rank keeps and updates a `1/dp`
      piece of the optimizer state (and of each flattened parameter), then
      the updated pieces are all-gathered;
    - 2: as 1, but gradients are reduce-scattered: each rank receives only
      the averaged gradient of its piece; the global norm sums the pieces'
      squares across ranks;
    - 3: as 2, and parameters too are kept as pieces: each is all-gathered
      before its first use in the forward pass and again before its first
      use in the backward pass, the full copies living only until their
      last use in that pass.
    Sharded arguments and results carry `mt.full_shape` and `mt.shard_axis`
    so that the runtime loads and saves full checkpoints under any layout.
    ZeRO pieces need parameter sizes divisible by `dp` (Megatron pads the
    flattened buffer instead; not done here).

    Tensor parallelism (`tp`, Shoeybi et al. 2019; TensorParallel.cpp):
    the QKV and first MLP projections are column-parallel, the attention and
    MLP output projections row-parallel, attention is split by heads and the
    embedding table and output head by vocabulary rows (vocab-parallel
    lookup and cross-entropy: no rank holds full logits). Parameter layouts
    are pinned by their Hugging Face names; every other value's layout is
    derived op by op, forward and backward, and a partial sum is
    all-reduced over `tp` right after the op that makes it: after the
    embedding and each row-parallel projection in the forward pass, after
    the input gradient of each column-parallel projection and of the head in
    the backward pass. Split parameters carry `mt.full_shape`,
    `mt.shard_axis`, `mt.shard_dim` and `mt.shard_chunks` (c_attn's
    [q | k | v] columns are three chunks); attention gets
    `mt.rng_head_axis` and the vocabulary ops `mt.tp_vocab_axis`, from
    which lowering derives each rank's mask offsets and vocabulary rows.
    A vocabulary `tp` does not divide is padded to a multiple of it (zero
    rows, masked out of the loss, absent from checkpoints: `mt.valid_rows`,
    `mt.vocab_size`). With ZeRO, the pieces are of each rank's
    tensor-parallel share (`mt.piece_axis`).

    Sequence parallelism (`sp`, Korthikanti et al. 2022): between
    tensor-parallel regions the activations [batch, seq, hidden] are split
    along the sequence (layer norms, dropout, residuals); a partial sum is
    reduce-scattered along the sequence instead of all-reduced, and a
    sequence-split operand is all-gathered before each column-parallel
    projection (again in the backward pass for the weight gradient);
    layer-norm and replicated-bias gradients, summed over the rows each rank
    holds, are all-reduced over `tp`. Dropouts of split activations get
    `mt.rng_seq_axis`.

    Errors, before anything runs: a non-positive size, `zero` outside 0..3,
    `sp` without `tp`, `tp` not dividing heads or the MLP width, `dp` not
    dividing the micro-batch, a parameter size not divisible by `dp` under
    ZeRO.

    Upstream `ShardingInterface` is not used: layouts are pinned here and
    derived op by op (DESIGN.md asks for pinned communication decisions),
    and upstream `shard` supplies the grid and the collectives.

    Example (`dp=2 zero=0`): `tokens : tensor<8x64xi32>` becomes
    `tensor<4x64xi32>`, and each gradient `%g` feeding the optimizer becomes
    `shard.all_reduce %g on @grid grid_axes = [0] reduction = average`.
  }];
  let options = [
    Option<"dp", "dp", "int64_t", /*default=*/"1",
           "Data-parallel ranks">,
    Option<"tp", "tp", "int64_t", /*default=*/"1",
           "Tensor-parallel ranks">,
    Option<"sp", "sp", "bool", /*default=*/"false",
           "Sequence parallelism (needs tp > 1)">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 (none), 1 (optimizer state), 2 (and gradients), "
           "3 (and parameters)">
  ];
  let statistics = [
    Statistic<"numCollectives", "collectives",
              "Number of collectives inserted">
  ];
  let dependentDialects = ["::mlir::mt::MTDialect",
                           "::mlir::shard::ShardDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // MEGATRON_PASSES_PARALLELIZE_PASSES_TD
