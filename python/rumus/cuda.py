"""``torch.cuda`` for ported scripts: rumus has no CUDA device, so this module
answers as PyTorch does on a machine without CUDA (``is_available()`` is
False, ``device_count()`` is 0) and its seeding, cache and sync calls do
nothing. rumus runs on any GPU through wgpu: use the ``"gpu"`` device and
``rumus.gpu`` (``rumus.gpu.is_available()``)."""

__all__ = [
    "is_available",
    "device_count",
    "is_initialized",
    "current_device",
    "set_device",
    "get_device_name",
    "get_device_properties",
    "get_device_capability",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "synchronize",
    "empty_cache",
    "is_bf16_supported",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "reset_peak_memory_stats",
]

_NO_CUDA = (
    "rumus has no CUDA device: use the 'gpu' device (any GPU, through wgpu) and rumus.gpu "
    "instead of rumus.cuda"
)


def is_available():
    """Always False: rumus has no CUDA backend (``rumus.gpu.is_available()`` tells about GPUs)."""
    return False


def device_count():
    return 0


def is_initialized():
    return False


def is_bf16_supported(including_emulation=True):
    return False


def _no_device(*args, **kwargs):
    raise RuntimeError(_NO_CUDA)


current_device = set_device = get_device_name = _no_device
get_device_properties = get_device_capability = _no_device


def manual_seed(seed):
    """Does nothing, as ``torch.cuda.manual_seed`` on a machine without CUDA:
    ``rumus.manual_seed`` seeds every generator rumus has."""


def manual_seed_all(seed):
    """Does nothing (see ``manual_seed``)."""


def seed():
    """Does nothing (see ``manual_seed``)."""


def seed_all():
    """Does nothing (see ``manual_seed``)."""


def synchronize(device=None):
    """Does nothing: there is no CUDA work to wait for (``rumus.gpu.synchronize``
    waits for the GPU)."""


def empty_cache():
    """Does nothing, as ``torch.cuda.empty_cache`` before CUDA is initialized
    (``rumus.empty_cache`` frees rumus's GPU buffer cache)."""


def memory_allocated(device=None):
    return 0


def max_memory_allocated(device=None):
    return 0


def memory_reserved(device=None):
    return 0


def max_memory_reserved(device=None):
    return 0


def reset_peak_memory_stats(device=None):
    """Does nothing: no CUDA memory is ever allocated."""


# torch.cuda.amp: `rumus.cuda.amp.autocast()` / `GradScaler()` on the GPU device.
import sys as _sys  # noqa: E402

from .amp import _cuda as amp  # noqa: E402

_sys.modules[__name__ + ".amp"] = amp
