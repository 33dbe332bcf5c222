"""rumus.linalg against NumPy (and PyTorch when importable): solve, cholesky and svd of
512 x 512 float64 matrices. Each library runs in its own subprocess; rounds alternate
between them; the table shows medians and rumus's time as a ratio of NumPy's (target <= 1.5).

    python benches/bench_linalg.py [--rounds 5] [--n 512]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import WORKER_TIMING, libraries, print_ratio_table, run_workers  # noqa: E402

WORKER = (
    r"""
import json, sys, time
import numpy as np
lib, n, reps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
a = rng.standard_normal((n, n)) + n ** 0.5 * np.eye(n)
b = rng.standard_normal((n, 1))
spd = a @ a.T + n * np.eye(n)
if lib == "numpy":
    ops = {
        "solve": lambda: np.linalg.solve(a, b),
        "cholesky": lambda: np.linalg.cholesky(spd),
        "svd": lambda: np.linalg.svd(a),
    }
elif lib == "rumus":
    import rumus
    ta, tb, ts = (rumus.from_numpy(x) for x in (a, b, spd))
    ops = {
        "solve": lambda: rumus.linalg.solve(ta, tb),
        "cholesky": lambda: rumus.linalg.cholesky(ts),
        "svd": lambda: rumus.linalg.svd(ta),
    }
else:
    import torch
    ta, tb, ts = (torch.from_numpy(x) for x in (a, b, spd))
    ops = {
        "solve": lambda: torch.linalg.solve(ta, tb),
        "cholesky": lambda: torch.linalg.cholesky(ts),
        "svd": lambda: torch.linalg.svd(ta),
    }
"""
    + WORKER_TIMING
)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    times = run_workers(WORKER, libraries("rumus", "numpy"), [args.n, args.reps], args.rounds)
    print_ratio_table("op (" + str(args.n) + "x" + str(args.n) + " f64)", times)


if __name__ == "__main__":
    main()
