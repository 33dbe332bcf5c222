"""Automatic differentiation (PyTorch's ``torch.autograd`` API).

The graph, the backward formulas and the engine are Rust; this package adds
the Python-facing pieces: grad-mode context managers, custom Functions,
gradcheck."""

from .. import _rumus
from .._rumus import Node, is_anomaly_enabled, is_grad_enabled, saved_tensor_bytes
from .function import Function, FunctionCtx
from .grad_mode import (
    detect_anomaly,
    enable_grad,
    inference_mode,
    no_grad,
    set_detect_anomaly,
    set_grad_enabled,
)
from .gradcheck import GradcheckError, gradcheck, gradgradcheck


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates gradients of ``tensors`` into the ``.grad`` of the leaves.

    Args:
        tensors (Tensor or Sequence[Tensor]): the tensors to differentiate.
        grad_tensors (Tensor or Sequence[Tensor], optional): the gradients of ``tensors``.
        retain_graph (bool, optional): keep the graph for another backward (``create_graph`` by
            default).
        create_graph (bool): record the backward pass, for higher-order gradients.
        inputs (Tensor or Sequence[Tensor], optional): accumulate only into these.
    """
    _rumus.backward(tensors, grad_tensors, retain_graph, create_graph, inputs)


def grad(
    outputs,
    inputs,
    grad_outputs=None,
    retain_graph=None,
    create_graph=False,
    allow_unused=None,
    is_grads_batched=False,
    materialize_grads=False,
):
    """Gradients of ``outputs`` with respect to ``inputs``, returned (no ``.grad`` is touched).

    Args:
        outputs (Tensor or Sequence[Tensor]): the differentiated tensors.
        inputs (Tensor or Sequence[Tensor]): the tensors to differentiate with respect to.
        grad_outputs (Tensor or Sequence[Tensor], optional): the gradients of ``outputs`` (ones for
            scalars).
        retain_graph (bool, optional): keep the graph for another backward (``create_graph`` by
            default).
        create_graph (bool): record the backward pass, for higher-order gradients.
        allow_unused (bool, optional): return None for inputs the outputs do not depend on instead
            of raising.
        is_grads_batched (bool): only False is supported.
        materialize_grads (bool): return zeros instead of None for unused inputs.

    Returns:
        tuple[Tensor or None, ...]: one gradient per input.
    """
    return _rumus.grad(
        outputs,
        inputs,
        grad_outputs,
        retain_graph,
        create_graph,
        allow_unused,
        is_grads_batched,
        materialize_grads,
    )


__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "Node",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_anomaly_enabled",
    "is_grad_enabled",
    "no_grad",
    "saved_tensor_bytes",
    "set_detect_anomaly",
    "set_grad_enabled",
]
