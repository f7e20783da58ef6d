#!/usr/bin/python3
"""What a run's start costs before its first step, and what threads save.

megatron-run's `startup:` line splits the start into the device's
preparation (with the generated kernels' compilation where the kernel cache
lacks them), the parameters (initialized as the model states) and the data.
For a GPT-2 (width 1024, 16 heads, 12 layers, GPT-2's vocabulary: 203M
parameters by default; bf16, micro-batch 1 x 64), this measures on the CPU
backend, interleaved over --repeat rounds:

- the parameters' initialization on one thread (--threads 1, the baseline)
  and on all the cores (--threads N): the same bits, drawn in ranges;
- the generated kernels' compilation by the host compiler as one
  translation unit (MEGATRON_KERNEL_JOBS=1, the baseline) and as one unit
  per core (each run with an empty kernel cache).

Results (medians, and each against its baseline measured in the same run)
are appended to bench/results/startup_time_cpu.md.

usage: bench/startup_time.py [--repeat R] [--layers L] [--width W]
"""

import argparse
import datetime
import os
import re
import statistics
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_runs import BIN, append_results, compile_artifact, import_gpt2, sh  # noqa: E402
from machine import cpu_model  # noqa: E402

STARTUP = re.compile(r"^startup: ([0-9.]+) s \(device ([0-9.]+) s"
                     r"(?:, of which compiling the generated kernels ([0-9.]+) s)?;"
                     r" parameters ([0-9.]+) s", re.M)


def startup(artifact, threads, jobs, cache):
    """One megatron-run step; its startup line's (kernels, parameters)."""
    env = dict(os.environ, MEGATRON_KERNEL_CACHE=cache,
               MEGATRON_KERNEL_JOBS=str(jobs))
    out = sh([f"{BIN}/megatron-run", artifact, "--steps", "1",
              "--threads", str(threads)], env=env).stdout
    match = STARTUP.search(out)
    if not match:
        sys.exit("bench/startup_time.py: no startup line in megatron-run's "
                 "output:\n" + out)
    return float(match.group(3) or 0.0), float(match.group(4))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--width", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    cores = os.cpu_count() or 1
    if cores < 2:
        sys.exit("bench/startup_time.py: one core: nothing to compare")

    with tempfile.TemporaryDirectory() as tmp:
        model = import_gpt2(tmp, args.width, 16, args.layers, 64, 1, vocab=50257)
        artifact = os.path.join(tmp, "model.mtx")
        compile_artifact(model, "precision=bf16", artifact)
        params = {1: [], cores: []}
        compile_seconds = {1: [], cores: []}
        warm = os.path.join(tmp, "warm-cache")
        startup(artifact, 1, 1, warm)  # fills the cache the threads' runs use
        for round_ in range(args.repeat):
            for n in (1, cores):
                params[n].append(startup(artifact, n, 1, warm)[1])
                cache = os.path.join(tmp, f"cold-{round_}-{n}")
                compile_seconds[n].append(startup(artifact, 1, n, cache)[0])
        lines = [
            "",
            f"## {datetime.datetime.now().isoformat(timespec='seconds')}: "
            f"{cpu_model()} ({cores} cores)",
            "",
            f"GPT-2 width {args.width}, {args.layers} layers, vocabulary 50257, "
            f"bf16, micro-batch 1 x 64; medians of {args.repeat} runs each, "
            "interleaved.",
            "",
            "| part of the start | 1 (baseline) | all cores | against the baseline |",
            "|---|---:|---:|---:|",
        ]
        for label, table, unit in (
                ("parameters' initialization (--threads)", params, "threads"),
                ("generated kernels' compilation (MEGATRON_KERNEL_JOBS, "
                 "host compiler, empty cache)", compile_seconds, "jobs")):
            one = statistics.median(table[1])
            many = statistics.median(table[cores])
            lines.append(f"| {label} | {one:.1f} s | {many:.1f} s ({cores} {unit}) "
                         f"| {many / one:.2f} |")
            print(lines[-1], flush=True)
    append_results("startup_time_cpu.md",
                   "# A run's start on the CPU backend (bench/startup_time.py)\n",
                   lines)


if __name__ == "__main__":
    main()
