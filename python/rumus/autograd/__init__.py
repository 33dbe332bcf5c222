"""Automatic differentiation (PyTorch's ``torch.autograd`` API).

The graph, the backward formulas and the engine are Rust; this package adds
the Python-facing pieces: grad-mode context managers, custom Functions,
gradcheck."""

from .. import _rumus
from .._rumus import Node, Tensor, is_anomaly_enabled, is_grad_enabled, saved_tensor_bytes
from . import forward_ad, functional, graph
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
        is_grads_batched (bool): read the first dimension of every ``grad_outputs`` tensor as a
            batch and stack one gradient per batch row (rumus runs one backward per row where
            PyTorch vectorizes with vmap; the values are the same).
        materialize_grads (bool): return zeros instead of None for unused inputs.

    Returns:
        tuple[Tensor or None, ...]: one gradient per input.
    """
    if is_grads_batched:
        return _batched_grad(
            outputs,
            inputs,
            grad_outputs,
            retain_graph,
            create_graph,
            allow_unused,
            materialize_grads,
        )
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


def _batched_grad(
    outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused, materialize_grads
):
    outs = (outputs,) if isinstance(outputs, Tensor) else tuple(outputs)
    ins = (inputs,) if isinstance(inputs, Tensor) else tuple(inputs)
    if grad_outputs is None:
        raise RuntimeError("grad(is_grads_batched=True) needs grad_outputs (one batch per output)")
    gouts = (grad_outputs,) if isinstance(grad_outputs, Tensor) else tuple(grad_outputs)
    if len(gouts) != len(outs):
        raise RuntimeError(f"grad: got {len(gouts)} grad_outputs but {len(outs)} outputs")
    batch = None
    for i, (o, g) in enumerate(zip(outs, gouts)):
        if g is None:
            continue
        if g.dim() == 0 or tuple(g.shape[1:]) != tuple(o.shape):
            raise RuntimeError(
                "If `is_grads_batched=True`, we interpret the first dimension of each "
                "grad_output as the batch dimension. The sizes of the remaining dimensions are "
                "expected to match the shape of corresponding output, but a mismatch was "
                f"detected: grad_output[{i}] has a shape of {tuple(g.shape)} and output[{i}] "
                f"has a shape of {tuple(o.shape)}."
            )
        if batch is not None and g.shape[0] != batch:
            raise RuntimeError(
                f"grad(is_grads_batched=True): grad_outputs have different batch sizes "
                f"({batch} and {g.shape[0]})"
            )
        batch = g.shape[0]
    if batch is None:
        raise RuntimeError("grad(is_grads_batched=True) needs at least one batched grad_output")
    keep = create_graph if retain_graph is None else retain_graph
    rows = []
    for b in range(batch):
        row = [None if g is None else g[b] for g in gouts]
        rows.append(
            _rumus.grad(
                outs,
                ins,
                row,
                True if b + 1 < batch else keep,
                create_graph,
                True,
                False,
                materialize_grads,
            )
        )
    result = []
    for j, inp in enumerate(ins):
        grads = [r[j] for r in rows]
        if batch and all(g is None for g in grads):
            if not (allow_unused or materialize_grads):
                raise RuntimeError(
                    "One of the differentiated Tensors appears to not have been used in the "
                    "graph. Set allow_unused=True if this is the desired behavior."
                )
            result.append(None)
            continue
        grads = [_rumus.zeros_like(inp) if g is None else g for g in grads]
        if not grads:
            result.append(_rumus.zeros((0, *inp.shape), dtype=inp.dtype, device=inp.device))
        else:
            result.append(_rumus.stack(grads, 0))
    return tuple(result)


__all__ = [
    "Function",
    "FunctionCtx",
    "GradcheckError",
    "Node",
    "backward",
    "detect_anomaly",
    "forward_ad",
    "functional",
    "graph",
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
