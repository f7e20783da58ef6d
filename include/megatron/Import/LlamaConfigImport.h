//===- LlamaConfigImport.h - LLaMA-family config.json to mt -----*- C++ -*-===//
//
// Reads a Hugging Face `config.json` of the LLaMA family (`LlamaForCausalLM`,
// `MistralForCausalLM`, `MixtralForCausalLM`, `Qwen2ForCausalLM`, Qwen3,
// Qwen3-MoE, Qwen2-MoE, OLMoE, OLMo2) and builds the model's forward graph
// in the mt dialect: RMSNorm (before each sublayer, or after it in OLMo2),
// grouped-query attention with rotary embedding,
// SwiGLU MLP (Mixtral's: a sparse mixture of SwiGLU experts; Qwen2-MoE's
// with a gated shared expert beside them), tied or untied head, with
// parameters named and laid out as in the Hugging Face checkpoint
// (`nn.Linear`'s [out, in]).
//
//===----------------------------------------------------------------------===//

#ifndef MEGATRON_IMPORT_LLAMACONFIGIMPORT_H
#define MEGATRON_IMPORT_LLAMACONFIGIMPORT_H

#include "megatron/Import/HFConfigImport.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::mt {

/// Llama 3.1's "llama3" rope scaling.
struct Llama3RopeScaling {
  double factor = 8.0;
  double lowFreqFactor = 1.0;
  double highFreqFactor = 4.0;
  int64_t originalMaxPositions = 8192;
};

/// The fields of a LLaMA-family `config.json` that shape the training graph.
struct LlamaConfig {
  /// llama, mistral, mixtral, qwen2, qwen3, qwen3_moe, qwen2_moe, olmoe,
  /// olmo2, granite, smollm3, phi3, gemma, gemma2 or gemma3_text (also a
  /// gemma3 multimodal config's text model).
  std::string modelType;
  /// What the checkpoint's parameter names start with before "model." and
  /// "lm_head.": "language_model." for the text model of a gemma3
  /// multimodal config (Gemma3ForConditionalGeneration's), else nothing.
  std::string checkpointPrefix;
  int64_t vocabSize = 0;
  int64_t hiddenSize = 0;
  int64_t intermediateSize = 0;
  int64_t numLayers = 0;
  int64_t numHeads = 0;
  int64_t numKeyValueHeads = 0;
  int64_t headDim = 0;
  int64_t maxPositions = 0;
  double rmsNormEpsilon = 1e-6;
  double ropeTheta = 10000.0;
  std::optional<Llama3RopeScaling> ropeScaling;
  /// A "linear" rope scaling's factor (position interpolation: the
  /// frequencies divided by it; Gemma 3's larger models), instead.
  std::optional<double> linearRopeFactor;
  bool tieWordEmbeddings = false;
  /// Biases on the q, k and v projections (Qwen2; Llama's attention_bias).
  bool qkvBias = false;
  /// A bias on the output projection (Llama's attention_bias).
  bool outputBias = false;
  /// Biases on the MLP projections (Llama's mlp_bias).
  bool mlpBias = false;
  /// Whether published weights hold the q, k and v projections as one
  /// qkv_proj and the gate and up projections as one gate_up_proj (Phi-3):
  /// each stays a parameter of its own, stating its rows there
  /// (mt.fused_in).
  bool fusedProjections = false;
  /// q_norm and k_norm, RMSNorms of the queries and keys before the rotary
  /// embedding: Qwen3's over each head (weights [head_dim]), OLMoE's over
  /// the whole projection (weights [heads * head_dim]).
  enum class QKNorm { None, PerHead, Projection } qkNorm = QKNorm::None;
  /// Granite's multipliers (GraniteConfig): of the embeddings, of each
  /// sublayer's output before its residual add, and the logits' divisor;
  /// and the attention's scale in place of 1/sqrt(head_dim) (unset: that).
  double embeddingMultiplier = 1.0;
  double residualMultiplier = 1.0;
  double logitsScaling = 1.0;
  std::optional<double> attentionScale;
  /// Which layers apply the rotary embedding (SmolLM3's no_rope_layers; the
  /// others attend without positions, "NoPE"). Empty: every layer.
  std::vector<bool> ropeLayers;
  /// Where the norms of a layer are: Llama's pre-norm (each sublayer reads
  /// its input normalized: input_layernorm, post_attention_layernorm
  /// before the MLP); OLMo2's post-norm (no norm before a sublayer, its
  /// output normalized before the residual add: post_attention_layernorm,
  /// post_feedforward_layernorm); or Gemma 2's both (input_layernorm and
  /// pre_feedforward_layernorm before, post_attention_layernorm and
  /// post_feedforward_layernorm after).
  enum class NormPlacement {
    Pre,
    Post,
    PreAndPost
  } normPlacement = NormPlacement::Pre;
  /// Gemma 2's soft caps: of the attention's scaled scores
  /// (attn_logit_softcapping) and of the logits (final_logit_softcapping).
  std::optional<double> attentionSoftcap, logitSoftcap;
  /// Gemma 3's rotary base of its sliding-window layers
  /// (rope_local_base_freq), unscaled; ropeTheta and ropeScaling are then
  /// its full-attention layers'. Unset: every layer's are those.
  std::optional<double> localRopeTheta;
  /// Gemma's RMSNorms scale by 1 + weight (GemmaRMSNorm), their weights
  /// initialized to 0.
  bool zeroCenteredNorms = false;
  /// The gated MLP's activation: SiLU (SwiGLU, Llama's) or GELU with the
  /// tanh approximation (GeGLU, Gemma's gelu_pytorch_tanh).
  enum class GateActivation {
    SiLU,
    GeluTanh
  } gateActivation = GateActivation::SiLU;
  double initializerRange = 0.02;
  /// Mixtral's sparse MoE MLP: each token's MLP is the gate-weighted sum
  /// of `expertsPerToken` of `numExperts` SwiGLU experts (0: a dense MLP).
  int64_t numExperts = 0;
  int64_t expertsPerToken = 0;
  /// Whether a token's k weights are renormalized to sum to 1 (Mixtral's;
  /// Qwen3-MoE's norm_topk_prob), or are its experts' probabilities among
  /// all experts.
  bool renormalizeWeights = true;
  /// Each expert's intermediate size (Mixtral's intermediate_size,
  /// Qwen3-MoE's moe_intermediate_size).
  int64_t expertIntermediateSize = 0;
  /// Qwen2-MoE's shared expert: a SwiGLU MLP of this intermediate size
  /// every token goes through beside its routed experts, its output scaled
  /// by sigmoid(shared_expert_gate(x)) (0: none).
  int64_t sharedExpertIntermediateSize = 0;
  /// Which layers are sparse (Qwen3-MoE's decoder_sparse_step and
  /// mlp_only_layers; the others have a dense MLP of intermediateSize).
  /// Empty: every layer, when numExperts > 0.
  std::vector<bool> sparseLayers;
  /// The names of a sparse block and of each expert's projections in the
  /// checkpoint: Mixtral's block_sparse_moe with w1 (gate), w3 (up) and w2
  /// (down); Qwen3-MoE's mlp with gate_proj, up_proj and down_proj.
  struct ExpertNames {
    std::string block = "block_sparse_moe";
    std::string gate = "w1", up = "w3", down = "w2";
  } expertNames;
  /// The auxiliary load-balancing loss's weight in the loss (Mixtral's
  /// router_aux_loss_coef with output_router_logits; 0: none).
  double routerAuxLossCoef = 0.0;
  /// Megatron-LM's --moe-aux-loss-coeff instead (0: none): each MoE layer's
  /// own load-balancing loss (switch_load_balancing_loss_func: coefficient
  /// * num_experts * sum_e load_e * probability_e / k, the load counting
  /// choices per token), summed over the layers. An option of the training
  /// run, not a config.json field (megatron-translate's flag of that name).
  double perLayerAuxLossCoef = 0.0;
  /// Megatron-LM's --moe-z-loss-coeff (0: none): each MoE layer's router
  /// z-loss (z_loss_func: coefficient * mean over tokens of the squared
  /// log-sum-exp of the router's logits), summed over the layers. An
  /// option of the training run (megatron-translate's flag of that name).
  double routerZLossCoef = 0.0;
  /// Megatron-LM's --moe-expert-capacity-factor (none: dropless routing)
  /// and --moe-token-drop-policy: each expert takes at most its capacity of
  /// a micro-batch's choices, ceil(tokens * k / experts * factor), keeping
  /// those of largest gate weight (`Probs`) or the earliest (`Position`);
  /// the others are dropped. Options of the training run, not config.json
  /// fields (megatron-translate's flags of those names).
  std::optional<double> expertCapacityFactor;
  enum class TokenDropPolicy { Probs, Position };
  TokenDropPolicy tokenDropPolicy = TokenDropPolicy::Probs;
  /// The sliding attention window (0: none) of Mistral, or of Qwen2 with
  /// use_sliding_window: a query sees the `slidingWindow` keys up to its
  /// own, in the layers from `firstWindowedLayer` on (Qwen2's
  /// max_window_layers; every layer of a Mistral).
  int64_t slidingWindow = 0;
  int64_t firstWindowedLayer = 0;
  /// Qwen2's layer_types, where the config states it: whether each layer
  /// is windowed ("sliding_attention"), instead of firstWindowedLayer.
  std::vector<bool> windowedLayers;
};

/// Whether `modelType` names a LLaMA-family config this importer reads.
bool isLlamaFamily(llvm::StringRef modelType);

/// Those model types as errors list them: `, `-separated (`lastSeparator`
/// before the last), each in double quotes if `quoted`.
std::string llamaFamilyList(bool quoted, llvm::StringRef lastSeparator);

/// Parses and validates a LLaMA-family config. Errors are reported at the
/// offending key and name it and its value.
FailureOr<LlamaConfig> parseLlamaConfig(llvm::StringRef json, Location loc);

/// Builds `func.func @llama(%input_ids, %labels, params...) -> tensor<f32>`
/// computing the mean cross-entropy loss; every parameter states its
/// tensor-parallel role and Hugging Face's initializer.
FailureOr<OwningOpRef<ModuleOp>> buildLlamaModule(const LlamaConfig &config,
                                                  MicroBatchShape shape,
                                                  Location loc);

} // namespace mlir::mt

#endif // MEGATRON_IMPORT_LLAMACONFIGIMPORT_H
