#!/usr/bin/env python3
"""Compares two safetensors files of F32 tensors (megatron-run --save-params).

usage: compare_params.py A.safetensors B.safetensors RTOL

Prints "params: equal" when every tensor of A is in B with the same shape and
every element differs by at most RTOL times the tensor's largest magnitude
(RTOL 0: bit for bit), and otherwise names the first tensor that differs and
exits 1.
"""
import array
import json
import struct
import sys


def read(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8 : 8 + n])
    header.pop("__metadata__", None)
    tensors = {}
    for name, entry in header.items():
        begin, end = entry["data_offsets"]
        values = array.array("f")
        values.frombytes(data[8 + n + begin : 8 + n + end])
        tensors[name] = (entry["shape"], values)
    return tensors


a, b, rtol = read(sys.argv[1]), read(sys.argv[2]), float(sys.argv[3])
for name, (shape, values) in sorted(a.items()):
    if name not in b or b[name][0] != shape:
        print(f"params: '{name}' missing or of another shape in {sys.argv[2]}")
        sys.exit(1)
    other = b[name][1]
    scale = max((abs(v) for v in values), default=0.0)
    worst = max((abs(x - y) for x, y in zip(values, other)), default=0.0)
    if (rtol == 0 and values.tobytes() != other.tobytes()) or worst > rtol * scale:
        print(f"params: '{name}' differs by {worst:.3g} (largest magnitude {scale:.3g})")
        sys.exit(1)
if set(b) != set(a):
    print(f"params: {sys.argv[2]} has other tensors: {sorted(set(b) - set(a))}")
    sys.exit(1)
print("params: equal")
