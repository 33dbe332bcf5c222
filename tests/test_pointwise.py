"""Composite pointwise ops (rust/ops/pointwise.rs) and the binary ops hypot, logaddexp,
logaddexp2, xlogy: defaults, keyword arguments, special values and errors the registry
(tests/op_db.py) cannot express."""

import math

import numpy as np
import pytest
import rumus
from conftest import assert_close, to_np

INF, NAN = math.inf, math.nan


# ---- hypot, logaddexp, logaddexp2, xlogy


def test_logaddexp_does_not_overflow(device):
    a = rumus.tensor([1000.0, -1000.0, -INF, INF, 88.0], device=device)
    b = rumus.tensor([1000.0, -1000.5, -INF, INF, 89.0], device=device)
    got = to_np(rumus.logaddexp(a, b))
    np.testing.assert_allclose(got, np.logaddexp(to_np(a), to_np(b)), rtol=1e-6)
    got2 = to_np(rumus.logaddexp2(a, b))
    np.testing.assert_allclose(got2, np.logaddexp2(to_np(a), to_np(b)), rtol=1e-6)


def test_logaddexp_gradient_is_finite_for_large_inputs():
    a = rumus.tensor([1000.0, -1000.0], dtype=rumus.float64, requires_grad=True)
    b = rumus.tensor([999.0, -1000.0], dtype=rumus.float64, requires_grad=True)
    rumus.logaddexp(a, b).sum().backward()
    s = 1 / (1 + math.exp(-1.0))
    np.testing.assert_allclose(a.grad.numpy(), [s, 0.5])
    np.testing.assert_allclose(b.grad.numpy(), [1 - s, 0.5])


def test_xlogy_special_values(device):
    x = rumus.tensor([0.0, 0.0, 0.0, 0.0, 2.0, -0.0], device=device)
    y = rumus.tensor([0.0, INF, NAN, 3.0, 0.0, 5.0], device=device)
    got = to_np(rumus.xlogy(x, y))
    np.testing.assert_array_equal(got[[0, 1, 3, 5]], [0.0, 0.0, 0.0, 0.0])
    assert math.isnan(got[2]) and got[4] == -INF


def test_xlogy_numbers_and_promotion(device):
    y = rumus.tensor([1, 2, 4], device=device)
    r = rumus.xlogy(2, y)
    assert r.dtype == rumus.float32
    np.testing.assert_allclose(to_np(r), 2 * np.log([1, 2, 4]), rtol=1e-6)
    np.testing.assert_allclose(to_np(y.xlogy(3.0)), np.array([1, 2, 4]) * np.log(3.0), rtol=1e-6)
    assert rumus.xlogy(rumus.tensor([1.0], dtype=rumus.float64), 2).dtype == rumus.float64
    with pytest.raises(TypeError, match="xlogy"):
        rumus.xlogy(2.0, 3.0)


def test_xlogy_inplace_needs_a_float_tensor(device):
    t = rumus.tensor([1, 2], device=device)
    with pytest.raises(RuntimeError, match="can't be cast"):
        t.xlogy_(2.0)
    f = rumus.tensor([1.0, 2.0], device=device)
    assert f.xlogy_(2.0) is f
    np.testing.assert_allclose(to_np(f), np.array([1, 2]) * np.log(2.0), rtol=1e-6)


@pytest.mark.parametrize("name", ["hypot", "logaddexp", "logaddexp2"])
def test_float_only_binary_ops(name, device):
    i = rumus.tensor([3, 4], device=device)
    with pytest.raises(RuntimeError, match=f'"{name}" not implemented for'):
        getattr(rumus, name)(i, i)
    f = rumus.tensor([3.0, 4.0], device=device)
    with pytest.raises(TypeError, match=f"{name}\\(\\): argument 'other'"):
        getattr(rumus, name)(f, 2.0)


def test_hypot_large_values_and_inplace(device):
    a = rumus.tensor([3e30, 0.0, INF], device=device)
    b = rumus.tensor([4e30, 0.0, NAN], device=device)
    np.testing.assert_allclose(to_np(rumus.hypot(a, b)), [5e30, 0.0, INF], rtol=1e-6)
    t = rumus.tensor([3.0], device=device)
    assert t.hypot_(rumus.tensor([4.0], device=device)) is t and t.tolist() == [5.0]


# ---- logit, nan_to_num, lerp, addcmul, addcdiv, clamp_min_ / clamp_max_


def test_logit_eps_and_ints(device):
    x = rumus.tensor([0.0, 0.1, 0.5, 1.0], device=device)
    np.testing.assert_allclose(to_np(x.logit()), [-INF, math.log(1 / 9), 0.0, INF], rtol=1e-6)
    e = to_np(rumus.logit(x, eps=0.2))
    np.testing.assert_allclose(e, np.log([0.25, 0.25, 1.0, 4.0]), rtol=1e-6)
    assert rumus.tensor([0, 1], device=device).logit().dtype == rumus.float32
    with pytest.raises(RuntimeError, match="can't be cast"):
        rumus.tensor([0, 1], device=device).logit_()


@pytest.mark.parametrize(
    "dtype,big",
    [
        ("float32", float(np.finfo(np.float32).max)),
        ("float64", float(np.finfo(np.float64).max)),
        ("float16", 65504.0),
        ("bfloat16", 3.3895313892515355e38),
    ],
)
def test_nan_to_num_defaults_to_the_dtypes_finite_range(dtype, big):
    x = rumus.tensor([NAN, INF, -INF, 1.5], dtype=getattr(rumus, dtype))
    r = rumus.nan_to_num(x)
    assert r.dtype == x.dtype
    np.testing.assert_array_equal(to_np(r).astype(np.float64), [0.0, big, -big, 1.5])


def test_nan_to_num_kwargs_inplace_and_ints(device):
    x = rumus.tensor([NAN, INF, -INF, 2.0], device=device)
    r = x.nan_to_num(nan=1.0, posinf=9.0, neginf=-9.0)
    assert r.tolist() == [1.0, 9.0, -9.0, 2.0]
    assert x.nan_to_num(posinf=5.0).tolist()[:2] == [0.0, 5.0]
    assert x.nan_to_num_(nan=-1.0, neginf=0.0) is x
    assert x.tolist()[0] == -1.0 and x.tolist()[2] == 0.0
    i = rumus.tensor([1, 2], device=device)
    j = i.nan_to_num()
    assert j.tolist() == [1, 2] and j.dtype == rumus.int64
    j.add_(1)
    assert i.tolist() == [1, 2]  # a copy


def test_nan_to_num_gradient_is_zero_where_replaced():
    x = rumus.tensor([NAN, 1.0, INF, -2.0], dtype=rumus.float64, requires_grad=True)
    x.nan_to_num().sum().backward()
    assert x.grad.tolist() == [0.0, 1.0, 0.0, 1.0]


def test_lerp_weights(device):
    a = rumus.tensor([1.0, 2.0], device=device)
    b = rumus.tensor([3.0, 10.0], device=device)
    assert rumus.lerp(a, b, 1.0).tolist() == [3.0, 10.0]  # exact at weight 1
    assert a.lerp(b, 0.25).tolist() == [1.5, 4.0]
    w = rumus.tensor([0.0, 1.0], device=device)
    assert a.lerp(b, w).tolist() == [1.0, 10.0]
    t = a.clone()
    assert t.lerp_(b, 0.5) is t and t.tolist() == [2.0, 6.0]


def test_lerp_errors(device):
    a = rumus.ones(2, device=device)
    with pytest.raises(
        RuntimeError, match="lerp: expected dtype float32 for `end` but got dtype float16"
    ):
        a.lerp(rumus.ones(2, dtype=rumus.float16, device=device), 0.5)
    with pytest.raises(RuntimeError, match="`weight`"):
        a.lerp(a, rumus.ones(2, dtype=rumus.float16, device=device))
    i = rumus.ones(2, dtype=rumus.int64, device=device)
    with pytest.raises(RuntimeError, match='"lerp" not implemented'):
        i.lerp(i, 0.5)
    with pytest.raises(RuntimeError):
        rumus.ones(2, 1, device=device).lerp_(rumus.ones(3, device=device), 0.5)


def test_addcmul_addcdiv_value(device):
    x = rumus.tensor([1.0, 2.0], device=device)
    a = rumus.tensor([2.0, 3.0], device=device)
    b = rumus.tensor([4.0, 6.0], device=device)
    assert rumus.addcmul(x, a, b).tolist() == [9.0, 20.0]
    assert x.addcmul(a, b, value=-0.5).tolist() == [-3.0, -7.0]
    assert x.addcdiv(a, b, value=2).tolist() == [2.0, 3.0]
    t = x.clone()
    assert t.addcdiv_(a, b) is t and t.tolist() == [1.5, 2.5]
    i = rumus.tensor([1, 2], device=device)
    assert i.addcmul(i, i, value=2).tolist() == [3, 10]
    with pytest.raises(RuntimeError, match="addcmul: For integral input tensors, argument value"):
        i.addcmul(i, i, value=0.5)
    with pytest.raises(RuntimeError, match="Integer division with addcdiv is no longer supported"):
        x.addcdiv(i, i)
    with pytest.raises(TypeError):
        x.addcmul(a, b, 2.0)  # value is keyword-only


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_fused_cpu_pointwise_equals_the_recorded_composite(dtype):
    # Without a gradient, CPU float tensors take one fused pass; with one, the recorded
    # composite runs. Both must give the same bits, in place and with broadcasting.
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((2, 5, 33)).astype(dtype)
    z = (rng.random((5, 1)) + 0.5).astype(dtype)
    w = rng.uniform(-0.2, 1.2, (5, 33)).astype(dtype)  # both sides of 0.5
    calls = [
        lambda a, b, c, d: rumus.addcmul(a, b, c, value=0.7),
        lambda a, b, c, d: rumus.addcmul(a, b, c),
        lambda a, b, c, d: rumus.addcdiv(a, b, c, value=-2),
        lambda a, b, c, d: rumus.lerp(a, b, 0.3),
        lambda a, b, c, d: rumus.lerp(a, b, 0.8),
        lambda a, b, c, d: rumus.lerp(a, b, d),
    ]
    inplace = [
        lambda a, b, c, d: a.addcmul_(b, c, value=0.7),
        lambda a, b, c, d: a.addcmul_(b, c),
        lambda a, b, c, d: a.addcdiv_(b, c, value=-2),
        lambda a, b, c, d: a.lerp_(b, 0.3),
        lambda a, b, c, d: a.lerp_(b, 0.8),
        lambda a, b, c, d: a.lerp_(b, d),
    ]
    for f, f_ in zip(calls, inplace):
        fast = to_np(f(*(rumus.tensor(v) for v in (x, y, z, w))))
        xg = rumus.tensor(x, requires_grad=True)
        slow = to_np(f(xg, rumus.tensor(y), rumus.tensor(z), rumus.tensor(w)))
        np.testing.assert_array_equal(fast, slow)
        t = rumus.tensor(x)
        assert f_(t, *(rumus.tensor(v) for v in (y, z, w))) is t
        np.testing.assert_array_equal(to_np(t), slow)
    # Operands sharing the target's memory take the composite path.
    t = rumus.tensor(x)
    t.addcmul_(t, t.flip(-1), value=0.5)
    np.testing.assert_allclose(to_np(t), x + 0.5 * x * x[..., ::-1], rtol=1e-6)


def test_clamp_min_max_inplace(device):
    t = rumus.tensor([-1.0, 0.5, 2.0], device=device)
    assert rumus.clamp_min(t, 0.0).tolist() == [0.0, 0.5, 2.0]
    assert t.clamp_max_(1.0) is t and t.tolist() == [-1.0, 0.5, 1.0]
    assert t.clamp_min_(rumus.tensor([0.0, 0.0, 2.0], device=device)).tolist() == [0.0, 0.5, 2.0]


# ---- isclose, allclose, equal


def test_isclose_defaults(device):
    a = rumus.tensor([1.0, 0.0, 100.0, INF, NAN], device=device)
    b = rumus.tensor([1.000001, 1e-7, 100.002, INF, NAN], device=device)
    assert a.isclose(b).tolist() == [True, False, False, True, False]
    assert rumus.isclose(a, b, rtol=1e-4, atol=1e-6, equal_nan=True).tolist() == [True] * 5
    i = rumus.tensor([1, 2, 250], dtype=rumus.uint8, device=device)
    j = rumus.tensor([2, 2, 1], dtype=rumus.uint8, device=device)
    assert i.isclose(j, atol=1).tolist() == [True, True, False]  # no wrap-around of |i - j|


def test_isclose_errors(device):
    a = rumus.ones(2, device=device)
    with pytest.raises(RuntimeError, match="same dtype"):
        a.isclose(rumus.ones(2, dtype=rumus.float16, device=device))
    with pytest.raises(RuntimeError, match="rtol must be greater than or equal to zero"):
        a.isclose(a, rtol=-1.0)
    with pytest.raises(RuntimeError, match="atol must be greater than or equal to zero"):
        a.allclose(a, atol=-1.0)
    with pytest.raises(RuntimeError, match="must match the size"):
        a.isclose(rumus.ones(3, device=device))


def test_allclose_and_equal_return_python_bools(device):
    a = rumus.tensor([1.0, 2.0], device=device)
    assert rumus.allclose(a, a + 1e-7) is True
    assert a.allclose(a + 0.1) is False
    assert a.allclose(a + 0.1, atol=0.2) is True
    assert rumus.allclose(a[:0], a[:0]) is True
    assert rumus.equal(a, a.clone()) is True
    assert a.equal(a + 1) is False
    assert a.equal(rumus.tensor([1, 2], device=device)) is True  # promoted, as in PyTorch
    assert a.equal(rumus.tensor([[1.0, 2.0]], device=device)) is False  # other shape
    n = rumus.tensor([NAN], device=device)
    assert n.equal(n) is False


def test_equal_across_devices_raises(gpu):
    with pytest.raises(RuntimeError, match="Cannot compare two tensors on different devices"):
        rumus.equal(rumus.ones(2), rumus.ones(2, device=gpu))


def test_composites_record_grad_fns():
    x = rumus.ones(2, 2, requires_grad=True)
    for y in (x.addcmul(x, x), x.lerp(x * 2, 0.3), x.addmm(x, x), x.logit(eps=0.1)):
        assert y.grad_fn is not None
    assert_close(x.isclose(x), np.ones((2, 2), bool))
    assert not x.isclose(x).requires_grad
