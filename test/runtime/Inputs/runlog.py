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
  runlog.py within LOG REFERENCE --rtol X (--first | --last N | --every)
      compares the first step's loss (or the mean of the last N steps, or
      every step's) with the reference log's: prints "within" and exits 0
      when they differ by at most X relative, else prints both and exits 1
  runlog.py scaler LOG [--hysteresis H] [--window W] [--min-scale M]
      replays Megatron-LM's DynamicGradScaler on the log's "skipped" flags
      from its first loss_scale and checks every logged loss_scale against
      it; prints the skipped steps and exits 1 at the first disagreement
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
    p = sub.add_parser("within")
    p.add_argument("log")
    p.add_argument("reference")
    p.add_argument("--rtol", type=float, required=True)
    p.add_argument("--first", action="store_true")
    p.add_argument("--last", type=int)
    p.add_argument("--every", action="store_true")
    p = sub.add_parser("scaler")
    p.add_argument("log")
    p.add_argument("--hysteresis", type=int, default=2)
    p.add_argument("--window", type=int, default=1000)
    p.add_argument("--min-scale", type=float, default=1.0)
    args = parser.parse_args()

    rows = lines(args.log)
    if args.command == "within":
        ref = lines(args.reference)
        if args.every:
            if len(rows) != len(ref):
                sys.exit(f"{len(rows)} steps vs {len(ref)} in the reference")
            worst = max(abs(r["loss"] - q["loss"]) / abs(q["loss"]) for r, q in zip(rows, ref))
            if not worst <= args.rtol:
                sys.exit(f"every step: largest relative difference {worst:.2e} above {args.rtol}")
            print(f"every step: within {args.rtol} of the reference")
            return

        def measure(rs):
            if args.first:
                return rs[0]["loss"]
            tail = [r["loss"] for r in rs[-args.last :]]
            return sum(tail) / len(tail)

        what = "first step" if args.first else f"mean of the last {args.last} steps"
        a, b = measure(rows), measure(ref)
        diff = abs(a - b) / abs(b)
        if not diff <= args.rtol:
            sys.exit(f"{what}: {a:.6f} vs reference {b:.6f}, relative "
                     f"difference {diff:.2e} above {args.rtol}")
        print(f"{what}: within {args.rtol} of the reference")
        return
    if args.command == "scaler":
        # Megatron-LM's DynamicGradScaler (growth 2, backoff 0.5).
        scale = rows[0]["loss_scale"]
        growth, hysteresis = 0, args.hysteresis
        skipped = []
        for row in rows:
            if row["loss_scale"] != scale:
                sys.exit(f"step {row['step']}: loss scale {row['loss_scale']}, "
                         f"DynamicGradScaler gives {scale}")
            if row["skipped"]:
                skipped.append(row["step"])
                growth = 0
                hysteresis -= 1
                if hysteresis <= 0:
                    scale = max(scale * 0.5, args.min_scale)
            else:
                growth += 1
                if growth == args.window:
                    growth, hysteresis = 0, args.hysteresis
                    scale *= 2
        print("skipped steps:", " ".join(map(str, skipped)) or "none")
        print("loss scales follow DynamicGradScaler, last", rows[-1]["loss_scale"])
        return
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
