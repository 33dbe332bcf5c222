"""Higher-level differentiation of whole functions (PyTorch's ``torch.autograd.functional``):
``vjp``, ``jvp``, ``jacobian``, ``hessian``, ``vhp``, ``hvp``.

Everything runs on the reverse-mode engine. Forward-mode products (``jvp``, ``hvp``,
``strategy="forward-mode"``) use the double-backward trick: the vector-Jacobian product is
linear in its vector ``u``, so differentiating it with respect to ``u`` gives the
Jacobian-vector product. ``vectorize=True`` is accepted and computes the same rows one at a
time (rumus has no batched backward).

Inputs and outputs follow PyTorch: a single tensor gives a single tensor, a tuple gives a tuple
(nested tuples for ``jacobian``/``hessian``: ``[output][input]``)."""

import contextlib

from .. import _rumus
from .._rumus import Tensor
from .grad_mode import enable_grad, set_grad_enabled

__all__ = ["hessian", "hvp", "jacobian", "jvp", "vhp", "vjp"]


def _as_tuple(value, what, fn_name):
    """(was a tuple, the tensors as a tuple), checking every entry is a tensor."""
    is_tuple = isinstance(value, tuple)
    values = value if is_tuple else (value,)
    for i, v in enumerate(values):
        if not isinstance(v, Tensor):
            if is_tuple:
                raise TypeError(
                    f"The {what} given to {fn_name} must be either a Tensor or a tuple of "
                    f"Tensors but the value at index {i} has type {type(v)}."
                )
            raise TypeError(
                f"The {what} given to {fn_name} must be either a Tensor or a tuple of Tensors "
                f"but the given {what} has type {type(v)}."
            )
    return is_tuple, values


def _unpack(res, is_tuple):
    """Undoes ``_as_tuple``: ``is_tuple`` is one flag, or (outputs, inputs) for nested results."""
    if isinstance(is_tuple, tuple):
        outs_tuple, ins_tuple = is_tuple
        if not ins_tuple:
            res = tuple(r[0] for r in res)
        return res if outs_tuple else res[0]
    return res if is_tuple else res[0]


def _prepare(inputs, create_graph, need_graph):
    """Fresh tensors to differentiate with respect to: with create_graph, differentiable aliases
    of inputs that require grad (so the result can be differentiated back to them); otherwise
    detached copies of the handles."""
    return tuple(
        t.view_as(t) if create_graph and t.requires_grad else t.detach().requires_grad_(need_graph)
        for t in inputs
    )


def _finish(values, create_graph):
    if create_graph:
        return values
    return tuple(v.detach() if isinstance(v, Tensor) else _finish(v, False) for v in values)


def _check_v(v, refs, is_tuple):
    if len(v) != len(refs):
        if is_tuple:
            raise RuntimeError(
                f"v is a tuple of invalid length: should be {len(refs)} but got {len(v)}."
            )
        raise RuntimeError("The given v should contain a single Tensor.")
    for i, (a, b) in enumerate(zip(v, refs)):
        if a.shape != b.shape:
            prefix = f"Entry {i} in " if is_tuple else ""
            raise RuntimeError(
                f"{prefix}v has invalid size: should be {tuple(b.shape)} but got {tuple(a.shape)}."
            )


_NOT_DIFFERENTIABLE = {
    "outputs": "Output {i} of the user-provided function does not require gradients. The "
    "outputs must be computed in a differentiable manner from the input when running in "
    "strict mode.",
    "grad_inputs": "The gradient with respect to input {i} is independent of the inputs of the "
    "user-provided function. This is not allowed in strict mode.",
    "jacobian": "While computing the hessian, found that the jacobian of the user-provided "
    "function with respect to input {i} is independent of the input. This is not allowed in "
    "strict mode. You should ensure that your function is twice differentiable and that the "
    "jacobian depends on the inputs (this would be violated by a linear function for example).",
    "hessian": "The hessian of the user-provided function with respect to input {i} is "
    "independent of the input. This is not allowed in strict mode. You should ensure that your "
    "function is thrice differentiable and that the hessian depends on the inputs.",
}


def _check_requires_grad(values, kind, strict):
    if not strict:
        return
    for i, v in enumerate(values):
        if v is None:
            raise RuntimeError(
                f"The output of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode."
            )
        if not v.requires_grad:
            raise RuntimeError(_NOT_DIFFERENTIABLE[kind].format(i=i))


_INDEPENDENT = {
    "back": "The output of the user-provided function is independent of input {i}. This is not "
    "allowed in strict mode.",
    "back_trick": "The gradient with respect to the input is independent of entry {i} in the "
    "grad_outputs when using the double backward trick to compute forward mode gradients. This "
    "is not allowed in strict mode.",
    "double_back": "The jacobian of the user-provided function is independent of input {i}. "
    "This is not allowed in strict mode.",
    "double_back_trick": "The hessian of the user-provided function is independent of entry {i} "
    "in the grad_jacobian. This is not allowed in strict mode as it prevents from using the "
    "double backward trick to replace forward mode AD.",
}


def _zeros_for_missing(grads, refs, strict, create_graph, stage):
    out = []
    for i, g in enumerate(grads):
        if g is None:
            if strict:
                raise RuntimeError(_INDEPENDENT[stage].format(i=i))
            g = _rumus.zeros_like(refs[i])
        elif strict and create_graph and not g.requires_grad:
            what = "hessian" if "double" in stage else "jacobian"
            raise RuntimeError(
                f"The {what} of the user-provided function is independent of input {i}. This is "
                "not allowed in strict mode when create_graph=True."
            )
        out.append(g)
    return tuple(out)


def _grad(outputs, inputs, grad_outputs=None, create_graph=False, retain_graph=None):
    """autograd.grad over the outputs that take part in autograd (None for unreached inputs)."""
    if grad_outputs is None:
        grad_outputs = (None,) * len(outputs)
    pairs = [(o, g) for o, g in zip(outputs, grad_outputs) if o is not None and o.requires_grad]
    if not pairs:
        return (None,) * len(inputs)
    outs, gouts = zip(*pairs)
    return _rumus.grad(
        list(outs),
        list(inputs),
        list(gouts),
        retain_graph,
        create_graph,
        True,
        False,
        False,
    )


def vjp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ·J): the vector-Jacobian product of ``func`` at ``inputs``.

    Args:
        func: a function of tensors returning a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        v: the vector, shaped as func's output (None only for a single one-element output).
        create_graph: build a graph of the result, for higher-order derivatives.
        strict: raise when an output does not depend on an input (instead of returning zeros).

    Returns:
        (outputs, vjp), each a tensor or a tuple as func's output and inputs.
    """
    with enable_grad():
        ins_tuple, inputs = _as_tuple(inputs, "inputs", "vjp")
        inputs = _prepare(inputs, create_graph, True)
        outputs = func(*inputs)
        outs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "vjp")
        _check_requires_grad(outputs, "outputs", strict)
        if v is not None:
            _, v = _as_tuple(v, "v", "vjp")
            v = _prepare(v, create_graph, False)
            _check_v(v, outputs, outs_tuple)
        elif len(outputs) != 1 or outputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the user-provided function returns a single "
                "Tensor with a single element."
            )
    with set_grad_enabled(create_graph):
        grads = _grad(outputs, inputs, v, create_graph=create_graph)
        result = _zeros_for_missing(grads, inputs, strict, create_graph, "back")
    return (
        _unpack(_finish(outputs, create_graph), outs_tuple),
        _unpack(_finish(result, create_graph), ins_tuple),
    )


def _jvp_tuples(func, inputs, v, create_graph, strict):
    """jvp on tuples: (outputs, J·v) through the double-backward trick."""
    with enable_grad():
        outputs = func(*inputs)
        outs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", "jvp")
        _check_requires_grad(outputs, "outputs", strict)
        # u -> uᵀ·J is linear; its gradient with respect to u, applied to v, is J·v.
        u = tuple(_rumus.zeros_like(o, requires_grad=True) for o in outputs)
        vjps = _grad(outputs, inputs, u, create_graph=True)
        _check_requires_grad(vjps, "grad_inputs", strict)
    with enable_grad() if create_graph else contextlib.nullcontext():
        grads = _grad(vjps, u, v, create_graph=create_graph)
        result = _zeros_for_missing(grads, outputs, strict, create_graph, "back_trick")
    return outs_tuple, outputs, result


def jvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), J·v): the Jacobian-vector product of ``func`` at ``inputs``.

    Args:
        func: a function of tensors returning a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        v: the vector, shaped as inputs (None only for a single one-element input).
        create_graph: build a graph of the result, for higher-order derivatives.
        strict: raise when an output does not depend on an input (instead of returning zeros).

    Returns:
        (outputs, jvp).
    """
    with enable_grad():
        ins_tuple, inputs = _as_tuple(inputs, "inputs", "jvp")
        inputs = _prepare(inputs, create_graph, True)
        if v is not None:
            _, v = _as_tuple(v, "v", "jvp")
            v = _prepare(v, create_graph, False)
            _check_v(v, inputs, ins_tuple)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a "
                "single Tensor with a single element."
            )
    outs_tuple, outputs, result = _jvp_tuples(func, inputs, v, create_graph, strict)
    return (
        _unpack(_finish(outputs, create_graph), outs_tuple),
        _unpack(_finish(result, create_graph), outs_tuple),
    )


def _check_strategy(strategy, vectorize, create_graph, name):
    if strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError(
            'Expected strategy to be either "forward-mode" or "reverse-mode". Hint: If your '
            'function has more outputs than inputs, "forward-mode" tends to be more performant. '
            'Otherwise, prefer to use "reverse-mode".'
        )
    if strategy == "forward-mode":
        if not vectorize:
            raise NotImplementedError(
                "Computing Jacobian using forward-AD or forward-over-reverse Hessian is only "
                "implemented for `vectorize=True`."
            )
        if create_graph:
            raise NotImplementedError(
                f'{name}: `create_graph=True` and `strategy="forward-mode"` are not supported '
                "together (yet). Please either set `create_graph=False` or make sure to use "
                '`strategy="reverse-mode"`.'
            )


def _stack_rows(rows, out_shape, ref):
    """Rows (one per output element) into a tensor of shape out_shape + ref.shape."""
    shape = tuple(out_shape) + tuple(ref.shape)
    if not rows:
        return _rumus.zeros(shape, dtype=ref.dtype, device=ref.device)
    return _rumus.stack(rows, 0).reshape(shape)


def jacobian(
    func, inputs, create_graph=False, strict=False, vectorize=False, strategy="reverse-mode"
):
    """The Jacobian of ``func`` at ``inputs``.

    For output i and input j, a tensor of shape ``outputs[i].shape + inputs[j].shape``,
    nested as ``[i][j]`` when outputs and inputs are tuples.

    Args:
        func: a function of tensors returning a tensor or a tuple of tensors.
        inputs: a tensor or a tuple of tensors.
        create_graph: build a graph of the result, for higher-order derivatives.
        strict: raise when an output does not depend on an input (instead of returning zeros).
        vectorize: accepted; the rows are computed one at a time.
        strategy: "reverse-mode" (one backward pass per output element) or "forward-mode"
            (needs vectorize=True; one column per input element).

    Returns:
        A tensor, or (nested) tuples of tensors.
    """
    _check_strategy(strategy, vectorize, create_graph, "torch.autograd.functional.jacobian")
    if strict and vectorize:
        raise RuntimeError(
            "torch.autograd.functional.jacobian: `strict=True` and `vectorize=True` are not "
            "supported together. Please either set `strict=False` or `vectorize=False`."
        )
    with enable_grad():
        ins_tuple, inputs = _as_tuple(inputs, "inputs", "jacobian")
        inputs = _prepare(inputs, create_graph, True)
        if strategy == "forward-mode":
            return _forward_jacobian(func, inputs, ins_tuple)
        outputs = func(*inputs)
        outs_tuple, outputs = _as_tuple(
            outputs, "outputs of the user-provided function", "jacobian"
        )
        _check_requires_grad(outputs, "outputs", strict)
        jac = []
        for i, out in enumerate(outputs):
            rows = [[] for _ in inputs]
            flat = out.reshape(-1)
            for k in range(out.numel()):
                grads = _grad((flat[k],), inputs, retain_graph=True, create_graph=create_graph)
                for j, (g, inp) in enumerate(zip(grads, inputs)):
                    if g is None:
                        if strict:
                            raise RuntimeError(
                                f"Output {i} of the user-provided function is independent of "
                                f"input {j}. This is not allowed in strict mode."
                            )
                        g = _rumus.zeros_like(inp)
                    elif strict and create_graph and not g.requires_grad:
                        raise RuntimeError(
                            "The jacobian of the user-provided function is independent of "
                            f"input {j}. This is not allowed in strict mode when "
                            "create_graph=True."
                        )
                    rows[j].append(g)
            jac.append(tuple(_stack_rows(r, out.shape, inp) for r, inp in zip(rows, inputs)))
        jac = tuple(_finish(row, create_graph) for row in jac)
        return _unpack(jac, (outs_tuple, ins_tuple))


def _forward_jacobian(func, inputs, ins_tuple):
    """Jacobian columns J·e_k for every input element, through ``jvp``."""
    columns = [[] for _ in inputs]
    outs_tuple = outputs = None
    for j, inp in enumerate(inputs):
        for k in range(inp.numel()):
            v = [_rumus.zeros_like(t) for t in inputs]
            flat = v[j].reshape(-1)
            flat[k] = 1
            v[j] = flat.reshape(inp.shape)
            outs_tuple, outputs, col = _jvp_tuples(func, inputs, tuple(v), False, False)
            columns[j].append(col)
    if outputs is None:  # every input is empty: one call for the output shapes
        outs_tuple, outputs = _as_tuple(
            func(*inputs), "outputs of the user-provided function", "jacobian"
        )
    jac = []
    for i, out in enumerate(outputs):
        row = []
        for j, inp in enumerate(inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            cols = [c[i].reshape(-1) for c in columns[j]]
            if cols:
                t = _rumus.stack(cols, 1).reshape(shape)
            else:
                t = _rumus.zeros(shape, dtype=out.dtype, device=out.device)
            row.append(t.detach())
        jac.append(tuple(row))
    return _unpack(tuple(jac), (outs_tuple, ins_tuple))


def hessian(
    func,
    inputs,
    create_graph=False,
    strict=False,
    vectorize=False,
    outer_jacobian_strategy="reverse-mode",
):
    """The Hessian of a scalar function ``func`` at ``inputs``.

    For inputs i and j, a tensor of shape ``inputs[i].shape + inputs[j].shape`` (nested
    ``[i][j]`` for a tuple of inputs).

    Args:
        func: a function of tensors returning a one-element tensor.
        inputs: a tensor or a tuple of tensors.
        create_graph: build a graph of the result, for higher-order derivatives.
        strict: raise when an output does not depend on an input (instead of returning zeros).
        vectorize: accepted; the rows are computed one at a time.
        outer_jacobian_strategy: "reverse-mode" or "forward-mode", for the outer Jacobian.

    Returns:
        A tensor, or nested tuples of tensors.
    """
    ins_tuple, inputs = _as_tuple(inputs, "inputs", "hessian")
    if outer_jacobian_strategy not in ("forward-mode", "reverse-mode"):
        raise ValueError('Expected strategy to be either "forward-mode" or "reverse-mode".')

    def scalar_output(*args):
        out = func(*args)
        out_tuple, outs = _as_tuple(out, "outputs of the user-provided function", "hessian")
        _check_requires_grad(outs, "outputs", strict)
        if out_tuple:
            raise RuntimeError("The function given to hessian should return a single Tensor")
        if out.numel() != 1:
            raise RuntimeError(
                "The Tensor returned by the function given to hessian should contain a single "
                "element"
            )
        return out.squeeze()

    def gradient(*args):
        jac = jacobian(scalar_output, args, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
        return jac

    res = jacobian(
        gradient,
        inputs,
        create_graph=create_graph,
        strict=strict,
        vectorize=vectorize,
        strategy=outer_jacobian_strategy,
    )
    return _unpack(res, (ins_tuple, ins_tuple))


def _scalar_gradient(func, inputs, v, name, create_graph, strict):
    """Shared start of vhp/hvp: (inputs, v, outputs, outputs tuple flag, inputs flag, ∇func)."""
    with enable_grad():
        ins_tuple, inputs = _as_tuple(inputs, "inputs", name)
        inputs = _prepare(inputs, create_graph, True)
        if v is not None:
            _, v = _as_tuple(v, "v", name)
            v = _prepare(v, create_graph, False)
            _check_v(v, inputs, ins_tuple)
        elif len(inputs) != 1 or inputs[0].numel() != 1:
            raise RuntimeError(
                "The vector v can only be None if the input to the user-provided function is a "
                "single Tensor with a single element."
            )
        outputs = func(*inputs)
        outs_tuple, outputs = _as_tuple(outputs, "outputs of the user-provided function", name)
        _check_requires_grad(outputs, "outputs", strict)
        if outs_tuple:
            raise RuntimeError(f"The function given to {name} should return a single Tensor")
        if outputs[0].numel() != 1:
            raise RuntimeError(
                f"The Tensor returned by the function given to {name} should contain a single "
                "element"
            )
        jac = _grad(outputs, inputs, create_graph=True)
        _check_requires_grad(jac, "jacobian", strict)
    return inputs, v, outputs, outs_tuple, ins_tuple, jac


def vhp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), vᵀ·H): the vector-Hessian product of a scalar function.

    Args:
        func: a function of tensors returning a one-element tensor.
        inputs: a tensor or a tuple of tensors.
        v: the vector, shaped as inputs.
        create_graph: build a graph of the result, for higher-order derivatives.
        strict: raise when an output does not depend on an input (instead of returning zeros).

    Returns:
        (output, vhp).
    """
    inputs, v, outputs, outs_tuple, ins_tuple, jac = _scalar_gradient(
        func, inputs, v, "vhp", create_graph, strict
    )
    with set_grad_enabled(create_graph or _rumus.is_grad_enabled()):
        grads = _grad(jac, inputs, v, create_graph=create_graph)
        result = _zeros_for_missing(grads, inputs, strict, create_graph, "double_back")
    return (
        _unpack(_finish(outputs, create_graph), outs_tuple),
        _unpack(_finish(result, create_graph), ins_tuple),
    )


def hvp(func, inputs, v=None, create_graph=False, strict=False):
    """(func(inputs), H·v): the Hessian-vector product of a scalar function.

    Computed with the double-backward trick; equal to ``vhp`` for functions with a
    symmetric Hessian.

    Args:
        func: a function of tensors returning a one-element tensor.
        inputs: a tensor or a tuple of tensors.
        v: the vector, shaped as inputs.
        create_graph: build a graph of the result, for higher-order derivatives.
        strict: raise when an output does not depend on an input (instead of returning zeros).

    Returns:
        (output, hvp).
    """
    inputs, v, outputs, outs_tuple, ins_tuple, jac = _scalar_gradient(
        func, inputs, v, "hvp", create_graph, strict
    )
    with enable_grad():
        u = tuple(_rumus.zeros_like(t, requires_grad=True) for t in inputs)
        double_back = _grad(jac, inputs, u, create_graph=True)
        _check_requires_grad(jac, "hessian", strict)
    with set_grad_enabled(create_graph or _rumus.is_grad_enabled()):
        grads = _grad(double_back, u, v, create_graph=create_graph)
        result = _zeros_for_missing(grads, inputs, strict, create_graph, "double_back_trick")
    return (
        _unpack(_finish(outputs, create_graph), outs_tuple),
        _unpack(_finish(result, create_graph), ins_tuple),
    )
