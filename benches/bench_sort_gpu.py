#!/usr/bin/env python
"""sort and topk on the GPU: rumus (WGSL bitonic sort) beside PyTorch CUDA when
it is installed, float32, one table. Each call is timed to completion
(synchronize), medians of interleaved repeats.

    python benches/bench_sort_gpu.py [--reps 20]
"""

import argparse
import statistics
import time

import numpy as np
import rumus

try:
    import torch

    if not torch.cuda.is_available():
        torch = None
except Exception:  # torch is optional
    torch = None

CASES = [
    ("sort 1M", (1 << 20,), "sort", None),
    ("sort 1024 rows x 1024", (1024, 1024), "sort", None),
    ("sort 64 rows x 65536", (64, 65536), "sort", None),
    ("topk 1M, k=100", (1 << 20,), "topk", 100),
    ("topk 4096 rows x 1024, k=8", (4096, 1024), "topk", 8),
]


def timed(fn, sync):
    fn()
    sync()
    t = time.perf_counter()
    fn()
    sync()
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=20)
    args = ap.parse_args()
    print(rumus.gpu.get_device_name())
    head = f"{'case':<30}{'rumus ms':>12}" + (
        f"{'torch ms':>12}{'rumus/torch':>14}" if torch else ""
    )
    print(head)
    print("-" * len(head))
    for label, shape, op, k in CASES:
        x = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
        rx = rumus.from_numpy(x).to("gpu")
        rf = (lambda: rx.sort()) if op == "sort" else (lambda: rx.topk(k))
        jobs = [("rumus", rf, rumus.gpu.synchronize)]
        if torch:
            tx = torch.from_numpy(x).cuda()
            tf = (lambda: tx.sort()) if op == "sort" else (lambda: tx.topk(k))
            jobs.append(("torch", tf, torch.cuda.synchronize))
        times = {name: [] for name, _, _ in jobs}
        for _ in range(args.reps):
            for name, fn, sync in jobs:
                times[name].append(timed(fn, sync))
        med = {name: statistics.median(ts) * 1e3 for name, ts in times.items()}
        row = f"{label:<30}{med['rumus']:>12.3f}"
        if torch:
            row += f"{med['torch']:>12.3f}{med['rumus'] / med['torch']:>14.2f}"
        print(row, flush=True)
    # a correctness spot check on the last shapes
    v = rx.sort().values.cpu().numpy()
    assert np.array_equal(v, np.sort(x, axis=-1)), "GPU sort disagrees with np.sort"
    print("sort matches np.sort")


if __name__ == "__main__":
    main()
