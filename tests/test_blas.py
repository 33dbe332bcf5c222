"""Composite products (rust/ops/blas.rs): addmm, addmv, addbmm, baddbmm, tensordot, kron,
cross and rumus.linalg.cross. Defaults, keyword arguments and errors the registry
(tests/op_db.py) cannot express."""

import math
import warnings

import numpy as np
import pytest
import rumus
from conftest import to_np


def _r(*shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(np.float32)


def test_addmm_beta_alpha(device):
    x, a, b = _r(2, 3), _r(2, 4, seed=1), _r(4, 3, seed=2)
    X, A, B = (rumus.tensor(v, device=device) for v in (x, a, b))
    np.testing.assert_allclose(to_np(rumus.addmm(X, A, B)), x + a @ b, rtol=1e-5, atol=1e-6)
    got = to_np(X.addmm(A, B, beta=0.5, alpha=-2))
    np.testing.assert_allclose(got, 0.5 * x - 2 * (a @ b), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError):
        X.addmm(A, B, 0.5)  # beta and alpha are keyword-only


def test_addmm_beta_zero_ignores_nan_input(device):
    x = rumus.full((2, 2), math.nan, device=device)
    a = rumus.eye(2, device=device)
    assert rumus.addmm(x, a, a, beta=0).tolist() == [[1.0, 0.0], [0.0, 1.0]]
    assert rumus.addmv(x[0], a, a[0], beta=0, alpha=3).tolist() == [3.0, 0.0]


def test_addmm_errors(device):
    a = rumus.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match=r"addmm: mat1 must be a 2D tensor.*\[3\]"):
        rumus.addmm(rumus.ones(2, 2, device=device), rumus.ones(3, device=device), a)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        rumus.addmm(rumus.ones(2, 2, device=device), a, a)
    with pytest.raises(RuntimeError, match=r"addmm: the input of shape \[3\] cannot be broadcast"):
        rumus.addmm(rumus.ones(3, device=device), a, a.t())
    with pytest.raises(RuntimeError, match="same dtype"):
        rumus.addmm(rumus.ones(2, 2, dtype=rumus.float16, device=device), a, a.t())
    i = rumus.ones(2, 2, dtype=rumus.int64, device=device)
    assert rumus.addmm(i, i, i, beta=2, alpha=3).tolist() == [[8, 8], [8, 8]]
    with pytest.raises(RuntimeError, match="argument alpha must not be a floating point"):
        rumus.addmm(i, i, i, alpha=0.5)
    with pytest.raises(RuntimeError, match="argument beta must not be a floating point"):
        i.addmm_(i, i, beta=0.5)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        rumus.ones(2, device=device).addmm_(a, a.t())


def test_batched_forms(device):
    x, b1, b2 = _r(3, 2), _r(4, 3, 5, seed=1), _r(4, 5, 2, seed=2)
    X, B1, B2 = (rumus.tensor(v, device=device) for v in (x, b1, b2))
    np.testing.assert_allclose(
        to_np(X.addbmm(B1, B2, alpha=2)), x + 2 * (b1 @ b2).sum(0), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_allclose(
        to_np(rumus.baddbmm(X, B1, B2, beta=-1)), -x + b1 @ b2, rtol=1e-5, atol=1e-5
    )
    with pytest.raises(RuntimeError, match="batch1 must be a 3D tensor"):
        X.baddbmm(X, B2)
    with pytest.raises(RuntimeError, match="addbmm: batch1 and batch2 shapes cannot be multiplied"):
        X.addbmm(B1, B1)


def test_addmm_inplace_gradients():
    x = rumus.tensor(_r(2, 2), dtype=rumus.float64, requires_grad=True)
    a = rumus.tensor(_r(2, 3, seed=1), dtype=rumus.float64, requires_grad=True)
    b = rumus.tensor(_r(3, 2, seed=2), dtype=rumus.float64)
    y = x * 1
    y.addmm_(a, b, beta=2)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), np.full((2, 2), 2.0))
    np.testing.assert_allclose(a.grad.numpy(), np.ones((2, 2)) @ b.numpy().T)


def test_tensordot_dims(device):
    a, b = _r(2, 3, 4), _r(3, 4, 5, seed=1)
    A, B = rumus.tensor(a, device=device), rumus.tensor(b, device=device)
    np.testing.assert_allclose(
        to_np(rumus.tensordot(A, B)), np.tensordot(a, b), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        to_np(rumus.tensordot(A, B, dims=([1, 2], [0, 1]))),
        np.tensordot(a, b),
        rtol=1e-5,
        atol=1e-6,
    )
    np.testing.assert_allclose(
        to_np(rumus.tensordot(A, B, dims=[[1], [0]])),
        np.tensordot(a, b, axes=([1], [0])),
        rtol=1e-5,
        atol=1e-6,
    )
    assert tuple(rumus.tensordot(A, B, dims=0).shape) == (2, 3, 4, 3, 4, 5)


def test_tensordot_errors(device):
    a = rumus.ones(2, 3, device=device)
    with pytest.raises(RuntimeError, match="contracted dimensions need to match"):
        rumus.tensordot(a, a, dims=1)
    with pytest.raises(RuntimeError, match="same length"):
        rumus.tensordot(a, a, dims=([0, 1], [0]))
    with pytest.raises(RuntimeError, match="dims >= 0"):
        rumus.tensordot(a, a, dims=-1)
    with pytest.raises(TypeError, match="int or a pair"):
        rumus.tensordot(a, a, dims="x")
    with pytest.raises(RuntimeError, match="same dtype"):
        rumus.tensordot(a, rumus.ones(3, dtype=rumus.float16, device=device), dims=1)


def test_kron_shapes(device):
    a = rumus.tensor([[1, 2], [3, 4]], device=device)
    b = rumus.tensor([1, 10], device=device)
    assert a.kron(b).tolist() == [[1, 10, 2, 20], [3, 30, 4, 40]]
    assert tuple(
        rumus.kron(rumus.ones(2, 1, 3, device=device), rumus.ones(4, device=device)).shape
    ) == (2, 1, 12)
    assert (
        rumus.kron(rumus.tensor(2.0, device=device), rumus.tensor(3.0, device=device)).tolist()
        == 6.0
    )


def test_cross_default_dim_is_the_first_of_size_3_and_warns(device):
    a = rumus.tensor(_r(3, 3), device=device)
    b = rumus.tensor(_r(3, 3, seed=1), device=device)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = rumus.cross(a, b)
    assert any("deprecated" in str(x.message) for x in w)
    np.testing.assert_allclose(
        to_np(got), np.cross(to_np(a), to_np(b), axis=0), rtol=1e-5, atol=1e-6
    )
    np.testing.assert_allclose(
        to_np(rumus.linalg.cross(a, b)), np.cross(to_np(a), to_np(b), axis=-1), rtol=1e-5, atol=1e-6
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        a.cross(b, dim=1)
        rumus.linalg.cross(a, b, dim=0)


def test_cross_errors(device):
    a = rumus.ones(2, 4, device=device)
    with pytest.raises(RuntimeError, match="no dimension of size 3"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            rumus.cross(a, a)
    with pytest.raises(RuntimeError, match="dimension -1 must have length 3. Got 4 and 4"):
        rumus.linalg.cross(a, a)
    with pytest.raises(RuntimeError, match="same number of dimensions"):
        rumus.linalg.cross(rumus.ones(3, device=device), rumus.ones(1, 3, device=device))
    with pytest.raises(IndexError):
        rumus.linalg.cross(rumus.ones(3, device=device), rumus.ones(3, device=device), dim=2)
    with pytest.raises(TypeError):
        rumus.linalg.cross("a", rumus.ones(3))
