"""The op registry's entries for torch's diagonal, gathering, splitting, rotating,
index-building and statistics compositions (python/rumus/_shapeops.py), checked against
NumPy (np.diag, np.take, np.take_along_axis, np.isin, np.array_split, np.rot90...)."""

import itertools

import numpy as np
import rumus
from op_db import ALL, FLOATS, INTS, Arg, OpInfo, Row, Sample, U, _creation, to_bool, to_float


def _small_ints(*shape):
    """Integers in [-3, 3]: equal values are likely (isin)."""
    return lambda rng: rng.integers(-3, 4, shape).astype(np.float64)


def _diag_embed_ref(x, offset=0, dim1=-2, dim2=-1):
    n = x.shape[-1] + abs(offset)
    out = np.zeros(x.shape[:-1] + (n, n), x.dtype)
    i = np.arange(x.shape[-1])
    r, c = (i, i + offset) if offset >= 0 else (i - offset, i)
    out[..., r, c] = x
    return np.moveaxis(out, (-2, -1), (dim1, dim2))


def _block_diag_ref(*xs):
    xs = [x.reshape(1, -1) if x.ndim < 2 else x for x in xs]
    out = np.zeros((sum(x.shape[0] for x in xs), sum(x.shape[1] for x in xs)), xs[0].dtype)
    r = c = 0
    for x in xs:
        out[r : r + x.shape[0], c : c + x.shape[1]] = x
        r, c = r + x.shape[0], c + x.shape[1]
    return out


def _take_along_ref(x, idx, dim=None):
    if dim is None:
        return np.take_along_axis(x.reshape(-1), idx.reshape(-1), 0)
    return np.take_along_axis(x, idx, dim)


def _tri_ref(fn):
    return lambda r, c, offset=0, dtype=None: np.stack(fn(r, offset, c))


def _combinations_ref(x, r=2, with_replacement=False):
    pick = itertools.combinations_with_replacement if with_replacement else itertools.combinations
    idx = list(pick(range(len(x)), r))
    return x[np.asarray(idx, np.int64).reshape(len(idx), r)] if r else x[:0]


def _vander_ref(x, N=None, increasing=False):
    out = np.vander(x, N, increasing)
    return out if x.dtype.kind == "f" else out.astype(np.int64)


def _trap_parts(y, x=None, dx=None, dim=-1):
    y = np.moveaxis(np.asarray(y, np.float64), dim, -1)
    if x is None:
        w = np.full(max(y.shape[-1] - 1, 0), 1.0 if dx is None else dx)
    else:
        w = np.diff(np.moveaxis(x, dim, -1) if x.ndim > 1 else x, axis=-1)
    return w * (y[..., 1:] + y[..., :-1]) / 2


def _trapezoid_ref(y, x=None, *, dx=None, dim=-1):
    return _trap_parts(y, x, dx, dim).sum(-1)


def _cumulative_ref(y, x=None, *, dx=None, dim=-1):
    return np.moveaxis(np.cumsum(_trap_parts(y, x, dx, dim), -1), -1, dim)


def _cov_ref(x, correction=1, fweights=None, aweights=None):
    x = x.astype(np.float64)
    return np.cov(x, ddof=correction, fweights=fweights, aweights=aweights)


def _quantile_ref(fn):
    def ref(x, q, dim=None, keepdim=False, interpolation="linear"):
        return fn(x, q, axis=dim, keepdims=keepdim, method=interpolation)

    return ref


def _quantile_samples(m):
    return [
        Sample(m(7), 0.3),
        Sample(m(3, 5), Arg(np.array([0.0, 0.25, 1.0])), 1),
        Sample(m(3, 4), 0.5, 0, True, interpolation="lower"),
        Sample(m(3, 4, layout="transposed"), 0.6, -1, interpolation="higher"),
        Sample(m(2, 5), Arg(np.array(0.4)), dim=1, interpolation="midpoint"),
        Sample(m(2, 5), 0.7, None, True, interpolation="nearest"),
        Sample(m(), 0.2),
    ]


def _with_nans(*shape):
    """Uniform values with about a quarter NaN (nanquantile)."""

    def gen(rng):
        v = rng.uniform(-2, 2, shape)
        v[rng.uniform(size=shape) < 0.25] = np.nan
        return v

    return gen


def _quantile_op(name, fn, domain):
    return OpInfo(
        name,
        [f"rumus.{name}", f"Tensor.{name}"],
        _quantile_ref(fn),
        _quantile_samples,
        domain=domain,
        mismatch=False,
        tol={"float16": (2e-2, 2e-2), "bfloat16": (5e-2, 5e-2)},
        grads=[
            Row(f"{name}", lambda x: getattr(rumus, name)(x, 0.3, 1), [U(2, 5)]),
            Row(
                f"{name}_q",
                lambda x: getattr(rumus, name)(x, x.new_tensor([0.2, 0.9])),
                [U(7)],
            ),
        ],
    )


def _window_ref(sym):
    """torch's window from NumPy's symmetric one: periodic windows are the first N points
    of the symmetric window of N + 1."""

    def ref(n, periodic=True, *args, dtype=None):
        if n <= 1:
            return np.ones(n)
        return sym(n + 1, *args)[:n] if periodic else sym(n, *args)

    return ref


def _hamming(n, alpha=0.54, beta=0.46):
    return alpha - beta * np.cos(2 * np.pi * np.arange(n) / (n - 1))


def _window_samples(*extra):
    return lambda m: [
        Sample(8),
        Sample(5, False),
        Sample(1),
        Sample(0),
        Sample(6, True, *extra),
        Sample(7, False, *extra),
    ]


def _window_op(name, sym, *extra):
    return _creation(
        name,
        _window_ref(sym),
        _window_samples(*extra),
        dtypes=FLOATS,
        tol={"float32": (1e-5, 1e-6), "float16": (1e-3, 2e-3), "bfloat16": (1e-2, 1e-2)},
    )


NUMBERS = FLOATS + INTS
F64_TOL = {"float32": (1e-4, 1e-5)}

SHAPEOPS = [
    OpInfo(
        "diag",
        ["rumus.diag", "Tensor.diag"],
        lambda x, diagonal=0: np.diag(x, diagonal).copy(),
        lambda m: [
            Sample(m(3)),
            Sample(m(3), 1),
            Sample(m(2), diagonal=-2),
            Sample(m(3, 4), -1),
            Sample(m(3, 4, layout="transposed"), 2),
            Sample(m(0)),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[
            Row("diag_1d", lambda x: rumus.diag(x, 1), [U(3)]),
            Row("diag_2d", lambda x: rumus.diag(x, -1), [U(3, 4)]),
        ],
    ),
    OpInfo(
        "diag_embed",
        ["rumus.diag_embed", "Tensor.diag_embed"],
        _diag_embed_ref,
        lambda m: [
            Sample(m(2, 3)),
            Sample(m(3), offset=1),
            Sample(m(2, 3), -1, 0, 2),
            Sample(m(3, 2, layout="transposed"), 2, dim1=-1, dim2=0),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("diag_embed", lambda x: rumus.diag_embed(x, 1, 0, 2), [U(2, 3)])],
    ),
    OpInfo(
        "block_diag",
        ["rumus.block_diag"],
        _block_diag_ref,
        lambda m: [
            Sample(m(2, 2), m(3), m()),
            Sample(m(1, 3), m(2, 1, layout="transposed")),
            Sample(m(0, 2), m(2, 0)),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("block_diag", lambda a, b: rumus.block_diag(a, b), [U(2, 3), U(2)])],
    ),
    OpInfo(
        "take",
        ["rumus.take", "Tensor.take"],
        lambda x, idx: np.take(x, idx),
        lambda m: [
            Sample(m(3, 4), m.idx([[0, -1], [5, 11]])),
            Sample(m(3, 4, layout="transposed"), m.idx([2, 7])),
            Sample(m(), m.idx([0, 0])),
            Sample(m(3), m.idx(np.zeros(0, np.int64))),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("take", lambda x: rumus.take(x, rumus.tensor([[0, 5], [5, 1]])), [U(2, 3)])],
    ),
    OpInfo(
        "take_along_dim",
        ["rumus.take_along_dim", "Tensor.take_along_dim"],
        _take_along_ref,
        lambda m: [
            Sample(m(3, 4), m.idx([[0], [3], [1]]), 1),
            Sample(m(3, 4), m.idx([[2, 0, 1, 1]]), dim=0),
            Sample(m(3, 4, layout="transposed"), m.idx([1, 11])),
            Sample(m(2, 1), m.idx([[0, 1, 1]]), -2),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[
            Row(
                "take_along_dim",
                lambda x: rumus.take_along_dim(x, rumus.tensor([[2, 0], [1, 1]]), 1),
                [U(2, 3)],
            )
        ],
    ),
    OpInfo(
        "isin",
        ["rumus.isin"],
        lambda e, t, assume_unique=False, invert=False: np.isin(e, t, invert=invert),
        lambda m: [
            Sample(m(3, 4), m(5)),
            Sample(m(4), m(2, 2), invert=True),
            Sample(m(3), m(0)),
            Sample(m(), m(3), assume_unique=True),
            Sample(m(2, 3, layout="transposed"), m(4)),
        ],
        dtypes=ALL,
        out=to_bool,
        domain=_small_ints,
        mismatch=False,
        grad=False,
    ),
    OpInfo(
        "tensor_split",
        [("tensor_split[1]", lambda x, s, dim=0: rumus.tensor_split(x, s, dim)[1])],
        lambda x, s, dim=0: np.array_split(x, s, axis=dim)[1],
        lambda m: [
            Sample(m(7), 3),
            Sample(m(2, 5), 4, 1),
            Sample(m(6, 2, layout="transposed"), [1, 4]),
            Sample(m(5), [-1, 10]),
            Sample(m(2, 4), (0, 3), -1),
        ],
        dtypes=ALL,
        mismatch=False,
        torch_ref=lambda torch, x, s, dim=0: torch.tensor_split(x, s, dim)[1],
        covers=["rumus.tensor_split", "Tensor.tensor_split"],
        grads=[Row("tensor_split", lambda x: x.tensor_split([1, 3], 1), [U(2, 5)])],
    ),
    OpInfo(
        "rot90",
        ["rumus.rot90", "Tensor.rot90"],
        lambda x, k=1, dims=(0, 1): np.rot90(x, k, dims).copy(),
        lambda m: [
            Sample(m(2, 3)),
            Sample(m(2, 3, 2), 2, [1, 2]),
            Sample(m(2, 3), -1),
            Sample(m(2, 3, layout="transposed"), 3, (1, 0)),
            Sample(m(3, 2), k=4),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("rot90", lambda x: rumus.rot90(x, 1, (1, 0)), [U(2, 3)])],
    ),
    _creation(
        "tril_indices",
        _tri_ref(np.tril_indices),
        lambda m: [Sample(3, 4), Sample(3, 3, 1), Sample(4, 2, offset=-1), Sample(0, 3)],
        dtypes=("int64", "int32"),
    ),
    _creation(
        "triu_indices",
        _tri_ref(np.triu_indices),
        lambda m: [Sample(3, 4), Sample(3, 3, 1), Sample(4, 2, offset=-1), Sample(2, 0)],
        dtypes=("int64", "int32"),
    ),
    OpInfo(
        "cartesian_prod",
        ["rumus.cartesian_prod"],
        lambda *xs: (
            np.stack([g.reshape(-1) for g in np.meshgrid(*xs, indexing="ij")], 1)
            if len(xs) > 1
            else xs[0]
        ),
        lambda m: [Sample(m(3), m(2)), Sample(m(2), m(0), m(2)), Sample(m(3))],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("cartesian_prod", lambda a, b: rumus.cartesian_prod(a, b), [U(3), U(2)])],
    ),
    OpInfo(
        "combinations",
        ["rumus.combinations"],
        _combinations_ref,
        lambda m: [
            Sample(m(4)),
            Sample(m(4), 3),
            Sample(m(3), r=2, with_replacement=True),
            Sample(m(3), 1),
            Sample(m(2), 3),
            Sample(m(3), 0),
        ],
        dtypes=ALL,
        mismatch=False,
        grads=[Row("combinations", lambda x: rumus.combinations(x, 2, True), [U(3)])],
    ),
    OpInfo(
        "vander_decreasing",  # "vander" is rumus.linalg.vander's entry (increasing powers)
        ["rumus.vander"],
        _vander_ref,
        lambda m: [
            Sample(m(3)),
            Sample(m(3), 4),
            Sample(m(3), N=2, increasing=True),
            Sample(m(2), 0),
            Sample(m(0)),
        ],
        dtypes=ALL,
        out=lambda d: d if d in FLOATS else "int64",
        mismatch=False,
        grads=[Row("vander", lambda x: rumus.vander(x, 4), [U(3)])],
    ),
    OpInfo(
        "trapezoid",
        ["rumus.trapezoid"],
        _trapezoid_ref,
        lambda m: [
            Sample(m(5)),
            Sample(m(2, 4), dx=0.5),
            Sample(m(3, 2), m(3), dim=0),
            Sample(m(2, 3, layout="transposed"), m(2, 3)),
            Sample(m(2, 0)),
            Sample(m(3, 1)),
        ],
        dtypes=NUMBERS,
        out=to_float,
        mismatch=False,
        tol=F64_TOL,
        grads=[
            Row("trapezoid", lambda y, x: rumus.trapezoid(y, x), [U(2, 4), U(4)]),
            Row("trapezoid_dx", lambda y: rumus.trapezoid(y, dx=0.3, dim=0), [U(3, 2)]),
        ],
    ),
    OpInfo(
        "cumulative_trapezoid",
        ["rumus.cumulative_trapezoid"],
        _cumulative_ref,
        lambda m: [
            Sample(m(5)),
            Sample(m(2, 4), dx=0.5),
            Sample(m(3, 2), m(3), dim=0),
            Sample(m(2, 3, layout="transposed"), m(2, 3)),
            Sample(m(2, 0)),
        ],
        dtypes=NUMBERS,
        out=to_float,
        mismatch=False,
        tol=F64_TOL,
        grads=[
            Row(
                "cumulative_trapezoid",
                lambda y, x: rumus.cumulative_trapezoid(y, x),
                [U(2, 4), U(4)],
            )
        ],
    ),
    OpInfo(
        "cov",
        ["rumus.cov", "Tensor.cov"],
        _cov_ref,
        lambda m: [
            Sample(m(3, 5)),
            Sample(m(6)),
            Sample(m(2, 4), correction=0),
            Sample(m(2, 4, layout="transposed"), correction=2),
            Sample(m(2, 3), fweights=m.idx([1, 2, 1])),
            Sample(
                m(2, 3),
                fweights=m.idx([1, 2, 1]),
                aweights=m(
                    3, dtype="float64", domain=lambda *s: lambda rng: rng.uniform(0.5, 2, s)
                ),
            ),
        ],
        dtypes=NUMBERS,
        out=to_float,
        mismatch=False,
        tol=F64_TOL,
        grads=[Row("cov", lambda x: rumus.cov(x, correction=0), [U(3, 4)])],
    ),
    OpInfo(
        "corrcoef",
        ["rumus.corrcoef", "Tensor.corrcoef"],
        lambda x: np.corrcoef(x.astype(np.float64)),
        lambda m: [Sample(m(3, 5)), Sample(m(2, 4, layout="transposed")), Sample(m(4))],
        dtypes=NUMBERS,
        out=to_float,
        mismatch=False,
        tol=F64_TOL,
        grads=[Row("corrcoef", lambda x: rumus.corrcoef(x), [U(3, 4)])],
    ),
    _quantile_op("quantile", np.quantile, U),
    _quantile_op("nanquantile", np.nanquantile, _with_nans),
    _window_op("hann_window", np.hanning),
    _window_op("hamming_window", _hamming, 0.5, 0.4),
    _window_op("blackman_window", np.blackman),
    _window_op("bartlett_window", np.bartlett),
    _window_op("kaiser_window", lambda n, beta=12.0: np.kaiser(n, beta), 5.0),
]
