#!/usr/bin/python3
"""Two published memory tables, from megatron-run --memory-report.

1. Korthikanti et al. 2022 ("Reducing Activation Recomputation in Large
   Transformer Models"), Table 2: activation memory per transformer layer of
   GPT-3 175B (s 2048, b 1, h 12288, a 96, t 8, 16-bit activations) without
   parallelism, with tensor parallelism (TP), TP + sequence parallelism
   (SP), TP + selective recomputation, TP + SP + selective, and full
   recomputation. Ours: the report's "most stashed at once" (what the
   forward writes and the backward reads, live together at the turn from
   forward to backward) of a 2-layer model minus that of a 1-layer model of
   the same width, compiled with precision=bf16.

2. Rajbhandari et al. 2020 (ZeRO), Table 1 / Figure 1: model-state memory
   per device for Psi = 7.5B parameters on 64 data-parallel ranks with
   mixed-precision Adam (K = 12): baseline data parallelism and ZeRO stages
   1, 2 and 3. Ours: the report's "model states" (parameters, optimizer
   state, every reduced gradient, and the most 16-bit parameter copies live at once) of a
   GPT-2-shaped model of 7.46B parameters (36 layers, width 4096) compiled
   with precision=bf16 dp=64 zero=0..3.

3. Ours only: the stash of grouped-query attention's keys and values per
   layer with and without their repeats (mt-fuse's grouped-attention) for
   three LLaMA-family configs, against the repeats' bytes.

Prints the tables (the first two with the published values) and writes them to
bench/results/memory_tables.md (--out to change). Everything is compiled
and reported, nothing is run: the figures do not depend on the CPU.

usage: bench/memory_tables.py [--bin DIR] [--out FILE]
"""

import argparse
import json
import os
import shutil
import subprocess
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def sh(cmd, **kwargs):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kwargs).stdout


def gpt2(layers, width, heads, vocab, positions):
    return {"model_type": "gpt2", "activation_function": "gelu_new",
            "vocab_size": vocab, "n_positions": positions, "n_embd": width,
            "n_head": heads, "n_layer": layers, "n_inner": None,
            "layer_norm_epsilon": 1e-5, "embd_pdrop": 0.1, "attn_pdrop": 0.1,
            "resid_pdrop": 0.1}


class Compiler:
    def __init__(self, bin_dir, tmp):
        self.bin, self.tmp, self.count = bin_dir, tmp, 0

    def report(self, config, import_flags, pipeline):
        self.count += 1
        base = os.path.join(self.tmp, str(self.count))
        with open(base + ".json", "w") as f:
            json.dump(config, f)
        model = sh([f"{self.bin}/megatron-translate", "--import-hf-config",
                    base + ".json"] + import_flags)
        step = sh([f"{self.bin}/megatron-opt", f"--mt-train-pipeline={pipeline}"],
                  input=model)
        sh([f"{self.bin}/megatron-translate", "--export-artifact", "-o",
            base + ".mtx"], input=step)
        sh([f"{self.bin}/megatron-run", base + ".mtx", "--memory-report-json",
            base + ".report.json"])
        with open(base + ".report.json") as f:
            return json.load(f)["stages"][0]


def korthikanti(compiler):
    s, b, h, a, t = 2048, 1, 12288, 96, 8
    sbh = s * b * h
    flags = ["--micro-batch-size", "1", "--seq-length", str(s)]
    # (configuration, pipeline options, published coefficient of sbh)
    rows = [
        ("no parallelism", "", 34 + 5 * a * s / h),
        ("tensor parallel (TP)", "tp=8", 10 + 24 / t + 5 * a * s / (h * t)),
        ("TP + sequence parallel (SP)", "tp=8 sp=true", 34 / t + 5 * a * s / (h * t)),
        ("TP + selective recompute", "tp=8 remat=selective", 10 + 24 / t),
        ("TP + SP + selective recompute", "tp=8 sp=true remat=selective", 34 / t),
        ("full recompute", "remat=full", 2),
        ("full recompute, TP + SP", "tp=8 sp=true remat=full", 2),
    ]
    lines = [
        "## Activation memory per transformer layer, GPT-3 175B "
        "(Korthikanti et al. 2022, Table 2)",
        "",
        f"s = {s}, b = {b}, h = {h}, a = {a}, t = {t}; 16-bit activations "
        f"(precision=bf16); sbh = {sbh:,} bytes at 1 byte per element.",
        "",
        "| configuration | published (x sbh) | published MiB | ours (x sbh) | ours MiB | ours / published |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for name, options, published in rows:
        stashed = []
        for layers in (1, 2):
            config = gpt2(layers, h, a, 1024, s)
            stage = compiler.report(config, flags, f"precision=bf16 {options}".strip())
            stashed.append(stage["max_stashed"])
        ours = stashed[1] - stashed[0]
        lines.append(f"| {name} | {published:.2f} | {published * sbh / 2**20:,.0f} | "
                     f"{ours / sbh:.2f} | {ours / 2**20:,.0f} | {ours / (published * sbh):.3f} |")
        print(lines[-1], flush=True)
    return lines


def zero(compiler):
    psi_published, nd = 7.5e9, 64
    config = gpt2(36, 4096, 32, 50257, 1024)
    flags = ["--micro-batch-size", "1", "--global-batch-size", str(nd),
             "--seq-length", "1024"]
    published = {0: (2 + 2 + 12) * psi_published,
                 1: 2 * psi_published + 2 * psi_published + 12 * psi_published / nd,
                 2: 2 * psi_published + (2 + 12) * psi_published / nd,
                 3: (2 + 2 + 12) * psi_published / nd}
    names = {0: "baseline data parallelism", 1: "ZeRO-1 (P_os)",
             2: "ZeRO-2 (P_os+g)", 3: "ZeRO-3 (P_os+g+p)"}
    lines = [
        "## Model-state memory per device, Psi = 7.5B, 64 data-parallel ranks "
        "(ZeRO, Rajbhandari et al. 2020, Table 1)",
        "",
        "Published: mixed-precision Adam, K = 12 (2 Psi fp16 parameters, 2 Psi fp16 "
        "gradients, 12 Psi fp32 master weights, momentum and variance). Ours: a "
        "GPT-2-shaped model of 7.46B parameters (36 layers, width 4096), "
        "precision=bf16 dp=64 zero=k; GB = 1e9 bytes; per Psi = bytes / parameters.",
        "",
        "| configuration | published GB | published per Psi | ours GB | ours per Psi | parameters | optimizer state | gradients | 16-bit copies (persistent + most at once) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    psi = None
    for k in range(4):
        stage = compiler.report(config, flags, f"precision=bf16 dp={nd} zero={k}")
        if psi is None:
            # fp32 master weights: 4 bytes per parameter, unsharded at ZeRO-0.
            psi = stage["parameters"] / 4
        total = stage["model_states"]
        lines.append(
            f"| {names[k]} | {published[k] / 1e9:.1f} | {published[k] / psi_published:.3f} | "
            f"{total / 1e9:.1f} | {total / psi:.3f} | {stage['parameters'] / psi:.3f} | "
            f"{stage['optimizer_state'] / psi:.3f} | {stage['gradients_total'] / psi:.3f} | "
            f"{(stage['persistent_parameter_copies'] + stage['max_parameter_copies']) / psi:.3f} |")
        print(lines[-1], flush=True)
    return lines


def gqa(compiler):
    """Grouped-query attention: the stash per layer with the keys and values
    repeated for every query head (grouped-attention=false, as Hugging
    Face's repeat_kv and Megatron-LM's unfused path store them) and read in
    place (the default), against the repeats' bytes."""
    s, b, dtype_bytes = 4096, 1, 2
    flags = ["--micro-batch-size", str(b), "--seq-length", str(s)]
    models = [("Llama-3-8B", "llama-3-8b.json", 8),
              ("Mistral-7B-v0.1", "mistral-7b-v0.1.json", 8),
              ("Qwen2-0.5B", "qwen2-0.5b.json", 2)]
    lines = [
        "## Grouped-query attention's stashed keys and values per layer (ours)",
        "",
        f"s = {s}, b = {b}, 16-bit activations, tensor and sequence parallel "
        "(precision=bf16 tp=t sp=true); per layer: a 2-layer model's most "
        "stashed at once minus a 1-layer model's. Repeated: "
        "grouped-attention=false; grouped: the default. The repeats' bytes: "
        "keys and values, (a - g) / t heads each beyond the g / t stored, "
        "2 (a - g) s b d / t elements.",
        "",
        "| model | heads a / kv heads g | t | repeated MiB | grouped MiB | saved MiB | repeats' MiB | saved / repeats' |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, file, t in models:
        with open(os.path.join(ROOT, "examples", "llama", file)) as f:
            base = json.load(f)
        a, g = base["num_attention_heads"], base["num_key_value_heads"]
        d = base.get("head_dim") or base["hidden_size"] // a
        per_layer = {}
        for grouped in ("false", "true"):
            stashed = []
            for layers in (1, 2):
                config = dict(base, num_hidden_layers=layers)
                stage = compiler.report(
                    config, flags,
                    f"precision=bf16 tp={t} sp=true grouped-attention={grouped}")
                stashed.append(stage["max_stashed"])
            per_layer[grouped] = stashed[1] - stashed[0]
        saved = per_layer["false"] - per_layer["true"]
        repeats = 2 * (a - g) * s * b * d // t * dtype_bytes
        lines.append(f"| {name} | {a} / {g} | {t} | {per_layer['false'] / 2**20:,.1f} | "
                     f"{per_layer['true'] / 2**20:,.1f} | {saved / 2**20:,.1f} | "
                     f"{repeats / 2**20:,.1f} | {saved / repeats:.3f} |")
        print(lines[-1], flush=True)
    return lines


def main():
    parser = argparse.ArgumentParser()
    on_path = shutil.which("megatron-opt")
    parser.add_argument("--bin", default=os.path.dirname(on_path) if on_path
                        else os.path.join(ROOT, "build", "bin"))
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "results",
                                                      "memory_tables.md"))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        compiler = Compiler(args.bin, tmp)
        lines = ["# Published memory tables, from megatron-run --memory-report", "",
                 "`bench/memory_tables.py` (see its docstring); "
                 "`docs/memory-tables.md` says why each figure differs.", ""]
        lines += korthikanti(compiler) + [""] + zero(compiler) + [""] + gqa(compiler)
    with open(args.out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
