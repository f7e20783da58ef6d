#!/usr/bin/env python3
"""Writes a Megatron-LM indexed dataset (PREFIX.bin + PREFIX.idx, as its
preprocess_data.py does) holding the tokens of a raw uint16 token file.

usage: indexed_dataset.py RAW.bin PREFIX [--dtype uint16|int32|float32]
           [--documents N] [--put INDEX=ID ...] [--version V] [--magic BYTES]
           [--gap] [--modes] [--length I=L] [--document D=V]

The tokens are split into N documents of nearly equal length (one sequence
each). --put overwrites token INDEX with ID (ids above 65535 need int32);
--version, --magic, --gap (the second sequence's offset one element late)
and a float32 element type write malformed indexes for error tests;
--modes appends a multimodal dataset's per-sequence modes; --length and
--document overwrite sequence I's length and document index D in the
index (the pointers follow the true lengths).
"""
import argparse
import struct
import sys

CODES = {"uint8": (1, "B"), "int8": (2, "b"), "int16": (3, "h"),
         "int32": (4, "i"), "int64": (5, "q"), "float32": (7, "f"),
         "uint16": (8, "H")}

parser = argparse.ArgumentParser()
parser.add_argument("raw")
parser.add_argument("prefix")
parser.add_argument("--dtype", default="uint16", choices=sorted(CODES))
parser.add_argument("--documents", type=int, default=1)
parser.add_argument("--put", action="append", default=[])
parser.add_argument("--version", type=int, default=1)
parser.add_argument("--magic", default="MMIDIDX")
parser.add_argument("--gap", action="store_true")
parser.add_argument("--modes", action="store_true")
parser.add_argument("--length", action="append", default=[])
parser.add_argument("--document", action="append", default=[])
args = parser.parse_args()

data = open(args.raw, "rb").read()
tokens = list(struct.unpack(f"<{len(data) // 2}H", data))
for put in args.put:
    index, value = (int(x) for x in put.split("="))
    tokens[index] = value
code, fmt = CODES[args.dtype]
size = struct.calcsize(fmt)
with open(args.prefix + ".bin", "wb") as out:
    out.write(struct.pack(f"<{len(tokens)}{fmt}", *tokens))

count = args.documents
lengths = [len(tokens) // count + (1 if i < len(tokens) % count else 0)
           for i in range(count)]
pointers, at = [], 0
for length in lengths:
    pointers.append(at)
    at += length * size
if args.gap and count > 1:
    pointers[1] += size
documents = list(range(count + 1))
for edit in args.length:
    index, value = (int(x) for x in edit.split("="))
    lengths[index] = value
for edit in args.document:
    index, value = (int(x) for x in edit.split("="))
    documents[index] = value
with open(args.prefix + ".idx", "wb") as out:
    out.write(args.magic.encode().ljust(9, b"\0"))
    out.write(struct.pack("<Q", args.version))
    out.write(struct.pack("<B", code))
    out.write(struct.pack("<QQ", count, count + 1))
    out.write(struct.pack(f"<{count}i", *lengths))
    out.write(struct.pack(f"<{count}q", *pointers))
    out.write(struct.pack(f"<{count + 1}q", *documents))
    if args.modes:
        out.write(bytes(count))
sys.exit(0)
