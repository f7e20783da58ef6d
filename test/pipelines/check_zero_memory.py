#!/usr/bin/python3
"""Checks printed memory plans against the ZeRO paper's per-parameter bytes.

usage: check_zero_memory.py NUM_PARAMS DP PLAN_ZERO0 PLAN_ZERO1 PLAN_ZERO2 PLAN_ZERO3

Each PLAN file is the output of --mt-train-pipeline="... print-memory-plan=true".
For fp32 training with AdamW (Rajbhandari et al. 2020, section 5, with K = 8
bytes of optimizer state and 4-byte parameters and gradients), a rank holds
per parameter: no ZeRO 4 + 4 + 8 = 16 bytes; ZeRO-1 4 + 4 + 8/d; ZeRO-2
4 + (4 + 8)/d; ZeRO-3 (4 + 4 + 8)/d. The plan's "gradients" are the gradients
the optimizer consumes after their reduction. Exits 1 on any mismatch.
"""
import re
import sys


def read_plan(path):
    values = {}
    with open(path) as f:
        for line in f:
            m = re.match(r"\s+(parameters|optimizer state|gradients \(sum\)|planned peak): (\d+) bytes", line)
            if m:
                values[m.group(1)] = int(m.group(2))
    return values


def main():
    n, d = int(sys.argv[1]), int(sys.argv[2])
    expected = [(4, 4, 8), (4, 4, 8 / d), (4, 4 / d, 8 / d), (4 / d, 4 / d, 8 / d)]
    ok = True
    for stage, (path, (p, g, s)) in enumerate(zip(sys.argv[3:7], expected)):
        plan = read_plan(path)
        got = (plan["parameters"], plan["gradients (sum)"], plan["optimizer state"])
        want = (round(p * n), round(g * n), round(s * n))
        per = [x / n for x in got]
        total = sum(per)
        status = "ok" if got == want else "MISMATCH"
        ok &= got == want
        print(f"ZeRO-{stage}, dp {d}: parameters {per[0]:.2f} + gradients {per[1]:.2f} + "
              f"optimizer state {per[2]:.2f} = {total:.2f} bytes per parameter "
              f"(formula {p + g + s:.2f}); planned peak {plan['planned peak'] / n:.2f} "
              f"bytes per parameter {status}")
    print("ZeRO formulas hold" if ok else "ZeRO formulas DO NOT hold")
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
