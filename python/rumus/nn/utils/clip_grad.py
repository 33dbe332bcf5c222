"""Gradient clipping by total norm or by value.

``foreach`` is accepted for PyTorch compatibility; rumus has one code path, so it changes nothing.
"""

import math

from ... import _rumus
from ...autograd.grad_mode import no_grad

__all__ = ["clip_grad_norm_", "clip_grad_value_", "clip_grads_with_norm_", "get_total_norm"]


def _as_list(tensors):
    return [tensors] if isinstance(tensors, _rumus.Tensor) else list(tensors)


def _vector_norm(t, p):
    """p-norm of all elements of ``t`` (p may be inf, -inf or 0, as
    ``torch.linalg.vector_norm``)."""
    a = t.abs()
    if p == math.inf:
        return a.max()
    if p == -math.inf:
        return a.min()
    if p == 0:
        return (a != 0).to(t.dtype).sum()
    if p == 1:
        return a.sum()
    if p == 2:
        return a.square().sum().sqrt()
    return a.pow(p).sum().pow(1.0 / p)


def get_total_norm(tensors, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Norm of the norms of ``tensors`` (as if they were concatenated into one vector).

    Args:
        tensors (Tensor or Iterable[Tensor]): the tensors (gradients).
        norm_type (float): the p of the norm (inf allowed).
        error_if_nonfinite (bool): raise when the total norm is nan or inf.
        foreach (bool, optional): accepted for compatibility.

    Returns:
        Tensor: the total norm.
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return _rumus.tensor(0.0)
    with no_grad():
        norms = [_vector_norm(t.detach(), norm_type) for t in tensors]
        dtype = norms[0].dtype
        for n in norms[1:]:
            dtype = _rumus.promote_types(dtype, n.dtype)
        total = _vector_norm(_rumus.stack([n.to(dtype) for n in norms]), norm_type)
    if error_if_nonfinite and not math.isfinite(total.item()):
        raise RuntimeError(
            f"The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the "
            "non-finite norm anyway, set `error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(parameters, max_norm, total_norm, foreach=None):
    """Scales the gradients in place by min(1, max_norm / (total_norm + 1e-6)).

    Args:
        parameters (Tensor or Iterable[Tensor]): the parameters (their ``.grad`` are used).
        max_norm (float): the largest allowed total norm.
        total_norm (Tensor): the total norm, from :func:`get_total_norm`.
        foreach (bool, optional): accepted for compatibility.
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    with no_grad():
        coef = (float(max_norm) / (total_norm + 1e-6)).clamp(max=1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(parameters, max_norm, norm_type=2.0, error_if_nonfinite=False, foreach=None):
    """Scales the gradients of ``parameters`` in place so that their total ``norm_type`` norm is
    at most ``max_norm``; returns the total norm before clipping (a 0-d tensor).

    Args:
        parameters (Tensor or Iterable[Tensor]): the parameters (their ``.grad`` are used).
        max_norm (float): the largest allowed total norm.
        norm_type (float): the p of the norm (inf allowed).
        error_if_nonfinite (bool): raise when the total norm is nan or inf.
        foreach (bool, optional): accepted for compatibility.

    Returns:
        Tensor: the total norm before clipping.
    """
    parameters = _as_list(parameters)  # a generator must be walked only once
    grads = [p.grad for p in parameters if p.grad is not None]
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(parameters, max_norm, total, foreach)
    return total


def clip_grad_value_(parameters, clip_value, foreach=None):
    """Clamps every gradient in place to [-clip_value, clip_value].

    Args:
        parameters (Tensor or Iterable[Tensor]): the parameters (their ``.grad`` are used).
        clip_value (float): the bound.
        foreach (bool, optional): accepted for compatibility.
    """
    clip_value = float(clip_value)
    with no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(min=-clip_value, max=clip_value)
