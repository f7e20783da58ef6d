#!/usr/bin/env python3
"""Kills a saving megatron-run with SIGKILL at random moments; after each
kill the latest checkpoint must load.

usage: kill_during_save.py MEGATRON_RUN ARTIFACT DATA DIR KILLS

Each round starts a long run that saves a checkpoint after every step (and
resumes from DIR once it holds one), kills it after a random delay, then
resumes from DIR's latest checkpoint for one step. Prints one summary line;
exits 1 naming the round whose latest checkpoint did not load.
"""
import os
import random
import signal
import subprocess
import sys
import time

run, artifact, data, directory, kills = sys.argv[1:5] + [int(sys.argv[5])]
marker = os.path.join(directory, "latest_checkpointed_iteration.txt")
# One schedule for every run, so any checkpoint continues in any of them.
common = [run, artifact, "--data", data, "--lr-decay-iters", "100000", "--quiet"]
random.seed(7)
partial = 0
for round in range(kills):
    args = common + ["--steps", "100000", "--save", directory, "--save-interval", "1"]
    if os.path.exists(marker):
        args += ["--load", directory]
    process = subprocess.Popen(args, stdout=subprocess.DEVNULL)
    time.sleep(random.uniform(0.05, 0.5))
    process.send_signal(signal.SIGKILL)
    process.wait()
    partial += any(
        name.endswith(".tmp")
        for _, _, files in os.walk(directory)
        for name in files
    )
    if not os.path.exists(marker):
        continue
    with open(marker) as f:
        latest = int(f.read())
    check = subprocess.run(
        common + ["--steps", str(latest + 1), "--load", directory],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if check.returncode != 0:
        print(f"round {round}: the latest checkpoint ({latest}) does not load: "
              f"{check.stderr.strip()}")
        sys.exit(1)
with open(marker) as f:
    latest = int(f.read())
print(f"{kills} kills: the latest checkpoint loaded after every one "
      f"(iteration {latest} at the end; {partial} kills left a partial write)")
