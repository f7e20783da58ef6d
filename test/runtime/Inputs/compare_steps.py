#!/usr/bin/env python3
"""Compares the losses of the steps two megatron-run logs share.

usage: compare_steps.py REFERENCE.jsonl RUN.jsonl RTOL

Prints one line per step of RUN ("step N: ok" or "FAIL") and exits 1 when a
step's loss differs from the reference's same step by more than RTOL
relative, or the reference lacks the step.
"""
import json
import sys

ref_path, run_path, rtol = sys.argv[1], sys.argv[2], float(sys.argv[3])


def losses(path):
    with open(path) as f:
        return {r["step"]: r["loss"] for r in map(json.loads, filter(str.strip, f))}


ref, run = losses(ref_path), losses(run_path)
ok = True
for step in sorted(run):
    good = step in ref and abs(run[step] - ref[step]) <= rtol * abs(ref[step])
    ok &= good
    print(f"step {step}: {'ok' if good else 'FAIL'}")
sys.exit(0 if ok else 1)
