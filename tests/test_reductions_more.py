"""Semantics of the composed reductions and constructors that the registry cannot express:
named tuples, stability, gradients through indices, dtype= / device= of the *_like and
new_* constructors."""

import math

import numpy as np
import pytest
import rumus
from conftest import to_np


def test_aminmax_named_tuple():
    x = rumus.tensor([[3.0, -1.0, 2.0], [0.5, 4.0, -2.0]])
    r = rumus.aminmax(x, dim=1)
    assert type(r).__name__ == "aminmax" and r._fields == ("min", "max")
    np.testing.assert_array_equal(to_np(r.min), [-1.0, -2.0])
    np.testing.assert_array_equal(to_np(r.max), [3.0, 4.0])
    lo, hi = x.aminmax()
    assert lo.item() == -2.0 and hi.item() == 4.0 and lo.shape == ()


def test_var_mean_std_mean_tuples():
    x = rumus.tensor([[1.0, 2.0, 4.0], [0.0, 0.0, 3.0]])
    v, m = rumus.var_mean(x, 1, correction=0)
    np.testing.assert_allclose(to_np(v), np.var(to_np(x), 1), rtol=1e-6)
    np.testing.assert_allclose(to_np(m), np.mean(to_np(x), 1), rtol=1e-6)
    s, m2 = rumus.std_mean(x, False)  # std_mean(input, unbiased)
    np.testing.assert_allclose(s.item(), np.std(to_np(x)), rtol=1e-6)
    assert m2.item() == pytest.approx(np.mean(to_np(x)))


def test_nanmean_all_nan_is_nan_and_ints_raise():
    x = rumus.tensor([[math.nan, math.nan], [1.0, math.nan]])
    out = to_np(rumus.nanmean(x, 1))
    assert math.isnan(out[0]) and out[1] == 1.0
    with pytest.raises(RuntimeError):
        rumus.nanmean(rumus.tensor([1, 2]))
    assert rumus.nansum(rumus.tensor([1, 2], dtype=rumus.int32)).dtype == rumus.int64


def test_count_nonzero_dims():
    x = rumus.tensor([[0, 1, 2], [0, 0, 3]])
    assert rumus.count_nonzero(x).item() == 3
    np.testing.assert_array_equal(to_np(x.count_nonzero(0)), [0, 1, 2])
    np.testing.assert_array_equal(to_np(x.count_nonzero((0, 1))), 3)


def test_cummax_ties_take_last_index_and_nan_propagates():
    x = rumus.tensor([1.0, 3.0, 3.0, 2.0, math.nan, 5.0])
    v, i = rumus.cummax(x, 0)
    np.testing.assert_array_equal(to_np(i), [0, 1, 2, 2, 4, 4])
    assert math.isnan(to_np(v)[-1])
    v, i = rumus.cummin(rumus.tensor([2, 1, 1, 3]), 0)
    np.testing.assert_array_equal(to_np(v), [2, 1, 1, 1])
    np.testing.assert_array_equal(to_np(i), [0, 1, 2, 2])
    assert type(rumus.cummax(x, 0)).__name__ == "ValuesIndices"


def test_cummax_gradient_flows_to_the_argmax():
    x = rumus.tensor([1.0, 3.0, 2.0, 4.0], requires_grad=True)
    x.cummax(0).values.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [1.0, 2.0, 0.0, 1.0])


def test_logcumsumexp_is_stable():
    x = rumus.tensor([1000.0, 1000.0, -1000.0, 0.0], dtype=rumus.float64)
    out = to_np(rumus.logcumsumexp(x, 0))
    np.testing.assert_allclose(out, np.logaddexp.accumulate(to_np(x)))
    x = rumus.tensor([-1000.0, -1001.0, 5.0], dtype=rumus.float64)
    np.testing.assert_allclose(to_np(x.logcumsumexp(0)), np.logaddexp.accumulate(to_np(x)))
    neg = rumus.tensor([-math.inf, -math.inf, 0.0])
    np.testing.assert_array_equal(to_np(neg.logcumsumexp(0)), [-math.inf, -math.inf, 0.0])
    with pytest.raises(RuntimeError):
        rumus.logcumsumexp(rumus.tensor([1, 2]), 0)


def test_cdist_pdist_zero_distance_gradient_is_finite():
    x = rumus.tensor([[1.0, 2.0], [1.0, 2.0], [0.0, 1.0]], dtype=rumus.float64, requires_grad=True)
    rumus.pdist(x).sum().backward()
    assert np.isfinite(to_np(x.grad)).all()
    x.grad = None
    rumus.cdist(x, x).sum().backward()
    assert np.isfinite(to_np(x.grad)).all()


@pytest.mark.parametrize("name", ["new_zeros", "new_ones", "new_empty"])
def test_new_constructors_inherit_and_override(name):
    x = rumus.ones(2, dtype=rumus.float64)
    t = getattr(x, name)((2, 3))
    assert t.shape == (2, 3) and t.dtype == rumus.float64 and t.device == x.device
    t = getattr(x, name)(2, dtype=rumus.int32, requires_grad=False)
    assert t.dtype == rumus.int32
    t = getattr(x, name)(3, requires_grad=True)
    assert t.requires_grad and t.is_leaf


def test_new_tensor_and_new_full():
    x = rumus.ones(2, dtype=rumus.int32)
    t = x.new_tensor([1.7, 2.0])
    assert t.dtype == rumus.int32
    t = x.new_full((2,), 1.5, dtype=rumus.float32, requires_grad=True)
    assert t.requires_grad and to_np(t).tolist() == [1.5, 1.5]
    src = rumus.tensor([1.0, 2.0], requires_grad=True)
    c = x.new_tensor(src)
    assert not c.requires_grad and c.dtype == rumus.int32


@pytest.mark.parametrize(
    "fn", ["zeros_like", "ones_like", "empty_like", "rand_like", "randn_like", "full_like"]
)
def test_like_constructors_take_dtype_device_requires_grad(fn):
    x = rumus.zeros(2, 3, dtype=rumus.float32)
    args = (x, 2.0) if fn == "full_like" else (x,)
    t = getattr(rumus, fn)(*args, dtype=rumus.float64, device="cpu", requires_grad=True)
    assert t.dtype == rumus.float64 and t.device.type == "cpu" and t.requires_grad
    assert t.shape == (2, 3)


def test_randint_like():
    x = rumus.zeros(50, dtype=rumus.float32)
    t = rumus.randint_like(x, 3, 6)
    v = to_np(t)
    assert t.dtype == rumus.float32 and (v >= 3).all() and (v < 6).all()
    assert (v == np.round(v)).all()
    t = rumus.randint_like(x, 4, dtype=rumus.int64, device="cpu")
    assert t.dtype == rumus.int64 and (to_np(t) < 4).all()
