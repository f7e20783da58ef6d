#!/usr/bin/env python3
"""Rewrites metadata fields of every shard of a checkpoint directory
(megatron-run --save), for megatron-run's error tests.

usage: edit_checkpoint_metadata.py DIR [--keep-checksums] [--drop-checksums]
                                       [--flip TENSOR=BYTE]
                                       [--runs TENSOR=JSON]... KEY=VALUE...

Each shard_*.safetensors file gets KEY set to the string VALUE in its
"__metadata__". --runs replaces where TENSOR's piece lies (its I64 [k, 2]
"TENSOR#runs" tensor) by JSON's [[offset, count], ...]. The tensors stay in
their order and fill the data section, as a safetensors file's must.

The shards' checksums (runtime/include/mtrt/CheckpointShards.h) are computed
again, so that the edit reaches the check it tests; --keep-checksums leaves
them, as a hand edit or a damaged disk would; --drop-checksums removes
them, as in a shard saved before they were kept. (A tensor's checksums
are the CRC-32s of its chunks of "crc32_chunk_bytes" bytes.) --flip xors bit 6 of byte
BYTE of TENSOR's stored values (a float's exponent, at BYTE % 4 == 3) in
the first shard holding it, keeping the checksums.
"""
import json
import os
import struct
import sys
import zlib


def metadata_checksum(metadata):
    crc = 0
    for key in sorted(metadata, key=lambda k: k.encode()):
        if key == "metadata_crc32":
            continue
        crc = zlib.crc32(key.encode() + b"\0", crc)
        crc = zlib.crc32(metadata[key].encode() + b"\0", crc)
    return "%08x" % crc


directory, args = sys.argv[1], sys.argv[2:]
keep = "--keep-checksums" in args
drop = "--drop-checksums" in args
args = [a for a in args if a not in ("--keep-checksums", "--drop-checksums")]
flip = None
if args and args[0] == "--flip":
    tensor, byte = args[1].split("=", 1)
    flip = (tensor, int(byte))
    keep = True
    args = args[2:]
runs = {}
while args and args[0] == "--runs":
    tensor, value = args[1].split("=", 1)
    runs[tensor + "#runs"] = b"".join(
        struct.pack("<qq", o, c) for o, c in json.loads(value))
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
    metadata = header.setdefault("__metadata__", {})
    metadata.update(edits)
    tensors = sorted((k for k in header if k != "__metadata__"),
                     key=lambda k: header[k]["data_offsets"])
    rebuilt = b""
    for tensor in tensors:
        entry = header[tensor]
        begin, end = entry["data_offsets"]
        stored = runs.get(tensor, data[begin:end])
        if flip and flip[0] == tensor:
            stored = bytearray(stored)
            stored[flip[1]] ^= 0x40
            stored = bytes(stored)
            flip = None
        if tensor in runs:
            entry["shape"] = [len(stored) // 16, 2]
            if not keep:
                chunk = int(metadata["crc32_chunk_bytes"])
                metadata["crc32:" + tensor] = ",".join(
                    "%08x" % zlib.crc32(stored[at:at + chunk])
                    for at in range(0, len(stored), chunk))
        entry["data_offsets"] = [len(rebuilt), len(rebuilt) + len(stored)]
        rebuilt += stored
    if drop:
        for key in [k for k in metadata if k.startswith("crc32")
                    or k == "metadata_crc32"]:
            del metadata[key]
    elif not keep:
        metadata["metadata_crc32"] = metadata_checksum(metadata)
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + rebuilt)
