#!/usr/bin/env python
"""Training-step speed of rumus models on the CPU, side by side with PyTorch
(when it is installed) in one run, printed as a plain-text table.

This is a script, not a test: timings on shared machines are noisy, so nothing
here asserts a speed.  Run it from the repository root with the project's
interpreter (on a release build: `maturin develop --release`):

    .venv/bin/python benches/bench_nn.py            # full run (~2-3 min)
    .venv/bin/python benches/bench_nn.py --quick    # fewer/shorter repeats
    .venv/bin/python benches/bench_nn.py --only mlp,cnn
    RAYON_NUM_THREADS=1 .venv/bin/python benches/bench_nn.py   # both on 1 thread

A training step is forward, loss, backward, optimizer step and zero_grad, on
fixed inputs prepared outside the timing.  Both libraries load the same weights
(a rumus model built with manual_seed(0), saved to a temporary .npz) and torch
gets as many threads as rumus uses.  Each timing is a fresh interpreter that
builds its library's model, warms up, and times one run of enough steps to last
at least --min-time seconds: a library whose threads spin after a call
(PyTorch's OpenMP pool) would otherwise steal the cores from the next one timed
in the same process.  The libraries alternate round by round (rumus, torch,
then torch, rumus, ...) and the median of each one's rounds is shown.  Before
timing, each process also reports its model's eval-mode loss on the batch: a
mismatch between the libraries is flagged, since its speed would mean nothing.
`target` is the rumus/torch ratio to reach (lower is faster).
"""

import argparse
import importlib
import json
import math
import os
import statistics
import sys
import tempfile
import time

# NumPy's OpenBLAS threads busy-wait after start-up and take CPU from both
# libraries; nothing timed here uses NumPy's BLAS.  Child processes inherit it.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import run_json  # noqa: E402

# --------------------------------------------------------------------------
# cases: a model builder (given the library), inputs, loss, optimizer


def mlp_case(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 256), nn.ReLU(), nn.Linear(256, 10)
    )


def cnn_case(lib):
    nn = lib.nn
    return nn.Sequential(
        nn.Conv2d(1, 32, 3, padding=1),
        nn.ReLU(),
        nn.Conv2d(32, 64, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(64 * 4 * 4, 128),
        nn.ReLU(),
        nn.Linear(128, 10),
    )


def resnet_case(lib):
    """Stem conv + BatchNorm, a 64-channel and a strided 128-channel residual block."""
    nn = lib.nn

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.c1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.b1 = nn.BatchNorm2d(cout)
            self.c2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.b2 = nn.BatchNorm2d(cout)
            self.skip = (
                nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                if stride != 1 or cin != cout
                else nn.Identity()
            )

        def forward(self, x):
            y = lib.relu(self.b1(self.c1(x)))
            return lib.relu(self.b2(self.c2(y)) + self.skip(x))

    return nn.Sequential(
        nn.Conv2d(3, 64, 3, padding=1, bias=False),
        nn.BatchNorm2d(64),
        nn.ReLU(),
        Block(64, 64, 1),
        Block(64, 128, 2),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(128, 10),
    )


def transformer_case(lib):
    return lib.nn.TransformerEncoderLayer(
        d_model=128, nhead=4, dim_feedforward=512, batch_first=True
    )


def gpt_case(lib):
    """4 pre-norm encoder layers with a causal mask, as a GPT block stack."""
    nn = lib.nn

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            layer = nn.TransformerEncoderLayer(512, 8, 2048, batch_first=True, norm_first=True)
            self.blocks = nn.TransformerEncoder(layer, 4, enable_nested_tensor=False)

        def forward(self, x):
            mask = nn.Transformer.generate_square_subsequent_mask(x.shape[1], device=x.device)
            return self.blocks(x, mask=mask, is_causal=True)

    return GPT()


def _classes(n):
    return lambda rng: rng.integers(0, 10, n).astype(np.int64)


def _cross_entropy(lib, out, y):
    return lib.nn.functional.cross_entropy(out, y)


def _mean_square(lib, out, y):
    return out.pow(2).mean()


# name, model builder, input shape, target maker (or None), loss, optimizer, target ratio
CASES = [
    (
        "mlp 64-256-256-10 b64 Adam",
        mlp_case,
        (64, 64),
        _classes(64),
        _cross_entropy,
        ("Adam", dict(lr=1e-3)),
        0.5,
    ),
    (
        "cnn 1x8x8 b128 SGD-momentum",
        cnn_case,
        (128, 1, 8, 8),
        _classes(128),
        _cross_entropy,
        ("SGD", dict(lr=0.01, momentum=0.9)),
        0.8,
    ),
    (
        "resnet 64x3x32x32 64/128ch BatchNorm SGD",
        resnet_case,
        (64, 3, 32, 32),
        _classes(64),
        _cross_entropy,
        ("SGD", dict(lr=0.01, momentum=0.9)),
        0.8,
    ),
    (
        "transformer 32x64x128 AdamW",
        transformer_case,
        (32, 64, 128),
        None,
        _mean_square,
        ("AdamW", dict(lr=1e-3)),
        0.8,
    ),
    (
        "gpt 4 pre-norm layers d512 16x256 AdamW",
        gpt_case,
        (16, 256, 512),
        None,
        _mean_square,
        ("AdamW", dict(lr=1e-3)),
        0.8,
    ),
]


class Trainer:
    """One library's model, optimizer and fixed batch; `step()` is the timed work."""

    def __init__(self, lib, build, x, y, loss_fn, opt_spec, state=None):
        self.lib, self.loss_fn = lib, loss_fn
        self.model = build(lib)
        if state is not None:
            self.model.load_state_dict({k: lib.from_numpy(v.copy()) for k, v in state.items()})
        self.model.train()
        cls, hp = opt_spec
        self.opt = getattr(lib.optim, cls)(self.model.parameters(), **hp)
        self.x = lib.from_numpy(x.copy())
        self.y = None if y is None else lib.from_numpy(y.copy())

    def eval_loss(self):
        self.model.eval()
        with self.lib.no_grad():
            loss = self.loss_fn(self.lib, self.model(self.x), self.y).item()
        self.model.train()
        return loss

    def step(self):
        loss = self.loss_fn(self.lib, self.model(self.x), self.y)
        loss.backward()
        self.opt.step()
        self.opt.zero_grad()


def inputs(case):
    """The fixed batch (x, y or None) of `case`, the same in every process."""
    _, _, x_shape, y_maker, *_ = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    return x, (y_maker(rng) if y_maker else None)


# --------------------------------------------------------------------------
# timing: one process per library per round


def child(name, lib_name, weights, min_time, threads):
    """Runs in a fresh interpreter: prints JSON {"step": seconds per training
    step, "loss": eval loss before any step}, or exits with a one-line error."""
    stage = "setup" if lib_name == "rumus" or not weights else "setup with rumus' weights"
    try:
        case = next(c for c in CASES if c[0] == name)
        _, build, _, _, loss_fn, opt_spec, _ = case
        lib = importlib.import_module(lib_name)
        if lib_name == "torch":
            lib.set_num_threads(threads)
        state = None
        if weights:
            with np.load(weights, allow_pickle=False) as f:
                state = dict(f)
        trainer = Trainer(lib, build, *inputs(case), loss_fn, opt_spec, state)
        stage = "eval loss"
        loss = trainer.eval_loss()
        stage = "training step"
        trainer.step()  # warm-up: first-call allocations, lazily created optimizer state
        trainer.step()
        # calibrate on >= min_time / 5 of steps, then size one timing to >= min_time
        done, t0 = 0, time.perf_counter()
        while True:
            trainer.step()
            done += 1
            elapsed = time.perf_counter() - t0
            if elapsed >= min_time / 5:
                break
        if elapsed >= min_time:  # slow steps: the calibration already is a full timing
            per_step = elapsed / done
        else:
            number = math.ceil(min_time * done / elapsed)
            t0 = time.perf_counter()
            for _ in range(number):
                trainer.step()
            per_step = (time.perf_counter() - t0) / number
    except Exception as exc:
        sys.exit(f"{stage}: {type(exc).__name__}: " + " ".join(str(exc).split()))
    print(json.dumps({"step": per_step, "loss": loss}))
    return 0


def measure(name, libs, weights, min_time, threads, repeats, budget, errors):
    """({lib: [seconds per step]}, {lib: eval loss}) over up to `repeats` rounds,
    each library in its own process, the order alternating round by round.
    Rounds stop early (after at least 2, one in each order) once a case has
    taken `budget` seconds per library.  A failing library gets no further
    rounds; its error is listed."""
    times, losses, failed = {lib: [] for lib in libs}, {}, set()
    start = time.perf_counter()
    for r in range(repeats):
        for lib in libs if r % 2 == 0 else libs[::-1]:
            if lib in failed:
                continue
            args = [os.path.abspath(__file__), "--child", name, lib, weights]
            try:
                res = run_json(args + [repr(min_time), str(threads)])
            except RuntimeError as exc:
                failed.add(lib)
                errors.append(f"{name} [{lib}] {exc}")
                continue
            times[lib].append(res["step"])
            losses.setdefault(lib, res["loss"])
        if r >= 1 and time.perf_counter() - start > budget * len(libs):
            break
    return times, losses


# --------------------------------------------------------------------------
# table


def fmt_ms(v):
    if not isinstance(v, float):
        return v if isinstance(v, str) else "-"
    ms = v * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def save_weights(build, path):
    """Builds the rumus model with manual_seed(0) and saves its state_dict to
    `path` as plain NumPy arrays (np.savez: no pickle), for every process."""
    import rumus

    rumus.manual_seed(0)
    state = build(rumus).state_dict()
    np.savez(path, **{k: np.array(v.detach().numpy(), copy=True) for k, v in state.items()})


def run_case(case, libs, min_time, repeats, budget, threads, tmp, errors):
    name, build, *_, target = case
    weights, note, run = os.path.join(tmp, "weights.npz"), "", libs
    try:
        save_weights(build, weights)
    except Exception as exc:  # torch still runs, on its own initial weights
        errors.append(f"{name} [rumus] setup: {type(exc).__name__}: " + " ".join(str(exc).split()))
        weights, run = "", [lib for lib in libs if lib != "rumus"]
    times, losses = measure(name, run, weights, min_time, threads, repeats, budget, errors)
    if "rumus" in losses and "torch" in losses:
        a, b = losses["rumus"], losses["torch"]
        if not abs(a - b) <= 1e-4 * abs(b) + 1e-6:
            note = " !WRONG"
            errors.append(f"{name}: eval loss rumus {a!r} != torch {b!r} with the same weights")
    values = {lib: statistics.median(times[lib]) if times.get(lib) else "ERR" for lib in libs}
    ratio = "-"
    if isinstance(values.get("rumus"), float) and isinstance(values.get("torch"), float):
        r = values["rumus"] / values["torch"]
        ratio = f"{r:.2f}" + ("" if r <= target else " SLOW")
    spreads = "  ".join(
        f"{max(times[lib]) / min(times[lib]):.2f}" if times.get(lib) else "-" for lib in libs
    )
    return [
        name + note,
        fmt_ms(values.get("rumus")),
        fmt_ms(values.get("torch")),
        ratio,
        f"{target:g}",
        spreads,
    ]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick", action="store_true", help="fewer and shorter timings (noisier numbers)"
    )
    p.add_argument(
        "--only",
        metavar="NAME",
        default=None,
        help="run only cases whose name contains NAME (comma-separated, e.g. mlp,cnn)",
    )
    p.add_argument(
        "--min-time", type=float, default=None, help="seconds per timing (default 0.3, --quick 0.1)"
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timings per library; the median is kept (default 7, --quick 3)",
    )
    # one timing in this process: case name, library, weights .npz, min_time, threads
    p.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        name, lib, weights, min_time, threads = args.child
        return child(name, lib, weights, float(min_time), int(threads))
    min_time = args.min_time or (0.1 if args.quick else 0.3)
    repeats = args.repeats or (3 if args.quick else 7)
    # wall seconds per library per case (process start-up included) before rounds stop
    budget = repeats * (2 * min_time + 2)

    cases = CASES
    if args.only:
        keys = [k.strip().lower() for k in args.only.split(",") if k.strip()]
        cases = [c for c in CASES if any(k in c[0].lower() for k in keys)]
        if not cases:
            sys.exit(f"--only {args.only!r} matches none of: " + ", ".join(c[0] for c in CASES))

    try:
        import rumus
    except ImportError as exc:  # pragma: no cover - depends on the build
        sys.exit(
            f"cannot import rumus ({exc}); build it first (maturin develop) "
            "and run this script with the project's .venv/bin/python"
        )
    import bench_core  # imports torch when it is installed: it is optional

    torch = bench_core.torch
    libs = ["rumus"] + (["torch"] if torch is not None else [])
    threads = rumus.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)  # as every torch process will; print_env shows it
    bench_core.print_env()
    print(
        f"threads: rumus {threads}" + (f", torch set to {torch.get_num_threads()}" if torch else "")
    )
    print(
        f"timing: median of {repeats} timings of >= {min_time:g} s each after warm-up, "
        "each in its own process, libraries alternating"
    )
    print(
        "ms per training step (forward, loss, backward, optimizer step, zero_grad); "
        "LOWER is better; ratio = rumus/torch, SLOW when above target;\n"
        "max/min = slowest over fastest timing per library (well above 1: a noisy machine)"
    )
    print()
    headers = ["case", "rumus ms", "torch ms", "rumus/torch", "target", "max/min " + " ".join(libs)]
    widths = [34, 9, 9, 12, 7, 20]
    line = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths))
    )
    print(line)
    print("-" * len(line))
    errors = []
    t_start = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="bench_nn") as tmp:
        for case in cases:
            cells = run_case(case, libs, min_time, repeats, budget, threads, tmp, errors)
            print(
                "  ".join(
                    c.ljust(w) if i == 0 else c.rjust(w)
                    for i, (c, w) in enumerate(zip(cells, widths))
                ),
                flush=True,
            )
    print(f"\n(total {time.perf_counter() - t_start:.1f} s)")
    if errors:
        print("\nproblems:")
        for e in errors:
            print("  " + e)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
