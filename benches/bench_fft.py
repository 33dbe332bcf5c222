"""rumus.fft against NumPy (and PyTorch when importable): rfft of 1M float32 (target
<= 1.5x NumPy), plus fft of 1M complex64 and rfft2 of 1024 x 1024. Each library runs in
its own subprocess; rounds alternate between them; the table shows medians and rumus's
time as a ratio of NumPy's.

    python benches/bench_fft.py [--rounds 5] [--n 1048576]
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
x = rng.standard_normal(n).astype(np.float32)
z = (x + 1j * rng.standard_normal(n).astype(np.float32)).astype(np.complex64)
img = rng.standard_normal((1024, 1024)).astype(np.float32)
if lib == "numpy":
    ops = {
        "rfft": lambda: np.fft.rfft(x),
        "fft c64": lambda: np.fft.fft(z),
        "rfft2 1024^2": lambda: np.fft.rfft2(img),
    }
elif lib == "rumus":
    import rumus
    tx, tz, ti = (rumus.from_numpy(a) for a in (x, z, img))
    ops = {
        "rfft": lambda: rumus.fft.rfft(tx),
        "fft c64": lambda: rumus.fft.fft(tz),
        "rfft2 1024^2": lambda: rumus.fft.rfft2(ti),
    }
else:
    import torch
    tx, tz, ti = (torch.from_numpy(a) for a in (x, z, img))
    ops = {
        "rfft": lambda: torch.fft.rfft(tx),
        "fft c64": lambda: torch.fft.fft(tz),
        "rfft2 1024^2": lambda: torch.fft.rfft2(ti),
    }
"""
    + WORKER_TIMING
)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--n", type=int, default=1 << 20)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args()
    times = run_workers(WORKER, libraries("rumus", "numpy"), [args.n, args.reps], args.rounds)
    print_ratio_table("op (n=" + str(args.n) + ")", times)


if __name__ == "__main__":
    main()
