//===- MTDialect.td - The mt dialect definition ------------*- tablegen -*-===//
//
// The `mt` dialect: forward graphs of transformer models, written so that
// later passes can differentiate, shard, pipeline and lower them.
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_DIALECTS_MT_IR_MTDIALECT_TD
#define MEGATRON_DIALECTS_MT_IR_MTDIALECT_TD

include "mlir/IR/OpBase.td"
include "dialects/MT/IR/MTInterfaces.td"

def MT_Dialect : Dialect {
  let name = "mt";
  let cppNamespace = "::mlir::mt";
  let summary = "Transformer training graphs on ranked tensors.";
  let description = [{
    The `mt` dialect expresses the forward graph of a transformer (GPT-2
    today) as value-semantic operations on statically shaped tensors. It holds
    only what upstream dialects lack: ops whose meaning later passes rely on as
    a whole (attention split by heads, vocabulary-sized embeddings and
    cross-entropy that tensor parallelism partitions in custom ways, dropout
    drawn from a counter-based generator). Plain data movement uses `tensor`
    ops where they fit.

    A model is a `func.func`. Its parameters are function arguments carrying
    their checkpoint name in the `mt.param` argument attribute (Hugging Face
    names and layouts, e.g. `"h.0.attn.c_attn.weight"` of shape
    `[n_embd, 3 * n_embd]`). Ops that belong to transformer block `i` carry
    the discardable attribute `mt.layer = i`; embedding and output-head ops
    carry none. Passes that split a model by layer read these attributes.

    The other arguments carry their role in `mt.input`: `"tokens"` and
    `"labels"` in the forward graph; a training step (made by `mt-autodiff`)
    adds `"step"`, `"lr"`, `"adam_beta1"`, `"adam_beta2"`, `"adam_eps"`,
    `"weight_decay"` and `"clip_grad"` scalars, and the optimizer state of
    each parameter as arguments with both `mt.param` and
    `mt.state = "exp_avg"` or `"exp_avg_sq"`; `mt-fuse` may add a
    parameter's persistent 16-bit copy, `mt.state = "param_copy"` (see
    `mt.multi_adamw`). Results carry `mt.output`
    (`"loss"`, `"grad_norm"`) or, for updated parameters and state,
    `mt.param` and `mt.state`.

    ```mlir
    func.func @gpt2(%ids: tensor<2x8xi32>, %labels: tensor<2x8xi32>,
                    %wte: tensor<64x16xf32> {mt.param = "wte.weight"})
        -> tensor<f32> {
      %x = mt.embedding %wte, %ids
          : (tensor<64x16xf32>, tensor<2x8xi32>) -> tensor<2x8x16xf32>
      %logits = mt.matmul %x, %wte transpose_b
          : (tensor<2x8x16xf32>, tensor<64x16xf32>) -> tensor<2x8x64xf32>
      %loss = mt.cross_entropy %logits, %labels
          : (tensor<2x8x64xf32>, tensor<2x8xi32>) -> tensor<f32>
      return %loss : tensor<f32>
    }
    ```
  }];

  let hasRegionArgAttrVerify = 1;
  let hasRegionResultAttrVerify = 1;
  let hasOperationAttrVerify = 1;

  let extraClassDeclaration = [{
    /// Argument attribute naming a parameter's checkpoint tensor.
    static constexpr ::llvm::StringLiteral getParamAttrName() {
      return ::llvm::StringLiteral("mt.param");
    }
    /// Argument or result attribute marking a parameter's optimizer state
    /// ("exp_avg" or "exp_avg_sq"), or its 16-bit copy ("param_copy");
    /// `mt.param` names the parameter.
    static constexpr ::llvm::StringLiteral getStateAttrName() {
      return ::llvm::StringLiteral("mt.state");
    }
    /// Argument attribute: the role of a run-time input ("tokens", "lr", ...).
    static constexpr ::llvm::StringLiteral getInputAttrName() {
      return ::llvm::StringLiteral("mt.input");
    }
    /// Result attribute: the role of a reported output ("loss", "grad_norm").
    static constexpr ::llvm::StringLiteral getOutputAttrName() {
      return ::llvm::StringLiteral("mt.output");
    }
    static ::llvm::ArrayRef<::llvm::StringRef> getInputRoles();
    static ::llvm::ArrayRef<::llvm::StringRef> getOutputRoles();
    static ::llvm::ArrayRef<::llvm::StringRef> getStateKinds();
    /// The optimizer's moments among them (mt-autodiff's AdamW state).
    static ::llvm::ArrayRef<::llvm::StringRef> getMomentKinds();
    /// Discardable op attribute on dropout and attention ops whose tensors
    /// are split along their leading (batch) dimension across the grid axis
    /// it names: the random stream's element index is offset by the rank's
    /// share, so every rank draws its part of the single-device mask.
    static constexpr ::llvm::StringLiteral getRngBatchAxisAttrName() {
      return ::llvm::StringLiteral("mt.rng_batch_axis");
    }
    /// Argument or result attribute: the value is one of equal contiguous
    /// pieces of the flattened tensor of this full shape (ZeRO sharding),
    /// the piece of the rank's coordinate on grid axis `mt.shard_axis`.
    static constexpr ::llvm::StringLiteral getFullShapeAttrName() {
      return ::llvm::StringLiteral("mt.full_shape");
    }
    static constexpr ::llvm::StringLiteral getShardAxisAttrName() {
      return ::llvm::StringLiteral("mt.shard_axis");
    }
    /// With `mt.full_shape`: a tensor-parallel split is not a flat piece but
    /// `1/count` of dimension `mt.shard_dim` within each of `mt.shard_chunks`
    /// equal chunks of that dimension (c_attn's [q | k | v] is 3 chunks).
    static constexpr ::llvm::StringLiteral getShardDimAttrName() {
      return ::llvm::StringLiteral("mt.shard_dim");
    }
    static constexpr ::llvm::StringLiteral getShardChunksAttrName() {
      return ::llvm::StringLiteral("mt.shard_chunks");
    }
    /// With a tensor-parallel split: the value is moreover a ZeRO piece of
    /// the rank's flattened share, indexed by the coordinate on this axis.
    static constexpr ::llvm::StringLiteral getPieceAxisAttrName() {
      return ::llvm::StringLiteral("mt.piece_axis");
    }
    /// Expert parallelism: the argument holds a different expert on each
    /// coordinate of grid axis `mt.expert_axis`, the one `mt.expert_names`
    /// names at that coordinate (its `mt.param` is coordinate 0's).
    static constexpr ::llvm::StringLiteral getExpertAxisAttrName() {
      return ::llvm::StringLiteral("mt.expert_axis");
    }
    static constexpr ::llvm::StringLiteral getExpertNamesAttrName() {
      return ::llvm::StringLiteral("mt.expert_names");
    }
    /// With `mt.full_shape`: only the first rows of the full tensor are
    /// real; the rest pad a vocabulary to a multiple of tp.
    static constexpr ::llvm::StringLiteral getValidRowsAttrName() {
      return ::llvm::StringLiteral("mt.valid_rows");
    }
    /// Discardable op attribute on vocab-parallel ops of a padded
    /// vocabulary: the true vocabulary size (padded logits are masked).
    static constexpr ::llvm::StringLiteral getVocabSizeAttrName() {
      return ::llvm::StringLiteral("mt.vocab_size");
    }
    /// Discardable op attribute on embedding and cross-entropy ops (and
    /// their gradients) whose vocabulary is split across this grid axis.
    static constexpr ::llvm::StringLiteral getTpVocabAxisAttrName() {
      return ::llvm::StringLiteral("mt.tp_vocab_axis");
    }
    /// Discardable op attribute on attention ops whose heads are split
    /// across this grid axis (masks are offset by the rank's first head).
    static constexpr ::llvm::StringLiteral getRngHeadAxisAttrName() {
      return ::llvm::StringLiteral("mt.rng_head_axis");
    }
    /// Discardable op attribute on dropouts of [batch, seq, hidden] tensors
    /// split along the sequence across this grid axis (sequence
    /// parallelism): the random index follows the rank's rows.
    static constexpr ::llvm::StringLiteral getRngSeqAxisAttrName() {
      return ::llvm::StringLiteral("mt.rng_seq_axis");
    }
    /// Discardable unit attribute (set by mt-remat) on a forward op cloned
    /// into the backward pass to recompute what it would have stashed.
    static constexpr ::llvm::StringLiteral getRecomputedAttrName() {
      return ::llvm::StringLiteral("mt.recomputed");
    }
    /// Discardable op attribute: the transformer block an op belongs to.
    static constexpr ::llvm::StringLiteral getLayerAttrName() {
      return ::llvm::StringLiteral("mt.layer");
    }
    /// The op's `mt.layer`, of whatever integer type the verifier accepted
    /// (a ui8 255 is 255, not the -1 IntegerAttr::getInt reads).
    static std::optional<int64_t> getLayer(::mlir::Operation *op);
    /// Function attribute (set by mt-pipeline): the pipeline stage (the
    /// coordinate on the grid's pipeline axis) whose ranks run this
    /// function; absent on a step without pipeline parallelism.
    static constexpr ::llvm::StringLiteral getPipelineStageAttrName() {
      return ::llvm::StringLiteral("mt.pipeline_stage");
    }
    /// Argument attribute on `tokens` and `labels` inputs, and discardable
    /// op attribute (set by mt-pipeline): the microbatch of the step the
    /// value or op belongs to; with `mt.microbatches`, the count per
    /// data-parallel rank and step (random streams are offset by it).
    static constexpr ::llvm::StringLiteral getMicrobatchAttrName() {
      return ::llvm::StringLiteral("mt.microbatch");
    }
    static constexpr ::llvm::StringLiteral getMicrobatchesAttrName() {
      return ::llvm::StringLiteral("mt.microbatches");
    }
    /// Discardable op attribute (set by mt-pipeline under the interleaved
    /// schedule): the model chunk of its rank the op's action runs, as in
    /// the schedule's names (F3.1: microbatch 3, chunk 1). Traces only.
    static constexpr ::llvm::StringLiteral getChunkAttrName() {
      return ::llvm::StringLiteral("mt.chunk");
    }
    /// Discardable attribute on `shard.send` and `shard.recv` between
    /// pipeline stages: a send and the receive it feeds carry the same tag.
    static constexpr ::llvm::StringLiteral getTransferTagAttrName() {
      return ::llvm::StringLiteral("mt.transfer_tag");
    }
    /// Discardable op attribute stating when an op runs in a training step:
    /// "forward" or "backward" (once per microbatch) or "optimizer" (once
    /// per step, after gradients are accumulated). Set where the kind of op
    /// does not say it, e.g. by mt-parallelize on gradient reductions.
    static constexpr ::llvm::StringLiteral getPhaseAttrName() {
      return ::llvm::StringLiteral("mt.phase");
    }
    /// Function attribute (set by the importer with a global batch): the
    /// sequences per microbatch and data-parallel rank; the function's batch
    /// is then the global batch, and mt-pipeline derives the microbatches.
    static constexpr ::llvm::StringLiteral getMicroBatchSizeAttrName() {
      return ::llvm::StringLiteral("mt.micro_batch_size");
    }
    /// Discardable attribute on the module: the whole model's training
    /// FLOPs per token (ModelSummary), counted by mt-autodiff on the model
    /// before parallelization splits it, for the programs' throughput
    /// reports (a stage or a tensor-parallel share holds only part of it).
    static constexpr ::llvm::StringLiteral getFlopsPerTokenAttrName() {
      return ::llvm::StringLiteral("mt.flops_per_token");
    }
    /// Argument attribute on a parameter: its tensor-parallel role, as the
    /// model states it (the importer, or whoever writes `mt` by hand):
    /// `{role = "column" | "row" | "vocab" | "replicated", dim = D,
    /// chunks = K}`. Column-, row- and vocab-parallel parameters are split
    /// along dimension `dim` over the tp ranks, within each of `chunks`
    /// equal chunks of it (a fused [q | k | v] projection is 3 chunks,
    /// [gate | up] 2); replicated ones are whole on every rank.
    static constexpr ::llvm::StringLiteral getParallelAttrName() {
      return ::llvm::StringLiteral("mt.parallel");
    }
    /// Argument attribute on a parameter: how it is initialized,
    /// `{kind = "normal", std = S}`, `{kind = "zeros"}` or `{kind = "ones"}`.
    static constexpr ::llvm::StringLiteral getInitAttrName() {
      return ::llvm::StringLiteral("mt.init");
    }
    /// Argument attribute on a parameter that published weights store as
    /// rows of a fused tensor, `{tensor = "name", row = R}`: its rows are
    /// that tensor's from row R on (Phi-3's qkv_proj and gate_up_proj hold
    /// the q, k, v and the gate, up projections one after another). The
    /// runtime reads it from there when a weights file lacks it by name.
    static constexpr ::llvm::StringLiteral getFusedInAttrName() {
      return ::llvm::StringLiteral("mt.fused_in");
    }
    /// Whether `name` is one of the attributes that say how an argument or
    /// result is sharded (`mt.full_shape`, `mt.shard_*`, `mt.piece_axis`,
    /// `mt.valid_rows`).
    static bool isShardAttrName(::llvm::StringRef name);
  }];
}

// Operand 0 of the op is the gradient of the step's loss, the backward
// pass's seed: the gradient op of a term of the loss (the cross-entropy, the
// load-balancing loss). mt-pipeline divides it by the number of
// microbatches, each microbatch's loss being a part of their mean.
def MT_LossGradient : NativeOpTrait<"LossGradient"> {
  let cppNamespace = "::mlir::mt";
}

/// Every mt op states its shape rule (MTInterfaces.td).
class MT_Op<string mnemonic, list<Trait> traits = []>
    : Op<MT_Dialect, mnemonic,
         !listconcat(traits,
                     [DeclareOpInterfaceMethods<MT_ShapeRuleOpInterface>])>;

//===----------------------------------------------------------------------===//
// Type constraints
//===----------------------------------------------------------------------===//

/// Activations and parameters: f32 today; bf16 and f16 for mixed precision.
def MT_FloatTensor : StaticShapeTensorOf<[F32, BF16, F16]>;

/// Token ids and labels.
def MT_TokenTensor : StaticShapeTensorOf<[I32, I64]>;

/// A mixture of experts' routing: the experts each token chose, where its
/// rows lie among the experts' rows, and where each expert's rows begin.
def MT_RoutingTensor : StaticShapeTensorOf<[I32]>;

/// What an mt.fusion passes: float values, and the labels a fused
/// cross-entropy reads.
def MT_FusionTensor : StaticShapeTensorOf<[F32, BF16, F16, I32]>;

/// A scalar: the loss, a norm, a run-time hyperparameter. Buildable, so
/// assembly formats need not spell it.
def MT_ScalarF32Tensor : 0DTensorOf<[F32]> {
  let builderCall = "::mlir::RankedTensorType::get({}, $_builder.getF32Type())";
}

#endif // MEGATRON_DIALECTS_MT_IR_MTDIALECT_TD
