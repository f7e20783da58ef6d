#!/usr/bin/python3
"""An independent LLaMA-family training reference in PyTorch, for equivalence
tests: Llama, Mistral and Qwen2 configs, written from Hugging Face's
modeling_llama.py / modeling_qwen2.py (LlamaRMSNorm, rotate_half and
apply_rotary_pos_emb, repeat_kv, LlamaMLP, _compute_llama3_parameters,
_init_weights), not from megatron-mlir's code.

Subcommands and options are those of gpt2_reference.py (init, tokens, train,
compare); the training loop (AdamW, Megatron-LM's learning-rate schedule,
weight decay on rank >= 2 tensors, clipping) is shared with it.
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


def load_config(path):
    with open(path) as f:
        c = json.load(f)
    if c.get("model_type") not in ("llama", "mistral", "qwen2"):
        sys.exit("llama_reference: model_type must be llama, mistral or qwen2")
    if c.get("attention_dropout", 0.0) != 0:
        sys.exit("llama_reference: attention_dropout must be 0")
    c.setdefault("num_key_value_heads", c["num_attention_heads"])
    c.setdefault("head_dim", c["hidden_size"] // c["num_attention_heads"])
    c.setdefault("rms_norm_eps", 1e-6)
    c.setdefault("rope_theta", 10000.0)
    c.setdefault("rope_scaling", None)
    c.setdefault("tie_word_embeddings", False)
    c.setdefault("initializer_range", 0.02)
    qwen2 = c["model_type"] == "qwen2"
    c["qkv_bias"] = qwen2 or c.get("attention_bias", False)
    c["o_bias"] = not qwen2 and c.get("attention_bias", False)
    c["mlp_bias"] = c.get("mlp_bias", False)
    return c


def parameter_shapes(c):
    d, hd = c["hidden_size"], c["head_dim"]
    h, kv, inter = c["num_attention_heads"], c["num_key_value_heads"], c["intermediate_size"]
    shapes = {"model.embed_tokens.weight": (c["vocab_size"], d)}

    def linear(name, out, inp, bias):
        shapes[name + ".weight"] = (out, inp)
        if bias:
            shapes[name + ".bias"] = (out,)

    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        shapes[p + "input_layernorm.weight"] = (d,)
        linear(p + "self_attn.q_proj", h * hd, d, c["qkv_bias"])
        linear(p + "self_attn.k_proj", kv * hd, d, c["qkv_bias"])
        linear(p + "self_attn.v_proj", kv * hd, d, c["qkv_bias"])
        linear(p + "self_attn.o_proj", d, h * hd, c["o_bias"])
        shapes[p + "post_attention_layernorm.weight"] = (d,)
        linear(p + "mlp.gate_proj", inter, d, c["mlp_bias"])
        linear(p + "mlp.up_proj", inter, d, c["mlp_bias"])
        linear(p + "mlp.down_proj", d, inter, c["mlp_bias"])
    shapes["model.norm.weight"] = (d,)
    if not c["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (c["vocab_size"], d)
    return shapes


def rms_norm(x, weight, eps):
    # LlamaRMSNorm: in float32, x * rsqrt(mean(x^2) + eps), then * weight.
    variance = x.pow(2).mean(-1, keepdim=True)
    return weight * (x * torch.rsqrt(variance + eps))


def inverse_frequencies(c):
    hd = c["head_dim"]
    inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.int64).float() / hd))
    scaling = c["rope_scaling"]
    if scaling:
        kind = scaling.get("rope_type", scaling.get("type"))
        if kind != "llama3":
            sys.exit(f"llama_reference: rope_scaling {kind} not supported")
        # _compute_llama3_parameters
        factor = scaling["factor"]
        low, high = scaling["low_freq_factor"], scaling["high_freq_factor"]
        old = scaling["original_max_position_embeddings"]
        low_wavelen, high_wavelen = old / low, old / high
        wavelen = 2 * math.pi / inv_freq
        llama = torch.where(wavelen > low_wavelen, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * llama / factor + smooth * llama
        medium = ~(wavelen < high_wavelen) * ~(wavelen > low_wavelen)
        inv_freq = torch.where(medium, smoothed, llama)
    return inv_freq


def rotate_half(x):
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def repeat_kv(x, groups):
    b, kv, s, hd = x.shape
    if groups == 1:
        return x
    return x[:, :, None, :, :].expand(b, kv, groups, s, hd).reshape(b, kv * groups, s, hd)


def forward(params, ids, labels, c):
    b, s = ids.shape
    d, hd = c["hidden_size"], c["head_dim"]
    h, kv = c["num_attention_heads"], c["num_key_value_heads"]
    eps = c["rms_norm_eps"]

    def linear(x, name):
        y = x @ params[name + ".weight"].t()
        return y + params[name + ".bias"] if name + ".bias" in params else y

    freqs = torch.arange(s, dtype=torch.float32)[:, None] * inverse_frequencies(c)[None, :]
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos(), emb.sin()
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    x = params["model.embed_tokens.weight"][ids]
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        y = rms_norm(x, params[p + "input_layernorm.weight"], eps)
        q = linear(y, p + "self_attn.q_proj").view(b, s, h, hd).transpose(1, 2)
        k = linear(y, p + "self_attn.k_proj").view(b, s, kv, hd).transpose(1, 2)
        v = linear(y, p + "self_attn.v_proj").view(b, s, kv, hd).transpose(1, 2)
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        k, v = repeat_kv(k, h // kv), repeat_kv(v, h // kv)
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(hd)
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        y = (probs @ v).transpose(1, 2).reshape(b, s, h * hd)
        x = x + linear(y, p + "self_attn.o_proj")
        y = rms_norm(x, params[p + "post_attention_layernorm.weight"], eps)
        y = F.silu(linear(y, p + "mlp.gate_proj")) * linear(y, p + "mlp.up_proj")
        x = x + linear(y, p + "mlp.down_proj")
    x = rms_norm(x, params["model.norm.weight"], eps)
    head = params["model.embed_tokens.weight" if c["tie_word_embeddings"] else "lm_head.weight"]
    logits = x @ head.t()
    return F.cross_entropy(logits.reshape(b * s, -1), labels.reshape(-1))


def init(a):
    # LlamaPreTrainedModel._init_weights: normal(0, initializer_range) for
    # Linear and Embedding weights, zero biases, RMSNorm weights 1.
    c = load_config(a.config)
    rng = np.random.default_rng(a.seed)
    tensors = {}
    for name, shape in parameter_shapes(c).items():
        if name.endswith(".bias"):
            tensors[name] = np.zeros(shape, np.float32)
        elif "norm" in name:
            tensors[name] = np.ones(shape, np.float32)
        else:
            tensors[name] = rng.normal(0.0, c["initializer_range"], shape).astype(np.float32)
    write_safetensors(a.out, tensors)


def train(a):
    reference.train(a, (load_config, parameter_shapes, forward))


if __name__ == "__main__":
    reference.main(init_fn=init, train_fn=train, description=__doc__)
