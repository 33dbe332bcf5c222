#!/usr/bin/env python
"""How long ``import rumus`` takes in a fresh interpreter, whether it leaves the
GPU untouched, and how big the built wheel is.

    .venv/bin/python benches/bench_import.py [--runs 9]

Each run is a new subprocess (``python -c "import rumus"``), timed from
inside it so interpreter start-up is excluded; the median is reported. The
first run warms the page cache (the extension is ~20 MB) and is not counted,
so the number is a warm-cache import, what a user sees the second time.
Target: <= 0.3 s. Run ``python -X importtime -c "import rumus"`` to see which
module costs what. Nothing here asserts (shared machines are noisy).
"""

import argparse
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TARGET_S = 0.3

PROBE = (
    "import time; t = time.perf_counter(); import rumus; t = time.perf_counter() - t; "
    "print(t, rumus._rumus._gpu_initialized())"
)


def import_once():
    out = subprocess.run(
        [sys.executable, "-c", PROBE], check=True, capture_output=True, text=True
    ).stdout.split()
    return float(out[0]), out[1] == "True"


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=9)
    args = p.parse_args()

    import_once()  # warms the page cache
    runs = [import_once() for _ in range(args.runs)]
    times = sorted(t for t, _ in runs)
    median = statistics.median(times)
    verdict = "ok" if median <= TARGET_S else f"SLOWER than the {TARGET_S} s target"
    print(
        f"import rumus (warm page cache, {args.runs} fresh processes): median {median:.3f} s, "
        f"min {times[0]:.3f} s, max {times[-1]:.3f} s  [{verdict}]"
    )
    gpu = any(g for _, g in runs)
    print(f"GPU context created by import: {'YES (a bug)' if gpu else 'no'}")

    wheels = sorted((ROOT / "dist").glob("rumus-*.whl"))
    if not wheels:
        print("wheel size: no wheel in dist/ (bash scripts/build_wheels.sh builds them)")
    for w in wheels:
        print(f"wheel size: {w.stat().st_size / 2**20:.1f} MiB  {w.name}")


if __name__ == "__main__":
    main()
