"""LBFGS on a 10,000-parameter least-squares problem (min ||A x - b||^2, A of
shape 1000 x 10,000, float32): one ``step(closure)`` of ``--iters`` iterations
with and without the strong-Wolfe line search, from x = 0, tolerances 0 so
every library runs the same number of iterations. rumus against PyTorch when
importable (each in its own process, see harness.py).

    python benches/bench_lbfgs.py [--rounds 3] [--iters 20] [--rows 1000] [--params 10000]
"""

import argparse

from harness import compare, have

SETUP = """
import numpy as np
import {lib} as t
rng = np.random.default_rng(0)
A = t.from_numpy(rng.standard_normal(({rows}, {n})).astype(np.float32) / {rows} ** 0.5)
b = t.from_numpy(rng.standard_normal({rows}).astype(np.float32))

def solve(line_search):
    x = t.zeros({n}, requires_grad=True)
    opt = t.optim.LBFGS([x], max_iter={iters}, max_eval=10 * {iters}, history_size=10,
                        tolerance_grad=0, tolerance_change=0, line_search_fn=line_search)

    def closure():
        opt.zero_grad()
        loss = ((A @ x - b) ** 2).sum()
        loss.backward()
        return loss

    opt.step(closure)
    return x
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rows", type=int, default=1000)
    ap.add_argument("--params", type=int, default=10000)
    a = ap.parse_args()
    libs = ["rumus"] + (["torch"] if have("torch") else [])
    cases = []
    for ls in (None, "strong_wolfe"):
        label = f"lbfgs {a.params} params, {ls or 'no line search'}"
        jobs = {
            lib: (
                SETUP.format(lib=lib, rows=a.rows, n=a.params, iters=a.iters),
                f"solve({ls!r})",
            )
            for lib in libs
        }
        cases.append((label, jobs))
    compare(cases, rounds=a.rounds, min_time=0.2)


if __name__ == "__main__":
    main()
