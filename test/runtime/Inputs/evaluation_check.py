#!/usr/bin/python3
"""Checks megatron-run's --eval-interval against a training step.

usage: evaluation_check.py RUN ARTIFACT [--twin TWIN] [--steps N] -- LAUNCH...

A training step's loss is the forward loss of its parameters before the
update, so the validation loss of one global batch after N steps must be
the first step's loss of a run that loads the parameters those N steps
reached and trains on the validation tokens. Writes random uint16 token
files train.bin and valid.bin (in the working directory), then:
  A: LAUNCH RUN ARTIFACT --steps N --data-path train.bin
     --valid-data-path valid.bin --eval-interval N --eval-iters 1
     --save-params a.safetensors --log a.log
  B: LAUNCH RUN TWIN --steps 1 --data-path valid.bin
     --load-params a.safetensors --log b.log
  C: A without the evaluation flags, --log c.log
TWIN (default ARTIFACT) is the same model compiled without dropout where
ARTIFACT has some: evaluation runs without it. Prints "evaluation matches"
and exits 0 when A's validation loss (its --log's validation_loss, to
9 digits) equals B's first loss and A's training losses equal C's
(evaluating changes no state), exactly; else prints both and exits 1.
"""

import json
import random
import re
import struct
import subprocess
import sys


def main():
    args = sys.argv[1:]
    split = args.index("--")
    mine, launch = args[:split], args[split + 1:]
    run, artifact = mine[0], mine[1]
    twin, steps = artifact, 3
    rest = mine[2:]
    while rest:
        flag, value = rest[0], rest[1]
        rest = rest[2:]
        if flag == "--twin":
            twin = value
        elif flag == "--steps":
            steps = int(value)
        else:
            sys.exit(f"evaluation_check.py: unknown flag {flag}")
    rng = random.Random(7)
    for name in ("train.bin", "valid.bin"):
        with open(name, "wb") as f:
            f.write(struct.pack("<4096H", *[rng.randrange(32) for _ in range(4096)]))

    def go(command, log):
        done = subprocess.run(launch + [run] + command + ["--log", log],
                              capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout + done.stderr)
            sys.exit(f"evaluation_check.py: exit {done.returncode}: {command}")
        return done.stdout, [json.loads(line)["loss"] for line in open(log)]

    out, trained = go([artifact, "--steps", str(steps), "--data-path",
                       "train.bin", "--valid-data-path", "valid.bin",
                       "--eval-interval", str(steps), "--eval-iters", "1",
                       "--save-params", "a.safetensors"], "a.log")
    found = re.findall(r"validation loss at iteration (\d+) \| lm loss value: "
                       r"([0-9.E+-]+)", out)
    logged = [json.loads(line).get("validation_loss") for line in open("a.log")]
    if len(found) != 1 or int(found[0][0]) != steps or \
            logged != [None] * (steps - 1) + [logged[-1]] or logged[-1] is None:
        print(out)
        sys.exit("evaluation_check.py: expected one validation line and "
                 f"log entry at iteration {steps}, found {found}, {logged}")
    validation = logged[-1]
    _, reference = go([twin, "--steps", "1", "--data-path", "valid.bin",
                       "--load-params", "a.safetensors"], "b.log")
    _, plain = go([artifact, "--steps", str(steps), "--data-path",
                   "train.bin"], "c.log")
    ok = validation == reference[0]
    print(f"validation {validation!r} first step {reference[0]!r}")
    if trained != plain:
        print(f"training losses with evaluation {trained} without {plain}")
        ok = False
    print("evaluation matches" if ok else "evaluation differs")
    sys.exit(0 if ok else 1)


main()
