#!/usr/bin/env python
"""Conv3d training step on the CPU, rumus beside PyTorch (when it is installed).

A step: forward of Conv3d(16, 32, 3, padding=1) on a 1x16x16x16x16 volume, a mean-square
loss, backward (input, weight and bias gradients) and an SGD step, on inputs prepared outside
the timing. Each library runs in its own process (benches/harness.py); the target is
rumus/torch <= 1.0. Also times the forward alone and the 3-D pools on the same volume.

    .venv/bin/python benches/bench_conv3d.py [--quick]
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, have  # noqa: E402

SETUP = """
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import numpy as np
import {lib} as L
rng = np.random.default_rng(0)
x = L.tensor(rng.standard_normal((1, 16, 16, 16, 16)).astype(np.float32)){grad}
m = L.nn.Conv3d(16, 32, 3, padding=1)
opt = L.optim.SGD(m.parameters(), lr=1e-3)
F = L.nn.functional
"""

STEP = """
opt.zero_grad()
loss = m(x).square().mean()
loss.backward()
opt.step()
"""


def jobs(stmt, grad=""):
    out = {"rumus": (SETUP.format(lib="rumus", grad=grad), stmt)}
    if have("torch"):
        setup = SETUP.format(lib="torch", grad=grad)
        setup += "torch = L\ntorch.set_num_threads(len(os.sched_getaffinity(0)))\n"
        out["torch"] = (setup, stmt)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args()
    rounds, min_time = (2, 0.05) if args.quick else (5, 0.2)
    cases = [
        ("conv3d train step 16->32 k3 16^3", jobs(STEP)),
        ("conv3d forward 16->32 k3 16^3", jobs("m(x)")),
        ("max_pool3d k2 16^3", jobs("F.max_pool3d(x, 2)")),
        ("avg_pool3d k3 s2 p1 16^3", jobs("F.avg_pool3d(x, 3, 2, 1)")),
    ]
    compare(cases, rounds=rounds, min_time=min_time)


if __name__ == "__main__":
    main()
