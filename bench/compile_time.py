#!/usr/bin/env python3
"""Compile time and artifact size of GPT-3 175B under pipeline parallelism.

The configuration of the GPT-3 paper's largest model (96 layers, width
12288, 96 heads, sequence 2048, GPT-2's vocabulary), micro-batch 1, is
compiled with `--mt-train-pipeline="tp=8 sp=true pp=16 dp=D zero=1"` for
D = 1, 8 and 64 (128, 1024 and 8192 ranks) at 16 microbatches per step
(global batch 16*D), and exported as an artifact. Because each pipeline
stage is one SPMD program for all of its dp x tp ranks, neither the compile
time nor the artifact may grow with dp: the baseline of each ratio is the
dp=1 compile in the same run. A second table shows how both grow with the
number of microbatches (the schedule is unrolled per microbatch).

Results are appended to bench/results/compile_time.md and written to
bench/results/compile_time.json, with the CPU model.

usage: bench/compile_time.py [--dps 1,8,64] [--microbatches 16]
                             [--microbatch-sweep 16,32,64] [--keep DIR]
"""

import argparse
import datetime
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

from machine import cpu_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
RESULTS = os.path.join(ROOT, "bench", "results")

GPT3_175B = {
    "model_type": "gpt2", "vocab_size": 50257, "n_positions": 2048,
    "n_embd": 12288, "n_head": 96, "n_layer": 96, "n_inner": None,
    "embd_pdrop": 0.0, "attn_pdrop": 0.0, "resid_pdrop": 0.0,
}
TP, PP, SEQ, MICRO_BATCH = 8, 16, 2048, 1


def timed(cmd):
    """Runs cmd; returns (wall seconds, peak resident MiB) of that child."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"compile_time.py: failed: {' '.join(cmd)}")
    return wall, usage.ru_maxrss / 1024.0


def compile_one(work, dp, microbatches):
    config = os.path.join(work, "gpt3-175b.json")
    with open(config, "w") as f:
        json.dump(GPT3_175B, f)
    tag = f"dp{dp}-m{microbatches}"
    model = os.path.join(work, f"{tag}.mlir")
    program = os.path.join(work, f"{tag}.mtrt.mlir")
    artifact = os.path.join(work, f"{tag}.mtx")
    subprocess.run([os.path.join(BIN, "megatron-translate"), "--import-hf-config",
                    config, "--micro-batch-size", str(MICRO_BATCH),
                    "--global-batch-size", str(MICRO_BATCH * microbatches * dp),
                    "--seq-length", str(SEQ), "-o", model], check=True)
    options = f"tp={TP} sp=true pp={PP} dp={dp} zero=1 microbatches={microbatches}"
    compile_s, compile_mib = timed([os.path.join(BIN, "megatron-opt"), model,
                                    f"--mt-train-pipeline={options}", "-o", program])
    export_s, export_mib = timed([os.path.join(BIN, "megatron-translate"),
                                  "--export-artifact", program, "-o", artifact])
    return {
        "dp": dp, "tp": TP, "pp": PP, "ranks": dp * TP * PP,
        "microbatches": microbatches,
        "compile_s": round(compile_s, 2), "compile_peak_mib": round(compile_mib),
        "export_s": round(export_s, 2), "export_peak_mib": round(export_mib),
        "program_mib": round(os.path.getsize(program) / 2**20, 2),
        "artifact_mib": round(os.path.getsize(artifact) / 2**20, 2),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dps", default="1,8,64")
    parser.add_argument("--microbatches", type=int, default=16)
    parser.add_argument("--microbatch-sweep", default="16,32,64")
    parser.add_argument("--keep", help="keep the compiled files in this directory")
    a = parser.parse_args()
    dps = [int(x) for x in a.dps.split(",")]
    sweep = [int(x) for x in a.microbatch_sweep.split(",") if x]

    work = a.keep or tempfile.mkdtemp(prefix="compile-time-")
    os.makedirs(work, exist_ok=True)
    by_dp = [compile_one(work, dp, a.microbatches) for dp in dps]
    base = by_dp[0]
    for row in by_dp:
        row["compile_ratio_vs_dp1"] = round(row["compile_s"] / base["compile_s"], 3)
        row["artifact_ratio_vs_dp1"] = round(row["artifact_mib"] / base["artifact_mib"], 3)
    by_m = [compile_one(work, dps[1] if len(dps) > 1 else dps[0], m) for m in sweep]

    record = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "cpu": cpu_model(), "cores": os.cpu_count(),
        "model": "GPT-3 175B (96 layers, width 12288, 96 heads, seq 2048)",
        "pipeline": f"tp={TP} sp=true pp={PP} zero=1, micro-batch {MICRO_BATCH}, 1F1B",
        "by_dp": by_dp, "by_microbatches": by_m,
    }
    os.makedirs(RESULTS, exist_ok=True)
    with open(os.path.join(RESULTS, "compile_time.json"), "w") as f:
        json.dump(record, f, indent=2)

    lines = [f"\n## {record['date']}: {record['cpu']} ({record['cores']} cores)\n",
             f"{record['model']}, {record['pipeline']}; baseline: dp=1 in this run.\n",
             "| dp | ranks | m | compile s | ratio | peak MiB | export s | "
             "program MiB | artifact MiB | ratio |",
             "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in by_dp:
        lines.append(f"| {r['dp']} | {r['ranks']} | {r['microbatches']} | {r['compile_s']} | "
                     f"{r['compile_ratio_vs_dp1']} | {r['compile_peak_mib']} | {r['export_s']} | "
                     f"{r['program_mib']} | {r['artifact_mib']} | {r['artifact_ratio_vs_dp1']} |")
    if by_m:
        lines += ["", f"Growth with the number of microbatches m (dp={by_m[0]['dp']}):", "",
                  "| m | compile s | peak MiB | export s | artifact MiB |",
                  "|---:|---:|---:|---:|---:|"]
        for r in by_m:
            lines.append(f"| {r['microbatches']} | {r['compile_s']} | {r['compile_peak_mib']} | "
                         f"{r['export_s']} | {r['artifact_mib']} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(RESULTS, "compile_time.md"), "a") as f:
        f.write(text)
    print(text)
    worst = max(by_dp, key=lambda r: r["compile_s"])
    size = max(r["artifact_ratio_vs_dp1"] for r in by_dp)
    print(f"slowest compile {worst['compile_s']} s (dp={worst['dp']}); "
          f"largest artifact {size}x dp=1")


if __name__ == "__main__":
    main()
