#!/usr/bin/python3
"""What gradient accumulation fusion saves: step time, bytes and kernels.

For a GPT-2 (width 512, 8 heads, 8 layers, vocabulary 8192, sequence 128,
dropout 0), in fp32 and bf16, this compiles a training step of 8
microbatches of one sequence each (`microbatches=8`) with mt-fuse's
gradient-accumulation-fusion (the default: each later microbatch's weight
gradients added by their GEMMs, beta = 1) and without it (the baseline:
an add per weight gradient and microbatch), runs megatron-run on the CPU
backend, and reports the median step time after each run's first two
steps, its ratio to the baseline of the same precision measured in the same
run, the bytes the step's commands move (bench/artifact_traffic.py's sum),
the commands a step runs and the planned peak. Expectation: the fused step
moves 8 bytes a parameter less each microbatch after the first (the add's
reads of the accumulator and the product and its write, against the GEMM's
read of the accumulator), so it is faster by those bytes over the host's
memory bandwidth.

Results are appended to bench/results/accumulation_time_cpu.md.

usage: bench/accumulation_time.py [--steps N] [--repeat R] [--layers L]
                                  [--width W] [--seq S] [--microbatches M]
"""

import argparse
import datetime
import json
import os
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from artifact_traffic import traffic_by_kind  # noqa: E402
from cpu_runs import append_results, compile_artifact, import_gpt2, run_steps  # noqa: E402
from machine import cpu_model  # noqa: E402

def traffic(artifact):
    """(bytes the step's commands move, commands a step) of stage 0, as
    bench/artifact_traffic.py counts them."""
    with open(artifact) as f:
        totals = traffic_by_kind(json.load(f)["programs"][0])
    return (sum(moved for _, moved in totals.values()),
            sum(count for count, _ in totals.values()))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--microbatches", type=int, default=8)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = import_gpt2(tmp, args.width, 8, args.layers, args.seq,
                            args.microbatches)
        # Compile every configuration, then run them interleaved, --repeat
        # rounds, so that a slow moment of the machine hits all of them.
        configs = []
        for precision in ("fp32", "bf16"):
            for fused in (True, False):
                name = f"{precision}-{'fused' if fused else 'adds'}"
                artifact = os.path.join(tmp, name + ".mtx")
                compile_artifact(model, f"precision={precision} "
                                 f"microbatches={args.microbatches} "
                                 f"gradient-accumulation-fusion={str(fused).lower()}",
                                 artifact)
                configs.append((precision, fused, artifact))
        times = {c[:2]: [] for c in configs}
        peaks, losses = {}, {}
        for _ in range(args.repeat):
            for precision, fused, artifact in configs:
                peaks[(precision, fused)], steps = run_steps(
                    artifact, args.steps, artifact + ".jsonl")
                times[(precision, fused)] += [s["step_time_s"] for s in steps[2:]]
                losses[(precision, fused)] = steps[-1]["loss"]
        for precision, fused, artifact in configs:
            median = statistics.median(times[(precision, fused)])
            base = statistics.median(times[(precision, False)])
            moved, commands = traffic(artifact)
            rows.append((precision, "fused" if fused else "adds (baseline)", median,
                         median / base, moved, commands, peaks[(precision, fused)],
                         losses[(precision, fused)]))
            print(rows[-1], flush=True)

    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    lines = [
        f"\n## {stamp}: {cpu_model()} ({os.cpu_count()} cores)\n",
        f"GPT-2 width {args.width}, 8 heads, {args.layers} layers, vocabulary 8192, "
        f"sequence {args.seq}, {args.microbatches} microbatches of one sequence a step, "
        f"dropout 0; {args.repeat} interleaved runs of {args.steps} steps each, median "
        "step time over all steps after each run's first two; baseline: "
        "gradient-accumulation-fusion=false of the same precision in this run.\n",
        "| precision | weight gradients accumulated by | step s | ratio to adds | "
        "bytes moved a step | commands a step | planned peak B | last loss |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for precision, kind, median, ratio, moved, commands, peak, loss in rows:
        lines.append(f"| {precision} | {kind} | {median:.4f} | {ratio:.3f} | "
                     f"{moved:,} | {commands:,} | {peak:,} | {loss:.6f} |")
    append_results("accumulation_time_cpu.md",
                   "# Gradient accumulation fusion: step time, bytes and commands "
                   "(CPU backend)\n\n`bench/accumulation_time.py` (see its docstring). "
                   "Each run appends a section.\n", lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
