#!/usr/bin/python3
"""Reads, lists and rewrites safetensors files for megatron-run's tests,
and writes token files. Safetensors need numpy; tokens only the standard
library. No torch, so it starts fast.

  edit_safetensors.py names FILE
      prints "NAME DTYPE [d0, d1]" per tensor, sorted by name
  edit_safetensors.py edit IN OUT [--drop NAME]... [--transpose NAME]...
        [--f16 NAME]... [--dtype NAME=DTYPE]... [--rounded DTYPE]
        [--prefix TEXT] [--add NAME=d0,d1]... [--copy NEW=NAME]...
        [--set NAME@INDEX=VALUE]...
      --drop removes a tensor; --transpose writes a 2-D tensor with its
      dimensions swapped (same bytes, the other layout); --f16 stores it as
      F16; --dtype stores it as DTYPE (F16, BF16, F64 or I32; "*" for every
      tensor); --rounded keeps every tensor F32 but rounds its values to
      what DTYPE (F16 or BF16) holds; --prefix puts TEXT before every name;
      --add appends a zero F32 tensor of that shape; --copy appends a copy
      of tensor NAME (after --prefix: the new names) as NEW; --set writes
      one element before any --dtype or --prefix, INDEX its flat (row-major)
      index, VALUE a float ("inf" and "nan" too)
  edit_safetensors.py split IN DIR PARTS
      writes IN's tensors into PARTS files of DIR as Hugging Face splits a
      checkpoint (model-0000K-of-0000N.safetensors, round robin) and the
      index DIR/model.safetensors.index.json naming each tensor's file
  edit_safetensors.py tokens OUT --count N --vocab V [--seed S]
        [--put POSITION=ID]...
      writes a little-endian uint16 token file of random ids below V, then
      overwrites the ids at the given positions
"""

import argparse
import json
import os
import random
import struct
import sys

try:
    import numpy as np

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "integration"))
    from safetensors_io import BF16, NAMES
    from safetensors_io import read_safetensors as read
    from safetensors_io import write_safetensors as write
except ImportError:  # enough for "tokens"
    np = None


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("names")
    p.add_argument("file")
    p = sub.add_parser("edit")
    p.add_argument("input")
    p.add_argument("output")
    p.add_argument("--drop", action="append", default=[])
    p.add_argument("--transpose", action="append", default=[])
    p.add_argument("--f16", action="append", default=[])
    p.add_argument("--dtype", action="append", default=[])
    p.add_argument("--rounded")
    p.add_argument("--prefix", default="")
    p.add_argument("--add", action="append", default=[])
    p.add_argument("--copy", action="append", default=[])
    p.add_argument("--set", action="append", default=[])
    p = sub.add_parser("split")
    p.add_argument("input")
    p.add_argument("dir")
    p.add_argument("parts", type=int)
    p = sub.add_parser("tokens")
    p.add_argument("output")
    p.add_argument("--count", type=int, required=True)
    p.add_argument("--vocab", type=int, required=True)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--put", action="append", default=[])
    args = parser.parse_args()

    if args.command == "names":
        for name, array in sorted(read(args.file).items()):
            if isinstance(array, BF16):
                print(name, "BF16", list(array.bits.shape))
            else:
                print(name, NAMES[array.dtype], list(array.shape))
    elif args.command == "edit":
        tensors = read(args.input)
        for name in args.drop:
            del tensors[name]
        for name in args.transpose:
            tensors[name] = np.ascontiguousarray(tensors[name].T)
        for name in args.f16:
            tensors[name] = tensors[name].astype(np.float16)
        for item in args.set:
            target, value = item.split("=")
            name, index = target.split("@")
            tensors[name].reshape(-1)[int(index)] = float(value)
        if args.rounded == "BF16":
            tensors = {k: BF16.round(v).widen() for k, v in tensors.items()}
        elif args.rounded == "F16":
            tensors = {k: v.astype(np.float16).astype(np.float32) for k, v in tensors.items()}
        for item in args.dtype:
            name, dtype = item.split("=")
            for key in list(tensors) if name == "*" else [name]:
                value = tensors[key]
                if dtype == "BF16":
                    tensors[key] = BF16.round(value)
                else:
                    tensors[key] = value.astype({"F16": np.float16, "F64": np.float64, "I32": np.int32}[dtype])
        tensors = {args.prefix + k: v for k, v in tensors.items()}
        for item in args.add:
            name, shape = item.split("=")
            tensors[name] = np.zeros([int(d) for d in shape.split(",")], np.float32)
        for item in args.copy:
            new, name = item.split("=")
            tensors[new] = tensors[name]
        write(args.output, tensors)
    elif args.command == "split":
        tensors = read(args.input)
        os.makedirs(args.dir, exist_ok=True)
        files = [f"model-{k + 1:05d}-of-{args.parts:05d}.safetensors" for k in range(args.parts)]
        parts = [{} for _ in files]
        weight_map = {}
        for i, (name, value) in enumerate(tensors.items()):
            parts[i % args.parts][name] = value
            weight_map[name] = files[i % args.parts]
        for file, part in zip(files, parts):
            write(os.path.join(args.dir, file), part)
        with open(os.path.join(args.dir, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {"total_size": 0}, "weight_map": weight_map}, f, indent=2)
    else:
        rng = random.Random(args.seed)
        ids = [rng.randrange(args.vocab) for _ in range(args.count)]
        for item in args.put:
            position, value = item.split("=")
            ids[int(position)] = int(value)
        with open(args.output, "wb") as f:
            f.write(struct.pack(f"<{len(ids)}H", *ids))


if __name__ == "__main__":
    main()
