#!/usr/bin/env python
"""GPU speed of rumus: matmul GFLOP/s, per-dispatch overhead, the training
steps of bench_nn.py and sdpa forward + backward (bench_attention.py), printed
as tables with the adapter's name.

A script, not a test: nothing here asserts a speed. Run it from the repository
root with the project's interpreter on a release build:

    .venv/bin/python benches/bench_gpu.py            # full run
    .venv/bin/python benches/bench_gpu.py --quick    # smaller matmuls, fewer repeats

Every GPU timing ends with rumus.gpu.synchronize(), so it counts the work, not
only its queuing. Side by side: the same work on rumus's CPU backend, NumPy
(matmul) and PyTorch when installed (its CUDA device when it has one, else its
CPU). On Mesa's lavapipe (a CPU Vulkan driver) the figures measure the driver,
not a GPU: there is no target for them. On a real GPU the float32 matmul target
is 0.8x cuBLAS (torch CUDA without TF32) at 1024, 2048 and 4096. The variant column
is the tile/k-split the autotuner chose (backend/gpu/autotune.rs; cached under the
user's cache directory, so a second run reads it instead of tuning).
"""

import argparse
import os
import statistics
import sys
import time

os.environ.setdefault("OPENBLAS_NUM_THREADS", str(os.cpu_count() or 1))

import numpy as np  # noqa: E402
import rumus  # noqa: E402

try:
    import torch
except Exception:  # optional
    torch = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_attention import main as attention_main  # noqa: E402
from bench_core import print_env  # noqa: E402
from bench_nn import CASES, Trainer  # noqa: E402

TORCH_DEV = "cuda" if torch is not None and torch.cuda.is_available() else "cpu"
if TORCH_DEV == "cuda":
    # float32 against float32: rumus has no TF32 path.
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False


def timed(fn, sync, min_time, repeats):
    """Median seconds per call of fn, each timing running enough calls for min_time."""
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


def gpu_sync():
    rumus.gpu.synchronize()


def torch_sync():
    if TORCH_DEV == "cuda":
        torch.cuda.synchronize()


def row(cells, widths):
    return "  ".join(
        str(c).ljust(w) if i == 0 else str(c).rjust(w)
        for i, (c, w) in enumerate(zip(cells, widths))
    )


def chosen_variant(n):
    """The matmul variant (tile/k-split) rumus chose for an n^3 float32 product, and how."""
    p2 = 1 << (n - 1).bit_length()
    cls = f"F32 m{p2} n{p2} k{p2} b1 "
    for c, variant, how in rumus._rumus._gpu_matmul_choices():
        if c.startswith(cls):
            return f"{variant} ({how.split(':')[0]})"
    return "heuristic"


def matmul_table(sizes, min_time, repeats):
    print("float32 matmul n x n @ n x n, TFLOP/s (HIGHER is better)")
    widths = [6, 10, 20, 10, 12, 14]
    print(
        row(["n", "rumus gpu", "variant", "numpy cpu", f"torch {TORCH_DEV}", "rumus/torch"], widths)
    )
    for n in sizes:
        rng = np.random.default_rng(0)
        a, b = (rng.standard_normal((n, n)).astype(np.float32) for _ in range(2))
        flops = 2 * n**3
        ga, gb = rumus.tensor(a, device="gpu"), rumus.tensor(b, device="gpu")
        # Checked once against NumPy: a fast wrong kernel would mean nothing. The first
        # product also tunes (or reads from the cache) the variant for this shape.
        err = float(np.abs((ga @ gb).cpu().numpy() - a @ b).max() / np.abs(a @ b).max())
        ours = flops / timed(lambda: ga @ gb, gpu_sync, min_time, repeats) / 1e12
        cells = [n, f"{ours:.2f}" + ("" if err < 1e-4 else " WRONG"), chosen_variant(n)]
        cells.append(f"{flops / timed(lambda: a @ b, lambda: None, min_time, repeats) / 1e12:.3f}")
        if torch is not None:
            ta, tb = torch.from_numpy(a).to(TORCH_DEV), torch.from_numpy(b).to(TORCH_DEV)
            theirs = flops / timed(lambda: ta @ tb, torch_sync, min_time, repeats) / 1e12
            cells += [f"{theirs:.2f}", f"{ours / theirs:.2f}x"]
        else:
            cells += ["-", "-"]
        print(row(cells, widths), flush=True)


def dispatch_table(min_time, repeats):
    print("per-dispatch overhead, microseconds per op on a 1-element tensor (LOWER is better)")
    x = rumus.zeros(1, device="gpu")
    batch = 200

    def queued():
        y = x
        for _ in range(batch):
            y = y + 1.0

    queued_s = timed(queued, gpu_sync, min_time, repeats) / batch
    synced_s = timed(lambda: (x + 1.0, gpu_sync()), gpu_sync, min_time, repeats)
    print(f"  queued (submitted in batches):   {queued_s * 1e6:8.1f}")
    print(f"  one op + synchronize (round trip): {synced_s * 1e6:6.1f}")
    if torch is not None:
        tx = torch.zeros(1, device=TORCH_DEV)

        def tqueued():
            y = tx
            for _ in range(batch):
                y = y + 1.0

        print(
            f"  torch {TORCH_DEV}, queued:            "
            f"{timed(tqueued, torch_sync, min_time, repeats) / batch * 1e6:8.1f}"
        )


class GpuTrainer(Trainer):
    def __init__(self, lib, build, x, y, loss_fn, opt_spec, device):
        rumus.manual_seed(0)
        super().__init__(lib, build, x, y, loss_fn, opt_spec)
        self.model.to(device)
        cls, hp = opt_spec
        self.opt = getattr(lib.optim, cls)(self.model.parameters(), **hp)
        self.x = self.x.to(device)
        self.y = None if self.y is None else self.y.to(device)


def bandwidth_table(min_time, repeats):
    """The memory-bound ops issue 19 names: add of 64M floats, softmax 4096^2, and a GELU
    chain (mul, add, tanh, mul) that the fusion layer turns into one pass."""
    print("memory-bound ops, GB/s moved (reads + writes; HIGHER is better)")
    widths = [34, 10, 12, 12]
    print(row(["op", "rumus gpu", f"torch {TORCH_DEV}", "rumus/torch"], widths))
    n = 1 << 26
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    s = rng.standard_normal((4096, 4096)).astype(np.float32)

    def gelu(lib, x):
        return 0.5 * x * (1.0 + lib.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))

    cases = [
        ("add 64M", lambda lib, t: t[0] + t[1], (a, b), 3 * 4 * n),
        ("softmax 4096x4096 (dim -1)", lambda lib, t: t[0].softmax(-1), (s,), 2 * 4 * s.size),
        ("gelu chain 64M (tanh form)", lambda lib, t: gelu(lib, t[0]), (a,), 2 * 4 * n),
    ]
    # Lazy fusion drops a result nobody holds without computing it, and computes results
    # that share inputs in one pass: each timed call keeps BATCH results of BATCH separate
    # copies of the inputs alive until a synchronize (torch is timed the same way).
    batch = 8

    def held(lib, fn, slots, sync):
        keep = [fn(lib, t) for t in slots]
        sync()
        return keep

    for name, fn, arrays, nbytes in cases:
        gt = [[rumus.tensor(x, device="gpu") for x in arrays] for _ in range(batch)]
        if name.startswith("add"):
            assert np.allclose(fn(rumus, gt[0]).cpu().numpy(), fn(np, arrays))
        sec = timed(lambda: held(rumus, fn, gt, gpu_sync), gpu_sync, min_time, repeats) / batch
        ours = nbytes / sec / 1e9
        cells = [name, f"{ours:.1f}"]
        if torch is not None:
            tt = [[torch.from_numpy(x).to(TORCH_DEV) for x in arrays] for _ in range(batch)]
            sec = timed(lambda: held(torch, fn, tt, torch_sync), torch_sync, min_time, repeats)
            theirs = nbytes / (sec / batch) / 1e9
            cells += [f"{theirs:.1f}", f"{ours / theirs:.2f}x"]
        else:
            cells += ["-", "-"]
        print(row(cells, widths), flush=True)


def steps_table(min_time, repeats, only=(), cpu=True):
    print(
        "ms per training step (forward, loss, backward, optimizer step, zero_grad); LOWER is better"
    )
    widths = [42, 11, 11, 14]
    print(row(["case", "rumus gpu", "rumus cpu", f"torch {TORCH_DEV}"], widths))
    for name, build, x_shape, y_maker, loss_fn, opt_spec, _ in CASES:
        if only and not any(o in name for o in only):
            continue
        rng = np.random.default_rng(0)
        x = rng.standard_normal(x_shape).astype(np.float32)
        y = y_maker(rng) if y_maker else None
        cells = [name]
        for device, sync in (("gpu", gpu_sync), ("cpu", lambda: None)):
            if device == "cpu" and not cpu:
                cells.append("-")
                continue
            tr = GpuTrainer(rumus, build, x, y, loss_fn, opt_spec, device)
            cells.append(f"{timed(tr.step, sync, min_time, repeats) * 1e3:.2f}")
        if torch is not None:
            tr = GpuTrainer(torch, build, x, y, loss_fn, opt_spec, TORCH_DEV)
            cells.append(f"{timed(tr.step, torch_sync, min_time, repeats) * 1e3:.2f}")
        else:
            cells.append("-")
        print(row(cells, widths), flush=True)


class AmpTrainer(GpuTrainer):
    """A step under autocast(float16) with a GradScaler, in each library's names."""

    def __init__(self, lib, build, x, y, loss_fn, opt_spec, device):
        super().__init__(lib, build, x, y, loss_fn, opt_spec, device)
        self.dev = "gpu" if lib is rumus else TORCH_DEV
        self.scaler = lib.amp.GradScaler(self.dev)

    def step(self):
        with self.lib.autocast(self.dev, dtype=self.lib.float16):
            loss = self.loss_fn(self.lib, self.model(self.x), self.y)
        self.scaler.scale(loss).backward()
        self.scaler.step(self.opt)
        self.scaler.update()
        self.opt.zero_grad()


def amp_table(min_time, repeats, only=("gpt",)):
    print("ms per training step under autocast(float16) + GradScaler; LOWER is better")
    widths = [42, 11, 14, 12]
    print(row(["case", "rumus gpu", f"torch {TORCH_DEV}", "rumus/torch"], widths))
    for name, build, x_shape, y_maker, loss_fn, opt_spec, _ in CASES:
        if not any(o in name for o in only):
            continue
        rng = np.random.default_rng(0)
        x = rng.standard_normal(x_shape).astype(np.float32)
        y = y_maker(rng) if y_maker else None
        tr = AmpTrainer(rumus, build, x, y, loss_fn, opt_spec, "gpu")
        ours = timed(tr.step, gpu_sync, min_time, repeats)
        cells = [name, f"{ours * 1e3:.2f}"]
        if torch is not None and TORCH_DEV == "cuda":
            tr = AmpTrainer(torch, build, x, y, loss_fn, opt_spec, TORCH_DEV)
            theirs = timed(tr.step, torch_sync, min_time, repeats)
            cells += [f"{theirs * 1e3:.2f}", f"{ours / theirs:.2f}x"]
        else:
            cells += ["-", "-"]
        print(row(cells, widths), flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--quick", action="store_true", help="matmul up to 1024 and fewer repeats")
    p.add_argument(
        "--only", default="", help="training-step cases whose name contains NAME (comma-separated)"
    )
    p.add_argument("--no-cpu", action="store_true", help="skip the rumus cpu column")
    p.add_argument(
        "--sections",
        default="matmul,dispatch,bandwidth,steps,amp,attention",
        help="comma-separated sections to run",
    )
    args = p.parse_args(argv)
    sections = set(args.sections.split(","))
    if not rumus.gpu.is_available():
        sys.exit(f"no GPU: {rumus._rumus._gpu_unavailable_reason()}")
    min_time, repeats = (0.2, 3) if args.quick else (0.5, 5)
    print_env()
    info = rumus.gpu.adapter_info()
    print(
        f"GPU adapter: {info['name']} ({info['backend']}, {info['device_type']}, driver "
        f"{info['driver']} {info['driver_info']})"
    )
    print(
        "torch: "
        f"{torch.__version__ + ' on ' + TORCH_DEV if torch is not None else 'not installed'}\n"
    )
    if "matmul" in sections:
        matmul_table([256, 1024] if args.quick else [1024, 2048, 4096], min_time, repeats)
        print()
    if "dispatch" in sections:
        dispatch_table(min_time, repeats)
        print()
    if "bandwidth" in sections:
        bandwidth_table(min_time, repeats)
        print()
    if "steps" in sections:
        only = [o for o in args.only.split(",") if o]
        steps_table(min_time, repeats, only, cpu=not args.no_cpu)
        print()
    if "amp" in sections:
        amp_table(min_time, repeats)
        print()
    if "attention" in sections:
        attention_main(["--gpu"] + ["--quick"] * args.quick)
    return 0


if __name__ == "__main__":
    sys.exit(main())
