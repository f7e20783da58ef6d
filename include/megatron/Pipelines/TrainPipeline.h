//===- TrainPipeline.h - Forward graph to runtime programs ------*- C++ -*-===//

#ifndef MEGATRON_PIPELINES_TRAINPIPELINE_H
#define MEGATRON_PIPELINES_TRAINPIPELINE_H

#include "mlir/Pass/PassOptions.h"

namespace mlir {
class OpPassManager;
namespace mt {

struct TrainPipelineOptions : public PassPipelineOptions<TrainPipelineOptions> {
  PassOptions::Option<int64_t> dp{
      *this, "dp", llvm::cl::desc("Data-parallel ranks"), llvm::cl::init(1)};
  PassOptions::Option<int64_t> tp{
      *this, "tp", llvm::cl::desc("Tensor-parallel ranks"), llvm::cl::init(1)};
  PassOptions::Option<bool> sp{
      *this, "sp", llvm::cl::desc("Sequence parallelism (needs tp > 1)"),
      llvm::cl::init(false)};
  PassOptions::Option<int64_t> vocabDivisibleBy{
      *this, "make-vocab-size-divisible-by",
      llvm::cl::desc("Pad the vocabulary to a multiple of this times tp "
                     "(Megatron-LM's flag; 1: only what tp needs)"),
      llvm::cl::init(1)};
  PassOptions::Option<int64_t> zero{*this, "zero",
                                    llvm::cl::desc("ZeRO stage 0, 1, 2 or 3"),
                                    llvm::cl::init(0)};
  PassOptions::Option<int64_t> ep{
      *this, "ep",
      llvm::cl::desc("Expert-parallel ranks (a divisor of dp): the experts "
                     "are split over groups of this many data-parallel "
                     "ranks"),
      llvm::cl::init(1)};
  PassOptions::Option<int64_t> pp{*this, "pp",
                                  llvm::cl::desc("Pipeline-parallel stages"),
                                  llvm::cl::init(1)};
  PassOptions::Option<int64_t> microbatches{
      *this, "microbatches",
      llvm::cl::desc("Microbatches per step and data-parallel rank (0: from "
                     "the model's global batch, else 1)"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> schedule{
      *this, "schedule",
      llvm::cl::desc("Pipeline schedule: gpipe, 1f1b or interleaved"),
      llvm::cl::init("1f1b")};
  PassOptions::Option<int64_t> virtualStages{
      *this, "virtual-stages",
      llvm::cl::desc("Model chunks per pipeline rank (interleaved)"),
      llvm::cl::init(1)};
  PassOptions::Option<std::string> layout{
      *this, "layout",
      llvm::cl::desc("Layers per (virtual) pipeline stage, in Megatron-LM's "
                     "--pipeline-model-parallel-layout notation (E, t, L, |, "
                     "*N), e.g. 'Et*3|t*5L'; default: an even split"),
      llvm::cl::init("")};
  PassOptions::Option<bool> printSchedule{
      *this, "print-schedule",
      llvm::cl::desc("Print the pipeline schedule's static timeline (to "
                     "standard error)"),
      llvm::cl::init(false)};
  PassOptions::Option<std::string> scheduleSvg{
      *this, "schedule-svg",
      llvm::cl::desc("Write the pipeline schedule's timeline as an SVG "
                     "picture to this file"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> scheduleTrace{
      *this, "schedule-trace",
      llvm::cl::desc("Write the pipeline schedule's timeline as a Chrome "
                     "trace (chrome://tracing, Perfetto) to this file"),
      llvm::cl::init("")};
  PassOptions::Option<std::string> scheduleCosts{
      *this, "schedule-costs",
      llvm::cl::desc("Durations in the printed schedule: uniform (forward 1, "
                     "backward 2) or flops (each stage's FLOPs)"),
      llvm::cl::init("uniform")};
  PassOptions::Option<std::string> remat{
      *this, "remat",
      llvm::cl::desc("Activation recomputation (mt-remat): none, full, "
                     "selective, or budget (mt-remat-budget: the fewest "
                     "recompute FLOPs within remat-budget)"),
      llvm::cl::init("none")};
  PassOptions::Option<bool> recastParameters{
      *this, "recast-parameters",
      llvm::cl::desc("Mixed precision: cast each 16-bit parameter copy again "
                     "for the backward (default), or keep the forward's "
                     "(false: 2 bytes per parameter live through the step, "
                     "one kernel per parameter fewer). With parameter-copies "
                     "(the default) the copies persist anyway, and false "
                     "changes the program only under a pipeline (a copy "
                     "another stage reads is sent once per step)"),
      llvm::cl::init(true)};
  PassOptions::ListOption<int64_t> rematFullLayers{
      *this, "remat-full-layers",
      llvm::cl::desc("With remat=full: recompute only these layers fully "
                     "(comma-separated) and the attention core of the others "
                     "(mt-remat's full-layers)")};
  PassOptions::Option<int64_t> rematBudget{
      *this, "remat-budget",
      llvm::cl::desc("With remat=budget: bytes per rank the planned peak "
                     "must not exceed"),
      llvm::cl::init(0)};
  PassOptions::Option<std::string> precision{
      *this, "precision",
      llvm::cl::desc("Storage type of activations (mt-mixed-precision): fp32, "
                     "bf16 (Megatron-LM's --bf16) or fp16 (--fp16, with "
                     "dynamic loss scaling); master weights, optimizer state "
                     "and gradients are fp32"),
      llvm::cl::init("fp32")};
  PassOptions::Option<bool> gradsInFp32{
      *this, "accumulate-allreduce-grads-in-fp32",
      llvm::cl::desc("Mixed precision: reduce and accumulate the "
                     "data-parallel gradients in fp32 (Megatron-LM's flag; "
                     "default), or, when false (dp > 1 only), in the 16-bit "
                     "type of the activations"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> fuse{
      *this, "fuse",
      llvm::cl::desc("Group elementwise ops into generated kernels (mt-fuse; "
                     "default), or run one host kernel per op when false"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> gemmEpilogues{
      *this, "gemm-epilogues",
      llvm::cl::desc("With fuse: a matmul's only bias addition becomes the "
                     "GEMM's epilogue (mt.matmul_bias; default), and in 16 "
                     "bits the MLP's GeLU, its gradient and a linear "
                     "layer's bias gradient"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> geluEpilogues{
      *this, "gelu-epilogues",
      llvm::cl::desc("With gemm-epilogues, in 16 bits: the MLP's GeLU and "
                     "its gradient join their GEMMs (default)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> biasGradEpilogues{
      *this, "bias-grad-epilogues",
      llvm::cl::desc("With gemm-epilogues, in 16 bits: a linear layer's bias "
                     "gradient joins its weight gradient's GEMM (default)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> gradientAccumulationFusion{
      *this, "gradient-accumulation-fusion",
      llvm::cl::desc("With fuse and microbatches: a weight gradient is added "
                     "into the f32 gradient accumulated over the earlier "
                     "microbatches by its GEMM (default)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> groupCasts{
      *this, "group-casts",
      llvm::cl::desc("With fuse: each layer's parameters are cast to 16 bits "
                     "in one command (mt.multi_cast; default)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> parameterCopies{
      *this, "parameter-copies",
      llvm::cl::desc("With fuse and 16-bit precision: persistent 16-bit "
                     "copies of the parameters, written by AdamW, instead "
                     "of casting the parameters every step (default)"),
      llvm::cl::init(true)};
  PassOptions::Option<int64_t> normGradRowBlock{
      *this, "norm-grad-row-block",
      llvm::cl::desc("With fuse: rows a norm's backward sums its weight and "
                     "bias gradients over before it writes a row of partial "
                     "sums (default 16)"),
      llvm::cl::init(16)};
  PassOptions::Option<bool> widenGradients{
      *this, "widen-gradients",
      llvm::cl::desc("With fuse: 16-bit weight and bias gradients only "
                     "widened to f32 are computed in f32 (default)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> groupedAttention{
      *this, "grouped-attention",
      llvm::cl::desc("With fuse: grouped-query attention reads keys and "
                     "values of fewer heads in place of their repeats "
                     "(default)"),
      llvm::cl::init(true)};
  PassOptions::Option<bool> printMemoryPlan{
      *this, "print-memory-plan",
      llvm::cl::desc("Print the memory plan (every rank of an SPMD program "
                     "has the same) to standard error"),
      llvm::cl::init(false)};
};

/// mt-mixed-precision (unless fp32), canonicalize, mt-autodiff, canonicalize,
/// cse, mt-remat (or mt-remat-budget), mt-parallelize, mt-pipeline,
/// mt-fuse (unless fuse=false), mt-lower-to-runtime, mt-verify-collectives:
/// a forward graph in, one mtrt program per pipeline stage out.
void buildTrainPipeline(OpPassManager &pm, const TrainPipelineOptions &options);

/// mt-parallelize, mt-pipeline, mt-fuse and mt-lower-to-runtime with `options`;
/// without their printing unless `print` (mt-remat-budget compiles trial
/// copies with them).
void addParallelAndLowering(OpPassManager &pm,
                            const TrainPipelineOptions &options, bool print);

/// Registers `--mt-train-pipeline`.
void registerTrainPipeline();

} // namespace mt
} // namespace mlir

#endif // MEGATRON_PIPELINES_TRAINPIPELINE_H
