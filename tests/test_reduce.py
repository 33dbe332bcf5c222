"""Reductions against NumPy: values, result dtypes, dims (None / int /
negative / tuple), keepdim, views, empty and 0-d inputs, errors."""

import conftest
import numpy as np
import pytest
import rumus
from conftest import NOT_ON_GPU, assert_close, make, rdt, skip_on_gpu, to_np, wide


def SQ():
    return np.errstate(all="ignore")


# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU. conftest's ``on_default_device`` fixture (used
# by every test below) makes the ``device`` fixture's device the default device: rumus.tensor / ones
# / zeros and the ``tensor`` / ``noncontig`` helpers of this file all put their tensors on it.
# --------------------------------------------------------------------------

pytestmark = pytest.mark.usefixtures("on_default_device")


def tensor(a, dtype=None):
    """conftest.tensor on the current default device."""
    return conftest.tensor(a, dtype, rumus.get_default_device())


def noncontig(a, dtype=None):
    """conftest.noncontig on the current default device."""
    return conftest.noncontig(a, dtype, rumus.get_default_device())


def on_device(device, dtypes, op=None):
    """The dtypes of ``dtypes`` that ``op`` runs on ``device``: on the GPU, all
    but float64/float16/bfloat16 (no such dtypes there, by design)."""
    if device == "cpu":
        return list(dtypes)
    return [d for d in dtypes if d not in NOT_ON_GPU]


SHAPE = (3, 4, 5)
DIMS = [None, 0, 1, 2, -1, -2, (0, 2), (-1, 0), (0, 1, 2), [1, 2]]
INT_DIMS = [0, 1, 2, -1, -3]
F32 = dict(rtol=1e-5, atol=1e-4)


def _axis(dim):
    return tuple(dim) if isinstance(dim, list) else dim


def _kw(dim, keepdim):
    kw = {"keepdim": keepdim}
    if dim is not None:
        kw["dim"] = dim
    return kw


def _tol(dtype):
    return F32 if dtype == "float32" else {}


# --------------------------------------------------------------------------
# sum / mean / prod
# --------------------------------------------------------------------------


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
def test_sum(dim, keepdim, rng, device):
    for dtype in on_device(
        device, ("float32", "float64", "int64", "int32", "uint8", "bool"), "sum"
    ):
        a = make(SHAPE, dtype, rng)
        out = dtype if dtype.startswith("float") else "int64"
        exp = np.sum(
            a.astype(np.float64 if out.startswith("float") else np.int64),
            axis=_axis(dim),
            keepdims=keepdim,
        ).astype(out)
        t = tensor(a)
        assert_close(t.sum(**_kw(dim, keepdim)), exp, **_tol(dtype))
        assert_close(rumus.sum(t, **_kw(dim, keepdim)), exp, **_tol(dtype))


@pytest.mark.parametrize("rows", [128, 1000])
def test_long_columns(rows, rng, device):
    # Many rows into few columns (a bias gradient): on the GPU reduced in chunks
    # of rows, then across the chunks (1000 leaves a ragged last chunk).
    a = rng.standard_normal((rows, 37)).astype(np.float32)
    t = tensor(a)
    f32 = np.float32
    assert_close(t.sum(0), a.sum(0, dtype=np.float64).astype(f32), rtol=1e-5, atol=1e-4)
    assert_close(t.mean(0), a.mean(0, dtype=np.float64).astype(f32), rtol=1e-5, atol=1e-6)
    assert_close(t.amax(0), a.max(0))
    assert_close(t.amin(0), a.min(0))
    assert_close(
        (t / 8 + 1).prod(0), np.prod(a.astype(np.float64) / 8 + 1, 0).astype(f32), rtol=1e-4, atol=0
    )
    assert_close((t > 2.5).any(0), (a > 2.5).any(0))
    assert_close((t > -3.5).all(0), (a > -3.5).all(0))
    ints = rng.integers(-50, 50, (rows, 37))
    assert_close(tensor(ints).sum(0), ints.sum(0))
    assert_close(
        t.reshape(rows // 8, 8, 37).sum((0, 1)),
        a.sum(0, dtype=np.float64).astype(f32),
        rtol=1e-5,
        atol=1e-4,
    )


@pytest.mark.parametrize("shape", [(3 * 4096 + 17,), (2, 9000)])
def test_long_rows(shape, rng, device):
    # Few long rows: on the GPU split across workgroups (ragged last piece), then
    # the pieces reduced again.
    a = rng.standard_normal(shape).astype(np.float32)
    t = tensor(a)
    f32 = np.float32
    assert_close(t.sum(-1), a.sum(-1, dtype=np.float64).astype(f32), rtol=1e-5, atol=1e-3)
    assert_close(t.mean(-1), a.mean(-1, dtype=np.float64).astype(f32), rtol=1e-5, atol=1e-6)
    assert_close(t.amax(-1), a.max(-1))
    assert_close(t.amin(-1), a.min(-1))
    assert_close(
        (t / 1000 + 1).prod(-1),
        np.prod(a.astype(np.float64) / 1000 + 1, -1).astype(f32),
        rtol=1e-4,
        atol=0,
    )
    assert_close((t > 3.9).any(-1), (a > 3.9).any(-1))
    assert_close((t > -3.9).all(-1), (a > -3.9).all(-1))
    ints = rng.integers(-50, 50, shape)
    assert_close(tensor(ints).sum(-1), ints.sum(-1))
    big = rng.integers(-(2**30), 2**30, shape)  # beyond float32's 2^24: exact on every device
    tb = tensor(big)
    assert_close(tb.amax(-1), big.max(-1))
    assert_close(tb.amin(-1), big.min(-1))
    assert_close(tb.argmax(-1), big.argmax(-1))
    assert_close(tb.max(-1).values, big.max(-1))
    signs = np.where(ints < 0, -1, 1)
    assert_close(tensor(signs).prod(-1), signs.prod(-1))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_int_extremes_exact(dtype, rng, device):
    # Integers are compared as integers (float32 would merge 2^30 and 2^30 + 1),
    # over rows, columns (a chunked column reduction: 300 rows) and strided views.
    hi = {"uint8": 255, "bool": 2}.get(dtype, 2**30)
    lo = 0 if dtype in ("uint8", "bool") else -hi
    a = rng.integers(lo, hi, (300, 6)).astype(dtype)
    a[17, 2] = a[200, 2] = a[:, 2].max()  # a tie: the first index wins
    ta = tensor(a)
    for view, t in ((a, ta), (a.T, ta.T), (a[::3, 1:], ta[::3, 1:])):
        for d in (0, 1):
            assert_close(t.amax(d), view.max(d))
            assert_close(t.amin(d), view.min(d))
            v, i = t.max(d)
            assert_close(v, view.max(d))
            if dtype != "bool":
                assert_close(i, view.argmax(d))
                assert_close(t.argmin(d), view.argmin(d))
        assert_close(t.max(), view.max())
    small = (a.astype(np.int64) % 3 - (lo < 0)).astype(dtype)  # products stay small
    want = np.cumprod(small.astype(np.int64), 0)
    assert_close(tensor(small).cumprod(0), want)  # integer scans give int64, as sums


def test_sum_positional_dim_and_dtype_kw(rng, device):
    a = make(SHAPE, "float32", rng)
    t = tensor(a)
    assert_close(t.sum(1), a.astype(np.float64).sum(1).astype(np.float32), **F32)
    assert_close(
        t.sum((0, 2), True),
        a.astype(np.float64).sum((0, 2), keepdims=True).astype(np.float32),
        **F32,
    )
    if device == "cpu":  # no float64 on the GPU (by design)
        assert_close(t.sum(dtype=rumus.float64), np.asarray(a.astype(np.float64).sum()))
    i = make(SHAPE, "int32", rng)
    assert_close(tensor(i).sum(dim=0, dtype=rumus.float32), i.sum(0).astype(np.float32))
    assert_close(tensor(i).sum(dtype=rumus.int32), np.asarray(i.sum(dtype=np.int32)))


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", DIMS, ids=str)
def test_mean(dim, keepdim, rng, device):
    for dtype in on_device(device, ("float32", "float64"), "mean"):
        a = make(SHAPE, dtype, rng)
        exp = np.mean(a.astype(np.float64), axis=_axis(dim), keepdims=keepdim).astype(dtype)
        t = tensor(a)
        assert_close(t.mean(**_kw(dim, keepdim)), exp, **_tol(dtype))
        assert_close(rumus.mean(t, **_kw(dim, keepdim)), exp, **_tol(dtype))


@pytest.mark.parametrize("dtype", ["int64", "int32", "uint8", "bool"])
def test_mean_of_int_raises(dtype):
    t = tensor(make((2, 3), dtype))
    with pytest.raises(RuntimeError):
        t.mean()
    with pytest.raises(RuntimeError):
        t.mean(dim=0)


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None] + INT_DIMS, ids=str)
def test_prod(dim, keepdim, rng, device):
    if dim is None and keepdim:
        pytest.skip("prod() over all dims has no keepdim")
    for dtype in on_device(device, ("float32", "float64", "int64", "int32", "bool"), "prod"):
        if dtype.startswith("float"):
            a = (
                make(SHAPE, dtype, rng, 0.6, 1.5) * np.where(rng.random(SHAPE) < 0.3, -1, 1)
            ).astype(dtype)
        elif dtype == "bool":
            a = rng.random(SHAPE) < 0.9
        elif device == "cpu":
            a = rng.choice(np.array([-2, -1, 1, 2]), size=SHAPE).astype(dtype)
        else:  # GPU int64 holds 32-bit values: keep every product below 2^31
            a = rng.choice(np.array([-1, 1]), size=SHAPE).astype(dtype)
            a.flat[::7] *= 2
        out = dtype if dtype.startswith("float") else "int64"
        src = a.astype(np.float64 if out.startswith("float") else np.int64)
        t = tensor(a)
        if dim is None:
            exp = np.asarray(np.prod(src)).astype(out)
            assert_close(t.prod(), exp, **_tol(dtype))
        else:
            exp = np.prod(src, axis=dim, keepdims=keepdim).astype(out)
            assert_close(t.prod(dim, keepdim=keepdim), exp, **_tol(dtype))
            assert_close(rumus.prod(t, dim=dim, keepdim=keepdim), exp, **_tol(dtype))


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_sum_mean_half_keep_dtype(dtype, rng, device):
    skip_on_gpu(device, dtype)
    a = make((4, 6), "float32", rng)
    t = tensor(a, dtype)
    x = to_np(t).astype(np.float64)
    assert_close(t.sum(dim=1), x.sum(1), dtype=dtype, rtol=2e-2, atol=5e-2)
    assert_close(t.mean(dim=0), x.mean(0), dtype=dtype, rtol=2e-2, atol=2e-2)


# --------------------------------------------------------------------------
# amax / amin / max / min / argmax / argmin
# --------------------------------------------------------------------------


def _distinct(shape, dtype, rng):
    n = int(np.prod(shape))
    if dtype.startswith("float"):
        return rng.permutation(n).reshape(shape).astype(dtype) * np.asarray(
            0.37, dtype
        ) - np.asarray(3, dtype)
    vals = rng.permutation(n)
    if dtype != "uint8":
        vals = vals - n // 2
    return vals.reshape(shape).astype(dtype)


AMAX_DIMS = [0, 1, 2, -1, -2, (0, 2), (-1, 0), (0, 1, 2)]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", AMAX_DIMS, ids=str)
@pytest.mark.parametrize("name,fn", [("amax", np.max), ("amin", np.min)])
def test_amax_amin(name, fn, dim, keepdim, rng, device):
    for dtype in on_device(device, ("float32", "float64", "int64", "int32", "uint8"), name):
        a = make(SHAPE, dtype, rng)
        exp = fn(a, axis=dim, keepdims=keepdim)
        t = tensor(a)
        assert_close(getattr(t, name)(dim=dim, keepdim=keepdim), exp)
        assert_close(getattr(rumus, name)(t, dim, keepdim), exp)
    assert_close(getattr(tensor(a), name)(), np.asarray(fn(a)))


@pytest.mark.parametrize(
    "name,fn", [("amax", np.max), ("amin", np.min), ("max", np.max), ("min", np.min)]
)
def test_amax_nan_propagates(name, fn):
    a = np.array([[1.0, np.nan, 3.0], [0.0, 2.0, -1.0]], np.float32)
    t = tensor(a)
    assert_close(getattr(t, name)(), np.asarray(fn(a)))
    if name.startswith("a"):
        assert_close(getattr(t, name)(dim=1), fn(a, axis=1))
    else:
        assert_close(getattr(t, name)(dim=1).values, fn(a, axis=1))


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", INT_DIMS, ids=str)
@pytest.mark.parametrize("name,fn,argfn", [("max", np.max, np.argmax), ("min", np.min, np.argmin)])
def test_max_min_dim(name, fn, argfn, dim, keepdim, rng, device):
    for dtype in on_device(device, ("float32", "float64", "int64", "int32", "uint8"), name):
        a = _distinct(SHAPE, dtype, rng)
        t = tensor(a)
        vexp = fn(a, axis=dim, keepdims=keepdim)
        iexp = argfn(a, axis=dim, keepdims=keepdim).astype(np.int64)
        r = getattr(t, name)(dim=dim, keepdim=keepdim)
        assert_close(r.values, vexp)
        assert_close(r.indices, iexp)
        v, i = r  # namedtuple unpacking
        assert_close(v, vexp)
        assert_close(i, iexp)
        assert_close(r[0], vexp)
        r2 = getattr(rumus, name)(t, dim, keepdim)
        assert_close(r2.values, vexp)
        assert_close(r2.indices, iexp)
    # positional dim
    assert_close(getattr(t, name)(dim).values, fn(a, axis=dim))


@pytest.mark.parametrize("name,fn", [("max", np.max), ("min", np.min)])
def test_max_min_all_and_elementwise(name, fn, rng):
    a = make(SHAPE, "float32", rng)
    b = make((4, 5), "float32", rng)
    t = tensor(a)
    r = getattr(t, name)()
    assert r.shape == ()
    assert_close(r, np.asarray(fn(a)))
    assert_close(getattr(rumus, name)(t), np.asarray(fn(a)))
    ew = np.maximum if name == "max" else np.minimum
    assert_close(getattr(rumus, name)(t, tensor(b)), ew(a, b))
    assert_close(getattr(t, name)(tensor(b)), ew(a, b))


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None] + INT_DIMS, ids=str)
@pytest.mark.parametrize("name,fn", [("argmax", np.argmax), ("argmin", np.argmin)])
def test_argmax_argmin(name, fn, dim, keepdim, rng, device):
    if dim is None and keepdim:
        pytest.skip("keepdim with dim=None differs between torch versions")
    for dtype in on_device(device, ("float32", "float64", "int64", "int32", "uint8"), name):
        a = _distinct(SHAPE, dtype, rng)
        t = tensor(a)
        if dim is None:
            exp = np.asarray(fn(a)).astype(np.int64)
            assert_close(getattr(t, name)(), exp)
            assert_close(getattr(rumus, name)(t), exp)
        else:
            exp = fn(a, axis=dim, keepdims=keepdim).astype(np.int64)
            assert_close(getattr(t, name)(dim=dim, keepdim=keepdim), exp)
            assert_close(getattr(rumus, name)(t, dim, keepdim), exp)


@pytest.mark.parametrize("name,fn", [("argmax", np.argmax), ("argmin", np.argmin)])
def test_argmax_ties_return_first(name, fn, rng, device):
    ints = make((4, 7), "int64", rng, 0, 3)  # many ties
    for a in (ints, ints.astype(np.float32)):
        t = tensor(a)
        assert_close(getattr(t, name)(), np.asarray(fn(a)).astype(np.int64))
        assert_close(getattr(t, name)(dim=1), fn(a, axis=1).astype(np.int64))
        assert_close(getattr(t, name)(dim=0), fn(a, axis=0).astype(np.int64))


def test_argmax_nan_is_max():
    a = np.array([[1.0, np.nan, 3.0, np.nan], [5.0, 2.0, -1.0, 0.0]], np.float32)
    assert_close(tensor(a).argmax(dim=1), np.argmax(a, axis=1).astype(np.int64))
    assert_close(tensor(a).argmax(), np.asarray(np.argmax(a)).astype(np.int64))


# --------------------------------------------------------------------------
# var / std
# --------------------------------------------------------------------------

VAR_DIMS = [None, 0, 1, -1, (0, 2), (2, -3)]


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("dim", VAR_DIMS, ids=str)
@pytest.mark.parametrize("name,fn", [("var", np.var), ("std", np.std)])
def test_var_std(name, fn, dim, correction, keepdim, rng, device):
    for dtype in on_device(device, ("float64", "float32"), name):
        a = make(SHAPE, dtype, rng)
        exp = fn(a.astype(np.float64), axis=dim, ddof=correction, keepdims=keepdim).astype(dtype)
        t = tensor(a)
        tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else {}
        assert_close(getattr(t, name)(**_kw(dim, keepdim), correction=correction), exp, **tol)
        assert_close(
            getattr(rumus, name)(t, **_kw(dim, keepdim), correction=correction), exp, **tol
        )


@pytest.mark.parametrize("name,fn", [("var", np.var), ("std", np.std)])
def test_var_std_unbiased_and_default(name, fn, rng, device):
    # float64 is just "a float" here: float32 on the GPU, with test_var_std's float32 tolerances
    dt = wide(device)
    tol = dict(rtol=1e-4, atol=1e-5) if dt == "float32" else {}
    a = make(SHAPE, dt, rng)
    x = a.astype(np.float64)
    t = tensor(a)

    def exp(r):
        return np.asarray(r).astype(dt)

    assert_close(getattr(t, name)(), exp(fn(x, ddof=1)), **tol)
    assert_close(getattr(t, name)(dim=1), exp(fn(x, axis=1, ddof=1)), **tol)
    assert_close(getattr(t, name)(dim=1, unbiased=True), exp(fn(x, axis=1, ddof=1)), **tol)
    assert_close(getattr(t, name)(dim=1, unbiased=False), exp(fn(x, axis=1, ddof=0)), **tol)
    assert_close(getattr(t, name)(unbiased=False), exp(fn(x, ddof=0)), **tol)
    assert_close(
        getattr(t, name)(dim=(0, 1), unbiased=False, keepdim=True),
        exp(fn(x, axis=(0, 1), ddof=0, keepdims=True)),
        **tol,
    )


def test_var_single_element_is_nan(device):
    dt = wide(device)  # float64 is just "a float" here: float32 on the GPU
    r = rumus.tensor([[1.5], [2.5]], dtype=rdt(dt)).var(dim=1)
    assert_close(r, np.array([np.nan, np.nan], dt))
    r0 = rumus.tensor([[1.5], [2.5]], dtype=rdt(dt)).var(dim=1, correction=0)
    assert_close(r0, np.array([0.0, 0.0], dt))


@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_of_int_raises(name):
    with pytest.raises(RuntimeError):
        getattr(rumus.tensor([1, 2, 3]), name)()


# --------------------------------------------------------------------------
# logsumexp
# --------------------------------------------------------------------------


def _lse(x, axis, keepdims=False):
    x = x.astype(np.float64)
    with SQ():
        m = np.max(x, axis=axis, keepdims=True)
        m = np.where(np.isfinite(m), m, 0.0)
        r = np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m
    if not keepdims:
        r = np.squeeze(r, axis=axis)
    return r


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [0, 1, 2, -1, (0, 2), (0, 1, 2)], ids=str)
def test_logsumexp(dim, keepdim, rng, device):
    for dtype in on_device(device, ("float32", "float64"), "logsumexp"):
        a = make(SHAPE, dtype, rng, -10, 10)
        exp = np.asarray(_lse(a, dim, keepdim)).astype(dtype)
        t = tensor(a)
        assert_close(t.logsumexp(dim, keepdim=keepdim), exp, **_tol(dtype))
        assert_close(rumus.logsumexp(t, dim=dim, keepdim=keepdim), exp, **_tol(dtype))


def test_logsumexp_stable_and_inf_rows(device):
    a = np.array(
        [
            [1000.0, 1000.0, 999.0],
            [-1000.0, -1001.0, -1000.5],
            [-np.inf, -np.inf, -np.inf],
            [-np.inf, 0.0, 1.0],
            [np.inf, 0.0, 1.0],
        ],
        np.float32,
    )
    exp = _lse(a, 1).astype(np.float32)
    assert np.isneginf(exp[2]) and np.isposinf(exp[4])
    assert_close(tensor(a).logsumexp(1), exp)
    dt = wide(device)  # float64 is just "a float" here: float32 on the GPU
    assert_close(tensor(a.astype(dt)).logsumexp(dim=1, keepdim=True), _lse(a, 1, True).astype(dt))
    assert_close(tensor(a[2:4]).logsumexp(0), _lse(a[2:4], 0).astype(np.float32))


# --------------------------------------------------------------------------
# all / any
# --------------------------------------------------------------------------


@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("dim", [None, 0, 1, -1, 2, (0, 2)], ids=str)
@pytest.mark.parametrize("name,fn,p", [("all", np.all, 0.93), ("any", np.any, 0.07)])
def test_all_any(name, fn, p, dim, keepdim, rng):
    a = rng.random(SHAPE) < p
    for x in (a, a.astype(np.float32) * make(SHAPE, "float32", rng, 0.5, 2), a.astype(np.int64)):
        t = tensor(x)
        exp = np.asarray(fn(x, axis=dim, keepdims=keepdim))
        if dim is None and keepdim:
            continue
        assert_close(getattr(t, name)(**_kw(dim, keepdim)), exp)
        assert_close(getattr(rumus, name)(t, **_kw(dim, keepdim)), exp)
    assert_close(getattr(tensor(a), name)(), np.asarray(fn(a)))


# --------------------------------------------------------------------------
# cumsum / cumprod
# --------------------------------------------------------------------------


@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize("name,fn", [("cumsum", np.cumsum), ("cumprod", np.cumprod)])
def test_cumsum_cumprod(name, fn, dim, rng, device):
    for dtype in on_device(device, ("float32", "float64", "int64", "int32", "uint8", "bool"), name):
        if dtype.startswith("float"):
            a = make(SHAPE, dtype, rng, 0.5, 1.5) if name == "cumprod" else make(SHAPE, dtype, rng)
        elif dtype == "bool":
            a = make(SHAPE, dtype, rng)
        else:
            a = make(SHAPE, dtype, rng, 0 if dtype == "uint8" else -2, 3)
        out = dtype if dtype.startswith("float") else "int64"
        exp = fn(a.astype(np.float64 if out.startswith("float") else np.int64), axis=dim).astype(
            out
        )
        t = tensor(a)
        assert_close(getattr(t, name)(dim), exp, **_tol(dtype))
        assert_close(getattr(rumus, name)(t, dim=dim), exp, **_tol(dtype))


@pytest.mark.parametrize(
    "shape,dim",
    [((600, 700), 0), ((4, 300, 90), 1), ((7, 50, 3, 40), 1), ((203, 517), 1), ((3, 9, 700), -1)],
)
def test_cumsum_cumprod_large(shape, dim, rng, device):
    """Scans big enough to be split over threads, along dims with columns after them and
    along the last dim (rows in groups): each row equals NumPy's serial scan."""
    a = make(shape, "float32", rng, 0.9, 1.1)
    t = tensor(a)
    if device == "cpu":  # same order of additions as a serial float32 scan: same bits
        np.testing.assert_array_equal(to_np(t.cumsum(dim)), np.cumsum(a, axis=dim))
        np.testing.assert_array_equal(to_np(t.cumprod(dim)), np.cumprod(a, axis=dim))
    for name, fn, tol in (("cumsum", np.cumsum, 1e-5), ("cumprod", np.cumprod, 1e-4)):
        exp = fn(a.astype(np.float64), axis=dim).astype(np.float32)
        assert_close(getattr(t, name)(dim), exp, rtol=tol, atol=1e-3)
    i = rng.integers(-3, 4, shape)
    assert_close(tensor(i).cumsum(dim), np.cumsum(i, axis=dim))


# --------------------------------------------------------------------------
# views, empty, 0-d
# --------------------------------------------------------------------------

NONCONTIG_CASES = [
    ("sum", {"dim": 1}, lambda x: x.sum(1)),
    ("sum", {}, lambda x: np.asarray(x.sum())),
    ("sum", {"dim": (0, 2), "keepdim": True}, lambda x: x.sum((0, 2), keepdims=True)),
    ("mean", {"dim": -1}, lambda x: x.mean(-1)),
    ("prod", {"dim": 0}, lambda x: x.prod(0)),
    ("amax", {"dim": 1}, lambda x: x.max(1)),
    ("amin", {"dim": (0, 1)}, lambda x: x.min((0, 1))),
    ("argmax", {}, lambda x: np.asarray(np.argmax(x))),
    ("argmax", {"dim": 0}, lambda x: np.argmax(x, 0)),
    ("argmin", {"dim": 2}, lambda x: np.argmin(x, 2)),
    ("var", {"dim": 1}, lambda x: x.var(1, ddof=1)),
    ("std", {"dim": (0, 2), "correction": 0}, lambda x: x.std((0, 2))),
    ("logsumexp", {"dim": 1}, lambda x: _lse(x, 1)),
    ("cumsum", {"dim": 1}, lambda x: np.cumsum(x, 1)),
    ("cumprod", {"dim": 0}, lambda x: np.cumprod(x, 0)),
    ("all", {"dim": 1}, lambda x: np.all(x > 0, 1)),
]


@pytest.mark.parametrize(
    "name,kw,fn", NONCONTIG_CASES, ids=[f"{r[0]}-{r[1]}" for r in NONCONTIG_CASES]
)
def test_noncontig_inputs(name, kw, fn, rng, device):
    a = _distinct((4, 3, 2), "float64", rng) / 10 + 0.2
    # float64 is just "a float" here: float32 on the GPU, against float32-rounded expectations
    dt = wide(device)
    a = a.astype(dt)
    for kind, t, vals in noncontig(a):
        if name == "all":
            t, r_exp = t > 0, fn(vals)
        elif name.startswith("arg"):
            r_exp = fn(vals)
        else:
            r_exp = np.asarray(fn(vals.astype(np.float64))).astype(dt)
        r = getattr(t, name)(**kw)
        if name.startswith("arg"):
            if kind == "expanded":
                continue  # ties along the expanded dim
            r_exp = np.asarray(r_exp).astype(np.int64)
        assert_close(r, np.asarray(r_exp))
    # max with dim on a transposed view: values and indices
    t = tensor(np.ascontiguousarray(a.transpose(2, 1, 0))).permute(2, 1, 0)
    r = t.max(dim=1)
    assert_close(r.values, a.max(1))
    assert_close(r.indices, a.argmax(1).astype(np.int64))


EMPTY_CASES = [
    ("sum()", lambda e: e.sum(), np.asarray(0.0, np.float32)),
    ("sum(0)", lambda e: e.sum(dim=0), np.zeros(3, np.float32)),
    ("sum(1)", lambda e: e.sum(dim=1), np.zeros(0, np.float32)),
    ("sum(0,keepdim)", lambda e: e.sum(dim=0, keepdim=True), np.zeros((1, 3), np.float32)),
    ("sum((0,1))", lambda e: e.sum(dim=(0, 1)), np.asarray(0.0, np.float32)),
    ("int32.sum()", lambda e: e.int().sum(), np.asarray(0, np.int64)),
    ("prod()", lambda e: e.prod(), np.asarray(1.0, np.float32)),
    ("prod(0)", lambda e: e.prod(0), np.ones(3, np.float32)),
    ("mean(0)", lambda e: e.mean(dim=0), np.full(3, np.nan, np.float32)),
    ("var()", lambda e: e.var(), np.asarray(np.nan, np.float32)),
    ("amax(1)", lambda e: e.amax(dim=1), np.zeros(0, np.float32)),
    ("max(1).values", lambda e: e.max(dim=1).values, np.zeros(0, np.float32)),
    ("max(1).indices", lambda e: e.max(dim=1).indices, np.zeros(0, np.int64)),
    ("cumsum(0)", lambda e: e.cumsum(0), np.zeros((0, 3), np.float32)),
    ("logsumexp(0)", lambda e: e.logsumexp(0), np.full(3, -np.inf, np.float32)),
    ("all()", lambda e: e.bool().all(), np.asarray(True)),
    ("any()", lambda e: e.bool().any(), np.asarray(False)),
    ("all(0)", lambda e: e.bool().all(dim=0), np.ones(3, bool)),
    ("any(0)", lambda e: e.bool().any(dim=0), np.zeros(3, bool)),
    ("all(1)", lambda e: e.bool().all(dim=1), np.ones(0, bool)),
]


def _poison_pool(value, n=8):
    """Creates and drops ``n`` small tensors holding ``value``: the backends
    hand freed buffers to the next tensors of the same size bucket."""
    junk = [rumus.full((64,), value) for _ in range(n)]
    del junk


@pytest.mark.parametrize("name,call,exp", EMPTY_CASES, ids=[r[0] for r in EMPTY_CASES])
def test_empty_reductions(name, call, exp, device):
    e = rumus.zeros(0, 3)
    # A result the op forgets to write holds whatever its (pooled, reused)
    # buffer held before, often the right answer by chance: fill the buffers
    # the op is about to get with a value that is not the answer.
    _poison_pool(0.0 if exp.dtype == bool and exp.all() else 7.0)
    assert_close(call(e), exp)


@pytest.mark.parametrize(
    "call",
    [
        lambda e: e.amax(dim=0),
        lambda e: e.max(dim=0),
        lambda e: e.max(),
        lambda e: e.argmax(),
        lambda e: e.argmin(dim=0),
        lambda e: e.amin(),
    ],
    ids=["amax0", "max0", "max", "argmax", "argmin0", "amin"],
)
def test_empty_max_like_raises(call):
    with pytest.raises((IndexError, RuntimeError)):
        call(rumus.zeros(0, 3))


def test_zero_dim_reductions():
    a = np.asarray(2.5, np.float32)
    t = tensor(a)
    for r in (
        t.sum(),
        t.sum(0),
        t.sum(-1),
        t.sum(dim=0, keepdim=True),
        t.mean(),
        t.amax(),
        t.max(),
        t.prod(),
    ):
        assert_close(r, a.copy())
    assert_close(t.argmax(), np.asarray(0, np.int64))
    assert_close(t.var(correction=0), np.asarray(0.0, np.float32))
    assert_close(t.cumsum(0), a.copy())
    assert_close(t.logsumexp(0), a.copy())
    assert_close(t.all(), np.asarray(True))
    r = t.max(dim=0)
    assert_close(r.values, a.copy())
    assert_close(r.indices, np.asarray(0, np.int64))
    assert_close(rumus.tensor(3).sum(), np.asarray(3, np.int64))
    with pytest.raises(IndexError):
        t.sum(dim=1)


# --------------------------------------------------------------------------
# errors
# --------------------------------------------------------------------------

DIM_ERR_CALLS = [
    ("sum", lambda t: t.sum(dim=2)),
    ("sum-neg", lambda t: t.sum(dim=-3)),
    ("sum-tuple", lambda t: t.sum(dim=(0, 5))),
    ("mean", lambda t: t.mean(dim=3)),
    ("prod", lambda t: t.prod(2)),
    ("amax", lambda t: t.amax(dim=2)),
    ("max", lambda t: t.max(dim=2)),
    ("min", lambda t: t.min(dim=-3)),
    ("argmax", lambda t: t.argmax(dim=2)),
    ("var", lambda t: t.var(dim=2)),
    ("std", lambda t: t.std(dim=-5)),
    ("logsumexp", lambda t: t.logsumexp(2)),
    ("all", lambda t: t.all(dim=2)),
    ("any", lambda t: t.any(dim=2)),
    ("cumsum", lambda t: t.cumsum(2)),
    ("cumprod", lambda t: t.cumprod(-3)),
]


@pytest.mark.parametrize("name,call", DIM_ERR_CALLS, ids=[r[0] for r in DIM_ERR_CALLS])
def test_dim_out_of_range_raises_index_error(name, call):
    t = rumus.ones(2, 3)
    with pytest.raises(IndexError):
        call(t)


def test_dim_out_of_range_message():
    with pytest.raises(IndexError, match=r"(?i)dimension out of range"):
        rumus.ones(2, 3).sum(dim=2)


def test_duplicate_dims_raise():
    with pytest.raises(RuntimeError):
        rumus.ones(2, 3).sum(dim=(0, 0))
    with pytest.raises(RuntimeError):
        rumus.ones(2, 3).amax(dim=(1, -1))


@pytest.mark.parametrize("name", ["std", "var"])
def test_var_std_positional_bool_is_unbiased(name):
    # PyTorch's `x.std(False)` overload: the bool is `unbiased`, not a dim.
    a = np.array([[1.0, 2.0, 4.0], [3.0, 5.0, 9.0]], dtype=np.float32)
    x = rumus.tensor(a)
    assert_close(getattr(x, name)(False), getattr(np, name)(a, ddof=0))
    assert_close(getattr(x, name)(True), getattr(np, name)(a, ddof=1))
    with pytest.raises(TypeError, match="unbiased"):
        getattr(x, name)(False, unbiased=True)
