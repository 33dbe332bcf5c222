#!/usr/bin/env python
"""Core CPU speed of rumus, measured side by side with NumPy (and PyTorch
when it is installed) in one run, printed as a plain-text table of ratios.

This is a script, not a test: timings on shared machines are noisy, so
nothing here asserts a speed.  Run it from the repository root with the
project's interpreter:

    .venv/bin/python benches/bench_core.py            # full run (< ~2 min)
    .venv/bin/python benches/bench_core.py --quick    # fewer/shorter repeats
    .venv/bin/python benches/bench_core.py --only matmul,add

Benchmark a release build (`maturin develop --release`): a dev build
compiles rumus' own kernels at opt-level 1, several times slower.

Every number is the best (minimum) of several repeats (interleaved across the
libraries), each repeat running
enough iterations to last at least --min-time seconds, after a warm-up.
Inputs are prepared outside the timed region.  rumus computes eagerly on the
CPU, so a call returns a finished tensor and no synchronisation is needed.
Each rumus result is also checked once against NumPy (outside the timing);
a wrong result is flagged in the table, since its speed would mean nothing.
"""

import argparse
import gc
import math
import os
import platform
import sys
import time
import timeit

import numpy as np

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


# --------------------------------------------------------------------------
# timing


def measure(jobs, min_time, repeats, budget):
    """Best time in seconds of one execution per library: `jobs` maps a library
    to (stmt, namespace).

    Each statement gets warm-up calls and an iteration count calibrated so one
    repeat lasts >= min_time. The repeats then run interleaved across the
    libraries (rumus, numpy, torch, rumus, ...) so that drifts in clock speed
    or machine load hit all of them alike; the min over repeats is kept.
    Repeats stop early once `budget` seconds per library have been spent.
    """
    timers, numbers = {}, {}
    start = time.perf_counter()
    for impl, (stmt, ns) in jobs.items():
        timer = timeit.Timer(stmt, globals=ns, timer=time.perf_counter)  # gc off
        first = timer.timeit(1)  # warm-up
        if first < min_time:
            timer.timeit(1)  # a second warm-up is cheap here
        number = 1
        if first < min_time:
            # calibrate (like timeit.autorange) until a run is long enough to
            # extrapolate, then size `number` to reach min_time
            while True:
                t = timer.timeit(number)
                if t >= min_time / 5:
                    number = max(1, math.ceil(number * min_time / t * 1.05))
                    break
                number *= 10
        timers[impl], numbers[impl] = timer, number
    best = {impl: math.inf for impl in jobs}
    for _ in range(repeats):
        for impl, timer in timers.items():
            # Let the previous library's worker threads go idle (OpenBLAS spins
            # for up to ~0.1 s after each call and would steal the next one's cores).
            time.sleep(0.3)
            best[impl] = min(best[impl], timer.timeit(numbers[impl]) / numbers[impl])
        if time.perf_counter() - start > budget * len(jobs):
            break
    gc.collect()
    return best


# --------------------------------------------------------------------------
# cases
#
# A case is (name, unit, work, setup): `work` converts seconds per op into
# the unit shown (a throughput, or microseconds for the overhead row), and
# `setup()` returns {impl: (stmt, namespace, result_fn)} plus the NumPy
# reference value used to check rumus' result.


MiB16 = 16 * 2**20
MiB4 = 4 * 2**20


def _rng():
    return np.random.default_rng(0)


def _rumus_from(arr):
    # rumus.tensor copies the data into rumus-owned storage, like torch.tensor
    return rumus.tensor(arr)


def _torch_from(arr):
    return torch.from_numpy(arr.copy())


def _impls(stmt, arrays, extra_ns=None):
    """Namespaces for the same statement over the same data per library.
    `arrays` maps variable names to NumPy inputs."""
    out = {}
    libs = [("rumus", rumus, _rumus_from), ("numpy", np, lambda a: a)]
    if torch is not None:
        libs.append(("torch", torch, _torch_from))
    for name, mod, conv in libs:
        ns = {"lib": mod}
        try:
            for k, v in arrays.items():
                ns[k] = conv(v)
        except Exception as exc:  # report, do not hide
            ns = exc
        out[name] = (stmt.get(name, stmt["*"]) if isinstance(stmt, dict) else stmt, ns)
    return out


def case_matmul(n):
    def setup():
        r = _rng()
        a = r.standard_normal((n, n), dtype=np.float32)
        b = r.standard_normal((n, n), dtype=np.float32)
        return _impls("a @ b", {"a": a, "b": b}), (lambda: a @ b)

    return (f"matmul {n}x{n}x{n}", "GFLOP/s", lambda s: 2.0 * n**3 / s / 1e9, setup, 1e-3)


def case_matmul_rect(m=64, k=512, n=512):
    def setup():
        r = _rng()
        a = r.standard_normal((m, k), dtype=np.float32)
        b = r.standard_normal((k, n), dtype=np.float32)
        return _impls("a @ b", {"a": a, "b": b}), (lambda: a @ b)

    return (
        f"matmul ({m},{k})x({k},{n})",
        "GFLOP/s",
        lambda s: 2.0 * m * k * n / s / 1e9,
        setup,
        1e-3,
    )


def case_add(n=MiB16):
    def setup():
        r = _rng()
        a = r.random(n, dtype=np.float32)
        b = r.random(n, dtype=np.float32)
        return _impls("a + b", {"a": a, "b": b}), (lambda: a + b)

    return ("add 16M f32", "GB/s", lambda s: 3 * 4 * n / s / 1e9, setup, 1e-6)


def case_overhead():
    def setup():
        a = np.arange(4, dtype=np.float32)
        b = np.ones(4, dtype=np.float32)
        return _impls("a + b", {"a": a, "b": b}), (lambda: a + b)

    return ("overhead add 4 f32", "us/op", lambda s: s * 1e6, setup, 1e-6)


def case_sum(n=MiB16):
    def setup():
        a = _rng().random(n, dtype=np.float32)
        return _impls("a.sum()", {"a": a}), (lambda: a.astype(np.float64).sum())

    return ("sum 16M f32", "GB/s", lambda s: 4 * n / s / 1e9, setup, 1e-4)


def case_exp(n=MiB4):
    def setup():
        a = _rng().uniform(-5, 5, n).astype(np.float32)
        return _impls("lib.exp(a)", {"a": a}), (lambda: np.exp(a))

    return ("exp 4M f32", "GB/s", lambda s: 2 * 4 * n / s / 1e9, setup, 1e-5)


def case_transpose(n=4096):
    def setup():
        a = _rng().random((n, n), dtype=np.float32)
        stmt = {"*": "a.T.contiguous()", "numpy": "np.ascontiguousarray(a.T)"}
        impls = _impls(stmt, {"a": a})
        for k, (s, ns) in impls.items():
            if isinstance(ns, dict):
                ns["np"] = np
        return impls, (lambda: np.ascontiguousarray(a.T))

    return (f"transpose+copy {n}^2 f32", "GB/s", lambda s: 2 * 4 * n * n / s / 1e9, setup, 0.0)


CASES = [case_matmul(n) for n in (256, 512, 1024, 2048)] + [
    case_matmul_rect(),
    case_add(),
    case_overhead(),
    case_sum(),
    case_exp(),
    case_transpose(),
]


# --------------------------------------------------------------------------
# checking rumus' answer (outside the timing)


def check(ns, stmt, expected_fn, rtol):
    """None if rumus' result matches NumPy's, else a short description."""
    got = eval(stmt, ns)
    if not isinstance(got, rumus.Tensor if hasattr(rumus, "Tensor") else object):
        return f"returned {type(got).__name__}, not a rumus tensor"
    got = np.asarray(got.numpy() if hasattr(got, "numpy") else got)
    exp = np.asarray(expected_fn())
    if got.shape != exp.shape:
        return f"shape {got.shape} != numpy {exp.shape}"
    if got.dtype != np.float32:
        return f"dtype {got.dtype} != float32"
    err = float(np.max(np.abs(got.astype(np.float64) - exp))) if exp.size else 0.0
    scale = float(np.max(np.abs(exp))) if exp.size else 0.0
    if not err <= rtol * scale + 1e-6:
        return f"max abs error {err:.3g} (scale {scale:.3g})"
    return None


# --------------------------------------------------------------------------
# environment


def print_env():
    ncpu = os.cpu_count()
    try:
        usable = len(os.sched_getaffinity(0))
    except AttributeError:
        usable = ncpu
    print(
        f"python {platform.python_version()} on {platform.machine()}, "
        f"{ncpu} CPUs ({usable} usable by this process)"
    )
    if hasattr(os, "getloadavg"):
        load = os.getloadavg()[0]
        busy = "  <- machine is busy: numbers will be noisy" if load > 0.5 * usable else ""
        print(f"load average (1 min) before the run: {load:.2f}{busy}")
    version = getattr(rumus, "__version__", None)
    if version is None:
        try:
            from importlib.metadata import version as _v

            version = _v("rumus")
        except Exception:
            version = "unknown"
    print(f"rumus {version}")
    print(f"numpy {np.__version__}")
    try:
        import threadpoolctl

        for info in threadpoolctl.threadpool_info():
            print(
                f"  {info.get('user_api')}: {info.get('internal_api')} "
                f"{info.get('version')} threads={info.get('num_threads')} "
                f"arch={info.get('architecture')}  ({info.get('filepath')})"
            )
    except ImportError:
        print("  (threadpoolctl not installed: BLAS library/threads not shown)")
    if torch is not None:
        print(f"torch {torch.__version__} threads={torch.get_num_threads()}")
    else:
        print("torch not installed: torch column skipped")
    for var in ("RAYON_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        if var in os.environ:
            print(f"{var}={os.environ[var]}")
    ob = [
        f"{v}={os.environ[v]}" for v in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE") if v in os.environ
    ]
    if ob:
        print(
            f"NOTE: {' '.join(ob)} is set; it can slow NumPy's OpenBLAS. "
            "This script leaves it alone; to measure without it run "
            "`env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE "
            ".venv/bin/python benches/bench_core.py`"
        )


# --------------------------------------------------------------------------
# table


def fmt(v):
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if v >= 100:
        return f"{v:.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument(
        "--quick", action="store_true", help="fewer and shorter repeats (noisier numbers)"
    )
    p.add_argument(
        "--only",
        metavar="NAME",
        default=None,
        help="run only cases whose name contains NAME "
        "(comma-separated for several, e.g. matmul,add)",
    )
    p.add_argument(
        "--min-time",
        type=float,
        default=None,
        help="seconds per repeat (default 0.2, --quick 0.05)",
    )
    p.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="repeats per measurement; the best is kept (default 5, --quick 3)",
    )
    args = p.parse_args(argv)
    min_time = args.min_time or (0.05 if args.quick else 0.2)
    repeats = args.repeats or (3 if args.quick else 5)
    budget = max(6 * min_time, 1.0) * (1 if args.quick else 2)

    cases = CASES
    if args.only:
        keys = [k.strip().lower() for k in args.only.split(",") if k.strip()]
        cases = [c for c in CASES if any(k in c[0].lower() for k in keys)]
        if not cases:
            sys.exit(f"--only {args.only!r} matches none of: " + ", ".join(c[0] for c in CASES))

    print_env()
    impls = ["rumus", "numpy"] + (["torch"] if torch is not None else [])
    print(f"timing: best of {repeats} repeats of >= {min_time:g} s each, after warm-up")
    print(
        "ratio rumus/numpy (and rumus/torch): higher is better for "
        "throughputs (GFLOP/s, GB/s); LOWER is better for us/op"
    )
    print()

    headers = ["case", "unit"] + impls + ["rumus/numpy"]
    if torch is not None:
        headers.append("rumus/torch")
    widths = [26, 8] + [9] * (len(headers) - 2)
    line = "  ".join(
        h.ljust(w) if i < 2 else h.rjust(w) for i, (h, w) in enumerate(zip(headers, widths))
    )
    print(line)
    print("-" * len(line))

    errors = []
    t_start = time.perf_counter()
    for name, unit, work, setup, rtol in cases:
        try:
            per_impl, expected_fn = setup()
        except Exception as exc:
            errors.append(f"{name}: setup failed: {type(exc).__name__}: {exc}")
            continue
        values = {}
        note = ""
        jobs = {}
        for impl in impls:
            stmt, ns = per_impl[impl]
            if isinstance(ns, Exception):
                values[impl] = "ERR"
                errors.append(f"{name} [{impl}] creating inputs: {type(ns).__name__}: {ns}")
                continue
            try:
                if impl == "rumus":
                    bad = check(ns, stmt, expected_fn, rtol)
                    if bad:
                        note = " !WRONG"
                        errors.append(f"{name} [rumus] wrong result: {bad}")
                eval(stmt, ns)  # fails here, not inside the timing loop
                jobs[impl] = (stmt, ns)
            except Exception as exc:
                values[impl] = "ERR"
                errors.append(f"{name} [{impl}] `{stmt}`: {type(exc).__name__}: {exc}")
        for impl, secs in measure(jobs, min_time, repeats, budget).items():
            values[impl] = work(secs)
        del per_impl
        gc.collect()

        def ratio(other):
            a, b = values.get("rumus"), values.get(other)
            if isinstance(a, float) and isinstance(b, float) and b > 0:
                return f"{a / b:.2f}"
            return "-"

        cells = [name + note, unit] + [fmt(values.get(i)) for i in impls]
        cells.append(ratio("numpy"))
        if torch is not None:
            cells.append(ratio("torch"))
        print(
            "  ".join(
                c.ljust(w) if i < 2 else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths))
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
