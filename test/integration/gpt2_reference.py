#!/usr/bin/python3
"""An independent GPT-2 training reference in PyTorch, for equivalence tests.

Subcommands:
  init CONFIG OUT.safetensors --seed N
      writes a random GPT-2 initialization with Hugging Face names and layouts
  tokens OUT.bin --count N --vocab V --seed N
      writes a random uint16 token file (nanoGPT's train.bin format)
  train CONFIG INIT.safetensors TOKENS.bin --steps T --batch B --seq S ...
        --out-log LOG.jsonl --out-params OUT.safetensors
      trains with torch.optim.AdamW exactly as megatron-run does (Megatron-LM's
      learning-rate schedule, weight decay on rank >= 2 tensors only, clipping
      by global norm) and writes per-step losses and the final parameters
  compare REF.jsonl REF.safetensors RUN.jsonl RUN.safetensors --loss-rtol X
        --param-tol Y
      checks per-step loss within X relative and every tensor within
      Y * max|reference| absolute; prints the worst cases; exits 1 on failure

The model is written from the GPT-2 paper and Hugging Face's GPT2LMHeadModel,
not from megatron-mlir's code. Dropout must be 0 in the config: PyTorch's masks
cannot match megatron-mlir's counter-based ones.
"""

import argparse
import json
import math
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

from safetensors_io import read_safetensors, write_safetensors  # noqa: F401

def load_config(path):
    with open(path) as f:
        c = json.load(f)
    for key in ("embd_pdrop", "attn_pdrop", "resid_pdrop"):
        if c.get(key, 0.1) != 0:
            sys.exit(f"reference: {key} must be 0 (dropout masks cannot match)")
    c.setdefault("n_inner", None)
    c["n_inner"] = c["n_inner"] or 4 * c["n_embd"]
    c.setdefault("layer_norm_epsilon", 1e-5)
    c.setdefault("tie_word_embeddings", True)
    return c


def parameter_shapes(c):
    d, inner = c["n_embd"], c["n_inner"]
    shapes = {"wte.weight": (c["vocab_size"], d), "wpe.weight": (c["n_positions"], d)}
    for l in range(c["n_layer"]):
        p = f"h.{l}."
        shapes.update(
            {
                p + "ln_1.weight": (d,),
                p + "ln_1.bias": (d,),
                p + "attn.c_attn.weight": (d, 3 * d),
                p + "attn.c_attn.bias": (3 * d,),
                p + "attn.c_proj.weight": (d, d),
                p + "attn.c_proj.bias": (d,),
                p + "ln_2.weight": (d,),
                p + "ln_2.bias": (d,),
                p + "mlp.c_fc.weight": (d, inner),
                p + "mlp.c_fc.bias": (inner,),
                p + "mlp.c_proj.weight": (inner, d),
                p + "mlp.c_proj.bias": (d,),
            }
        )
    shapes["ln_f.weight"] = (d,)
    shapes["ln_f.bias"] = (d,)
    if not c["tie_word_embeddings"]:
        shapes["lm_head.weight"] = (c["vocab_size"], d)
    return shapes


def forward(params, ids, labels, c):
    b, s = ids.shape
    d, h = c["n_embd"], c["n_head"]
    eps = c["layer_norm_epsilon"]
    x = params["wte.weight"][ids] + params["wpe.weight"][:s]
    mask = torch.triu(torch.ones(s, s, dtype=torch.bool), diagonal=1)
    for l in range(c["n_layer"]):
        p = f"h.{l}."
        y = F.layer_norm(x, (d,), params[p + "ln_1.weight"], params[p + "ln_1.bias"], eps)
        qkv = y @ params[p + "attn.c_attn.weight"] + params[p + "attn.c_attn.bias"]
        q, k, v = (t.view(b, s, h, d // h).transpose(1, 2) for t in qkv.split(d, dim=2))
        scores = (q @ k.transpose(-2, -1)) / math.sqrt(d // h)
        probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
        y = (probs @ v).transpose(1, 2).reshape(b, s, d)
        x = x + y @ params[p + "attn.c_proj.weight"] + params[p + "attn.c_proj.bias"]
        y = F.layer_norm(x, (d,), params[p + "ln_2.weight"], params[p + "ln_2.bias"], eps)
        y = F.gelu(y @ params[p + "mlp.c_fc.weight"] + params[p + "mlp.c_fc.bias"], approximate="tanh")
        x = x + y @ params[p + "mlp.c_proj.weight"] + params[p + "mlp.c_proj.bias"]
    x = F.layer_norm(x, (d,), params["ln_f.weight"], params["ln_f.bias"], eps)
    head = params["wte.weight" if c["tie_word_embeddings"] else "lm_head.weight"]
    logits = x @ head.t()
    return F.cross_entropy(logits.reshape(b * s, -1), labels.reshape(-1))


def megatron_lr(step, a):
    """Megatron-LM's OptimizerParamScheduler.get_lr for update `step` (1-based),
    which Megatron runs with num_steps = step - 1 completed updates."""
    warmup, decay = a.lr_warmup_iters, a.lr_decay_iters or a.steps
    step -= 1
    if warmup > 0 and step <= warmup:
        return a.lr * step / warmup
    if a.lr_decay_style == "constant":
        return a.lr
    if step > decay:
        return a.min_lr
    ratio = (step - warmup) / (decay - warmup)
    coeff = 1.0 - ratio if a.lr_decay_style == "linear" else 0.5 * (math.cos(math.pi * ratio) + 1.0)
    return a.min_lr + coeff * (a.lr - a.min_lr)


def train(a, model=None):
    """Trains the model `model` = (load_config, parameter_shapes, forward),
    GPT-2 by default (llama_reference.py passes LLaMA's)."""
    load, shapes_of, step_loss = model or (load_config, parameter_shapes, forward)
    torch.manual_seed(0)
    if a.threads:
        torch.set_num_threads(a.threads)
    c = load(a.config)
    init = read_safetensors(a.init)
    params = {n: torch.tensor(init[n], requires_grad=True) for n in shapes_of(c)}
    tokens = np.fromfile(a.tokens, dtype="<u2").astype(np.int64)
    decay = [p for p in params.values() if p.dim() >= 2]
    no_decay = [p for p in params.values() if p.dim() < 2]
    opt = torch.optim.AdamW(
        [
            {"params": decay, "weight_decay": a.weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ],
        lr=a.lr,
        betas=(a.adam_beta1, a.adam_beta2),
        eps=a.adam_eps,
    )
    with open(a.out_log, "w") as log:
        for step in range(1, a.steps + 1):
            rows = []
            for i in range(a.batch):
                start = ((step - 1) * a.batch + i) * a.seq
                rows.append(tokens[start : start + a.seq + 1])
            rows = torch.tensor(np.stack(rows))
            start = time.perf_counter()
            lr = megatron_lr(step, a)
            for group in opt.param_groups:
                group["lr"] = lr
            opt.zero_grad()
            loss = step_loss(params, rows[:, :-1], rows[:, 1:], c)
            loss.backward()
            norm = torch.nn.utils.clip_grad_norm_(
                list(params.values()), a.clip_grad if a.clip_grad > 0 else float("inf")
            )
            opt.step()
            seconds = time.perf_counter() - start
            log.write(json.dumps({"step": step, "loss": loss.item(), "lr": lr,
                                  "grad_norm": float(norm), "step_time_s": seconds}) + "\n")
    write_safetensors(a.out_params, {n: p.detach().numpy().astype(np.float32) for n, p in params.items()})


def init(a):
    c = load_config(a.config)
    rng = np.random.default_rng(a.seed)
    tensors = {}
    for name, shape in parameter_shapes(c).items():
        if name.endswith(".bias"):
            tensors[name] = np.zeros(shape, np.float32)
        elif "ln_" in name:
            tensors[name] = np.ones(shape, np.float32)
        else:
            tensors[name] = rng.normal(0.0, 0.02, shape).astype(np.float32)
    write_safetensors(a.out, tensors)


def tokens(a):
    rng = np.random.default_rng(a.seed)
    rng.integers(0, a.vocab, a.count).astype("<u2").tofile(a.out)


def compare(a):
    def losses(path):
        with open(path) as f:
            return [json.loads(line)["loss"] for line in f if line.strip()]

    ref, run = losses(a.ref_log), losses(a.run_log)
    ok = len(ref) == len(run)
    if not ok:
        print(f"step counts differ: reference {len(ref)}, run {len(run)}")
    worst_loss = 0.0
    for step, (r, m) in enumerate(zip(ref, run), start=1):
        rel = abs(r - m) / abs(r)
        worst_loss = max(worst_loss, rel)
        status = "ok" if rel <= a.loss_rtol else "FAIL"
        ok &= rel <= a.loss_rtol
        print(f"step {step}: loss reference {r:.7f} run {m:.7f} relative {rel:.2e} {status}")
    ref_p, run_p = read_safetensors(a.ref_params), read_safetensors(a.run_params)
    worst_param = 0.0
    for name, r in ref_p.items():
        if name not in run_p or run_p[name].shape != r.shape:
            print(f"{name}: missing or wrong shape in the run")
            ok = False
            continue
        diff = float(np.max(np.abs(run_p[name] - r)))
        err = diff / max(float(np.max(np.abs(r))), 1e-30)
        # An absolute floor, for tensors whose true gradient is zero (a key
        # bias: softmax ignores a shift shared by all keys), so that AdamW
        # turns rounding noise into their whole value.
        if diff <= a.param_atol:
            continue
        worst_param = max(worst_param, err)
        if err > a.param_tol:
            print(f"{name}: max |run - reference| / max |reference| = {err:.2e} FAIL")
            ok = False
    print(f"worst loss relative difference {worst_loss:.2e} (tolerance {a.loss_rtol:g})")
    print(f"worst parameter difference {worst_param:.2e} of the largest magnitude (tolerance {a.param_tol:g})")
    print("equivalent" if ok else "NOT EQUIVALENT")
    sys.exit(0 if ok else 1)


def main(init_fn=init, train_fn=train, description=__doc__, extra=None):
    """The command line; another model's reference passes its own init and
    train, and `extra`, a function that adds its own subcommands to the
    subparsers (llama_reference.py)."""
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("init")
    p.add_argument("config")
    p.add_argument("out")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=init_fn)
    p = sub.add_parser("tokens")
    p.add_argument("out")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--vocab", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(run=tokens)
    p = sub.add_parser("train")
    p.add_argument("config")
    p.add_argument("init")
    p.add_argument("tokens")
    p.add_argument("--steps", type=int, required=True)
    p.add_argument("--batch", type=int, required=True)
    p.add_argument("--seq", type=int, required=True)
    p.add_argument("--lr", type=float, default=6e-4)
    p.add_argument("--min-lr", type=float, default=0.0)
    p.add_argument("--lr-warmup-iters", type=int, default=0)
    p.add_argument("--lr-decay-iters", type=int, default=0)
    p.add_argument("--lr-decay-style", default="linear")
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--adam-beta1", type=float, default=0.9)
    p.add_argument("--adam-beta2", type=float, default=0.999)
    p.add_argument("--adam-eps", type=float, default=1e-8)
    p.add_argument("--clip-grad", type=float, default=1.0)
    p.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    p.add_argument("--out-log", required=True)
    p.add_argument("--out-params", required=True)
    p.set_defaults(run=train_fn)
    p = sub.add_parser("compare")
    p.add_argument("ref_log")
    p.add_argument("ref_params")
    p.add_argument("run_log")
    p.add_argument("run_params")
    p.add_argument("--loss-rtol", type=float, default=1e-4)
    p.add_argument("--param-tol", type=float, default=1e-4)
    p.add_argument("--param-atol", type=float, default=0.0,
                   help="a tensor within this absolute difference passes")
    p.set_defaults(run=compare)
    if extra:
        extra(sub)
    args = parser.parse_args()
    args.run(args)


if __name__ == "__main__":
    main()
