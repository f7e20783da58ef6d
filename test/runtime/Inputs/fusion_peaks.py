#!/usr/bin/python3
"""Prints the planned peaks (arena bytes) of a fused and an unfused artifact.

  fusion_peaks.py NAME FUSED.mtx UNFUSED.mtx

prints "NAME: planned peak fused A B, unfused B B, P% lower, attention
stats S B" and exits 1 when the fused peak is above the unfused one by more
than S: fusion never stores more, except the log-sum-exp that a folded
attention (qkv_attention) keeps for its gradient, 4 bytes per query row and
head, the stats' bytes summed over every such attention of the stage.
"""

import json
import math
import sys


def load(path):
    with open(path) as f:
        return json.load(f)["programs"]


def peak(programs):
    return max(p["arena_bytes"] for p in programs)


def attention_stats(programs):
    most = 0
    for program in programs:
        buffers = {b["id"]: b for b in program["buffers"]}
        total = sum(4 * math.prod(buffers[c["outs"][1]]["shape"])
                    for c in program["commands"]
                    if c["kernel"] == "qkv_attention")
        most = max(most, total)
    return most


name, fused_programs = sys.argv[1], load(sys.argv[2])
fused, unfused = peak(fused_programs), peak(load(sys.argv[3]))
stats = attention_stats(fused_programs)
print(f"{name}: planned peak fused {fused} B, unfused {unfused} B, "
      f"{100.0 * (unfused - fused) / unfused:.1f}% lower, "
      f"attention stats {stats} B")
sys.exit(0 if fused <= unfused + stats else 1)
