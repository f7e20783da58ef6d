#!/usr/bin/python3
"""Checks megatron-run's --log files (one JSON object per step).

  runlog.py keys LOG
      prints the sorted key set of every line (one line per distinct set) and
      the distinct peak_bytes values; fails on a line that is not a JSON
      object or on steps that are not 1, 2, ... in order
  runlog.py column LOG KEY
      prints KEY of every line, repr of the parsed value, one per line
  runlog.py loss LOG STEP
      prints "loss X" with X the loss of step STEP exactly as logged
  runlog.py decreases LOG --first-minus X --last N
      prints "decreased" and exits 0 when the mean loss of the last N steps
      is below the first step's loss minus X, else says why and exits 1
"""

import argparse
import json
import sys


def lines(path):
    with open(path) as f:
        rows = [json.loads(line) for line in f if line.strip()]
    for i, row in enumerate(rows):
        if not isinstance(row, dict):
            sys.exit(f"{path}:{i + 1}: not a JSON object")
        if row.get("step") != i + 1:
            sys.exit(f"{path}:{i + 1}: step is {row.get('step')}, expected {i + 1}")
    return rows


def main():
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("keys")
    p.add_argument("log")
    p = sub.add_parser("column")
    p.add_argument("log")
    p.add_argument("key")
    p = sub.add_parser("loss")
    p.add_argument("log")
    p.add_argument("step", type=int)
    p = sub.add_parser("decreases")
    p.add_argument("log")
    p.add_argument("--first-minus", type=float, required=True)
    p.add_argument("--last", type=int, required=True)
    args = parser.parse_args()

    rows = lines(args.log)
    if args.command == "keys":
        print(f"{len(rows)} lines")
        for keys in sorted({tuple(sorted(row)) for row in rows}):
            print("keys:", " ".join(keys))
        for peak in sorted({row["peak_bytes"] for row in rows}):
            print("peak_bytes:", peak)
    elif args.command == "column":
        for row in rows:
            print(repr(row[args.key]))
    elif args.command == "loss":
        with open(args.log) as f:
            raw = [json.loads(line, parse_float=str) for line in f if line.strip()]
        print("loss", raw[args.step - 1]["loss"])
    else:
        first = rows[0]["loss"]
        tail = [row["loss"] for row in rows[-args.last :]]
        mean = sum(tail) / len(tail)
        if not mean < first - args.first_minus:
            sys.exit(f"not decreased: first {first:.4f}, mean of the last "
                     f"{len(tail)} {mean:.4f}, needed below {first - args.first_minus:.4f}")
        print(f"decreased: first {first:.4f}, mean of the last {len(tail)} {mean:.4f}")


if __name__ == "__main__":
    main()
