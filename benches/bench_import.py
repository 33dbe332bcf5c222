#!/usr/bin/env python
"""How long ``import rumus`` takes in a fresh interpreter, whether it leaves the
GPU untouched, and how big the built wheel is.

    .venv/bin/python benches/bench_import.py [--runs 9]

Each run is a new subprocess (``python -c "import rumus"``), timed from
inside it so interpreter start-up is excluded; the median is reported. The
first run warms the page cache (the extension is ~20 MB) and is not counted,
so the number is a warm-cache import, what a user sees the second time. The
runs may write bytecode (PYTHONDONTWRITEBYTECODE is dropped for them): an
installed wheel has its .pyc files, and compiling 20k lines of source on every
import would triple the time.
Target: <= 0.3 s. Wall time swells on a loaded machine, so the CPU time the
import used (user + system) and ``import numpy`` alone (which rumus needs) are
shown too, with the load average. Run ``python -X importtime -c "import rumus"``
to see which module costs what. Nothing here asserts (shared machines are noisy).
"""

import argparse
import os
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.3

PROBE = """
import resource, time
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
c, t = cpu(), time.perf_counter()
import {module}
t, c = time.perf_counter() - t, cpu() - c
import rumus
print(t, c, rumus._rumus._gpu_initialized())
"""


def import_once(module="rumus"):
    """(wall s, CPU s, whether the GPU context exists afterwards)."""
    out = subprocess.run(
        [sys.executable, "-c", PROBE.format(module=module)],
        env={k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"},
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split()
    return float(out[0]), float(out[1]), out[2] == "True"


def summary(name, runs):
    wall = statistics.median(r[0] for r in runs)
    cpu = statistics.median(r[1] for r in runs)
    lo, hi = min(r[0] for r in runs), max(r[0] for r in runs)
    return wall, f"import {name}: median {wall:.3f} s wall ({lo:.3f}-{hi:.3f}), {cpu:.3f} s CPU"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=9)
    args = p.parse_args()

    import_once()  # warms the page cache
    runs = [import_once() for _ in range(args.runs)]
    base = [import_once("numpy") for _ in range(args.runs)]
    load = " ".join(f"{x:.1f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"
    print(f"{args.runs} fresh processes each, warm page cache, load average {load}")
    wall, line = summary("rumus", runs)
    verdict = "ok" if wall <= TARGET_S else f"over the {TARGET_S} s target"
    print(f"{line}  [{verdict}]")
    print(summary("numpy", base)[1] + "  (part of the above)")
    gpu = any(r[2] for r in runs)
    print(f"GPU context created by import: {'YES (a bug)' if gpu else 'no'}")

    wheels = sorted((ROOT / "dist").glob("rumus-*.whl"))
    if not wheels:
        print("wheel size: no wheel in dist/ (bash scripts/build_wheels.sh builds them)")
    for w in wheels:
        print(f"wheel size: {w.stat().st_size / 2**20:.1f} MiB  {w.name}")


if __name__ == "__main__":
    main()
