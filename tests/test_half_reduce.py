"""Reductions and softmax of float16/bfloat16 CPU tensors, read in place
(no float32 copy of the input): every layout the reduce driver has
(contiguous rows, strided rows, kept inner dims, full reductions, parallel
splits), checked against float64 NumPy on the same half values, rounded
once to the half dtype."""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F

DTYPES = [rumus.bfloat16, rumus.float16]
# Unit roundoff of each dtype: one rounding of the exact result.
EPS = {rumus.bfloat16: 2.0**-8, rumus.float16: 2.0**-11}


def half(shape, dtype, seed=0, scale=3.0):
    """(tensor in dtype, its exact values as float64)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32) * scale
    t = rumus.tensor(x).to(dtype)
    return t, t.double().numpy()


def close(got, ref, dtype, atol=0.0):
    assert got.dtype == dtype
    g = got.double().numpy()
    assert g.shape == np.shape(ref)
    np.testing.assert_allclose(g, ref, rtol=EPS[dtype], atol=atol)


# (view of the tensor, same view of the array): contiguous, transposed,
# sliced with steps, a kept inner dim (dim-0 reductions walk rows).
def views(t, x):
    yield t, x
    yield t.transpose(0, 1), x.swapaxes(0, 1)
    yield t[:, ::3, 1:], x[:, ::3, 1:]
    yield t.permute(2, 0, 1), x.transpose(2, 0, 1)


SHAPES = [(3, 40, 17), (4, 300, 129)]
DIMS = [None, 0, 1, 2, -1, (0, 2), (0, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_sum_mean_every_layout(dtype, shape):
    t, x = half(shape, dtype, 1)
    for tv, xv in views(t, x):
        for d in DIMS:
            for keep in (False, True):
                kw = {} if d is None else {"dim": d, "keepdim": keep}
                np_kw = {"axis": d, "keepdims": keep} if d is not None else {}
                mag = np.abs(xv).sum(**np_kw)
                # The reference rounded once; float64 sums in another order
                # differ far below the half rounding.
                close(tv.sum(**kw), xv.sum(**np_kw), dtype, atol=1e-12 * mag.max())
                n = xv.size // np.size(xv.sum(**np_kw))
                close(tv.mean(**kw), xv.mean(**np_kw), dtype, atol=1e-12 * mag.max() / n)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_to_other_dtypes_and_prod(dtype):
    t, x = half((6, 50), dtype, 2)
    s = t.sum(dim=1, dtype=rumus.float32)
    assert s.dtype == rumus.float32
    np.testing.assert_allclose(s.numpy(), x.sum(1), rtol=2**-23)
    m = t.mean(dtype=rumus.float64)
    assert m.dtype == rumus.float64
    np.testing.assert_allclose(m.item(), x.mean(), rtol=1e-12)
    p, px = half((7, 9), dtype, 3, scale=1.0)
    close(p.prod(dim=1), px.prod(1), dtype)
    close(p.t().prod(dim=0, keepdim=True), px.T.prod(0, keepdims=True), dtype)
    close(p.prod(), px.prod(), dtype, atol=2.0**-24)  # may underflow in float16


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_max_min_argmax_exact(dtype, shape):
    t, x = half(shape, dtype, 4)
    for tv, xv in views(t, x):
        for d in (0, 1, 2, -1):
            for keep in (False, True):
                for op, npv, npi in (("max", np.max, np.argmax), ("min", np.min, np.argmin)):
                    v, i = getattr(tv, op)(dim=d, keepdim=keep)
                    assert v.dtype == dtype and i.dtype == rumus.int64
                    np.testing.assert_array_equal(v.double().numpy(), npv(xv, d, keepdims=keep))
                    np.testing.assert_array_equal(i.numpy(), npi(xv, d, keepdims=keep))
                    a = getattr(tv, "a" + op)(dim=d, keepdim=keep)
                    np.testing.assert_array_equal(a.double().numpy(), npv(xv, d, keepdims=keep))
                    arg = getattr(tv, "arg" + op)(dim=d, keepdim=keep)
                    np.testing.assert_array_equal(arg.numpy(), npi(xv, d, keepdims=keep))
        np.testing.assert_array_equal(tv.amax((0, 2)).double().numpy(), xv.max((0, 2)))
        assert tv.max().item() == xv.max() and tv.min().item() == xv.min()
        assert tv.argmax().item() == np.argmax(xv)


@pytest.mark.parametrize("dtype", DTYPES)
def test_extremes_nan_and_inf(dtype):
    x = np.array([[1.0, np.nan, 3.0, -np.inf], [np.inf, 2.0, -1.0, 0.5]] * 20, np.float32)
    t = rumus.tensor(x).to(dtype)
    got = t.amax(dim=1).double().numpy()
    np.testing.assert_array_equal(got, np.max(x.astype(np.float64), 1))
    np.testing.assert_array_equal(t.amin(dim=0).double().numpy(), np.min(x, 0))
    assert np.isnan(t.max().item()) and np.isnan(t.amin().item())
    np.testing.assert_array_equal(t.argmax(dim=1).numpy(), np.argmax(x, 1))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_var_std_every_layout(dtype, shape):
    t, x = half(shape, dtype, 5)
    t, x = t + 100, (t + 100).double().numpy()  # a large mean: one-pass formulas lose it
    for tv, xv in views(t, x):
        for d in (None, 0, 1, -1, (0, 2)):
            for keep in (False, True):
                for corr in (0, 1):
                    kw = {"dim": d, "keepdim": keep, "correction": corr}
                    ref = xv.var(axis=d, keepdims=keep, ddof=corr)
                    close(tv.var(**kw), ref, dtype)
                    # sqrt of the rounded variance: at most one more rounding.
                    std = tv.std(**kw)
                    np.testing.assert_allclose(
                        std.double().numpy(), np.sqrt(ref), rtol=2 * EPS[dtype]
                    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_var_edge_cases(dtype):
    t, x = half((5, 1), dtype, 6)
    assert np.isnan(t.var(dim=1).double().numpy()).all()  # n - correction = 0
    np.testing.assert_array_equal(t.var(dim=1, correction=0).double().numpy(), 0)
    e = rumus.zeros(0, 3).to(dtype)
    assert np.isnan(e.var(dim=0).double().numpy()).all()
    np.testing.assert_array_equal(e.sum(dim=0).double().numpy(), 0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_large_parallel_reductions(dtype):
    # Full reductions of long rows split across threads, and dim-0 sums of a
    # wide matrix (the kept-columns strategy).
    t, x = half((64, 20_001), dtype, 7)
    close(t.sum(), x.sum(), dtype, atol=1e-9 * np.abs(x).sum())
    close(t.sum(0), x.sum(0), dtype, atol=1e-12 * np.abs(x).sum(0).max())
    close(t.var(), x.var(ddof=1), dtype)
    np.testing.assert_array_equal(t.amax(0).double().numpy(), x.max(0))
    assert t.argmin().item() == np.argmin(x)
    # the same lanes and order as the float32 path: its sum rounded once, bit for bit
    for d in (None, 1):
        f = t.float()
        want = (f.sum() if d is None else f.sum(d)).to(dtype)
        got = t.sum() if d is None else t.sum(d)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_equals_float32_rounded_once(dtype, log):
    f = F.log_softmax if log else F.softmax
    for shape, dim in (((7, 33), -1), ((5, 300, 11), 1), ((3, 40, 17), 0), ((2, 9000), 1)):
        t, _ = half(shape, dtype, 8)
        out = f(t, dim=dim)
        assert out.dtype == dtype and out.shape == t.shape
        ref = f(t.float(), dim=dim).to(dtype)
        np.testing.assert_array_equal(out.float().numpy(), ref.float().numpy())
        tt = t.transpose(0, -1)  # a non-contiguous input
        np.testing.assert_array_equal(
            f(tt, dim=0).float().numpy(), f(tt.float(), dim=0).to(dtype).float().numpy()
        )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("log", [False, True])
def test_softmax_backward(dtype, log):
    f = F.log_softmax if log else F.softmax
    for shape, dim in (((6, 70), 1), ((4, 50, 9), 1)):
        t, _ = half(shape, dtype, 9)
        g, _ = half(shape, dtype, 10, scale=1.0)
        a = t.clone().requires_grad_(True)
        f(a, dim=dim).backward(g)
        b = t.float().requires_grad_(True)
        y = f(b, dim=dim).to(dtype)  # the saved output rounded as in the half case
        assert a.grad.dtype == dtype
        yb = y.float().detach()
        gf = g.float()
        if log:
            ref = gf - yb.exp() * gf.sum(dim, keepdim=True)
        else:
            ref = yb * (gf - (gf * yb).sum(dim, keepdim=True))
        np.testing.assert_allclose(
            a.grad.float().numpy(), ref.numpy(), rtol=2 * EPS[dtype], atol=4 * EPS[dtype]
        )


def test_float16_special_values_widen_exactly():
    # Subnormals, the largest finite value, signed zeros, inf and NaN read in
    # place must equal their float64 values.
    sub = np.array([2.0**-24, -(2.0**-24), 3 * 2.0**-20, 2.0**-14 - 2.0**-24, 65504.0, -0.0])
    t = rumus.tensor(np.tile(sub, 40).reshape(40, 6)).half()
    x = t.double().numpy()
    # The exact sums rounded once (65504 * 40 overflows to inf, as in PyTorch).
    with np.errstate(over="ignore"):
        want = x.sum(0).astype(np.float16).astype(np.float64)
    np.testing.assert_array_equal(t.sum(0).double().numpy(), want)
    np.testing.assert_array_equal(t.t().sum(1).double().numpy(), want)
    np.testing.assert_array_equal(t.amax(0).double().numpy(), x.max(0))
    np.testing.assert_array_equal(t.t().amin(1).double().numpy(), x.min(0))
    sp = rumus.tensor(np.array([[1.0, np.inf], [2.0, -np.inf], [np.nan, 3.0]] * 30)).half()
    assert np.isnan(sp.sum().item()) and np.isnan(sp.sum(0)[0].item())
    assert np.isnan(sp.t().sum(1)[1].item())  # inf + -inf
    np.testing.assert_array_equal(sp[:2].t().contiguous().sum(1).double().numpy(), [3.0, np.nan])
    assert sp[:, 1:].amax().item() == np.inf and sp[:, 1:].amin().item() == -np.inf
