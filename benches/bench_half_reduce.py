#!/usr/bin/env python
"""Half-precision CPU kernels against the widening path they replace, and
against PyTorch when installed: reductions and softmax of bfloat16/float16
tensors read in place, and the float16 GEMM (widened while packed). Each
case is timed in its own process (benches/harness.py).

    .venv/bin/python benches/bench_half_reduce.py [--quick]

Columns: `rumus` the in-place half kernel, `widen` the same op through a
whole-tensor float32 copy (x.float().op().to(half): the previous path; for
the GEMM, RUMUS_NO_F16_GEMM), `torch` PyTorch on the half tensor.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, have  # noqa: E402

SETUP = """
import os
{env}
import {lib}
{lib}.manual_seed(0)
x = {lib}.randn({shape}).to({lib}.{dt})
y = {lib}.randn({shape2}).to({lib}.{dt})
"""

# (label, shape, op on `x`): layouts the reduce driver treats differently.
REDUCE = [
    ("sum all 4096x1024", "4096, 1024", "x.sum()"),
    ("sum(-1) 4096x1024", "4096, 1024", "x.sum(-1)"),
    ("sum(0) 4096x1024", "4096, 1024", "x.sum(0)"),
    ("sum(0) of x.t() 1024x4096", "4096, 1024", "x.t().sum(0)"),
    ("mean(1) 64x512x128", "64, 512, 128", "x.mean(1)"),
    ("var(-1) 4096x1024", "4096, 1024", "x.var(-1)"),
    ("var(0) 4096x1024", "4096, 1024", "x.var(0)"),
    ("amax(-1) 4096x1024", "4096, 1024", "x.amax(-1)"),
    ("max(0) 4096x1024", "4096, 1024", "x.max(0)"),
    ("softmax(-1) 8x8x128x128", "8, 8, 128, 128", "x.softmax(-1)"),
    ("softmax(1) 64x512x128", "64, 512, 128", "x.softmax(1)"),
]


def reduce_jobs(shape, op, dt, torch):
    setup = dict(shape=shape, shape2="1", dt=dt, env="")
    jobs = {
        "rumus": (SETUP.format(lib="rumus", **setup), op),
        "widen": (SETUP.format(lib="rumus", **setup), widen_op(op, dt)),
    }
    if torch:
        jobs["torch"] = (SETUP.format(lib="torch", **setup), op)
    return jobs


def widen_op(op, dt):
    """op through a float32 copy of x, rounded back to dt."""
    head, _, tail = op.partition("x.")
    body = "x.float()." + tail
    if tail.startswith("max("):
        return f"[v.to(rumus.{dt}) if v.is_floating_point() else v for v in {body}]"
    return f"{head}({body}).to(rumus.{dt})"


def gemm_jobs(n, torch):
    setup = dict(shape=f"{n}, {n}", shape2=f"{n}, {n}", dt="float16")
    jobs = {
        "rumus": (SETUP.format(lib="rumus", env="", **setup), "x @ y"),
        "widen": (
            SETUP.format(lib="rumus", env="os.environ['RUMUS_NO_F16_GEMM'] = '1'", **setup),
            "x @ y",
        ),
    }
    if torch:
        jobs["torch"] = (SETUP.format(lib="torch", env="", **setup), "x @ y")
    return jobs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="3 rounds instead of 5")
    ap.add_argument("--only", default="", help="run the cases whose label contains this")
    a = ap.parse_args()
    torch = have("torch")
    cases = [(f"f16 matmul {n}", gemm_jobs(n, torch)) for n in (256, 1024)]
    for dt in ("bfloat16", "float16"):
        cases += [(f"{lbl} {dt[:4]}", reduce_jobs(s, op, dt, torch)) for lbl, s, op in REDUCE]
    cases = [c for c in cases if a.only in c[0]]
    compare(cases, rounds=3 if a.quick else 5, min_time=0.2)


if __name__ == "__main__":
    main()
