#!/usr/bin/env python3
"""Checks a megatron-run --trace file against a pipeline's static schedule.

Prints, for each rank, the process name and the schedule row's actions of
one step (FileCheck compares them with the 1F1B order), then checks
that the measured transfers are causal: every receive has its send, and
none ends before its send began.

usage: check_trace.py TRACE STEP
"""

import json
import sys

trace, step = sys.argv[1], int(sys.argv[2])
with open(trace) as f:
    events = json.load(f)["traceEvents"]

names = {e["pid"]: e["args"]["name"] for e in events
         if e["ph"] == "M" and e["name"] == "process_name"}
actions = {}
for e in events:
    if e["ph"] == "X" and e["tid"] == 0 and e["args"]["step"] == step:
        actions.setdefault(e["pid"], []).append(e)
commands = sum(1 for e in events if e["ph"] == "X" and e["tid"] == 1)
for rank in sorted(names):
    order = [a["name"] for a in sorted(actions.get(rank, []), key=lambda a: a["ts"])]
    print(f"{names[rank]}: {' '.join(order)}")
print(f"commands: {'some' if commands else 'none'}")

# What only a measured timeline shows: no receive ends before its send
# began (the ranks of one host share a monotonic clock).
sends, recvs = {}, {}
for e in events:
    if e["ph"] == "X" and e["tid"] == 1 and e["name"] in ("send", "recv"):
        a = e["args"]
        if e["name"] == "send":
            sends[(e["pid"], a["peer_stage"], a["tag"], a["step"])] = e
        else:
            recvs[(a["peer_stage"], e["pid"], a["tag"], a["step"])] = e
violations = 0
for key, recv in recvs.items():
    send = sends.get(key)
    if send is None:
        print(f"recv {key} has no send")
        violations += 1
    elif recv["ts"] + recv["dur"] < send["ts"]:
        print(f"recv {key} ended before its send began")
        violations += 1
print(f"transfers: {len(recvs)}, {'causal' if not violations else 'VIOLATED'}")

# Each command slice says what work it did: GEMMs have FLOPs and bytes.
gemms = [e for e in events if e["ph"] == "X" and e["tid"] == 1 and e["name"] == "matmul"]
worked = all(e["args"]["flops"] > 0 and e["args"]["bytes"] > 0 for e in gemms)
print(f"matmul slices with flops and bytes: {'all' if gemms and worked else 'NOT ALL'}")
