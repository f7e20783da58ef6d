#!/usr/bin/env python3
"""PyTorch's GPT-2 training step on one GPU: the baseline of issue 12's bench.

A straightforward nn.Module GPT-2 (pre-norm, GeLU MLP, tied embedding),
causal attention through F.scaled_dot_product_attention, bf16 autocast with
fp32 weights, torch.optim.AdamW(fused=True), run eager or under
torch.compile. For each run it prints one JSON line: tokens/s (median step
after the warm-up steps), MFU against a dense bf16 peak (989 TFLOP/s, H100
SXM), and the peak memory the caching allocator handed out.

Runs on the GPU machine (scripts/gpu-check.sh calls it); needs only torch.

Each step clips the gradients' global norm at --clip-grad (default 1.0,
torch.nn.utils.clip_grad_norm_ with its foreach kernels) before AdamW, as
megatron-run's step does by default (Megatron-LM's --clip-grad 1.0, and
nanoGPT's): the same step, the norm's pass over every gradient included.
Until 2026-11-27's ninth session the baseline did not clip; --clip-grad 0
measures it so, and --clip-grad 1.0,0 both in one process (one
compilation: the clipping runs outside the compiled model), which says
what clipping costs PyTorch's step on the same GPU.

With --accumulate K1,K2,... it runs one measurement per K in the same
process (one compilation): K micro-batches of B sequences a step, their
gradients accumulated (each loss divided by K, as Megatron-LM's and
nanoGPT's gradient accumulation), then one optimizer step; tokens/s counts
the K * B * S tokens of a step.

The learning rate is --lr (constant; default 1e-4), AdamW's other
hyperparameters PyTorch's defaults (betas 0.9, 0.999, eps 1e-8, weight
decay 0.01), which are megatron-run's: gpu-check.sh runs megatron-run's
bench at the same constant rate (--lr 1e-4 --lr-decay-style constant), so
that the two losses a bench prints come from one optimizer.

usage: gpu_torch_baseline.py --model 124m|350m|1.3b [--mode eager|compile]
                             [--batch B] [--seq S] [--steps N] [--lr X]
                             [--accumulate K[,K...]] [--clip-grad X[,X...]]
"""

import argparse
import json
import math
import statistics
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# (layers, width, heads): GPT-2 small and medium, and the 1.3B config of
# issue 12 (width 2048, 24 layers).
MODELS = {"124m": (12, 768, 12), "350m": (24, 1024, 16), "1.3b": (24, 2048, 16)}
VOCAB = 50257
PEAK_BF16_FLOPS = 989e12


class Block(nn.Module):
    def __init__(self, width, heads):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(width)
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)
        self.ln2 = nn.LayerNorm(width)
        self.fc = nn.Linear(width, 4 * width)
        self.out = nn.Linear(4 * width, width)

    def forward(self, x):
        b, s, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        shape = (b, s, self.heads, d // self.heads)
        q, k, v = (t.view(shape).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(y.transpose(1, 2).reshape(b, s, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class GPT2(nn.Module):
    def __init__(self, layers, width, heads, seq):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, width)
        self.wpe = nn.Embedding(seq, width)
        self.blocks = nn.ModuleList(Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width)
        self.initialize(layers)

    def initialize(self, layers):
        """GPT-2's initialization, as Hugging Face's GPT2PreTrainedModel and
        megatron-run's imported models draw it: weights and embeddings from
        N(0, 0.02), the residual projections' from N(0, 0.02 / sqrt(2 *
        layers)), biases zero, LayerNorm weights one. (PyTorch's defaults, N(0, 1) embeddings
        tied to the head, started the baseline at a loss near 480.)"""
        for name, p in self.named_parameters():
            if name.endswith(("proj.weight", "out.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * layers))
            elif p.dim() == 2:
                nn.init.normal_(p, std=0.02)
            elif name.endswith("bias"):
                nn.init.zeros_(p)

    def forward(self, tokens, targets):
        positions = torch.arange(tokens.shape[1], device=tokens.device)
        x = self.wte(tokens) + self.wpe(positions)
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()
        return F.cross_entropy(logits.view(-1, VOCAB).float(), targets.view(-1))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--model", choices=MODELS, default="124m")
    parser.add_argument("--mode", choices=["eager", "compile"], default="eager")
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--seq", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--lr", default="1e-4",
                        help="AdamW's learning rate, constant (1e-4)")
    parser.add_argument("--accumulate", default="1",
                        help="micro-batches a step, or a comma list of them")
    parser.add_argument("--clip-grad", default="1.0",
                        help="clip the global gradient norm at X before "
                             "AdamW (megatron-run's default 1.0; 0: none), "
                             "or a comma list of them, each measured")
    args = parser.parse_args()
    clips = []
    for text in args.clip_grad.split(","):
        try:
            clip = float(text)
        except ValueError:
            clip = math.nan
        if not (math.isfinite(clip) and clip >= 0):
            parser.error("--clip-grad: norms of 0 or more, not %r" % text)
        clips.append(clip)
    try:
        lr = float(args.lr)
    except ValueError:
        lr = math.nan
    if not (math.isfinite(lr) and lr > 0):
        parser.error("--lr: a positive rate, not %r" % args.lr)
    accumulations = args.accumulate.split(",")
    if not all(k.isdigit() and int(k) > 0 for k in accumulations):
        parser.error("--accumulate: a comma list of positive integers, not %r"
                     % args.accumulate)
    accumulations = [int(k) for k in accumulations]

    layers, width, heads = MODELS[args.model]
    torch.manual_seed(0)
    device = torch.device("cuda")
    model = GPT2(layers, width, heads, args.seq).to(device)
    params = sum(p.numel() for p in model.parameters())
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, fused=True)
    step_fn = torch.compile(model) if args.mode == "compile" else model
    for clip in clips:
        for accumulate in accumulations:
            measure(args, model, step_fn, optimizer, accumulate, clip, params,
                    layers, width, device)


def measure(args, model, step_fn, optimizer, accumulate, clip, params, layers,
            width, device):
    """Times warm-up plus args.steps optimizer steps of `accumulate`
    micro-batches each, the gradients' norm clipped at `clip` (0: not),
    and prints their JSON line."""
    tokens = torch.randint(0, VOCAB, (accumulate, args.batch, args.seq + 1),
                           device=device)
    inputs, targets = tokens[..., :-1].contiguous(), tokens[..., 1:].contiguous()

    times, losses = [], []
    torch.cuda.reset_peak_memory_stats()
    for step in range(args.warmup + args.steps):
        torch.cuda.synchronize()
        start = time.perf_counter()
        step_loss = 0.0
        for micro in range(accumulate):
            with torch.autocast("cuda", dtype=torch.bfloat16):
                loss = step_fn(inputs[micro], targets[micro]) / accumulate
            loss.backward()
            step_loss += loss.detach()
        if clip > 0:
            torch.nn.utils.clip_grad_norm_(model.parameters(), clip,
                                           foreach=True)
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        torch.cuda.synchronize()
        if step >= args.warmup:
            times.append(time.perf_counter() - start)
        losses.append(float(step_loss))

    step_time = statistics.median(times)
    tokens_per_step = accumulate * args.batch * args.seq
    # 6N per token for the GEMMs (N without the position table), plus the
    # attention's scores and values, 12 * layers * seq * width per token,
    # counted in full (not halved for the causal mask), as nanoGPT's and
    # Megatron-LM's MFU do.
    non_embedding = params - args.seq * width
    flops_per_token = 6 * non_embedding + 12 * layers * args.seq * width
    tokens_per_s = tokens_per_step / step_time
    print(json.dumps({
        "framework": "pytorch-" + args.mode, "torch": torch.__version__,
        "gpu": torch.cuda.get_device_name(), "model": args.model,
        "params": params, "batch": args.batch, "seq": args.seq,
        "accumulate": accumulate, "clip_grad": clip, "lr": float(args.lr),
        "step_time_s": round(step_time, 5),
        "tokens_per_s": round(tokens_per_s, 1),
        "mfu": round(tokens_per_s * flops_per_token / PEAK_BF16_FLOPS, 4),
        "peak_memory_bytes": torch.cuda.max_memory_allocated(),
        "first_loss": round(losses[0], 4), "last_loss": round(losses[-1], 4),
        "finite": all(math.isfinite(l) for l in losses)}), flush=True)

if __name__ == "__main__":
    main()
