"""Complex dtypes (rust/ops/complex/): storage, NumPy interop, casts, arithmetic,
views, reductions, matmul and gradients (PyTorch's conjugate-Wirtinger convention)."""

import numpy as np
import pytest
import rumus
from rumus.autograd import gradcheck, gradgradcheck

C = (rumus.complex64, rumus.complex128)
NP = {rumus.complex64: np.complex64, rumus.complex128: np.complex128}


def crand(*shape, seed=0, dtype=np.complex128):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) + 1j * rng.standard_normal(shape)).astype(dtype)


def leaf(a):
    return rumus.tensor(a, dtype=rumus.complex128, requires_grad=True)


def test_dtypes_and_promotion():
    assert rumus.cfloat is rumus.complex64 and rumus.cdouble is rumus.complex128
    assert rumus.complex64.is_complex and not rumus.float32.is_complex
    assert rumus.complex128.itemsize == 16 and not rumus.complex64.is_floating_point
    assert rumus.promote_types(rumus.float32, rumus.complex64) == rumus.complex64
    assert rumus.promote_types(rumus.float64, rumus.complex64) == rumus.complex128
    assert rumus.promote_types(rumus.int64, rumus.complex64) == rumus.complex64
    x = rumus.tensor([1 + 2j, 3])
    assert x.dtype == rumus.complex64 and x.is_complex() and rumus.is_complex(x)
    assert (rumus.ones(2) * 1j).dtype == rumus.complex64
    assert (rumus.ones(2, dtype=rumus.float64) + 1j).dtype == rumus.complex128


def test_item_tolist_repr():
    x = rumus.tensor([[1 + 2j, -3.5j]])
    assert x.tolist() == [[1 + 2j, -3.5j]]
    assert x[0, 0].item() == 1 + 2j and complex(x[0, 1]) == -3.5j
    assert "j" in repr(x)


@pytest.mark.parametrize("dt", C)
def test_numpy_zero_copy_both_ways(dt):
    a = crand(3, 4, dtype=NP[dt])
    t = rumus.from_numpy(a)
    assert t.dtype == dt
    a[1, 2] = 7 - 1j
    assert t[1, 2].item() == 7 - 1j
    back = t.numpy()
    back[0, 0] = 5j
    assert a[0, 0] == 5j
    np.testing.assert_array_equal(t.t().numpy(), a.T)
    d = rumus.from_dlpack(a)
    assert d.dtype == dt and d.data_ptr() == t.data_ptr()


def test_casts():
    z = rumus.tensor([1.5 + 2j, -3 - 4j], dtype=rumus.complex128)
    np.testing.assert_array_equal(z.to(rumus.float32).numpy(), [1.5, -3])
    np.testing.assert_array_equal(z.to(rumus.int64).numpy(), [1, -3])
    assert z.to(rumus.bool).tolist() == [True, True]
    assert rumus.tensor([0j]).to(rumus.bool).tolist() == [False]
    np.testing.assert_array_equal(z.to(rumus.complex64).numpy(), z.numpy().astype(np.complex64))
    r = rumus.arange(3).to(rumus.complex64)
    np.testing.assert_array_equal(r.numpy(), [0, 1, 2])
    assert rumus.zeros(2, dtype=rumus.complex64).tolist() == [0j, 0j]
    assert rumus.ones(2, dtype=rumus.complex128).tolist() == [1 + 0j, 1 + 0j]


@pytest.mark.parametrize("dt", C)
def test_arithmetic_against_numpy(dt):
    a, b = crand(3, 4, seed=1), crand(4, seed=2)
    x, y = rumus.tensor(a, dtype=dt), rumus.tensor(b, dtype=dt)
    tol = dict(rtol=1e-5, atol=1e-5) if dt == rumus.complex64 else dict(rtol=1e-12, atol=1e-12)
    for got, want in [
        (x + y, a + b),
        (x - y, a - b),
        (x * y, a * b),
        (x / y, a / b),
        (-x, -a),
        (x * 2.5, a * 2.5),
        (x + (1 - 2j), a + (1 - 2j)),
        (x**2, a**2),
        (x**0.5, a**0.5),
        (x.exp(), np.exp(a)),
        (x.log(), np.log(a)),
        (x.sqrt(), np.sqrt(a)),
        (x.reciprocal(), 1 / a),
        (x.sin(), np.sin(a)),
        (x.tanh(), np.tanh(a)),
        (x.abs(), np.abs(a)),
        (x.angle(), np.angle(a)),
        (x.conj(), np.conj(a)),
        (x.sum(), a.sum()),
        (x.sum(0), a.sum(0)),
        (x.mean(-1, keepdim=True), a.mean(-1, keepdims=True)),
        (x @ y, a @ b),
        (x.t() @ x, a.T @ a),
    ]:
        np.testing.assert_allclose(got.numpy(), want, **tol)
    assert (x == x).all().item() and not (x != x).any().item()
    # mixed with a real tensor
    r = np.arange(4.0)
    np.testing.assert_allclose((x * rumus.tensor(r)).numpy(), a * r, **tol)


def test_inplace():
    z = rumus.tensor([1 + 1j, 2j])
    z += 1
    z *= 1j
    np.testing.assert_allclose(z.numpy(), [(2 + 1j) * 1j, (1 + 2j) * 1j])
    f = rumus.ones(2)
    with pytest.raises(RuntimeError, match="can't be cast"):
        f += 1j


def test_views_share_memory():
    z = rumus.tensor(crand(2, 3), dtype=rumus.complex64)
    r = rumus.view_as_real(z)
    assert r.shape == (2, 3, 2) and r.dtype == rumus.float32
    r[0, 0, 1] = 9.0
    assert z[0, 0].item().imag == 9.0
    z.real[1, 1] = -4.0
    assert z[1, 1].item().real == -4.0
    z.imag.zero_()
    assert (z.imag == 0).all().item()
    back = rumus.view_as_complex(r)
    assert back.dtype == rumus.complex64 and back.data_ptr() == z.data_ptr()
    with pytest.raises(RuntimeError, match="size 2"):
        rumus.view_as_complex(rumus.ones(3, 3))
    with pytest.raises(RuntimeError):
        rumus.view_as_complex(rumus.ones(3, 2).t())
    with pytest.raises(RuntimeError, match="non-complex"):
        rumus.ones(2).imag


def test_complex_and_polar():
    re, im = np.array([1.0, -2.0]), np.array([0.5, 3.0])
    z = rumus.complex(rumus.tensor(re), rumus.tensor(im))
    np.testing.assert_allclose(z.numpy(), re + 1j * im)
    p = rumus.polar(rumus.tensor(re), rumus.tensor(im))
    np.testing.assert_allclose(p.numpy(), re * np.exp(1j * im), rtol=1e-6)
    with pytest.raises(RuntimeError):
        rumus.complex(rumus.ones(2), rumus.ones(2, dtype=rumus.float64))


def test_unsupported_ops_raise_type_error():
    z = rumus.tensor([1 + 1j, 2j])
    for f in (lambda: z.max(), lambda: z < z, lambda: z.floor(), lambda: z.sort()):
        with pytest.raises(TypeError, match="complex64"):
            f()


def test_gpu_refuses_complex():
    if not rumus.gpu.is_available():
        pytest.skip("no GPU adapter")
    with pytest.raises(TypeError, match="gpu"):
        rumus.tensor([1j]).to("gpu")


def test_abs_gradient_is_z_over_abs():
    a = crand(5, seed=3)
    z = leaf(a)
    z.abs().sum().backward()
    np.testing.assert_allclose(z.grad.numpy(), a / np.abs(a), rtol=1e-12)


def test_holomorphic_gradient_convention():
    # L = |z^2|^2 / 2 = |z|^4 / 2: dL/dx + i dL/dy = 2|z|^2 z
    a = crand(4, seed=4)
    z = leaf(a)
    w = z * z
    (w * w.conj()).real.sum().mul(0.5).backward()
    np.testing.assert_allclose(z.grad.numpy(), 2 * np.abs(a) ** 2 * a, rtol=1e-10)


@pytest.mark.parametrize(
    "fn",
    [
        lambda z, w: z * w,
        lambda z, w: z / w,
        lambda z, w: z - w * 2.0,
        lambda z, w: (z * (1 + 2j)).exp(),
        lambda z, w: z.log() + w.sqrt(),
        lambda z, w: z.reciprocal() * w.sin(),
        lambda z, w: z**3 + w.tanh(),
        lambda z, w: z.abs() + w.angle(),
        lambda z, w: z.conj() * w,
        lambda z, w: z.sgn() + w.cos(),
        lambda z, w: rumus.view_as_real(z * w),
        lambda z, w: z.real * w.imag,
        lambda z, w: (z * w).sum(0),
        lambda z, w: (z + w).mean(),
        lambda z, w: z @ w.t(),
    ],
)
def test_gradcheck(fn):
    z, w = leaf(crand(2, 3, seed=5)), leaf(crand(2, 3, seed=6))
    assert gradcheck(fn, (z, w))
    assert gradgradcheck(fn, (z, w))


def test_gradcheck_real_to_complex():
    re = rumus.tensor(
        np.random.default_rng(7).standard_normal(3), dtype=rumus.float64, requires_grad=True
    )
    im = rumus.tensor(
        np.random.default_rng(8).uniform(0.5, 2, 3), dtype=rumus.float64, requires_grad=True
    )
    assert gradcheck(lambda a, b: rumus.complex(a, b) * (2 - 1j), (re, im))
    assert gradcheck(lambda a, b: rumus.polar(b, a), (re, im))
    assert gradcheck(lambda a, b: rumus.view_as_complex(rumus.stack([a, b], -1)).abs(), (re, im))
    assert gradcheck(lambda a, b: (a * 1j + b).exp(), (re, im))


def test_safetensors_roundtrip(tmp_path):
    z = rumus.tensor(crand(3), dtype=rumus.complex64)
    rumus.save({"z": z}, tmp_path / "c.safetensors")
    back = rumus.load(tmp_path / "c.safetensors")["z"]
    assert back.dtype == rumus.complex64
    np.testing.assert_array_equal(back.numpy(), z.numpy())
    with pytest.raises(TypeError, match="complex128"):
        rumus.save({"z": z.cdouble()}, tmp_path / "d.safetensors")


def test_cat_stack_and_zero_dim_reductions():
    a, b = crand(2, 3, seed=9), crand(1, 3, seed=10)
    x, y = rumus.tensor(a), rumus.tensor(b)
    np.testing.assert_array_equal(rumus.cat([x, y]).numpy(), np.concatenate([a, b]))
    np.testing.assert_array_equal(rumus.stack([x[0], y[0]], -1).numpy(), np.stack([a[0], b[0]], -1))
    mixed = rumus.cat([x, rumus.ones(1, 3, dtype=rumus.float64)], dim=-2)
    assert mixed.dtype == rumus.complex128
    z = rumus.tensor(1 + 2j)
    assert z.sum().item() == 1 + 2j and z.mean(-1).item() == 1 + 2j
    w, v = leaf(a), leaf(b)
    assert gradcheck(lambda p, q: rumus.cat([p, q * 1j], 0), (w, v))


def test_linalg_eig():
    a = np.random.default_rng(11).standard_normal((2, 4, 4))
    w, v = rumus.linalg.eig(rumus.tensor(a, dtype=rumus.float64))
    assert w.dtype == rumus.complex128 and v.shape == (2, 4, 4)
    vn, wn = v.numpy(), w.numpy()
    np.testing.assert_allclose(a @ vn, vn * wn[..., None, :], atol=1e-10)
    np.testing.assert_allclose(
        np.sort_complex(rumus.linalg.eigvals(rumus.tensor(a)).numpy().astype(np.complex128)),
        np.sort_complex(np.linalg.eigvals(a)),
        atol=1e-4,
    )
    with rumus.no_grad():
        assert rumus.linalg.eigvals(rumus.tensor(a, requires_grad=True)).shape == (2, 4)
    x = rumus.tensor(a[0, :3, :3], dtype=rumus.float64, requires_grad=True)
    assert gradcheck(rumus.linalg.eigvals, (x,))
    assert gradgradcheck(rumus.linalg.eigvals, (x,))
    # eigenvectors up to phase: |V| and the eigenvalues together
    assert gradcheck(lambda m: (lambda w, v: (w, v.abs()))(*rumus.linalg.eig(m)), (x,))
    with pytest.raises(RuntimeError, match="square"):
        rumus.linalg.eig(rumus.ones(2, 3))
