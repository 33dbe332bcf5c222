"""The GPUs (any Vulkan, Metal or DX12 adapters, through wgpu).

The adapters are numbered ``gpu:0`` ... ``gpu:N-1`` in a stable order (discrete first, then
integrated, virtual and software ones; ties by PCI bus id and name), the same in every
process of a machine. One process can use several of them, as with ``cuda:N``: each device
gets its own wgpu device, queue, kernel caches and memory pool when it is first used, and an
op on tensors of two devices raises. ``gpu`` without an index is the current device: gpu:0,
or the one chosen by :func:`set_device` (at any time), by ``RUMUS_GPU_ADAPTER`` (an index, or
a part of the adapter's name) or, under ``rumus.distributed.init_process_group``, by the
process's local rank. Copies between two GPUs are staged through the host.

``RUMUS_GPU_VIRTUAL_DEVICES=N`` (set before the first GPU call; for development and tests)
shows each adapter as N logical devices, each its own wgpu device on that adapter, so code
for several GPUs can be tested on a machine with one.

Work is queued and submitted in batches; reading a value (``.item()``, ``.cpu()``) or
``synchronize()`` waits. A read submits the queued batch only when that batch writes the
tensor read, waits only for its own copy, and keeps the host copy until the next write on
the GPU, so reading an unchanged tensor again costs no transfer (:func:`transfer_stats`,
:func:`queue_stats`). :func:`profile` times every kernel with GPU timestamps;
:class:`GPUGraph` and :func:`graph` capture a step once and replay it.
"""

import contextlib

from . import _rumus

__all__ = [
    "is_available",
    "device_count",
    "current_device",
    "set_device",
    "get_device_name",
    "adapter_info",
    "synchronize",
    "memory_allocated",
    "memory_reserved",
    "max_memory_allocated",
    "reset_peak_memory_stats",
    "empty_cache",
    "transfer_stats",
    "reset_transfer_stats",
    "queue_stats",
    "reset_queue_stats",
    "profile",
    "GPUProfile",
    "GPUGraph",
    "graph",
    "kernel_stats",
    "reset_kernel_stats",
]


def is_available():
    """Whether a GPU adapter was found and its device created.

    Returns:
        bool: True if a GPU adapter is usable.
    """
    return _rumus._gpu_is_available()


def device_count():
    """The number of GPUs (``gpu:0`` ... ``gpu:N-1``; adapters times
    ``RUMUS_GPU_VIRTUAL_DEVICES``); enumerating them starts no device.

    Returns:
        int: the number of devices (0 without any).
    """
    return len(_rumus._gpu_adapter_names())


def _index(device):
    """The adapter index ``device`` names (None: the current device), checked to exist."""
    if device is None:
        return current_device()
    if isinstance(device, bool):
        raise TypeError(f"device must be an int, a str or a rumus.device, got {device!r}")
    if isinstance(device, int):
        index = device
    else:
        d = _rumus.device(device) if isinstance(device, str) else device
        if not isinstance(d, _rumus.device) or d.type not in ("gpu", "wgpu"):
            raise ValueError(f"Expected a gpu device, but got: {device!r}")
        if d.index is None:
            return current_device()
        index = d.index
    names = _rumus._gpu_adapter_names()
    if not 0 <= index < len(names):
        found = ", ".join(f"gpu:{i}: {n}" for i, n in enumerate(names)) or "none"
        raise RuntimeError(
            f"device gpu:{index} is not available: {len(names)} GPU adapter(s) found ({found})"
        )
    return index


def current_device():
    """The index of the current GPU: the one ``"gpu"`` without an index means.

    Returns:
        int: the device index.

    Raises:
        RuntimeError: when there is no adapter.
    """
    index = _rumus._gpu_current_device()
    if index is None:
        raise RuntimeError(f"no GPU available: {_rumus._gpu_unavailable_reason()}")
    return index


def set_device(device):
    """Selects the current GPU: the one ``"gpu"`` without an index means from now on
    (like ``torch.cuda.set_device``; it may change at any time).

    Args:
        device (int, str or device): ``1``, ``"gpu:1"`` or ``rumus.device("gpu", 1)``.

    Raises:
        RuntimeError: when the device does not exist.
    """
    _rumus._gpu_set_device(_index(device))


def adapter_info(device=None):
    """A GPU's adapter name, backend, type, vendor/device ids, driver and limits.

    Args:
        device (int, str or device, optional): the GPU (default: the current one).

    Returns:
        dict: ``name``, ``backend``, ``device_type``, ``vendor``, ``device``, ``driver``,
            ``driver_info``, ``shader_f16``, ``max_buffer_size``,
            ``max_storage_buffer_binding_size``, ``cooperative_matrix`` (the
            tensor-core configurations the adapter offers, e.g. ``"16x16x16 f16->f32"``)
            and ``cooperative_matrix_kernel`` (the one float16 matmul uses, None for
            the portable kernels: no tensor cores, or ``RUMUS_GPU_DISABLE_COOP=1``).

    Raises:
        RuntimeError: when no GPU is available (naming why).
    """
    if not is_available():
        raise RuntimeError(f"no GPU available: {_rumus._gpu_unavailable_reason()}")
    return dict(_rumus._gpu_adapter_info(_index(device)))


def get_device_name(device=None):
    """A GPU's adapter name (enumerating starts no device).

    Args:
        device (int, str or device, optional): the adapter (default: the current one).

    Returns:
        str: the name, for example "NVIDIA H100 80GB HBM3".
    """
    return _rumus._gpu_adapter_names()[_index(device)]


def synchronize(device=None):
    """Waits until the GPU has finished all queued work.

    Args:
        device (int, str or device, optional): the GPU (default: the current one).
    """
    _rumus._gpu_synchronize(_index(device))


def memory_allocated(device=None):
    """Bytes held by live GPU tensors (their pool buckets).

    Args:
        device (int, str or device, optional): the GPU (default: the current one).

    Returns:
        int: bytes.
    """
    return _rumus._gpu_memory_stats(_index(device))[0]


def memory_reserved(device=None):
    """Bytes of GPU buffers owned by rumus: live ones plus the pool's cache.

    Args:
        device (int, str or device, optional): the GPU (default: the current one).

    Returns:
        int: bytes.
    """
    return _rumus._gpu_memory_stats(_index(device))[1]


def max_memory_allocated(device=None):
    """The peak of :func:`memory_allocated` since start-up or the last reset.

    Args:
        device (int, str or device, optional): the GPU (default: the current one).

    Returns:
        int: bytes.
    """
    return _rumus._gpu_memory_stats(_index(device))[2]


def reset_peak_memory_stats(device=None):
    """Resets the peak that :func:`max_memory_allocated` reports to the current allocation.

    Args:
        device (int, str or device, optional): the GPU (default: the current one).
    """
    _rumus._gpu_reset_peak_memory_stats(_index(device))


def empty_cache(device=None):
    """Frees the pool's cached buffers (live tensors keep theirs).

    Args:
        device (int, str or device, optional): the GPU (default: the current one).
    """
    _rumus._gpu_empty_cache(_index(device))


def transfer_stats():
    """Data moved between host and GPU since the last reset:
    ``{"to_device_bytes", "to_device_copies", "to_host_bytes", "to_host_copies",
    "to_host_cached"}``. ``to_host_cached`` counts reads served from the host copy an
    earlier read kept (no transfer: the tensor was not written since).

    Returns:
        dict[str, int]: the byte and copy counts each way, and the cached reads.
    """
    a, b, c, d = _rumus._gpu_transfer_stats()
    return {
        "to_device_bytes": a,
        "to_device_copies": b,
        "to_host_bytes": c,
        "to_host_copies": d,
        "to_host_cached": _rumus._gpu_queue_stats()["to_host_cached"],
    }


def reset_transfer_stats():
    """Zeroes the counters :func:`transfer_stats` reports."""
    _rumus._gpu_reset_transfer_stats()
    _rumus._gpu_reset_queue_stats()


def queue_stats():
    """Counters of the GPU queue since the last reset: ``submits`` (queue submissions),
    ``dispatches`` (kernel launches), ``reads`` (host reads that copied data back),
    ``read_flushes`` (those that had to submit the queued batch because it wrote the
    tensor read) and ``to_host_cached`` (reads served from a kept host copy).

    Returns:
        dict[str, int]: the counters.
    """
    return dict(_rumus._gpu_queue_stats())


def reset_queue_stats():
    """Zeroes the counters :func:`queue_stats` reports (and ``to_host_cached``)."""
    _rumus._gpu_reset_queue_stats()


class GPUProfile:
    """GPU time of every kernel dispatched inside a :func:`profile` block, measured with
    timestamp queries. Filled when the block exits.

    Attributes:
        events (list[tuple[str, float]]): ``(kernel, milliseconds)`` per dispatch, in
            submission order; a kernel is named ``"shader.entry_point"``.
    """

    def __init__(self):
        self.events = []

    def total_ms(self):
        """GPU milliseconds of all profiled dispatches.

        Returns:
            float: the sum of the events' times.
        """
        return sum(ms for _, ms in self.events)

    def by_op(self, group_by="kernel"):
        """The events grouped, most time first.

        Args:
            group_by (str): ``"kernel"`` (``shader.entry_point``) or ``"shader"`` (the
                op family's shader file).

        Returns:
            list[dict]: one ``{"name", "count", "total_ms", "mean_ms", "percent"}`` per group.

        Raises:
            ValueError: for another ``group_by``.
        """
        if group_by not in ("kernel", "shader"):
            raise ValueError(f"group_by must be 'kernel' or 'shader', got {group_by!r}")
        groups = {}
        for name, ms in self.events:
            key = name if group_by == "kernel" else name.split(".", 1)[0]
            count, total = groups.get(key, (0, 0.0))
            groups[key] = (count + 1, total + ms)
        whole = self.total_ms() or 1.0
        rows = [
            {
                "name": k,
                "count": c,
                "total_ms": t,
                "mean_ms": t / c,
                "percent": 100.0 * t / whole,
            }
            for k, (c, t) in groups.items()
        ]
        return sorted(rows, key=lambda r: -r["total_ms"])

    def table(self, group_by="kernel", row_limit=None):
        """The grouped times as a text table.

        Args:
            group_by (str): as for :meth:`by_op`.
            row_limit (int, optional): print only this many groups (the slowest).

        Returns:
            str: the table, with a total line.
        """
        rows = self.by_op(group_by)[:row_limit]
        width = max([len(r["name"]) for r in rows] + [len(group_by)])
        lines = [f"{group_by:<{width}}  {'count':>6}  {'total ms':>10}  {'mean ms':>9}  {'%':>6}"]
        for r in rows:
            lines.append(
                f"{r['name']:<{width}}  {r['count']:>6}  {r['total_ms']:>10.3f}  "
                f"{r['mean_ms']:>9.4f}  {r['percent']:>6.1f}"
            )
        lines.append(f"{'total':<{width}}  {len(self.events):>6}  {self.total_ms():>10.3f}")
        return "\n".join(lines)

    def __str__(self):
        return self.table()


@contextlib.contextmanager
def profile():
    """Times every kernel dispatched in the block on the GPU, with timestamp queries.

    While it records, each dispatch runs in a compute pass of its own (so the work is a
    little slower than without it); the times come back when the block exits::

        with rumus.gpu.profile() as prof:
            step()
        print(prof.table())

    Yields:
        GPUProfile: filled with the dispatches' times when the block exits.

    Raises:
        RuntimeError: when the adapter lacks timestamp queries, or a profile is already
            recording.
    """
    _rumus._gpu_profile_start()
    prof = GPUProfile()
    try:
        yield prof
    finally:
        prof.events = [(name, ns / 1e6) for name, ns in _rumus._gpu_profile_stop()]


class GPUGraph:
    """A captured piece of GPU work that can be replayed, like ``torch.cuda.CUDAGraph``.

    Capture it with :func:`graph`; :meth:`replay` then submits the recorded dispatches
    and copies again, with no Python, autograd, pipeline or bind-group work. The tensors
    created during capture keep their memory (the graph owns it) and are rewritten by
    each replay; refill static inputs with ``copy_`` before replaying. Kernel parameters
    (shapes, scalars such as the learning rate, random seeds) are those of the capture.
    Work recorded during capture does not run until :meth:`replay`.
    """

    def __init__(self):
        self._graph = None
        self._capturing = False

    def capture_begin(self):
        """Starts recording GPU work (see :func:`graph`).

        Raises:
            RuntimeError: when this graph or another is already capturing, or holds a
                graph (call :meth:`reset` first).
        """
        if self._graph is not None:
            raise RuntimeError("this GPUGraph already holds a capture: call reset() first")
        _rumus._gpu_graph_begin()
        self._capturing = True

    def capture_end(self):
        """Stops recording; the graph is then ready to :meth:`replay`.

        Raises:
            RuntimeError: when this graph is not capturing.
        """
        if not self._capturing:
            raise RuntimeError("this GPUGraph is not capturing")
        self._capturing = False
        self._graph = _rumus._gpu_graph_end()

    def replay(self):
        """Submits the captured work once (after everything queued before it).

        Raises:
            RuntimeError: when nothing was captured, or a capture is recording.
        """
        if self._graph is None:
            raise RuntimeError("this GPUGraph holds no capture: capture it with rumus.gpu.graph")
        self._graph.replay()

    def reset(self):
        """Drops the captured work and the memory the graph owns."""
        if self._capturing:
            raise RuntimeError("cannot reset a GPUGraph while it captures")
        self._graph = None

    def __len__(self):
        return 0 if self._graph is None else len(self._graph)


@contextlib.contextmanager
def graph(gpu_graph, pool=None, stream=None):
    """Captures the GPU work of the block into ``gpu_graph`` instead of running it, like
    ``torch.cuda.graph``. Run a step eagerly first (kernels compile, optimizer state is
    created) and set gradients to None, then::

        g = rumus.gpu.GPUGraph()
        with rumus.gpu.graph(g):
            loss = loss_fn(model(static_x), static_y)
            loss.backward()
            opt.step()
        static_x.copy_(new_x); g.replay()

    Reading GPU data on the host (``item()``, ``.cpu()``, ``synchronize()``) inside the
    block raises RuntimeError: captured work has not run.

    Args:
        gpu_graph (GPUGraph): the graph to capture into.
        pool: must be None (rumus graphs own their memory).
        stream: must be None (rumus has one GPU queue).

    Yields:
        GPUGraph: ``gpu_graph``.

    Raises:
        TypeError: when ``gpu_graph`` is not a GPUGraph.
        NotImplementedError: for a ``pool`` or ``stream``.
    """
    if not isinstance(gpu_graph, GPUGraph):
        raise TypeError(f"graph() expects a rumus.gpu.GPUGraph, got {type(gpu_graph).__name__}")
    if pool is not None or stream is not None:
        raise NotImplementedError("rumus.gpu.graph supports neither memory pools nor streams")
    gpu_graph.capture_begin()
    try:
        yield gpu_graph
    finally:
        gpu_graph.capture_end()


def kernel_stats():
    """Kernel launches since the last reset: ``{"dispatches", "fused_dispatches",
    "fused_kernels"}``. ``dispatches`` counts every kernel recorded (fused ones included),
    ``fused_dispatches`` the generated kernels that evaluate fused elementwise chains, and
    ``fused_kernels`` the distinct fused kernels compiled since start-up.

    Chains of float32 elementwise ops on the GPU are recorded lazily and run as one generated
    kernel when their result is needed (by another kind of op, a read by the host, an in-place
    write, or :func:`synchronize`). Set ``RUMUS_GPU_FUSION=0`` before start-up to run every op
    as its own kernel.

    Returns:
        dict[str, int]: the counters.
    """
    a, b, c = _rumus._gpu_kernel_stats()
    return {"dispatches": a, "fused_dispatches": b, "fused_kernels": c}


def reset_kernel_stats():
    """Zeroes the dispatch counters :func:`kernel_stats` reports."""
    _rumus._gpu_reset_kernel_stats()
