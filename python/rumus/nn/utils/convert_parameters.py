"""Flatten parameters into one vector and back."""

from ... import _rumus
from ...autograd.grad_mode import no_grad

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _check_same_device(param, device):
    if device is not None and param.device != device:
        raise TypeError(
            "Found two parameters on different devices, this is currently not supported."
        )
    return param.device


def parameters_to_vector(parameters):
    """One 1-D tensor holding all parameters' values, flattened and concatenated (a copy that
    stays connected to the parameters in the autograd graph).

    Args:
        parameters (Iterable[Tensor]): the parameters.

    Returns:
        Tensor: 1-d.
    """
    device, flat = None, []
    for p in parameters:
        device = _check_same_device(p, device)
        flat.append(p.reshape(-1))
    return _rumus.cat(flat)


def vector_to_parameters(vec, parameters):
    """Writes consecutive slices of the 1-D ``vec`` into ``parameters``.

    Unlike PyTorch, which makes each parameter a view of ``vec``, rumus copies the values in
    (under no_grad; a tensor's data can't be swapped in place), so the parameters keep their own
    storage, dtype and identity. ``vec`` and the parameters must have the same dtype.

    Args:
        vec (Tensor): 1-d, with as many elements as the parameters together.
        parameters (Iterable[Tensor]): the parameters to write.
    """
    if not isinstance(vec, _rumus.Tensor):
        raise TypeError(f"expected rumus.Tensor, but got: {type(vec).__name__}")
    parameters = list(parameters)
    total = sum(p.numel() for p in parameters)
    if vec.dim() != 1 or vec.numel() < total:
        raise RuntimeError(
            f"vector_to_parameters: expected a 1-D vector with at least {total} elements, "
            f"got shape {list(vec.shape)}"
        )
    device, offset = None, 0
    with no_grad():
        for p in parameters:
            device = _check_same_device(p, device)
            if p.dtype != vec.dtype:
                raise TypeError(
                    f"vector_to_parameters: vec has dtype {vec.dtype} but a parameter has dtype "
                    f"{p.dtype}; rumus copies into the parameters and can't change their dtype"
                )
            n = p.numel()
            p.copy_(vec[offset : offset + n].view(tuple(p.shape)))
            offset += n
