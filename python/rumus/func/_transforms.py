"""The differentiation transforms (``grad``, ``grad_and_value``, ``vjp``, ``jvp``, ``jacrev``,
``jacfwd``, ``hessian``) and ``functional_call``.

They run on the reverse-mode engine with ``create_graph=True``, so they compose:
``grad(grad(f))`` differentiates the graph the inner ``grad`` built. Forward-mode products use
the double-backward trick of ``rumus.autograd.functional``.

Inside ``vmap`` the inputs being differentiated are expanded to every active batch level before
the function runs (each sample gets its own copy), the per-sample results are summed and
differentiated once: the samples are independent, so the gradient with respect to copy ``b`` is
sample ``b``'s gradient."""

import contextlib
import functools

import rumus
from rumus import Tensor
from rumus.autograd import functional as _functional
from rumus.autograd.grad_mode import enable_grad

from ._vmap import _BatchedTensor, _levels, _size

_DEPTH = [0]  # transforms running now: the outermost one detaches its results


def _leaves(tree, out):
    if isinstance(tree, (list, tuple)):
        for t in tree:
            _leaves(t, out)
    elif isinstance(tree, dict):
        for t in tree.values():
            _leaves(t, out)
    else:
        out.append(tree)
    return out


def _rebuild(tree, it):
    if isinstance(tree, (list, tuple)):
        items = [_rebuild(t, it) for t in tree]
        return type(tree)(*items) if hasattr(tree, "_fields") else type(tree)(items)
    if isinstance(tree, dict):
        return {k: _rebuild(v, it) for k, v in tree.items()}
    return next(it)


def _phys(t):
    while isinstance(t, _BatchedTensor):
        t = t._value
    return t


def _like(phys, ref):
    """``phys`` wrapped in the batching levels of ``ref`` (same underlying shape)."""
    if isinstance(ref, _BatchedTensor):
        return _BatchedTensor(_like(phys, ref._value), ref._level)
    return phys


def _promote(t, levels):
    """``t`` batched at every level in ``levels`` (outermost first), expanding where it is not."""
    if not levels:
        return t
    level = levels[-1][0]
    if isinstance(t, _BatchedTensor) and t._level == level:
        return _BatchedTensor(_promote(t._value, levels[:-1]), level)
    inner = _promote(t, levels[:-1])
    size = _size(level)
    return _BatchedTensor(inner.unsqueeze(0).expand(size, *inner.shape), level)


def _prepare(t):
    """A differentiable alias of ``t`` to take the gradient at (connected to ``t`` if it
    requires grad, so an enclosing transform can differentiate again)."""
    if not isinstance(t, (Tensor, _BatchedTensor)):
        raise TypeError(
            f"grad: the inputs being differentiated must be Tensors, got {type(t).__name__}"
        )
    p = _phys(t)
    if not p.is_floating_point():
        raise RuntimeError(
            f"grad: only floating point inputs can be differentiated, got dtype {p.dtype}"
        )
    p = p.view_as(p) if p.requires_grad else p.detach().requires_grad_()
    return _promote(_like(p, t), list(_levels()))


def _argnums_check(argnums, nargs, name):
    nums = argnums if isinstance(argnums, tuple) else (argnums,)
    if not nums:
        raise RuntimeError(f"{name}: argnums must be non-empty")
    for a in nums:
        if not isinstance(a, int) or isinstance(a, bool):
            raise RuntimeError(
                f"{name}: argnums must be int or Tuple[int, ...], got: {type(a).__name__}"
            )
        if not -nargs <= a < nargs:
            raise RuntimeError(
                f"Got argnums={a}, but only {nargs} positional inputs were passed to the function"
            )
    return tuple(a % nargs for a in nums)


def _split_aux(out, has_aux, name):
    if not has_aux:
        return out, None
    if not (isinstance(out, tuple) and len(out) == 2):
        raise RuntimeError(
            f"{name}(f, ...)(*args): output of function f should be a tuple: (output, aux) "
            "if has_aux is True"
        )
    return out


@contextlib.contextmanager
def _transform():
    _DEPTH[0] += 1
    try:
        with enable_grad():
            yield
    finally:
        _DEPTH[0] -= 1


def _detach(tree, keep):
    if keep:
        return tree
    leaves = [t.detach() if isinstance(t, (Tensor, _BatchedTensor)) else t
              for t in _leaves(tree, [])]  # fmt: skip
    return _rebuild(tree, iter(leaves))


def _grad_of(out, inputs, grad_out=None):
    """d(sum of out * grad_out)/d inputs, summed over every batch level (see module doc)."""
    po = _phys(out)
    if grad_out is not None:
        go = _phys(_promote_like(grad_out, out))
        po = (po * go).sum()
    else:
        po = po.sum()
    phys_in = [_phys(t) for t in inputs]
    if not po.requires_grad:
        grads = [None] * len(phys_in)
    else:
        grads = rumus.autograd.grad([po], phys_in, create_graph=True, allow_unused=True)
    return [
        _like(rumus.zeros_like(p) if g is None else g, t) for g, p, t in zip(grads, phys_in, inputs)
    ]


def _promote_like(v, ref):
    """``v`` with the batching levels of ``ref`` (expanded where ``v`` lacks one)."""
    levels = []
    r = ref
    while isinstance(r, _BatchedTensor):
        levels.insert(0, (r._level, _size(r._level), None))
        r = r._value
    return _promote(v, levels)


def _levels_of(t):
    out = []
    while isinstance(t, _BatchedTensor):
        out.append(t._level)
        t = t._value
    return out


def batched_autograd_grad(orig):
    """``rumus.autograd.grad`` while a vmap runs: with batched outputs, the inputs must be
    batched at the same levels (each sample then owns its slice, so one backward pass of the
    summed outputs gives every sample's gradient); unbatched inputs would get the sum over the
    batch instead, so they are refused."""

    @functools.wraps(orig)
    def wrapper(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
                allow_unused=None, is_grads_batched=False, materialize_grads=False):  # fmt: skip
        outs = list(outputs) if isinstance(outputs, (list, tuple)) else [outputs]
        ins = list(inputs) if isinstance(inputs, (list, tuple)) else [inputs]
        if not any(isinstance(t, _BatchedTensor) for t in outs + ins):
            return orig(outputs, inputs, grad_outputs, retain_graph, create_graph,
                        allow_unused, is_grads_batched, materialize_grads)  # fmt: skip
        if is_grads_batched:
            raise NotImplementedError(
                "vmap: no batching rule for rumus.autograd.grad with is_grads_batched=True"
            )
        levels = sorted({lvl for o in outs for lvl in _levels_of(o)})
        for i, t in enumerate(ins):
            if sorted(_levels_of(t)) != levels:
                raise NotImplementedError(
                    f"vmap: rumus.autograd.grad inside vmap needs input {i} batched like the "
                    "outputs (the gradient of an unbatched input would sum over the batch); "
                    "use rumus.func.grad, which gives every sample its own copy"
                )
        if grad_outputs is None:
            gouts = [None] * len(outs)
        else:
            gouts = (
                list(grad_outputs) if isinstance(grad_outputs, (list, tuple)) else [grad_outputs]
            )
        total = None
        for o, g in zip(outs, gouts):
            po = _phys(o)
            po = (po * _phys(_promote_like(g, o))).sum() if g is not None else po.sum()
            total = po if total is None else total + po
        grads = orig([total], [_phys(t) for t in ins], None, retain_graph, create_graph,
                     allow_unused, False, materialize_grads)  # fmt: skip
        return tuple(None if g is None else _like(g, t) for g, t in zip(grads, ins))

    return wrapper


def grad_and_value(func, argnums=0, has_aux=False):
    """Like ``grad`` but returns ``(gradient, value)``; with ``has_aux``,
    ``(gradient, (value, aux))`` as in PyTorch."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        nums = _argnums_check(argnums, len(args), "grad_and_value")
        with _transform():
            depth = _DEPTH[0]
            args = list(args)
            diff = {}
            keep = False
            for a in nums:
                leaves = _leaves(args[a], [])
                keep = keep or any(getattr(t, "requires_grad", False) for t in leaves)
                prepared = [_prepare(t) for t in leaves]
                diff[a] = prepared
                args[a] = _rebuild(args[a], iter(prepared))
            out = func(*args, **kwargs)
            out, aux = _split_aux(out, has_aux, "grad_and_value")
            if not isinstance(out, (Tensor, _BatchedTensor)):
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a Tensor, got "
                    f"{type(out).__name__}"
                )
            if out.dim() != 0:
                raise RuntimeError(
                    "grad_and_value(f)(*args): Expected f(*args) to return a scalar Tensor, "
                    f"got tensor with {out.dim()} dims. Maybe you wanted to use the vjp or "
                    "jacrev APIs instead?"
                )
            flat = [t for a in nums for t in diff[a]]
            grads = iter(_grad_of(out, flat))
            per_arg = tuple(_rebuild(args[a], grads) for a in nums)
            g = per_arg if isinstance(argnums, tuple) else per_arg[0]
            keep = keep or depth > 1
            g, out = _detach(g, keep), _detach(out, keep)
            if has_aux:
                return g, (out, _detach(aux, keep))
            return g, out

    return wrapper


def grad(func, argnums=0, has_aux=False):
    """The gradient of scalar-valued ``func`` with respect to positional argument(s)
    ``argnums`` (each a tensor or a pytree of tensors); ``has_aux``: ``func`` returns
    ``(output, aux)`` and ``grad`` returns ``(gradient, aux)``."""
    gv = grad_and_value(func, argnums, has_aux)

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        g, value = gv(*args, **kwargs)
        return (g, value[1]) if has_aux else g

    return wrapper


def vjp(func, *primals, has_aux=False):
    """``(func(*primals), vjp_fn)``: ``vjp_fn(cotangents)`` returns a tuple with the
    vector-Jacobian product for each primal. Outputs may be a tensor or a pytree of tensors."""
    with _transform():
        keep = any(getattr(t, "requires_grad", False) for t in _leaves(list(primals), []))
        prepared = [_rebuild(p, iter([_prepare(t) for t in _leaves(p, [])])) for p in primals]
        out = func(*prepared)
        out, aux = _split_aux(out, has_aux, "vjp")
    outs = _leaves(out, [])
    for o in outs:
        if not isinstance(o, (Tensor, _BatchedTensor)):
            raise RuntimeError(
                f"vjp(f, *primals): Expected f to be a function that has only Tensor outputs, "
                f"got {type(o).__name__}"
            )
    flat_in = _leaves(prepared, [])
    keep = keep or _DEPTH[0] > 0

    def vjp_fn(cotangents, *rest):
        if rest:
            cotangents = (cotangents, *rest)
        cts = _leaves(cotangents, [])
        if len(cts) != len(outs):
            raise RuntimeError(
                f"Expected pytree structure of cotangents to be the same as pytree structure "
                f"of outputs to the function: got {len(cts)} cotangents for {len(outs)} outputs"
            )
        for c, o in zip(cts, outs):
            if tuple(c.shape) != tuple(o.shape):
                raise RuntimeError(
                    f"Mismatch in shape: grad_output has a shape of {tuple(c.shape)} and "
                    f"output has a shape of {tuple(o.shape)}."
                )
        with _transform():
            total = None
            for o, c in zip(outs, cts):
                g = _grad_of(o, flat_in, c)
                total = g if total is None else [a + b for a, b in zip(total, g)]
        it = iter(_detach(total, keep))
        return tuple(_rebuild(p, it) for p in primals)

    out = _detach(out, keep)
    if has_aux:
        return out, vjp_fn, _detach(aux, keep)
    return out, vjp_fn


def _plain(values, name):
    for v in _leaves(values, []):
        if isinstance(v, _BatchedTensor):
            raise NotImplementedError(f"vmap: no batching rule for rumus.func.{name}")


def jvp(func, primals, tangents, *, strict=False, has_aux=False):
    """``(func(*primals), J·tangents)`` by the double-backward trick."""
    if not isinstance(primals, (tuple, list)) or not isinstance(tangents, (tuple, list)):
        raise RuntimeError("jvp(f, primals, tangents): Expected primals and tangents to be tuples")
    if len(primals) != len(tangents):
        raise RuntimeError(
            "jvp(f, primals, tangents): Expected primals and tangents to have the same python "
            f"structure, got {len(primals)} primals and {len(tangents)} tangents"
        )
    _plain((primals, tangents), "jvp")
    if strict:
        raise RuntimeError("jvp(f, primals, tangents): strict=True is not implemented")
    aux_box = []

    def f(*xs):
        out = func(*xs)
        out, aux = _split_aux(out, has_aux, "jvp")
        aux_box.append(aux)
        return out

    keep = _DEPTH[0] > 0 or any(t.requires_grad for t in primals)
    with _transform():
        out, tang = _functional.jvp(f, tuple(primals), tuple(tangents), create_graph=True)
    out, tang = _detach(out, keep), _detach(tang, keep)
    if has_aux:
        return out, tang, _detach(aux_box[0], keep)
    return out, tang


def jacrev(func, argnums=0, *, has_aux=False, chunk_size=None):
    """The Jacobian of ``func`` with respect to ``argnums``, one backward pass per output
    element: shape ``output.shape + input.shape``."""
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError("jacrev: `chunk_size` should be greater than 0.")
    return _jac_wrap(func, argnums, has_aux, "jacrev", False)


def jacfwd(func, argnums=0, has_aux=False, *, randomness="error"):
    """The Jacobian of ``func`` with respect to ``argnums``, one forward-mode product (the
    double-backward trick) per input element."""
    if randomness not in ("error", "different", "same"):
        raise RuntimeError(
            "Only allowed values for randomness are 'error', 'different', or 'same'. Got "
            f"{randomness}"
        )
    return _jac_wrap(func, argnums, has_aux, "jacfwd", True)


def _jac_wrap(func, argnums, has_aux, name, forward):
    """Handles tuple outputs: functional.jacobian gives [output][input]."""

    @functools.wraps(func)
    def wrapper(*args):
        nums = _argnums_check(argnums, len(args), name)
        _plain(args, name)
        for a in nums:
            if not isinstance(args[a], Tensor):
                raise RuntimeError(
                    f"{name}: the differentiated arguments must be Tensors, got "
                    f"{type(args[a]).__name__} for argument {a}"
                )
        aux_box, shape_box = [], []
        keep = _DEPTH[0] > 0 or any(args[a].requires_grad for a in nums)

        def f(*xs):
            full = list(args)
            for a, x in zip(nums, xs):
                full[a] = x
            out = func(*full)
            out, aux = _split_aux(out, has_aux, name)
            if not shape_box:
                aux_box.append(aux)
                shape_box.append(isinstance(out, tuple))
            return out

        with _transform():
            inputs = tuple(args[a] for a in nums)
            if forward:
                jac = _forward_jacobian(f, inputs)
            else:
                jac = _functional.jacobian(f, inputs, create_graph=True)
        out_tuple = shape_box[0]
        rows = jac if out_tuple else (jac,)
        if isinstance(argnums, tuple):
            rows = tuple(tuple(r) for r in rows)
        else:
            rows = tuple(r[0] for r in rows)
        jac = _detach(rows if out_tuple else rows[0], keep)
        if has_aux:
            return jac, _detach(aux_box[0], keep)
        return jac

    return wrapper


def _forward_jacobian(func, inputs):
    """Jacobian columns J·e_k for every input element (double-backward jvp, graph kept so the
    result can be differentiated again); nested [output][input] like functional.jacobian."""
    inputs = _functional._prepare(inputs, True, True)
    columns = [[] for _ in inputs]
    outputs = None
    for j, inp in enumerate(inputs):
        for k in range(inp.numel()):
            v = [rumus.zeros_like(t) for t in inputs]
            v[j] = rumus.zeros(inp.numel(), dtype=inp.dtype).index_fill(0, rumus.tensor([k]), 1)
            v[j] = v[j].reshape(inp.shape)
            outs_tuple, outputs, col = _functional._jvp_tuples(func, inputs, tuple(v), True, False)
            columns[j].append(col)
    if outputs is None:
        out = func(*inputs)
        outs_tuple, outputs = isinstance(out, tuple), out if isinstance(out, tuple) else (out,)
    jac = []
    for i, out in enumerate(outputs):
        row = []
        for j, inp in enumerate(inputs):
            shape = tuple(out.shape) + tuple(inp.shape)
            cols = [c[i].reshape(-1) for c in columns[j]]
            if cols:
                row.append(rumus.stack(cols, 1).reshape(shape))
            else:
                row.append(rumus.zeros(shape, dtype=out.dtype, device=out.device))
        jac.append(tuple(row))
    return tuple(jac) if outs_tuple else jac[0]


def hessian(func, argnums=0):
    """The Hessian of scalar ``func``: ``jacfwd(jacrev(func, argnums), argnums)``."""
    return jacfwd(jacrev(func, argnums), argnums)


def functional_call(module, parameter_and_buffer_dicts, args=None, kwargs=None, *,
                    tie_weights=True, strict=False):  # fmt: skip
    """Calls ``module(*args, **kwargs)`` with the tensors of ``parameter_and_buffer_dicts``
    (a dict name -> tensor, or a sequence of dicts) in place of its parameters and buffers,
    restoring the originals afterwards, even if the call raises.

    ``tie_weights``: a parameter registered under several names (shared) is replaced wherever
    it appears when any of its names is given. ``strict``: the dicts must name every parameter
    and buffer exactly."""
    if isinstance(parameter_and_buffer_dicts, dict):
        mapping = dict(parameter_and_buffer_dicts)
    elif isinstance(parameter_and_buffer_dicts, (list, tuple)):
        mapping = {}
        for d in parameter_and_buffer_dicts:
            if not isinstance(d, dict):
                raise ValueError(
                    "Expected all elements of parameter_and_buffer_dicts to be dictionaries"
                )
            dup = set(mapping) & set(d)
            if dup:
                raise ValueError(
                    f"{sorted(dup)} appeared in multiple dictionaries; behavior of "
                    "functional call is ambiguous"
                )
            mapping.update(d)
    else:
        raise ValueError(
            "Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but "
            f"got {type(parameter_and_buffer_dicts)}"
        )
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    kwargs = {} if kwargs is None else kwargs
    named = {}
    for prefix, mod in module.named_modules(remove_duplicate=False):
        for attr, t in list(mod._parameters.items()) + list(mod._buffers.items()):
            if t is not None:
                named[f"{prefix}.{attr}" if prefix else attr] = (mod, attr, t)
    unknown = [k for k in mapping if k not in named]
    missing = [k for k in named if k not in mapping]
    if strict and (unknown or missing):
        parts = []
        if unknown:
            parts.append(f"Unexpected key(s): {', '.join(repr(k) for k in unknown)}.")
        if missing:
            parts.append(f"Missing key(s): {', '.join(repr(k) for k in missing)}.")
        raise RuntimeError("Error(s) in reparametrizing for " + module._get_name() + ":\n\t"
                           + "\n\t".join(parts))  # fmt: skip
    if unknown:
        raise AttributeError(
            f"functional_call: {module._get_name()} has no parameter or buffer named {unknown[0]!r}"
        )
    if tie_weights:
        by_tensor = {}
        for name, (_, _, t) in named.items():
            by_tensor.setdefault(id(t), []).append(name)
        for names in by_tensor.values():
            given = [n for n in names if n in mapping]
            if len(given) > 1 and any(mapping[n] is not mapping[given[0]] for n in given):
                raise ValueError(
                    f"functional_call got multiple values for keys {given}, which are tied. "
                    "Consider using tie_weights=False"
                )
            if given:
                for n in names:
                    mapping.setdefault(n, mapping[given[0]])
    saved = []
    try:
        for name, value in mapping.items():
            mod, attr, _ = named[name]
            store = mod._parameters if attr in mod._parameters else mod._buffers
            saved.append((store, attr, store[attr]))
            store[attr] = value
        return module(*args, **kwargs)
    finally:
        for store, attr, value in reversed(saved):
            store[attr] = value
