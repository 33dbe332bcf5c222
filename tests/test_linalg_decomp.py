"""rumus.linalg decompositions and solvers against NumPy (and SciPy when installed):
values, batches, non-contiguous and empty inputs, float32/float64, LinAlgError cases and
error messages, GPU parity. Gradients: the linalg rows of tests/op_db.py (test_gradcheck.py).
"""

import math

import numpy as np
import pytest
import rumus
import rumus.linalg as LA
from conftest import need_gpu

try:
    import scipy.linalg as sla
except ImportError:
    sla = None

DTYPES = ["float64", "float32"]
TOL = {"float64": 1e-9, "float32": 2e-4}


def T(a, dtype="float64"):
    return rumus.tensor(np.asarray(a), dtype=getattr(rumus, dtype))


def N(t):
    return t.detach().cpu().numpy().astype(np.float64)


def close(got, exp, dtype):
    np.testing.assert_allclose(N(got), exp, rtol=TOL[dtype], atol=TOL[dtype])


def well(rng, *shape):
    """Well-conditioned square matrices: random + n I."""
    n = shape[-1]
    return rng.standard_normal(shape) + n * np.eye(n)


def spd(rng, *shape):
    a = rng.standard_normal(shape)
    return a @ np.swapaxes(a, -1, -2) + shape[-1] * np.eye(shape[-1])


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4), (2, 1, 2, 2), (0, 3, 3), (1, 1), (0, 0)])
def test_det_slogdet_inv(rng, dtype, shape):
    a = well(rng, *shape)
    t = T(a, dtype)
    close(LA.det(t), np.linalg.det(a), dtype)
    sign, logabs = LA.slogdet(t)
    es, el = np.linalg.slogdet(a)
    close(sign, es, dtype)
    close(logabs, el, dtype)
    assert LA.slogdet(t)._fields == ("sign", "logabsdet")
    close(LA.inv(t), np.linalg.inv(a) if a.size else a, dtype)
    x, info = LA.inv_ex(t)
    assert info.dtype == rumus.int32 and tuple(info.shape) == shape[:-2]
    assert x.dtype == t.dtype


def test_noncontiguous_and_methods(rng):
    a = well(rng, 2, 4, 4)
    t = T(a).mT
    close(LA.det(t), np.linalg.det(np.swapaxes(a, -1, -2)), "float64")
    close(t.det(), np.linalg.det(np.swapaxes(a, -1, -2)), "float64")
    close(rumus.inverse(t), np.linalg.inv(np.swapaxes(a, -1, -2)), "float64")
    close(T(a)[:, ::2, ::2].inverse(), np.linalg.inv(a[:, ::2, ::2]), "float64")
    s = spd(rng, 3, 3)
    close(rumus.logdet(T(s)), np.linalg.slogdet(s)[1], "float64")
    assert math.isnan(rumus.logdet(T(-np.eye(3))).item())


def test_singular_and_not_pd_errors():
    s = T([[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]])
    with pytest.raises(LA.LinAlgError) as e:
        LA.inv(T([[1.0, 2.0], [2.0, 4.0]]))
    assert str(e.value) == (
        "linalg.inv: The diagonal element 2 is zero, the inversion could not be completed "
        "because the input matrix is singular."
    )
    assert issubclass(LA.LinAlgError, RuntimeError)
    assert LA.LinAlgError is rumus.linalg.LinAlgError
    with pytest.raises(LA.LinAlgError, match="linalg.solve"):
        LA.solve(s, T([1.0, 2.0, 3.0]))
    with pytest.raises(LA.LinAlgError) as e:
        LA.cholesky(T([[1.0, 2.0], [2.0, 1.0]]))
    assert str(e.value) == (
        "linalg.cholesky: The factorization could not be completed because the input is not "
        "positive-definite (the leading minor of order 2 is not positive-definite)."
    )
    with pytest.raises(LA.LinAlgError, match=r"\(Batch element 1\)"):
        LA.inv(T([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]]))
    _, info = LA.inv_ex(T([[[1.0, 0.0], [0.0, 1.0]], [[1.0, 1.0], [1.0, 1.0]]]))
    assert info.tolist() == [0, 2]
    _, info = LA.cholesky_ex(T([[1.0, 2.0], [2.0, 1.0]]))
    assert info.item() == 2
    assert LA.det(T([[1.0, 2.0], [2.0, 4.0]])).item() == 0.0
    sign, logabs = LA.slogdet(T([[1.0, 2.0], [2.0, 4.0]]))
    assert sign.item() == 0.0 and logabs.item() == -math.inf


@pytest.mark.parametrize(
    "fn",
    [LA.det, LA.inv, LA.cholesky, LA.eigh, LA.slogdet, LA.eigvalsh, LA.matrix_exp],
)
def test_shape_and_dtype_errors(fn):
    with pytest.raises(RuntimeError, match=r"linalg\.\w+.*square.*\[2, 3\]") as e:
        fn(T(np.ones((2, 3))))
    assert not isinstance(e.value, LA.LinAlgError)
    with pytest.raises(RuntimeError, match="at least 2 dimensions"):
        fn(T(np.ones(3)))
    with pytest.raises(RuntimeError, match="floating point"):
        fn(rumus.ones(2, 2, dtype=rumus.int64))
    with pytest.raises((TypeError, AttributeError)):
        fn("not a tensor")


@pytest.mark.parametrize("dtype", DTYPES)
def test_solve(rng, dtype):
    a = well(rng, 2, 3, 3)
    b = rng.standard_normal((2, 3, 2))
    close(LA.solve(T(a, dtype), T(b, dtype)), np.linalg.solve(a, b), dtype)
    v = rng.standard_normal((2, 3))
    close(LA.solve(T(a, dtype), T(v, dtype)), np.linalg.solve(a, v[..., None])[..., 0], dtype)
    v1 = rng.standard_normal(3)
    close(LA.solve(T(a, dtype), T(v1, dtype)), np.linalg.solve(a, v1[None, :, None])[..., 0], dtype)
    # broadcast batch dims, left=False
    bb = rng.standard_normal((4, 1, 3, 2))
    close(LA.solve(T(a, dtype), T(bb, dtype)), np.linalg.solve(a, bb), dtype)
    c = rng.standard_normal((2, 2, 3))
    exp = np.swapaxes(np.linalg.solve(np.swapaxes(a, -1, -2), np.swapaxes(c, -1, -2)), -1, -2)
    close(LA.solve(T(a, dtype), T(c, dtype), left=False), exp, dtype)
    x, info = LA.solve_ex(T(a, dtype), T(b, dtype))
    assert info.tolist() == [0, 0]
    with pytest.raises(RuntimeError, match=r"linalg.solve: Incompatible shapes"):
        LA.solve(T(a), T(np.ones((2, 4, 1))))
    with pytest.raises(RuntimeError, match="same dtype"):
        LA.solve(T(a), T(b, "float32"))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("upper", [True, False])
def test_cholesky_and_triangular(rng, dtype, upper):
    a = spd(rng, 2, 4, 4)
    L = np.linalg.cholesky(a)
    got = LA.cholesky(T(a, dtype), upper=upper)
    close(got, np.swapaxes(L, -1, -2) if upper else L, dtype)
    close(rumus.cholesky(T(a, dtype), upper), np.swapaxes(L, -1, -2) if upper else L, dtype)
    tri = np.triu(well(rng, 4, 4)) if upper else np.tril(well(rng, 4, 4))
    b = rng.standard_normal((2, 4, 3))
    close(
        LA.solve_triangular(T(tri, dtype), T(b, dtype), upper=upper), np.linalg.solve(tri, b), dtype
    )
    unit = tri.copy()
    np.fill_diagonal(unit, 1.0)
    close(
        LA.solve_triangular(T(tri, dtype), T(b, dtype), upper=upper, unitriangular=True),
        np.linalg.solve(unit, b),
        dtype,
    )
    c = rng.standard_normal((3, 4))
    close(
        LA.solve_triangular(T(tri, dtype), T(c, dtype), upper=upper, left=False),
        c @ np.linalg.inv(tri),
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 5, 3), (0, 3, 2)])
def test_qr(rng, dtype, shape):
    a = rng.standard_normal(shape)
    for mode in ("reduced", "complete", "r"):
        Q, R = LA.qr(T(a, dtype), mode=mode)
        if mode == "r":
            assert tuple(Q.shape) == (0,)
            if a.size:
                close(R.abs(), np.abs(np.linalg.qr(a, mode="r")), dtype)
            continue
        q, r = N(Q), N(R)
        np.testing.assert_allclose(q @ r, a, atol=TOL[dtype] * 10)
        np.testing.assert_allclose(np.triu(r), r, atol=0)
        k = q.shape[-1]
        np.testing.assert_allclose(
            np.swapaxes(q, -1, -2) @ q,
            np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)),
            atol=TOL[dtype] * 10,
        )
        if a.size:
            eq, er = np.linalg.qr(a, mode=mode)
            assert q.shape == eq.shape and r.shape == er.shape
            np.testing.assert_allclose(np.abs(r), np.abs(er), atol=TOL[dtype] * 10)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(rng, dtype, uplo):
    a = rng.standard_normal((2, 4, 4))
    # only the UPLO triangle is read: garbage in the other one
    half = np.tril(a) if uplo == "L" else np.triu(a)
    sym = half + np.swapaxes(half, -1, -2) - np.eye(4) * np.diagonal(a, 0, -2, -1)[..., None]
    w, V = LA.eigh(T(half, dtype), UPLO=uplo)
    ew = np.linalg.eigvalsh(sym)
    close(w, ew, dtype)
    close(LA.eigvalsh(T(half, dtype), UPLO=uplo), ew, dtype)
    v = N(V)
    np.testing.assert_allclose(
        v @ (ew[..., None] * np.swapaxes(v, -1, -2)), sym, atol=TOL[dtype] * 20
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 3, 2), (0, 2, 2), (3, 0)])
def test_svd(rng, dtype, shape):
    a = rng.standard_normal(shape)
    es = np.linalg.svd(a, compute_uv=False) if a.size else np.zeros(shape[:-2] + (min(shape[-2:]),))
    close(LA.svdvals(T(a, dtype)), es, dtype)
    for full in (True, False):
        U, S, Vh = LA.svd(T(a, dtype), full_matrices=full)
        close(S, es, dtype)
        m, n = shape[-2:]
        k = min(m, n)
        assert tuple(U.shape) == shape[:-2] + ((m, m) if full else (m, k))
        assert tuple(Vh.shape) == shape[:-2] + ((n, n) if full else (k, n))
        u, vh = N(U), N(Vh)
        rec = (u[..., :k] * N(S)[..., None, :]) @ vh[..., :k, :]
        np.testing.assert_allclose(rec, a, atol=TOL[dtype] * 20)


@pytest.mark.parametrize("dtype", DTYPES)
def test_lu_family(rng, dtype):
    a = rng.standard_normal((2, 4, 4))
    LU, piv = LA.lu_factor(T(a, dtype))
    assert piv.dtype == rumus.int32
    if sla is not None:
        for i in range(2):
            elu, epiv = sla.lu_factor(a[i])
            close(LU[i], elu, dtype)
            assert (piv[i].numpy() - 1).tolist() == epiv.tolist()
    b = rng.standard_normal((2, 4, 3))
    close(LA.lu_solve(LU, piv, T(b, dtype)), np.linalg.solve(a, b), dtype)
    close(
        LA.lu_solve(LU, piv, T(b, dtype), adjoint=True),
        np.linalg.solve(np.swapaxes(a, -1, -2), b),
        dtype,
    )
    c = rng.standard_normal((2, 3, 4))
    close(LA.lu_solve(LU, piv, T(c, dtype), left=False), c @ np.linalg.inv(a), dtype)
    for shape in [(4, 4), (5, 3), (3, 5)]:
        x = rng.standard_normal(shape)
        P, L, U = LA.lu(T(x, dtype))
        np.testing.assert_allclose(N(P) @ N(L) @ N(U), x, atol=TOL[dtype] * 10)
        if sla is not None:
            ep, el, eu = sla.lu(x)
            close(P, ep, dtype)
            close(L, el, dtype)
            close(U, eu, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_norms(rng, dtype):
    a = rng.standard_normal((2, 3, 4))
    t = T(a, dtype)
    for ord in (2, 1, math.inf, -math.inf, 0, 3.5):
        close(LA.vector_norm(t, ord), np.linalg.norm(a.ravel(), ord), dtype)
        close(LA.vector_norm(t, ord, dim=-1), np.linalg.norm(a, ord, axis=-1), dtype)
    close(
        LA.vector_norm(t, 2, dim=(0, 2), keepdim=True),
        np.sqrt((a**2).sum((0, 2), keepdims=True)),
        dtype,
    )
    for ord in ("fro", "nuc", 1, -1, 2, -2, math.inf, -math.inf):
        close(LA.matrix_norm(t, ord), np.linalg.norm(a, ord, axis=(-2, -1)), dtype)
        close(LA.matrix_norm(t, ord, dim=(0, 2)), np.linalg.norm(a, ord, axis=(0, 2)), dtype)
        close(
            LA.matrix_norm(t, ord, keepdim=True),
            np.linalg.norm(a, ord, axis=(-2, -1), keepdims=True),
            dtype,
        )
    close(LA.norm(t), np.linalg.norm(a.ravel()), dtype)
    close(LA.norm(t[0], "nuc"), np.linalg.norm(a[0], "nuc"), dtype)
    close(LA.norm(t, 1, dim=1), np.linalg.norm(a, 1, axis=1), dtype)
    sq = well(rng, 3, 3)
    for p in (None, 2, -2, "fro", "nuc", 1, -1, math.inf, -math.inf):
        close(LA.cond(T(sq, dtype), p), np.linalg.cond(sq, p), dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_rank_pinv_lstsq(rng, dtype):
    a = rng.standard_normal((2, 5, 2)) @ rng.standard_normal((2, 2, 4))  # rank 2
    assert LA.matrix_rank(T(a, dtype)).tolist() == [2, 2]
    assert LA.matrix_rank(T(a, dtype), atol=1e3).tolist() == [0, 0]
    s = a[0] @ a[0].T
    assert LA.matrix_rank(T(s, dtype), hermitian=True).item() == 2
    close(LA.pinv(T(a, dtype)), np.linalg.pinv(a), dtype)
    close(LA.pinv(T(s, dtype), hermitian=True), np.linalg.pinv(s, hermitian=True), dtype)
    A = rng.standard_normal((6, 3))
    B = rng.standard_normal((6, 2))
    res = LA.lstsq(T(A, dtype), T(B, dtype), driver="gelsd")
    ex, er, erank, esv = np.linalg.lstsq(A, B, rcond=None)
    close(res.solution, ex, dtype)
    close(res.residuals, er, dtype)
    assert res.rank.item() == erank
    close(res.singular_values, esv, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_power_exp_multidot_vander(rng, dtype):
    a = well(rng, 2, 3, 3) / 3
    t = T(a, dtype)
    for n in (0, 1, 2, 5, -1, -3):
        close(LA.matrix_power(t, n), np.linalg.matrix_power(a, n), dtype)
    close(t.matrix_power(3), np.linalg.matrix_power(a, 3), dtype)
    if sla is not None:
        for scale in (0.1, 1.0, 20.0):
            exp = np.stack([sla.expm(x * scale) for x in a])
            np.testing.assert_allclose(N(LA.matrix_exp(t * scale)), exp, rtol=TOL[dtype] * 10)
    close(LA.matrix_exp(T(np.zeros((2, 2)), dtype)), np.eye(2), dtype)
    close(LA.matrix_exp(T(np.diag([1.0, 2.0]), dtype)), np.diag(np.exp([1.0, 2.0])), dtype)
    ms = [rng.standard_normal(s) for s in [(4,), (4, 6), (6, 2), (2, 3), (3,)]]
    close(LA.multi_dot([T(m, dtype) for m in ms]), np.linalg.multi_dot(ms), dtype)
    x = rng.standard_normal(4)
    close(LA.vander(T(x, dtype)), np.vander(x, increasing=True), dtype)
    close(LA.vander(T(x, dtype), N=2), np.vander(x, 2, increasing=True), dtype)


def test_autograd_smoke(rng):
    a = T(well(rng, 3, 3)).requires_grad_()
    LA.det(a).backward()
    np.testing.assert_allclose(N(a.grad), np.linalg.det(N(a)) * np.linalg.inv(N(a)).T, atol=1e-10)
    assert LA.inv(a).grad_fn is not None


def test_gpu_parity(rng):
    need_gpu()
    a = well(rng, 2, 3, 3)
    g = rumus.tensor(a, dtype=rumus.float32).to("gpu")
    for fn in (LA.det, LA.inv, lambda x: LA.slogdet(x)[1], lambda x: LA.svdvals(x)):
        out = fn(g)
        assert out.device.type == "gpu"
        np.testing.assert_allclose(out.cpu().numpy(), N(fn(g.cpu())), rtol=1e-5, atol=1e-5)
    L = LA.cholesky(rumus.tensor(spd(rng, 3, 3), dtype=rumus.float32).to("gpu"))
    assert L.device.type == "gpu"
    x = LA.solve(g, rumus.ones(2, 3, 1).to("gpu"))
    np.testing.assert_allclose(x.cpu().numpy(), np.linalg.solve(a, np.ones((2, 3, 1))), rtol=1e-4)
    g.requires_grad_()
    LA.det(g).sum().backward()
    np.testing.assert_allclose(
        g.grad.cpu().numpy(),
        np.linalg.det(a)[:, None, None] * np.linalg.inv(a).swapaxes(-1, -2),
        rtol=1e-3,
    )
