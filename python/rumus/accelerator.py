"""PyTorch's device-agnostic accelerator API (``torch.accelerator``): rumus's
accelerators are its GPUs ``gpu:0`` ... ``gpu:N-1`` (Vulkan, Metal or DX12 adapters)."""

import contextlib

from . import _rumus, gpu

__all__ = [
    "current_accelerator",
    "current_device_index",
    "device_count",
    "device_index",
    "is_available",
    "set_device_index",
    "synchronize",
]


def is_available():
    """Whether an accelerator (a GPU adapter) can be used."""
    return gpu.is_available()


def current_accelerator(check_available=False):
    """``device("gpu")`` when a GPU adapter exists, else None (with
    ``check_available=True``, also None when it cannot be used).

    Args:
        check_available (bool): return None when the accelerator is not usable.

    Returns:
        device or None: the accelerator.
    """
    if not is_available():
        return None
    return _rumus.device("gpu")


def device_count():
    """The number of accelerator devices (GPU adapters)."""
    return gpu.device_count()


def _index(device):
    if not is_available():
        raise RuntimeError("no accelerator is available")
    return gpu._index(device)


def current_device_index():
    """The index of the current accelerator device (see ``rumus.gpu.current_device``)."""
    if not is_available():
        raise RuntimeError("no accelerator is available")
    return gpu.current_device()


def set_device_index(device):
    """Makes ``device`` current: the GPU ``"gpu"`` without an index means (see
    ``rumus.gpu.set_device``).

    Args:
        device (int, str or device): the device.
    """
    gpu.set_device(_index(device))


@contextlib.contextmanager
def device_index(device):
    """Context manager that makes ``device`` current inside it (None: no-op).

    Args:
        device (int, str or device, optional): the device.
    """
    if device is None:
        yield
        return
    previous = gpu.current_device()
    gpu.set_device(_index(device))
    try:
        yield
    finally:
        gpu.set_device(previous)


def synchronize(device=None):
    """Waits until the accelerator has finished all queued work.

    Args:
        device (int, str or device, optional): the device.
    """
    if device is not None:
        _index(device)
    gpu.synchronize(device)
