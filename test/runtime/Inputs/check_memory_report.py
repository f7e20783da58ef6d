#!/usr/bin/env python3
"""Checks a --memory-report-json file against a run's measured peaks.

usage: check_memory_report.py REPORT.json RUN_OUTPUT

RUN_OUTPUT holds megatron-run's "peak memory (rank R): planned P B, measured
M B" lines (or "peak memory: ..." for one rank). Every rank's planned peak
must be one stage's peak in the report, every stage's peak must be some
rank's, and every measured peak must equal the planned one. Prints one line
per stage and exits 1 on a mismatch.
"""
import json
import re
import sys

report = json.load(open(sys.argv[1]))
peaks = {}
for line in open(sys.argv[2]):
    m = re.match(r"peak memory(?: \(rank (\d+)\))?: planned (\d+) B, measured (\d+) B", line)
    if m:
        peaks[int(m.group(1) or 0)] = (int(m.group(2)), int(m.group(3)))
ok = bool(peaks)
planned = {p for p, _ in peaks.values()}
for stage in report["stages"]:
    found = stage["peak"] in planned
    ok &= found
    print(f"stage {stage['stage']}: report {stage['peak']} B, "
          f"{'a rank measured it' if found else 'no rank planned it'}")
for rank, (p, m) in sorted(peaks.items()):
    if p != m or p not in {s["peak"] for s in report["stages"]}:
        print(f"rank {rank}: planned {p} B, measured {m} B: not the report's")
        ok = False
sys.exit(0 if ok else 1)
