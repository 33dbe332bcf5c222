"""Gradient checkpointing: a segment's activations are not kept during the
forward; backward runs the segment again (with the random-number state of the
first run, so dropout masks match) and differentiates that.

The first run records the segment's graph only to find what it reads from
outside (its inputs, parameters the function closes over, older tensors) and
frees it at once; the checkpoint node's edges go to those, so ``backward()``,
``autograd.grad`` and double backward work through it.

rumus's autograd has no saved-tensor hooks, so the determinism check compares
the metadata of the segment's outputs (the tensors whose gradients backward
feeds into the recomputed graph) rather than of every tensor saved inside it."""

import contextlib
import threading

from .. import _rumus
from .._rumus import Tensor, get_rng_state, set_rng_state
from ..autograd.grad_mode import enable_grad

__all__ = [
    "CheckpointError",
    "checkpoint",
    "checkpoint_sequential",
    "is_checkpointing",
    "set_checkpoint_debug_enabled",
]

_DETERMINISM_CHECKS = ("default", "none")

# set_checkpoint_debug_enabled's override of checkpoint(debug=...); None defers to the argument.
_debug_enabled = None

# Recomputations running on this thread (a recompute can run a nested checkpoint's recompute).
_recompute = threading.local()


class CheckpointError(RuntimeError):
    """The recomputation in backward did not reproduce the original forward."""


def is_checkpointing():
    """True while this thread recomputes a checkpointed segment in backward.

    Modules with side effects in their forward (BatchNorm's running statistics)
    consult it so that the recomputation does not repeat them."""
    return getattr(_recompute, "depth", 0) > 0


@contextlib.contextmanager
def set_checkpoint_debug_enabled(enabled):
    """Overrides ``checkpoint(debug=...)`` inside the block: True or False forces it,
    None defers to each call's argument.

    Args:
        enabled (bool or None): force debug on or off; None restores the argument's choice.
    """
    global _debug_enabled
    previous = _debug_enabled
    _debug_enabled = enabled
    try:
        yield
    finally:
        _debug_enabled = previous


def _as_tuple(out):
    if isinstance(out, Tensor):
        return (out,), False
    if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        return tuple(out), True
    raise TypeError("checkpoint: the function must return a Tensor or a tuple of Tensors")


def _metadata(t):
    return {"shape": t.shape, "dtype": t.dtype, "device": t.device}


def _metadata_mismatch(saved, outs):
    """The error message when the recomputed outputs differ from the forward's, else None."""
    recomputed = [_metadata(o) for o in outs]
    if len(recomputed) != len(saved):
        return (
            "rumus.utils.checkpoint: A different number of tensors was produced during the "
            "original forward and recomputation.\n"
            f"Number of tensors produced during forward: {len(saved)}\n"
            f"Number of tensors produced during recomputation: {len(recomputed)}"
        )
    bad = [
        f"tensor at position {i}:\nsaved metadata: {a}\nrecomputed metadata: {b}"
        for i, (a, b) in enumerate(zip(saved, recomputed))
        if a != b
    ]
    if not bad:
        return None
    return (
        "rumus.utils.checkpoint: Recomputed values for the following tensors have different "
        "metadata than during the forward pass.\n" + "\n".join(bad)
    )


def _graph_ops(outputs, stop):
    """Names of the autograd nodes behind ``outputs``, each after the nodes it reads (the
    order they ran in); leaves and the nodes in ``stop`` (and their history) are left out."""
    order, seen = [], set(stop)
    for out in outputs:
        root = out.grad_fn
        if root is None or root in seen:
            continue
        seen.add(root)
        stack = [(root, iter(root.next_functions))]
        while stack:
            node, children = stack[-1]
            for child, _ in children:
                if child is not None and child not in seen and child.name() != "AccumulateGrad":
                    seen.add(child)
                    stack.append((child, iter(child.next_functions)))
                    break
            else:
                stack.pop()
                order.append(node.name())
    return order


def _ops_listing(title, ops):
    return f"\n{title}:\n" + ("\n".join(f"  {name}" for name in ops) or "  (none)")


def checkpoint(
    function,
    *args,
    use_reentrant=None,
    preserve_rng_state=True,
    determinism_check="default",
    debug=False,
    **kwargs,
):
    """Runs ``function(*args, **kwargs)`` without keeping its activations for backward.

    ``use_reentrant`` is accepted for PyTorch compatibility; both values use the
    recompute-in-backward scheme described in the module docstring, and both honour
    ``determinism_check`` and ``debug``.

    ``determinism_check="default"`` makes backward raise :class:`CheckpointError` when the
    recomputation's outputs differ in number, shape, dtype or device from the forward's;
    ``"none"`` skips the check. ``debug=True`` adds to that error the autograd operations
    the forward and the recomputation ran (see :func:`set_checkpoint_debug_enabled`).

    Args:
        function (callable): the function to run.
        *args: the function's arguments.
        use_reentrant (bool, optional): both values recompute in backward.
        preserve_rng_state (bool): replay the same random numbers in the recomputation.
        determinism_check (str): ``'default'`` or ``'none'``.
        debug (bool): accepted for compatibility.
        **kwargs: the function's keyword arguments.

    Returns:
        The function's output.
    """
    if determinism_check not in _DETERMINISM_CHECKS:
        raise ValueError(
            f"determinism_check should be one of {list(_DETERMINISM_CHECKS)}, "
            f"but got {determinism_check}"
        )
    if _debug_enabled is not None:
        debug = _debug_enabled
    if not _rumus.is_grad_enabled():
        return function(*args, **kwargs)
    rng = get_rng_state() if preserve_rng_state else None
    tensor_pos = [i for i, a in enumerate(args) if isinstance(a, Tensor)]
    others = [None if isinstance(a, Tensor) else a for a in args]

    def fresh_inputs(tensors, keep_history=False):
        # Under create_graph the recompute reads the real inputs, so the
        # gradients it returns stay connected to their history.
        values = list(others)
        for i, t in zip(tensor_pos, tensors):
            d = t if keep_history else t.detach()
            if t.requires_grad and not keep_history:
                d.requires_grad_(True)
            values[i] = d
        return values

    inputs = [args[i] for i in tensor_pos]
    seq = _rumus._current_seq()
    first = fresh_inputs(inputs)
    with enable_grad():
        outs, is_tuple = _as_tuple(function(*first, **kwargs))
    boundary = _rumus._graph_boundary(list(outs), seq, [first[i] for i in tensor_pos])
    diff = [o.requires_grad and o.is_floating_point() for o in outs]
    check = determinism_check == "default"
    saved_metadata = [_metadata(o) for o in outs] if check else None
    forward_ops = _graph_ops(outs, ()) if check and debug else None
    results = [o.detach() for o in outs]
    del outs, first  # frees the segment's graph and its saved activations
    if not any(diff):
        return tuple(results) if is_tuple else results[0]

    def backward(saved, grads):
        create_graph = _rumus.is_grad_enabled()
        now = get_rng_state()
        if rng is not None:
            set_rng_state(rng)
        _recompute.depth = getattr(_recompute, "depth", 0) + 1
        try:
            again = fresh_inputs(saved, keep_history=create_graph)
            with enable_grad():
                outs2, _ = _as_tuple(function(*again, **kwargs))
        finally:
            _recompute.depth -= 1
            if rng is not None:
                set_rng_state(now)
        if check:
            error = _metadata_mismatch(saved_metadata, outs2)
            if error is not None:
                if forward_ops is None:
                    error += (
                        "\nPass debug=True to checkpoint() to list the operations run by the "
                        "forward and by the recomputation."
                    )
                else:
                    # The recompute's inputs may carry their history (create_graph): stop there.
                    stop = [again[i].grad_fn for i in tensor_pos if again[i].grad_fn is not None]
                    error += _ops_listing(
                        "Operations executed during the original forward", forward_ops
                    )
                    error += _ops_listing(
                        "Operations executed during recomputation", _graph_ops(outs2, stop)
                    )
                raise CheckpointError(error)
        roots = [o for o, d in zip(outs2, diff) if d]
        targets = [again[i] if again[i].requires_grad else None for i in tensor_pos] + list(
            boundary
        )
        return _rumus._grad_edges(roots, list(grads), targets, create_graph)

    attached = _rumus._attach_custom(
        "CheckpointFunctionBackward",
        backward,
        inputs,
        [r for r, d in zip(results, diff) if d],
        inputs,
        boundary,
    )
    it = iter(attached)
    results = [next(it) if d else r for r, d in zip(results, diff)]
    return tuple(results) if is_tuple else results[0]


def checkpoint_sequential(functions, segments, input, use_reentrant=None, **kwargs):
    """Runs ``functions`` (a list or an ``nn.Sequential``) in ``segments`` chunks,
    checkpointing every chunk but the last (as PyTorch does).

    Args:
        functions (list[Module] or Sequential): the functions, in order.
        segments (int): the number of checkpointed chunks.
        input (Tensor): the first function's input.
        use_reentrant (bool, optional): both values recompute in backward.
        **kwargs: ``preserve_rng_state`` and the other checkpoint options.

    Returns:
        The last function's output.
    """
    if hasattr(functions, "children") and not isinstance(functions, (list, tuple)):
        functions = list(functions.children())
    functions = list(functions)
    if segments < 1:
        raise ValueError(f"checkpoint_sequential: segments must be >= 1, got {segments}")
    size = max(1, (len(functions) + segments - 1) // segments)
    chunks = [functions[i : i + size] for i in range(0, len(functions), size)]

    def run(chunk):
        def forward(x):
            for f in chunk:
                x = f(x)
            return x

        return forward

    for chunk in chunks[:-1]:
        input = checkpoint(run(chunk), input, use_reentrant=use_reentrant, **kwargs)
    return run(chunks[-1])(input) if chunks else input
