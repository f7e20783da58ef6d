#!/usr/bin/env python3
"""Prints the planned peaks of megatron-run outputs, each against the first.

usage: peaks.py NAME=RUN_OUTPUT...

For every NAME, the largest "peak memory ... planned P B, measured M B"
over its ranks; prints "NAME: P B (R of FIRST)" and exits 1 when a
measured peak differs from its planned one.
"""
import re
import sys

first = None
ok = True
for arg in sys.argv[1:]:
    name, path = arg.split("=", 1)
    peak = 0
    for line in open(path):
        m = re.search(r"peak memory.*: planned (\d+) B, measured (\d+) B", line)
        if m:
            planned, measured = int(m.group(1)), int(m.group(2))
            ok &= planned == measured
            peak = max(peak, planned)
    first = first or (name, peak)
    print(f"{name}: {peak} B ({peak / first[1]:.3f} of {first[0]})")
sys.exit(0 if ok else 1)
