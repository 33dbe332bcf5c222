"""The process-group timeout: a watchdog thread that ends the job when a collective waits
too long.

MPI's blocking collectives have no timeout, and a rank that hangs (or never reaches the
collective) would leave the others waiting forever. So, as PyTorch's NCCL watchdog does,
every blocking wait is registered here (what, since when); a daemon thread wakes up
regularly and, when the registered wait is older than the timeout given to
``init_process_group``, prints which collective on which rank timed out and calls
``MPI_Abort``, which ends every process of the job. The blocking calls themselves stay
MPI's own (tuned, no polling), and registering costs a few stores per call (no clock
read on all_reduce's fast path, see ``busy``); the waits release the GIL, so the thread runs
while the main thread is blocked.

A rank that raises does not wait for the timeout: ``init_process_group`` installs an
exception hook that prints the rank and aborts the job at once.
"""

import sys
import threading
import time

_state = {"current": None, "timeout": None, "rank": None, "thread": None, "abort": None}
# all_reduce's fast path registers itself here, without reading a clock: [what (None when not
# waiting), number of calls so far]. The thread times a (what, calls) pair from when it first
# sees it, so a wait is caught at most one polling interval late.
busy = [None, 0]


def start(timeout_s, rank, abort):
    """Arms the watchdog (once per process; a new call updates the timeout and rank)."""
    _state.update(timeout=timeout_s, rank=rank, abort=abort)
    if _state["thread"] is None:
        t = threading.Thread(target=_loop, name="rumus-distributed-watchdog", daemon=True)
        _state["thread"] = t
        t.start()


def stop():
    _state.update(timeout=None, current=None)


def _loop():
    seen, seen_since = None, 0.0
    while True:
        timeout = _state["timeout"]
        time.sleep(0.2 if timeout is None else min(1.0, max(timeout / 20, 0.05)))
        now = time.monotonic()
        what, calls = busy[0], busy[1]
        key = None if what is None else (what, calls)
        if key != seen:
            seen, seen_since = key, now
        if timeout is None:
            continue
        if key is not None and now - seen_since > timeout:
            _expire(what, timeout)
            return
        current = _state["current"]
        if current is not None and now - current[1] > timeout and _state["current"] is current:
            _expire(current[0], timeout)
            return


def _expire(what, timeout):
    sys.stderr.write(
        f"rumus.distributed: rank {_state['rank']}: {what} did not finish within the "
        f"process group timeout ({timeout:g} s): another rank failed, hangs or did not "
        "call it; aborting the job\n"
    )
    sys.stderr.flush()
    _state["abort"]()


class watch:
    """Registers a blocking wait named ``what`` for the duration of a ``with`` block (a class,
    not a generator: it runs on every collective and must cost little)."""

    __slots__ = ("what", "previous", "armed")

    def __init__(self, what):
        self.what = what

    def __enter__(self):
        self.armed = _state["timeout"] is not None
        if self.armed:
            self.previous = _state["current"]
            _state["current"] = (self.what, time.monotonic())

    def __exit__(self, *exc):
        if self.armed:
            _state["current"] = self.previous
