//===- Passes.td - Pipeline parallelism ---------------------*- tablegen -*-===//

#ifndef MEGATRON_PASSES_PIPELINE_PASSES_TD
#define MEGATRON_PASSES_PIPELINE_PASSES_TD

include "mlir/Pass/PassBase.td"

def PipelinePass : Pass<"mt-pipeline", "ModuleOp"> {
  let summary = "Splits a training step into pipeline stages over microbatches.";
  let description = [{
    Runs on the SPMD training step (after `mt-autodiff` and `mt-parallelize`)
    and replaces it by one function per pipeline rank (`mt.pipeline_stage`),
    each a static, fully unrolled schedule of forward and backward passes of
    microbatches, point-to-point transfers, gradient accumulation, and the
    optimizer after the flush (Narayanan et al. 2021).

    - Stages: the transformer layers (`mt.layer`) are split evenly into
      `pp * virtual-stages` virtual stages; ops without a layer follow the
      data they read (the embedding goes to the first stage, the final norm,
      head and loss to the last). Rank r runs virtual stages r, r + pp, ...
      (Megatron-LM's interleaved assignment).
    - Phases: ops are forward, backward (per microbatch) or optimizer (once
      per step, after the flush), as the IR states it: the optimizer ops by
      their kind (`mt.adamw`, norms, clipping), gradient reductions by
      `mt.phase`, and the rest by the data they read.
    - Microbatches: the rank's batch is split into `microbatches` equal
      microbatches, each with its own `tokens` and `labels` inputs
      (`mt.microbatch`); each dropout and attention draws the single-device
      mask of its microbatch's samples. The loss gradient is seeded with
      1/microbatches, so accumulated gradients are the mean over the batch,
      and the reported loss is the mean of the microbatches' losses. A
      value that is the same for every microbatch (it reads only
      parameters) is computed once per step, by the first microbatch, and
      read by all of them when it is a forward value the backward on the
      same rank reads too (a parameter's 16-bit copy under
      `recast-parameters=false`: one copy, not one per microbatch in
      flight) or a vector (a bias's or norm weight's 16-bit copy, whose
      bytes are linear in the width). Such a value another rank
      reads in the forward and the backward, or a vector's, is sent to it
      once per step, and that rank keeps it for the step: the tied
      embedding's 16-bit copy, which the head on the last stage reads under
      `recast-parameters=false` or ZeRO-1/2 (GPT-2 124M bf16, pp=4, 8
      microbatches: one 77 MB transfer a step instead of 8, the last
      stage's plan 77 MB larger); by default the head casts its own copy
      for the backward, and the forward's moves per microbatch. The
      same holds for ZeRO's all-gathers of parameters and the reshapes
      after them: under ZeRO-1 or 2 a weight's gathered 16-bit copy, read by
      the forward and the backward, is gathered once per step as without a
      pipeline (124M bf16, pp=4 x dp=2 ZeRO-1, 8 microbatches: 162 gathers
      a step instead of 1,184, stages 0 to 2 planning 9.5%, 15% and 9.4%
      less); ZeRO-3 still gathers a matrix again for each pass, unless
      `recast-parameters=false` keeps the copy.
    - Receives: every rank takes a peer's transfers in the order the peer
      sends them (NCCL matches a direction's transfers in order): a receive
      placed after one of a transfer the peer sent later (the tied
      embedding's copy, read by the head after the activations) moves up
      to before it, where the rank waited anyway.
    - Transfers: a value one virtual stage computes and another reads moves
      by `shard.send` / `shard.recv` on the grid's pipeline axis, tagged
      (`mt.transfer_tag`) so that `mt-verify-collectives` can match them.
    - Accumulation: every value the optimizer reads is summed over the
      microbatches on the stage that computes it. Then come the
      data-parallel reduction or ZeRO reduce-scatter, the global norm (each
      stage sums its gradients' squares, all-reduced over the pipeline
      axis) and the optimizer. A parameter used by two stages (the tied
      embedding, on the first and the last) is kept and updated by both;
      their gradient contributions are exchanged after the flush and
      summed, as Megatron-LM's embedding group does.
    - The grid becomes `pp x dp x tp` (Megatron's rank order: tensor fastest,
      then data, then pipeline); axes of collectives and sharding
      attributes move up by one.

    With `pp=1` and several microbatches, the pass only accumulates
    gradients (one function).

    Errors, before anything is rewritten: `pp` not dividing the layers,
    `virtual-stages` not dividing the layers per stage, an unknown schedule,
    interleaving on one stage or without microbatches a multiple of `pp`, a batch `microbatches` does not divide,
    and a global batch (`mt.global_batch_size` from the importer) that is not
    a multiple of micro-batch x dp.

    Example (`pp=2 microbatches=2 schedule=gpipe`): `@gpt2` becomes
    `@gpt2_stage0 attributes {mt.pipeline_stage = 0}` (embedding, first half
    of the layers, `F0 F1 B0 B1`, sends of activations to stage 1, receives
    of their gradients) and `@gpt2_stage1` (second half, head and loss).
  }];
  let options = [
    Option<"pp", "pp", "int64_t", /*default=*/"1",
           "Pipeline-parallel stages">,
    Option<"microbatches", "microbatches", "int64_t", /*default=*/"0",
           "Microbatches per step and data-parallel rank (0: from the "
           "model's global batch, else 1)">,
    Option<"schedule", "schedule", "std::string", /*default=*/"\"1f1b\"",
           "Schedule: gpipe, 1f1b or interleaved">,
    Option<"virtualStages", "virtual-stages", "int64_t", /*default=*/"1",
           "Model chunks per pipeline rank (interleaved schedule)">,
    Option<"layout", "layout", "std::string", /*default=*/"\"\"",
           "Layers per (virtual) stage in Megatron-LM's "
           "--pipeline-model-parallel-layout notation, e.g. "
           "'Et*3|t*5L' (default: an even split)">,
    Option<"printSchedule", "print-schedule", "bool", /*default=*/"false",
           "Print each rank's static timeline, bubble fraction and peak "
           "in-flight microbatches (forward 1, backward 2 units per stage) "
           "to standard error (standard output carries the IR)">,
    Option<"scheduleCosts", "schedule-costs", "std::string",
           /*default=*/"\"uniform\"",
           "Action durations of the printed, drawn and traced schedule: "
           "uniform (forward 1, backward 2 per rank's slice) or flops (each "
           "virtual stage's forward and backward FLOPs, from its ops)">,
    Option<"scheduleSvg", "schedule-svg", "std::string", /*default=*/"\"\"",
           "Write the schedule as an SVG figure to this file">,
    Option<"scheduleTrace", "schedule-trace", "std::string",
           /*default=*/"\"\"",
           "Write the schedule as Chrome trace JSON to this file">
  ];
  let statistics = [
    Statistic<"numTransfers", "transfers", "Point-to-point transfers created">,
    Statistic<"numComputedOnce", "computed-once",
              "Forward ops kept for the backward computed once per step">
  ];
  let dependentDialects = ["::mlir::mt::MTDialect",
                           "::mlir::shard::ShardDialect",
                           "::mlir::tensor::TensorDialect"];
}

#endif // MEGATRON_PASSES_PIPELINE_PASSES_TD
