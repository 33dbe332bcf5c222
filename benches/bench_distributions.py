#!/usr/bin/env python
"""rumus.distributions.Normal on 1M float32 values: log_prob, rsample and
cdf beside PyTorch's torch.distributions when it is installed, else beside
NumPy (and scipy.stats when importable), each library timed in its own process
(benches/harness.py).

    .venv/bin/python benches/bench_distributions.py [--rounds 5] [--n 1000000]

The NumPy column is the same formula written with NumPy (its own RNG for
sampling), a floor for what the framework overhead costs. Nothing here
asserts a speed.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, have  # noqa: E402


def setup(lib, n):
    data = (
        "import numpy as np\n"
        f"rng = np.random.default_rng(0)\n"
        f"x = rng.standard_normal({n}).astype(np.float32)\n"
        f"loc = rng.standard_normal({n}).astype(np.float32)\n"
        f"scale = (rng.random({n}) + 0.5).astype(np.float32)\n"
    )
    if lib == "numpy":
        return data + "import math\nc = np.float32(0.5 * math.log(2 * math.pi))\n"
    if lib == "scipy":
        return data + "import scipy.stats as st\nd = st.norm(loc, scale)\n"
    mod = "rumus" if lib == "rumus" else "torch"
    return (
        data
        + f"import {mod} as lib\n"
        + "x, loc, scale = (lib.from_numpy(a) for a in (x, loc, scale))\n"
        + "d = lib.distributions.Normal(loc, scale)\n"
    )


STMTS = {
    "log_prob": {
        "rumus": "d.log_prob(x)",
        "torch": "d.log_prob(x)",
        "numpy": "z = (x - loc) / scale; -0.5 * z * z - np.log(scale) - c",
        "scipy": "d.logpdf(x)",
    },
    "rsample": {
        "rumus": "d.rsample()",
        "torch": "d.rsample()",
        "numpy": "loc + rng.standard_normal(loc.shape, dtype=np.float32) * scale",
        "scipy": "d.rvs()",
    },
    "cdf": {
        "rumus": "d.cdf(x)",
        "torch": "d.cdf(x)",
        "scipy": "d.cdf(x)",
    },
}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--n", type=int, default=1_000_000)
    args = ap.parse_args()
    if have("torch"):
        libs = ["rumus", "torch"]
    else:
        libs = ["rumus", "numpy"] + (["scipy"] if have("scipy.stats") else [])
    cases = []
    for name, stmts in STMTS.items():
        jobs = {lib: (setup(lib, args.n), stmts[lib]) for lib in libs if lib in stmts}
        if len(jobs) > 1:
            cases.append((f"Normal.{name} n={args.n}", jobs))
    print(
        f"rumus.distributions.Normal, float32, CPU ({os.cpu_count()} cores); "
        f"medians of {args.rounds} rounds\n"
    )
    compare(cases, rounds=args.rounds)


if __name__ == "__main__":
    main()
