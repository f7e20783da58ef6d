#!/usr/bin/python3
"""Checks the compiled training step's gradients against central differences.

usage: finite_differences.py MEGATRON_RUN MODEL.mtx CONFIG.json TOKENS.bin WORKDIR [STEP] [--extrapolate]

The parameters (any model family) are those of the checkpoint the compiled
program writes; CONFIG.json is only named in the output.

The gradient of every parameter comes out of the compiled program itself: one
step of megatron-run with AdamW turned into plain gradient descent (beta1 =
beta2 = 0, epsilon E = 1000, learning rate 1, no weight decay, no clipping)
moves each parameter by dp = -g / (|g| + E), so g = -E dp / (1 - |dp|).
Central differences come from the loss megatron-run reports for step 1 with
one coordinate moved by +h and -h. Dropout is on: step 1 with the same seed
draws the same masks in every run, so the loss is a deterministic function of
the parameters.

Every parameter tensor is checked at its two coordinates of largest gradient
and one random coordinate; each check passes when |fd - g| is within 0.5% of
the tensor's largest gradient plus 1e-4. Float32 losses make a finite
difference accurate to about 1e-4, so the test catches wrong transposes,
missing terms and wrong signs, not last-bit differences.

With --extrapolate, each difference is Richardson's extrapolation of the
central differences at STEP and STEP/2, (4 D(h/2) - D(h)) / 3, whose
truncation error is O(step^4) instead of O(step^2): for losses that curve
hard (Gemma's embeddings times sqrt(hidden_size)), where a step small enough
for the plain difference drowns in float32 roundoff.
"""

import json
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gpt2_reference as reference  # noqa: E402

EPS_ADAM = 1000.0
STEP = 1e-2


def run(megatron_run, model, params, tokens, work, save=None):
    log = os.path.join(work, "fd.jsonl")
    cmd = [megatron_run, model, "--steps", "1", "--data", tokens, "--load-params", params,
           "--lr", "1", "--lr-decay-style", "constant", "--adam-beta1", "0", "--adam-beta2", "0",
           "--adam-eps", str(EPS_ADAM), "--weight-decay", "0", "--clip-grad", "0",
           "--log", log, "--quiet"]
    if save:
        cmd += ["--save-params", save]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    with open(log) as f:
        return json.loads(f.readline())["loss"]


def main():
    global STEP
    args = [a for a in sys.argv if a != "--extrapolate"]
    extrapolate = len(args) != len(sys.argv)
    megatron_run, model, config, tokens, work = args[1:6]
    if len(args) > 6:
        # A smaller step where the loss curves harder (RMSNorm and rotary
        # embedding of random weights): the central difference's truncation
        # error is O(step^2).
        STEP = float(args[6])
    # The parameters' names and shapes, whatever the model family: those of
    # the checkpoint the compiled program writes.
    shapes_file = os.path.join(work, "shapes.safetensors")
    subprocess.run([megatron_run, model, "--steps", "1", "--data", tokens, "--quiet",
                    "--save-params", shapes_file], check=True, stdout=subprocess.DEVNULL)
    shapes = {name: t.shape for name, t in reference.read_safetensors(shapes_file).items()}
    rng = np.random.default_rng(7)
    # Non-trivial values everywhere, biases and norm weights included, so that
    # every term of every gradient is exercised.
    params = {name: rng.normal(0.0, 0.3, shape).astype(np.float32)
              for name, shape in sorted(shapes.items())}
    for name in params:
        if ("ln_" in name or "norm" in name) and name.endswith(".weight"):
            params[name] += 1.0
    init = os.path.join(work, "init.safetensors")
    reference.write_safetensors(init, params)
    after = os.path.join(work, "after.safetensors")
    run(megatron_run, model, init, tokens, work, save=after)
    moved = reference.read_safetensors(after)

    failures, checks = 0, 0
    probe = os.path.join(work, "probe.safetensors")
    for name, p in params.items():
        dp = moved[name].astype(np.float64) - p.astype(np.float64)
        grad = -EPS_ADAM * dp / (1.0 - np.abs(dp))
        flat = np.abs(grad).ravel()
        picks = list(np.argsort(flat)[-2:]) + [int(rng.integers(flat.size))]
        scale = float(flat.max())
        for index in picks:
            coord = np.unravel_index(index, p.shape)

            def central(step):
                losses = []
                for sign in (1.0, -1.0):
                    shifted = {k: v.copy() for k, v in params.items()}
                    shifted[name][coord] += sign * step
                    reference.write_safetensors(probe, shifted)
                    losses.append(run(megatron_run, model, probe, tokens, work))
                return (losses[0] - losses[1]) / (2 * step)

            fd = central(STEP)
            if extrapolate:
                fd = (4 * central(STEP / 2) - fd) / 3
            err = abs(fd - grad[coord])
            ok = err <= 0.005 * scale + 1e-4
            checks += 1
            failures += not ok
            print(f"{name}{list(coord)}: compiled {grad[coord]:+.6f} finite difference {fd:+.6f} "
                  f"{'ok' if ok else 'FAIL'}")
    print(f"{checks - failures} of {checks} gradient checks agree")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
