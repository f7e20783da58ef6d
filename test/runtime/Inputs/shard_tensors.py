#!/usr/bin/env python3
"""Prints how many tensor pieces each shard of a checkpoint directory holds.

usage: shard_tensors.py DIR

One line per shard file, "shard_00000.safetensors: N pieces", where a piece is
a tensor "T" with its "T#runs".
"""
import json
import os
import struct
import sys

directory = sys.argv[1]
for name in sorted(os.listdir(directory)):
    if not name.endswith(".safetensors"):
        continue
    with open(os.path.join(directory, name), "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
    pieces = [k for k in header if k != "__metadata__" and not k.endswith("#runs")]
    print(f"{name}: {len(pieces)} pieces")
