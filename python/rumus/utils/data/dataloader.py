"""DataLoader: batches from a dataset, in the main thread or in worker threads or processes."""

import itertools
import multiprocessing
import os
import pickle
import queue
import threading
import time
import warnings
from collections.abc import Callable, Iterable, Iterator
from typing import Any, Optional, Union

from ... import _rumus
from ._utils import worker as _worker
from ._utils.collate import default_collate, default_convert
from ._utils.worker import (
    DatasetKind,
    ExceptionWrapper,
    IterableStop,
    ResumeIteration,
    get_worker_info,
)
from .dataset import Dataset, IterableDataset
from .sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader", "default_collate", "default_convert", "get_worker_info"]

# How long shutdown waits for each worker before giving up on it (seconds).
_JOIN_TIMEOUT = 5.0


class _InfiniteConstantSampler(Sampler):
    """The sampler of an IterableDataset: the dataset ignores its indices."""

    def __iter__(self):
        while True:
            yield None


class DataLoader:
    """Iterates over ``dataset`` in batches, with PyTorch's arguments and semantics.

    Automatic batching: the ``batch_sampler`` (by default a
    :class:`BatchSampler` over ``sampler`` with ``batch_size`` and
    ``drop_last``) gives index lists, and ``collate_fn`` (default
    :func:`default_collate`) turns each list of samples into a batch;
    ``batch_size=None`` turns batching off and ``collate_fn`` (default
    :func:`default_convert`) sees single samples. ``shuffle=True`` uses a
    :class:`RandomSampler` with ``generator`` (a :class:`rumus.Generator`;
    without one the order follows the global seed of :func:`rumus.manual_seed`).

    ``num_workers > 0`` loads batches in the background, each worker fetching
    and collating whole batches, with ``prefetch_factor`` batches in flight per
    worker; batches come out in sampler order unless ``in_order=False``.
    Unlike PyTorch, **workers are threads by default**: rumus kernels release
    the GIL, threads start instantly and share the dataset without pickling.
    Worker threads do not reseed the global random generators (they share them
    with the main thread); for per-worker randomness use
    ``get_worker_info().seed`` with a :class:`rumus.Generator`. Passing
    ``multiprocessing_context`` ('fork', 'spawn', 'forkserver' or a context
    object) makes the workers processes, as in PyTorch: the dataset is
    copied to each worker, batches come back pickled, and each worker seeds
    Python's, NumPy's and rumus's global generators with
    ``base_seed + worker_id``. A 'fork'ed worker runs rumus kernels on one
    thread (the parent's thread pool does not survive fork).

    An exception in a worker is raised again in the main process with the
    worker's id and traceback. ``timeout`` (seconds, 0 = wait forever) bounds
    the wait for each batch. Workers stop when the iterator is exhausted or
    deleted (or, with ``persistent_workers=True``, when the loader is).
    ``pin_memory`` has no effect yet (rumus has only the CPU device).

    Args:
        dataset (Dataset): the dataset.
        batch_size (int): the size of each batch.
        shuffle (bool, optional): reshuffle the data every epoch.
        sampler (Sampler or Iterable): yields indices.
        batch_sampler (Sampler, optional): yields lists of indices (excludes batch_size, shuffle,
            sampler, drop_last).
        num_workers (int): loading threads (0: load in the main thread); see
            ``multiprocessing_context``.
        collate_fn (callable, optional): merges a list of samples into a batch.
        pin_memory (bool): accepted for compatibility.
        drop_last (bool): drop the last incomplete batch.
        timeout (float): seconds to wait for a batch from the workers (0: forever).
        worker_init_fn (callable, optional): called with the worker id in each worker.
        multiprocessing_context (str or context, optional): use worker processes started this way
            (``'spawn'``, ``'fork'``...).
        generator (Generator, optional): the random generator.
        prefetch_factor (int, optional): batches loaded in advance per worker.
        persistent_workers (bool): keep the workers alive between epochs.
        pin_memory_device (str): accepted for compatibility.
        in_order (bool): yield batches in order (False: as workers finish them).
    """

    _frozen = (
        "batch_size",
        "batch_sampler",
        "sampler",
        "drop_last",
        "dataset",
        "persistent_workers",
    )

    def __init__(
        self,
        dataset: Union[Dataset, Iterable[Any]],
        batch_size: Optional[int] = 1,
        shuffle: Optional[bool] = None,
        sampler: Union[Sampler, Iterable[Any], None] = None,
        batch_sampler: Union[Sampler, Iterable[list[Any]], None] = None,
        num_workers: int = 0,
        collate_fn: Optional[Callable[[list[Any]], Any]] = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Optional[Callable[[int], None]] = None,
        multiprocessing_context: Any = None,
        generator: Optional[_rumus.Generator] = None,
        *,
        prefetch_factor: Optional[int] = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if num_workers < 0:
            raise ValueError(
                "num_workers option should be non-negative; use num_workers=0 to disable "
                "multiprocessing."
            )
        if timeout < 0:
            raise ValueError("timeout option should be non-negative")
        if num_workers == 0 and prefetch_factor is not None:
            raise ValueError(
                "prefetch_factor option could only be specified in multiprocessing.let "
                "num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and prefetch_factor <= 0:
            raise ValueError(
                f"prefetch_factor option should be a positive integer, but got {prefetch_factor}"
            )
        if persistent_workers and num_workers == 0:
            raise ValueError("persistent_workers option needs num_workers > 0")

        if isinstance(dataset, IterableDataset):
            kind = DatasetKind.Iterable
            if shuffle not in {False, None}:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified shuffle option, "
                    f"but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified sampler option, "
                    f"but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise ValueError(
                    f"DataLoader with IterableDataset: expected unspecified batch_sampler option, "
                    f"but got batch_sampler={batch_sampler}"
                )
        else:
            kind = DatasetKind.Map
            shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise ValueError("sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise ValueError(
                    "batch_sampler option is mutually exclusive with batch_size, shuffle, sampler, "
                    "and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise ValueError(
                "batch_size=None option disables auto-batching and is mutually exclusive with "
                "drop_last"
            )

        if sampler is None:
            if kind == DatasetKind.Iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        if pin_memory:
            warnings.warn(
                "pin_memory=True has no effect: rumus has no accelerator device to pin memory for "
                "yet."
            )

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = pin_memory
        self.pin_memory_device = pin_memory_device
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        self.generator = generator
        self.collate_fn = (
            collate_fn
            if collate_fn is not None
            else (default_collate if batch_sampler is not None else default_convert)
        )
        self.persistent_workers = persistent_workers
        self.in_order = in_order
        self.multiprocessing_context = multiprocessing_context
        self._dataset_kind = kind
        self._iterator = None
        self._initialized = True

    def __setattr__(self, name, value):
        if getattr(self, "_initialized", False) and name in self._frozen:
            raise ValueError(
                f"{name} attribute should not be set after {type(self).__name__} is initialized"
            )
        super().__setattr__(name, value)

    @property
    def multiprocessing_context(self):
        """``None`` (worker threads) or the multiprocessing context of the worker processes."""
        return self._mp_context

    @multiprocessing_context.setter
    def multiprocessing_context(self, ctx):
        if ctx is not None:
            if self.num_workers <= 0:
                raise ValueError(
                    "multiprocessing_context can only be used with multi-process loading "
                    f"(num_workers > 0), but got num_workers={self.num_workers}"
                )
            if isinstance(ctx, str):
                methods = multiprocessing.get_all_start_methods()
                if ctx not in methods:
                    raise ValueError(
                        f"multiprocessing_context option should specify a valid start method in "
                        f"{methods!r}, but got multiprocessing_context={ctx!r}"
                    )
                ctx = multiprocessing.get_context(ctx)
            if not isinstance(ctx, multiprocessing.context.BaseContext):
                raise TypeError(
                    "multiprocessing_context option should be a valid context object or a string "
                    f"specifying the start method, but got multiprocessing_context={ctx}"
                )
        self._mp_context = ctx

    @property
    def _auto_collation(self):
        return self.batch_sampler is not None

    @property
    def _index_sampler(self):
        return self.batch_sampler if self._auto_collation else self.sampler

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return _SingleProcessIter(self)
        if not self.persistent_workers:
            return _WorkerIter(self)
        if self._iterator is None:
            self._iterator = _WorkerIter(self)
        else:
            self._iterator._reset(self)
        return self._iterator

    def __len__(self) -> int:
        if self._dataset_kind == DatasetKind.Iterable:
            n = len(self.dataset)  # TypeError when the stream has no length, as in PyTorch
            if self.batch_size is not None:
                return n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


class _BaseIter:
    def __init__(self, loader):
        self._dataset = loader.dataset
        self._kind = loader._dataset_kind
        self._index_sampler = loader._index_sampler
        self._auto_collation = loader._auto_collation
        self._drop_last = loader.drop_last
        self._collate_fn = loader.collate_fn
        self._timeout = loader.timeout
        self._reset(loader)

    def _reset(self, loader):
        self._sampler_iter = iter(self._index_sampler)
        # Drawn every epoch even without workers (as PyTorch does), so that a shared
        # generator gives the same shuffle whatever num_workers is.
        self._base_seed = _rumus.randint(0, 2**62, (), generator=loader.generator).item()

    def _next_index(self):
        return next(self._sampler_iter)

    def __iter__(self):
        return self

    def __len__(self):
        return len(self._index_sampler)


class _SingleProcessIter(_BaseIter):
    def __init__(self, loader):
        super().__init__(loader)
        self._fetcher = _worker.make_fetcher(
            self._kind, self._dataset, self._auto_collation, self._collate_fn, self._drop_last
        )

    def __next__(self):
        return self._fetcher.fetch(self._next_index())


class _WorkerIter(_BaseIter):
    """Hands index lists to workers round-robin and delivers their batches.

    Task ``i`` (the i-th index list) goes to a worker's own index queue; all
    results come back on one queue as ``(i, batch)``. ``_task_info[i]`` is
    ``(worker,)`` while task i is in flight and ``(worker, batch)`` once it
    arrived early; ``_rcvd_idx`` is the next task to deliver."""

    def __init__(self, loader):
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor
        self._persistent = loader.persistent_workers
        self._in_order = loader.in_order
        self._shutdown = True  # until the workers exist
        super().__init__(loader)  # draws the base seed the workers need
        ctx = loader.multiprocessing_context
        self._is_process = ctx is not None
        if self._is_process:
            self._done_event = ctx.Event()
            self._result_queue = ctx.Queue()
            self._index_queues = [ctx.Queue() for _ in range(self._num_workers)]
            spawn = ctx.Process
        else:
            self._done_event = threading.Event()
            self._result_queue = queue.Queue()
            self._index_queues = [queue.Queue() for _ in range(self._num_workers)]
            spawn = threading.Thread
        self._workers = []
        self._owner_pid = os.getpid()
        self._shutdown = False
        for wid in range(self._num_workers):
            args = (
                self._kind,
                self._dataset,
                self._index_queues[wid],
                self._result_queue,
                self._done_event,
                self._auto_collation,
                self._collate_fn,
                self._drop_last,
                self._base_seed,
                loader.worker_init_fn,
                wid,
                self._num_workers,
                self._is_process,
            )
            w = spawn(
                target=_worker.worker_loop,
                args=args,
                daemon=True,
                name=f"rumus DataLoader worker {wid}",
            )
            w.start()
            self._workers.append(w)
        self._start_epoch()

    def _reset(self, loader):
        super()._reset(loader)
        if getattr(self, "_workers", None):
            # A new epoch on persistent workers: each one echoes the resume marker after
            # everything it still sends from the last epoch, which is dropped here.
            self._workers_status = [True] * self._num_workers
            for q in self._index_queues:
                q.put(ResumeIteration())
            waiting = self._num_workers
            while waiting:
                idx, _ = self._get_data()
                waiting -= isinstance(idx, ResumeIteration)
            self._start_epoch()

    def _start_epoch(self):
        self._send_idx = 0
        self._rcvd_idx = 0
        self._task_info = {}
        self._outstanding = 0
        self._workers_status = [True] * self._num_workers
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        for _ in range(self._prefetch * self._num_workers):
            self._try_put_index()

    def _try_put_index(self):
        if self._outstanding >= self._prefetch * self._num_workers:
            return
        try:
            index = self._next_index()
        except StopIteration:
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._workers_status[wid]:
                break
        else:
            return  # every worker's stream has ended
        self._index_queues[wid].put((self._send_idx, index))
        self._task_info[self._send_idx] = (wid,)
        self._outstanding += 1
        self._send_idx += 1

    def _get_data(self):
        """The next ``(idx, data)`` from the result queue, checking for timeout and dead workers."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _worker.POLL_INTERVAL
            if deadline is not None:
                wait = min(wait, deadline - time.monotonic())
                if wait <= 0:
                    self._shutdown_workers()
                    raise RuntimeError(f"DataLoader timed out after {self._timeout} seconds")
            try:
                idx, data = self._result_queue.get(timeout=wait)
            except queue.Empty:
                self._check_workers_alive()
                continue
            return idx, (pickle.loads(data) if self._is_process else data)

    def _check_workers_alive(self):
        dead = [
            w
            for wid, w in enumerate(self._workers)
            if self._workers_status[wid] and not w.is_alive()
        ]
        if dead:
            self._shutdown_workers()
            if self._is_process:
                pids = ", ".join(str(w.pid) for w in dead)
                raise RuntimeError(f"DataLoader worker (pid(s) {pids}) exited unexpectedly")
            raise RuntimeError(
                f"DataLoader worker thread(s) {', '.join(w.name for w in dead)} exited unexpectedly"
            )

    def _stop_worker(self, wid):
        """Worker ``wid``'s stream has ended: no more tasks for it (and, unless persistent, let it
        exit)."""
        self._workers_status[wid] = False
        if not self._persistent:
            self._index_queues[wid].put(None)

    def __next__(self):
        if self._shutdown:
            raise StopIteration
        while True:
            # Move past tasks already delivered and tasks that will never be answered
            # (sent to a worker after its stream ended).
            while self._rcvd_idx < self._send_idx:
                info = self._task_info.get(self._rcvd_idx)
                if info is not None and (len(info) == 2 or self._workers_status[info[0]]):
                    break
                if info is not None:
                    del self._task_info[self._rcvd_idx]
                    self._outstanding -= 1
                    self._try_put_index()
                self._rcvd_idx += 1
            else:
                if not self._persistent:
                    self._shutdown_workers()
                raise StopIteration
            info = self._task_info[self._rcvd_idx]
            if len(info) == 2:
                del self._task_info[self._rcvd_idx]
                return self._deliver(info[1])
            idx, data = self._get_data()
            self._outstanding -= 1
            if isinstance(data, IterableStop):
                del self._task_info[idx]
                self._stop_worker(data.worker_id)
                self._try_put_index()
            elif idx == self._rcvd_idx or not self._in_order:
                del self._task_info[idx]
                return self._deliver(data)
            else:
                self._task_info[idx] += (data,)

    def _deliver(self, data):
        self._try_put_index()
        if isinstance(data, ExceptionWrapper):
            data.reraise()
        return data

    def _shutdown_workers(self):
        if self._shutdown or os.getpid() != self._owner_pid:
            return  # a copy inherited by a forked worker owns nothing
        self._shutdown = True
        self._done_event.set()
        for q in self._index_queues:
            q.put(None)
        for w in self._workers:
            w.join(timeout=_JOIN_TIMEOUT)
            if self._is_process and w.is_alive():
                w.terminate()
                w.join()
        if self._is_process:
            for q in self._index_queues + [self._result_queue]:
                q.cancel_join_thread()
                q.close()

    def __del__(self):
        self._shutdown_workers()
