"""The float16 CPU GEMM (F16C widening in the packing, float32 FMA
micro-kernel, one rounding on store) and its fallback (whole-tensor widening
to float32, forced with RUMUS_NO_F16_GEMM): both against a float64 NumPy
product of the same half values, through matmul, bmm, linear, addmm,
baddbmm and the convolution GEMMs."""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F

EPS = 2.0**-11


@pytest.fixture(params=["native", "fallback"])
def path(request, monkeypatch):
    if request.param == "fallback":
        monkeypatch.setenv("RUMUS_NO_F16_GEMM", "1")
    return request.param


def rnd(shape, seed):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    t = rumus.tensor(x).half()
    return t, t.double().numpy()


def check(out, ref, mag, k):
    """One float16 rounding of the exact result plus float32 sums over k."""
    assert out.dtype == rumus.float16
    got = out.detach().double().numpy()
    assert got.shape == ref.shape
    tol = EPS * np.abs(ref) + (k + 2) * 2.0**-23 * mag + 1e-30
    excess = np.abs(got - ref) - tol
    assert np.all(excess <= 0), f"max excess {excess.max()}"


def check_mm(out, a, b):
    check(out, np.matmul(a, b), np.matmul(np.abs(a), np.abs(b)), a.shape[-1])


@pytest.mark.parametrize(
    "m,k,n", [(1, 1, 1), (13, 5, 31), (12, 192, 32), (97, 385, 129), (3, 0, 4)]
)
def test_mm_shapes_and_layouts(path, m, k, n):
    a, a64 = rnd((m, k), 1)
    b, b64 = rnd((k, n), 2)
    check_mm(a @ b, a64, b64)
    check_mm(b.t() @ a.t(), b64.T, a64.T)  # column-major operands
    if m > 1 and n > 1:
        check_mm(a[::2] @ b[:, 1::2], a64[::2], b64[:, 1::2])


def test_batched_and_broadcast(path):
    a, a64 = rnd((3, 33, 70), 3)
    b, b64 = rnd((3, 70, 45), 4)
    check_mm(rumus.bmm(a, b), a64, b64)
    check_mm(a @ b[0], a64, b64[0])
    c, c64 = rnd((2, 1, 9, 70), 5)
    check_mm(rumus.matmul(c, b), c64, b64)


def test_linear_addmm_baddbmm(path):
    x, x64 = rnd((40, 64), 6)
    w, w64 = rnd((48, 64), 7)
    bias, bias64 = rnd((48,), 8)
    ref = x64 @ w64.T
    mag = np.abs(x64) @ np.abs(w64.T)
    # linear rounds the product, then adds the bias: two roundings.
    out = F.linear(x, w, bias).double().numpy()
    np.testing.assert_allclose(
        out, ref + bias64, rtol=2 * EPS, atol=66 * 2.0**-23 * mag.max() + 4 * EPS
    )
    inp, inp64 = rnd((40, 48), 9)
    out = rumus.addmm(inp, x, w.t(), beta=0.5, alpha=2.0).double().numpy()
    np.testing.assert_allclose(out, 0.5 * inp64 + 2 * ref, rtol=3 * EPS, atol=8 * EPS)
    b1, b164 = rnd((2, 5, 64), 10)
    b2, b264 = rnd((2, 64, 6), 11)
    base, base64 = rnd((2, 5, 6), 12)
    out = rumus.baddbmm(base, b1, b2).double().numpy()
    np.testing.assert_allclose(out, base64 + b164 @ b264, rtol=3 * EPS, atol=8 * EPS)


def test_conv2d_and_its_gradients(path):
    x, x64 = rnd((2, 3, 9, 8), 13)
    w, w64 = rnd((5, 3, 3, 3), 14)
    xr = x.clone().requires_grad_(True)
    wr = w.clone().requires_grad_(True)
    y = F.conv2d(xr, wr, padding=1)
    assert y.dtype == rumus.float16
    ref = F.conv2d(x.double(), w.double(), padding=1)
    np.testing.assert_allclose(y.double().detach().numpy(), ref.numpy(), rtol=2 * EPS, atol=4 * EPS)
    g, _ = rnd(tuple(y.shape), 15)
    y.backward(g)
    xd, wd = x.double().requires_grad_(True), w.double().requires_grad_(True)
    F.conv2d(xd, wd, padding=1).backward(g.double())
    np.testing.assert_allclose(
        xr.grad.double().numpy(), xd.grad.numpy(), rtol=4 * EPS, atol=16 * EPS
    )
    np.testing.assert_allclose(
        wr.grad.double().numpy(), wd.grad.numpy(), rtol=4 * EPS, atol=64 * EPS
    )


def test_native_and_fallback_agree(monkeypatch):
    # Both round float32 sums of the same products once; only the order of
    # the float32 additions differs.
    a, a64 = rnd((70, 300), 16)
    b, b64 = rnd((300, 50), 17)
    native = (a @ b).double().numpy()
    monkeypatch.setenv("RUMUS_NO_F16_GEMM", "1")
    fallback = (a @ b).double().numpy()
    mag = np.abs(a64) @ np.abs(b64)
    assert np.all(np.abs(native - fallback) <= 2 * EPS * np.abs(native) + 600 * 2.0**-23 * mag)


def test_overflow_is_inf(path):
    a = rumus.full((2, 4), 200.0).half()
    b = rumus.full((4, 3), 200.0).half()
    out = (a @ b).float().numpy()
    assert np.all(np.isinf(out)) and np.all(out > 0)  # 160000 > float16 max
