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
    Expert parallelism (`ep`, a divisor of `dp`; Megatron-LM's
    `--expert-model-parallel-size` with its all-to-all token dispatcher):
    the data-parallel ranks form groups of `ep` consecutive ranks, and
    each rank keeps `E/ep` of every layer's `E` experts (the r-th rank of a
    group experts r * E/ep onwards; the kept arguments name each group
    rank's expert in `mt.expert_names`, on axis `mt.expert_axis`); the
    others' arguments, updates and results go. A layer's rows travel to
    their experts' ranks within the group before its grouped matmuls
    (`mt.expert_dispatch`), forward and backward, and back before anything
    but a row's own computation reads them (`mt.expert_combine`). An
    expert's gradient is complete on its rank once summed over its
    replicas (every `ep`-th rank, `mt.strided_all_reduce`, when `ep < dp`:
    Megatron-LM's expert data parallelism), then divided by `dp`; the
    global norm counts each expert once. ZeRO shards an expert over its
    replicas, as Megatron-LM's distributed optimizer shards it over the
    expert data parallel group: `dp/ep` pieces, rank r holding piece
    r / ep (`mt.strided_reduce_scatter`, `mt.strided_all_slice`,
    `mt.strided_all_gather` where the others use `shard` collectives);
    with `ep = dp` an expert has one rank and stays whole on it. With
    `tp`, each rank's experts are split by tp
    as without `ep` and the rows travel among the ranks of one tp
    coordinate (Megatron-LM's expert tensor parallelism equal to tp).
    Sharded arguments and results carry `mt.full_shape` and `mt.shard_axis`
    so that the runtime loads and saves full checkpoints under any layout.
    A flattened tensor that `dp` (or an expert's replicas) does not divide
    is padded with zeros to equal pieces, as Megatron-LM pads its buffers.

    Tensor parallelism (`tp`, Shoeybi et al. 2019; TensorParallel.cpp) is
    stated as upstream `shard` shardings and partitioned by upstream passes:
    mt-parallelize pins every sharding that decides communication (each
    parameter by its Hugging Face name: the QKV and first MLP projections
    split by columns, the attention and MLP output projections by rows, the
    embedding table and output head by vocabulary rows; the same for its
    gradient, its optimizer state and each of its uses; with `sp`, the
    activations between tensor-parallel regions split along the sequence),
    then runs upstream `sharding-propagation` and `shard-partition` on the
    step, whose `mt` ops implement `ShardingInterface`
    (dialects/MT/Transforms/ShardingInterfaceImpl.cpp: vocab-parallel
    embedding and cross-entropy, head-split attention, dropout masks offset
    by the rank's share). The partition all-reduces over `tp` after the
    embedding and each row-parallel projection in the forward pass, after
    the input gradient of each column-parallel projection and of the head in
    the backward pass. Split parameters carry `mt.full_shape`,
    `mt.shard_axis`, `mt.shard_dim` and `mt.shard_chunks` (a fused
    [q | k | v] projection's columns are three chunks), following the role
    each parameter's `mt.parallel` states; attention gets
    `mt.rng_head_axis` and the vocabulary ops `mt.tp_vocab_axis`, from
    which lowering derives each rank's mask offsets and vocabulary rows.
    A vocabulary `tp` does not divide is padded to a multiple of it (zero
    rows, masked out of the loss, absent from checkpoints: `mt.valid_rows`,
    `mt.vocab_size`; PadVocabulary.cpp); `make-vocab-size-divisible-by=N`
    pads to a multiple of N x tp, with or without tensor parallelism, as
    Megatron-LM does (128 aligns GPT-2's 50257 rows to 50304 for the GPU's
    GEMM tiles). With ZeRO, the pieces are of each rank's
    tensor-parallel share (`mt.piece_axis`).

    Sequence parallelism (`sp`, Korthikanti et al. 2022): between
    tensor-parallel regions the activations [batch, seq, hidden] are split
    along the sequence (layer norms, dropout, residuals); a sequence-split
    operand is all-gathered before each column-parallel projection (again in
    the backward pass for the weight gradient), and a sum completed by an
    op and then split along the sequence is a reduce-scatter; layer-norm
    and replicated-bias gradients, summed over the rows each rank holds, are
    all-reduced over `tp`. Dropouts of split activations get
    `mt.rng_seq_axis`.

    Where upstream (MLIR 22) falls short, this pass extends it: shardings
    have no partial state, so an op completes its own sums (all-reduce) and
    this pass folds an all-reduce followed by the rank's slice into a
    reduce-scatter; upstream places every gather right after its source, so
    this pass moves each down to its first use (a weight gradient's
    re-gather then lives only in the backward pass) and merges two gathers
    of one value in the same pass (a row-parallel projection's output
    gradient is gathered once for both of its gradients); the option-building
    and `tensor.collapse_shape` gaps are described in
    ShardingInterfaceImpl.cpp.

    Data parallelism and ZeRO are rewritten here directly on the
    partitioned program, with upstream `shard` collectives: without partial
    shardings, each gradient contribution would be all-reduced by the op
    that computes it (twice for a tied embedding, more bytes than DDP), and
    ZeRO's flat pieces of a parameter are not a split of any of its
    dimensions when its rows do not divide by `dp`. A flattened parameter
    whose size `dp` does not divide is padded with zeros to the next
    multiple (`tensor.pad`) before it is sliced or reduce-scattered, and
    cut back (`tensor.extract_slice`) after it is gathered, as Megatron-LM's
    distributed optimizer pads its buffers: the padding stays zero through
    AdamW and adds nothing to the gradient norm.

    Errors, before anything runs: a non-positive size, `zero` outside 0..3,
    `sp` without `tp`, `tp` not dividing heads or the MLP width, `dp` not
    dividing the micro-batch, `ep` not dividing `dp` or a layer's experts,
    or given a step without experts.

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
    Option<"vocabDivisibleBy", "make-vocab-size-divisible-by", "int64_t",
           /*default=*/"1",
           "Pad the vocabulary tables to a multiple of this times tp, as "
           "Megatron-LM's flag of that name (whose default is 128; 1 pads "
           "only what tp needs). The padding rows are masked out of the "
           "loss and absent from checkpoints">,
    Option<"zero", "zero", "int64_t", /*default=*/"0",
           "ZeRO stage: 0 (none), 1 (optimizer state), 2 (and gradients), "
           "3 (and parameters)">,
    Option<"ep", "ep", "int64_t", /*default=*/"1",
           "Expert-parallel ranks: the experts of a mixture of experts are "
           "split over groups of this many data-parallel ranks (a divisor "
           "of dp), each rank holding its share, and the tokens travel to "
           "their experts by all-to-all, as Megatron-LM's "
           "--expert-model-parallel-size">,
    Option<"gradsInFp32", "accumulate-allreduce-grads-in-fp32", "bool",
           /*default=*/"true",
           "Mixed precision: reduce (and, under mt-pipeline, accumulate) "
           "the data-parallel gradients of fp32 master weights in fp32, as "
           "Megatron-LM's flag of that name; false (with dp > 1) reduces "
           "and accumulates them in the activations' 16-bit type and widens "
           "the result for the optimizer">
  ];
  let statistics = [
    Statistic<"numCollectives", "collectives",
              "Number of collectives inserted">
  ];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::mt::MTDialect",
                           "::mlir::shard::ShardDialect",
                           "::mlir::tensor::TensorDialect"];
}

def CheckShardingsPass : Pass<"mt-check-shardings",
                              "::mlir::func::FuncOp"> {
  let summary = "Refuses hand-written shardings upstream shard-partition "
                "cannot handle, before it crashes on them.";
  let description = [{
    Run it before upstream `sharding-propagation` and `shard-partition` on
    a function annotated by hand with `shard.shard` (`mt-parallelize` pins
    its own shardings and needs no check):

        --pass-pipeline='builtin.module(func.func(mt-check-shardings,
                          sharding-propagation,shard-partition))'

    In MLIR 22 the partition dereferences what is not there, and crashes,
    when a function holding `shard.shard` ops has
    - an unused argument, or an op none of whose results is read (an
      annotation, `shard.shard`, whose result nothing reads, among them;
      an op with some results unused is fine);
    - a value annotated for some of its users and read unannotated by
      others (the operand of a `shard.shard` that another op, or the
      return, also reads directly).
    Each is reported at the value with what to change; functions without
    `shard.shard` ops are not checked.
  }];
  let dependentDialects = ["::mlir::shard::ShardDialect"];
}

#endif // MEGATRON_PASSES_PARALLELIZE_PASSES_TD
