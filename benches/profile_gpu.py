#!/usr/bin/env python
"""Where a GPU training step's time goes: per-kernel GPU time from timestamp
queries (rumus.gpu.profile), grouped by kernel and by shader, for the
ResNet-style and GPT-style steps of bench_gpu.py (same model builders), plus
the step's dispatches and queue submissions.

A script, not a test. From the repository root:

    .venv/bin/python benches/profile_gpu.py                      # resnet and gpt
    .venv/bin/python benches/profile_gpu.py --only gpt --batch 2 --seq 32   # small (lavapipe)
    .venv/bin/python benches/profile_gpu.py --only gpt --amp     # under autocast(float16)

While profiling, every dispatch runs in a compute pass of its own, so the
step's wall time is not the figure to read here; the kernels' GPU times are.
The adapter must support timestamp queries (Mesa's lavapipe does).
"""

import argparse
import os
import sys
import time

import numpy as np
import rumus

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_gpu import AmpTrainer, GpuTrainer  # noqa: E402
from bench_nn import CASES  # noqa: E402


def profile_case(case, steps, batch, seq, rows, amp):
    name, build, x_shape, y_maker, loss_fn, opt_spec, _ = case
    x_shape = list(x_shape)
    if batch:
        x_shape[0] = batch
    if seq and ("gpt" in name or "transformer" in name):
        x_shape[1] = seq
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    y = y_maker(rng)[: x_shape[0]] if y_maker else None
    trainer = AmpTrainer if amp else GpuTrainer
    tr = trainer(rumus, build, x, y, loss_fn, opt_spec, "gpu")
    tr.step()  # compiles the kernels and creates the optimizer state
    tr.step()
    rumus.gpu.synchronize()
    rumus.gpu.reset_queue_stats()
    t0 = time.perf_counter()
    with rumus.gpu.profile() as prof:
        for _ in range(steps):
            tr.step()
    wall = time.perf_counter() - t0
    q = rumus.gpu.queue_stats()
    mode = ", autocast(float16) + GradScaler" if amp else ""
    print(f"== {name}  input {tuple(x_shape)}, {steps} step(s){mode}")
    print(
        f"per step: {prof.total_ms() / steps:.2f} ms of GPU kernel time, "
        f"{q['dispatches'] / steps:.0f} dispatches, {q['submits'] / steps:.1f} submits "
        f"(wall {wall / steps * 1e3:.1f} ms with profiling)"
    )
    print("\nby shader (op family):")
    print(prof.table(group_by="shader"))
    print(f"\nby kernel (top {rows}):")
    print(prof.table(row_limit=rows))
    print()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--only", default="resnet,gpt", help="cases whose name contains NAME")
    p.add_argument("--steps", type=int, default=2, help="profiled steps per case")
    p.add_argument("--batch", type=int, default=0, help="override the batch size")
    p.add_argument("--seq", type=int, default=0, help="override the sequence length (gpt)")
    p.add_argument("--rows", type=int, default=15, help="kernels listed per case")
    p.add_argument("--amp", action="store_true", help="steps under autocast(float16) + GradScaler")
    args = p.parse_args(argv)
    if not rumus.gpu.is_available():
        sys.exit(f"no GPU: {rumus._rumus._gpu_unavailable_reason()}")
    info = rumus.gpu.adapter_info()
    print(f"GPU adapter: {info['name']} ({info['backend']}, {info['device_type']})\n")
    keys = [k.strip().lower() for k in args.only.split(",") if k.strip()]
    cases = [c for c in CASES if any(k in c[0].lower() for k in keys)]
    if not cases:
        sys.exit(f"--only {args.only!r} matches none of: " + ", ".join(c[0] for c in CASES))
    for case in cases:
        profile_case(case, args.steps, args.batch, args.seq, args.rows, args.amp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
