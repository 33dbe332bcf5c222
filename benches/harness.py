"""Timing each library in its own process, for the bench_* scripts.

A library whose threads spin after a call (PyTorch's, OpenBLAS's) steals the
cores from the next one timed in the same process, so every measurement here
is a fresh interpreter: it runs the setup, warms up, calibrates an iteration
count that lasts `min_time`, and reports the median of five repeats. The
libraries alternate round by round (rumus, numpy, torch, then numpy, torch,
rumus, ...) and each gets the median of its rounds.
"""

import json
import statistics
import subprocess
import sys

_CHILD = r"""
import json, sys, timeit
setup, stmt, min_time = json.loads(sys.argv[1])
ns = {}
exec(setup, ns)
timer = timeit.Timer(stmt, globals=ns)
timer.timeit(1)
number = 1
while timer.timeit(number) < min_time:
    number *= 2
times = sorted(timer.timeit(number) / number for _ in range(5))
print(json.dumps(times[2]))
"""


def run_json(args):
    """The JSON value on the last line of what `python *args` prints, run in a
    fresh interpreter (this one's executable, this process's environment).

    Args:
        args: command-line arguments after the interpreter (a script or "-c" code).

    A non-zero exit raises RuntimeError carrying the last line of its stderr.
    """
    out = subprocess.run([sys.executable, *args], capture_output=True, text=True)
    if out.returncode != 0:
        lines = out.stderr.strip().splitlines()
        raise RuntimeError(lines[-1] if lines else f"exit status {out.returncode}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def time_once(setup, stmt, min_time=0.1):
    """Seconds per execution of `stmt` after `setup`, in a fresh interpreter."""
    return run_json(["-c", _CHILD, json.dumps([setup, stmt, min_time])])


def have(module):
    """Whether `module` imports in a fresh interpreter (torch is optional)."""
    return (
        subprocess.run([sys.executable, "-c", f"import {module}"], capture_output=True).returncode
        == 0
    )


def compare(cases, rounds=5, min_time=0.1):
    """cases: [(label, {library: (setup, stmt)})]. Prints one row per case with
    each library's median time and rumus' time over each other library's."""
    libs = sorted({lib for _, jobs in cases for lib in jobs}, key=lambda x: x != "rumus")
    others = [lib for lib in libs if lib != "rumus"]
    head = f"{'case':<34}" + "".join(f"{lib + ' ms':>12}" for lib in libs)
    head += "".join(f"{'rumus/' + lib:>14}" for lib in others)
    print(head)
    print("-" * len(head))
    for label, jobs in cases:
        times = {lib: [] for lib in jobs}
        order = list(jobs)
        for r in range(rounds):
            for lib in order[r % len(order) :] + order[: r % len(order)]:
                times[lib].append(time_once(*jobs[lib], min_time=min_time))
        med = {lib: statistics.median(ts) for lib, ts in times.items()}
        row = f"{label:<34}"
        row += "".join(f"{med[lib] * 1e3:>12.3f}" if lib in med else f"{'':>12}" for lib in libs)
        for lib in others:
            ok = lib in med and "rumus" in med
            row += f"{med['rumus'] / med[lib]:>14.2f}" if ok else f"{'':>14}"
        print(row, flush=True)


# Appended to a worker script that defines `ops` ({name: callable}) and `reps`:
# prints the best of `reps` calls of each op, in seconds, as JSON.
WORKER_TIMING = r"""
import json as _json, time as _time
_out = {}
for _name, _fn in ops.items():
    _fn()
    _best = []
    for _ in range(reps):
        _t = _time.perf_counter()
        _fn()
        _best.append(_time.perf_counter() - _t)
    _out[_name] = min(_best)
print(_json.dumps(_out))
"""


def libraries(*base):
    """`base` plus "torch" when it imports (it is optional)."""
    return list(base) + (["torch"] if have("torch") else [])


def run_workers(worker, libs, argv, rounds):
    """Runs `worker` (ending in WORKER_TIMING) once per library per round, each in
    its own process, alternating the order; returns {lib: {op: [seconds...]}}."""
    times = {lib: {} for lib in libs}
    for r in range(rounds):
        for lib in libs if r % 2 == 0 else libs[::-1]:
            for k, v in run_json(["-c", worker, lib, *map(str, argv)]).items():
                times[lib].setdefault(k, []).append(v)
    return times


def print_ratio_table(title, times, base="numpy"):
    """One row per op: each library's median in ms and rumus's time over `base`'s."""
    libs = list(times)
    print(f"{title:<22}" + "".join(f"{lib + ' ms':>12}" for lib in libs) + f"{'rumus/' + base:>13}")
    for op in times[base]:
        med = {lib: statistics.median(times[lib][op]) * 1e3 for lib in libs}
        row = f"{op:<22}" + "".join(f"{med[lib]:>12.2f}" for lib in libs)
        print(row + f"{med['rumus'] / med[base]:>12.2f}x")
