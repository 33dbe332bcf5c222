#!/usr/bin/env python
"""scaled_dot_product_attention forward + backward: rumus's fused (flash) kernel against its
composite path (the scores materialized) and PyTorch when installed, in one run, printed as a
table of milliseconds and ratios.

A script, not a test: nothing here asserts a speed. Run it from the repository root:

    .venv/bin/python benches/bench_attention.py            # CPU
    .venv/bin/python benches/bench_attention.py --gpu      # rumus's GPU (torch's CUDA if any)
    .venv/bin/python benches/bench_attention.py --quick    # fewer repeats

Each timing is the median of interleaved repeats, each running enough calls for --min-time.
The fused and composite results are compared once: a fast wrong kernel would mean nothing.
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402
import rumus  # noqa: E402
import rumus.nn.functional as F  # noqa: E402

try:
    import torch
except Exception:  # optional: its column shows "-" when absent
    torch = None

# (B, H, L, D, is_causal): the GPT-style step's attention, a small one, and a long sequence.
SHAPES = [
    (16, 8, 256, 64, False),
    (16, 8, 256, 64, True),
    (2, 4, 32, 16, False),
    (2, 4, 32, 16, True),
    (1, 8, 1024, 64, True),
]


def _composite(*args, **kw):
    """The composite path: the fused routing switched off for one call."""
    saved = F._fused_sdpa
    F._fused_sdpa = lambda *a: None
    try:
        return F.scaled_dot_product_attention(*args, **kw)
    finally:
        F._fused_sdpa = saved


def timed(fn, sync, min_time, repeats):
    fn()
    sync()
    t0 = time.perf_counter()
    fn()
    sync()
    n = max(1, int(min_time / max(time.perf_counter() - t0, 1e-9)))
    out = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(n):
            fn()
        sync()
        out.append((time.perf_counter() - t0) / n)
    return statistics.median(out)


def step(lib_sdpa, q, k, v, g, causal):
    def run():
        for t in (q, k, v):
            t.grad = None
        lib_sdpa(q, k, v, is_causal=causal).backward(g)

    return run


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--gpu", action="store_true", help="time rumus's GPU backend")
    p.add_argument("--quick", action="store_true", help="fewer, shorter repeats")
    args = p.parse_args(argv)
    min_time, repeats = (0.1, 3) if args.quick else (0.3, 5)
    dev = "gpu" if args.gpu else "cpu"
    if args.gpu and not rumus.gpu.is_available():
        sys.exit(f"no GPU: {rumus._rumus._gpu_unavailable_reason()}")
    sync = rumus.gpu.synchronize if args.gpu else (lambda: None)
    tdev = "cuda" if args.gpu and torch is not None and torch.cuda.is_available() else "cpu"
    if torch is not None:
        torch.set_num_threads(rumus.get_num_threads())

    def tsync():
        if tdev == "cuda":
            torch.cuda.synchronize()

    print(f"sdpa forward + backward, float32, ms (LOWER is better); rumus on {dev}", end="")
    print(f", torch {torch.__version__} on {tdev}" if torch is not None else ", torch absent")
    head = f"{'B x H x L x D':<22}{'fused':>10}{'composite':>11}{'torch':>10}"
    print(head + f"{'fused/comp':>12}{'fused/torch':>13}")
    for b, h, length, d, causal in SHAPES:
        rng = np.random.default_rng(0)
        arrays = [rng.standard_normal((b, h, length, d)).astype(np.float32) for _ in range(4)]
        q, k, v, g = (rumus.tensor(a, device=dev) for a in arrays)
        for t in (q, k, v):
            t.requires_grad_()
        ref = _composite(q, k, v, is_causal=causal)
        err = float((F.scaled_dot_product_attention(q, k, v, is_causal=causal) - ref).abs().max())
        fused = timed(
            step(F.scaled_dot_product_attention, q, k, v, g, causal), sync, min_time, repeats
        )
        comp = timed(step(_composite, q, k, v, g, causal), sync, min_time, repeats)
        cells = [f"{fused * 1e3:.2f}" + (" WRONG" if err > 1e-4 else ""), f"{comp * 1e3:.2f}"]
        ratio_t = "-"
        if torch is not None:
            tq, tk, tv, tg = (torch.from_numpy(a).to(tdev) for a in arrays)
            for t in (tq, tk, tv):
                t.requires_grad_()
            sdpa = torch.nn.functional.scaled_dot_product_attention
            tt = timed(step(sdpa, tq, tk, tv, tg, causal), tsync, min_time, repeats)
            cells.append(f"{tt * 1e3:.2f}")
            ratio_t = f"{fused / tt:.2f}"
        else:
            cells.append("-")
        name = f"{b}x{h}x{length}x{d}" + (" causal" if causal else "")
        print(f"{name:<22}{cells[0]:>10}{cells[1]:>11}{cells[2]:>10}", end="")
        print(f"{fused / comp:>12.2f}{ratio_t:>13}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
