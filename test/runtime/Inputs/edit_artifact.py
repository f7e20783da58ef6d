#!/usr/bin/python3
"""Writes a damaged copy of a megatron-mlir artifact, for megatron-run's
error tests.

  edit_artifact.py IN OUT [--set PATH=JSON]... [--append PATH=JSON]...
      [--del PATH]... [--swap PATH,PATH]... [--replace-source OLD=NEW]...
      [--dup-program] [--keep-checksum]

PATH is a /-separated path into the JSON document. A list element is named
by its index or by [KEY=VALUE,...], the first element whose fields have those
(string) values, e.g. programs/0/buffers/[kind=param,name=wte.weight]/shape
(a dotted KEY names a nested field: [kernel=matmul,params.transpose_b=1]).
--set-output-shape COMMAND=JSON sets the shape of the buffer that is the
first output of the command at path COMMAND (programs/N/commands/...).
--set-buffer OPERAND/FIELD=JSON sets a field of the buffer that the operand
at path OPERAND names (programs/N/commands/.../outs/1/dtype="bf16").
--copy SRC=DST sets the value at path DST to the one at path SRC (another
buffer's id as a command's operand, say); it runs with --set-buffer.
--set replaces (or adds) the value, --append adds the value at the end of
the list at PATH (e.g. --append 'params={"name": ...}'), --del removes it,
--replace-source OLD=NEW replaces every OLD in program 0's kernel source
with NEW (a kernel that reads other parameter blocks, say). --swap
exchanges two elements (reordered commands), --dup-program appends a
copy of program 0 as the program of the next stage ("stage" set to its index
in "programs"). The --set edits run first (then --set-output-shape and --set-buffer), then --append, then --del, then
--swap, then --dup-program, each kind in the order given. The edited file
gets a checksum of its own bytes, as a compiler would write it (the edits
test what the runtime checks beyond the checksum); --keep-checksum keeps the
input's, as a file damaged after it was written would. Only the standard
library is used, so this starts fast.
"""

import argparse
import copy
import json


def field(element, dotted):
    """element["a"]["b"] for "a.b", or None."""
    for part in dotted.split("."):
        element = element.get(part) if isinstance(element, dict) else None
    return element


def index(node, key):
    if not isinstance(node, list):
        return key
    if key.startswith("["):
        wanted = dict(item.split("=", 1) for item in key[1:-1].split(","))
        for i, element in enumerate(node):
            if all(str(field(element, k)) == v for k, v in wanted.items()):
                return i
        raise SystemExit(f"edit_artifact: no element {key}")
    return int(key)


def walk(document, path):
    keys = path.split("/")
    node = document
    for key in keys[:-1]:
        node = node[index(node, key)]
    return node, index(node, keys[-1])


def fnv1a(data):
    """FNV-1a, 64 bits, with mtrt/Hash.h's offset basis: the artifact's
    checksum."""
    value = 1469598103934665603
    for byte in data:
        value = ((value ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def split(assignment):
    """PATH=JSON at the first "=" outside brackets ([name=x] is in PATH)."""
    depth, cut = 0, None
    for i, char in enumerate(assignment):
        depth += {"[": 1, "]": -1}.get(char, 0) if cut is None else 0
        if char == "=" and depth == 0 and cut is None:
            cut = i
    if cut is None:
        raise SystemExit(f"edit_artifact: expected PATH=JSON, got {assignment}")
    return assignment[:cut], assignment[cut + 1 :]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("input")
    parser.add_argument("output")
    parser.add_argument("--set", action="append", default=[], dest="sets")
    parser.add_argument("--append", action="append", default=[], dest="appends")
    parser.add_argument("--del", action="append", default=[], dest="dels")
    parser.add_argument("--swap", action="append", default=[], dest="swaps")
    parser.add_argument("--set-output-shape", action="append", default=[],
                        dest="output_shapes")
    parser.add_argument("--set-buffer", action="append", default=[],
                        dest="buffer_sets")
    parser.add_argument("--copy", action="append", default=[], dest="copies")
    parser.add_argument("--replace-source", action="append", default=[],
                        dest="source_replacements")
    parser.add_argument("--dup-program", action="store_true")
    parser.add_argument("--keep-checksum", action="store_true")
    args = parser.parse_args()

    with open(args.input) as f:
        document = json.load(f)
    for assignment in args.sets:
        path, value = split(assignment)
        node, key = walk(document, path)
        node[key] = json.loads(value)
    for assignment in args.output_shapes:
        path, value = split(assignment)
        node, key = walk(document, path)
        program = document["programs"][int(path.split("/")[1])]
        program["buffers"][node[key]["outs"][0]]["shape"] = json.loads(value)
    for assignment in args.copies:
        source, target = split(assignment)
        node, key = walk(document, source)
        value = node[key]
        node, key = walk(document, target)
        node[key] = value
    for assignment in args.buffer_sets:
        path, value = split(assignment)
        operand, name = path.rsplit("/", 1)
        node, key = walk(document, operand)
        program = document["programs"][int(path.split("/")[1])]
        program["buffers"][node[key]][name] = json.loads(value)
    for assignment in args.appends:
        path, value = split(assignment)
        node, key = walk(document, path)
        if not isinstance(node[key], list):
            raise SystemExit(f"edit_artifact: {path} is not a list")
        node[key].append(json.loads(value))
    for path in args.dels:
        node, key = walk(document, path)
        del node[key]
    for pair in args.swaps:
        first, second = pair.split(",")
        (node_a, key_a), (node_b, key_b) = walk(document, first), walk(document, second)
        node_a[key_a], node_b[key_b] = node_b[key_b], node_a[key_a]
    for assignment in args.source_replacements:
        old, new = split(assignment)
        source = document["programs"][0]["kernel_source"]
        if old not in source:
            raise SystemExit(f"edit_artifact: {old!r} is not in the kernel source")
        document["programs"][0]["kernel_source"] = source.replace(old, new)
    if args.dup_program:
        program = copy.deepcopy(document["programs"][0])
        program["stage"] = len(document["programs"])
        document["programs"].append(program)
    stored = document.get("checksum")
    if not args.keep_checksum:
        document["checksum"] = "fnv1a64:" + "0" * 16
    text = json.dumps(document, separators=(",", ":")).encode()
    if not args.keep_checksum:
        text = text.replace(b"fnv1a64:" + b"0" * 16, b"fnv1a64:%016x" % fnv1a(text))
    with open(args.output, "wb") as f:
        f.write(text)


if __name__ == "__main__":
    main()
