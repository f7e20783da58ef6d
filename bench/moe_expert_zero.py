#!/usr/bin/python3
"""What ZeRO over an expert's replicas saves under expert parallelism.

bench/moe_time.py's Mixtral (width 512, 4 layers, 8 experts of
intermediate size 704, 2 per token; micro-batch 4 of sequence 256)
compiled for four data-parallel CPU ranks with ep=2: two groups of two
ranks, each expert on two ranks (Megatron-LM's expert data parallel group
of 2). Layouts: `dp=4 zero=1` (the baseline: no expert parallelism, every
parameter's optimizer state in quarters), and `dp=4 ep=2` under ZeRO 0 to
3. ZeRO shards an expert over its two replicas as Megatron-LM's
distributed optimizer does over the expert data parallel group, so under
ZeRO-1 a rank holds a quarter of the optimizer state, as the baseline
does, while holding only half the experts' weights; ZeRO-2 also halves the
experts' gradients, ZeRO-3 their weights between uses.

All run under mpirun -np 4, interleaved, --repeat rounds of --steps steps:
each rank's memory plan (parameters, optimizer state, gradients, planned
peak, exact: megatron-run checks the measured peak against it) and, for
reference only, the median step time after each run's first two steps and
its ratio to the baseline's in the same run (4 ranks share the machine's
cores, so the time says little about a GPU cluster). The loss after the
last step is equal in every layout (the same step).

Results are appended to bench/results/moe_expert_zero_cpu.md.

usage: bench/moe_expert_zero.py [--steps N] [--repeat R]
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_runs import (BIN, append_results, compile_artifact,  # noqa: E402
                      run_ranks, sh)
from machine import cpu_model  # noqa: E402
from moe_time import BATCH, SEQ, config  # noqa: E402

RANKS = 4
BASELINE = "dp=4 zero=1 (baseline)"


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args()

    layouts = {BASELINE: "dp=4 zero=1"}
    for zero in range(4):
        layouts[f"dp=4 ep=2 zero={zero}"] = f"dp=4 ep=2 zero={zero}"
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mixtral.json")
        with open(path, "w") as f:
            json.dump(config(True), f)
        model = os.path.join(tmp, "mixtral.mlir")
        sh([f"{BIN}/megatron-translate", "--import-hf-config", path,
            "--micro-batch-size", str(BATCH), "--seq-length", str(SEQ),
            "-o", model])
        for name, options in layouts.items():
            artifact = os.path.join(tmp, f"{len(runs)}.mtx")
            compile_artifact(model, options, artifact)
            runs[name] = {"artifact": artifact, "times": []}
        for _ in range(args.repeat):
            for name, r in runs.items():
                r["plan"], steps = run_ranks(
                    RANKS, r["artifact"], args.steps, r["artifact"] + ".jsonl",
                    ("parameters", "optimizer state", "gradients"))
                r["times"] += [s["step_time_s"] for s in steps[2:]]
                r["loss"] = steps[-1]["loss"]
    base = statistics.median(runs[BASELINE]["times"])
    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    lines = [
        f"\n## {stamp}: {cpu_model()} ({os.cpu_count()} cores)\n",
        f"bench/moe_time.py's Mixtral (8 experts, 2 per token, {BATCH} x "
        f"{SEQ} tokens a step, {BATCH // RANKS} x {SEQ} a rank) on "
        f"{RANKS} CPU ranks; baseline: dp=4 ZeRO-1 without expert "
        f"parallelism in this run. {args.repeat} interleaved runs of "
        f"{args.steps} steps; memory per rank (its plan); the step time "
        f"(median after each run's first two) for reference only: "
        f"{RANKS} ranks share the cores.\n",
        "| layout | parameters B | optimizer state B | gradients B (sum) "
        "| planned peak B | step s | ratio to baseline | last loss |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in runs.items():
        median = statistics.median(r["times"])
        p = r["plan"]
        lines.append(f"| {name} | {p['parameters']:,} | "
                     f"{p['optimizer state']:,} | {p['gradients']:,} | "
                     f"{p['peak']:,} | {median:.4f} | {median / base:.3f} | "
                     f"{r['loss']:.6f} |")
    append_results("moe_expert_zero_cpu.md",
                   "# ZeRO over an expert's replicas (CPU backend)\n\n"
                   "`bench/moe_expert_zero.py` (see its docstring). Each run "
                   "appends a section.\n", lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
