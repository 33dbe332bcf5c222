"""Forward-mode AD (PyTorch's ``torch.autograd.forward_ad``): ``dual_level``, ``make_dual``,
``unpack_dual``.

rumus has no forward-mode engine: tangents are computed on demand, in ``unpack_dual``, from the
reverse-mode graph with the double-backward trick (for ``y = f(x)``, the vector-Jacobian
product ``u -> uᵀ·J`` is linear in ``u``, and its gradient with respect to ``u`` applied to the
tangent ``t`` of ``x`` is ``J·t``). The values are those of forward-mode AD; the differences
from PyTorch:

- ops must be recorded: a dual tensor requires grad (``make_dual`` of a tensor that does not
  gives a fresh one that does), and ops run under ``no_grad`` carry no tangent;
- every ``unpack_dual`` of a non-dual tensor costs two backward passes over the graph between
  the duals and that tensor (the graph is kept, so ``backward()`` still works afterwards).
"""

from collections import namedtuple

from .. import _rumus
from .._rumus import Tensor
from .grad_mode import enable_grad

__all__ = [
    "UnpackedDualTensor",
    "dual_level",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
]

UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])

# One list of (dual, tangent) per open level; rumus, like PyTorch, allows one level at a time.
_levels = []


def enter_dual_level():
    """Opens a new forward AD level and returns its index."""
    if _levels:
        raise RuntimeError(
            "Nested forward mode AD is not supported at the moment (a dual level is already open)."
        )
    _levels.append([])
    return len(_levels) - 1


def exit_dual_level(*, level=None):
    """Closes the current level: its dual tensors lose their tangents.

    Args:
        level: the level to close (must be the current one; None: the current one).
    """
    if not _levels or (level is not None and level != len(_levels) - 1):
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was created. "
            "This is not supported."
        )
    _levels.pop()


class dual_level:
    """Context manager for a forward AD level: dual tensors made inside carry tangents until
    it exits."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, *exc):
        exit_dual_level()


def _current(level):
    if not _levels:
        return None
    if level is not None and level != len(_levels) - 1:
        raise RuntimeError(f"Forward AD level {level} is not the current level.")
    return _levels[-1]


def make_dual(tensor, tangent, *, level=None):
    """A tensor with the values of ``tensor`` carrying ``tangent`` in the current level.

    Args:
        tensor: the primal values.
        tangent: the directional derivative, with tensor's shape, dtype and device.
        level: the level (None: the current one).

    Returns:
        The dual tensor.
    """
    duals = _current(level)
    if duals is None:
        raise RuntimeError(
            "To create a dual tensor, you need to be inside a dual level context (use "
            "``with fwAD.dual_level():``)."
        )
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError("make_dual expects two Tensors (primal and tangent)")
    if not tensor.is_floating_point():
        raise ValueError(
            f"Expected primal to be floating point, but got {tensor.dtype} (forward AD "
            "differentiates floating-point tensors only)."
        )
    if tangent.shape != tensor.shape:
        raise RuntimeError(
            "Trying to set a forward gradient that has a different size than that of the "
            f"original Tensor, this is not supported. Tensor is of size {list(tensor.shape)} "
            f"while the given forward gradient is of size {list(tangent.shape)}."
        )
    if tangent.dtype != tensor.dtype or tangent.device != tensor.device:
        raise RuntimeError(
            f"Expected tangent to have dtype {tensor.dtype} on {tensor.device}, got "
            f"{tangent.dtype} on {tangent.device}."
        )
    with enable_grad():
        if tensor.requires_grad:
            dual = tensor.view_as(tensor)
        else:
            dual = tensor.detach().requires_grad_(True)
    duals.append((dual, tangent.detach()))
    return dual


def unpack_dual(tensor, *, level=None):
    """``(primal, tangent)`` of ``tensor`` in the current level.

    Args:
        tensor: a tensor.
        level: the level (None: the current one).

    Returns:
        An UnpackedDualTensor; tangent is None when tensor does not depend on any dual
        tensor of the level (or no level is open).
    """
    duals = _current(level)
    if not isinstance(tensor, Tensor) or duals is None or not tensor.requires_grad:
        return UnpackedDualTensor(tensor, None)
    for dual, tangent in duals:
        if dual is tensor:
            return UnpackedDualTensor(tensor, tangent)
    if not tensor.is_floating_point():
        return UnpackedDualTensor(tensor, None)
    with enable_grad():
        u = _rumus.zeros_like(tensor, requires_grad=True)
        vjps = _rumus.grad([tensor], [d for d, _ in duals], [u], True, True, True, False, False)
        terms = [
            (g * t).sum() for g, (_, t) in zip(vjps, duals) if g is not None and g.requires_grad
        ]
        if not any(g is not None for g in vjps):
            return UnpackedDualTensor(tensor, None)
        if not terms:
            return UnpackedDualTensor(tensor, _rumus.zeros_like(tensor))
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        (tangent,) = _rumus.grad([total], [u], None, True, False, True, False, False)
    if tangent is None:
        tangent = _rumus.zeros_like(tensor)
    return UnpackedDualTensor(tensor, tangent.detach())
