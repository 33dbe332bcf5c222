"""Heavy kernels release the GIL: a Python thread keeps running while a large
op runs on another one.

The measurement runs in a fresh interpreter (this file as a script) whose
kernels use one thread: the counting thread then has the other core, and the
GIL changes hands within the switch interval. With kernel threads on every
core, a thread waiting for the GIL can wait milliseconds for a CPU after an
op returns, which would blur an op that holds the GIL with one that doesn't."""

import json
import math
import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import rumus
import rumus.nn.functional as F

N = 20_000_000  # elements

# Each op gets the input, a mask of its shape and a scratch directory.
OPS = {
    "leaky_relu": lambda x, m, d: x.leaky_relu(0.1),
    "elu": lambda x, m, d: x.elu(),
    "softplus": lambda x, m, d: x.softplus(),
    "isnan": lambda x, m, d: x.isnan(),
    "isinf": lambda x, m, d: x.isinf(),
    "isfinite": lambda x, m, d: x.isfinite(),
    "F.elu": lambda x, m, d: F.elu(x),
    "where": lambda x, m, d: x.where(m, 0.0),
    "var": lambda x, m, d: x.var(),
    "cumsum": lambda x, m, d: x.cumsum(0),
    "double": lambda x, m, d: x.double(),
    "flip": lambda x, m, d: x.flip(0),
    "randn": lambda x, m, d: rumus.randn(N),
    "save": lambda x, m, d: rumus.save({"x": x}, d / "x.safetensors"),
}


def stalled_time(op):
    """How long a counting thread went without ticking, summed over its stalls longer
    than STALL, while op ran; and op's run time. An op holding the GIL stalls the
    counter for about its whole run; a scheduling hiccup stalls it once, briefly."""
    ticks, stop, started = [], threading.Event(), threading.Event()

    def count():
        started.set()
        i = 0
        while not stop.is_set():
            i += 1
            if i % 1000 == 0:
                ticks.append(time.perf_counter())

    counter = threading.Thread(target=count)
    counter.start()
    started.wait()
    t0 = time.perf_counter()
    op()
    t1 = time.perf_counter()
    stop.set()
    counter.join()
    marks = [t0, *(t for t in ticks if t0 < t < t1), t1]
    gaps = (b - a for a, b in zip(marks, marks[1:]))
    return sum(g for g in gaps if g > STALL), t1 - t0


STALL = 2e-3  # seconds: the GIL changes hands every 0.1 ms (the switch interval below)
MIN_RUN = 0.3  # seconds each op is repeated for, so one hiccup can't pass for a held GIL


def measure(scratch):
    """{op name: (stalled time, run time)} for every op of OPS, in seconds."""
    # The main thread takes the GIL back within 0.1 ms of asking.
    sys.setswitchinterval(1e-4)
    x = rumus.rand(4000, N // 4000).t()  # transposed: the strided paths, slower
    m = x > 0.5
    result = {}
    for name, op in OPS.items():
        op(x, m, scratch)  # the first call faults its output's pages in
        t0 = time.perf_counter()
        op(x, m, scratch)
        reps = max(1, math.ceil(MIN_RUN / (time.perf_counter() - t0)))

        def repeated(op=op, reps=reps):
            for _ in range(reps):
                op(x, m, scratch)

        result[name] = stalled_time(repeated)
    return result


@pytest.fixture(scope="module")
def measured(tmp_path_factory):
    env = dict(os.environ, RAYON_NUM_THREADS="1")
    scratch = tmp_path_factory.mktemp("gil")
    done = subprocess.run(
        [sys.executable, __file__, str(scratch)], env=env, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


@pytest.mark.parametrize("name", list(OPS))
def test_op_releases_the_gil(name, measured):
    stalled, run = measured[name]
    # Holding the GIL, the op would stall the counter for most of its run.
    assert stalled < run / 2, (
        f"{name}: counter stalled {stalled * 1e3:.1f} ms, op ran {run * 1e3:.1f} ms"
    )


if __name__ == "__main__":
    print(json.dumps(measure(Path(sys.argv[1]))))
