"""DLPack exchange at PyTorch's module path (``torch.utils.dlpack``).

``from_dlpack`` takes any object with ``__dlpack__`` (NumPy arrays, PyTorch and
JAX CPU tensors, rumus tensors) or a raw DLPack capsule, and shares its memory:
writes show on both sides, and the producer's memory stays alive as long as the
rumus tensor (or any view of it) does. ``to_dlpack`` returns the legacy
``"dltensor"`` capsule of a CPU tensor, as PyTorch's does.

rumus tensors are always writable, so a read-only producer (a DLPack 1.x capsule
with the read-only flag, e.g. a NumPy array with ``writeable=False``) is copied;
PyTorch shares such memory and ignores the flag. Arrays with negative strides or
misaligned data are copied too. ``copy=False`` raises BufferError instead of
copying.
"""

from .. import _rumus
from .._rumus import Tensor

__all__ = ["from_dlpack", "to_dlpack"]

# DLDeviceType codes of memory the CPU reads directly: kDLCPU, kDLCUDAHost, kDLROCMHost.
_HOST_DEVICES = (1, 3, 11)
_CPU = (1, 0)
# The newest DLPack ABI rumus reads (every 1.x capsule has the same layout).
_MAX_VERSION = (1, 0)


def to_dlpack(tensor):
    """A DLPack capsule ("dltensor") sharing ``tensor``'s memory; consume it once.

    Args:
        tensor: a CPU tensor that does not require grad.

    Returns:
        The capsule.
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(
            f"to_dlpack(): argument 'tensor' must be Tensor, not {type(tensor).__name__}"
        )
    return _rumus._to_dlpack(tensor)


def _capsule_of(ext_tensor, copy):
    """Asks a producer for a host capsule: versioned first, the legacy call for
    producers that predate DLPack 1.0 (which reject ``max_version``)."""
    kind, index = ext_tensor.__dlpack_device__()
    kwargs = {}
    if int(kind) not in _HOST_DEVICES:
        where = f"DLPack device ({int(kind)}, {int(index)})"
        if copy is False:
            raise BufferError(
                f"rumus.from_dlpack: the array is on {where}, not the CPU; copy=False forbids "
                "copying it to host memory"
            )
        kwargs = {"dl_device": _CPU, "copy": copy}
        try:
            return ext_tensor.__dlpack__(max_version=_MAX_VERSION, **kwargs)
        except (BufferError, TypeError, NotImplementedError, ValueError) as e:
            raise BufferError(
                f"rumus.from_dlpack: the array is on {where} and its producer can't copy it to "
                f"the CPU ({e}); rumus reads host memory only"
            ) from e
    try:
        return ext_tensor.__dlpack__(max_version=_MAX_VERSION)
    except TypeError:
        return ext_tensor.__dlpack__()


def from_dlpack(ext_tensor, *, device=None, copy=None):
    """A tensor sharing the memory of a DLPack producer.

    ``copy=True`` always copies, ``copy=False`` raises BufferError where a copy is
    needed (read-only or non-host memory), None copies only then.

    Args:
        ext_tensor: an object with ``__dlpack__`` and ``__dlpack_device__``, or a DLPack
            capsule (consumed once).
        device: where to place the result (a copy when it differs from the producer's).
        copy: True, False or None, as above.

    Returns:
        The tensor.
    """
    target = None if device is None else _rumus.device(device)
    if isinstance(ext_tensor, Tensor) and ext_tensor.device.type != "cpu":
        # A GPU tensor's buffer can't travel through DLPack, but rumus can share it.
        if ext_tensor.requires_grad:
            raise RuntimeError("Can't export tensors that require gradient, use tensor.detach()")
        t = ext_tensor.detach().clone() if copy else ext_tensor.detach()
    elif hasattr(type(ext_tensor), "__dlpack__"):
        t = _rumus._from_dlpack_capsule(_capsule_of(ext_tensor, copy), copy)
    elif type(ext_tensor).__name__ == "PyCapsule":
        t = _rumus._from_dlpack_capsule(ext_tensor, copy)
    else:
        raise TypeError(
            "rumus.from_dlpack: expected an object with __dlpack__ and __dlpack_device__ "
            f"(a NumPy array, a PyTorch or JAX tensor...) or a DLPack capsule, got "
            f"{type(ext_tensor).__name__}"
        )
    if target is not None and target.type != t.device.type:
        if copy is False:
            raise BufferError(
                f"rumus.from_dlpack: the data is on {t.device}; copy=False forbids moving it to "
                f"{target}"
            )
        t = t.to(target)
    return t
