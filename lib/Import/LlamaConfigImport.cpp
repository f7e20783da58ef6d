//===- LlamaConfigImport.cpp - LLaMA-family config.json to mt -------------===//

#include "megatron/Import/LlamaConfigImport.h"
#include "ConfigReader.h"
#include "ModelFunction.h"

#include "dialects/MT/IR/MTOps.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <cstdio>
#include <optional>
#include <tuple>

using namespace mlir;
using namespace mlir::mt;
using mlir::mt::detail::ConfigReader;
using mlir::mt::detail::parseConfigObject;
using mlir::mt::detail::shown;

/// The rotary base `key` (`fallback` when absent): the frequencies are
/// theta^(-2i/d), so a base of 1 or less makes them all 1 or growing, which
/// mt.rope refuses.
static FailureOr<double> rotaryBase(ConfigReader &reader, StringRef key,
                                    double fallback) {
  FailureOr<double> base = reader.positiveNumber(key, fallback);
  if (failed(base))
    return failure();
  if (*base <= 1.0)
    return reader.error(key) << "is " << shown(*base)
                             << "; the rotary base must be greater than 1";
  return base;
}

/// Fails, naming `key`, unless `value` lies in [1e-30, 1e30]: a float32
/// factor or divisor far from 0 and infinity, as its reciprocal is.
/// `subject` and `why` complete the error ("<subject> must lie in ...
/// (<why>)").
static LogicalResult checkFloat32Factor(ConfigReader &reader, StringRef key,
                                        double value, StringRef subject,
                                        StringRef why) {
  if (value >= 1e-30 && value <= 1e30)
    return success();
  return reader.error(key) << "is " << shown(value) << "; " << subject
                           << " must lie in [1e-30, 1e30] (" << why << ")";
}

/// The model types this importer reads, in the order errors list them.
static constexpr llvm::StringLiteral kModelTypes[] = {
    "llama",     "mistral", "mixtral",     "qwen2",   "qwen3",   "qwen3_moe",
    "qwen2_moe", "olmoe",   "olmo2",       "granite", "smollm3", "phi3",
    "gemma",     "gemma2",  "gemma3_text", "gemma3"};

bool mlir::mt::isLlamaFamily(StringRef modelType) {
  return llvm::is_contained(kModelTypes, modelType);
}

std::string mlir::mt::llamaFamilyList(bool quoted, StringRef lastSeparator) {
  std::string list;
  for (auto [index, type] : llvm::enumerate(kModelTypes)) {
    if (index > 0)
      list += index + 1 == std::size(kModelTypes) ? lastSeparator.str() : ", ";
    list += quoted ? "\"" + type.str() + "\"" : type.str();
  }
  return list;
}

/// The most experts a mixture may have: four times the 256 of the largest
/// published ones (each expert is three parameters of its own).
static constexpr int64_t kMaxExperts = 1024;

/// Mixtral's experts: how many, how many per token, and the router's
/// options MixtralConfig has beside them.
static LogicalResult parseExperts(ConfigReader &reader, LlamaConfig &config) {
  FailureOr<int64_t> experts =
      reader.optionalPositiveInt("num_local_experts", 8);
  FailureOr<int64_t> perToken =
      reader.optionalPositiveInt("num_experts_per_tok", 2);
  FailureOr<double> jitter = reader.probability("router_jitter_noise", 0.0);
  FailureOr<bool> routerLogits = reader.boolean("output_router_logits", false);
  FailureOr<double> auxCoef =
      reader.nonNegativeNumber("router_aux_loss_coef", 0.001);
  if (failed(experts) || failed(perToken) || failed(jitter) ||
      failed(routerLogits) || failed(auxCoef))
    return failure();
  if (*experts > kMaxExperts)
    return reader.error("num_local_experts")
           << "is " << *experts << ", more than the largest supported "
           << "number of experts " << kMaxExperts;
  if (*perToken > *experts)
    return reader.error("num_experts_per_tok")
           << "is " << *perToken << ", more than num_local_experts "
           << *experts;
  // Jitter changes the training step Hugging Face computes: it multiplies
  // the router's input by noise.
  if (*jitter != 0.0)
    return reader.error("router_jitter_noise")
           << "is " << shown(*jitter) << "; only 0 (no noise) is supported";
  config.numExperts = *experts;
  config.expertsPerToken = *perToken;
  config.expertIntermediateSize = config.intermediateSize;
  // output_router_logits adds router_aux_loss_coef times the load-balancing
  // loss of all layers' routers to the loss (MixtralForCausalLM).
  config.routerAuxLossCoef = *routerLogits ? *auxCoef : 0.0;
  return success();
}

/// Qwen3-MoE's experts (Qwen3MoeConfig): Mixtral's routing under other
/// keys and names, an intermediate size of their own, and the layers that
/// are sparse: every decoder_sparse_step-th, except mlp_only_layers
/// (Qwen3MoeDecoderLayer's rule; the others have a dense MLP). Qwen2-MoE's
/// (Qwen2MoeConfig): the same, other defaults, and a shared expert of
/// shared_expert_intermediate_size beside the routed ones. OLMoE's
/// (OlmoeConfig): the same keys and names, every layer sparse, experts of
/// intermediate_size, its own defaults.
static LogicalResult parseNamedExperts(ConfigReader &reader,
                                       LlamaConfig &config) {
  bool olmoe = config.modelType == "olmoe";
  bool qwen2Moe = config.modelType == "qwen2_moe";
  FailureOr<int64_t> experts =
      olmoe ? reader.optionalPositiveInt("num_experts", 64)
            : reader.optionalNonNegativeInt("num_experts", qwen2Moe ? 60 : 128);
  FailureOr<int64_t> perToken =
      reader.optionalPositiveInt("num_experts_per_tok", qwen2Moe ? 4 : 8);
  FailureOr<int64_t> intermediate =
      olmoe ? FailureOr<int64_t>(config.intermediateSize)
            : reader.optionalPositiveInt("moe_intermediate_size",
                                         qwen2Moe ? 1408 : 768);
  FailureOr<int64_t> shared =
      qwen2Moe
          ? reader.optionalPositiveInt("shared_expert_intermediate_size", 5632)
          : FailureOr<int64_t>(0);
  FailureOr<int64_t> step =
      olmoe ? FailureOr<int64_t>(1)
            : reader.optionalPositiveInt("decoder_sparse_step", 1);
  FailureOr<bool> normalized = reader.boolean("norm_topk_prob", false);
  FailureOr<bool> routerLogits = reader.boolean("output_router_logits", false);
  FailureOr<double> auxCoef =
      reader.nonNegativeNumber("router_aux_loss_coef", olmoe ? 0.01 : 0.001);
  if (failed(experts) || failed(perToken) || failed(intermediate) ||
      failed(shared) || failed(step) || failed(normalized) ||
      failed(routerLogits) || failed(auxCoef))
    return failure();
  if (*experts > kMaxExperts)
    return reader.error("num_experts")
           << "is " << *experts << ", more than the largest supported "
           << "number of experts " << kMaxExperts;
  if (*experts > 0 && *perToken > *experts)
    return reader.error("num_experts_per_tok")
           << "is " << *perToken << ", more than num_experts " << *experts;
  std::vector<bool> sparse(size_t(config.numLayers), *experts > 0);
  for (int64_t layer = 0; layer < config.numLayers; ++layer)
    if ((layer + 1) % *step != 0)
      sparse[size_t(layer)] = false;
  if (const llvm::json::Value *dense = reader.json().get("mlp_only_layers");
      !olmoe && dense && !dense->getAsNull()) {
    const llvm::json::Array *list = dense->getAsArray();
    if (!list)
      return reader.error("mlp_only_layers")
             << "must be a list of layer indices";
    for (const llvm::json::Value &entry : *list) {
      std::optional<int64_t> layer = entry.getAsInteger();
      if (!layer || *layer < 0 || *layer >= config.numLayers)
        return reader.error("mlp_only_layers")
               << "holds " << llvm::formatv("{0}", entry).str()
               << ", not a layer index below num_hidden_layers "
               << config.numLayers;
      sparse[size_t(*layer)] = false;
    }
  }
  config.numExperts = *experts;
  config.expertsPerToken = *perToken;
  config.expertIntermediateSize = *intermediate;
  config.sharedExpertIntermediateSize = *shared;
  config.renormalizeWeights = *normalized;
  config.sparseLayers = std::move(sparse);
  config.expertNames = {"mlp", "gate_proj", "up_proj", "down_proj"};
  config.routerAuxLossCoef = *routerLogits ? *auxCoef : 0.0;
  return success();
}

/// SmolLM3's NoPE layers: no_rope_layers states per layer whether it
/// applies the rotary embedding (1) or not (0), at least one entry a layer;
/// without it, every no_rope_layer_interval-th layer has none
/// (SmolLM3Config's rule).
static LogicalResult parseRopeLayers(ConfigReader &reader,
                                     LlamaConfig &config) {
  FailureOr<int64_t> interval =
      reader.optionalPositiveInt("no_rope_layer_interval", 4);
  if (failed(interval))
    return failure();
  std::vector<bool> rope;
  for (int64_t layer = 0; layer < config.numLayers; ++layer)
    rope.push_back((layer + 1) % *interval != 0);
  if (const llvm::json::Value *given = reader.json().get("no_rope_layers");
      given && !given->getAsNull()) {
    const llvm::json::Array *list = given->getAsArray();
    if (!list || int64_t(list->size()) < config.numLayers)
      return reader.error("no_rope_layers")
             << "must be a list of at least num_hidden_layers ("
             << config.numLayers << ") entries, 1 or 0";
    for (int64_t layer = 0; layer < config.numLayers; ++layer) {
      std::optional<int64_t> entry = (*list)[size_t(layer)].getAsInteger();
      if (!entry || (*entry != 0 && *entry != 1))
        return reader.error("no_rope_layers")
               << "holds " << llvm::formatv("{0}", (*list)[size_t(layer)]).str()
               << " at layer " << layer
               << "; each entry is 1 (rotary embedding) or 0 (none)";
      rope[size_t(layer)] = *entry == 1;
    }
  }
  config.ropeLayers = std::move(rope);
  return success();
}

/// Gemma's MLP activation: GELU with the tanh approximation, which Gemma
/// was trained with. Gemma 2's and Gemma 3's MLPs read hidden_activation
/// ("gelu_pytorch_tanh" by default). Gemma 1's GemmaMLP first read
/// hidden_activation too (null: that approximation, whatever hidden_act
/// says), later transformers read hidden_act; the published configs state
/// hidden_act "gelu" beside hidden_activation "gelu_pytorch_tanh". So a
/// Gemma 1 hidden_activation, where given, must be the approximation, and
/// hidden_act must be it or "gelu", which is built as the approximation
/// too (as the older GemmaMLP and vLLM do), with a warning.
static LogicalResult parseGemmaActivation(ConfigReader &reader,
                                          LlamaConfig &config) {
  config.gateActivation = LlamaConfig::GateActivation::GeluTanh;
  const char *why = "Gemma's MLP is built with GELU's tanh approximation "
                    "(\"gelu_pytorch_tanh\") only";
  if (config.modelType != "gemma")
    return reader.oneOf("hidden_activation", {"gelu_pytorch_tanh"}, why);
  const llvm::json::Value *activation = reader.json().get("hidden_activation");
  if (activation && !activation->getAsNull() &&
      failed(reader.oneOf("hidden_activation", {"gelu_pytorch_tanh"}, why)))
    return failure();
  if (failed(reader.oneOf("hidden_act", {"gelu_pytorch_tanh", "gelu"}, why)))
    return failure();
  if (reader.json().getString("hidden_act") == StringRef("gelu"))
    emitWarning(reader.keyLoc("hidden_act"))
        << "config key 'hidden_act' is \"gelu\": building GELU's tanh "
           "approximation (\"gelu_pytorch_tanh\"), which Gemma was trained "
           "with and Hugging Face's GemmaMLP built from hidden_activation; "
           "transformers versions that read hidden_act compute the exact GELU";
  return success();
}

/// Gemma 2's and Gemma 3's attention and logits: the scores scaled by
/// query_pre_attn_scalar^-1/2 (their configs' default 256) instead of
/// head_dim's, and soft-capped (attn_logit_softcapping, by default 50 in
/// Gemma 2, none in Gemma 3); the logits soft-capped
/// (final_logit_softcapping, 30 in Gemma 2, none in Gemma 3). A null cap
/// is none. A cap the model does not apply (`unappliedCaps`: Gemma 3's
/// attention ignores attn_logit_softcapping, Gemma3ForConditionalGeneration
/// its text config's final_logit_softcapping) is warned about and dropped,
/// as Hugging Face drops it.
static LogicalResult parseGemmaAttention(ConfigReader &reader,
                                         LlamaConfig &config,
                                         bool cappedByDefault,
                                         ArrayRef<StringRef> unappliedCaps) {
  FailureOr<double> scalar =
      reader.positiveNumber("query_pre_attn_scalar", 256.0);
  if (failed(scalar))
    return failure();
  config.attentionScale = 1.0 / std::sqrt(*scalar);
  for (auto [key, fallback, cap] :
       {std::tuple<StringRef, double, std::optional<double> *>{
            "attn_logit_softcapping", 50.0, &config.attentionSoftcap},
        {"final_logit_softcapping", 30.0, &config.logitSoftcap}}) {
    const llvm::json::Value *value = reader.json().get(key);
    if ((value && value->getAsNull()) || (!value && !cappedByDefault))
      continue;
    if (llvm::is_contained(unappliedCaps, key)) {
      emitWarning(reader.keyLoc(key))
          << "config key '" << reader.keyName(key)
          << "' is ignored, as Hugging Face's "
          << (key == "attn_logit_softcapping"
                  ? "Gemma 3 attention ignores it"
                  : "Gemma3ForConditionalGeneration ignores it");
      continue;
    }
    FailureOr<double> given = reader.positiveNumber(key, fallback);
    if (failed(given))
      return failure();
    // The kernels divide by the cap in float32.
    if (failed(checkFloat32Factor(reader, key, *given, "a soft cap",
                                  "a float32 divisor")))
      return failure();
    *cap = *given;
  }
  return success();
}

/// The fields of a LLaMA-family config object (the file's, or a multimodal
/// config's text_config) read by `reader`, the model being `modelType`.
static FailureOr<LlamaConfig>
parseLlamaFields(ConfigReader &reader, StringRef modelType, bool multimodal) {
  const llvm::json::Object *object = &reader.json();
  LlamaConfig config;
  config.modelType = modelType.str();
  bool gemma2 = config.modelType == "gemma2";
  bool gemma3 = config.modelType == "gemma3_text";
  bool gemma = config.modelType == "gemma" || gemma2 || gemma3;
  if (gemma) {
    if (failed(parseGemmaActivation(reader, config)))
      return failure();
  } else if (failed(
                 reader.oneOf("hidden_act", {"silu"},
                              "only SwiGLU MLPs (\"silu\") are supported"))) {
    return failure();
  }

  auto assign = [](auto &field, auto result) {
    if (failed(result))
      return false;
    field = *result;
    return true;
  };
  bool qwen2 = config.modelType == "qwen2";
  bool llama = config.modelType == "llama";
  bool mixtral = config.modelType == "mixtral";
  bool qwen3Moe = config.modelType == "qwen3_moe";
  bool qwen3 = config.modelType == "qwen3" || qwen3Moe;
  bool qwen2Moe = config.modelType == "qwen2_moe";
  // Qwen2's and Qwen3's windowed layers (use_sliding_window,
  // max_window_layers, layer_types).
  bool qwenWindows = qwen2 || config.modelType == "qwen3";
  bool olmoe = config.modelType == "olmoe";
  bool olmo2 = config.modelType == "olmo2";
  bool granite = config.modelType == "granite";
  bool smollm3 = config.modelType == "smollm3";
  // Phi-3 (Phi-3, Phi-3.5 and Phi-4 language models): LLaMA's layer with
  // the q, k and v projections published as one qkv_proj, the gate and up
  // projections as one gate_up_proj.
  bool phi3 = config.modelType == "phi3";
  // Each family's default rotary base (SmolLM3Config's default_theta 2e6).
  double defaultTheta = mixtral || gemma3 ? 1e6 : smollm3 ? 2e6 : 10000.0;
  bool attentionBias = false, qwen2MoeQkvBias = true;
  double attentionDropout = 0.0, partialRotary = 1.0;
  // The sizes every family's config states; Gemma3TextConfig has defaults
  // for them (Gemma 3 1B's), which the multimodal configs' text_config
  // relies on, leaving out what the 4B, 12B and 27B share.
  auto size = [&](StringRef key, int64_t gemma3Default) {
    return gemma3 ? reader.optionalPositiveInt(key, gemma3Default)
                  : reader.positiveInt(key);
  };
  if (!assign(config.vocabSize, size("vocab_size", 262208)) ||
      !assign(config.hiddenSize, size("hidden_size", 2304)) ||
      !assign(config.intermediateSize, size("intermediate_size", 9216)) ||
      !assign(config.numLayers, gemma3 && !object->get("num_hidden_layers")
                                    ? FailureOr<int64_t>(26)
                                    : reader.layerCount("num_hidden_layers")) ||
      !assign(config.numHeads, size("num_attention_heads", 8)) ||
      !assign(config.maxPositions, size("max_position_embeddings", 131072)) ||
      !assign(config.rmsNormEpsilon,
              reader.positiveNumber(
                  "rms_norm_eps",
                  mixtral || olmoe || olmo2 || phi3 ? 1e-5 : 1e-6)) ||
      !assign(config.ropeTheta,
              rotaryBase(reader, "rope_theta", defaultTheta)) ||
      !assign(config.initializerRange,
              reader.positiveNumber("initializer_range", 0.02)) ||
      !assign(config.tieWordEmbeddings,
              reader.boolean("tie_word_embeddings", smollm3 || gemma)) ||
      !assign(attentionDropout, reader.probability("attention_dropout", 0.0)) ||
      !assign(partialRotary,
              reader.positiveNumber("partial_rotary_factor", 1.0)))
    return failure();
  // Hugging Face makes pad_token_id the embedding's padding_idx (a row
  // zero at init that no lookup trains); Megatron-LM, and this compiler,
  // train every row. Said, not refused: the pad token seldom occurs in
  // pretraining data, and fine-tuning that pads with it may want either.
  // Absent, it is the family's default: GemmaConfig's 0 (Gemma 2's, Gemma
  // 3's), OLMo2Config's and OlmoeConfig's 1, SmolLM3Config's 128004,
  // Phi3Config's 32000.
  std::optional<int64_t> familyPad = gemma ? std::optional<int64_t>(0)
                                     : olmo2 || olmoe
                                         ? std::optional<int64_t>(1)
                                     : smollm3 ? std::optional<int64_t>(128004)
                                     : phi3    ? std::optional<int64_t>(32000)
                                               : std::nullopt;
  if (const llvm::json::Value *pad = object->get("pad_token_id");
      pad && pad->getAsInteger())
    emitWarning(reader.keyLoc("pad_token_id"))
        << "config key 'pad_token_id' is " << *pad->getAsInteger()
        << ": Hugging Face freezes that embedding row (padding_idx) where "
           "megatron-mlir trains it, as Megatron-LM does";
  else if (!pad && familyPad)
    emitWarning(reader.keyLoc("model_type"))
        << "config has no 'pad_token_id', which is " << *familyPad
        << " by default for " << config.modelType
        << ": Hugging Face freezes that embedding row (padding_idx) where "
           "megatron-mlir trains it, as Megatron-LM does";
  // Hugging Face's default of each family for an absent
  // num_key_value_heads: LlamaConfig's is num_attention_heads,
  // MistralConfig's 8, Qwen2Config's and Qwen3Config's 32, Qwen3MoeConfig's
  // 4, Qwen2MoeConfig's 16. An explicit null is num_attention_heads in all
  // ("for backward compatibility").
  const llvm::json::Value *kvHeads = object->get("num_key_value_heads");
  bool explicitNull = kvHeads && kvHeads->getAsNull().has_value();
  if (!assign(config.numKeyValueHeads,
              reader.optionalPositiveInt("num_key_value_heads",
                                         llama || olmoe || olmo2 || granite ||
                                                 phi3 || explicitNull
                                             ? config.numHeads
                                         : qwen3Moe || smollm3 ? 4
                                         : gemma2 || gemma3    ? 4
                                         : qwen2Moe || gemma   ? 16
                                         : qwen2 || qwen3      ? 32
                                                               : 8)))
    return failure();
  // attention_bias and mlp_bias are Llama's (Qwen3 reads attention_bias
  // too): Hugging Face's Mistral and Qwen2 modules hard-code their biases
  // and never read them.
  if ((llama || qwen3 || olmoe || olmo2 || granite || smollm3 || gemma) &&
      !assign(attentionBias, reader.boolean("attention_bias", false)))
    return failure();
  if ((llama || granite || smollm3) &&
      !assign(config.mlpBias, reader.boolean("mlp_bias", false)))
    return failure();
  // Granite's multipliers (GraniteConfig's defaults 1; its attention
  // scale is attention_multiplier, 1 by default, not 1/sqrt(head_dim)).
  if (granite) {
    double attentionMultiplier = 1.0;
    if (!assign(config.embeddingMultiplier,
                reader.positiveNumber("embedding_multiplier", 1.0)) ||
        !assign(config.residualMultiplier,
                reader.positiveNumber("residual_multiplier", 1.0)) ||
        !assign(config.logitsScaling,
                reader.positiveNumber("logits_scaling", 1.0)) ||
        !assign(attentionMultiplier,
                reader.positiveNumber("attention_multiplier", 1.0)))
      return failure();
    // The graph multiplies by them (and by 1 / logits_scaling) in float32:
    // each, and its reciprocal, must be a float far from 0 and infinity.
    for (auto [key, value] :
         {std::pair<StringRef, double>{"embedding_multiplier",
                                       config.embeddingMultiplier},
          {"residual_multiplier", config.residualMultiplier},
          {"logits_scaling", config.logitsScaling},
          {"attention_multiplier", attentionMultiplier}})
      if (failed(checkFloat32Factor(
              reader, key, value, "Granite's multipliers",
              "float32 factors, and so must their reciprocals")))
        return failure();
    config.attentionScale = attentionMultiplier;
  }
  // Qwen2-MoE's q, k and v biases (Qwen2MoeConfig's qkv_bias, true unless
  // a config says otherwise).
  if (qwen2Moe && !assign(qwen2MoeQkvBias, reader.boolean("qkv_bias", true)))
    return failure();
  // Without head_dim, the heads split hidden_size evenly (LlamaConfig
  // refuses a hidden size that is not a multiple of the heads).
  // Qwen3Config's default head_dim is 128 whatever the hidden size,
  // GemmaConfig's 256.
  bool defaultHeadDim = config.modelType == "qwen3" || gemma;
  // (An explicit null is no head_dim: the heads split hidden_size.)
  const llvm::json::Value *headDimKey = object->get("head_dim");
  bool headDimGiven = headDimKey && !headDimKey->getAsNull();
  if (!headDimGiven && !defaultHeadDim &&
      config.hiddenSize % config.numHeads != 0)
    return reader.error("hidden_size")
           << "is " << config.hiddenSize
           << ", not a multiple of num_attention_heads " << config.numHeads
           << " (and no head_dim is given)";
  if (!assign(config.headDim,
              reader.optionalPositiveInt(
                  "head_dim", defaultHeadDim
                                  ? (gemma ? 256 : 128)
                                  : config.hiddenSize / config.numHeads)))
    return failure();
  if (partialRotary != 1.0) {
    return reader.error("partial_rotary_factor")
           << "is " << shown(partialRotary)
           << "; only rotary embedding of the whole head (1) is supported";
  }
  // Qwen2 always has q, k and v biases and no output bias; Llama's
  // attention_bias puts a bias on all four; Mistral has none.
  config.qkvBias = qwen2 || attentionBias || (qwen2Moe && qwen2MoeQkvBias);
  config.outputBias = !qwen2 && attentionBias;
  config.qkNorm = qwen3 || gemma3  ? LlamaConfig::QKNorm::PerHead
                  : olmoe || olmo2 ? LlamaConfig::QKNorm::Projection
                                   : LlamaConfig::QKNorm::None;
  config.normPlacement = olmo2 ? LlamaConfig::NormPlacement::Post
                         : gemma2 || gemma3
                             ? LlamaConfig::NormPlacement::PreAndPost
                             : LlamaConfig::NormPlacement::Pre;
  // Gemma's norms scale by 1 + weight, and its embeddings are multiplied
  // by sqrt(hidden_size) rounded to the activations' type (GemmaModel's
  // normalizer, a float32 here).
  config.zeroCenteredNorms = gemma;
  if (gemma)
    config.embeddingMultiplier =
        double(float(std::sqrt(double(config.hiddenSize))));
  SmallVector<StringRef> unappliedCaps;
  if (gemma3)
    unappliedCaps.push_back("attn_logit_softcapping");
  if (multimodal)
    unappliedCaps.push_back("final_logit_softcapping");
  if ((gemma2 || gemma3) &&
      failed(parseGemmaAttention(reader, config, /*cappedByDefault=*/gemma2,
                                 unappliedCaps)))
    return failure();
  // Gemma 3's sliding-window layers turn by their own base, unscaled.
  if (gemma3) {
    FailureOr<double> local =
        rotaryBase(reader, "rope_local_base_freq", 10000.0);
    if (failed(local))
      return failure();
    config.localRopeTheta = *local;
  }
  // OLMoE's q_norm has hidden_size weights: its heads must fill it.
  if (olmoe && config.numHeads * config.headDim != config.hiddenSize)
    return reader.error("head_dim")
           << "is " << config.headDim << "; OLMoE's q_norm spans hidden_size "
           << config.hiddenSize << ", so num_attention_heads x head_dim must "
           << "equal it";
  // clip_qkv clamps the projections (OLMoE's, when set): not built.
  if (const llvm::json::Value *clip = object->get("clip_qkv");
      clip && !clip->getAsNull())
    return reader.error("clip_qkv")
           << "is " << llvm::formatv("{0}", *clip).str()
           << "; only null (no clamping) is supported";
  if (attentionDropout != 0.0) {
    return reader.error("attention_dropout")
           << "is " << shown(attentionDropout)
           << "; only 0 is supported for LLaMA-family models";
  }
  // Phi-3's dropouts of the embeddings and of each sublayer's output
  // (0 in every published config).
  if (phi3)
    for (StringRef key : {"embd_pdrop", "resid_pdrop"}) {
      FailureOr<double> dropout = reader.probability(key, 0.0);
      if (failed(dropout))
        return failure();
      if (*dropout != 0.0)
        return reader.error(key)
               << "is " << shown(*dropout) << "; only 0 is supported for phi3";
    }
  config.fusedProjections = phi3;
  if (config.numHeads % config.numKeyValueHeads != 0)
    return reader.error("num_key_value_heads")
           << "is " << config.numKeyValueHeads
           << ", not a divisor of num_attention_heads " << config.numHeads;
  if (config.headDim % 2 != 0) {
    if (!headDimGiven)
      return reader.error("hidden_size")
             << "over num_attention_heads gives heads of " << config.headDim
             << ": rotary embedding needs an even head dimension";
    return reader.error("head_dim")
           << "is " << config.headDim << ": rotary embedding needs it even";
  }
  // Mistral's sliding window (absent: 4096, as Hugging Face's MistralConfig
  // and Qwen2Config default it; null: none); Qwen2 states use_sliding_window
  // (false in its published configs) and windows only the layers from
  // max_window_layers on (Hugging Face's default 28). A plain Llama has
  // none.
  // (OLMoE's, OLMo2's and Granite's attention read a sliding_window their
  // configs never set; Gemma's reads none.)
  bool sliding = config.modelType != "llama" && !olmoe && !olmo2 && !granite &&
                 config.modelType != "gemma";
  if ((qwenWindows || qwen3Moe || qwen2Moe || smollm3) &&
      !assign(sliding, reader.boolean("use_sliding_window", false)))
    return failure();
  // Qwen3-MoE's attention reads sliding_window apart from the layer types
  // Qwen2 and Qwen3 window by, and Qwen2-MoE windows every other layer
  // below max_window_layers; neither is built.
  if ((qwen3Moe || qwen2Moe || smollm3) && sliding)
    return reader.error("use_sliding_window")
           << "is true; only false (no window) is supported for "
           << config.modelType;
  // (MixtralConfig's and Phi3Config's default is None: no window.)
  int64_t defaultWindow =
      object->get("sliding_window") || mixtral || phi3 ? 0 : 4096;
  if (sliding &&
      !assign(config.slidingWindow,
              reader.optionalPositiveInt("sliding_window", defaultWindow)))
    return failure();
  if (sliding && qwenWindows &&
      !assign(config.firstWindowedLayer,
              reader.optionalNonNegativeInt("max_window_layers", 28)))
    return failure();
  // Hugging Face's Qwen2 windows the layers its layer_types names
  // "sliding_attention" (derived from max_window_layers when absent).
  // Gemma 2 and Gemma 3 window all layers but every pattern-th (Gemma 2's
  // every other from the first, Gemma 3's sliding_window_pattern, 6)
  // unless their layer_types says otherwise.
  if (sliding && (gemma2 || gemma3)) {
    FailureOr<int64_t> pattern =
        gemma2 ? FailureOr<int64_t>(2)
               : reader.optionalPositiveInt("sliding_window_pattern", 6);
    if (failed(pattern))
      return failure();
    for (int64_t layer = 0; layer < config.numLayers; ++layer)
      config.windowedLayers.push_back((layer + 1) % *pattern != 0);
  }
  if (const llvm::json::Value *types = object->get("layer_types");
      sliding && (qwenWindows || gemma2 || gemma3) && types &&
      !types->getAsNull()) {
    config.windowedLayers.clear();
    const llvm::json::Array *list = types->getAsArray();
    if (!list || int64_t(list->size()) != config.numLayers)
      return reader.error("layer_types")
             << "must be a list of num_hidden_layers (" << config.numLayers
             << ") strings";
    for (const llvm::json::Value &type : *list) {
      std::optional<StringRef> name = type.getAsString();
      if (!name || (*name != "sliding_attention" && *name != "full_attention"))
        return reader.error("layer_types")
               << "holds " << llvm::formatv("{0}", type).str()
               << "; each layer is \"sliding_attention\" or "
                  "\"full_attention\"";
      config.windowedLayers.push_back(*name == "sliding_attention");
    }
  }

  if (smollm3 && failed(parseRopeLayers(reader, config)))
    return failure();
  if (mixtral && failed(parseExperts(reader, config)))
    return failure();
  if ((qwen3Moe || qwen2Moe || olmoe) &&
      failed(parseNamedExperts(reader, config)))
    return failure();

  // The rotary embedding: rope_theta and rope_scaling, or, in configs that
  // transformers 5 writes, both in one rope_parameters object (Gemma 3's
  // one per layer type). `scaling` reads the object the scaling is in.
  const llvm::json::Object *scalingFields = nullptr;
  std::optional<ConfigReader> scaling;
  StringRef scalingKey = "rope_scaling";
  if (const llvm::json::Value *parameters = object->get("rope_parameters");
      parameters && !parameters->getAsNull()) {
    scalingKey = "rope_parameters";
    scalingFields = parameters->getAsObject();
    if (!scalingFields)
      return reader.error(scalingKey) << "must be an object or null";
    if (object->get("rope_theta") || object->get("rope_scaling"))
      return reader.error(scalingKey)
             << "and rope_theta or rope_scaling both state the rotary "
                "embedding: keep one";
    scaling.emplace(reader.nested(*scalingFields, scalingKey));
    const llvm::json::Value *full = scalingFields->get("full_attention");
    const llvm::json::Value *sliding = scalingFields->get("sliding_attention");
    if (full || sliding) {
      // Gemma 3's: the global layers' embedding, and the sliding layers'
      // (rope_local_base_freq before transformers 5), unscaled.
      if (!gemma3)
        return reader.error(scalingKey)
               << "is keyed by layer type (full_attention, "
                  "sliding_attention), as only Gemma 3's configs are";
      if (object->get("rope_local_base_freq"))
        return reader.error(scalingKey)
               << "and rope_local_base_freq both state the sliding layers' "
                  "rotary base: keep one";
      if (sliding) {
        const llvm::json::Object *fields = sliding->getAsObject();
        if (!fields)
          return scaling->error("sliding_attention") << "must be an object";
        ConfigReader local = scaling->nested(*fields, "sliding_attention");
        std::optional<StringRef> type = fields->getString("rope_type");
        if (type && *type != "default")
          return local.error("rope_type")
                 << "is \"" << *type
                 << "\"; Gemma 3's sliding layers turn unscaled (\"default\")";
        FailureOr<double> base = rotaryBase(local, "rope_theta", 10000.0);
        if (failed(base))
          return failure();
        config.localRopeTheta = *base;
      }
      scalingFields = nullptr;
      if (full) {
        scalingFields = full->getAsObject();
        if (!scalingFields)
          return scaling->error("full_attention") << "must be an object";
        scaling.emplace(scaling->nested(*scalingFields, "full_attention"));
      } else {
        scaling.reset();
      }
    }
    if (scaling && !assign(config.ropeTheta,
                           rotaryBase(*scaling, "rope_theta", defaultTheta)))
      return failure();
  } else if (const llvm::json::Value *value = object->get("rope_scaling");
             value && !value->getAsNull()) {
    scalingFields = value->getAsObject();
    if (!scalingFields)
      return reader.error(scalingKey) << "must be an object or null";
    scaling.emplace(reader.nested(*scalingFields, scalingKey));
  }
  if (scalingFields) {
    std::optional<StringRef> type = scalingFields->getString("rope_type");
    if (!type)
      type = scalingFields->getString("type");
    // "default" is Hugging Face's unscaled rotary embedding.
    bool unscaled = type && *type == "default";
    bool linear = type && *type == "linear";
    if (!unscaled && !linear && (!type || *type != "llama3"))
      return reader.error(scalingKey)
             << "has rope_type \"" << (type ? *type : "") << "\"; only "
             << "\"default\", \"linear\" and \"llama3\" are supported";
    if (linear) {
      // Position interpolation: every frequency divided by the factor.
      if (!assign(config.linearRopeFactor,
                  scaling->requiredPositiveNumber("factor")))
        return failure();
    } else if (!unscaled) {
      // Hugging Face's llama3 frequencies read all four keys.
      ConfigReader &nested = *scaling;
      Llama3RopeScaling llama3;
      if (!assign(llama3.factor, nested.requiredPositiveNumber("factor")) ||
          !assign(llama3.lowFreqFactor,
                  nested.requiredPositiveNumber("low_freq_factor")) ||
          !assign(llama3.highFreqFactor,
                  nested.requiredPositiveNumber("high_freq_factor")) ||
          !assign(llama3.originalMaxPositions,
                  nested.positiveInt("original_max_position_embeddings")))
        return failure();
      if (!(llama3.highFreqFactor > llama3.lowFreqFactor))
        return reader.error(scalingKey)
               << "needs high_freq_factor > low_freq_factor";
      config.ropeScaling = llama3;
    }
  }
  return config;
}

FailureOr<LlamaConfig> mlir::mt::parseLlamaConfig(StringRef json,
                                                  Location loc) {
  FailureOr<llvm::json::Value> parsed = parseConfigObject(json, loc);
  if (failed(parsed))
    return failure();
  const llvm::json::Object *object = parsed->getAsObject();
  ConfigReader reader(*object, json, loc);
  std::optional<StringRef> type = object->getString("model_type");
  if (!type || !isLlamaFamily(*type))
    return reader.error("model_type")
           << "is not a LLaMA-family model ("
           << llamaFamilyList(/*quoted=*/false, ", ") << ")";
  if (*type != "gemma3")
    return parseLlamaFields(reader, *type, /*multimodal=*/false);
  // Gemma 3's multimodal configs (Gemma3ForConditionalGeneration, 4B and
  // larger): the text model is text_config's, its weights are under
  // language_model. in the checkpoint, and the vision tower is not built.
  const llvm::json::Value *text = object->get("text_config");
  if (!text)
    return reader.missing("text_config") << " (a gemma3 config's text model)";
  const llvm::json::Object *textFields = text->getAsObject();
  if (!textFields)
    return reader.error("text_config") << "must be an object";
  ConfigReader textReader = reader.nested(*textFields, "text_config");
  if (std::optional<StringRef> textType = textFields->getString("model_type");
      textType && *textType != "gemma3_text")
    return textReader.error("model_type")
           << "is \"" << *textType
           << "\"; a gemma3 config's text model is \"gemma3_text\"";
  FailureOr<LlamaConfig> config =
      parseLlamaFields(textReader, "gemma3_text", /*multimodal=*/true);
  if (failed(config))
    return failure();
  config->checkpointPrefix = "language_model.";
  // Hugging Face initializes the whole model by the top-level
  // initializer_range (Gemma3Config's), not text_config's.
  FailureOr<double> range =
      reader.positiveNumber("initializer_range", config->initializerRange);
  if (failed(range))
    return failure();
  config->initializerRange = *range;
  return config;
}

namespace {
/// Builds the LLaMA forward function. Parameters are declared first, in
/// the Hugging Face state dict's order, then the body looks them up by name.
class LlamaBuilder : public mt::detail::ModelBuilder<LlamaBuilder> {
  friend ModelBuilder;

public:
  LlamaBuilder(const LlamaConfig &config, MicroBatchShape shape, Location loc)
      : ModelBuilder(shape, loc), config(config) {
    namePrefix = config.checkpointPrefix;
  }

private:
  /// A linear layer's weight ([out, in]) and optional bias, with
  /// Megatron's roles: column-parallel splits the output features
  /// (dimension 0), row-parallel the input features (dimension 1, its bias
  /// replicated).
  void declareLinear(const std::string &name, int64_t out, int64_t in,
                     bool column, bool bias) {
    using Kind = ParallelRole::Kind;
    declare(name + ".weight", {out, in},
            column ? ParallelRole{Kind::Column, 0, 1}
                   : ParallelRole{Kind::Row, 1, 1},
            normal());
    if (bias)
      declare(name + ".bias", {out},
              column ? ParallelRole{Kind::Column, 0, 1}
                     : ParallelRole{Kind::Replicated, -1, 1},
              {ParamInitializer::Kind::Zeros, 0});
  }

  ParamInitializer normal() const {
    return {ParamInitializer::Kind::Normal, config.initializerRange};
  }

  /// An RMSNorm weight: ones, or Gemma's zero-centered zeros (a scale of 1
  /// either way).
  void declareNorm(const std::string &name, int64_t width = 0) {
    declare(name, {width ? width : config.hiddenSize},
            {ParallelRole::Kind::Replicated, -1, 1},
            {config.zeroCenteredNorms ? ParamInitializer::Kind::Zeros
                                      : ParamInitializer::Kind::Ones,
             0});
  }

  /// Whether `layer`'s MLP is a mixture of experts.
  bool isSparse(int64_t layer) const {
    if (config.numExperts == 0)
      return false;
    return config.sparseLayers.empty() || config.sparseLayers[size_t(layer)];
  }

  /// Parameters in the order of Hugging Face's state dict.
  void declareParameters() {
    int64_t d = config.hiddenSize, hd = config.headDim;
    declare("model.embed_tokens.weight", {config.vocabSize, d},
            {ParallelRole::Kind::Vocab, 0, 1}, normal());
    for (int64_t layer = 0; layer < config.numLayers; ++layer) {
      std::string p = "model.layers." + std::to_string(layer) + ".";
      if (config.normPlacement != LlamaConfig::NormPlacement::Post)
        declareNorm(p + "input_layernorm.weight");
      // Phi-3 publishes q, k and v as the rows of one qkv_proj, in that
      // order.
      std::string qkv = p + "self_attn.qkv_proj.weight";
      int64_t qRows = config.numHeads * hd,
              kvRows = config.numKeyValueHeads * hd;
      declareLinear(p + "self_attn.q_proj", qRows, d, true, config.qkvBias);
      if (config.fusedProjections)
        storedIn(qkv, 0);
      declareLinear(p + "self_attn.k_proj", kvRows, d, true, config.qkvBias);
      if (config.fusedProjections)
        storedIn(qkv, qRows);
      declareLinear(p + "self_attn.v_proj", kvRows, d, true, config.qkvBias);
      if (config.fusedProjections)
        storedIn(qkv, qRows + kvRows);
      declareLinear(p + "self_attn.o_proj", d, config.numHeads * hd, false,
                    config.outputBias);
      if (config.qkNorm != LlamaConfig::QKNorm::None) {
        bool perHead = config.qkNorm == LlamaConfig::QKNorm::PerHead;
        declareNorm(p + "self_attn.q_norm.weight",
                    perHead ? hd : config.numHeads * hd);
        declareNorm(p + "self_attn.k_norm.weight",
                    perHead ? hd : config.numKeyValueHeads * hd);
      }
      // (OLMo2's and Gemma 2's norms follow the MLP in their state dicts.)
      if (config.normPlacement == LlamaConfig::NormPlacement::Pre)
        declareNorm(p + "post_attention_layernorm.weight");
      if (isSparse(layer)) {
        declareExperts(p + config.expertNames.block + ".");
      } else {
        // Phi-3 publishes gate and up as the rows of one gate_up_proj.
        std::string gateUp = p + "mlp.gate_up_proj.weight";
        declareLinear(p + "mlp.gate_proj", config.intermediateSize, d, true,
                      config.mlpBias);
        if (config.fusedProjections)
          storedIn(gateUp, 0);
        declareLinear(p + "mlp.up_proj", config.intermediateSize, d, true,
                      config.mlpBias);
        if (config.fusedProjections)
          storedIn(gateUp, config.intermediateSize);
        declareLinear(p + "mlp.down_proj", d, config.intermediateSize, false,
                      config.mlpBias);
      }
      if (config.normPlacement != LlamaConfig::NormPlacement::Pre) {
        declareNorm(p + "post_attention_layernorm.weight");
        if (config.normPlacement == LlamaConfig::NormPlacement::PreAndPost)
          declareNorm(p + "pre_feedforward_layernorm.weight");
        declareNorm(p + "post_feedforward_layernorm.weight");
      }
    }
    declareNorm("model.norm.weight");
    if (!config.tieWordEmbeddings)
      declare("lm_head.weight", {config.vocabSize, d},
              {ParallelRole::Kind::Vocab, 0, 1}, normal());
  }

  /// The router (`gate`, [experts, hidden]) and each expert's SwiGLU:
  /// gate and up [intermediate, hidden], down [hidden, intermediate]
  /// (Mixtral's w1, w3 and w2, declared in that checkpoint's order w1, w2,
  /// w3; Qwen3-MoE's gate_proj, up_proj, down_proj). The router is
  /// replicated; each expert's projections state Megatron's column and row
  /// roles, as a dense MLP's.
  void declareExperts(const std::string &p) {
    int64_t d = config.hiddenSize, inter = config.expertIntermediateSize;
    const LlamaConfig::ExpertNames &names = config.expertNames;
    declare(p + "gate.weight", {config.numExperts, d},
            {ParallelRole::Kind::Replicated, -1, 1}, normal());
    bool downSecond = names.down == "w2";
    for (int64_t e = 0; e < config.numExperts; ++e) {
      std::string expert = p + "experts." + std::to_string(e) + ".";
      declareLinear(expert + names.gate, inter, d, true, false);
      if (downSecond)
        declareLinear(expert + names.down, d, inter, false, false);
      declareLinear(expert + names.up, inter, d, true, false);
      if (!downSecond)
        declareLinear(expert + names.down, d, inter, false, false);
    }
    // Qwen2-MoE's shared expert, a dense SwiGLU MLP (Megatron's column and
    // row roles), and its gate [1, hidden], replicated as the router is.
    if (int64_t shared = config.sharedExpertIntermediateSize) {
      declareLinear(p + "shared_expert.gate_proj", shared, d, true, false);
      declareLinear(p + "shared_expert.up_proj", shared, d, true, false);
      declareLinear(p + "shared_expert.down_proj", d, shared, false, false);
      declare(p + "shared_expert_gate.weight", {1, d},
              {ParallelRole::Kind::Replicated, -1, 1}, normal());
    }
  }

  RankedTensorType heads(int64_t count) {
    return RankedTensorType::get(
        {shape.batchSize, count, shape.seqLength, config.headDim}, floatType);
  }

  /// x W^T (+ b) for an nn.Linear weight [out, in].
  Value linear(Value x, const std::string &name, int64_t out) {
    Value y = inLayer(MatmulOp::create(builder, loc, activation(out), x,
                                       param(name + ".weight"),
                                       /*transpose_a=*/false,
                                       /*transpose_b=*/true))
                  .getResult();
    if (has(name + ".bias"))
      y = inLayer(BiasAddOp::create(builder, loc, y.getType(), y,
                                    param(name + ".bias")))
              .getResult();
    return y;
  }

  /// Qwen3's RMSNorm of each head ([batch, heads, seq, head_dim]) over its
  /// head dimension, with the weight `name`.
  Value headNorm(Value x, const std::string &name) {
    return config.qkNorm == LlamaConfig::QKNorm::PerHead ? rmsNorm(x, name) : x;
  }

  /// OLMoE's RMSNorm of a whole query or key projection
  /// ([batch, seq, heads * head_dim]) before it splits into heads.
  Value projectionNorm(Value x, const std::string &name) {
    return config.qkNorm == LlamaConfig::QKNorm::Projection ? rmsNorm(x, name)
                                                            : x;
  }

  Value rmsNorm(Value x, const std::string &name) {
    return inLayer(RMSNormOp::create(
                       builder, loc, x.getType(), x, param(name),
                       builder.getF64FloatAttr(config.rmsNormEpsilon),
                       config.zeroCenteredNorms ? builder.getUnitAttr()
                                                : UnitAttr()))
        .getResult();
  }

  Value rope(Value x) {
    // SmolLM3's NoPE layers leave the queries and keys as they are.
    if (!config.ropeLayers.empty() && currentLayer >= 0 &&
        !config.ropeLayers[size_t(currentLayer)])
      return x;
    // Gemma 3's windowed layers: their own base, no scaling.
    bool local = config.localRopeTheta && windowedLayer();
    FloatAttr factor, low, high, linear;
    IntegerAttr original;
    if (config.linearRopeFactor && !local)
      linear = builder.getF64FloatAttr(*config.linearRopeFactor);
    if (config.ropeScaling && !local) {
      factor = builder.getF64FloatAttr(config.ropeScaling->factor);
      low = builder.getF64FloatAttr(config.ropeScaling->lowFreqFactor);
      high = builder.getF64FloatAttr(config.ropeScaling->highFreqFactor);
      original =
          builder.getI64IntegerAttr(config.ropeScaling->originalMaxPositions);
    }
    double theta = local ? *config.localRopeTheta : config.ropeTheta;
    return inLayer(RopeOp::create(builder, loc, x.getType(), x,
                                  builder.getF64FloatAttr(theta), factor, low,
                                  high, original, linear,
                                  /*inverse=*/nullptr))
        .getResult();
  }

  /// The sliding window as the current layer's attention `window`, where
  /// the layer has one and the sequence is longer than it (shorter, every
  /// key is inside it: no mask to add).
  IntegerAttr slidingWindow() {
    if (config.slidingWindow <= 0 || shape.seqLength <= config.slidingWindow ||
        !windowedLayer())
      return nullptr;
    return builder.getI64IntegerAttr(config.slidingWindow);
  }

  /// Whether the current layer is a sliding-window layer.
  /// (Gemma 3's rotary base follows the layer's type even without a
  /// window.)
  bool windowedLayer() const {
    if (currentLayer < 0)
      return false;
    return config.windowedLayers.empty()
               ? currentLayer >= config.firstWindowedLayer
               : config.windowedLayers[size_t(currentLayer)];
  }

  /// The attention of layer `p` on its (normalized) input `n`.
  Value attentionBlock(Value n, const std::string &p) {
    int64_t h = config.numHeads, kv = config.numKeyValueHeads;
    int64_t hd = config.headDim;
    auto split = [&](Value projected, int64_t count) {
      return inLayer(SplitHeadsOp::create(builder, loc, TypeRange{heads(count)},
                                          projected))
          .getResult(0);
    };
    std::string qNorm = p + "self_attn.q_norm.weight";
    std::string kNorm = p + "self_attn.k_norm.weight";
    Value q = rope(headNorm(
        split(projectionNorm(linear(n, p + "self_attn.q_proj", h * hd), qNorm),
              h),
        qNorm));
    Value k = rope(headNorm(
        split(projectionNorm(linear(n, p + "self_attn.k_proj", kv * hd), kNorm),
              kv),
        kNorm));
    Value v = split(linear(n, p + "self_attn.v_proj", kv * hd), kv);
    if (kv != h) {
      IntegerAttr groups = builder.getI64IntegerAttr(h / kv);
      k = inLayer(RepeatKVOp::create(builder, loc, heads(h), k, groups))
              .getResult();
      v = inLayer(RepeatKVOp::create(builder, loc, heads(h), v, groups))
              .getResult();
    }
    Value attended =
        inLayer(AttentionOp::create(
                    builder, loc, heads(h), q, k, v,
                    builder.getF64FloatAttr(0.0),
                    config.attentionScale
                        ? builder.getF64FloatAttr(*config.attentionScale)
                        : FloatAttr(),
                    /*rng_stream=*/nullptr, slidingWindow(),
                    config.attentionSoftcap
                        ? builder.getF64FloatAttr(*config.attentionSoftcap)
                        : FloatAttr()))
            .getResult();
    Value merged = inLayer(MergeHeadsOp::create(builder, loc,
                                                activation(h * hd), attended))
                       .getResult();
    return linear(merged, p + "self_attn.o_proj", config.hiddenSize);
  }

  Value mlpBlock(Value n, const std::string &p) {
    return gatedMLP(n, p + "mlp.", config.intermediateSize);
  }

  /// down(act(gate(n)) * up(n)) with the projections `p`gate_proj,
  /// `p`up_proj and `p`down_proj: SwiGLU (act = SiLU), or Gemma's GeGLU
  /// (GELU, tanh approximation).
  Value gatedMLP(Value n, const std::string &p, int64_t intermediate) {
    Value gate = linear(n, p + "gate_proj", intermediate);
    Value up = linear(n, p + "up_proj", intermediate);
    Value act = config.gateActivation == LlamaConfig::GateActivation::GeluTanh
                    ? inLayer(GeluOp::create(builder, loc, gate)).getResult()
                    : inLayer(SiluOp::create(builder, loc, gate)).getResult();
    Value gated = inLayer(MulOp::create(builder, loc, act, up)).getResult();
    return linear(gated, p + "down_proj", config.hiddenSize);
  }

  /// Mixtral's sparse MoE MLP (MixtralSparseMoeBlock; Qwen3-MoE's
  /// Qwen3MoeSparseMoeBlock): the router's top-k experts per token, each
  /// token's rows through its experts' SwiGLU, summed back weighted by the
  /// softmax of the chosen logits (or, without norm_topk_prob, by the chosen
  /// experts' probabilities among all); with Qwen2-MoE's shared expert, plus
  /// that expert's output scaled by sigmoid(shared_expert_gate(n)).
  Value moeBlock(Value n, const std::string &p) {
    const LlamaConfig::ExpertNames &names = config.expertNames;
    std::string q = p + names.block + ".";
    int64_t experts = config.numExperts, k = config.expertsPerToken;
    // A row per token and choice, or the experts' capacity rows.
    int64_t rows = routedRows(shape.batchSize * shape.seqLength, k, experts,
                              config.expertCapacityFactor);
    Value logits = linear(n, q + "gate", experts);
    RankedTensorType choices = activation(k);
    auto routing =
        RankedTensorType::get(choices.getShape(), builder.getI32Type());
    auto gating = inLayer(
        TopKGatingOp::create(builder, loc, choices, routing, logits, k,
                             /*unnormalized=*/!config.renormalizeWeights));
    // The router's statistics for the load-balancing loss, which sums
    // every layer's after the head.
    if (config.routerAuxLossCoef > 0.0 || config.perLayerAuxLossCoef > 0.0) {
      auto perExpert = RankedTensorType::get({experts}, floatType);
      auto statistics = inLayer(RouterStatisticsOp::create(
          builder, loc, perExpert, perExpert, logits, gating.getExperts()));
      routerLoads.push_back(statistics.getLoad());
      routerProbabilities.push_back(statistics.getProbability());
    }
    // Megatron-LM's router z-loss, on the layer's stage (a pipeline sends
    // the scalar on, not the logits), added to the loss after the head.
    if (config.routerZLossCoef > 0.0)
      routerZLosses.push_back(inLayer(RouterZLossOp::create(
          builder, loc, RankedTensorType::get({}, builder.getF32Type()), logits,
          builder.getF64FloatAttr(config.routerZLossCoef))));
    // With a capacity, the experts' rows are their capacity's, and the
    // probs policy ranks an expert's choices by their gate weights.
    FloatAttr capacityFactor =
        config.expertCapacityFactor
            ? builder.getF64FloatAttr(*config.expertCapacityFactor)
            : FloatAttr();
    IntegerAttr capacityExperts =
        capacityFactor ? builder.getI64IntegerAttr(experts) : IntegerAttr();
    Value rankedBy = capacityFactor && config.tokenDropPolicy ==
                                           LlamaConfig::TokenDropPolicy::Probs
                         ? gating.getWeights()
                         : Value();
    auto route = inLayer(MoeRouteOp::create(
        builder, loc, routing,
        RankedTensorType::get({experts + 1}, builder.getI32Type()),
        gating.getExperts(), rankedBy, experts, capacityFactor));
    auto rowType = [&](int64_t width) {
      return RankedTensorType::get({rows, width}, floatType);
    };
    Value tokenRows =
        inLayer(MoePermuteOp::create(builder, loc, rowType(config.hiddenSize),
                                     n, route.getPositions(),
                                     /*weights=*/Value(), capacityFactor,
                                     capacityExperts))
            .getRows();
    auto expertLinear = [&](Value input, StringRef name, int64_t width) {
      SmallVector<Value> weights;
      for (int64_t e = 0; e < experts; ++e)
        weights.push_back(param(q + "experts." + std::to_string(e) + "." +
                                name.str() + ".weight"));
      return inLayer(GroupedMatmulOp::create(builder, loc, rowType(width),
                                             input, route.getOffsets(), weights,
                                             /*transpose_b=*/true))
          .getResult();
    };
    Value gate =
        expertLinear(tokenRows, names.gate, config.expertIntermediateSize);
    Value up = expertLinear(tokenRows, names.up, config.expertIntermediateSize);
    Value act = inLayer(SiluOp::create(builder, loc, gate)).getResult();
    Value gated = inLayer(MulOp::create(builder, loc, act, up)).getResult();
    Value down = expertLinear(gated, names.down, config.hiddenSize);
    Value routed = inLayer(MoeUnpermuteOp::create(
                               builder, loc, activation(config.hiddenSize),
                               down, route.getPositions(), gating.getWeights(),
                               capacityFactor, capacityExperts))
                       .getResult();
    if (!config.sharedExpertIntermediateSize)
      return routed;
    Value shared =
        gatedMLP(n, q + "shared_expert.", config.sharedExpertIntermediateSize);
    Value gateLogit = linear(n, q + "shared_expert_gate", 1);
    return add(routed,
               inLayer(SigmoidGateOp::create(builder, loc, shared, gateLogit))
                   .getResult());
  }

  Value add(Value a, Value b) {
    return inLayer(AddOp::create(builder, loc, a, b)).getResult();
  }

  /// `factor * x` (x itself for 1).
  Value scaled(Value x, double factor) {
    if (factor == 1.0)
      return x;
    return inLayer(ScaleOp::create(builder, loc, x,
                                   builder.getF64FloatAttr(factor)))
        .getResult();
  }

  /// The residual add: Granite scales the sublayer's output first.
  Value residual(Value x, Value sublayer) {
    return add(x, scaled(sublayer, config.residualMultiplier));
  }

  Value buildBody(Value ids, Value labels) {
    Value x =
        scaled(EmbeddingOp::create(builder, loc, activation(config.hiddenSize),
                                   param("model.embed_tokens.weight"), ids),
               config.embeddingMultiplier);
    for (int64_t layer = 0; layer < config.numLayers; ++layer) {
      currentLayer = layer;
      std::string p = "model.layers." + std::to_string(layer) + ".";
      // Pre-norm (Llama's: each sublayer reads its input normalized),
      // OLMo2's post-norm (each sublayer's output normalized before the
      // residual add) or Gemma 2's both.
      using Placement = LlamaConfig::NormPlacement;
      bool pre = config.normPlacement != Placement::Post;
      bool post = config.normPlacement != Placement::Pre;
      Value attended =
          attentionBlock(pre ? rmsNorm(x, p + "input_layernorm.weight") : x, p);
      if (post)
        attended = rmsNorm(attended, p + "post_attention_layernorm.weight");
      x = residual(x, attended);
      // (Llama's norm before the MLP is its post_attention_layernorm.)
      std::string mlpNorm = config.normPlacement == Placement::Pre
                                ? "post_attention_layernorm.weight"
                                : "pre_feedforward_layernorm.weight";
      Value n = pre ? rmsNorm(x, p + mlpNorm) : x;
      Value mlp = isSparse(layer) ? moeBlock(n, p) : mlpBlock(n, p);
      if (post)
        mlp = rmsNorm(mlp, p + "post_feedforward_layernorm.weight");
      x = residual(x, mlp);
    }
    currentLayer = -1;
    x = rmsNorm(x, "model.norm.weight");
    Value loss =
        headAndLoss(x,
                    config.tieWordEmbeddings ? "model.embed_tokens.weight"
                                             : "lm_head.weight",
                    config.vocabSize, labels, 1.0 / config.logitsScaling,
                    config.logitSoftcap);
    for (Value zLoss : routerZLosses)
      loss = AddOp::create(builder, loc, loss, zLoss);
    if (routerLoads.empty())
      return loss;
    if (config.perLayerAuxLossCoef > 0.0) {
      // Megatron-LM's: each layer's own loss, whose load counts choices
      // (divided by k), summed.
      double coefficient =
          config.perLayerAuxLossCoef / double(config.expertsPerToken);
      for (auto [load, probability] :
           llvm::zip_equal(routerLoads, routerProbabilities))
        loss = AddOp::create(builder, loc, loss,
                             LoadBalancingLossOp::create(
                                 builder, loc, loss.getType(), ValueRange{load},
                                 ValueRange{probability},
                                 builder.getF64FloatAttr(coefficient)));
      return loss;
    }
    // Hugging Face's: one loss over all layers' routers, weighted.
    Value balance = LoadBalancingLossOp::create(
        builder, loc, loss.getType(), routerLoads, routerProbabilities,
        builder.getF64FloatAttr(config.routerAuxLossCoef));
    return AddOp::create(builder, loc, loss, balance);
  }

  const LlamaConfig &config;
  /// Each MoE layer's router statistics, for the load-balancing loss.
  SmallVector<Value> routerLoads, routerProbabilities;
  /// Each MoE layer's router z-loss (--moe-z-loss-coeff).
  SmallVector<Value> routerZLosses;
};
} // namespace

FailureOr<OwningOpRef<ModuleOp>>
mlir::mt::buildLlamaModule(const LlamaConfig &config, MicroBatchShape shape,
                           Location loc) {
  if (failed(mt::detail::checkMicroBatch(shape, config.maxPositions,
                                         "max_position_embeddings", loc)))
    return failure();
  return LlamaBuilder(config, shape, loc).build("llama");
}
