"""What the registry (tests/op_db_mathops.py) cannot express for python/rumus/_mathops.py:
the inverse hyperbolics' accuracy over float32's whole range, signed zeros and NaN, the frexp
tuple, gcd/lcm dtypes, float_power's float64 rule, and the legacy norm / dist / renorm
variants, against NumPy and against PyTorch when it is importable."""

import math

import numpy as np
import pytest
import rumus


def _t(values, dtype="float32"):
    return rumus.tensor(np.asarray(values, dtype=dtype))


def _wide(dtype):
    lo, hi = (-40, 38) if dtype == "float32" else (-300, 300)
    return np.logspace(lo, hi, 3000)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "name, ref, values",
    [
        ("asinh", np.arcsinh, lambda d: np.concatenate([_wide(d), -_wide(d)])),
        ("acosh", np.arccosh, lambda d: np.concatenate([1 + np.logspace(-7, 0, 300), _wide(d)])),
        ("atanh", np.arctanh, lambda d: np.concatenate([1 - np.logspace(-7, -1, 300), -_wide(d)])),
    ],
)
def test_inverse_hyperbolic_accuracy(name, ref, values, dtype):
    x = values(dtype).astype(dtype)
    x = x[(x >= 1) if name == "acosh" else (np.abs(x) < 1) if name == "atanh" else slice(None)]
    got = getattr(rumus, name)(_t(x, dtype)).numpy().astype(np.float64)
    exp = ref(x.astype(np.float64))
    rel = np.abs(got - exp) / np.maximum(np.abs(exp), np.finfo(dtype).tiny)
    assert rel.max() < (1e-6 if dtype == "float32" else 1e-14), (name, x[rel.argmax()])


def test_inverse_hyperbolic_specials():
    inf, nan = math.inf, math.nan
    x = _t([0.0, -0.0, 1.0, -1.0, 2.0, inf, -inf, nan])
    with np.errstate(all="ignore"):
        xs = x.numpy()
        for name, ref in [("asinh", np.arcsinh), ("acosh", np.arccosh), ("atanh", np.arctanh)]:
            np.testing.assert_array_equal(getattr(rumus, name)(x).numpy(), ref(xs), err_msg=name)
    for name, alias in [("asinh", "arcsinh"), ("acosh", "arccosh"), ("atanh", "arctanh")]:
        np.testing.assert_array_equal(getattr(rumus, alias)(x).numpy(), getattr(x, name)().numpy())
        y = x.clone()
        assert getattr(y, alias + "_")() is y
        np.testing.assert_array_equal(y.numpy(), getattr(rumus, name)(x).numpy())


def test_integer_inputs_promote_and_inplace_refuses():
    x = rumus.tensor([1, 2, 3])
    assert rumus.acosh(x).dtype == rumus.float32
    assert rumus.deg2rad(x).dtype == rumus.float32
    with pytest.raises(RuntimeError, match="can't be cast"):
        x.acosh_()
    y = _t([2.0, 3.0])
    assert y.asinh_() is y
    np.testing.assert_allclose(y.numpy(), np.arcsinh([2.0, 3.0]), rtol=1e-6)


def test_signbit_copysign_signed_zero():
    x = _t([-0.0, 0.0, -2.0, 3.0, math.inf, -math.inf])
    assert rumus.signbit(x).numpy().tolist() == [True, False, True, False, False, True]
    got = rumus.copysign(_t([1.0, 1.0, 1.0, 1.0, 1.0, 1.0]), x).numpy()
    np.testing.assert_array_equal(got, np.copysign(1.0, x.numpy()))
    assert rumus.signbit(rumus.tensor([-1, 0, 2])).numpy().tolist() == [True, False, False]
    assert rumus.copysign(rumus.tensor([3, -2]), -1).dtype == rumus.float32


def test_fmax_fmin_nan():
    nan = math.nan
    a, b = _t([1.0, nan, nan, 5.0]), _t([nan, 2.0, nan, 4.0])
    np.testing.assert_array_equal(rumus.fmax(a, b).numpy(), np.fmax(a.numpy(), b.numpy()))
    np.testing.assert_array_equal(rumus.fmin(a, b).numpy(), np.fmin(a.numpy(), b.numpy()))


def test_heaviside_needs_one_dtype():
    with pytest.raises(RuntimeError, match="different dtypes"):
        rumus.heaviside(_t([0.0]), rumus.tensor([1]))


def test_gcd_lcm_dtypes():
    a, b = rumus.tensor([12, 0, -18, 7, 0], dtype=rumus.int32), rumus.tensor([18, 5, 12, 0, 0])
    g, m = rumus.gcd(a, b), rumus.lcm(a, b)
    assert g.dtype == m.dtype == rumus.int64
    assert g.numpy().tolist() == np.gcd(a.numpy(), b.numpy()).tolist()
    assert m.numpy().tolist() == np.lcm(a.numpy(), b.numpy()).tolist()
    assert rumus.gcd(a, a).dtype == rumus.int32
    with pytest.raises(RuntimeError):
        rumus.gcd(_t([1.0]), _t([2.0]))
    big = rumus.tensor([2**62, 832040])
    assert rumus.gcd(big, rumus.tensor([2**40, 514229])).numpy().tolist() == [2**40, 1]


def test_float_power_is_float64():
    assert rumus.float_power(rumus.tensor([2, 3]), 2).dtype == rumus.float64
    assert rumus.float_power(2, _t([1.0, 0.5])).dtype == rumus.float64
    np.testing.assert_allclose(rumus.float_power(2, _t([1.0, 0.5])).numpy(), [2.0, 2**0.5])
    with pytest.raises(RuntimeError, match="Double"):
        _t([1.0]).float_power_(2)
    x = rumus.tensor([1.5, 2.0], dtype=rumus.float64)
    assert x.float_power_(2) is x and x.numpy().tolist() == [2.25, 4.0]


def test_frexp_tuple():
    x = _t([8.0, 0.0, -3.0, 1e-40, math.inf, 0.75])
    out = rumus.frexp(x)
    mant, exp = out
    assert out.mantissa is mant and out.exponent is exp and exp.dtype == rumus.int32
    nm, ne = np.frexp(x.numpy())
    np.testing.assert_array_equal(mant.numpy(), nm)
    np.testing.assert_array_equal(exp.numpy(), ne)
    with pytest.raises(RuntimeError, match="floating"):
        rumus.frexp(rumus.tensor([1, 2]))


def test_norm_variants():
    a = np.arange(24, dtype=np.float64).reshape(2, 3, 4) - 11.5
    x = rumus.tensor(a)
    np.testing.assert_allclose(rumus.norm(x).item(), np.linalg.norm(a.ravel()))
    np.testing.assert_allclose(x.norm(1, dim=2).numpy(), np.abs(a).sum(2))
    np.testing.assert_allclose(x.norm("fro", dim=(1, 2)).numpy(), np.sqrt((a * a).sum((1, 2))))
    np.testing.assert_allclose(x.norm(math.inf).item(), np.abs(a).max())
    np.testing.assert_allclose(
        x.norm("nuc", dim=(1, 2)).numpy(), np.linalg.norm(a, "nuc", axis=(1, 2))
    )
    with pytest.raises(RuntimeError, match="'nuc'"):
        x.norm("nuc")
    with pytest.raises(RuntimeError, match="at most 2"):
        x.norm("fro", dim=(0, 1, 2))
    with pytest.raises(RuntimeError, match="'fro' and 'nuc'"):
        x.norm("abc")


def test_dist_and_renorm():
    a = np.array([[3.0, 4.0], [0.3, 0.4], [1.0, 0.0]])
    np.testing.assert_allclose(rumus.dist(rumus.tensor(a), rumus.tensor([0.0, 0.0]), 1).item(), 8.7)
    got = rumus.renorm(rumus.tensor(a), 2, 0, 1.0).numpy()
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    np.testing.assert_allclose(got, np.where(norms > 1.0, a / (norms + 1e-7), a), rtol=1e-12)
    x = rumus.tensor(a)
    assert x.renorm_(2, 0, 1.0) is x
    np.testing.assert_allclose(x.numpy(), got)
    with pytest.raises(RuntimeError, match="non-positive"):
        rumus.renorm(rumus.tensor(a), 0, 0, 1.0)
    with pytest.raises(IndexError):
        rumus.renorm(rumus.tensor(a), 2, 3, 1.0)


# ------------------------------------------------------------ against PyTorch


def _torch():
    return pytest.importorskip("torch")


def _both(torch, values, dtype="float32"):
    a = np.asarray(values, dtype=dtype)
    return rumus.tensor(a), torch.tensor(a)


def _same(got, exp, rtol=1e-6):
    exp = exp.detach().numpy() if hasattr(exp, "detach") else np.asarray(exp)
    assert str(got.dtype).removeprefix("rumus.") == str(exp.dtype)
    np.testing.assert_allclose(got.numpy(), exp, rtol=rtol, atol=1e-7, equal_nan=True)


@pytest.mark.parametrize(
    "name", ["acosh", "asinh", "atanh", "deg2rad", "rad2deg", "signbit", "frexp"]
)
def test_unary_against_torch(name):
    torch = _torch()
    vals = [-1e30, -3.5, -1.0, -0.5, -0.0, 0.0, 1e-30, 0.5, 1.0, 1.5, 1e30, math.inf, math.nan]
    r, t = _both(torch, vals)
    got, exp = getattr(rumus, name)(r), getattr(torch, name)(t)
    if name == "frexp":
        _same(got.mantissa, exp.mantissa)
        _same(got.exponent, exp.exponent)
    elif name == "signbit":
        keep = ~np.isnan(np.asarray(vals))  # rumus cannot see a NaN's sign
        assert got.numpy()[keep].tolist() == exp.numpy()[keep].tolist()
    else:
        _same(got, exp)
    ri, ti = _both(torch, [1, 2, 3], "int64")
    if name not in ("frexp", "signbit"):
        _same(getattr(rumus, name)(ri), getattr(torch, name)(ti))


@pytest.mark.parametrize("name", ["copysign", "fmax", "fmin", "heaviside", "ldexp"])
def test_binary_against_torch(name):
    torch = _torch()
    a = [1.0, -2.0, 0.0, -0.0, math.nan, 3.0, math.inf]
    b = [-0.0, 2.0, 0.5, math.nan, 1.0, math.nan, -1.0]
    ra, ta = _both(torch, a)
    rb, tb = _both(torch, b)
    _same(getattr(rumus, name)(ra, rb), getattr(torch, name)(ta, tb))


def test_integer_ops_against_torch():
    torch = _torch()
    a = np.array([12, 0, -18, 7, 0, 9], np.int32)
    b = np.array([18, 5, 12, 0, 0, -6], np.int64)
    for name in ("gcd", "lcm"):
        got = getattr(rumus, name)(rumus.tensor(a), rumus.tensor(b))
        _same(got, getattr(torch, name)(torch.tensor(a), torch.tensor(b)))
    r, t = _both(torch, [1, 2, 3], "int32")
    _same(rumus.float_power(r, 2.5), torch.float_power(t, 2.5))
    _same(rumus.ldexp(r, r), torch.ldexp(t, t))


@pytest.mark.parametrize(
    "args, kw",
    [
        ((), {}),
        ((1,), {}),
        ((3,), {"dim": 1}),
        (("fro",), {"dim": (0, 1), "keepdim": True}),
        (("nuc",), {"dim": (1, 2)}),
        ((math.inf,), {"dim": -1}),
        ((0,), {}),
        ((2,), {"dim": (1, 2), "dtype": "float64"}),
    ],
)
def test_norm_against_torch(args, kw):
    torch = _torch()
    r, t = _both(torch, np.linspace(-3, 3, 24).reshape(2, 3, 4))
    rkw, tkw = dict(kw), dict(kw)
    if "dtype" in kw:
        rkw["dtype"], tkw["dtype"] = getattr(rumus, kw["dtype"]), getattr(torch, kw["dtype"])
    _same(rumus.norm(r, *args, **rkw), torch.norm(t, *args, **tkw), rtol=1e-5)
    _same(r.norm(*args, **rkw), t.norm(*args, **tkw), rtol=1e-5)


def test_dist_renorm_against_torch():
    torch = _torch()
    ra, ta = _both(torch, np.linspace(-2, 2, 12).reshape(3, 4))
    rb, tb = _both(torch, [0.5, -1.0, 0.0, 2.0])
    for p in (2, 1, 3.5, 0, math.inf):
        _same(rumus.dist(ra, rb, p), torch.dist(ta, tb, p), rtol=1e-5)
    for p, dim, maxnorm in [(2, 0, 1.0), (1, 1, 2.0), (math.inf, 0, 0.5)]:
        _same(rumus.renorm(ra, p, dim, maxnorm), torch.renorm(ta, p, dim, maxnorm), rtol=1e-5)
