"""Exporters for views, joins, splits and indexing (registered into ``_ops.EXPORTERS``).

Sizes that change with a dynamic axis are resolved by ``g.sizes``: it compares the sizes an op
got in the traced run with those of the second run at another batch size (see ``_export``).
"""

import rumus

from ._ops import UnsupportedOperatorError, _dims, _shape_args, exporter

_BIG = 2**62


@exporter("reshape", "view")
def _reshape(g, x, *shape):
    target = g.sizes(_shape_args(shape), x, lambda s: _shape_args(s[1:]))
    return g.op("Reshape", g.v(x), g.ints(target))


@exporter("view_as", "reshape_as")
def _reshape_as(g, x, other):
    return g.op("Reshape", g.v(x), g.op("Shape", g.v(other)))


@exporter("flatten")
def _flatten(g, x, start_dim=0, end_dim=-1):
    nd = max(x.dim(), 1)
    s, e = _dims([start_dim, end_dim], nd)
    out = list(g.current_outputs[0].shape)
    shape = [0] * s + [-1] + [out[i] for i in range(s + 1, len(out))]
    return g.op("Reshape", g.v(x), g.ints(shape)) if e >= s else g.op("Identity", g.v(x))


@exporter("unflatten")
def _unflatten(g, x, dim, sizes):
    def full(args):
        t, d = args[0], _dims(args[1], args[0].dim())[0]
        return list(t.shape[:d]) + [int(s) for s in args[2]] + list(t.shape[d + 1 :])

    return g.op("Reshape", g.v(x), g.ints(g.sizes(full((x, dim, sizes)), x, full)))


@exporter("permute")
def _permute(g, x, *dims):
    return g.op("Transpose", g.v(x), perm=_dims(_shape_args(dims), x.dim()))


@exporter("transpose", "swapaxes", "swapdims")
def _transpose(g, x, dim0, dim1):
    perm = list(range(x.dim()))
    a, b = _dims([dim0, dim1], x.dim())
    perm[a], perm[b] = perm[b], perm[a]
    return g.op("Transpose", g.v(x), perm=perm)


@exporter("t")
def _t(g, x):
    return g.op("Transpose", g.v(x), perm=[1, 0]) if x.dim() == 2 else g.op("Identity", g.v(x))


@exporter("_T")
def _big_t(g, x):
    return g.op("Transpose", g.v(x), perm=list(range(x.dim()))[::-1])


@exporter("_mT")
def _mt(g, x):
    return _transpose(g, x, -2, -1)


@exporter("movedim", "moveaxis")
def _movedim(g, x, source, destination):
    nd = x.dim()
    src, dst = _dims(source, nd), _dims(destination, nd)
    rest = [i for i in range(nd) if i not in src]
    perm = [None] * nd
    for s, d in zip(src, dst):
        perm[d] = s
    it = iter(rest)
    perm = [p if p is not None else next(it) for p in perm]
    return g.op("Transpose", g.v(x), perm=perm)


@exporter("squeeze")
def _squeeze(g, x, dim=None):
    if dim is None:
        dims = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = [d for d in _dims(dim, max(x.dim(), 1)) if x.dim() and x.shape[d] == 1]
    return g.op("Squeeze", g.v(x), g.ints(dims)) if dims else g.op("Identity", g.v(x))


@exporter("unsqueeze")
def _unsqueeze(g, x, dim):
    return g.op("Unsqueeze", g.v(x), g.ints(_dims(dim, x.dim() + 1)))


@exporter("expand")
def _expand(g, x, *sizes):
    sizes = _shape_args(sizes)
    nd = len(sizes)
    lead = nd - x.dim()
    resolved = g.sizes(sizes, None, lambda s: _shape_args(s[1:]), expand=True)
    for i, (a, r) in enumerate(zip(sizes, resolved)):
        if r == -1 and a != -1 and (i < lead or x.shape[i - lead] == 1):
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: expand of a size-1 dim to a size that changes with the "
                f"dynamic axes ({sizes})"
            )
    # -1 keeps the input's size; in ONNX's broadcasting 1 does the same.
    target = [1 if (s == -1 and i >= lead) else s for i, s in enumerate(resolved)]
    return g.op("Expand", g.v(x), g.ints(target))


@exporter("expand_as")
def _expand_as(g, x, other):
    return g.op("Expand", g.v(x), g.op("Shape", g.v(other)))


@exporter("repeat", "tile")
def _repeat(g, x, *sizes):
    reps = _shape_args(sizes)
    v = g.v(x)
    if len(reps) > x.dim():
        v = g.op("Reshape", v, g.ints([1] * (len(reps) - x.dim()) + list(x.shape)))
    elif len(reps) < x.dim():
        reps = [1] * (x.dim() - len(reps)) + reps
    return g.op("Tile", v, g.ints(reps))


@exporter("rumus.cat", "rumus.concat", "rumus.concatenate")
def _cat(g, tensors, dim=0):
    tensors = [t for t in tensors if not (t.dim() == 1 and t.shape[0] == 0)]
    dt = g.current_outputs[0].dtype
    axis = _dims(dim, tensors[0].dim())[0]
    return g.op("Concat", *[g.v(t, dtype=dt) for t in tensors], axis=axis)


@exporter("rumus.stack")
def _stack(g, tensors, dim=0):
    axis = _dims(dim, tensors[0].dim() + 1)[0]
    parts = [g.op("Unsqueeze", g.v(t), g.ints([axis])) for t in tensors]
    return g.op("Concat", *parts, axis=axis)


def _split_sizes(g, x, d, sizes):
    outs = g.op("Split", g.v(x), g.ints(sizes), axis=d, n=len(sizes))
    return outs if isinstance(outs, list) else [outs]


@exporter("split")
def _split(g, x, split_size_or_sections, dim=0):
    d = _dims(dim, x.dim())[0]
    return _split_sizes(g, x, d, [o.shape[d] for o in g.current_outputs])


@exporter("chunk")
def _chunk(g, x, chunks, dim=0):
    return _split(g, x, None, dim)


@exporter("unbind")
def _unbind(g, x, dim=0):
    d = _dims(dim, x.dim())[0]
    parts = _split_sizes(g, x, d, [1] * x.shape[d])
    return [g.op("Squeeze", p, g.ints([d])) for p in parts]


@exporter("narrow")
def _narrow(g, x, dim, start, length):
    d = _dims(dim, x.dim())[0]
    start = int(start) % x.shape[d] if x.shape[d] else 0
    return g.op("Slice", g.v(x), g.ints([start]), g.ints([start + int(length)]), g.ints([d]))


@exporter("select")
def _select(g, x, dim, index):
    d = _dims(dim, x.dim())[0]
    return g.op("Gather", g.v(x), g.ints(int(index), scalar=True), axis=d)


@exporter("gather")
def _gather(g, x, dim, index, *, sparse_grad=False):
    return g.op("GatherElements", g.v(x), g.v(index), axis=_dims(dim, x.dim())[0])


@exporter("index_select")
def _index_select(g, x, dim, index):
    return g.op("Gather", g.v(x), g.v(index), axis=_dims(dim, x.dim())[0])


@exporter("flip")
def _flip(g, x, dims):
    ds = _dims(dims, x.dim())
    n = len(ds)
    return g.op(
        "Slice", g.v(x), g.ints([-1] * n), g.ints([-_BIG] * n), g.ints(ds), g.ints([-1] * n)
    )


@exporter("to", "type_as", "float", "double", "half", "long", "int", "bool", "cpu", "cuda")
def _to(g, x, *args, **kwargs):
    out = g.current_outputs[0]
    if out.dtype == x.dtype:
        return g.op("Identity", g.v(x))
    return g.op("Cast", g.v(x), to=g.dtype(out.dtype))


@exporter("__getitem__")
def _getitem(g, x, key):
    """Basic indexing (ints, slices, None, Ellipsis) and one integer-tensor index."""
    if not isinstance(key, tuple):
        key = (key,)
    n_real = sum(1 for k in key if k is not None and k is not Ellipsis)
    if any(k is Ellipsis for k in key):
        i = next(i for i, k in enumerate(key) if k is Ellipsis)
        key = key[:i] + (slice(None),) * (x.dim() - n_real) + key[i + 1 :]
    v = g.v(x)
    starts, ends, axes, steps = [], [], [], []
    squeeze, unsqueeze, gathers = [], [], []
    d = 0  # dim of x
    out_d = 0  # dim of the result
    for k in key:
        if k is None:
            unsqueeze.append(out_d)
            out_d += 1
            continue
        if isinstance(k, bool) or (isinstance(k, rumus.Tensor) and k.dtype == rumus.bool):
            raise UnsupportedOperatorError(
                "rumus.onnx.export: boolean-mask indexing has a data-dependent shape"
            )
        if isinstance(k, slice):
            step = 1 if k.step is None else int(k.step)
            start = 0 if k.start is None else int(k.start)
            stop = _BIG if k.stop is None else int(k.stop)
            if (start, stop, step) != (0, _BIG, 1):
                starts.append(start), ends.append(stop), axes.append(d), steps.append(step)
            out_d += 1
        elif isinstance(k, int):
            starts.append(int(k)), ends.append(int(k) + 1 if k != -1 else _BIG)
            axes.append(d), steps.append(1)
            squeeze.append(d)
        elif isinstance(k, rumus.Tensor):
            gathers.append((d, k))
            out_d += k.dim()
        else:
            raise UnsupportedOperatorError(
                f"rumus.onnx.export: indexing with {type(k).__name__} has no exporter"
            )
        d += 1
    if len(gathers) > 1:
        raise UnsupportedOperatorError(
            "rumus.onnx.export: indexing with more than one tensor has no exporter"
        )
    if starts:
        v = g.op("Slice", v, g.ints(starts), g.ints(ends), g.ints(axes), g.ints(steps))
    if gathers:
        gd, idx = gathers[0]
        v = g.op("Gather", v, g.v(idx), axis=gd)
    if squeeze:
        adj = [
            s + (gathers[0][1].dim() - 1 if gathers and s > gathers[0][0] else 0) for s in squeeze
        ]
        v = g.op("Squeeze", v, g.ints(adj))
    if unsqueeze:
        v = g.op("Unsqueeze", v, g.ints(unsqueeze))
    return v
