#!/usr/bin/env python
"""Activations and smooth unary functions on the CPU, rumus beside PyTorch (when installed).

Each case runs on 1M float32 values drawn from a standard normal: the forward alone, and
forward + backward (a fresh leaf, the gradient of the sum). Each library runs in its own
process (benches/harness.py); ratios below 1 are rumus ahead.

    .venv/bin/python benches/bench_activations.py [--quick]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, have  # noqa: E402

N = 1 << 20

SETUP = """
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import {lib} as L
F = L.nn.functional
x = L.from_numpy(np.random.default_rng(0).standard_normal({n}).astype(np.float32))
xg = x.clone().requires_grad_(True)
"""

FORWARD = {
    "gelu": "F.gelu(x)",
    "gelu tanh": "F.gelu(x, approximate='tanh')",
    "silu": "F.silu(x)",
    "mish": "F.mish(x)",
    "elu": "F.elu(x)",
    "softplus": "F.softplus(x)",
    "erf": "x.erf()",
    "expm1": "x.expm1()",
    "log1p": "x.abs().log1p()",
}

BACKWARD = ["gelu", "silu", "mish", "elu", "softplus"]


def jobs(stmt):
    out = {"rumus": (SETUP.format(lib="rumus", n=N), stmt)}
    if have("torch"):
        setup = SETUP.format(lib="torch", n=N)
        setup += "L.set_num_threads(len(os.sched_getaffinity(0)))\n"
        out["torch"] = (setup, stmt)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds, min_time = (2, 0.05) if args.quick else (5, 0.2)
    cases = [(f"{name} 1M", jobs(stmt)) for name, stmt in FORWARD.items()]
    for name in BACKWARD:
        stmt = FORWARD[name].replace("(x", "(xg") + ".sum().backward()"
        cases.append((f"{name} 1M forward+backward", jobs(stmt)))
    compare(cases, rounds=rounds, min_time=min_time)


if __name__ == "__main__":
    main()
