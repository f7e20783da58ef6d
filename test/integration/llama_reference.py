#!/usr/bin/python3
"""An independent LLaMA-family training reference in PyTorch, for equivalence
tests: Llama, Mistral, Mixtral, Qwen2, Qwen3, Qwen3-MoE, Qwen2-MoE, OLMoE,
OLMo2, Granite, SmolLM3, Gemma, Gemma 2 and Gemma 3 configs (Hugging Face
config.json keys).

Subcommands:
  init CONFIG OUT.safetensors --seed N
      writes a random initialization with Hugging Face names and layouts, as
      LlamaPreTrainedModel._init_weights does it: normal(0, initializer_range)
      for every Linear weight and the embedding (a torch.Generator seeded with
      N draws them in state-dict order), zero biases, RMSNorm weights 1
  tokens OUT.bin --count N --vocab V --seed N
      writes a random uint16 token file (gpt2_reference.py's)
  train CONFIG INIT.safetensors TOKENS.bin --steps T --batch B --seq S ...
        --out-log LOG.jsonl --out-params OUT.safetensors
      trains exactly as gpt2_reference.py does (the loop is shared: its
      torch.optim.AdamW, Megatron-LM's learning-rate schedule, weight decay
      on rank >= 2 tensors only, clipping by global norm, the same batches:
      row i of step t is tokens[((t-1)*B+i)*S :][:S+1], inputs its first
      S tokens and labels its last S)
  compare REF.jsonl REF.safetensors RUN.jsonl RUN.safetensors --loss-rtol X
        --param-tol Y
      gpt2_reference.py's comparison (the same output for the same FileCheck
      lines)
  count CONFIG
      prints `parameters: N`, the state dict's element count from the shapes
      alone (a tied head counted once): TinyLlama-1.1B 1,100,048,384,
      Llama-3-8B 8,030,261,248, Mistral-7B-v0.1 7,241,732,096, Qwen2-0.5B
      494,032,768 (examples/llama/)

The model is written from Hugging Face's modeling_llama.py, modeling_mistral.py,
modeling_mixtral.py and modeling_qwen2.py (LlamaRMSNorm, rotate_half / apply_rotary_pos_emb,
_compute_default_rope_parameters and _compute_llama3_parameters in
modeling_rope_utils.py, repeat_kv, eager attention, LlamaMLP, _init_weights),
not from megatron-mlir's code. Per layer
    h = x + o_proj(attention(rope(q_proj(n)), rope(k_proj(n)), v_proj(n))),
        n = input_layernorm(x)
    x = h + down_proj(silu(gate_proj(m)) * up_proj(m)), m = post_attention_layernorm(h)
then model.norm and logits = x @ lm_head.weight^T (model.embed_tokens.weight
when tied); the loss is the mean cross entropy over all B*S positions. All in
float32 on the CPU.

Biases as Hugging Face builds them: Llama's attention_bias puts one on q, k, v
and o (and mlp_bias on gate, up and down); Qwen2 always has q, k and v biases
and none on o; Mistral has none. Mixtral replaces the MLP by MixtralSparseMoeBlock: router logits
m @ gate.weight^T, softmax over all num_local_experts in float32, topk of
num_experts_per_tok, those probabilities divided by their sum; each expert e
computes w2(silu(w1(x)) * w3(x)) for the tokens that chose it, times their
weight, added back with index_add_ (no jitter: refused; Mixtral's defaults:
rope_theta 1e6, rms_norm_eps 1e-5, 8 key/value heads, no sliding window).
With output_router_logits, MixtralForCausalLM adds router_aux_loss_coef
(default 0.001) times load_balancing_loss_func over all layers' router logits
concatenated: num_experts * sum over experts of the fraction of (token,
choice) pairs routed to it times its mean softmax probability. A config's pad_token_id makes that embedding
row nn.Embedding's padding_idx: zero at init and no gradient through the
lookup (a tied head still trains it), as in Hugging Face. Refused: another
hidden_act than silu, attention_dropout other than 0 (masks cannot match) and
a rope_scaling other than linear or llama3. A sliding window (Mistral's, 4096 when
unset; Qwen2's only with use_sliding_window, from layer max_window_layers on)
shorter than the sequence masks the keys that many positions or more before
each query, as Hugging Face's sliding-window mask does.

Qwen3 (modeling_qwen3.py) adds q_norm and k_norm: an RMSNorm over each head's
query and key (weight [head_dim]) before the rotary embedding, as
q_norm(q_proj(n).view(b, s, h, hd)); attention_bias puts a bias on q, k, v and
o; head_dim defaults to 128. Qwen3-MoE (modeling_qwen3_moe.py) has Qwen3's
attention and, in the layers where (l + 1) % decoder_sparse_step == 0 and l is
not in mlp_only_layers, Qwen3MoeSparseMoeBlock: Mixtral's routing (without
norm_topk_prob, Hugging Face's default, the top-k probabilities are the
weights as they are, not divided by their sum) over
num_experts experts of moe_intermediate_size named mlp.experts.E.gate_proj,
up_proj and down_proj, router mlp.gate; the other layers a dense MLP of
intermediate_size. Its load-balancing loss takes the sparse layers' router
logits. OLMoE (modeling_olmoe.py) normalizes the whole query and key
projections (q_norm over hidden_size, k_norm over the key/value width) before
they split into heads, and every layer is Qwen3-MoE's sparse block with experts
of intermediate_size (defaults: 64 experts, 8 per token, norm_topk_prob false,
router_aux_loss_coef 0.01, rms_norm_eps 1e-5; clip_qkv refused). Qwen2-MoE
(modeling_qwen2_moe.py) has Qwen2's attention (q, k and v biases, unless
qkv_bias is false) and Qwen3-MoE's sparse layers (defaults: 60 experts, 4 per
token, moe_intermediate_size 1408, 16 key/value heads) with, in each, a shared
expert: a SwiGLU MLP of shared_expert_intermediate_size (mlp.shared_expert.*)
whose output is multiplied by sigmoid(mlp.shared_expert_gate(y)) and added to
the routed experts' (Qwen2MoeSparseMoeBlock). OLMo2 (modeling_olmo2.py)
normalizes the whole query and key projections as OLMoE does, and places its
norms after the sublayers: x + post_attention_layernorm(attention(x)), then
h + post_feedforward_layernorm(mlp(h)), no input_layernorm (defaults:
rms_norm_eps 1e-5, pad_token_id 1). Granite (modeling_granite.py) is Llama with
multipliers: the embeddings times embedding_multiplier, each sublayer's output
times residual_multiplier before its residual add, the attention scores
times attention_multiplier (not 1/sqrt(head_dim)), the logits divided by
logits_scaling (all 1 by default). SmolLM3 (modeling_smollm3.py) is Llama
whose layers with no_rope_layers[l] == 0 (every no_rope_layer_interval-th, 4,
by default) apply no rotary embedding (defaults: 4 key/value heads,
rope_theta 2e6, a tied head, pad_token_id 128004). Gemma (modeling_gemma.py)
is Llama with GemmaRMSNorm (x * rsqrt(mean(x^2) + eps) * (1 + weight), the
weights initialized to 0), the embeddings times sqrt(hidden_size) as a
float32 tensor (GemmaModel's normalizer), and a GeGLU MLP:
down_proj(gelu_tanh(gate_proj(m)) * up_proj(m)) (defaults: 16 key/value heads,
head_dim 256, a tied head, pad_token_id 0; the activation is
hidden_activation, else hidden_act, either gelu_pytorch_tanh, or "gelu" for
hidden_act without hidden_activation, which GemmaMLP read as the tanh
approximation). Gemma 2 (modeling_gemma2.py) is Gemma with norms before and
after each sublayer (input_layernorm and post_attention_layernorm around the
attention, pre_feedforward_layernorm and post_feedforward_layernorm around
the MLP), the scores scaled by query_pre_attn_scalar^-0.5 and soft-capped
(tanh(s / attn_logit_softcapping) * attn_logit_softcapping, before the
mask), a sliding window in its "sliding_attention" layers (every other from
layer 0 by default), and the logits soft-capped by final_logit_softcapping
(defaults: 4 key/value heads, query_pre_attn_scalar 256, caps 50 and 30,
sliding_window 4096, activation hidden_activation only). Gemma 3's text model
(gemma3_text, modeling_gemma3.py) is Gemma 2 with q_norm and k_norm (zero-
centered RMSNorms of each head over head_dim, before the rotary embedding),
no soft caps by default, all layers but every sliding_window_pattern-th (6)
windowed, and those windowed layers' rotary embedding of base
rope_local_base_freq (10000), unscaled (defaults: rope_theta 1e6, 4 key/value
heads, and Gemma 3 1B's sizes where a size is absent). A multimodal gemma3
config (Gemma3ForConditionalGeneration) is its text_config's text model,
named under "language_model." as its checkpoints store it. A rope_scaling of
type "linear" divides the frequencies by its factor (Gemma 3's global
layers).

Phi-3 (phi3, modeling_phi3.py: Phi-3, Phi-3.5 and Phi-4's language models) is
Llama's layer with its projections fused as the checkpoints store them:
self_attn.qkv_proj's output split into the queries (the first
num_attention_heads x head_dim features), the keys and the values (the next
num_key_value_heads x head_dim each), and mlp.gate_up_proj's output split
in halves, gate then up: down_proj(up * silu(gate)) (defaults: rms_norm_eps
1e-5, key/value heads num_attention_heads, pad_token_id 32000, no sliding
window; embd_pdrop and resid_pdrop must be 0). Its parameters are named as
the checkpoints name them: a run's q_proj, k_proj, v_proj, gate_proj and
up_proj are those tensors' rows.

Token dropping (train --moe-expert-capacity-factor F, Megatron-LM's
topk_softmax_with_capacity, written from its moe_utils.py): each expert takes
at most capacity = ceil(T * k / E * F) of the T tokens' choices (at most T),
those of largest gate weight (--moe-token-drop-policy probs: a stable sort
of each expert's column of the masked gates, so the earlier token first
among equal weights) or the earliest tokens (position); a dropped choice's
weight is zeroed after the gating (its expert adds nothing for that token and
the router gets no gradient through it). T counts the batch's tokens: the
micro-batch of a compiled run of one microbatch.
"""

import json
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference as reference  # noqa: E402
from safetensors_io import write_safetensors  # noqa: E402

torch.set_default_dtype(torch.float32)

MODEL_TYPES = ("llama", "mistral", "mixtral", "qwen2", "qwen3", "qwen3_moe", "qwen2_moe", "olmoe", "olmo2", "granite",
               "smollm3", "phi3", "gemma", "gemma2", "gemma3_text", "gemma3")

# Gemma3TextConfig's sizes, which the multimodal configs' text_config leaves
# out (Gemma 3 1B's).
GEMMA3_SIZES = dict(vocab_size=262208, hidden_size=2304, intermediate_size=9216, num_hidden_layers=26,
                    num_attention_heads=8, max_position_embeddings=131072)


def fail(message):
    sys.exit(f"llama_reference: {message}")


def load_config(path):
    """The config with Hugging Face's defaults (LlamaConfig, MistralConfig,
    Qwen2Config) filled in, plus derived keys: qkv_bias, o_bias, mlp_bias and
    windows (each layer's sliding window, or None)."""
    with open(path) as f:
        c = json.load(f)
    kind = c.get("model_type")
    if kind not in MODEL_TYPES:
        fail(f"model_type must be one of {', '.join(MODEL_TYPES)}, not {kind!r}")
    # Gemma3ForConditionalGeneration: the text model is text_config's, its
    # weights under language_model. (the vision tower is not built).
    prefix = ""
    if kind == "gemma3":
        top = c
        c = dict(c["text_config"])
        # PreTrainedModel._init_weights reads the top-level config's.
        if top.get("initializer_range") is not None:
            c["initializer_range"] = top["initializer_range"]
        if c.setdefault("model_type", "gemma3_text") != "gemma3_text":
            fail("a gemma3 config's text model must be gemma3_text")
        kind = "gemma3_text"
        prefix = "language_model."
    c["prefix"] = prefix
    if kind == "gemma3_text":
        for key, value in GEMMA3_SIZES.items():
            if c.get(key) is None:
                c[key] = value
    gemma2 = kind == "gemma2"
    gemma3 = kind == "gemma3_text"
    gemma = kind in ("gemma", "gemma2", "gemma3_text")
    if gemma:
        activation = c.get("hidden_activation")
        if (gemma2 or gemma3) and activation is None:  # their MLPs read hidden_activation
            activation = "gelu_pytorch_tanh"
        if activation is None:
            activation = c.get("hidden_act", "gelu_pytorch_tanh")
            if activation == "gelu":  # GemmaMLP without hidden_activation
                activation = "gelu_pytorch_tanh"
        if activation != "gelu_pytorch_tanh":
            fail(f"gemma's activation must be gelu_pytorch_tanh, not {activation!r}")
        c["mlp_act"] = "gelu_tanh"
        c.setdefault("num_key_value_heads", 4 if gemma2 or gemma3 else 16)
        if gemma3:
            c.setdefault("rope_theta", 1e6)
        c.setdefault("head_dim", 256)
        c.setdefault("tie_word_embeddings", True)
        c.setdefault("pad_token_id", 0)
    else:
        if c.get("hidden_act", "silu") != "silu":
            fail(f"hidden_act must be silu, not {c['hidden_act']!r}")
        c["mlp_act"] = "silu"
    # GemmaRMSNorm scales by 1 + weight.
    c["norm_offset"] = 1.0 if gemma else 0.0
    if c.get("attention_dropout", 0.0) != 0:
        fail("attention_dropout must be 0 (dropout masks cannot match)")
    mixtral = kind == "mixtral"
    qwen3 = kind in ("qwen3", "qwen3_moe")
    # Qwen3's q_norm and k_norm are per head, OLMoE's over the projection.
    c["qk_norm"] = "head" if qwen3 or kind == "gemma3_text" else "projection" if kind in ("olmoe", "olmo2") else None
    # OLMo2 normalizes each sublayer's output instead of its input, Gemma 2
    # both.
    c["pre_norms"] = kind != "olmo2"
    c["post_norms"] = kind in ("olmo2", "gemma2", "gemma3_text")
    granite = kind == "granite"
    layers = c["num_hidden_layers"]
    if kind == "smollm3":
        if c.get("use_sliding_window", False):
            fail("use_sliding_window must be false for smollm3")
        c.setdefault("num_key_value_heads", 4)
        c.setdefault("rope_theta", 2e6)
        c.setdefault("tie_word_embeddings", True)
        c.setdefault("pad_token_id", 128004)
        interval = c.get("no_rope_layer_interval", 4)
        if c.get("no_rope_layers") is None:
            c["no_rope_layers"] = [int((l + 1) % interval != 0) for l in range(layers)]
    c["rope_layers"] = [bool(c["no_rope_layers"][l]) if kind == "smollm3" else True for l in range(layers)]
    for key in ("embedding_multiplier", "residual_multiplier", "logits_scaling"):
        c[key] = c.get(key, 1.0) if granite else 1.0
    if gemma:  # GemmaModel's normalizer, in the activations' dtype
        c["embedding_multiplier"] = torch.tensor(c["hidden_size"] ** 0.5, dtype=torch.float32)
    c["attention_scale"] = c.get("attention_multiplier", 1.0) if granite else None
    c["attention_softcap"] = c["logit_softcap"] = None
    if gemma2 or gemma3:
        c["attention_scale"] = c.get("query_pre_attn_scalar", 256) ** -0.5
        # Gemma3Attention does not pass attn_logit_softcapping on, and
        # Gemma3ForConditionalGeneration does not apply
        # final_logit_softcapping.
        c["attention_softcap"] = c.get("attn_logit_softcapping", 50.0) if gemma2 else None
        c["logit_softcap"] = None if prefix else c.get("final_logit_softcapping", 30.0 if gemma2 else None)
    # Gemma 3's windowed layers' rotary base (their rotary embedding unscaled).
    c["local_rope_theta"] = c.get("rope_local_base_freq", 10000.0) if gemma3 else None
    if kind == "olmo2":
        c.setdefault("rms_norm_eps", 1e-5)
        c.setdefault("pad_token_id", 1)
    # Phi-3's fused projections (Phi3Attention's qkv_proj, Phi3MLP's
    # gate_up_proj).
    c["fused"] = kind == "phi3"
    if kind == "phi3":
        for key in ("embd_pdrop", "resid_pdrop"):
            if c.get(key, 0.0) != 0:
                fail(f"{key} must be 0 (dropout masks cannot match)")
        c.setdefault("rms_norm_eps", 1e-5)
        c.setdefault("pad_token_id", 32000)
    # Each layer's MLP: "moe" (with the checkpoint's names) or "dense".
    c["sparse"] = [mixtral] * layers
    c["expert_names"] = ("block_sparse_moe.", "w1", "w3", "w2")
    c["shared_expert"] = None
    if kind in ("qwen3_moe", "qwen2_moe"):
        qwen2_moe = kind == "qwen2_moe"
        c.setdefault("num_experts", 60 if qwen2_moe else 128)
        c.setdefault("num_experts_per_tok", 4 if qwen2_moe else 8)
        c.setdefault("moe_intermediate_size", 1408 if qwen2_moe else 768)
        c.setdefault("decoder_sparse_step", 1)
        c.setdefault("output_router_logits", False)
        c.setdefault("router_aux_loss_coef", 0.001)
        c.setdefault("num_key_value_heads", 16 if qwen2_moe else 4)
        c.setdefault("norm_topk_prob", False)
        if qwen2_moe:
            c["shared_expert"] = c.get("shared_expert_intermediate_size", 5632)
        if c.get("use_sliding_window", False):
            fail(f"use_sliding_window must be false for {kind}")
        dense = c.get("mlp_only_layers") or []
        c["sparse"] = [l not in dense and c["num_experts"] > 0 and (l + 1) % c["decoder_sparse_step"] == 0
                       for l in range(layers)]
        c["num_local_experts"] = c["num_experts"]
        c["expert_intermediate_size"] = c["moe_intermediate_size"]
        c["expert_names"] = ("mlp.", "gate_proj", "up_proj", "down_proj")
    if kind == "olmoe":
        if c.get("clip_qkv") is not None:
            fail("clip_qkv must be null")
        c.setdefault("num_experts", 64)
        c.setdefault("num_experts_per_tok", 8)
        c.setdefault("norm_topk_prob", False)
        c.setdefault("output_router_logits", False)
        c.setdefault("router_aux_loss_coef", 0.01)
        c.setdefault("rms_norm_eps", 1e-5)
        c.setdefault("pad_token_id", 1)
        c["sparse"] = [True] * layers
        c["num_local_experts"] = c["num_experts"]
        c["expert_intermediate_size"] = c["intermediate_size"]
        c["expert_names"] = ("mlp.", "gate_proj", "up_proj", "down_proj")
    if kind == "qwen3":
        c.setdefault("num_key_value_heads", 32)
        c.setdefault("head_dim", 128)
    if mixtral:
        c["expert_intermediate_size"] = c["intermediate_size"]
        c["norm_topk_prob"] = True
        if c.get("router_jitter_noise", 0.0) != 0:
            fail("router_jitter_noise must be 0")
        c.setdefault("output_router_logits", False)
        c.setdefault("router_aux_loss_coef", 0.001)
        c.setdefault("num_local_experts", 8)
        c.setdefault("num_experts_per_tok", 2)
        c.setdefault("num_key_value_heads", 8)
        c.setdefault("rms_norm_eps", 1e-5)
        c.setdefault("rope_theta", 1e6)
    if c.get("num_key_value_heads") is None:
        c["num_key_value_heads"] = c["num_attention_heads"]
    if c.get("head_dim") is None:
        c["head_dim"] = c["hidden_size"] // c["num_attention_heads"]
    if c["num_attention_heads"] % c["num_key_value_heads"]:
        fail("num_attention_heads must be a multiple of num_key_value_heads")
    c.setdefault("rms_norm_eps", 1e-6)
    c.setdefault("rope_theta", 10000.0)
    c.setdefault("rope_scaling", None)
    c.setdefault("tie_word_embeddings", False)
    c.setdefault("initializer_range", 0.02)
    c.setdefault("pad_token_id", None)
    # Llama's attention_bias (the families that read it) puts a bias on q, k,
    # v and o; Qwen2 always has q, k and v biases, Qwen2-MoE unless
    # qkv_bias is false; Mistral and Mixtral have none.
    attention_bias = (kind in ("llama", "qwen3", "qwen3_moe", "olmoe", "olmo2", "granite", "smollm3", "gemma", "gemma2",
                                "gemma3_text")
                      and c.get("attention_bias", False))
    c["qkv_bias"] = kind == "qwen2" or (kind == "qwen2_moe" and c.get("qkv_bias", True)) or attention_bias
    c["o_bias"] = attention_bias
    c["mlp_bias"] = kind in ("llama", "granite", "smollm3") and c.get("mlp_bias", False)
    if kind == "mistral":
        c["windows"] = [c.get("sliding_window", 4096)] * layers
    elif mixtral or kind == "phi3":
        c["windows"] = [c.get("sliding_window")] * layers
    elif gemma2 or gemma3:
        pattern = c.get("sliding_window_pattern", 6)
        types = c.get("layer_types") or [
            "sliding_attention" if (l % 2 == 0 if gemma2 else (l + 1) % pattern != 0) else "full_attention"
            for l in range(layers)]
        c["windows"] = [c.get("sliding_window", 4096) if t == "sliding_attention" else None for t in types]
        # Gemma3's rotary embedding follows the layer type, window or not.
        c["local_rope_layers"] = [t == "sliding_attention" for t in types]
    elif kind in ("qwen2", "qwen3") and c.get("use_sliding_window", False):
        first = c.get("max_window_layers", 28)
        c["windows"] = [c.get("sliding_window", 4096) if l >= first else None for l in range(layers)]
    else:
        c["windows"] = [None] * layers
    inverse_frequencies(c)  # rejects an unsupported rope_scaling early
    return c


def parameter_shapes(c):
    """Name -> shape, in Hugging Face's names and nn.Linear's [out, in]."""
    d, hd = c["hidden_size"], c["head_dim"]
    h, kv, inter = c["num_attention_heads"], c["num_key_value_heads"], c["intermediate_size"]
    shapes = {"model.embed_tokens.weight": (c["vocab_size"], d)}

    def linear(name, out, inp, bias):
        shapes[name + ".weight"] = (out, inp)
        if bias:
            shapes[name + ".bias"] = (out,)

    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        if c["pre_norms"]:
            shapes[p + "input_layernorm.weight"] = (d,)
        if c["fused"]:  # Phi3Attention's one projection of [q | k | v]
            linear(p + "self_attn.qkv_proj", (h + 2 * kv) * hd, d, False)
        else:
            linear(p + "self_attn.q_proj", h * hd, d, c["qkv_bias"])
            linear(p + "self_attn.k_proj", kv * hd, d, c["qkv_bias"])
            linear(p + "self_attn.v_proj", kv * hd, d, c["qkv_bias"])
        linear(p + "self_attn.o_proj", d, h * hd, c["o_bias"])
        if c["qk_norm"]:
            per_head = c["qk_norm"] == "head"
            shapes[p + "self_attn.q_norm.weight"] = (hd if per_head else h * hd,)
            shapes[p + "self_attn.k_norm.weight"] = (hd if per_head else kv * hd,)
        if not c["post_norms"]:  # Llama's norm before the MLP
            shapes[p + "post_attention_layernorm.weight"] = (d,)
        if c["sparse"][l]:
            block, gate, up, down = c["expert_names"]
            q = p + block
            expert = c["expert_intermediate_size"]
            shapes[q + "gate.weight"] = (c["num_local_experts"], d)
            for e in range(c["num_local_experts"]):
                # Each checkpoint's order: Mixtral's w1, w2, w3; Qwen3-MoE's
                # gate_proj, up_proj, down_proj.
                order = (gate, down, up) if c["model_type"] == "mixtral" else (gate, up, down)
                for name in order:
                    if name == down:
                        linear(q + f"experts.{e}.{name}", d, expert, False)
                    else:
                        linear(q + f"experts.{e}.{name}", expert, d, False)
            if c["shared_expert"]:
                linear(q + "shared_expert.gate_proj", c["shared_expert"], d, False)
                linear(q + "shared_expert.up_proj", c["shared_expert"], d, False)
                linear(q + "shared_expert.down_proj", d, c["shared_expert"], False)
                linear(q + "shared_expert_gate", 1, d, False)
            continue
        if c["fused"]:  # Phi3MLP's one projection of [gate | up]
            linear(p + "mlp.gate_up_proj", 2 * inter, d, False)
        else:
            linear(p + "mlp.gate_proj", inter, d, c["mlp_bias"])
            linear(p + "mlp.up_proj", inter, d, c["mlp_bias"])
        linear(p + "mlp.down_proj", d, inter, c["mlp_bias"])
        if c["post_norms"]:  # Olmo2DecoderLayer's, after its MLP in the state dict
            shapes[p + "post_attention_layernorm.weight"] = (d,)
            if c["pre_norms"]:  # Gemma2DecoderLayer's
                shapes[p + "pre_feedforward_layernorm.weight"] = (d,)
            shapes[p + "post_feedforward_layernorm.weight"] = (d,)
    shapes["model.norm.weight"] = (d,)
    if not c["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (c["vocab_size"], d)
    return {c["prefix"] + name: shape for name, shape in shapes.items()}


def rms_norm(x, weight, eps, offset=0.0):
    # LlamaRMSNorm: in float32, x * rsqrt(mean(x^2) + eps), then weight * that;
    # GemmaRMSNorm (offset 1): that times (1 + weight).
    variance = x.pow(2).mean(-1, keepdim=True)
    if offset:
        return (x * torch.rsqrt(variance + eps)) * (offset + weight)
    return weight * (x * torch.rsqrt(variance + eps))


def inverse_frequencies(c):
    """_compute_default_rope_parameters, then
    _compute_linear_scaling_rope_parameters or _compute_llama3_parameters when
    rope_scaling asks for it (their attention factor is 1)."""
    hd = c["head_dim"]
    inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    scaling = c["rope_scaling"]
    if not scaling:
        return inv_freq
    kind = scaling.get("rope_type", scaling.get("type", "default"))
    if kind == "default":
        return inv_freq
    if kind == "linear":  # _compute_linear_scaling_rope_parameters
        return inv_freq / scaling["factor"]
    if kind != "llama3":
        fail(f"rope_scaling of type {kind!r} is not supported (only linear and llama3)")
    factor = scaling["factor"]
    low_freq_factor = scaling["low_freq_factor"]
    high_freq_factor = scaling["high_freq_factor"]
    old_context_len = scaling["original_max_position_embeddings"]
    low_freq_wavelen = old_context_len / low_freq_factor
    high_freq_wavelen = old_context_len / high_freq_factor
    wavelen = 2 * math.pi / inv_freq
    # Wavelengths under high_freq_wavelen are kept, those over low_freq_wavelen
    # divided by factor, and those between interpolated smoothly.
    inv_freq_llama = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
    smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
    smoothed_inv_freq = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
    is_medium_freq = ~(wavelen < high_freq_wavelen) * ~(wavelen > low_freq_wavelen)
    return torch.where(is_medium_freq, smoothed_inv_freq, inv_freq_llama)


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, groups):
    """[b, kv, s, hd] -> [b, kv * groups, s, hd]: query head j reads key/value
    head j // groups."""
    b, kv, s, hd = x.shape
    if groups == 1:
        return x
    return x[:, :, None, :, :].expand(b, kv, groups, s, hd).reshape(b, kv * groups, s, hd)


def load_balancing_loss_func(gate_logits, num_experts, top_k):
    """Hugging Face's, without an attention mask: the router logits of every
    layer concatenated along the tokens."""
    concatenated = torch.cat(gate_logits, dim=0)
    routing_weights = F.softmax(concatenated, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = F.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts


def drop_over_capacity(weights, selected, c):
    """The gate weights [T, k] with those of the choices over their expert's
    capacity zeroed (Megatron-LM's capacity mask, by probs or position)."""
    t, k = weights.shape
    e = c["num_local_experts"]
    capacity = min(t, max(1, math.ceil(t * k / e * c["capacity_factor"])))
    chosen = torch.zeros(t, e, dtype=torch.bool).scatter(1, selected, True)
    if c["token_drop_policy"] == "probs":
        score = torch.zeros(t, e).scatter(1, selected, weights.detach())
    else:  # position: the earlier token scores higher
        score = (t - torch.arange(t, dtype=torch.float32))[:, None].expand(t, e)
    score = torch.where(chosen, score, torch.full_like(score, -math.inf))
    order = torch.sort(score, dim=0, descending=True, stable=True).indices[:capacity]
    kept = torch.zeros(t, e, dtype=torch.bool).scatter(0, order, True) & chosen
    return weights * kept.gather(1, selected).to(weights.dtype)


def z_loss_func(logits, z_loss_coeff):
    """Megatron-LM's router z-loss (moe_utils.py's z_loss_func, ST-MoE's):
    the mean over tokens of the squared log-sum-exp of one layer's router
    logits [T, E], times the coefficient."""
    return torch.mean(torch.square(torch.logsumexp(logits, dim=-1))) * z_loss_coeff


def switch_load_balancing_loss_func(logits, num_experts, topk, coefficient):
    """Megatron-LM's per-layer auxiliary loss (moe_utils.py's
    switch_load_balancing_loss_func on the scores and routing map of
    compute_routing_scores_for_aux_loss): the softmax of one layer's logits
    [T, E] summed over tokens, times each expert's count of choices, times
    num_experts * coefficient / (T * T * topk)."""
    t = logits.shape[0]
    scores = F.softmax(logits, dim=-1, dtype=torch.float32)
    _, chosen = torch.topk(scores, topk, dim=-1)
    tokens_per_expert = F.one_hot(chosen, num_experts).sum(dim=(0, 1)).float()
    return torch.sum(scores.sum(dim=0) * tokens_per_expert) * (num_experts * coefficient / (t * t * topk))


def sparse_moe(y, p, linear, c, router_logits_out):
    """MixtralSparseMoeBlock.forward (no jitter; Qwen3MoeSparseMoeBlock's with
    norm_topk_prob) on y [B, S, D]; appends the router logits [B*S, E] to
    router_logits_out."""
    _, gate, up, down = c["expert_names"]
    b, s, d = y.shape
    tokens = y.reshape(b * s, d)
    router_logits = linear(tokens, p + "gate")
    router_logits_out.append(router_logits)
    routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
    routing_weights, selected = torch.topk(routing_weights, c["num_experts_per_tok"], dim=-1)
    if c["norm_topk_prob"]:
        routing_weights = routing_weights / routing_weights.sum(dim=-1, keepdim=True)
    if c.get("capacity_factor"):
        routing_weights = drop_over_capacity(routing_weights, selected, c)
    final = torch.zeros_like(tokens)
    expert_mask = F.one_hot(selected, num_classes=c["num_local_experts"]).permute(2, 1, 0)
    for e in range(c["num_local_experts"]):
        idx, top_x = torch.where(expert_mask[e])
        current = tokens[top_x]
        name = p + f"experts.{e}."
        out = linear(F.silu(linear(current, name + gate)) * linear(current, name + up), name + down)
        final = final.index_add(0, top_x, out * routing_weights[top_x, idx, None])
    if c["shared_expert"]:  # Qwen2MoeSparseMoeBlock's shared expert
        shared = linear(F.silu(linear(tokens, p + "shared_expert.gate_proj"))
                        * linear(tokens, p + "shared_expert.up_proj"), p + "shared_expert.down_proj")
        final = final + torch.sigmoid(linear(tokens, p + "shared_expert_gate")) * shared
    return final.reshape(b, s, d)


def forward(params, ids, labels, c):
    """The mean cross-entropy loss of `ids` [B, S] against `labels` [B, S]."""
    # The checkpoint's names, without a multimodal model's prefix.
    params = {name[len(c["prefix"]):]: t for name, t in params.items()}
    b, s = ids.shape
    hd = c["head_dim"]
    h, kv = c["num_attention_heads"], c["num_key_value_heads"]

    eps = c["rms_norm_eps"]

    def norm(x, weight, eps):  # LlamaRMSNorm, or GemmaRMSNorm
        return rms_norm(x, weight, eps, c["norm_offset"])

    def linear(x, name):
        y = x @ params[name + ".weight"].t()
        return y + params[name + ".bias"] if name + ".bias" in params else y

    # LlamaRotaryEmbedding: positions 0..S-1, cos and sin of cat(freqs, freqs).
    def rotary(inv_freq):
        freqs = torch.arange(s, dtype=torch.float32)[:, None] * inv_freq[None, :]
        emb = torch.cat((freqs, freqs), dim=-1)
        return emb.cos(), emb.sin()

    global_rotary = rotary(inverse_frequencies(c))
    local_rotary = None
    if c["local_rope_theta"] is not None:  # Gemma3's rotary_emb_local
        local_rotary = rotary(inverse_frequencies(dict(c, rope_theta=c["local_rope_theta"], rope_scaling=None)))
    causal = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)

    def mask_of(window):
        """Causal, and with a sliding window (Hugging Face's sliding mask)
        the keys `window` or more positions before the query masked too."""
        if window is None or window >= s:
            return causal
        return causal | torch.tril(torch.ones(s, s, dtype=torch.bool), diagonal=-window)

    router_logits = []
    table = params["model.embed_tokens.weight"]
    pad = c["pad_token_id"]
    if pad is not None:  # nn.Embedding(padding_idx=pad): no gradient through that row
        table = torch.cat((table[:pad], table[pad : pad + 1].detach(), table[pad + 1 :]))
    x = table[ids] * c["embedding_multiplier"]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        y = norm(x, params[p + "input_layernorm.weight"], eps) if c["pre_norms"] else x
        if c["fused"]:  # Phi3Attention: [q | k | v] = qkv_proj(y)
            qkv = linear(y, p + "self_attn.qkv_proj")
            q, k, v_flat = qkv.split((h * hd, kv * hd, kv * hd), dim=-1)
        else:
            q = linear(y, p + "self_attn.q_proj")
            k = linear(y, p + "self_attn.k_proj")
            v_flat = linear(y, p + "self_attn.v_proj")
        if c["qk_norm"] == "projection":  # OlmoeAttention: over the projection
            q = norm(q, params[p + "self_attn.q_norm.weight"], eps)
            k = norm(k, params[p + "self_attn.k_norm.weight"], eps)
        q, k = q.view(b, s, h, hd), k.view(b, s, kv, hd)
        if c["qk_norm"] == "head":  # Qwen3Attention: q_norm, k_norm over head_dim
            q = norm(q, params[p + "self_attn.q_norm.weight"], eps)
            k = norm(k, params[p + "self_attn.k_norm.weight"], eps)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        v = v_flat.view(b, s, kv, hd).transpose(1, 2)
        if c["rope_layers"][l]:  # SmolLM3's NoPE layers have none
            local = local_rotary is not None and c["local_rope_layers"][l]
            cos, sin = local_rotary if local else global_rotary
            q = q * cos + rotate_half(q) * sin
            k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, h // kv), repeat_kv(v, h // kv)
        if c["attention_scale"] is None:
            scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        else:  # GraniteAttention's scaling
            scores = (q @ k.transpose(-2, -1)) * c["attention_scale"]
        if c["attention_softcap"] is not None:  # Gemma2's eager attention
            scores = torch.tanh(scores / c["attention_softcap"]) * c["attention_softcap"]
        probs = torch.softmax(scores.masked_fill(mask_of(c["windows"][l]), float("-inf")), dim=-1)
        y = (probs @ v).transpose(1, 2).reshape(b, s, h * hd)
        y = linear(y, p + "self_attn.o_proj")
        if c["post_norms"]:  # Olmo2DecoderLayer
            y = norm(y, params[p + "post_attention_layernorm.weight"], eps)
        x = x + y * c["residual_multiplier"]
        if not c["pre_norms"]:
            y = x
        elif c["post_norms"]:  # Gemma2DecoderLayer
            y = norm(x, params[p + "pre_feedforward_layernorm.weight"], eps)
        else:
            y = norm(x, params[p + "post_attention_layernorm.weight"], eps)
        if c["sparse"][l]:
            y = sparse_moe(y, p + c["expert_names"][0], linear, c, router_logits)
        elif c["fused"]:  # Phi3MLP: gate, up = gate_up_proj(y).chunk(2)
            gate, up = linear(y, p + "mlp.gate_up_proj").chunk(2, dim=-1)
            y = linear(up * F.silu(gate), p + "mlp.down_proj")
        else:
            gate = linear(y, p + "mlp.gate_proj")
            act = F.gelu(gate, approximate="tanh") if c["mlp_act"] == "gelu_tanh" else F.silu(gate)
            y = linear(act * linear(y, p + "mlp.up_proj"), p + "mlp.down_proj")
        if c["post_norms"]:
            y = norm(y, params[p + "post_feedforward_layernorm.weight"], eps)
        x = x + y * c["residual_multiplier"]
    x = norm(x, params["model.norm.weight"], eps)
    head = params["model.embed_tokens.weight" if c["tie_word_embeddings"] else "lm_head.weight"]
    logits = (x @ head.t()) / c["logits_scaling"]
    if c["logit_softcap"] is not None:  # Gemma2ForCausalLM
        logits = torch.tanh(logits / c["logit_softcap"]) * c["logit_softcap"]
    loss = F.cross_entropy(logits.reshape(b * s, -1), labels.reshape(-1))
    if router_logits and c["output_router_logits"]:
        loss = loss + c["router_aux_loss_coef"] * load_balancing_loss_func(
            router_logits, c["num_local_experts"], c["num_experts_per_tok"])
    if router_logits and c.get("moe_aux_loss_coeff"):
        for layer_logits in router_logits:
            loss = loss + switch_load_balancing_loss_func(
                layer_logits, c["num_local_experts"], c["num_experts_per_tok"], c["moe_aux_loss_coeff"])
    if router_logits and c.get("moe_z_loss_coeff"):
        for layer_logits in router_logits:
            loss = loss + z_loss_func(layer_logits, c["moe_z_loss_coeff"])
    return loss


def initial_parameters(c, seed):
    """LlamaPreTrainedModel._init_weights, drawn in state-dict order."""
    generator = torch.Generator().manual_seed(seed)
    tensors = {}
    for name, shape in parameter_shapes(c).items():
        if name.endswith(".bias"):
            t = torch.zeros(shape)
        elif name.endswith("norm.weight"):  # GemmaRMSNorm's start at 0
            t = torch.zeros(shape) if c["norm_offset"] else torch.ones(shape)
        else:
            t = torch.empty(shape).normal_(0.0, c["initializer_range"], generator=generator)
            if name == c["prefix"] + "model.embed_tokens.weight" and c["pad_token_id"] is not None:
                t[c["pad_token_id"]] = 0.0
        tensors[name] = t
    return tensors


def init(a):
    c = load_config(a.config)
    tensors = initial_parameters(c, a.seed)
    write_safetensors(a.out, {n: t.numpy().astype(np.float32) for n, t in tensors.items()})


def train(a):
    if a.seq < 1:
        fail("--seq must be positive")
    if a.moe_expert_capacity_factor is not None and not a.moe_expert_capacity_factor > 0:
        fail("--moe-expert-capacity-factor must be positive")

    def load(path):
        c = load_config(path)
        c["capacity_factor"] = a.moe_expert_capacity_factor
        c["token_drop_policy"] = a.moe_token_drop_policy
        c["moe_aux_loss_coeff"] = a.moe_aux_loss_coeff
        c["moe_z_loss_coeff"] = a.moe_z_loss_coeff
        if a.moe_aux_loss_coeff and c.get("output_router_logits"):
            fail("--moe-aux-loss-coeff and output_router_logits both ask for an auxiliary loss")
        return c
    reference.train(a, (load, parameter_shapes, forward))


def count(a):
    c = load_config(a.config)
    print(f"parameters: {sum(math.prod(shape) for shape in parameter_shapes(c).values())}")


def add_llama_commands(sub):
    p = sub.add_parser("count", help="print the parameter count of CONFIG")
    p.add_argument("config")
    p.set_defaults(run=count)
    t = sub.choices["train"]
    t.add_argument("--moe-expert-capacity-factor", type=float, default=None,
                   help="Megatron-LM's token dropping (default: dropless)")
    t.add_argument("--moe-token-drop-policy", choices=("probs", "position"), default="probs")
    t.add_argument("--moe-aux-loss-coeff", type=float, default=0.0,
                   help="Megatron-LM's per-layer load-balancing loss (default: none)")
    t.add_argument("--moe-z-loss-coeff", type=float, default=0.0,
                   help="Megatron-LM's per-layer router z-loss (default: none)")


if __name__ == "__main__":
    reference.main(init_fn=init, train_fn=train, description=__doc__, extra=add_llama_commands)
