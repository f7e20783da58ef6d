#!/usr/bin/python3
"""Prints the planned peaks (arena bytes) of a fused and an unfused artifact.

  fusion_peaks.py NAME FUSED.mtx UNFUSED.mtx

prints "NAME: planned peak fused A B, unfused B B, P% lower" and exits 1
when the fused peak is the higher (fusion must never store more).
"""

import json
import sys


def peak(path):
    with open(path) as f:
        return max(p["arena_bytes"] for p in json.load(f)["programs"])


name, fused, unfused = sys.argv[1], peak(sys.argv[2]), peak(sys.argv[3])
print(f"{name}: planned peak fused {fused} B, unfused {unfused} B, "
      f"{100.0 * (unfused - fused) / unfused:.1f}% lower")
sys.exit(0 if fused <= unfused else 1)
