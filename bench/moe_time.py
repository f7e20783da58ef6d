#!/usr/bin/python3
"""What a mixture of experts costs against the dense MLP of the same FLOPs.

A LLaMA-family model (width 512, 8 heads, 4 key/value heads, 4 layers,
vocabulary 8192, sequence 256, micro-batch 4) compiled twice: as Mixtral
(8 experts of intermediate size 704, 2 per token: 2.3 times the
parameters) and as a dense LLaMA whose MLP has intermediate size 1408, so
that each token's MLP multiplies as many weights (the baseline). Both run
on the CPU backend, interleaved, --repeat rounds of --steps steps; the
median step time after each run's first two steps, its ratio to the dense
model's in the same run, and the model FLOPs (mt-print-model-summary's: 6
times the parameters a token uses, plus attention) per second. Expectation:
about the dense model's time: the same GEMM FLOPs in 8 smaller GEMMs per
projection (about 256 rows each), plus the router and the routing's
copies (each token's 2 rows, gathered and scattered back), which are
small beside the GEMMs; the planned peak is larger by the experts'
parameters, gradients and optimizer state.

Results are appended to bench/results/moe_time_cpu.md.

usage: bench/moe_time.py [--steps N] [--repeat R]
"""

import argparse
import datetime
import json
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_runs import BIN, append_results, compile_artifact, run_steps, sh  # noqa: E402
from machine import cpu_model  # noqa: E402

WIDTH, LAYERS, SEQ, BATCH, EXPERTS, PER_TOKEN, EXPERT_INTER = 512, 4, 256, 4, 8, 2, 704


def config(moe):
    base = {"hidden_act": "silu", "vocab_size": 8192, "hidden_size": WIDTH,
            "num_hidden_layers": LAYERS, "num_attention_heads": 8,
            "num_key_value_heads": 4, "max_position_embeddings": SEQ,
            "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
            "tie_word_embeddings": False}
    if moe:
        return dict(base, model_type="mixtral", sliding_window=None,
                    intermediate_size=EXPERT_INTER,
                    num_local_experts=EXPERTS, num_experts_per_tok=PER_TOKEN)
    return dict(base, model_type="llama",
                intermediate_size=EXPERT_INTER * PER_TOKEN)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    models = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name, moe in (("mixtral", True), ("llama (baseline)", False)):
            path = os.path.join(tmp, f"{moe}.json")
            with open(path, "w") as f:
                json.dump(config(moe), f)
            model = os.path.join(tmp, f"{moe}.mlir")
            sh([f"{BIN}/megatron-translate", "--import-hf-config", path,
                "--micro-batch-size", str(BATCH), "--seq-length", str(SEQ),
                "-o", model])
            summary = sh([f"{BIN}/megatron-opt", model,
                          "--mt-print-model-summary", "-o", os.devnull]).stderr
            params = int(re.search(r"parameters: (\d+)", summary).group(1))
            flops = int(re.search(r"training FLOPs per token: (\d+)",
                                  summary).group(1))
            artifact = os.path.join(tmp, f"{moe}.mtx")
            compile_artifact(model, "", artifact)
            models[name] = {"artifact": artifact, "params": params,
                            "flops": flops, "times": []}
        for _ in range(args.repeat):
            for name, m in models.items():
                m["peak"], steps = run_steps(m["artifact"], args.steps,
                                             m["artifact"] + ".jsonl")
                m["times"] += [s["step_time_s"] for s in steps[2:]]
                m["loss"] = steps[-1]["loss"]
    base = statistics.median(models["llama (baseline)"]["times"])
    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    lines = [
        f"\n## {stamp}: {cpu_model()} ({os.cpu_count()} cores)\n",
        f"Width {WIDTH}, {LAYERS} layers, 8 heads (4 key/value), vocabulary 8192, "
        f"{BATCH} x {SEQ} tokens a step; Mixtral: {EXPERTS} experts of "
        f"intermediate size {EXPERT_INTER}, {PER_TOKEN} per token; baseline: "
        f"the dense LLaMA of intermediate size {EXPERT_INTER * PER_TOKEN} in "
        f"this run. {args.repeat} interleaved runs of {args.steps} steps, "
        "median step time after each run's first two.\n",
        "| model | parameters | model FLOPs a token | step s | ratio to dense | "
        "model TFLOP/s | planned peak B | last loss |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, m in models.items():
        median = statistics.median(m["times"])
        rate = m["flops"] * BATCH * SEQ / median / 1e12
        lines.append(f"| {name} | {m['params']:,} | {m['flops']:,} | "
                     f"{median:.4f} | {median / base:.3f} | {rate:.4f} | "
                     f"{m['peak']:,} | {m['loss']:.6f} |")
    append_results("moe_time_cpu.md",
                   "# A mixture of experts against the dense MLP of the same "
                   "FLOPs (CPU backend)\n\n`bench/moe_time.py` (see its "
                   "docstring). Each run appends a section.\n", lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
