#!/usr/bin/env python
"""float16 matmul on the GPU: rumus's tensor-core kernels (cooperative matrices,
backend/gpu/matmul_coop.rs) against its portable kernels and PyTorch CUDA.

A script for a machine with a real GPU (issue 18 asks for >= 300 TFLOP/s at
4096 on an H100). Each configuration runs in its own process, since
RUMUS_GPU_DISABLE_COOP is read when the GPU starts:

    .venv/bin/python benches/bench_coop.py            # 1024, 2048, 4096
    .venv/bin/python benches/bench_coop.py --sizes 512 --repeats 3

Before timing, each rumus process checks its float16 products (square, odd
and transposed shapes, a batch) against float32 products of the same inputs,
so the first run on a new GPU also validates the kernel: a wrong result
prints FAIL and makes the exit status nonzero.
"""

import argparse
import json
import os
import subprocess
import sys

CHILD = r"""
import json, statistics, sys, time
import numpy as np
import rumus

sizes, repeats = json.loads(sys.argv[1])
info = rumus.gpu.adapter_info()
out = {"adapter": info["name"], "kernel": info["cooperative_matrix_kernel"],
       "offered": info["cooperative_matrix"], "errors": [], "tflops": {}}

def rnd(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float16)

# Correctness: relative error against float32 products of the same inputs.
# Whole 128-tiles (256x384x128, the batch of 4x128x256x128, 1024^3) take the
# direct kernel in each of its four layouts (A, B row- or column-major).
cases = [((1, 1), (1, 1)), ((37, 75), (75, 129)), ((300, 257), (257, 190)),
         ((256, 128), (128, 384)), ((1024, 1024), (1024, 1024)), ((4, 96, 200), (4, 200, 72)),
         ((4, 128, 256), (4, 256, 128))]

def dev(m, t):
    if not t or m.ndim != 2:
        return rumus.tensor(m).to("gpu")
    return rumus.tensor(np.ascontiguousarray(m.T)).to("gpu").t()

for i, (sa, sb) in enumerate(cases):
    a, b = rnd(sa, 2 * i), rnd(sb, 2 * i + 1)
    for ta, tb in ((False, False), (True, False), (False, True), (True, True)):
        got = (dev(a, ta) @ dev(b, tb)).cpu().float().numpy()
        ref = a.astype(np.float32) @ b.astype(np.float32)
        mag = np.abs(a.astype(np.float32)) @ np.abs(b.astype(np.float32))
        err = float(np.max(np.abs(got - ref) / (mag + 1e-3)))
        # float16 output rounding (2^-11) plus accumulation (f16 accumulators: 2^-11 per term).
        k = a.shape[-1]
        tol = 2.0**-10 + (k * 2.0**-11 if out["kernel"] and "->f16" in out["kernel"] else 1e-4)
        if not err <= tol:
            out["errors"].append(f"{sa}@{sb} transposed={ta, tb}: rel err {err:.3g} > {tol:.3g}")

for n in sizes:
    a = rumus.tensor(rnd((n, n), 1)).to("gpu")
    b = rumus.tensor(rnd((n, n), 2)).to("gpu")
    (a @ b).cpu()
    calls = 1
    while True:
        t = time.perf_counter()
        for _ in range(calls):
            c = a @ b
        rumus.gpu.synchronize()
        if time.perf_counter() - t > 0.2:
            break
        calls *= 2
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        for _ in range(calls):
            c = a @ b
        rumus.gpu.synchronize()
        times.append((time.perf_counter() - t) / calls)
    out["tflops"][n] = 2 * n**3 / statistics.median(times) / 1e12
print(json.dumps(out))
"""

TORCH = r"""
import json, statistics, sys
import torch
sizes, repeats = json.loads(sys.argv[1])
out = {}
for n in sizes:
    a = torch.randn(n, n, device="cuda", dtype=torch.float16)
    b = torch.randn(n, n, device="cuda", dtype=torch.float16)
    a @ b
    torch.cuda.synchronize()
    calls, times = 1, []
    while True:
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            a @ b
        e.record()
        torch.cuda.synchronize()
        if s.elapsed_time(e) > 200:
            break
        calls *= 2
    for _ in range(repeats):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(calls):
            a @ b
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) / 1e3 / calls)
    out[n] = 2 * n**3 / statistics.median(times) / 1e12
print(json.dumps(out))
"""


def run(code, args, env=None):
    """The JSON a child prints, or None with its error on stderr."""
    p = subprocess.run(
        [sys.executable, "-c", code, json.dumps(args)],
        capture_output=True,
        text=True,
        env=env,
    )
    if p.returncode != 0:
        print(p.stderr.strip()[-2000:], file=sys.stderr)
        return None
    return json.loads(p.stdout.strip().splitlines()[-1])


def sweep(shapes, job):
    """The direct kernel's TFLOP/s per fragment shape, each in its own process."""
    print(f"{'fragments':>10} " + " ".join(f"{n:>8}" for n in job[0]))
    failed = False
    for frags in shapes:
        env = dict(os.environ, RUMUS_GPU_MATMUL_VARIANT="coop_direct", RUMUS_GPU_COOP_FRAGS=frags)
        r = run(CHILD, job, env)
        if r is None or r["errors"]:
            failed = True
            print(f"{frags:>10}   FAIL {r and r['errors']}")
            continue
        cells = " ".join(f"{r['tflops'][str(n)]:8.1f}" for n in job[0])
        print(f"{frags:>10} {cells}   ({r['kernel']})", flush=True)
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 2048, 4096])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument(
        "--sweep",
        default="",
        help="instead: the direct kernel at these fragment shapes (e.g. 4x4,2x4: "
        "RUMUS_GPU_COOP_FRAGS)",
    )
    args = parser.parse_args()
    job = [args.sizes, args.repeats]
    if args.sweep:
        sys.exit(sweep(args.sweep.split(","), job))
    # The autotuner keeps the fastest kernel: the coop processes force each tensor-core kernel.
    coop, direct = (
        run(CHILD, job, dict(os.environ, RUMUS_GPU_DISABLE_COOP="0", RUMUS_GPU_MATMUL_VARIANT=v))
        for v in ("coop", "coop_direct")
    )
    plain = run(CHILD, job, dict(os.environ, RUMUS_GPU_DISABLE_COOP="1"))
    try:
        import torch

        torch_ok = torch.cuda.is_available()
    except Exception:
        torch_ok = False
    ref = run(TORCH, job) if torch_ok else None
    if coop is None or direct is None or plain is None:
        sys.exit("rumus failed (see above)")
    print(f"adapter: {coop['adapter']}")
    print(f"cooperative matrices offered: {coop['offered'] or 'none'}")
    print(f"tensor-core kernel: {coop['kernel'] or 'none (portable kernels)'}")
    failed = False
    for label, r in (("coop", coop), ("coop_direct", direct), ("portable", plain)):
        for e in r["errors"]:
            print(f"FAIL ({label}): {e}")
            failed = True
        if not r["errors"]:
            print(f"correctness ({label}): ok")
    print(
        f"{'n':>6} {'coop':>10} {'direct':>10} {'portable':>10} {'torch':>10}   (float16 TFLOP/s)"
    )
    for n in args.sizes:
        t = f"{ref[str(n)]:10.1f}" if ref else f"{'-':>10}"
        ours = " ".join(f"{r['tflops'][str(n)]:10.1f}" for r in (coop, direct, plain))
        print(f"{n:6d} {ours} {t}")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
