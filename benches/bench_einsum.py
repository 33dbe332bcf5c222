#!/usr/bin/env python
"""einsum on the CPU beside NumPy (np.einsum with optimize=True) and PyTorch
when it is installed, each library timed in its own process (benches/harness.py).

    .venv/bin/python benches/bench_einsum.py [--rounds 5]

Targets (issue 15): 'bij,bjk->bik' and 'bhqd,bhkd->bhqk' at transformer sizes
within 1.1x of PyTorch's time. Nothing here asserts a speed.
"""

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import compare, have  # noqa: E402

CASES = [
    ("bij,bjk->bik", [(32, 128, 64), (32, 64, 128)]),
    ("bhqd,bhkd->bhqk", [(8, 8, 128, 64), (8, 8, 128, 64)]),
    ("bhqk,bhkd->bhqd", [(8, 8, 128, 128), (8, 8, 128, 64)]),
    ("ij,jk->ik", [(512, 512), (512, 512)]),
    ("bi,bi->b", [(4096, 256), (4096, 256)]),
    ("ii->i", [(1024, 1024)]),
    ("bn,anm,bm->ba", [(64, 32), (16, 32, 32), (64, 32)]),
]


def setup(lib, shapes):
    arrays = "".join(
        f"x{i} = np.random.default_rng({i}).standard_normal({s}).astype(np.float32)\n"
        for i, s in enumerate(shapes)
    )
    names = ", ".join(f"x{i}" for i in range(len(shapes)))
    if lib == "numpy":
        return "import numpy as np\n" + arrays + f"ops = ({names},)\n"
    mod = "rumus" if lib == "rumus" else "torch"
    return (
        f"import numpy as np, {mod} as lib\n"
        + arrays
        + f"ops = tuple(lib.from_numpy(x) for x in ({names},))\n"
    )


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    libs = ["rumus", "numpy"] + (["torch"] if have("torch") else [])
    stmt = {
        "rumus": "lib.einsum(eq, *ops)",
        "torch": "lib.einsum(eq, *ops)",
        "numpy": "np.einsum(eq, *ops, optimize=True)",
    }
    cases = [
        (eq, {lib: (setup(lib, shapes) + f"eq = {eq!r}\n", stmt[lib]) for lib in libs})
        for eq, shapes in CASES
    ]
    print(f"einsum, float32, CPU ({os.cpu_count()} cores); medians of {args.rounds} rounds\n")
    compare(cases, rounds=args.rounds)


if __name__ == "__main__":
    main()
