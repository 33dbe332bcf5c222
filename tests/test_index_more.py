"""Semantics of the composed indexing ops that the registry cannot express: in-place
writes through views, accumulation of repeated indices, tensor fill values, errors."""

import numpy as np
import pytest
import rumus
from conftest import to_np


def test_index_add_alpha_and_repeats_accumulate():
    x = rumus.zeros(3, 2)
    out = x.index_add(0, rumus.tensor([0, 0, 2]), rumus.ones(3, 2), alpha=2)
    np.testing.assert_array_equal(to_np(out), [[4, 4], [0, 0], [2, 2]])
    assert to_np(x).sum() == 0
    x.index_add_(1, rumus.tensor([1]), rumus.ones(3, 1))
    np.testing.assert_array_equal(to_np(x), [[0, 1], [0, 1], [0, 1]])


def test_inplace_index_ops_write_through_views():
    base = rumus.zeros(2, 4)
    view = base.t()  # (4, 2), non-contiguous
    view.index_fill_(0, rumus.tensor([1, 3]), 5.0)
    np.testing.assert_array_equal(to_np(base), [[0, 5, 0, 5], [0, 5, 0, 5]])
    view.index_copy_(1, rumus.tensor([0]), rumus.full((4, 1), 7.0))
    np.testing.assert_array_equal(to_np(base)[0], [7, 7, 7, 7])
    view.index_put_((rumus.tensor([0, 0]), rumus.tensor([1, 1])), rumus.tensor(1.0), True)
    assert to_np(base)[1, 0] == 2.0


def test_index_fill_tensor_value_gradient():
    x = rumus.ones(2, 3, requires_grad=True)
    v = rumus.tensor(2.0, requires_grad=True)
    y = x.index_fill(1, rumus.tensor([0, 2]), v)
    y.sum().backward()
    np.testing.assert_array_equal(to_np(x.grad), [[0, 1, 0], [0, 1, 0]])


def test_index_put_accumulate_and_bool_index():
    x = rumus.zeros(4)
    out = rumus.index_put(x, (rumus.tensor([1, 1, 3]),), rumus.tensor([1.0, 2.0, 3.0]), True)
    np.testing.assert_array_equal(to_np(out), [0, 3, 0, 3])
    out = x.index_put((rumus.tensor([True, False, True, False]),), rumus.tensor(9.0))
    np.testing.assert_array_equal(to_np(out), [9, 0, 9, 0])
    with pytest.raises(IndexError):
        x.index_put((rumus.tensor([4]),), rumus.tensor(1.0))


def test_masked_scatter_and_select():
    x = rumus.zeros(2, 3)
    mask = rumus.tensor([[True, False, True], [False, True, False]])
    out = x.masked_scatter(mask, rumus.tensor([1.0, 2.0, 3.0, 4.0]))
    np.testing.assert_array_equal(to_np(out), [[1, 0, 2], [0, 3, 0]])
    x.masked_scatter_(mask, rumus.tensor([5.0, 6.0, 7.0]))
    np.testing.assert_array_equal(to_np(x), [[5, 0, 6], [0, 7, 0]])
    np.testing.assert_array_equal(to_np(x.masked_select(mask)), [5, 6, 7])
    with pytest.raises(RuntimeError):
        x.masked_scatter(mask, rumus.tensor([1.0]))


def test_masked_scatter_gradient_to_source():
    s = rumus.tensor([1.0, 2.0, 3.0, 4.0], requires_grad=True)
    mask = rumus.tensor([True, False, True])
    rumus.zeros(3).masked_scatter(mask, s).sum().backward()
    np.testing.assert_array_equal(to_np(s.grad), [1, 1, 0, 0])


@pytest.mark.parametrize("reduce", ["sum", "prod", "mean", "amax", "amin"])
def test_scatter_reduce_include_self(reduce):
    x = rumus.tensor([1.0, 10.0, 100.0])
    src = rumus.tensor([2.0, 3.0, 4.0, 5.0])
    idx = rumus.tensor([0, 0, 2, 2])
    with_self = to_np(x.scatter_reduce(0, idx, src, reduce))
    without = to_np(x.scatter_reduce(0, idx, src, reduce, include_self=False))
    fn = {"sum": np.sum, "prod": np.prod, "mean": np.mean, "amax": np.max, "amin": np.min}[reduce]
    np.testing.assert_allclose(with_self, [fn([1, 2, 3]), 10, fn([100, 4, 5])])
    np.testing.assert_allclose(without, [fn([2, 3]), 10, fn([4, 5])])


def test_scatter_reduce_int_mean_floors():
    x = rumus.tensor([0, 0])
    out = x.scatter_reduce(0, rumus.tensor([0, 0]), rumus.tensor([1, 2]), "mean")
    np.testing.assert_array_equal(to_np(out), [1, 0])
    with pytest.raises(RuntimeError):
        x.scatter_reduce(0, rumus.tensor([0]), rumus.tensor([1]), "max")
