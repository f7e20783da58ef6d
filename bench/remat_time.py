#!/usr/bin/python3
"""What activation recomputation costs: step time and FLOPs per policy.

For a GPT-2 (width 256, 4 heads, 4 layers, vocabulary 8192, sequence 256,
micro-batch 4, dropout 0), in fp32 and bf16, this compiles the training step
with remat=none, selective and full, counts the FLOPs mt-remat adds
(`print-recompute`), runs megatron-run for a few steps on the CPU backend,
and reports the median step time after the first two steps, the ratio to
remat=none of the same precision measured in the same run (the baseline), and
the planned peak. Expectation: the added time is about the added FLOPs over
the step's FLOPs (3x the forward: forward, and backward at twice the
forward), so full adds at most one forward per layer (about a third) and
selective only the attention core.

Results are appended to bench/results/remat_time_cpu.md.

usage: bench/remat_time.py [--steps N] [--repeat R] [--layers L] [--width W] [--seq S]
"""

import argparse
import datetime
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_runs import (BIN, append_results, compile_artifact, import_gpt2,  # noqa: E402
                      run_steps, sh)
from machine import cpu_model  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--layers", type=int, default=4)
    parser.add_argument("--width", type=int, default=256)
    parser.add_argument("--seq", type=int, default=256)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        model = import_gpt2(tmp, args.width, 4, args.layers, args.seq, args.batch)
        # Compile every configuration, then run them interleaved, --repeat
        # rounds, so that a slow moment of the machine hits all of them.
        configs = []
        for precision in ("fp32", "bf16"):
            for remat in ("none", "selective", "full"):
                flops, fraction = 0, 0.0
                if remat != "none":
                    out = sh([f"{BIN}/megatron-opt", model, "--mt-autodiff",
                              "--canonicalize", "--cse",
                              f"--mt-remat=remat={remat} print-recompute=true",
                              "-o", "/dev/null"]).stderr  # reports go to stderr
                    flops = int(re.search(r": (\d+) FLOPs per step", out).group(1))
                    fraction = float(re.search(r"FLOPs per step, ([0-9.]+) of", out).group(1))
                artifact = os.path.join(tmp, f"{precision}-{remat}.mtx")
                compile_artifact(model, f"precision={precision} remat={remat}", artifact)
                configs.append((precision, remat, artifact, flops, fraction))
        times = {c[:2]: [] for c in configs}
        peaks = {}
        for _ in range(args.repeat):
            for precision, remat, artifact, _, _ in configs:
                peaks[(precision, remat)], steps = run_steps(
                    artifact, args.steps, os.path.join(tmp, f"{precision}-{remat}.jsonl"))
                times[(precision, remat)] += [s["step_time_s"] for s in steps[2:]]
        for precision, remat, _, flops, fraction in configs:
            median = statistics.median(times[(precision, remat)])
            base = statistics.median(times[(precision, "none")])
            rows.append((precision, remat, median, median / base, flops, fraction,
                         peaks[(precision, remat)]))
            print(rows[-1], flush=True)

    stamp = datetime.datetime.now().strftime("%Y-%m-%dT%H:%M:%S")
    lines = [
        f"\n## {stamp}: {cpu_model()} ({os.cpu_count()} cores)\n",
        f"GPT-2 width {args.width}, 4 heads, {args.layers} layers, vocabulary 8192, "
        f"sequence {args.seq}, micro-batch {args.batch}, dropout 0; {args.repeat} interleaved "
        f"runs of {args.steps} steps each, median step time over all steps after each run's "
        "first two; baseline: remat=none of the same precision in this run.\n",
        "| precision | remat | step s | ratio to none | recompute FLOPs | of the layers' forward | planned peak B |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for precision, remat, median, ratio, flops, fraction, peak in rows:
        lines.append(f"| {precision} | {remat} | {median:.4f} | {ratio:.3f} | {flops:,} | "
                     f"{fraction:.3f} | {peak:,} |")
    append_results("remat_time_cpu.md",
                   "# Step time and FLOPs of activation recomputation (CPU backend)\n\n"
                   "`bench/remat_time.py` (see its docstring). Each run appends a section.\n",
                   lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
