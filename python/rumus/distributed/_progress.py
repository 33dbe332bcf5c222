"""Drives nonblocking MPI collectives while Python computes something else.

Open MPI (built without an asynchronous progress thread) advances a nonblocking collective
(``Iallreduce``) only while the process is inside an MPI call: launched during backward and
left alone, a bucket's all-reduce does nothing until the final wait, and none of it overlaps
with backward. So while requests are in flight a helper thread polls them (``Testall``, which
returns at once) every ``interval`` seconds. Backward runs in the engine without the GIL, so
the thread gets to run; between polls it sleeps (a busy thread would take a core from the
computation). It needs ``MPI_THREAD_MULTIPLE`` (mpi4py's default); at a lower thread level
only the owner's own ``poll()`` calls drive progress.

``Progress`` serves DDP's gradient buckets (one owner, closed after each backward);
``Background`` serves every ``Work`` handle (``async_op=True`` collectives, isend/irecv),
which may be waited on in any order.
"""

import atexit
import threading
import time
from datetime import timedelta

from . import _watchdog


class Progress:
    """Polls the requests given to ``add`` from a helper thread until ``close``. The owner
    must not touch those requests before ``close`` returns (MPI request objects are not
    shared between threads)."""

    def __init__(self, MPI, interval=2e-4):
        self._MPI = MPI
        self._interval = interval
        self._requests = []
        self._wake = threading.Event()
        self._stop = False
        self._thread = None
        self._threaded = MPI.Query_thread() >= MPI.THREAD_MULTIPLE

    def add(self, request):
        self._requests.append(request)
        if not self._threaded:
            self._MPI.Request.Testall(self._requests)
            return
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="rumus-mpi-progress")
            self._thread.daemon = True
            self._thread.start()
        self._wake.set()

    def poll(self):
        """One progress call from the owner's thread (only when there is no helper thread)."""
        if not self._threaded and self._requests:
            self._MPI.Request.Testall(self._requests)

    def _loop(self):
        testall = self._MPI.Request.Testall
        while True:
            self._wake.wait()
            if self._stop:
                return
            pending = list(self._requests)
            if testall(pending):
                # All done so far: sleep until the next add (one that came after the
                # snapshot wakes the loop again).
                self._wake.clear()
                if len(self._requests) > len(pending):
                    self._wake.set()
            else:
                time.sleep(self._interval)

    def close(self):
        """Stops the helper thread; the requests are the caller's again."""
        if self._thread is not None:
            self._stop = True
            self._wake.set()
            self._thread.join()
        self._thread = None
        self._requests = []
        self._stop = False
        self._wake.clear()


class _Entry:
    __slots__ = ("requests", "done", "error")

    def __init__(self, requests):
        self.requests = requests
        self.done = False
        self.error = None


class Background:
    """Progress for the Work handles of ``async_op=True`` collectives and of isend/irecv:
    one helper thread per process tests every request in flight (``Testall`` per handle,
    under a lock, so a handle's requests are never touched by two threads at once) and
    sleeps ``interval`` seconds between rounds; it sleeps without polling while nothing is
    in flight. A completed request becomes ``MPI_REQUEST_NULL``, so the owner's later
    ``Testall``/``Waitall`` on it returns at once. Without ``MPI_THREAD_MULTIPLE`` there is
    no thread and only the owner's ``is_completed``/``wait`` drive progress."""

    def __init__(self, MPI, interval=2e-4):
        self._MPI = MPI
        self._interval = interval
        self._lock = threading.Lock()
        self._entries = []
        self._wake = threading.Event()
        self._thread = None
        self._stop = False
        self._threaded = MPI.Query_thread() >= MPI.THREAD_MULTIPLE

    def submit(self, requests):
        """Starts driving ``requests``; returns the entry to give to ``test``/``take``."""
        entry = _Entry(requests)
        if not self._threaded:
            return entry
        with self._lock:
            self._entries.append(entry)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="rumus-mpi-async", daemon=True)
            self._thread.start()
            # Registered after mpi4py's own exit hook, so it runs first: the thread stops
            # before MPI_Finalize, even with requests never waited for.
            atexit.register(self._shutdown)
        self._wake.set()
        return entry

    def _shutdown(self):
        self._stop = True
        self._wake.set()
        self._thread.join(timeout=5)

    def test(self, entry):
        """One nonblocking test of ``entry`` from the owner's thread; True once complete
        (raises the MPI error the helper thread met, if any)."""
        with self._lock:
            if not entry.done and self._MPI.Request.Testall(entry.requests):
                self._finished(entry)
        if entry.error is not None:
            raise entry.error
        return entry.done

    def take(self, entry):
        """Stops driving ``entry``: its requests are the owner's alone afterwards (to
        ``Waitall`` on). Returns whether it had completed."""
        with self._lock:
            if not entry.done:
                try:
                    self._entries.remove(entry)
                except ValueError:
                    pass
        if entry.error is not None:
            raise entry.error
        return entry.done

    def _finished(self, entry):
        # Under the lock.
        entry.done = True
        try:
            self._entries.remove(entry)
        except ValueError:
            pass

    def _loop(self):
        testall = self._MPI.Request.Testall
        while True:
            self._wake.wait()
            if self._stop:
                return
            with self._lock:
                for entry in list(self._entries):
                    try:
                        complete = testall(entry.requests)
                    except Exception as e:  # an MPI error: the owner raises it
                        entry.error, complete = e, True
                    if complete:
                        self._finished(entry)
                idle = not self._entries
                if idle:
                    self._wake.clear()
            if not idle:
                time.sleep(self._interval)


class Work:
    """The handle an ``async_op=True`` call (and ``isend``/``irecv``) returns: ``wait()``
    blocks until the operation finished (and its result is in the output tensors),
    ``is_completed()`` polls. A helper thread drives the operation while it is in flight
    (``Background``), so it advances during the caller's computation although
    this MPI has no asynchronous progress of its own."""

    def __init__(self, requests, finish=()):
        self._requests = list(requests)
        self._finish = list(finish)
        self._done = False
        self._entry = _background().submit(self._requests)

    def _complete(self):
        for fn in self._finish:
            fn()
        self._finish = []
        self._done = True

    def is_completed(self):
        if not self._done and _background().test(self._entry):
            self._complete()
        return self._done

    def wait(self, timeout=None):
        """Blocks until the operation finished. With ``timeout`` (a timedelta or seconds) it
        polls and raises RuntimeError when the operation is still running then (the
        operation stays in flight: wait again, or end the job).

        Args:
            timeout (timedelta or float, optional): the longest wait.
        """
        if self._done:
            return True
        background = _background()
        if timeout is not None:
            seconds = timeout.total_seconds() if isinstance(timeout, timedelta) else timeout
            deadline = time.monotonic() + float(seconds)
            while not background.test(self._entry):
                if time.monotonic() > deadline:
                    raise RuntimeError(
                        f"Work.wait: the operation did not complete within {seconds} s"
                    )
                time.sleep(0.0005)
        elif not background.take(self._entry):
            with _watchdog.watch("wait() on an async operation"):
                background._MPI.Request.Waitall(self._requests)
        self._complete()
        return True

    def is_success(self):
        return self._done

    def result(self):
        self.wait()
        return []


_engine = []


def _background():
    """The process's Background (made on first use: MPI is initialized by then)."""
    if not _engine:
        from mpi4py import MPI

        _engine.append(Background(MPI))
    return _engine[0]
