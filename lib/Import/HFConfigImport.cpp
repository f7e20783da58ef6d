//===- HFConfigImport.cpp - Hugging Face config.json to mt ----------------===//
//
// The GPT-2 forward graph follows Hugging Face's `GPT2LMHeadModel` in training
// mode: token plus position embedding and dropout; per block, pre-norm
// attention (fused QKV projection `c_attn`, heads, causal attention with
// dropout, output projection `c_proj`, residual dropout) and pre-norm MLP
// (`c_fc`, tanh GELU, `c_proj`, residual dropout), each added to the
// residual stream; a final layer norm; logits through the output head, tied
// to `wte.weight` unless `tie_word_embeddings` is false; mean cross-entropy.
//
//===----------------------------------------------------------------------===//

#include "megatron/Import/HFConfigImport.h"
#include "ConfigReader.h"
#include "ModelFunction.h"
#include "megatron/Import/LlamaConfigImport.h"

#include "dialects/MT/IR/MTOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/SourceMgr.h"

#include <cmath>

using namespace mlir;
using namespace mlir::mt;
using mlir::mt::detail::ConfigReader;
using mlir::mt::detail::parseConfigObject;
using mlir::mt::detail::tooDeepAt;

//===----------------------------------------------------------------------===//
// Reading the config
//===----------------------------------------------------------------------===//

std::string mlir::mt::configModelType(StringRef json) {
  // A config nested too deep for the parser has no model type: the GPT-2
  // importer then reports the nesting.
  if (tooDeepAt(json) != StringRef::npos)
    return "";
  llvm::Expected<llvm::json::Value> parsed = llvm::json::parse(json);
  if (!parsed) {
    llvm::consumeError(parsed.takeError());
    return "";
  }
  if (const llvm::json::Object *object = parsed->getAsObject())
    if (std::optional<StringRef> type = object->getString("model_type"))
      return type->str();
  return "";
}

FailureOr<GPT2Config> mlir::mt::parseGPT2Config(StringRef json, Location loc) {
  FailureOr<llvm::json::Value> parsed = parseConfigObject(json, loc);
  if (failed(parsed))
    return failure();
  const llvm::json::Object *object = parsed->getAsObject();

  ConfigReader reader(*object, json, loc);
  // A config without model_type is read as GPT-2's, whose keys it must
  // then have: a LLaMA-family config that lost its model_type would
  // otherwise be reported as a GPT-2 config missing n_positions.
  if (!object->get("model_type") && !object->get("n_embd") &&
      (object->get("hidden_size") || object->get("num_hidden_layers")))
    return emitError(loc)
           << "config has no 'model_type' (\"gpt2\", "
           << llamaFamilyList(/*quoted=*/true, " or ")
           << "), and its keys are not GPT-2's (hidden_size, not n_embd)";
  std::string supported = "supported are GPT-2 (\"gpt2\") and the LLaMA "
                          "family (" +
                          llamaFamilyList(/*quoted=*/true, ", ") + ")";
  if (failed(reader.oneOf("model_type", {"gpt2"}, supported)) ||
      failed(reader.oneOf("activation_function",
                          {"gelu_new", "gelu_pytorch_tanh"},
                          "only GPT-2's tanh GELU (\"gelu_new\" or "
                          "\"gelu_pytorch_tanh\") is supported")))
    return failure();

  GPT2Config config;
  auto assign = [](auto &field, auto result) {
    if (failed(result))
      return false;
    field = *result;
    return true;
  };
  if (!assign(config.vocabSize, reader.positiveInt("vocab_size")) ||
      !assign(config.numPositions, reader.positiveInt("n_positions")) ||
      !assign(config.hiddenSize, reader.positiveInt("n_embd")) ||
      !assign(config.numLayers, reader.layerCount("n_layer")) ||
      !assign(config.numHeads, reader.positiveInt("n_head")) ||
      !assign(config.innerSize,
              reader.optionalPositiveInt("n_inner", 4 * config.hiddenSize)) ||
      !assign(config.layerNormEpsilon,
              reader.positiveNumber("layer_norm_epsilon", 1e-5)) ||
      !assign(config.embeddingDropout, reader.probability("embd_pdrop", 0.1)) ||
      !assign(config.attentionDropout, reader.probability("attn_pdrop", 0.1)) ||
      !assign(config.residualDropout, reader.probability("resid_pdrop", 0.1)) ||
      !assign(config.tieWordEmbeddings,
              reader.boolean("tie_word_embeddings", true)) ||
      !assign(config.initializerRange,
              reader.positiveNumber("initializer_range", 0.02)))
    return failure();
  // Attention scaled otherwise than by 1/sqrt(head dimension), as
  // Hugging Face's GPT-2 can be told, is not built: refused, not dropped.
  bool scaled = true, byLayer = false;
  if (!assign(scaled, reader.boolean("scale_attn_weights", true)) ||
      !assign(byLayer,
              reader.boolean("scale_attn_by_inverse_layer_idx", false)))
    return failure();
  if (!scaled)
    return reader.error("scale_attn_weights")
           << "is false; only attention scaled by 1/sqrt(head dimension) is "
              "supported";
  if (byLayer)
    return reader.error("scale_attn_by_inverse_layer_idx")
           << "is true; only attention scaled by 1/sqrt(head dimension) is "
              "supported";

  if (config.hiddenSize % config.numHeads != 0)
    return reader.error("n_embd")
           << "is " << config.hiddenSize << ", not divisible by n_head "
           << config.numHeads;
  return config;
}

//===----------------------------------------------------------------------===//
// Building the forward graph
//===----------------------------------------------------------------------===//

namespace {
/// Builds the GPT-2 forward function one block at a time. Parameters are
/// declared first (to fix the function signature in checkpoint order), then
/// the body looks them up by name.
class GPT2Builder : public mt::detail::ModelBuilder<GPT2Builder> {
  friend ModelBuilder;

public:
  GPT2Builder(const GPT2Config &config, MicroBatchShape shape, Location loc)
      : ModelBuilder(shape, loc), config(config) {}

private:
  /// Parameters in the order of Hugging Face's GPT-2 state dict, with
  /// Megatron's tensor-parallel roles for Conv1D's [in, out] layout (column
  /// parallel splits the output dimension 1, row parallel the input
  /// dimension 0) and Hugging Face's initialization (GPT2PreTrainedModel.
  /// _init_weights: normal(initializer_range, 0.02 by default), the
  /// residual projections scaled by 1 / sqrt(2 n_layer), biases 0,
  /// layer-norm weights 1).
  void declareParameters() {
    using Kind = ParallelRole::Kind;
    using Init = ParamInitializer::Kind;
    int64_t d = config.hiddenSize, inner = config.innerSize;
    const ParallelRole replicated{Kind::Replicated, -1, 1};
    const ParallelRole vocab{Kind::Vocab, 0, 1};
    const double range = config.initializerRange;
    const ParamInitializer normal{Init::Normal, range};
    const ParamInitializer residual{
        Init::Normal,
        range /
            std::sqrt(2.0 * double(std::max<int64_t>(config.numLayers, 1)))};
    const ParamInitializer zeros{Init::Zeros, 0}, ones{Init::Ones, 0};
    declare("wte.weight", {config.vocabSize, d}, vocab, normal);
    declare("wpe.weight", {config.numPositions, d}, replicated, normal);
    for (int64_t layer = 0; layer < config.numLayers; ++layer) {
      std::string p = "h." + std::to_string(layer) + ".";
      declare(p + "ln_1.weight", {d}, replicated, ones);
      declare(p + "ln_1.bias", {d}, replicated, zeros);
      declare(p + "attn.c_attn.weight", {d, 3 * d}, {Kind::Column, 1, 3},
              normal);
      declare(p + "attn.c_attn.bias", {3 * d}, {Kind::Column, 0, 3}, zeros);
      declare(p + "attn.c_proj.weight", {d, d}, {Kind::Row, 0, 1}, residual);
      declare(p + "attn.c_proj.bias", {d}, replicated, zeros);
      declare(p + "ln_2.weight", {d}, replicated, ones);
      declare(p + "ln_2.bias", {d}, replicated, zeros);
      declare(p + "mlp.c_fc.weight", {d, inner}, {Kind::Column, 1, 1}, normal);
      declare(p + "mlp.c_fc.bias", {inner}, {Kind::Column, 0, 1}, zeros);
      declare(p + "mlp.c_proj.weight", {inner, d}, {Kind::Row, 0, 1}, residual);
      declare(p + "mlp.c_proj.bias", {d}, replicated, zeros);
    }
    declare("ln_f.weight", {d}, replicated, ones);
    declare("ln_f.bias", {d}, replicated, zeros);
    if (!config.tieWordEmbeddings)
      declare("lm_head.weight", {config.vocabSize, d}, vocab, normal);
  }

  Value dropout(Value x, double probability) {
    return inLayer(DropoutOp::create(builder, loc, x.getType(), x,
                                     builder.getF64FloatAttr(probability),
                                     /*rng_stream=*/nullptr))
        .getResult();
  }

  Value layerNorm(Value x, const std::string &prefix) {
    return inLayer(LayerNormOp::create(
                       builder, loc, x.getType(), x, param(prefix + ".weight"),
                       param(prefix + ".bias"),
                       builder.getF64FloatAttr(config.layerNormEpsilon)))
        .getResult();
  }

  /// A Hugging Face Conv1D: `x @ weight + bias` with weight `[in, out]`.
  Value linear(Value x, const std::string &prefix, int64_t outWidth) {
    Value weight = param(prefix + ".weight");
    Value y = inLayer(MatmulOp::create(builder, loc, activation(outWidth), x,
                                       weight, /*transpose_a=*/false,
                                       /*transpose_b=*/false))
                  .getResult();
    return inLayer(BiasAddOp::create(builder, loc, y.getType(), y,
                                     param(prefix + ".bias")))
        .getResult();
  }

  Value add(Value lhs, Value rhs) {
    return inLayer(AddOp::create(builder, loc, lhs, rhs)).getResult();
  }

  Value attentionBlock(Value x, const std::string &p) {
    int64_t d = config.hiddenSize, heads = config.numHeads;
    Value qkv = linear(layerNorm(x, p + "ln_1"), p + "attn.c_attn", 3 * d);
    auto headType = RankedTensorType::get(
        {shape.batchSize, heads, shape.seqLength, d / heads}, floatType);
    auto split = inLayer(SplitHeadsOp::create(
        builder, loc, SmallVector<Type>(3, headType), qkv));
    Value attended =
        inLayer(AttentionOp::create(
                    builder, loc, headType, split.getResult(0),
                    split.getResult(1), split.getResult(2),
                    builder.getF64FloatAttr(config.attentionDropout),
                    /*scale=*/nullptr, /*rng_stream=*/nullptr,
                    /*window=*/nullptr, /*softcap=*/nullptr))
            .getResult();
    Value merged =
        inLayer(MergeHeadsOp::create(builder, loc, activation(d), attended))
            .getResult();
    Value projected = linear(merged, p + "attn.c_proj", d);
    return dropout(projected, config.residualDropout);
  }

  Value mlpBlock(Value x, const std::string &p) {
    Value h =
        linear(layerNorm(x, p + "ln_2"), p + "mlp.c_fc", config.innerSize);
    h = inLayer(GeluOp::create(builder, loc, h)).getResult();
    h = linear(h, p + "mlp.c_proj", config.hiddenSize);
    return dropout(h, config.residualDropout);
  }

  Value buildBody(Value ids, Value labels) {
    int64_t d = config.hiddenSize;
    Value x = EmbeddingOp::create(builder, loc, activation(d),
                                  param("wte.weight"), ids);
    Value positions = PositionEmbeddingOp::create(
        builder, loc, RankedTensorType::get({shape.seqLength, d}, floatType),
        param("wpe.weight"));
    x = BiasAddOp::create(builder, loc, x.getType(), x, positions);
    x = dropout(x, config.embeddingDropout);

    for (int64_t layer = 0; layer < config.numLayers; ++layer) {
      currentLayer = layer;
      std::string p = "h." + std::to_string(layer) + ".";
      x = add(x, attentionBlock(x, p));
      x = add(x, mlpBlock(x, p));
    }
    currentLayer = -1;

    x = layerNorm(x, "ln_f");
    return headAndLoss(
        x, config.tieWordEmbeddings ? "wte.weight" : "lm_head.weight",
        config.vocabSize, labels);
  }

  const GPT2Config &config;
};
} // namespace

FailureOr<OwningOpRef<ModuleOp>>
mlir::mt::buildGPT2Module(const GPT2Config &config, MicroBatchShape shape,
                          Location loc) {
  if (failed(mt::detail::checkMicroBatch(shape, config.numPositions,
                                         "n_positions", loc)))
    return failure();
  return GPT2Builder(config, shape, loc).build("gpt2");
}

//===----------------------------------------------------------------------===//
// Translation registration
//===----------------------------------------------------------------------===//

/// Sets the token dropping the command line asks for on a mixture of
/// experts' config (`llama`: null for GPT-2), or reports why it cannot.
static LogicalResult applyTokenDropping(LlamaConfig *llama,
                                        std::optional<std::string> factorText,
                                        std::optional<std::string> policy,
                                        Location loc) {
  std::optional<double> factor;
  if (factorText) {
    double value;
    if (StringRef(*factorText).trim().getAsDouble(value))
      return emitError(loc) << "--moe-expert-capacity-factor must be a "
                               "number, got '"
                            << *factorText << "'";
    factor = value;
  }
  if (policy && *policy != "probs" && *policy != "position")
    return emitError(loc) << "--moe-token-drop-policy must be 'probs' or "
                             "'position', got '"
                          << *policy << "'";
  // As in Megatron-LM, a policy alone changes nothing (scripts pass it
  // whether or not they drop); said, since it may be a forgotten factor.
  if (!factor) {
    if (policy)
      emitWarning(loc) << "--moe-token-drop-policy has no effect without "
                          "--moe-expert-capacity-factor: no token is dropped";
    return success();
  }
  if (!llama || llama->numExperts == 0)
    return emitError(loc) << "--moe-expert-capacity-factor applies to a "
                             "mixture of experts; this config has no experts";
  // Beyond 1e6 every expert's capacity is its tokens anyway.
  if (!(*factor > 0.0) || !(*factor <= 1e6))
    return emitError(loc) << "--moe-expert-capacity-factor must be in (0, "
                             "1e6], got "
                          << *factorText;
  llama->expertCapacityFactor = *factor;
  llama->tokenDropPolicy = policy && *policy == "position"
                               ? LlamaConfig::TokenDropPolicy::Position
                               : LlamaConfig::TokenDropPolicy::Probs;
  return success();
}

/// A mixture of experts' loss coefficient from the command line (`flag`,
/// a number in [0, 1e6]) into `value`, 0 without the flag; an error unless
/// it is 0 or the config has experts.
static LogicalResult parseMoeLossCoeff(StringRef flag, LlamaConfig *llama,
                                       std::optional<std::string> text,
                                       Location loc, double &value) {
  value = 0.0;
  if (!text)
    return success();
  if (StringRef(*text).trim().getAsDouble(value) || !(value >= 0.0) ||
      !(value <= 1e6))
    return emitError(loc) << "--" << flag
                          << " must be a number in [0, 1e6], got '" << *text
                          << "'";
  if (value > 0.0 && (!llama || llama->numExperts == 0))
    return emitError(loc) << "--" << flag
                          << " applies to a mixture of experts; this config "
                             "has no experts";
  return success();
}

/// Sets Megatron-LM's per-layer load-balancing loss the command line asks
/// for (`--moe-aux-loss-coeff`) on a mixture of experts' config, or reports
/// why it cannot.
static LogicalResult applyAuxLossCoeff(LlamaConfig *llama,
                                       std::optional<std::string> text,
                                       Location loc) {
  double value;
  if (failed(parseMoeLossCoeff("moe-aux-loss-coeff", llama, text, loc, value)))
    return failure();
  if (value == 0.0)
    return success();
  if (llama->routerAuxLossCoef > 0.0)
    return emitError(loc)
           << "--moe-aux-loss-coeff and the config's output_router_logits "
              "(router_aux_loss_coef "
           << mlir::mt::detail::shown(llama->routerAuxLossCoef)
           << ") both ask for a load-balancing loss; keep one";
  llama->perLayerAuxLossCoef = value;
  return success();
}

/// Sets Megatron-LM's per-layer router z-loss the command line asks for
/// (`--moe-z-loss-coeff`) on a mixture of experts' config, or reports why
/// it cannot.
static LogicalResult applyZLossCoeff(LlamaConfig *llama,
                                     std::optional<std::string> text,
                                     Location loc) {
  double value;
  if (failed(parseMoeLossCoeff("moe-z-loss-coeff", llama, text, loc, value)))
    return failure();
  if (value > 0.0)
    llama->routerZLossCoef = value;
  return success();
}

void mlir::mt::registerHFConfigImportTranslation() {
  // Megatron-LM's names for the micro-batch shape.
  static llvm::cl::opt<int64_t> microBatchSize(
      "micro-batch-size",
      llvm::cl::desc("Sequences per micro-batch for --import-hf-config"),
      llvm::cl::init(1));
  static llvm::cl::opt<int64_t> globalBatchSize(
      "global-batch-size",
      llvm::cl::desc("Sequences per training step over all data-parallel "
                     "ranks and microbatches, as in Megatron-LM (default: "
                     "the micro-batch is the whole step). The graph then "
                     "holds the global step and --micro-batch-size is per "
                     "data-parallel rank: mt-pipeline runs global / "
                     "(micro-batch x dp) microbatches"),
      llvm::cl::init(0));
  static llvm::cl::opt<int64_t> seqLength(
      "seq-length",
      llvm::cl::desc("Tokens per sequence for --import-hf-config (default: "
                     "the config's n_positions for GPT-2, "
                     "max_position_embeddings for the LLaMA family)"),
      llvm::cl::init(0));

  // Megatron-LM's token dropping for a mixture of experts.
  static llvm::cl::opt<std::string> expertCapacityFactor(
      "moe-expert-capacity-factor",
      llvm::cl::desc("Each expert of a mixture of experts takes at most "
                     "ceil(tokens * k / experts * factor) of a micro-batch's "
                     "choices and drops the rest, as Megatron-LM's flag "
                     "(default: dropless)"),
      llvm::cl::init(""));
  static llvm::cl::opt<std::string> tokenDropPolicy(
      "moe-token-drop-policy",
      llvm::cl::desc("Which choices a full expert keeps, as Megatron-LM's "
                     "flag: 'probs' (the largest gate weights, the default) "
                     "or 'position' (the earliest tokens); needs "
                     "--moe-expert-capacity-factor"),
      llvm::cl::init("probs"));

  static llvm::cl::opt<std::string> auxLossCoeff(
      "moe-aux-loss-coeff",
      llvm::cl::desc("Adds each mixture-of-experts layer's load-balancing "
                     "loss times this coefficient to the loss, as "
                     "Megatron-LM's flag (its switch load-balancing loss, "
                     "per layer; a config's output_router_logits asks for "
                     "Hugging Face's, over all layers at once, instead)"),
      llvm::cl::init(""));

  static llvm::cl::opt<std::string> zLossCoeff(
      "moe-z-loss-coeff",
      llvm::cl::desc("Adds each mixture-of-experts layer's router z-loss "
                     "(the mean squared log-sum-exp of its logits) times "
                     "this coefficient to the loss, as Megatron-LM's flag"),
      llvm::cl::init(""));

  TranslateToMLIRRegistration registration(
      "import-hf-config",
      "Import a Hugging Face config.json (GPT-2, the LLaMA family: Llama, "
      "Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, Qwen2-MoE, OLMoE, OLMo2, "
      "Granite, SmolLM3, Gemma, Gemma 2, Gemma 3) "
      "as an mt forward graph",
      [](llvm::SourceMgr &sourceMgr,
         MLIRContext *context) -> OwningOpRef<Operation *> {
        const llvm::MemoryBuffer *buffer =
            sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
        Location loc =
            FileLineColLoc::get(context, buffer->getBufferIdentifier(), 1, 1);
        // The model family decides the importer.
        bool llama = isLlamaFamily(configModelType(buffer->getBuffer()));
        FailureOr<GPT2Config> config;
        FailureOr<LlamaConfig> llamaConfig;
        if (llama)
          llamaConfig = parseLlamaConfig(buffer->getBuffer(), loc);
        else
          config = parseGPT2Config(buffer->getBuffer(), loc);
        if (llama ? failed(llamaConfig) : failed(config))
          return nullptr;
        if (failed(
                applyAuxLossCoeff(llama ? &*llamaConfig : nullptr,
                                  auxLossCoeff.getNumOccurrences()
                                      ? std::optional<std::string>(auxLossCoeff)
                                      : std::nullopt,
                                  loc)))
          return nullptr;
        if (failed(applyZLossCoeff(llama ? &*llamaConfig : nullptr,
                                   zLossCoeff.getNumOccurrences()
                                       ? std::optional<std::string>(zLossCoeff)
                                       : std::nullopt,
                                   loc)))
          return nullptr;
        if (failed(applyTokenDropping(
                llama ? &*llamaConfig : nullptr,
                expertCapacityFactor.getNumOccurrences()
                    ? std::optional<std::string>(expertCapacityFactor)
                    : std::nullopt,
                tokenDropPolicy.getNumOccurrences()
                    ? std::optional<std::string>(tokenDropPolicy)
                    : std::nullopt,
                loc)))
          return nullptr;
        MicroBatchShape shape;
        shape.batchSize = microBatchSize;
        bool global = globalBatchSize.getNumOccurrences() > 0;
        if (global) {
          if (globalBatchSize <= 0 || microBatchSize <= 0 ||
              globalBatchSize % microBatchSize != 0) {
            emitError(loc) << "global batch size (--global-batch-size) "
                           << int64_t(globalBatchSize)
                           << " is not a positive multiple of the "
                              "micro-batch size "
                           << int64_t(microBatchSize);
            return nullptr;
          }
          shape.batchSize = globalBatchSize;
        }
        int64_t positions =
            llama ? llamaConfig->maxPositions : config->numPositions;
        shape.seqLength =
            seqLength.getNumOccurrences() ? int64_t(seqLength) : positions;
        FailureOr<OwningOpRef<ModuleOp>> module =
            llama ? buildLlamaModule(*llamaConfig, shape, loc)
                  : buildGPT2Module(*config, shape, loc);
        if (failed(module))
          return nullptr;
        if (global)
          for (auto function : (**module).getOps<func::FuncOp>())
            function->setAttr(MTDialect::getMicroBatchSizeAttrName(),
                              IntegerAttr::get(IntegerType::get(context, 64),
                                               int64_t(microBatchSize)));
        return OwningOpRef<Operation *>(module->release());
      },
      [](DialectRegistry &registry) {
        registry.insert<MTDialect, func::FuncDialect>();
      });
}
