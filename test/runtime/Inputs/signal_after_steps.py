#!/usr/bin/env python3
"""Sends a signal to a training run once its log holds some steps, as a
scheduler's preemption notice arrives during training.

usage: signal_after_steps.py SIGNAL STEPS LOG COMMAND...

Starts COMMAND, waits until LOG (its --log) holds STEPS lines, sends SIGNAL
(a name: SIGTERM, SIGUSR1, ...) to the process, and exits with COMMAND's
exit code. Gives up (exit 2) when COMMAND ends first or after 120 s.
"""
import os
import signal
import subprocess
import sys
import time

name, steps, log = sys.argv[1], int(sys.argv[2]), sys.argv[3]
process = subprocess.Popen(sys.argv[4:])
deadline = time.monotonic() + 120
while time.monotonic() < deadline and process.poll() is None:
    if os.path.exists(log):
        with open(log) as f:
            if sum(1 for line in f if line.strip()) >= steps:
                break
    time.sleep(0.01)
else:
    process.kill()
    process.wait()
    print("signal_after_steps.py: the run ended or stalled before its log "
          f"held {steps} steps", file=sys.stderr)
    sys.exit(2)
process.send_signal(getattr(signal, name))
sys.exit(process.wait())
