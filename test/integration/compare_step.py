#!/usr/bin/python3
"""Compares the loss of one step in two megatron-run logs.

usage: compare_step.py A.jsonl STEP_A B.jsonl STEP_B [--rtol X]
Prints "losses agree" when |a - b| <= rtol * |a| (default 1e-5), and exits 1
otherwise.
"""
import json
import sys


def loss(path, step):
    with open(path) as f:
        for line in f:
            record = json.loads(line)
            if record["step"] == step:
                return record["loss"]
    sys.exit(f"{path}: no step {step}")


def main():
    args = sys.argv[1:]
    rtol = 1e-5
    if "--rtol" in args:
        i = args.index("--rtol")
        rtol = float(args[i + 1])
        del args[i : i + 2]
    a = loss(args[0], int(args[1]))
    b = loss(args[2], int(args[3]))
    rel = abs(a - b) / abs(a)
    print(f"{args[0]} step {args[1]}: {a:.8f}; {args[2]} step {args[3]}: {b:.8f}; relative {rel:.2e}")
    if rel > rtol:
        print("losses differ")
        sys.exit(1)
    print("losses agree")


if __name__ == "__main__":
    main()
