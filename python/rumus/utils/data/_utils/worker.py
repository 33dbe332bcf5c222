"""What runs inside a DataLoader worker (a thread or a process): fetching
batches, the worker loop, and ``get_worker_info``."""

import os
import pickle
import queue
import random
import sys
import threading
import traceback

import numpy as np

from .... import _rumus

__all__ = ["WorkerInfo", "get_worker_info"]

# How often a waiting worker or loader wakes up to check for shutdown or dead peers (seconds).
POLL_INTERVAL = 0.2

_local = threading.local()  # WorkerInfo of a worker thread
_process_info = None  # WorkerInfo of a worker process, seen by all its threads


class WorkerInfo:
    """Read-only facts about the current DataLoader worker: ``id``,
    ``num_workers``, ``seed`` and ``dataset`` (a copy, in a worker process;
    the loader's own object, in a worker thread).

    Args:
        **kwargs: the facts (id, num_workers, seed, dataset).
    """

    def __init__(self, **kwargs):
        for k, v in kwargs.items():
            object.__setattr__(self, k, v)
        object.__setattr__(self, "_keys", tuple(kwargs))

    def __setattr__(self, key, value):
        raise RuntimeError(f"Cannot assign attributes to {type(self).__name__} objects")

    def __repr__(self):
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self._keys)
        return f"{type(self).__name__}({fields})"


def get_worker_info():
    """The :class:`WorkerInfo` of the DataLoader worker this code runs in, or
    ``None`` in the main process (or any thread that is not a worker).

    An :class:`IterableDataset` calls it in ``__iter__`` to give each worker
    its own share of the stream."""
    info = getattr(_local, "info", None)
    return info if info is not None else _process_info


class DatasetKind:
    Map = 0
    Iterable = 1


class IterableStop:
    """A worker's answer when its copy of an IterableDataset is exhausted."""

    def __init__(self, worker_id):
        self.worker_id = worker_id


class ResumeIteration:
    """Tells a persistent worker that a new epoch starts (and is echoed back)."""


class _KeyErrorMessage(str):
    # KeyError's str() is the repr of its argument; this keeps the traceback readable.
    def __repr__(self):
        return self


class ExceptionWrapper:
    """An exception caught in a worker, with its traceback as text (it crosses process
    boundaries)."""

    def __init__(self, where):
        exc_type, exc, tb = sys.exc_info()
        self.exc_type = exc_type
        self.msg = f"Caught {exc_type.__name__} {where}.\nOriginal " + "".join(
            traceback.format_exception(exc_type, exc, tb)
        )

    def reraise(self):
        msg = _KeyErrorMessage(self.msg) if self.exc_type is KeyError else self.msg
        try:
            exc = self.exc_type(msg)
        except Exception:
            # The exception type can't be built from one message: keep the message.
            raise RuntimeError(msg) from None
        raise exc


class _MapFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn

    def fetch(self, index):
        if not self.auto_collation:
            return self.collate_fn(self.dataset[index])
        getitems = getattr(self.dataset, "__getitems__", None)
        data = getitems(index) if callable(getitems) else [self.dataset[i] for i in index]
        return self.collate_fn(data)


class _IterableFetcher:
    def __init__(self, dataset, auto_collation, collate_fn, drop_last):
        self.it = iter(dataset)
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.ended = False

    def fetch(self, index):
        """The next batch (``index`` is only a count); StopIteration once the stream is done."""
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            return self.collate_fn(next(self.it))
        data = []
        for _ in index:
            try:
                data.append(next(self.it))
            except StopIteration:
                self.ended = True
                break
        if not data or (self.drop_last and len(data) < len(index)):
            raise StopIteration
        return self.collate_fn(data)


def make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last):
    cls = _MapFetcher if kind == DatasetKind.Map else _IterableFetcher
    return cls(dataset, auto_collation, collate_fn, drop_last)


def _seed_process(seed, worker_id):
    random.seed(seed)
    _rumus.manual_seed(seed)
    np.random.seed(np.random.SeedSequence([worker_id, seed]).generate_state(4))


def _send(result_queue, idx, data, is_process, where):
    """Puts ``(idx, data)`` on the result queue; a worker process sends ``data``
    pickled, so that a batch that can't be pickled becomes an error the main
    process sees instead of a batch lost in the queue's feeder thread."""
    if is_process:
        try:
            data = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
        except Exception:
            if isinstance(data, ExceptionWrapper):
                data.exc_type = RuntimeError  # its own exception type is what can't be pickled
            else:
                data = ExceptionWrapper(where + " (sending its batch to the main process)")
            data = pickle.dumps(data, protocol=pickle.HIGHEST_PROTOCOL)
    result_queue.put((idx, data))


def worker_loop(
    kind,
    dataset,
    index_queue,
    result_queue,
    done_event,
    auto_collation,
    collate_fn,
    drop_last,
    base_seed,
    init_fn,
    worker_id,
    num_workers,
    is_process,
):
    """Answers ``(idx, index)`` tasks with ``(idx, batch)`` until it gets ``None``.

    A worker process reseeds Python's, NumPy's and rumus's global generators
    with ``base_seed + worker_id``; worker threads share those generators with
    the main thread, so they leave them alone."""
    global _process_info
    seed = base_seed + worker_id
    where = f"in DataLoader worker {'process' if is_process else 'thread'} {worker_id}"
    info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)
    _local.info = info
    parent = os.getppid() if is_process else None
    if is_process:
        _process_info = info
        _seed_process(seed, worker_id)

    init_error = None
    fetcher = None
    try:
        if init_fn is not None:
            init_fn(worker_id)
        fetcher = make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
    except Exception:
        init_error = ExceptionWrapper(where)
    init_ok = init_error is None
    ended = False
    try:
        while True:
            try:
                task = index_queue.get(timeout=POLL_INTERVAL)
            except queue.Empty:
                # The None sent at shutdown can be lost: when the loader's iterator is
                # collected with its queues, their feeder threads stop first.
                if done_event.is_set() or (is_process and os.getppid() != parent):
                    return
                continue
            if task is None:
                return
            if isinstance(task, ResumeIteration):
                ended = False
                if init_ok:
                    try:
                        fetcher = make_fetcher(kind, dataset, auto_collation, collate_fn, drop_last)
                    except Exception:
                        fetcher, init_error = None, ExceptionWrapper(where)
                _send(result_queue, task, None, is_process, where)
                continue
            if done_event.is_set() or ended:
                continue  # shutting down, or a finished stream: tasks get no answer
            idx, index = task
            if fetcher is None:
                data = init_error  # every task reports why this worker could not start
            else:
                try:
                    data = fetcher.fetch(index)
                except StopIteration:
                    if kind != DatasetKind.Iterable:
                        data = ExceptionWrapper(where)
                    else:
                        ended = True
                        data = IterableStop(worker_id)
                except Exception:
                    data = ExceptionWrapper(where)
            _send(result_queue, idx, data, is_process, where)
            del data
    except KeyboardInterrupt:
        pass  # the main process handles Ctrl-C
    finally:
        if is_process and done_event.is_set():
            # Nobody reads what is still buffered; don't block the exit on flushing it.
            result_queue.cancel_join_thread()
            result_queue.close()
