#!/usr/bin/env python3
"""Rewrites metadata fields of every shard of a checkpoint directory
(megatron-run --save), for megatron-run's error tests.

usage: edit_checkpoint_metadata.py DIR [--runs TENSOR=JSON] KEY=VALUE...

Each shard_*.safetensors file gets KEY set to the string VALUE in its
"__metadata__"; the tensors are kept byte for byte (safetensors offsets are
relative to the end of the header). --runs replaces where TENSOR's piece
lies (its I64 [k, 2] "TENSOR#runs" tensor) by JSON's [[offset, count],
...], appended after the data.
"""
import json
import os
import struct
import sys

directory, args = sys.argv[1], sys.argv[2:]
runs = {}
while args and args[0] == "--runs":
    tensor, value = args[1].split("=", 1)
    runs[tensor] = json.loads(value)
    args = args[2:]
edits = dict(arg.split("=", 1) for arg in args)
for name in sorted(os.listdir(directory)):
    if not (name.startswith("shard_") and name.endswith(".safetensors")):
        continue
    path = os.path.join(directory, name)
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    header.setdefault("__metadata__", {}).update(edits)
    for tensor, pairs in runs.items():
        entry = header[tensor + "#runs"]
        packed = b"".join(struct.pack("<qq", o, c) for o, c in pairs)
        entry["shape"] = [len(pairs), 2]
        entry["data_offsets"] = [len(data), len(data) + len(packed)]
        data += packed
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
