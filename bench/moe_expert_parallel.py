#!/usr/bin/python3
"""What expert parallelism costs and saves against data parallelism alone.

bench/moe_time.py's Mixtral (width 512, 8 heads, 4 key/value heads, 4
layers, vocabulary 8192, sequence 256, micro-batch 4; 8 experts of
intermediate size 704, 2 per token) compiled for two data-parallel CPU
ranks: `dp=2` (the baseline: every rank holds every expert and
all-reduces their gradients) and `dp=2 ep=2` (each rank holds 4 experts;
the rows go to their experts' rank and back by all-to-all, forward and
backward). All run under mpirun -np 2, interleaved, --repeat rounds of
--steps steps; the median step time after each run's first two steps and
its ratio to the baseline's in the same run, and each rank's memory plan:
parameters, optimizer state and the planned peak. Expectation: the
parameters and optimizer state drop by half the experts' (the dense layers
stay whole); the activations grow, since a rank's received rows are sized
for every rank's rows (static shapes); the time is about the baseline's:
the same GEMM FLOPs, the experts' gradient all-reduces replaced by four
row exchanges a layer (two forward, two backward) of the same order of
bytes.

Two more layouts drop tokens (Megatron-LM's --moe-expert-capacity-factor,
at 1.0 and 1.25, the probs policy): a rank's expert rows are then the
experts' capacity rows (E * ceil(T * k / E * factor)), and since no rank
sends an expert more than its capacity, a rank receives as many rows as it
sends instead of every rank's: the activations of the expert layers shrink
by about ep / factor. Their loss differs (tokens are dropped).

Results are appended to bench/results/moe_expert_parallel_cpu.md.

usage: bench/moe_expert_parallel.py [--steps N] [--repeat R]
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



def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    # name: (import flags, pipeline options)
    layouts = {
        "dp=2 (baseline)": ([], "dp=2"),
        "dp=2 ep=2": ([], "dp=2 ep=2"),
        "dp=2 ep=2, capacity factor 1.0": (["--moe-expert-capacity-factor", "1.0"], "dp=2 ep=2"),
        "dp=2 ep=2, capacity factor 1.25": (["--moe-expert-capacity-factor", "1.25"], "dp=2 ep=2"),
    }
    runs = {}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "mixtral.json")
        with open(path, "w") as f:
            json.dump(config(True), f)
        for name, (flags, options) in layouts.items():
            model = os.path.join(tmp, f"{len(runs)}.mlir")
            sh([f"{BIN}/megatron-translate", "--import-hf-config", path,
                "--micro-batch-size", str(BATCH), "--seq-length", str(SEQ),
                *flags, "-o", model])
            artifact = os.path.join(tmp, f"{len(runs)}.mtx")
            compile_artifact(model, options, artifact)
            runs[name] = {"artifact": artifact, "times": []}
        for _ in range(args.repeat):
            for name, r in runs.items():
                r["plan"], steps = run_ranks(
                    2, r["artifact"], args.steps, r["artifact"] + ".jsonl",
                    ("parameters", "optimizer state", "activations"))
                r["times"] += [s["step_time_s"] for s in steps[2:]]
                r["loss"] = steps[-1]["loss"]
    base = statistics.median(runs["dp=2 (baseline)"]["times"])
    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    lines = [
        f"\n## {stamp}: {cpu_model()} ({os.cpu_count()} cores)\n",
        f"bench/moe_time.py's Mixtral (8 experts, 2 per token, {BATCH} x "
        f"{SEQ} tokens a step, {BATCH // 2} x {SEQ} a rank) on 2 CPU ranks "
        f"(1 thread each); baseline: "
        f"dp=2 in this run. {args.repeat} interleaved runs of {args.steps} "
        "steps, median step time after each run's first two; memory per "
        "rank (its plan).\n",
        "| layout | step s | ratio to dp=2 | parameters B | optimizer state B "
        "| activations B (sum) | planned peak B | last loss |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for name, r in runs.items():
        median = statistics.median(r["times"])
        lines.append(f"| {name} | {median:.4f} | {median / base:.3f} | "
                     f"{r['plan']['parameters']:,} | "
                     f"{r['plan']['optimizer state']:,} | "
                     f"{r['plan']['activations']:,} | "
                     f"{r['plan']['peak']:,} | {r['loss']:.6f} |")
    append_results("moe_expert_parallel_cpu.md",
                   "# Expert parallelism against data parallelism alone "
                   "(CPU backend)\n\n`bench/moe_expert_parallel.py` (see its "
                   "docstring). Each run appends a section.\n", lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
