"""Gradient checkpointing: a segment's activations are not kept during the
forward; backward runs the segment again (with the random-number state of the
first run, so dropout masks match) and differentiates that.

The first run records the segment's graph only to find what it reads from
outside (its inputs, parameters the function closes over, older tensors) and
frees it at once; the checkpoint node's edges go to those, so ``backward()``,
``autograd.grad`` and double backward work through it."""

from .. import _rumus
from .._rumus import Tensor, get_rng_state, set_rng_state
from ..autograd.grad_mode import enable_grad


def _as_tuple(out):
    if isinstance(out, Tensor):
        return (out,), False
    if isinstance(out, (tuple, list)) and all(isinstance(o, Tensor) for o in out):
        return tuple(out), True
    raise TypeError("checkpoint: the function must return a Tensor or a tuple of Tensors")


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
    recompute-in-backward scheme described in the module docstring."""
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
    results = [o.detach() for o in outs]
    del outs, first  # frees the segment's graph and its saved activations
    if not any(diff):
        return tuple(results) if is_tuple else results[0]

    def backward(saved, grads):
        create_graph = _rumus.is_grad_enabled()
        now = get_rng_state()
        if rng is not None:
            set_rng_state(rng)
        try:
            again = fresh_inputs(saved, keep_history=create_graph)
            with enable_grad():
                outs2, _ = _as_tuple(function(*again, **kwargs))
        finally:
            if rng is not None:
                set_rng_state(now)
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
    checkpointing every chunk but the last (as PyTorch does)."""
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
