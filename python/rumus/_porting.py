"""Porting helpers: ``rumus.compile`` (returns what it is given) and the
``.cuda()`` methods, which raise, pointing at the ``"gpu"`` device."""

from ._rumus import Tensor
from .nn.modules.module import Module

_NO_CUDA = (
    "rumus has no CUDA device: use .gpu() or .to('gpu') (any GPU, through wgpu) instead of "
    ".cuda(); rumus.cuda.is_available() is always False"
)


def compile(
    model=None,
    *,
    fullgraph=False,
    dynamic=None,
    backend="inductor",
    mode=None,
    options=None,
    disable=False,
):
    """``torch.compile`` for ported scripts: returns ``model`` itself, unchanged.

    rumus compiles nothing; every argument is accepted and ignored. Usable as
    ``rumus.compile(model)``, as ``@rumus.compile`` and as ``@rumus.compile(mode=...)``.

    Args:
        model: a Module or a function; if None, returns a decorator.
        fullgraph: ignored.
        dynamic: ignored.
        backend: ignored.
        mode: ignored.
        options: ignored.
        disable: ignored.

    Returns:
        ``model`` (or, without it, a decorator returning its argument).
    """
    if model is None:
        return lambda fn: fn
    if not callable(model):
        raise RuntimeError(f"compile: expected a Module or a function, got {type(model).__name__}")
    return model


def _tensor_cuda(self, device=None, non_blocking=False, memory_format=None):
    """Always raises: rumus has no CUDA device; use ``.gpu()`` or ``.to("gpu")``.

    Args:
        device: ignored.
        non_blocking: ignored.
        memory_format: ignored.

    Raises:
        RuntimeError: always, naming the "gpu" device to use instead.
    """
    raise RuntimeError(_NO_CUDA)


def _module_cuda(self, device=None):
    """Always raises: rumus has no CUDA device; use ``.gpu()`` or ``.to("gpu")``.

    Args:
        device: ignored.

    Raises:
        RuntimeError: always, naming the "gpu" device to use instead.
    """
    raise RuntimeError(_NO_CUDA)


Tensor.cuda = _tensor_cuda
Module.cuda = _module_cuda
