#!/usr/bin/python3
"""Step time of megatron-run's CPU backend against PyTorch, same CPU threads.

For each GPT-2 configuration (GPT-2 small's width and vocabulary, 2 and 12
layers, dropout 0 so both sides do the same work), this compiles the model,
trains it for a few steps with megatron-run and with the PyTorch reference
(test/integration/gpt2_reference.py) from the same init and tokens, and
reports the median step time of each after the first step, and the ratio
megatron-run / PyTorch (below 1 means megatron-run is faster). Both use the
same number of threads: megatron-run --threads (one pool for its GEMMs,
generated kernels and host kernels), torch.set_num_threads for PyTorch. In
the same run it measures the sgemm rate of the machine's OpenBLAS (numpy,
2048^3, same threads, before and after the runs, keeping the higher) and
reports megatron-run's achieved training FLOP/s (6N + attention per token)
as a fraction of it.

Results are appended to bench/results/step_time_cpu.md and written to
bench/results/step_time_cpu.json.

usage: bench/step_time.py [--steps N] [--threads T] [--batch B] [--seq S]
                          [--layers 2,12] [--unfused]
"""

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile

from machine import cpu_model

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "bin")
REFERENCE = os.path.join(ROOT, "test", "integration", "gpt2_reference.py")


def run(cmd, env=None, **kwargs):
    subprocess.run(cmd, check=True, env=env, **kwargs)


def median_of(log, key):
    with open(log) as f:
        values = [json.loads(line)[key] for line in f if line.strip()]
    return statistics.median(values[1:] if len(values) > 1 else values)


def median_step_time(log):
    return median_of(log, "step_time_s")


def sgemm_gflops(threads):
    """OpenBLAS sgemm 2048^3 through numpy, best of 5, with `threads`."""
    code = ("import numpy as np, time\n"
            "a = np.random.rand(2048, 2048).astype(np.float32)\n"
            "b = np.random.rand(2048, 2048).astype(np.float32)\n"
            "a @ b\n"
            "best = 1e9\n"
            "for _ in range(5):\n"
            "    t = time.perf_counter(); a @ b; best = min(best, time.perf_counter() - t)\n"
            "print(2 * 2048 ** 3 / best / 1e9)\n")
    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(threads), OMP_NUM_THREADS=str(threads))
    out = subprocess.run(["/usr/bin/python3", "-c", code], check=True, capture_output=True,
                         text=True, env=env).stdout
    return float(out.strip())


def bench(layers, a, work):
    config = {
        "model_type": "gpt2", "vocab_size": 50257, "n_positions": 1024,
        "n_embd": 768, "n_head": 12, "n_layer": layers, "n_inner": None,
        "embd_pdrop": 0.0, "attn_pdrop": 0.0, "resid_pdrop": 0.0,
    }
    cfg = os.path.join(work, f"gpt2-{layers}l.json")
    with open(cfg, "w") as f:
        json.dump(config, f)
    init = os.path.join(work, f"init-{layers}.safetensors")
    tokens = os.path.join(work, "tokens.bin")
    model = os.path.join(work, f"model-{layers}.mtx")
    py = "/usr/bin/python3"
    run([py, REFERENCE, "init", cfg, init, "--seed", "1"])
    run([py, REFERENCE, "tokens", tokens, "--count", str((a.steps + 1) * a.batch * a.seq + 1),
         "--vocab", "50257", "--seed", "2"])
    translate = subprocess.run(
        [os.path.join(BIN, "megatron-translate"), "--import-hf-config", cfg,
         "--micro-batch-size", str(a.batch), "--seq-length", str(a.seq)],
        check=True, capture_output=True)
    pipeline = "--mt-train-pipeline=fuse=false" if a.unfused else "--mt-train-pipeline"
    compiled = subprocess.run([os.path.join(BIN, "megatron-opt"), pipeline],
                              input=translate.stdout, check=True, capture_output=True)
    run([os.path.join(BIN, "megatron-translate"), "--export-artifact", "-o", model],
        input=compiled.stdout)

    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(a.threads), OMP_NUM_THREADS=str(a.threads))
    run_log = os.path.join(work, f"run-{layers}.jsonl")
    run([os.path.join(BIN, "megatron-run"), model, "--data", tokens, "--steps", str(a.steps),
         "--load-params", init, "--log", run_log, "--quiet", "--threads", str(a.threads)],
        env=env, stdout=subprocess.DEVNULL)
    ref_log = os.path.join(work, f"ref-{layers}.jsonl")
    run([py, REFERENCE, "train", cfg, init, tokens, "--steps", str(a.steps), "--batch", str(a.batch),
         "--seq", str(a.seq), "--threads", str(a.threads), "--out-log", ref_log,
         "--out-params", os.path.join(work, f"ref-{layers}.safetensors")], env=env)
    ours, theirs = median_step_time(run_log), median_step_time(ref_log)
    gflops = 1000.0 * median_of(run_log, "tflops")
    return {"layers": layers, "batch": a.batch, "seq": a.seq, "threads": a.threads,
            "steps": a.steps, "megatron_run_s": ours, "pytorch_s": theirs, "ratio": ours / theirs,
            "megatron_run_gflops": gflops}


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=4)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--layers", default="2,12")
    parser.add_argument("--unfused", action="store_true",
                        help="compile with fuse=false (one host kernel per op)")
    a = parser.parse_args()
    # The rate is measured before and after the runs and the higher kept:
    # on a shared machine a slow moment would flatter the fraction.
    sgemm = sgemm_gflops(a.threads)
    print(f"OpenBLAS sgemm 2048^3, {a.threads} threads: {sgemm:.1f} GFLOP/s", flush=True)
    torch_version = subprocess.run(["/usr/bin/python3", "-c", "import torch; print(torch.__version__)"],
                                   check=True, capture_output=True, text=True).stdout.strip()
    results = []
    with tempfile.TemporaryDirectory() as work:
        for layers in [int(x) for x in a.layers.split(",")]:
            r = bench(layers, a, work)
            r["sgemm_gflops"] = sgemm
            r["fraction_of_sgemm"] = r["megatron_run_gflops"] / sgemm
            results.append(r)
            print(f"GPT-2 small width, {layers} layers, batch {a.batch} x {a.seq}, {a.threads} threads: "
                  f"megatron-run {r['megatron_run_s']:.3f} s/step, PyTorch {r['pytorch_s']:.3f} s/step, "
                  f"ratio {r['ratio']:.2f}; {r['megatron_run_gflops']:.1f} GFLOP/s, "
                  f"{100 * r['fraction_of_sgemm']:.0f}% of sgemm", flush=True)
    after = sgemm_gflops(a.threads)
    print(f"OpenBLAS sgemm 2048^3 again: {after:.1f} GFLOP/s", flush=True)
    if after > sgemm:
        sgemm = after
        for r in results:
            r["sgemm_gflops"] = sgemm
            r["fraction_of_sgemm"] = r["megatron_run_gflops"] / sgemm
    for r in results:
        print(f"{r['layers']} layers: ratio {r['ratio']:.2f}, "
              f"{100 * r['fraction_of_sgemm']:.0f}% of the {sgemm:.1f} GFLOP/s sgemm rate")
    record = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
              "machine": f"{cpu_model()}, {os.cpu_count()} cores", "baseline": f"PyTorch {torch_version} (CPU, Debian python3-torch, OpenBLAS)",
              "fused": not a.unfused, "sgemm_gflops": sgemm, "results": results}
    out = os.path.join(ROOT, "bench", "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "step_time_cpu.json"), "w") as f:
        json.dump(record, f, indent=2)
    with open(os.path.join(out, "step_time_cpu.md"), "a") as f:
        f.write(f"\n## {record['date']} — {record['machine']}, baseline {record['baseline']}, "
                f"{'fused' if record['fused'] else 'unfused (fuse=false)'}, "
                f"OpenBLAS sgemm 2048^3 {sgemm:.1f} GFLOP/s\n\n")
        f.write("| layers | batch x seq | threads | megatron-run s/step | PyTorch s/step | ratio | "
                "megatron-run GFLOP/s | of sgemm |\n")
        f.write("|---|---|---|---|---|---|---|---|\n")
        for r in results:
            f.write(f"| {r['layers']} | {r['batch']} x {r['seq']} | {r['threads']} | {r['megatron_run_s']:.3f} | "
                    f"{r['pytorch_s']:.3f} | {r['ratio']:.2f} | {r['megatron_run_gflops']:.1f} | "
                    f"{100 * r['fraction_of_sgemm']:.0f}% |\n")


if __name__ == "__main__":
    sys.exit(main())
