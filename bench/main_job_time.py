#!/usr/bin/python3
"""Wall time of the main job's training (scripts/run-main-job.sh: GPT-2 mini,
4 layers, width 128, micro-batch 8 x 64, 300 steps on the synthetic corpus)
with this build against a baseline build of another commit, in the same run.

Each build compiles the model with its own compiler and trains it with its
own megatron-run; the runs alternate (baseline, current, baseline, ...) so
that both see the same machine. A baseline build comes from a git worktree:

  git worktree add /tmp/base 990a2ef && BUILD_DIR=/tmp/base/build \\
      /tmp/base/scripts/build.sh megatron-opt megatron-translate megatron-run

Results are appended to bench/results/main_job_time.md.

usage: bench/main_job_time.py BASELINE_BUILD_DIR [--label NAME] [--reps N]
"""

import argparse
import datetime
import os
import statistics
import subprocess
import sys
import tempfile
import time

from machine import cpu_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, "examples", "gpt2", "gpt2-mini.json")
TRAIN = ["--steps", "300", "--lr", "3e-3", "--lr-warmup-iters", "20",
         "--lr-decay-style", "cosine", "--min-lr", "3e-4", "--quiet"]


def compile_model(build, work, tag):
    bin_dir = os.path.join(build, "bin")
    mlir = os.path.join(work, f"{tag}.mlir")
    model = os.path.join(work, f"{tag}.mtx")
    subprocess.run([os.path.join(bin_dir, "megatron-translate"), "--import-hf-config", CONFIG,
                    "--micro-batch-size", "8", "--seq-length", "64", "-o", mlir], check=True)
    compiled = subprocess.run([os.path.join(bin_dir, "megatron-opt"), mlir, "--mt-train-pipeline"],
                              check=True, capture_output=True)
    subprocess.run([os.path.join(bin_dir, "megatron-translate"), "--export-artifact", "-o", model],
                   input=compiled.stdout, check=True)
    return model


def train_seconds(build, model, log):
    start = time.perf_counter()
    subprocess.run([os.path.join(build, "bin", "megatron-run"), model, "--log", log] + TRAIN,
                   check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("baseline", help="build directory of the baseline commit")
    parser.add_argument("--label", default="baseline")
    parser.add_argument("--reps", type=int, default=2)
    a = parser.parse_args()
    current = os.path.join(ROOT, "build")
    times = {"baseline": [], "current": []}
    with tempfile.TemporaryDirectory() as work:
        models = {"baseline": compile_model(a.baseline, work, "baseline"),
                  "current": compile_model(current, work, "current")}
        # One untimed run of the current build compiles (and caches) its
        # generated kernels, so that the timed runs measure training.
        train_seconds(current, models["current"], os.path.join(work, "warm.jsonl"))
        for rep in range(a.reps):
            for tag, build in (("baseline", a.baseline), ("current", current)):
                seconds = train_seconds(build, models[tag], os.path.join(work, f"{tag}{rep}.jsonl"))
                times[tag].append(seconds)
                print(f"{tag} run {rep + 1}: {seconds:.1f} s", flush=True)
    base, cur = statistics.median(times["baseline"]), statistics.median(times["current"])
    print(f"main job, 300 steps: current {cur:.1f} s, {a.label} {base:.1f} s, ratio {cur / base:.2f}")
    out = os.path.join(ROOT, "bench", "results", "main_job_time.md")
    with open(out, "a") as f:
        date = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
        f.write(f"\n## {date} — {cpu_model()}, {os.cpu_count()} cores\n\n")
        f.write("| build | runs (s) | median (s) |\n|---|---|---|\n")
        f.write(f"| {a.label} | {', '.join(f'{t:.1f}' for t in times['baseline'])} | {base:.1f} |\n")
        f.write(f"| current | {', '.join(f'{t:.1f}' for t in times['current'])} | {cur:.1f} |\n")
        f.write(f"\nratio current / {a.label}: {cur / base:.2f}\n")


if __name__ == "__main__":
    sys.exit(main())
