#!/usr/bin/python3
"""Writes a damaged copy of a megatron-mlir artifact, for megatron-run's
error tests.

  edit_artifact.py IN OUT [--set PATH=JSON]... [--append PATH=JSON]...
      [--del PATH]... [--dup-program]

PATH is a /-separated path into the JSON document. A list element is named
by its index or by [KEY=VALUE,...], the first element whose fields have those
(string) values, e.g. programs/0/buffers/[kind=param,name=wte.weight]/shape.
--set replaces (or adds) the value, --append adds the value at the end of
the list at PATH (e.g. --append 'params={"name": ...}'), --del removes it,
--dup-program appends a copy of program 0 as the program of the next stage
("stage" set to its index in "programs"). The --set edits run first, then
--append, then --del, then --dup-program, each kind in the order given.
Only the standard library is used, so this starts fast.
"""

import argparse
import copy
import json


def index(node, key):
    if not isinstance(node, list):
        return key
    if key.startswith("["):
        wanted = dict(item.split("=", 1) for item in key[1:-1].split(","))
        for i, element in enumerate(node):
            if all(str(element.get(k)) == v for k, v in wanted.items()):
                return i
        raise SystemExit(f"edit_artifact: no element {key}")
    return int(key)


def walk(document, path):
    keys = path.split("/")
    node = document
    for key in keys[:-1]:
        node = node[index(node, key)]
    return node, index(node, keys[-1])


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
    parser.add_argument("--dup-program", action="store_true")
    args = parser.parse_args()

    with open(args.input) as f:
        document = json.load(f)
    for assignment in args.sets:
        path, value = split(assignment)
        node, key = walk(document, path)
        node[key] = json.loads(value)
    for assignment in args.appends:
        path, value = split(assignment)
        node, key = walk(document, path)
        if not isinstance(node[key], list):
            raise SystemExit(f"edit_artifact: {path} is not a list")
        node[key].append(json.loads(value))
    for path in args.dels:
        node, key = walk(document, path)
        del node[key]
    if args.dup_program:
        program = copy.deepcopy(document["programs"][0])
        program["stage"] = len(document["programs"])
        document["programs"].append(program)
    with open(args.output, "w") as f:
        json.dump(document, f, separators=(",", ":"))


if __name__ == "__main__":
    main()
