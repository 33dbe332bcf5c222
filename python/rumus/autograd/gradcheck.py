"""Finite-difference checks of rumus's autograd, with PyTorch's semantics.

``gradcheck(func, inputs)`` compares, for every floating-point output of
``func`` and every input that requires grad, the analytical Jacobian (one
``rumus.autograd.grad`` call per output element, with a one-hot
``grad_outputs``) against a central-difference numerical Jacobian
``(f(x + eps) - f(x - eps)) / (2 * eps)`` taken element by element in
float64.  ``gradgradcheck`` runs ``gradcheck`` on the function mapping
``(inputs, grad_outputs)`` to the first derivatives built with
``create_graph=True``, which checks the second derivatives.

Jacobians are stored as in PyTorch: ``J[k, l]`` is d output[l] / d input[k]
with both tensors flattened in row-major order, i.e. one row per input
element and one column per output element.

The numerical Jacobian perturbs the caller's tensors in place (through a
detached alias, under ``no_grad``) and restores each element exactly, so
non-contiguous inputs keep their layout.  The analytical Jacobian is
computed first, so the perturbations never meet a live graph that saved
the inputs.
"""

import warnings

import numpy as np

import rumus

__all__ = ["gradcheck", "gradgradcheck", "GradcheckError"]


class GradcheckError(RuntimeError):
    """Raised by gradcheck/gradgradcheck when a check fails."""


# ------------------------------------------------------------------ helpers


def _is_tensor(x):
    return isinstance(x, rumus.Tensor)


def _as_tuple(x):
    if isinstance(x, tuple):
        return x
    if isinstance(x, list):
        return tuple(x)
    return (x,)


def _to_np(t):
    """float64 numpy copy of a tensor's values (never shares memory)."""
    t = t.detach()
    if t.dtype != rumus.float64:
        t = t.to(rumus.float64)
    return np.array(t.numpy(), dtype=np.float64, copy=True)


def _numel(t):
    return int(np.prod(tuple(t.shape), dtype=np.int64))


def _is_float_output(o):
    return _is_tensor(o) and o.is_floating_point()


def _diff_inputs(inputs):
    """(position, tensor) for every input that requires grad."""
    return [(i, x) for i, x in enumerate(inputs) if _is_tensor(x) and x.requires_grad]


def _check_inputs(inputs):
    any_grad = False
    for idx, x in enumerate(inputs):
        if _is_tensor(x) and x.requires_grad:
            if x.dtype != rumus.float64:
                warnings.warn(
                    f"Input #{idx} requires gradient and is not a double precision floating point. "
                    "This check will likely fail if all the inputs are not of double precision "
                    "floating point.",
                    UserWarning,
                    stacklevel=3,
                )
            # Overlapping memory (stride 0): perturbing one element would move several.
            if not all(st > 0 or sz <= 1 for st, sz in zip(x.stride(), tuple(x.shape))):
                raise RuntimeError(
                    f"The {idx}th input has a dimension with stride 0. gradcheck only supports "
                    "inputs that are non-overlapping to be able to compute the numerical "
                    "gradients correctly. You should call .contiguous on the input before passing "
                    "it to gradcheck."
                )
            any_grad = True
    if not any_grad:
        raise ValueError(
            "gradcheck expects at least one input tensor to require gradient, "
            "but none of the them have requires_grad=True."
        )


def _fail(msg, raise_exception):
    if raise_exception:
        raise GradcheckError(msg)
    return False


# ------------------------------------------------------------- jacobians


def _analytical_jacobian(outputs, diff_inputs, out_idx):
    """Jacobians of outputs[out_idx] w.r.t. each differentiable input.

    Returns (list of (numel_in, numel_out) arrays, error message or None).
    """
    o = outputs[out_idx]
    n_out = _numel(o)
    jacs = [np.zeros((_numel(x), n_out)) for _, x in diff_inputs]
    if not o.requires_grad or n_out == 0:
        return jacs, None  # constant output: d o / d x = 0
    xs = tuple(x for _, x in diff_inputs)
    shape = tuple(o.shape)
    for col in range(n_out):
        unit = np.zeros(n_out)
        unit[col] = 1.0
        g_out = rumus.tensor(unit.reshape(shape), dtype=o.dtype)
        grads = rumus.autograd.grad((o,), xs, (g_out,), retain_graph=True, allow_unused=True)
        for k, ((pos, x), g) in enumerate(zip(diff_inputs, grads)):
            if g is None:
                continue  # unused input: zero column
            if tuple(g.shape) != tuple(x.shape):
                return jacs, (
                    f"Gradient has shape mismatch for output {out_idx} with respect to input "
                    f"{pos}: got {tuple(g.shape)}, expected {tuple(x.shape)}"
                )
            jacs[k][:, col] = _to_np(g).reshape(-1)
    return jacs, None


def _check_grad_dtypes(outputs, diff_inputs, out_idx):
    o = outputs[out_idx]
    if not o.requires_grad or _numel(o) == 0:
        return None
    g_out = rumus.ones_like(o.detach())
    grads = rumus.autograd.grad(
        (o,), tuple(x for _, x in diff_inputs), (g_out,), retain_graph=True, allow_unused=True
    )
    for (pos, x), g in zip(diff_inputs, grads):
        if g is not None and g.dtype != x.dtype:
            return (
                f"Gradient has dtype mismatch for output {out_idx} with respect to input {pos}: "
                f"got {g.dtype}, expected {x.dtype}"
            )
    return None


def _fresh_like(x, values):
    """Fallback perturbation: a new tensor holding ``values`` (numpy, x's logical shape),
    with the layout of x where x is a permutation of a contiguous tensor."""
    order = sorted(range(x.dim()), key=lambda d: -x.stride()[d])
    t = rumus.tensor(np.ascontiguousarray(values.transpose(order)), dtype=x.dtype)
    inv = [0] * len(order)
    for i, d in enumerate(order):
        inv[d] = i
    t = t.permute(*inv) if order else t
    return t.requires_grad_(x.requires_grad)


def _numerical_jacobian(func, inputs, diff_inputs, float_out, eps):
    """Central differences: {(out_idx, k): (numel_in, numel_out) array}."""
    inputs = list(inputs)

    def evaluate():
        outs = _as_tuple(func(*inputs))
        return [_to_np(outs[j]).reshape(-1) for j in float_out]

    jacs = {}
    for k, (pos, x) in enumerate(diff_inputs):
        orig = _to_np(x)
        shape = tuple(x.shape)
        n_in = orig.size
        cols = None
        alias = x.detach()  # shares x's storage and layout
        in_place = True
        for flat in range(n_in):
            idx = np.unravel_index(flat, shape) if shape else ()
            idx = tuple(int(i) for i in idx)
            v0 = float(orig[idx])
            results = []
            for v in (v0 - eps, v0 + eps):
                if in_place:
                    try:
                        with rumus.no_grad():
                            alias[idx] = v
                    except RuntimeError:
                        in_place = False  # engine refuses: pass a fresh tensor instead
                if not in_place:
                    vals = orig.copy()
                    vals[idx] = v
                    inputs[pos] = _fresh_like(x, vals)
                try:
                    results.append(evaluate())
                finally:
                    if in_place:
                        with rumus.no_grad():
                            alias[idx] = v0
                    else:
                        inputs[pos] = x
            if cols is None:
                cols = [np.zeros((n_in, r.size)) for r in results[0]]
            for j, (lo, hi) in enumerate(zip(results[0], results[1])):
                cols[j][flat, :] = (hi - lo) / (2.0 * eps)
        for j, out_idx in enumerate(float_out):
            jacs[(out_idx, k)] = cols[j] if cols is not None else None
    return jacs


def _worst(a, n, atol, rtol):
    """Flat (row, col) of the element that misses the tolerance by the most."""
    excess = np.abs(a - n) - (atol + rtol * np.abs(n))
    return np.unravel_index(int(np.argmax(excess)), a.shape)


def _pos(flat, shape):
    return tuple(int(i) for i in np.unravel_index(flat, shape)) if shape else ()


def _realified(func, inputs):
    """Complex inputs and outputs seen through view_as_real, as PyTorch's gradcheck
    perturbs real and imaginary parts separately: each complex input that requires grad
    becomes a real leaf with a trailing (real, imag) dim, each complex output its real
    view. The real Jacobian then checks the conjugate-Wirtinger gradient
    (dL/dx + i dL/dy)."""
    if not any(_is_tensor(x) and x.is_complex() for x in inputs):
        return _realify_outputs(func), inputs
    where = [_is_tensor(x) and x.is_complex() and x.requires_grad for x in inputs]
    leaves = tuple(
        rumus.view_as_real(x.detach()).clone().requires_grad_() if w else x
        for x, w in zip(inputs, where)
    )

    def wrapped(*xs):
        xs = [rumus.view_as_complex(x) if w else x for x, w in zip(xs, where)]
        return func(*xs)

    return _realify_outputs(wrapped), leaves


def _realify_outputs(func):
    def wrapped(*xs):
        out = func(*xs)
        if isinstance(out, (tuple, list)):
            return tuple(
                rumus.view_as_real(o) if _is_tensor(o) and o.is_complex() else o for o in out
            )
        return rumus.view_as_real(out) if _is_tensor(out) and out.is_complex() else out

    return wrapped


# ------------------------------------------------------------------ public


def gradcheck(
    func,
    inputs,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    nondet_tol=0.0,
    check_grad_dtypes=False,
):
    """Check the gradients of ``func`` at ``inputs`` against finite differences.

    ``inputs`` is a tensor or a tuple; every tensor in it with
    ``requires_grad=True`` (which should be float64) is checked.  ``func``
    returns a tensor or a tuple of tensors; outputs that are not floating
    point are skipped.  Returns True, or raises :class:`GradcheckError`
    (``raise_exception=False``: returns False) naming the output, the input
    and the element where analytical and numerical derivatives differ most.
    ``nondet_tol`` bounds how much two backward passes may differ.

    Args:
        func (callable): takes the tensors in ``inputs`` and returns a tensor or a tuple of tensors.
        inputs (Tensor or tuple[Tensor, ...]): float64 inputs; those with requires_grad are checked.
        eps (float): the finite-difference step.
        atol (float): the absolute tolerance.
        rtol (float): the relative tolerance.
        raise_exception (bool): raise on a mismatch instead of returning False.
        nondet_tol (float): the tolerance for nondeterminism.
        check_grad_dtypes (bool): check that gradients have their inputs' dtypes.

    Returns:
        bool: True if the gradients match.
    """
    inputs = _as_tuple(inputs)
    func, inputs = _realified(func, inputs)
    _check_inputs(inputs)
    diff_inputs = _diff_inputs(inputs)

    outputs = _as_tuple(func(*inputs))
    float_out = [j for j, o in enumerate(outputs) if _is_float_output(o)]

    # Analytical Jacobians first (twice: backward must be reentrant).
    analytical = {}
    for j in float_out:
        jac, err = _analytical_jacobian(outputs, diff_inputs, j)
        if err is not None:
            return _fail(err, raise_exception)
        jac2, err = _analytical_jacobian(outputs, diff_inputs, j)
        if err is not None:
            return _fail(err, raise_exception)
        for k, (pos, _) in enumerate(diff_inputs):
            if jac[k].size and np.max(np.abs(jac[k] - jac2[k])) > nondet_tol:
                return _fail(
                    f"Backward is not reentrant, i.e., running backward with same input and "
                    f"grad_output multiple times gives different values, although analytical "
                    f"gradient matches numerical gradient. The tolerance for nondeterminism was "
                    f"{nondet_tol}. (output {j}, input {pos})",
                    raise_exception,
                )
            analytical[(j, k)] = jac[k]
        if check_grad_dtypes:
            err = _check_grad_dtypes(outputs, diff_inputs, j)
            if err is not None:
                return _fail(err, raise_exception)
    out_shapes = {j: tuple(outputs[j].shape) for j in float_out}
    del outputs  # release the graph before perturbing the inputs in place

    numerical = _numerical_jacobian(func, inputs, diff_inputs, float_out, eps)

    for j in float_out:
        for k, (pos, x) in enumerate(diff_inputs):
            a = analytical[(j, k)]
            n = numerical[(j, k)]
            if n is None:  # input with no elements
                continue
            if a.shape != n.shape:
                return _fail(
                    f"Output {j} changed its number of elements under perturbation "
                    f"({a.shape[1]} vs {n.shape[1]})",
                    raise_exception,
                )
            if not np.allclose(a, n, rtol=rtol, atol=atol):
                r, c = _worst(a, n, atol, rtol)
                with np.printoptions(precision=6, suppress=True, linewidth=120, threshold=400):
                    msg = (
                        f"Jacobian mismatch for output {j} with respect to input {pos},\n"
                        f"worst element: d output[{_pos(c, out_shapes[j])}] / "
                        f"d input[{_pos(r, tuple(x.shape))}]: "
                        f"analytical {float(a[r, c])!r} vs numerical {float(n[r, c])!r}\n"
                        f"numerical:{n}\nanalytical:{a}\n"
                    )
                return _fail(msg, raise_exception)
    return True


def gradgradcheck(
    func,
    inputs,
    grad_outputs=None,
    *,
    eps=1e-6,
    atol=1e-5,
    rtol=1e-3,
    raise_exception=True,
    nondet_tol=0.0,
):
    """Check second derivatives of ``func`` by finite differences.

    Runs :func:`gradcheck` on ``(inputs, grad_outputs) -> autograd.grad(
    outputs, inputs, grad_outputs, create_graph=True)``.  Without
    ``grad_outputs``, random ones (seeded, in [-1, 1), requiring grad) of
    the shape and dtype of each differentiable output are used.

    Args:
        func (callable): takes the tensors in ``inputs`` and returns a tensor or a tuple of tensors.
        inputs (Tensor or Sequence[Tensor]): the tensors to differentiate with respect to.
        grad_outputs (Tensor or Sequence[Tensor], optional): the first-order output gradients
            (random when None).
        eps (float): the finite-difference step.
        atol (float): the absolute tolerance.
        rtol (float): the relative tolerance.
        raise_exception (bool): raise on a mismatch instead of returning False.
        nondet_tol (float): the tolerance for nondeterminism.

    Returns:
        bool: True if the second derivatives match.
    """
    func, tupled_inputs = _realified(func, _as_tuple(inputs))
    if grad_outputs is None:
        rng = np.random.default_rng(0)
        outs = [o for o in _as_tuple(func(*tupled_inputs)) if _is_tensor(o) and o.requires_grad]
        tupled_grad_outputs = tuple(
            rumus.tensor(
                rng.uniform(-1.0, 1.0, size=tuple(o.shape)),
                dtype=o.dtype if o.is_floating_point() else rumus.float64,
                requires_grad=True,
            )
            for o in outs
        )
        del outs
    else:
        tupled_grad_outputs = _as_tuple(grad_outputs)
    num_outputs = len(tupled_grad_outputs)
    n_in = len(tupled_inputs)
    diff_idx = [i for i, x in enumerate(tupled_inputs) if _is_tensor(x) and x.requires_grad]

    def new_func(*args):
        input_args = args[:n_in]
        g_outs = args[n_in:]
        outputs = tuple(
            o for o in _as_tuple(func(*input_args)) if _is_tensor(o) and o.requires_grad
        )
        if len(outputs) != num_outputs:
            raise GradcheckError(
                f"gradgradcheck: func has {len(outputs)} differentiable outputs "
                f"but {num_outputs} grad_outputs were given"
            )
        diff_args = tuple(input_args[i] for i in diff_idx)
        if not outputs or not diff_args:
            return ()
        grads = rumus.autograd.grad(
            outputs, diff_args, g_outs, create_graph=True, allow_unused=True
        )
        return tuple(g for g in grads if g is not None)

    return gradcheck(
        new_func,
        tupled_inputs + tupled_grad_outputs,
        eps=eps,
        atol=atol,
        rtol=rtol,
        raise_exception=raise_exception,
        nondet_tol=nondet_tol,
    )
