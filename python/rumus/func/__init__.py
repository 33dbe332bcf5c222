"""Composable function transforms (PyTorch's ``torch.func``): ``grad``, ``grad_and_value``,
``vjp``, ``jvp``, ``jacrev``, ``jacfwd``, ``hessian``, ``vmap`` and ``functional_call``.

``vmap`` runs the function once on whole batches (see ``_vmap``); the differentiation
transforms nest with each other and inside ``vmap`` (per-sample gradients:
``vmap(grad(loss), in_dims=(None, 0, 0))(params, x, y)``)."""

from ._transforms import (
    functional_call,
    grad,
    grad_and_value,
    hessian,
    jacfwd,
    jacrev,
    jvp,
    vjp,
)
from ._vmap import vmap

__all__ = [
    "functional_call",
    "grad",
    "grad_and_value",
    "hessian",
    "jacfwd",
    "jacrev",
    "jvp",
    "vjp",
    "vmap",
]
