#!/usr/bin/env python3
"""Rewrites metadata fields of every shard of a checkpoint directory
(megatron-run --save), for megatron-run's error tests.

usage: edit_checkpoint_metadata.py DIR KEY=VALUE...

Each shard_*.safetensors file gets KEY set to the string VALUE in its
"__metadata__"; the tensors are kept byte for byte (safetensors offsets are
relative to the end of the header).
"""
import json
import os
import struct
import sys

directory, edits = sys.argv[1], dict(arg.split("=", 1) for arg in sys.argv[2:])
for name in sorted(os.listdir(directory)):
    if not (name.startswith("shard_") and name.endswith(".safetensors")):
        continue
    path = os.path.join(directory, name)
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    header.setdefault("__metadata__", {}).update(edits)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + data)
