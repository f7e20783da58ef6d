#!/usr/bin/env python3
"""The bytes each kind of command moves in one step of a compiled artifact.

    python3 bench/artifact_traffic.py MODEL.mtx [--stage N] [--bandwidth TB/s]

For every command of the stage's program, its operands' sizes are summed
(each input and each output once, as a kernel that reads its inputs and
writes its outputs once would move them), grouped by kernel (generated
kernels by shape: element-wise, row, row-block), and printed with their
count, gigabytes, share and the time those bytes take at the given
bandwidth (default 3 TB/s, about an H100's HBM3 in practice). A lower bound
for memory-bound commands; GEMMs and attention are compute-bound, so their
line says how much they read and write, not how long they take.

No GPU and no build are needed: the artifact is JSON (megatron-translate
--export-artifact).
"""

import argparse
import collections
import json
import sys

ELEMENT_BYTES = {"f32": 4, "i32": 4, "bf16": 2, "f16": 2, "i64": 8, "u8": 1}


def command_kind(command, generated):
    kernel = command["kernel"]
    if kernel != "fused":
        return kernel
    spec = generated[command["params"]["generated"]]
    if spec.get("row_block"):
        return "generated: row-block"
    if spec.get("row_length"):
        return "generated: row"
    return "generated: element-wise"


def traffic_by_kind(program):
    """{kind: [commands, bytes]} of one program: each command's operands'
    sizes, inputs and outputs once each. ValueError for an unknown dtype."""
    sizes = {}
    for buffer in program["buffers"]:
        count = 1
        for extent in buffer["shape"]:
            count *= extent
        if buffer["dtype"] not in ELEMENT_BYTES:
            raise ValueError("buffer %d has unknown dtype %r"
                             % (buffer["id"], buffer["dtype"]))
        sizes[buffer["id"]] = count * ELEMENT_BYTES[buffer["dtype"]]
    totals = collections.defaultdict(lambda: [0, 0])
    for command in program["commands"]:
        kind = command_kind(command, program["generated_kernels"])
        totals[kind][0] += 1
        ins = command["ins"]
        # A multi_adamw's 16-bit parameter copies (its last inputs) are only
        # written: counted once, as outputs.
        copies = int(command.get("params", {}).get("copies", 0))
        if command["kernel"] == "multi_adamw" and copies:
            ins = ins[:len(ins) - copies]
        totals[kind][1] += sum(sizes[i] for i in ins + command["outs"])
    return totals


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("artifact")
    parser.add_argument("--stage", type=int, default=0)
    parser.add_argument("--bandwidth", type=float, default=3.0,
                        help="TB/s for the time column (default 3)")
    parser.add_argument("--bytes", action="store_true",
                        help="bytes instead of gigabytes")
    args = parser.parse_args()
    try:
        with open(args.artifact) as f:
            artifact = json.load(f)
        program = artifact["programs"][args.stage]
    except (OSError, ValueError, KeyError, IndexError) as error:
        sys.exit("artifact_traffic: %s: not an artifact with stage %d (%s)"
                 % (args.artifact, args.stage, error))
    try:
        totals = traffic_by_kind(program)
    except ValueError as error:
        sys.exit("artifact_traffic: %s" % error)
    everything = sum(moved for _, moved in totals.values()) or 1
    unit, scale, digits = ("B", 1, 0) if args.bytes else ("GB", 1e9, 2)
    print("%-28s %6s %14s %7s %12s" % ("command", "count", unit, "share",
                                        "ms at %g TB/s" % args.bandwidth))
    for kind, (count, moved) in sorted(totals.items(),
                                       key=lambda item: -item[1][1]):
        print("%-28s %6d %14.*f %6.1f%% %12.2f" % (
            kind, count, digits, moved / scale, 100.0 * moved / everything,
            moved / (args.bandwidth * 1e12) * 1e3))
    print("%-28s %6d %14.*f" % ("all", sum(c for c, _ in totals.values()),
                                digits, everything / scale))


if __name__ == "__main__":
    main()
