#!/usr/bin/env python
"""Sorting speed of rumus on the CPU next to NumPy and PyTorch, printed as a table.

    .venv/bin/python benches/bench_sort.py            # 7 rounds
    .venv/bin/python benches/bench_sort.py --rounds 3

Cases: sort of 1M float32 (rumus.sort, values and indices, vs np.sort, values only) and
topk(1M float32, k=100) (vs torch.topk when PyTorch is installed, else np.argpartition plus
sorting the k winners, which is what topk computes). Every library runs in its own
subprocess (so no library's threads or allocator disturb another), the subprocesses
alternate round by round, each reports the median of its timed calls, and the table
prints the median over rounds and rumus' time as a ratio of the other library's
(below 1.0: rumus is faster). A script, not a test: shared machines are noisy.
Benchmark a release build (`maturin develop --release`).
"""

import argparse
import json
import statistics
import subprocess
import sys

try:
    import torch  # noqa: F401 - only whether it is installed matters here
except ImportError:
    HAVE_TORCH = False
else:
    HAVE_TORCH = True

N = 1 << 20
K = 100

# One timed case, run in a fresh interpreter: prints the median seconds per call.
CHILD = r"""
import json, sys, time, statistics
import numpy as np
lib, case = sys.argv[1], sys.argv[2]
n, k, reps = (int(a) for a in sys.argv[3:6])
x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
if lib == "rumus":
    import rumus
    t = rumus.from_numpy(x)
    fn = (lambda: t.sort()) if case == "sort" else (lambda: t.topk(k))
elif lib == "torch":
    import torch
    t = torch.from_numpy(x)
    fn = (lambda: torch.sort(t)) if case == "sort" else (lambda: torch.topk(t, k))
else:
    def np_topk():
        i = np.argpartition(-x, k)[:k]
        return i[np.argsort(-x[i])]
    fn = (lambda: np.sort(x)) if case == "sort" else np_topk
fn(); fn()
times = []
for _ in range(reps):
    s = time.perf_counter(); fn(); times.append(time.perf_counter() - s)
print(json.dumps(statistics.median(times)))
"""


def run(lib, case, reps):
    out = subprocess.run(
        [sys.executable, "-c", CHILD, lib, case, str(N), str(K), str(reps)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--reps", type=int, default=15, help="timed calls per subprocess")
    args = ap.parse_args()
    cases = [
        ("sort 1M float32", "sort", "numpy"),
        (f"topk 1M float32 k={K}", "topk", "torch" if HAVE_TORCH else "numpy"),
    ]
    print(f"{'case':<24}{'rumus ms':>10}{'vs':>16}{'other ms':>10}{'ratio':>8}")
    for label, case, other in cases:
        times = {"rumus": [], other: []}
        for r in range(args.rounds):
            order = ["rumus", other] if r % 2 == 0 else [other, "rumus"]
            for lib in order:
                times[lib].append(run(lib, case, args.reps))
        a, b = statistics.median(times["rumus"]), statistics.median(times[other])
        name = other if other == "torch" or case == "sort" else "np.argpartition"
        print(f"{label:<24}{a * 1e3:>10.2f}{name:>16}{b * 1e3:>10.2f}{a / b:>8.2f}")


if __name__ == "__main__":
    main()
