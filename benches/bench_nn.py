#!/usr/bin/env python
"""Training-step speed of rumus models on the CPU, side by side with PyTorch
(when it is installed) in one run, printed as a plain-text table.

This is a script, not a test: timings on shared machines are noisy, so nothing
here asserts a speed.  Run it from the repository root with the project's
interpreter (on a release build: `maturin develop --release`):

    .venv/bin/python benches/bench_nn.py            # full run (~1-2 min)
    .venv/bin/python benches/bench_nn.py --quick    # fewer/shorter repeats
    .venv/bin/python benches/bench_nn.py --only mlp,cnn
    RAYON_NUM_THREADS=1 .venv/bin/python benches/bench_nn.py   # both on 1 thread

A training step is forward, loss, backward, optimizer step and zero_grad, on
fixed inputs prepared outside the timing.  Both libraries build the same model
with the same weights (copied from rumus to torch through NumPy) and torch gets
as many threads as rumus uses.  Each timing runs enough steps to last at least
--min-time seconds; timings are repeated, interleaved between the libraries, and
the median is shown.  Before timing, the eval-mode loss of both models on the
same batch is compared: a mismatch is flagged, since its speed would mean
nothing.  `target` is the rumus/torch ratio to reach (lower is faster).
"""

import argparse
import gc
import os
import statistics
import sys
import time

# NumPy's OpenBLAS threads busy-wait after start-up and take CPU from both
# libraries; nothing timed here uses NumPy's BLAS.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

import numpy as np  # noqa: E402

try:
    import rumus
except ImportError as exc:  # pragma: no cover - depends on the build
    sys.exit(
        f"cannot import rumus ({exc}); build it first (maturin develop) "
        "and run this script with the project's .venv/bin/python"
    )

try:
    import torch
except Exception:  # torch is optional: its column is left out when absent
    torch = None

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_core import print_env  # noqa: E402  (same environment header as bench_core)

LIBS = {"rumus": rumus}
if torch is not None:
    LIBS["torch"] = torch


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
        1.0,
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
        1.0,
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


def state_numpy(model):
    return {k: np.array(v.detach().numpy(), copy=True) for k, v in model.state_dict().items()}


# --------------------------------------------------------------------------
# timing


def measure(trainers, min_time, repeats, budget):
    """({lib: median seconds per step}, {lib: slowest / fastest timing}) for
    `trainers` ({lib: Trainer}), timings interleaved between the libraries so
    drifts in clock or load hit both alike."""
    numbers, times = {}, {lib: [] for lib in trainers}
    for lib, tr in trainers.items():
        tr.step()  # warm-up: first-call allocations, lazily created optimizer state
        tr.step()
        t0 = time.perf_counter()
        tr.step()
        one = time.perf_counter() - t0
        numbers[lib] = max(1, int(min_time / max(one, 1e-9)))
    start = time.perf_counter()
    for _ in range(repeats):
        for lib, tr in trainers.items():
            # Let the other library's worker threads go idle (OpenMP/OpenBLAS pools
            # spin for a while after each call and would steal this one's cores).
            time.sleep(0.2)
            t0 = time.perf_counter()
            for _ in range(numbers[lib]):
                tr.step()
            times[lib].append((time.perf_counter() - t0) / numbers[lib])
        if time.perf_counter() - start > budget * len(trainers):
            break
    return (
        {lib: statistics.median(ts) for lib, ts in times.items()},
        {lib: max(ts) / min(ts) for lib, ts in times.items()},
    )


# --------------------------------------------------------------------------
# table


def fmt_ms(v):
    if not isinstance(v, float):
        return v if isinstance(v, str) else "-"
    ms = v * 1e3
    return f"{ms:.0f}" if ms >= 100 else f"{ms:.1f}" if ms >= 10 else f"{ms:.2f}"


def run_case(case, min_time, repeats, budget, errors):
    name, build, x_shape, y_maker, loss_fn, opt_spec, target = case
    rng = np.random.default_rng(0)
    x = rng.standard_normal(x_shape).astype(np.float32)
    y = y_maker(rng) if y_maker else None
    values, spread, trainers, note = {}, {}, {}, ""
    rumus.manual_seed(0)
    try:
        trainers["rumus"] = Trainer(rumus, build, x, y, loss_fn, opt_spec)
        state = state_numpy(trainers["rumus"].model)
    except Exception as exc:
        values["rumus"] = "ERR"
        errors.append(f"{name} [rumus] setup: {type(exc).__name__}: {exc}")
        state = None
    if torch is not None:
        try:
            trainers["torch"] = Trainer(torch, build, x, y, loss_fn, opt_spec, state)
        except Exception as exc:
            values["torch"] = "ERR"
            errors.append(f"{name} [torch] setup with rumus' weights: {type(exc).__name__}: {exc}")
    if "rumus" in trainers and "torch" in trainers:
        try:
            a, b = trainers["rumus"].eval_loss(), trainers["torch"].eval_loss()
            if not abs(a - b) <= 1e-4 * abs(b) + 1e-6:
                note = " !WRONG"
                errors.append(f"{name}: eval loss rumus {a!r} != torch {b!r} with the same weights")
        except Exception as exc:
            note = " !ERR"
            errors.append(f"{name}: loss check: {type(exc).__name__}: {exc}")
    for lib in list(trainers):
        try:
            trainers[lib].step()  # fail here, not inside the timing loop
        except Exception as exc:
            values[lib] = "ERR"
            errors.append(f"{name} [{lib}] training step: {type(exc).__name__}: {exc}")
            del trainers[lib]
    if trainers:
        medians, spread = measure(trainers, min_time, repeats, budget)
        values.update(medians)
    ratio = "-"
    if isinstance(values.get("rumus"), float) and isinstance(values.get("torch"), float):
        r = values["rumus"] / values["torch"]
        ratio = f"{r:.2f}" + ("" if r <= target else " SLOW")
    del trainers
    gc.collect()
    spreads = "  ".join(f"{spread[lib]:.2f}" if lib in spread else "-" for lib in LIBS)
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
    args = p.parse_args(argv)
    min_time = args.min_time or (0.1 if args.quick else 0.3)
    repeats = args.repeats or (3 if args.quick else 7)
    budget = max(repeats * min_time * 2, 1.0)

    cases = CASES
    if args.only:
        keys = [k.strip().lower() for k in args.only.split(",") if k.strip()]
        cases = [c for c in CASES if any(k in c[0].lower() for k in keys)]
        if not cases:
            sys.exit(f"--only {args.only!r} matches none of: " + ", ".join(c[0] for c in CASES))

    threads = rumus.get_num_threads()
    if torch is not None:
        torch.set_num_threads(threads)
    print_env()
    print(
        f"threads: rumus {threads}" + (f", torch set to {torch.get_num_threads()}" if torch else "")
    )
    print(
        f"timing: median of {repeats} timings of >= {min_time:g} s each, interleaved, after warm-up"
    )
    print(
        "ms per training step (forward, loss, backward, optimizer step, zero_grad); "
        "LOWER is better; ratio = rumus/torch, SLOW when above target;\n"
        "max/min = slowest over fastest timing per library (well above 1: a noisy machine)"
    )
    print()
    headers = ["case", "rumus ms", "torch ms", "rumus/torch", "target", "max/min " + " ".join(LIBS)]
    widths = [34, 9, 9, 12, 7, 20]
    line = "  ".join(
        h.ljust(w) if i == 0 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths))
    )
    print(line)
    print("-" * len(line))
    errors = []
    t_start = time.perf_counter()
    for case in cases:
        cells = run_case(case, min_time, repeats, budget, errors)
        print(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
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
