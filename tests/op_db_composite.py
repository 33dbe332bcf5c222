"""The op registry's entries for issue 15's composed ops (python/rumus/_composite.py): more
reductions (var_mean, std_mean, aminmax, nansum, nanmean, count_nonzero, cummax, cummin,
logcumsumexp), indexing (index_add, index_copy, index_fill, index_put, masked_scatter,
masked_select, scatter_reduce), distances (cdist, pdist) and the Tensor.new_* constructors
and randint_like. Semantics the registry cannot express are in tests/test_reductions_more.py
and tests/test_index_more.py."""

import numpy as np
import rumus
from op_db import (
    ALL,
    DISTINCT,
    FLOATS,
    MASK34,
    NN,
    NUMERIC,
    B,
    I,
    OpInfo,
    Row,
    Sample,
    U,
    _check_random,
    _inplace,
    _reduce,
    _var_ref,
    int_to_int64,
    reduction_samples,
    to_int64,
)

ADD_DTYPES = ALL  # the ops built on scatter_add
REDUCE_DTYPES = ("float64", "float32") + ("int64", "int32", "uint8")


def WITH_NAN(*shape, frac=0.3):
    """Uniform values with about ``frac`` of them NaN (ints: the NaNs become 7)."""

    def gen(rng):
        x = rng.uniform(-2, 2, shape)
        x[rng.uniform(size=shape) < frac] = np.nan
        return x

    return gen


# ------------------------------------------------------------ references


def _var_mean_ref(fn):
    def ref(x, dim=None, unbiased=None, keepdim=False, correction=None):
        if unbiased is None:
            unbiased = True
        v = _var_ref(x, dim, keepdim, unbiased, correction, fn=fn)
        return v, _reduce(np.mean, x, dim, keepdim)

    return ref


def _aminmax_ref(x, dim=None, keepdim=False):
    if dim is None and keepdim:
        return np.amin(x, keepdims=True), np.amax(x, keepdims=True)
    return _reduce(np.amin, x, dim, keepdim), _reduce(np.amax, x, dim, keepdim)


def _nansum_ref(x, dim=None, keepdim=False):
    out = _reduce(np.nansum, x, dim, keepdim)
    return out if x.dtype.kind == "f" else out.astype(np.int64)


def _nanmean_ref(x, dim=None, keepdim=False):
    return _reduce(np.nanmean, x, dim, keepdim)


def _count_nonzero_ref(x, dim=None):
    if x.ndim == 0:
        return np.asarray(np.count_nonzero(x), np.int64)
    return np.asarray(np.count_nonzero(x, axis=dim), np.int64)


def _cum_extreme_ref(better):
    def ref(x, dim):
        if x.ndim == 0:
            return x.copy(), np.zeros((), np.int64)
        xm = np.moveaxis(x, dim, -1)
        vals, idx = xm.copy(), np.zeros(xm.shape, np.int64)
        for pos in np.ndindex(*xm.shape[:-1]):
            best, at = None, 0
            for i, v in enumerate(xm[pos]):
                if (
                    best is None
                    or np.isnan(v)
                    or (not np.isnan(best) and (v >= best if better == "max" else v <= best))
                ):
                    best, at = v, i
                vals[pos + (i,)], idx[pos + (i,)] = best, at
        return np.moveaxis(vals, -1, dim), np.moveaxis(idx, -1, dim)

    return ref


def _logcumsumexp_ref(x, dim):
    if x.ndim == 0:
        return x.copy()
    return np.logaddexp.accumulate(x, axis=dim)


def _index_add_ref(x, dim, index, source, alpha=1):
    out = x.copy()
    if x.ndim == 0:
        return out + alpha * source.reshape(())
    for k, i in enumerate(index):
        sl = [slice(None)] * x.ndim
        sl[dim] = i
        src = [slice(None)] * x.ndim
        src[dim] = k
        out[tuple(sl)] += (alpha * source[tuple(src)]).astype(out.dtype)
    return out


def _index_copy_ref(x, dim, index, source):
    out = x.copy()
    if x.ndim == 0:
        return source.reshape(()).astype(x.dtype)
    for k, i in enumerate(index):
        sl = [slice(None)] * x.ndim
        sl[dim] = i
        src = [slice(None)] * x.ndim
        src[dim] = k
        out[tuple(sl)] = source[tuple(src)]
    return out


def _index_fill_ref(x, dim, index, value):
    out = x.copy()
    if x.ndim == 0:
        return np.asarray(value, x.dtype) if index.size else out
    sl = [slice(None)] * x.ndim
    sl[dim] = index
    out[tuple(sl)] = value
    return out


def _index_put_ref(x, indices, values, accumulate=False):
    out = x.copy()
    idx = tuple(indices)
    if accumulate:
        np.add.at(out, idx, values.astype(out.dtype))
    else:
        out[idx] = values
    return out


def _masked_scatter_ref(x, mask, source):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    out = np.broadcast_to(x, shape).copy()
    m = np.broadcast_to(mask, shape)
    out[m] = source.reshape(-1)[: int(m.sum())]
    return out


def _masked_select_ref(x, mask):
    shape = np.broadcast_shapes(x.shape, mask.shape)
    return np.broadcast_to(x, shape)[np.broadcast_to(mask, shape)]


def _scatter_reduce_ref(x, dim, index, src, reduce, include_self=True):
    if x.ndim == 0:
        out = _scatter_reduce_ref(x.reshape(1), 0, index.reshape(1), src.reshape(1), reduce)
        return out.reshape(())
    out = x.copy()
    groups = {}
    for pos in np.ndindex(*index.shape):
        dst = list(pos)
        dst[dim] = index[pos]
        groups.setdefault(tuple(dst), []).append(src[pos])
    for dst, vals in groups.items():
        vals = ([x[dst]] if include_self else []) + vals
        if reduce == "sum":
            v = np.sum(vals)
        elif reduce == "prod":
            v = np.prod(vals)
        elif reduce == "amax":
            v = np.max(vals)
        elif reduce == "amin":
            v = np.min(vals)
        else:
            v = np.sum(vals) / len(vals) if x.dtype.kind == "f" else np.sum(vals) // len(vals)
        out[dst] = v
    return out


def _pnorm_ref(d, p):
    if p == 0:
        return (d != 0).sum(-1).astype(d.dtype)
    if p == np.inf:
        return np.abs(d).max(-1) if d.shape[-1] else np.zeros(d.shape[:-1])
    return (np.abs(d) ** p).sum(-1) ** (1.0 / p)


def _cdist_ref(x1, x2, p=2.0, compute_mode=None):
    return _pnorm_ref(x1[..., :, None, :] - x2[..., None, :, :], p)


def _pdist_ref(x, p=2.0):
    n = x.shape[0]
    rows = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if not rows:
        return np.zeros(0)
    return _pnorm_ref(np.stack([x[i] - x[j] for i, j in rows]), p)


def _new_empty_check(got, sample, dtype, np_args, np_kwargs):
    size = (
        np_args[1] if len(np_args) == 2 and isinstance(np_args[1], (tuple, list)) else np_args[1:]
    )
    assert tuple(got.shape) == tuple(size), (tuple(got.shape), size)
    want = np_kwargs.get("dtype")
    assert got.dtype == (want if want is not None else getattr(rumus, dtype))


def _randint_like_check(got, sample, dtype, np_args, np_kwargs):
    ints = [a for a in np_args if isinstance(a, int)]
    low, high = (0, ints[0]) if len(ints) == 1 else ints
    _check_random(low, high, integral=True)(got, sample, dtype, np_args, np_kwargs)


def _multinomial_check(got, sample, dtype, np_args, np_kwargs):
    w, k = np.asarray(np_args[0], dtype=np.float64), np_args[1]
    replacement = np_args[2] if len(np_args) > 2 else np_kwargs.get("replacement", False)
    assert got.dtype == rumus.int64 and tuple(got.shape) == w.shape[:-1] + (k,)
    idx = got.cpu().numpy().reshape(-1, k)
    rows = w.reshape(-1, w.shape[-1])
    for r, i in zip(rows, idx):
        assert (r[i] > 0).all(), (r, i)  # only categories with weight
        if not replacement:
            assert len(set(i.tolist())) == k, i


# ------------------------------------------------------------ samples


def _var_mean_samples(m):
    return reduction_samples(m, empty=False) + [
        Sample(m(3, 4), dim=1, correction=0),
        Sample(m(3, 4), unbiased=False),
        Sample(m(3, 4), 0, True, True),
    ]


def _aminmax_samples(m):
    return [
        Sample(m(3, 4)),
        Sample(m()),
        Sample(m(3, 4), dim=1),
        Sample(m(3, 4), dim=-2, keepdim=True),
        Sample(m(3, 4), keepdim=True),
        Sample(m(), dim=0),
        Sample(m(4, 3, layout="transposed"), dim=0),
        Sample(m(0, 3), dim=1),
    ]


def _nan_samples(m):
    return [
        Sample(m(3, 4, domain=WITH_NAN)),
        Sample(m(3, 4, domain=WITH_NAN), dim=1),
        Sample(m(3, 4, domain=WITH_NAN), 0, True),
        Sample(m(2, 3, 2, domain=WITH_NAN), dim=(0, 2)),
        Sample(m()),
        Sample(m(4, 3, layout="transposed"), dim=0),
        Sample(m(0, 3), dim=1),
    ]


def _count_nonzero_samples(m):
    return [
        Sample(m(3, 4)),
        Sample(m(3, 4), dim=1),
        Sample(m(3, 4), dim=(0, 1)),
        Sample(m()),
        Sample(m(4, 3, layout="transposed"), 0),
        Sample(m(0, 3), dim=0),
    ]


def _scan_samples(m):
    return [
        Sample(m(3, 5), 1),
        Sample(m(3, 4), dim=0),
        Sample(m(2, 3, 2), dim=-1),
        Sample(m(), dim=0),
        Sample(m(4, 3, layout="transposed"), dim=1),
        Sample(m(2, 3, layout="expanded"), dim=0),
        Sample(m(0, 3), dim=1),
        Sample(m(7), 0),
    ]


def _index_add_samples(m):
    return [
        Sample(m(3, 4), 0, m.idx([2, 0, 2]), m(3, 4)),
        Sample(m(3, 4), 1, m.idx([3, 0]), m(3, 2), alpha=2),
        Sample(m(4, 3, layout="transposed"), -1, m.idx([1]), m(4, 1)),
        Sample(m(3, 4), 0, m.idx(np.zeros(0, np.int64)), m(0, 4)),
        Sample(m(), 0, m.idx([0]), m()),
    ]


def _index_copy_samples(m):
    return [
        Sample(m(3, 4), 0, m.idx([2, 0]), m(2, 4)),
        Sample(m(3, 4), 1, m.idx([3, 0, 1]), m(3, 3)),
        Sample(m(4, 3, layout="transposed"), -1, m.idx([1]), m(4, 1, layout="expanded")),
        Sample(m(3, 4), 0, m.idx(np.zeros(0, np.int64)), m(0, 4)),
        Sample(m(), 0, m.idx([0]), m()),
    ]


def _index_fill_samples(m):
    return [
        Sample(m(3, 4), 0, m.idx([2, 0]), m.scalar(1.5)),
        Sample(m(3, 4), 1, m.idx([3, 3, 1]), m.scalar(-1.0)),
        Sample(m(4, 3, layout="transposed"), -1, m.idx([1]), m.scalar(2.0)),
        Sample(m(3, 4), 0, m.idx(np.zeros(0, np.int64)), m.scalar(1.0)),
        Sample(m(), 0, m.idx([0]), m.scalar(1.0)),
    ]


def _index_put_samples(m):
    out = [
        Sample(m(3, 4), (m.idx([0, 2]),), m(2, 4)),
        Sample(m(3, 4), (m.idx([0, 2]), m.idx([1, 3])), m(2)),
        Sample(m(3, 4), (m.idx([[0], [2]]), m.idx([1, 3])), m(2)),  # broadcast indices
        Sample(m(3, 4), (m.mask([True, False, True]),), m(4)),  # a bool index
        Sample(m(4, 3, layout="transposed"), (m.idx([1]),), m(1, 3)),
        Sample(m(3, 4), (m.idx(np.zeros(0, np.int64)),), m(0, 4)),
    ]
    if m.dtype in ADD_DTYPES:
        out += [
            Sample(m(3, 4), (m.idx([0, 2, 0]),), m(3, 4), accumulate=True),
            Sample(m(3, 4), (m.idx([1, 1]), m.idx([2, 2])), m(), True),
        ]
    return out


def _masked_scatter_samples(m):
    mask = [[True, False, True, False], [False, False, True, True], [True, True, True, False]]
    return [
        Sample(m(3, 4), m.mask(mask), m(3, 4)),
        Sample(m(3, 4), m.mask([True, False, True, True]), m(12)),  # broadcast mask
        Sample(m(4, 3, layout="transposed"), m.mask(np.array(mask).T), m(2, 5)),
        Sample(m(), m.mask(True), m(2)),
        Sample(m(0, 3), m.mask([True, False, True]), m(1)),
    ]


def _masked_select_samples(m):
    mask = [[True, False, True, False], [False, False, True, True], [True, True, True, False]]
    return [
        Sample(m(3, 4), m.mask(mask)),
        Sample(m(3, 4), m.mask([True, False, True, True])),
        Sample(m(4), m.mask(mask)),  # the input broadcasts to the mask
        Sample(m(4, 3, layout="transposed"), m.mask(np.array(mask).T)),
        Sample(m(), m.mask(True)),
        Sample(m(0, 3), m.mask([True, False, True])),
    ]


SR_IDX = [[0, 2, 0, 1], [3, 3, 1, 3], [2, 2, 2, 0]]


def _scatter_reduce_samples(m):
    out = []
    for r in ("sum", "prod", "mean", "amax", "amin"):
        out += [
            Sample(m(3, 4), 1, m.idx(SR_IDX), m(3, 4), r),
            Sample(m(3, 4), 0, m.idx([[2, 0, 2, 1]]), m(2, 5), r, include_self=False),
        ]
    return out + [
        Sample(m(4, 3, layout="transposed"), 1, m.idx([[0, 0], [2, 1]]), m(2, 2), "amax"),
        Sample(m(), 0, m.idx(0), m(), "sum"),
        Sample(m(3, 4), 1, m.idx(np.zeros((3, 0), np.int64)), m(3, 0), "prod"),
    ]


def _cdist_samples(m):
    return [
        Sample(m(3, 4), m(2, 4)),
        Sample(m(2, 3, 4), m(2, 5, 4), p=1.0),
        Sample(m(3, 2), m(4, 2), 3.0),
        Sample(m(3, 2), m(4, 2), p=0.0),
        Sample(m(3, 2), m(4, 2), p=float("inf")),
        Sample(m(4, 3, layout="transposed"), m(2, 3), compute_mode="use_mm_for_euclid_dist"),
        Sample(m(0, 3), m(2, 3)),
        Sample(m(2, 3, 4), m(5, 4)),  # batch broadcast
        Sample(m(30, 3), m(4, 3)),  # over 25 rows: through a matmul, as PyTorch
        Sample(m(30, 3), m(4, 3), compute_mode="donot_use_mm_for_euclid_dist"),
    ]


def _pdist_samples(m):
    return [
        Sample(m(4, 3)),
        Sample(m(4, 3), p=1.0),
        Sample(m(3, 2), 3.0),
        Sample(m(3, 4, layout="transposed")),
        Sample(m(1, 3)),
        Sample(m(3, 2), p=float("inf")),
    ]


def _new_samples(m, fill=False):
    extra = (m.scalar(1.5),) if fill else ()
    if fill:
        return [
            Sample(m(2, 3), (2, 3), *extra),
            Sample(m(), (), *extra),
            Sample(m(2), [0, 2], *extra),
            Sample(m(2), (2,), 7, dtype=rumus.int64).expect(to_int64),
        ]
    return [
        Sample(m(2, 3), 2, 3),
        Sample(m(), (3,)),
        Sample(m(2), [0, 2]),
        Sample(m(2, 3, layout="transposed"), 4),
        Sample(m(2), 2, dtype=rumus.int32).expect(lambda d: "int32"),
    ]


def _size_of(size):
    return tuple(size[0]) if len(size) == 1 and isinstance(size[0], (tuple, list)) else size


# ------------------------------------------------------------ entries

MORE = [
    OpInfo(
        "var_mean",
        ["rumus.var_mean"],
        _var_mean_ref(np.var),
        _var_mean_samples,
        dtypes=FLOATS,
        grads=[
            Row("var_mean", lambda x: rumus.var_mean(x, 1), [U(3, 4)]),
            Row(
                "var_mean_c0", lambda x: rumus.var_mean(x, 0, keepdim=True, correction=0), [U(3, 4)]
            ),
        ],
    ),
    OpInfo(
        "std_mean",
        ["rumus.std_mean"],
        _var_mean_ref(np.std),
        _var_mean_samples,
        dtypes=FLOATS,
        grads=[Row("std_mean", lambda x: rumus.std_mean(x, 1), [U(3, 4)])],
    ),
    OpInfo(
        "aminmax",
        ["rumus.aminmax", "Tensor.aminmax"],
        _aminmax_ref,
        _aminmax_samples,
        dtypes=ALL,
        domain=DISTINCT,
        grads=[
            Row("aminmax", lambda x: tuple(rumus.aminmax(x, dim=1)), [DISTINCT(3, 4)]),
            Row("aminmax_all", lambda x: tuple(x.aminmax()), [DISTINCT(3, 4)]),
        ],
        mismatch=False,
        bad=lambda m: [
            ("aminmax of an empty tensor", lambda: rumus.aminmax(rumus.zeros(0))),
            ("aminmax over an empty dim", lambda: rumus.aminmax(rumus.zeros(2, 0), dim=1)),
        ],
    ),
    OpInfo(
        "nansum",
        ["rumus.nansum", "Tensor.nansum"],
        _nansum_ref,
        _nan_samples,
        dtypes=ALL,
        out=int_to_int64,
        grads=[
            Row("nansum", lambda x: rumus.nansum(x, 1), [U(3, 4)]),
            Row("nansum_nan", lambda x: x.nansum(), [WITH_NAN(3, 4)], gg=True),
        ],
    ),
    OpInfo(
        "nanmean",
        ["rumus.nanmean", "Tensor.nanmean"],
        _nanmean_ref,
        _nan_samples,
        dtypes=FLOATS,
        grads=[
            Row("nanmean", lambda x: rumus.nanmean(x, 1), [U(3, 4)]),
            Row("nanmean_keepdim", lambda x: x.nanmean(0, True), [U(3, 4)]),
        ],
    ),
    OpInfo(
        "count_nonzero",
        ["rumus.count_nonzero", "Tensor.count_nonzero"],
        _count_nonzero_ref,
        _count_nonzero_samples,
        dtypes=ALL,
        out=to_int64,
        grad=False,
        domain=lambda *s: lambda rng: np.round(rng.uniform(-1.4, 1.4, s)),
    ),
    OpInfo(
        "cummax",
        ["rumus.cummax", "Tensor.cummax"],
        _cum_extreme_ref("max"),
        _scan_samples,
        dtypes=ALL,
        out=lambda d: (d, "int64"),
        grads=[
            Row("cummax", lambda x: x.cummax(1).values, [DISTINCT(3, 4)]),
            Row("cummax_dim0", lambda x: rumus.cummax(x, 0)[0], [DISTINCT(4, 3)]),
        ],
    ),
    OpInfo(
        "cummin",
        ["rumus.cummin", "Tensor.cummin"],
        _cum_extreme_ref("min"),
        _scan_samples,
        dtypes=ALL,
        out=lambda d: (d, "int64"),
        grads=[Row("cummin", lambda x: x.cummin(-1).values, [DISTINCT(3, 4)])],
    ),
    OpInfo(
        "logcumsumexp",
        ["rumus.logcumsumexp", "Tensor.logcumsumexp"],
        _logcumsumexp_ref,
        _scan_samples,
        dtypes=FLOATS,
        grads=[
            Row("logcumsumexp", lambda x: x.logcumsumexp(1), [U(3, 5)]),
            Row("logcumsumexp_dim0", lambda x: rumus.logcumsumexp(x, 0), [U(4, 3)]),
        ],
    ),
    OpInfo(
        "index_add",
        ["rumus.index_add", "Tensor.index_add", "Tensor.index_add_"],
        _index_add_ref,
        _index_add_samples,
        dtypes=ADD_DTYPES,
        grads=[
            Row(
                "index_add", lambda x, s, i: x.index_add(0, i, s), [U(3, 4), U(3, 4), I([2, 0, 2])]
            ),
            Row(
                "index_add_alpha",
                lambda x, s, i: rumus.index_add(x, 1, i, s, alpha=-2.0),
                [U(3, 4), U(3, 2), I([3, 0])],
            ),
            Row(
                "inplace_index_add_",
                lambda x, s, i: _inplace(x, lambda y: y.index_add_(0, i, s)),
                [U(3, 4), U(2, 4), I([1, 1])],
            ),
        ],
        mismatch=False,
        bad=lambda m: [
            (
                "index_add index out of range",
                lambda: m.t(3, 4).index_add(0, rumus.tensor([3]), m.t(1, 4)),
            ),
            (
                "index_add source shape",
                lambda: m.t(3, 4).index_add(0, rumus.tensor([0]), m.t(1, 3)),
            ),
            (
                "index_add float index",
                lambda: m.t(3, 4).index_add(0, rumus.tensor([0.0]), m.t(1, 4)),
            ),
        ],
    ),
    OpInfo(
        "index_copy",
        ["rumus.index_copy", "Tensor.index_copy", "Tensor.index_copy_"],
        _index_copy_ref,
        _index_copy_samples,
        dtypes=ALL,
        grads=[
            Row("index_copy", lambda x, s, i: x.index_copy(0, i, s), [U(3, 4), U(2, 4), I([2, 0])]),
            Row(
                "inplace_index_copy_",
                lambda x, s, i: _inplace(x, lambda y: y.index_copy_(1, i, s)),
                [U(3, 4), U(3, 2), I([3, 1])],
            ),
        ],
        mismatch=False,
        bad=lambda m: [
            (
                "index_copy index out of range",
                lambda: m.t(3, 4).index_copy(0, rumus.tensor([5]), m.t(1, 4)),
            ),
            (
                "index_copy source shape",
                lambda: m.t(3, 4).index_copy(0, rumus.tensor([0]), m.t(2, 4)),
            ),
        ],
    ),
    OpInfo(
        "index_fill",
        ["rumus.index_fill", "Tensor.index_fill", "Tensor.index_fill_"],
        _index_fill_ref,
        _index_fill_samples,
        dtypes=ALL,
        grads=[
            Row("index_fill", lambda x, i: x.index_fill(1, i, 0.5), [U(3, 4), I([3, 0])]),
            Row(
                "inplace_index_fill_",
                lambda x, i: _inplace(x, lambda y: y.index_fill_(0, i, -1.0)),
                [U(3, 4), I([1])],
            ),
        ],
        mismatch=False,
        bad=lambda m: [
            (
                "index_fill index out of range",
                lambda: m.t(3, 4).index_fill(0, rumus.tensor([3]), 1),
            ),
            ("index_fill 1-d value", lambda: m.t(3, 4).index_fill(0, rumus.tensor([0]), m.t(2))),
        ],
    ),
    OpInfo(
        "index_put",
        ["rumus.index_put", "Tensor.index_put", "Tensor.index_put_"],
        _index_put_ref,
        _index_put_samples,
        dtypes=ALL,
        grads=[
            Row(
                "index_put",
                lambda x, v, i: x.index_put((i,), v),
                [U(3, 4), U(2, 4), I([2, 0])],
            ),
            Row(
                "index_put_accumulate",
                lambda x, v, i, j: x.index_put((i, j), v, accumulate=True),
                [U(3, 4), U(3), I([1, 1, 0]), I([2, 2, 3])],
            ),
            Row(
                "inplace_index_put_",
                lambda x, v, i: _inplace(x, lambda y: y.index_put_((i,), v)),
                [U(3, 4), U(4), I([1])],
            ),
        ],
        mismatch=False,
        bad=lambda m: [
            (
                "index_put index out of range",
                lambda: m.t(3, 4).index_put((rumus.tensor([3]),), m.t(4)),
            ),
            (
                "index_put too many indices",
                lambda: m.t(3).index_put((rumus.tensor([0]),) * 2, m.t(1)),
            ),
            ("index_put float index", lambda: m.t(3).index_put((rumus.tensor([0.0]),), m.t(1))),
            ("index_put indices not a tuple", lambda: m.t(3).index_put(rumus.tensor([0]), m.t(1))),
        ],
    ),
    OpInfo(
        "masked_scatter",
        ["rumus.masked_scatter", "Tensor.masked_scatter", "Tensor.masked_scatter_"],
        _masked_scatter_ref,
        _masked_scatter_samples,
        dtypes=ALL,
        grads=[
            Row(
                "masked_scatter",
                lambda x, s, mk: x.masked_scatter(mk, s),
                [U(3, 4), U(8), B(MASK34)],
            ),
        ],
        mismatch=False,
        bad=lambda m: [
            (
                "masked_scatter source too small",
                lambda: m.t(3).masked_scatter(rumus.tensor([True, True, False]), m.t(1)),
            ),
            (
                "masked_scatter int mask",
                lambda: m.t(3).masked_scatter(rumus.tensor([1, 1, 0]), m.t(3)),
            ),
        ],
    ),
    OpInfo(
        "masked_select",
        ["rumus.masked_select", "Tensor.masked_select"],
        _masked_select_ref,
        _masked_select_samples,
        dtypes=ALL,
        grads=[Row("masked_select", lambda x, mk: x.masked_select(mk), [U(3, 4), B(MASK34)])],
        mismatch=False,
        bad=lambda m: [
            ("masked_select int mask", lambda: m.t(3).masked_select(rumus.tensor([1, 0, 1]))),
            ("masked_select shapes", lambda: m.t(3).masked_select(rumus.tensor([True, False]))),
        ],
    ),
    OpInfo(
        "scatter_reduce",
        ["rumus.scatter_reduce", "Tensor.scatter_reduce", "Tensor.scatter_reduce_"],
        _scatter_reduce_ref,
        _scatter_reduce_samples,
        dtypes=REDUCE_DTYPES,
        domain=DISTINCT,
        grads=[
            Row(
                f"scatter_reduce_{r}{'' if inc else '_noself'}",
                lambda x, s, i, r=r, inc=inc: x.scatter_reduce(1, i, s, r, include_self=inc),
                [DISTINCT(3, 4), DISTINCT(3, 4), I(SR_IDX)],
            )
            for r in ("sum", "prod", "mean", "amax", "amin")
            for inc in (True, False)
        ]
        + [
            Row(
                "inplace_scatter_reduce_",
                lambda x, s, i: _inplace(x, lambda y: y.scatter_reduce_(1, i, s, "amax")),
                [DISTINCT(3, 4), DISTINCT(3, 4), I(SR_IDX)],
            )
        ],
        mismatch=False,
        bad=lambda m: [
            (
                "scatter_reduce unknown reduce",
                lambda: m.t(3).scatter_reduce(0, rumus.tensor([0]), m.t(1), "max"),
            ),
            (
                "scatter_reduce index out of range",
                lambda: m.t(3).scatter_reduce(0, rumus.tensor([3]), m.t(1), "sum"),
            ),
        ],
    ),
    OpInfo(
        "cdist",
        ["rumus.cdist"],
        _cdist_ref,
        _cdist_samples,
        dtypes=("float64", "float32"),
        grads=[
            Row("cdist", lambda a, b: rumus.cdist(a, b), [U(3, 4), U(2, 4)]),
            Row(
                "cdist_mm",
                lambda a, b: rumus.cdist(a, b, compute_mode="use_mm_for_euclid_dist"),
                [U(3, 4), U(2, 4)],
            ),
            Row("cdist_p1", lambda a, b: rumus.cdist(a, b, p=1.0), [U(3, 4), U(2, 4)], gg=False),
            Row("cdist_p3", lambda a, b: rumus.cdist(a, b, p=3.0), [U(2, 3, 2), U(2, 2, 2)]),
        ],
        bad=lambda m: [
            ("cdist 1-d", lambda: rumus.cdist(m.t(3), m.t(3))),
            ("cdist negative p", lambda: rumus.cdist(m.t(2, 3), m.t(2, 3), p=-1.0)),
        ],
    ),
    OpInfo(
        "pdist",
        ["rumus.pdist", "F.pdist"],
        _pdist_ref,
        _pdist_samples,
        dtypes=("float64", "float32"),
        grads=[
            Row("pdist", lambda x: rumus.pdist(x), [U(4, 3)]),
            Row("pdist_p3", lambda x: rumus.pdist(x, 3.0), [U(3, 2)]),
        ],
        bad=lambda m: [("pdist 3-d", lambda: rumus.pdist(m.t(2, 3, 4)))],
    ),
    OpInfo(
        "new_zeros",
        ["Tensor.new_zeros"],
        lambda x, *size, dtype=None: np.zeros(_size_of(size)),
        _new_samples,
        dtypes=ALL,
        grad=False,
    ),
    OpInfo(
        "new_ones",
        ["Tensor.new_ones"],
        lambda x, *size, dtype=None: np.ones(_size_of(size)),
        _new_samples,
        dtypes=ALL,
        grad=False,
    ),
    OpInfo(
        "new_empty",
        ["Tensor.new_empty"],
        None,
        _new_samples,
        dtypes=ALL,
        grad=False,
        check=_new_empty_check,
    ),
    OpInfo(
        "new_full",
        ["Tensor.new_full"],
        lambda x, size, v, dtype=None: np.full(size, v),
        lambda m: _new_samples(m, fill=True),
        dtypes=ALL,
        grad=False,
    ),
    OpInfo(
        "new_tensor",
        ["Tensor.new_tensor"],
        lambda x, data, dtype=None: np.asarray(data),
        lambda m: [
            Sample(m(2), [[1, 0], [2, 1]]),
            Sample(m(), 1),
            Sample(m(2, 3, layout="transposed"), []),
            Sample(m(2), [1, 2], dtype=rumus.float64).expect(lambda d: "float64"),
        ],
        dtypes=ALL,
        grad=False,
        mismatch=False,
    ),
    OpInfo(
        "multinomial",
        ["rumus.multinomial", "Tensor.multinomial"],
        None,
        lambda m: [Sample(m(5), 3), Sample(m(2, 6), 4, True), Sample(m(3, 4), 4)],
        dtypes=("float64", "float32", "float16", "bfloat16"),
        domain=lambda *s: U(*s, lo=0.1, hi=2.0),
        grad=False,
        mismatch=False,
        check=_multinomial_check,
    ),
    OpInfo(
        "randint_like",
        ["rumus.randint_like"],
        None,
        lambda m: [Sample(m(200), 5), Sample(m(2, 3), 1, 4), Sample(m(0, 2), 3)],
        dtypes=NUMERIC,
        grad=False,
        check=_randint_like_check,
    ),
]


# rumus.cosine_similarity / rumus.pairwise_distance are torch's top-level spellings of the F ops
for _op in NN:
    if _op.name in ("cosine_similarity", "pairwise_distance"):
        _op.variants.append(f"rumus.{_op.name}")
