"""The GPU (any Vulkan, Metal or DX12 adapter, through wgpu).

rumus drives one adapter, ``gpu:0``: the highest-performance one, or the first
whose name contains ``$RUMUS_GPU_ADAPTER``. Work is queued and submitted in
batches; reading a value (``.item()``, ``.cpu()``) or ``synchronize()`` waits.
"""

from . import _rumus

__all__ = [
    "is_available",
    "device_count",
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
]


def is_available():
    """Whether a GPU adapter was found and its device created.

    Returns:
        bool: True if a GPU adapter is usable.
    """
    return _rumus._gpu_is_available()


def device_count():
    """The number of GPUs rumus can use: 1 when an adapter was found, else 0.

    Returns:
        int: 0 or 1.
    """
    return 1 if is_available() else 0


def _check_device(device):
    if device not in (None, 0, "gpu", "gpu:0") and str(device) not in ("gpu", "gpu:0"):
        raise RuntimeError(f"device {device!r} is not available: rumus uses one GPU, gpu:0")


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
    """The adapter's name.

    Args:
        device (int, str or device, optional): must be the GPU (None, 0 or "gpu:0").

    Returns:
        str: the name, for example "NVIDIA H100 80GB HBM3".
    """
    _check_device(device)
    return adapter_info()["name"]


def synchronize(device=None):
    """Waits until the GPU has finished all queued work.

    Args:
        device (int, str or device, optional): must be the GPU (None, 0 or "gpu:0").
    """
    _check_device(device)
    _rumus._gpu_synchronize()


def memory_allocated(device=None):
    """Bytes held by live GPU tensors (their pool buckets).

    Args:
        device (int, str or device, optional): must be the GPU (None, 0 or "gpu:0").

    Returns:
        int: bytes.
    """
    _check_device(device)
    return _rumus._gpu_memory_stats()[0]


def memory_reserved(device=None):
    """Bytes of GPU buffers owned by rumus: live ones plus the pool's cache.

    Args:
        device (int, str or device, optional): must be the GPU (None, 0 or "gpu:0").

    Returns:
        int: bytes.
    """
    _check_device(device)
    return _rumus._gpu_memory_stats()[1]


def max_memory_allocated(device=None):
    """The peak of :func:`memory_allocated` since start-up or the last reset.

    Args:
        device (int, str or device, optional): must be the GPU (None, 0 or "gpu:0").

    Returns:
        int: bytes.
    """
    _check_device(device)
    return _rumus._gpu_memory_stats()[2]


def reset_peak_memory_stats(device=None):
    """Resets the peak that :func:`max_memory_allocated` reports to the current allocation.

    Args:
        device (int, str or device, optional): must be the GPU (None, 0 or "gpu:0").
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
