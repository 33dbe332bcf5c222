"""The CPU paths autocast(bfloat16) training leans on: F.linear over (..., k) inputs folded
into one product (bias added to the float32 sums before the one rounding), bool masks cast
to the half types, and scaled_dot_product_attention on half inputs (the float32 fused
kernel on float32 copies, on the CPU and the GPU). Checked against float64 NumPy references."""

import math

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from rumus.autograd import gradcheck
from test_flash_attention import uses_fused

EPS = {"bfloat16": 2.0**-8, "float16": 2.0**-11}
HALF = ["bfloat16", "float16"]


def rnd(shape, dtype, seed):
    """(rumus tensor in dtype, its exact values as float64)."""
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    t = rumus.tensor(x).to(getattr(rumus, dtype))
    return t, t.double().numpy()


def close(got, ref, mag, dtype, k):
    """got (a half tensor) is ref up to one rounding and float32 sums over k terms."""
    assert got.dtype == getattr(rumus, dtype)
    g = got.detach().double().numpy()
    assert g.shape == ref.shape
    tol = EPS[dtype] * np.abs(ref) + (k + 2) * 2.0**-23 * mag + 1e-30
    assert np.all(np.abs(g - ref) <= tol), f"max excess {np.max(np.abs(g - ref) - tol)}"


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("shape", [(2, 3, 33), (3, 2, 5, 17), (4, 64, 96)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_nd_values_and_grads(dtype, shape, bias):
    k, p = shape[-1], 19
    x, x64 = rnd(shape, dtype, 1)
    w, w64 = rnd((p, k), dtype, 2)
    b, b64 = rnd((p,), dtype, 3)
    g, g64 = rnd(shape[:-1] + (p,), dtype, 4)
    for t in (x, w, b):
        t.requires_grad_(True)
    y = F.linear(x, w, b if bias else None)
    ref = x64 @ w64.T + (b64 if bias else 0)
    mag = np.abs(x64) @ np.abs(w64.T) + (np.abs(b64) if bias else 0)
    close(y, ref, mag, dtype, k)
    y.backward(g)
    rows = int(np.prod(shape[:-1]))
    x2, g2 = x64.reshape(rows, k), g64.reshape(rows, p)
    close(x.grad, g64 @ w64, np.abs(g64) @ np.abs(w64), dtype, p)
    # The weight's gradient is one product over every row (one rounding).
    close(w.grad, g2.T @ x2, np.abs(g2.T) @ np.abs(x2), dtype, rows)
    if bias:
        close(b.grad, g2.sum(0), np.abs(g2).sum(0), dtype, rows)


@pytest.mark.parametrize("dtype", HALF)
def test_linear_nd_non_contiguous_input(dtype):
    x, x64 = rnd((5, 3, 40), dtype, 5)
    w, w64 = rnd((33, 5), dtype, 6)
    b, b64 = rnd((33,), dtype, 7)
    xt = x.permute(1, 2, 0)[:, ::2]  # (3, 20, 5), no unit stride on the last dim
    ref = x64.transpose(1, 2, 0)[:, ::2] @ w64.T + b64
    mag = np.abs(x64.transpose(1, 2, 0)[:, ::2]) @ np.abs(w64.T) + np.abs(b64)
    close(F.linear(xt, w, b), ref, mag, dtype, 5)


def test_linear_nd_bias_broadcast_and_errors():
    # A bias that is not one value per output still broadcasts (unfolded path).
    x = rumus.randn(2, 3, 4)
    w = rumus.randn(5, 4)
    b = rumus.randn(3, 5)
    ref = x.numpy() @ w.numpy().T + b.numpy()
    np.testing.assert_allclose(F.linear(x, w, b).numpy(), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(RuntimeError, match="cannot be multiplied"):
        F.linear(x, rumus.randn(5, 3))
    with pytest.raises(RuntimeError, match="dtype"):
        F.linear(x, w, rumus.randn(5).double())


def test_linear_nd_float64_gradcheck():
    x = rumus.randn(2, 3, 4, dtype=rumus.float64, requires_grad=True)
    w = rumus.randn(5, 4, dtype=rumus.float64, requires_grad=True)
    b = rumus.randn(5, dtype=rumus.float64, requires_grad=True)
    assert gradcheck(lambda x, w, b: F.linear(x, w, b), (x, w, b))
    assert gradcheck(lambda x, w: F.linear(x, w), (x, w))


def test_linear_nd_float32_matches_numpy():
    x, x64 = rnd((4, 7, 33), "float32", 8)
    w, w64 = rnd((9, 33), "float32", 9)
    b, b64 = rnd((9,), "float32", 10)
    x.requires_grad_(True)
    w.requires_grad_(True)
    b.requires_grad_(True)
    y = F.linear(x, w, b)
    assert y.shape == (4, 7, 9)
    np.testing.assert_allclose(y.detach().numpy(), x64 @ w64.T + b64, rtol=1e-5, atol=1e-5)
    y.sum().backward()
    ones = np.ones((28, 9))
    np.testing.assert_allclose(w.grad.numpy(), ones.T @ x64.reshape(28, 33), rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(b.grad.numpy(), np.full(9, 28.0), rtol=1e-6)
    np.testing.assert_allclose(x.grad.numpy(), np.broadcast_to(w64.sum(0), (4, 7, 33)), rtol=1e-5)


@pytest.mark.parametrize("dtype", HALF)
def test_bool_mask_to_half(dtype):
    m = np.random.default_rng(11).random((7, 37)) > 0.5
    t = rumus.tensor(m)
    dt = getattr(rumus, dtype)
    np.testing.assert_array_equal(t.to(dt).double().numpy(), m.astype(np.float64))
    # Strided source (the buffered path).
    np.testing.assert_array_equal(t.t().to(dt).double().numpy(), m.T.astype(np.float64))
    np.testing.assert_array_equal(t[:, ::3].to(dt).double().numpy(), m[:, ::3].astype(float))


@pytest.mark.parametrize("dtype", HALF)
def test_relu_backward_half(dtype):
    x, x64 = rnd((6, 45), dtype, 12)
    g, g64 = rnd((6, 45), dtype, 13)
    x.requires_grad_(True)
    rumus.relu(x).backward(g)
    np.testing.assert_array_equal(x.grad.double().numpy(), np.where(x64 > 0, g64, 0.0))


def sdpa64(q, k, v, mask=None, causal=False, scale=None):
    scale = 1 / math.sqrt(q.shape[-1]) if scale is None else scale
    s = q @ np.swapaxes(k, -1, -2) * scale
    if causal:
        s = np.where(np.tril(np.ones(s.shape[-2:], bool)), s, -np.inf)
    if mask is not None:
        s = np.where(mask, s, -np.inf) if mask.dtype == bool else s + mask
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v


@pytest.mark.parametrize("dtype", HALF)
@pytest.mark.parametrize("kind", ["plain", "causal", "bool", "float"])
def test_sdpa_half(dtype, kind, device):
    """Half q/k/v take the fused float32 kernel on both devices (never the (L, S) scores)."""
    dt = getattr(rumus, dtype)
    q, q64 = rnd((2, 3, 9, 16), dtype, 14)
    k, k64 = rnd((2, 3, 11 if kind != "causal" else 9, 16), dtype, 15)
    v, v64 = rnd(k.shape[:-1] + (8,), dtype, 16)
    mask = mask64 = None
    if kind == "bool":
        mask64 = np.random.default_rng(17).random((9, k.shape[-2])) > 0.3
        mask64[:, 0] = True
        mask = rumus.tensor(mask64)
    elif kind == "float":
        mask, mask64 = rnd((9, k.shape[-2]), dtype, 18)
    q, k, v = (t.to(device) for t in (q, k, v))
    mask = None if mask is None else mask.to(device)
    for t in (q, k, v):
        t.requires_grad_(True)
    out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=kind == "causal")
    assert out.dtype == dt and out.shape == (2, 3, 9, 8)
    assert uses_fused(out)
    ref = sdpa64(q64, k64, v64, mask64, kind == "causal")
    # float32 inside: only the output's rounding and float32 error.
    tol = EPS[dtype] * np.abs(ref) + 1e-5 * np.abs(v64).max()
    assert np.all(np.abs(out.detach().cpu().double().numpy() - ref) <= tol)
    out.float().sum().backward()
    assert q.grad.dtype == dt and k.grad.dtype == dt and v.grad.dtype == dt
    # The gradients match float32's on the same (rounded) inputs up to their rounding.
    qf, kf, vf = (rumus.tensor(a.astype(np.float32), requires_grad=True) for a in (q64, k64, v64))
    mf = None if mask is None else rumus.tensor(mask64 if kind == "bool" else mask64.astype("f4"))
    F.scaled_dot_product_attention(
        qf, kf, vf, attn_mask=mf, is_causal=kind == "causal"
    ).sum().backward()
    for got, want in ((q.grad, qf.grad), (k.grad, kf.grad), (v.grad, vf.grad)):
        w = want.double().numpy()
        err = np.abs(got.cpu().double().numpy() - w)
        assert np.all(err <= EPS[dtype] * np.abs(w) + 1e-5 * np.abs(w).max())
