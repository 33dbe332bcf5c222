"""rumus.linalg against NumPy (and PyTorch when importable): solve, cholesky and svd of
512 x 512 float64 matrices. Each library runs in its own subprocess; rounds alternate
between them; the table shows medians and rumus's time as a ratio of NumPy's (target <= 1.5).

    python benches/bench_linalg.py [--rounds 5] [--n 512]
"""

import argparse
import json
import statistics
import subprocess
import sys

WORKER = r"""
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
out = {}
for name, fn in ops.items():
    fn()
    best = []
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best.append(time.perf_counter() - t)
    out[name] = min(best)
print(json.dumps(out))
"""


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--n", type=int, default=512)
    p.add_argument("--reps", type=int, default=3)
    args = p.parse_args()
    libs = ["rumus", "numpy"]
    try:
        import torch  # noqa: F401

        libs.append("torch")
    except ImportError:
        pass
    times = {lib: {} for lib in libs}
    for r in range(args.rounds):
        order = libs if r % 2 == 0 else libs[::-1]
        for lib in order:
            res = subprocess.run(
                [sys.executable, "-c", WORKER, lib, str(args.n), str(args.reps)],
                capture_output=True,
                text=True,
                check=True,
            )
            for k, v in json.loads(res.stdout).items():
                times[lib].setdefault(k, []).append(v)
    ops = list(times["numpy"])
    head = f"{'op (' + str(args.n) + 'x' + str(args.n) + ' f64)':<22}" + "".join(
        f"{lib + ' ms':>12}" for lib in libs
    )
    print(head + f"{'rumus/numpy':>13}")
    for op in ops:
        med = {lib: statistics.median(times[lib][op]) * 1e3 for lib in libs}
        row = f"{op:<22}" + "".join(f"{med[lib]:>12.2f}" for lib in libs)
        print(row + f"{med['rumus'] / med['numpy']:>12.2f}x")


if __name__ == "__main__":
    main()
