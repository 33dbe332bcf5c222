"""The GPUs (any Vulkan, Metal or DX12 adapters, through wgpu).

The adapters are numbered ``gpu:0`` ... ``gpu:N-1`` in a stable order (discrete first, then
integrated, virtual and software ones; ties by PCI bus id and name), the same in every
process of a machine. A process drives one of them, ``gpu`` (its current device): adapter 0,
or the one chosen before the first GPU operation by :func:`set_device`, by moving a tensor
to ``"gpu:<i>"``, by ``RUMUS_GPU_ADAPTER`` (an index, or a part of the adapter's name) or,
under ``rumus.distributed.init_process_group``, by the process's local rank. Several GPUs are
used by several processes (one per GPU, as ``mpirun`` starts them), not by one process.

Work is queued and submitted in batches; reading a value (``.item()``, ``.cpu()``) or
``synchronize()`` waits.
"""

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
    """The number of GPU adapters (``gpu:0`` ... ``gpu:N-1``); enumerating them starts no
    device.

    Returns:
        int: the number of adapters (0 without any).
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


def _check_device(device):
    """The statistics below are of the GPU this process drives."""
    index = _index(device)
    if index != current_device():
        raise RuntimeError(
            f"device gpu:{index} is not this process's GPU (gpu:{current_device()}): rumus "
            "drives one GPU per process"
        )


def current_device():
    """The index of the GPU this process drives (or will drive when it starts).

    Returns:
        int: the adapter index.

    Raises:
        RuntimeError: when there is no adapter.
    """
    index = _rumus._gpu_current_device()
    if index is None:
        raise RuntimeError(f"no GPU available: {_rumus._gpu_unavailable_reason()}")
    return index


def set_device(device):
    """Selects the GPU this process drives. It must come before the first GPU operation
    (rumus drives one GPU per process); naming the running GPU again is allowed.

    Args:
        device (int, str or device): ``1``, ``"gpu:1"`` or ``rumus.device("gpu", 1)``.

    Raises:
        RuntimeError: when the adapter does not exist, or the GPU already runs on another.
    """
    _rumus._gpu_set_device(_index(device))


def adapter_info():
    """The adapter's name, backend, type, vendor/device ids, driver and limits.

    Returns:
        dict: ``name``, ``backend``, ``device_type``, ``vendor``, ``device``, ``driver``,
            ``driver_info``, ``shader_f16``, ``max_buffer_size`` and
            ``max_storage_buffer_binding_size``.

    Raises:
        RuntimeError: when no GPU is available (naming why).
    """
    if not is_available():
        raise RuntimeError(f"no GPU available: {_rumus._gpu_unavailable_reason()}")
    return dict(_rumus._gpu_adapter_info())


def get_device_name(device=None):
    """An adapter's name (of any adapter: it need not be the one this process drives).

    Args:
        device (int, str or device, optional): the adapter (default: the current one).

    Returns:
        str: the name, for example "NVIDIA H100 80GB HBM3".
    """
    return _rumus._gpu_adapter_names()[_index(device)]


def synchronize(device=None):
    """Waits until the GPU has finished all queued work.

    Args:
        device (int, str or device, optional): must be this process's GPU (default).
    """
    _check_device(device)
    _rumus._gpu_synchronize()


def memory_allocated(device=None):
    """Bytes held by live GPU tensors (their pool buckets).

    Args:
        device (int, str or device, optional): must be this process's GPU (default).

    Returns:
        int: bytes.
    """
    _check_device(device)
    return _rumus._gpu_memory_stats()[0]


def memory_reserved(device=None):
    """Bytes of GPU buffers owned by rumus: live ones plus the pool's cache.

    Args:
        device (int, str or device, optional): must be this process's GPU (default).

    Returns:
        int: bytes.
    """
    _check_device(device)
    return _rumus._gpu_memory_stats()[1]


def max_memory_allocated(device=None):
    """The peak of :func:`memory_allocated` since start-up or the last reset.

    Args:
        device (int, str or device, optional): must be this process's GPU (default).

    Returns:
        int: bytes.
    """
    _check_device(device)
    return _rumus._gpu_memory_stats()[2]


def reset_peak_memory_stats(device=None):
    """Resets the peak that :func:`max_memory_allocated` reports to the current allocation.

    Args:
        device (int, str or device, optional): must be this process's GPU (default).
    """
    _check_device(device)
    _rumus._gpu_reset_peak_memory_stats()


def empty_cache():
    """Frees the pool's cached buffers (live tensors keep theirs)."""
    _rumus._gpu_empty_cache()


def transfer_stats():
    """Data moved between host and GPU since the last reset:
    ``{"to_device_bytes", "to_device_copies", "to_host_bytes", "to_host_copies"}``.

    Returns:
        dict[str, int]: the byte and copy counts each way.
    """
    a, b, c, d = _rumus._gpu_transfer_stats()
    return {"to_device_bytes": a, "to_device_copies": b, "to_host_bytes": c, "to_host_copies": d}


def reset_transfer_stats():
    """Zeroes the counters :func:`transfer_stats` reports."""
    _rumus._gpu_reset_transfer_stats()


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
