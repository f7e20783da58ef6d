#!/usr/bin/python3
"""What a training checkpoint's save and load cost, and their checksums' share.

Each shard of a checkpoint carries zlib's CRC-32 of every stored tensor per
1 MiB chunk (runtime/src/core/CheckpointShards.cpp), computed at each save
and checked at each load. For a GPT-2 (width 512, 8 layers, GPT-2's
vocabulary: 51M parameters, a 0.6 GB checkpoint of parameters and AdamW
moments) on one CPU rank this measures, interleaved over --repeat rounds:

- the save: a 1-step run with --save against the same run without (the
  baseline), the difference being the save;
- the load: a resumed run's `startup:` parameters time (reading, checking
  and uploading every tensor);
- the checksums alone: zlib's CRC-32 over every byte of the shards in
  1 MiB chunks (the same library and chunking), against reading those
  bytes without it (the page cache warm, as after a save).

Results (medians) are appended to bench/results/checkpoint_io_cpu.md.

usage: bench/checkpoint_io.py [--repeat R] [--layers L] [--width W]
"""

import argparse
import datetime
import os
import re
import shutil
import statistics
import sys
import tempfile
import time
import zlib

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cpu_runs import BIN, append_results, compile_artifact, import_gpt2, sh  # noqa: E402
from machine import cpu_model  # noqa: E402

PARAMETERS = re.compile(r"^startup: [0-9.]+ s \(.*; parameters ([0-9.]+) s", re.M)
CHUNK = 1 << 20


def timed(cmd):
    start = time.perf_counter()
    out = sh(cmd).stdout
    return time.perf_counter() - start, out


def shard_files(directory):
    return [os.path.join(root, name) for root, _, names in os.walk(directory)
            for name in names if name.endswith(".safetensors")]


def read_all(paths, checksum):
    """Seconds to read every byte of `paths` in 1 MiB chunks, with zlib's
    CRC-32 of each chunk where `checksum`."""
    start = time.perf_counter()
    for path in paths:
        with open(path, "rb") as f:
            while chunk := f.read(CHUNK):
                if checksum:
                    zlib.crc32(chunk)
    return time.perf_counter() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--width", type=int, default=512)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        model = import_gpt2(tmp, args.width, 8, args.layers, 64, 1, vocab=50257)
        artifact = os.path.join(tmp, "model.mtx")
        compile_artifact(model, "", artifact)
        run = [f"{BIN}/megatron-run", artifact, "--quiet", "--threads", "2"]
        plain, saving, loading, crc, read = [], [], [], [], []
        checkpoint = os.path.join(tmp, "ck")
        sh(run + ["--steps", "1"])  # warms the kernel cache and the pages
        for _ in range(args.repeat):
            shutil.rmtree(checkpoint, ignore_errors=True)
            plain.append(timed(run + ["--steps", "1"])[0])
            saving.append(timed(run + ["--steps", "1", "--save", checkpoint])[0])
            out = timed(run + ["--steps", "2", "--lr-decay-iters", "1",
                               "--load", checkpoint])[1]
            loading.append(float(PARAMETERS.search(out).group(1)))
            shards = shard_files(checkpoint)
            read.append(read_all(shards, checksum=False))
            crc.append(read_all(shards, checksum=True))
        size = sum(os.path.getsize(p) for p in shard_files(checkpoint))
    save = statistics.median(saving) - statistics.median(plain)
    load = statistics.median(loading)
    checksums = statistics.median(crc) - statistics.median(read)
    lines = [
        "",
        f"## {datetime.datetime.now().isoformat(timespec='seconds')}: "
        f"{cpu_model()} ({os.cpu_count()} cores)",
        "",
        f"GPT-2 width {args.width}, {args.layers} layers, vocabulary 50257, fp32, "
        f"one rank, --threads 2; a {size / 1e9:.2f} GB checkpoint (1 shard); "
        f"medians of {args.repeat} rounds, interleaved.",
        "",
        "| what | seconds | the checksums' share |",
        "|---|---:|---:|",
        f"| save (1-step run with --save, {statistics.median(saving):.2f} s, "
        f"minus the run without, {statistics.median(plain):.2f} s: the baseline) "
        f"| {save:.2f} | {checksums / save:.2f} |",
        f"| load (a resumed run's startup parameters time) | {load:.2f} | "
        f"{checksums / load:.2f} |",
        f"| CRC-32 of every byte in 1 MiB chunks, beyond reading them "
        f"({statistics.median(read):.2f} s, the baseline) | {checksums:.2f} | "
        f"{size / 1e9 / checksums:.1f} GB/s |",
    ]
    print("\n".join(lines), flush=True)
    append_results("checkpoint_io_cpu.md",
                   "# A training checkpoint's save and load on the CPU backend "
                   "(bench/checkpoint_io.py)\n", lines)


if __name__ == "__main__":
    main()
