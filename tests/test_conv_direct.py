"""Stride-1 convolutions on the CPU through the direct kernels
(rust/backend/cpu/conv_direct.rs: per-tap GEMMs on zero-padded images, no im2col
columns): forward, input gradient and weight gradient against a NumPy float64
reference on odd shapes (channels not a multiple of 8, odd image sizes, padding
larger than the kernel, asymmetric 'same', dilation, batch 1, 1-D), float32 and
float64, finite differences and a second derivative in float64."""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F


def _ref(x, w, b, pad, dil):
    """y, and dy -> (dx, dw) for a stride-1 convolution; pad = ((top, bottom), (left, right))."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), pad[0], pad[1]))
    oh = h + sum(pad[0]) - dil[0] * (kh - 1)
    ow = wd + sum(pad[1]) - dil[1] * (kw - 1)
    taps = [
        (i, j, xp[:, :, i * dil[0] : i * dil[0] + oh, j * dil[1] : j * dil[1] + ow])
        for i in range(kh)
        for j in range(kw)
    ]
    y = sum(np.einsum("oc,nchw->nohw", w[:, :, i, j], t) for i, j, t in taps)
    if b is not None:
        y = y + b[None, :, None, None]

    def grads(dy):
        dxp = np.zeros_like(xp)
        dw = np.zeros_like(w)
        for i, j, t in taps:
            dw[:, :, i, j] = np.einsum("nohw,nchw->oc", dy, t)
            sl = dxp[:, :, i * dil[0] : i * dil[0] + oh, j * dil[1] : j * dil[1] + ow]
            sl += np.einsum("oc,nohw->nchw", w[:, :, i, j], dy)
        dx = dxp[:, :, pad[0][0] : pad[0][0] + h, pad[1][0] : pad[1][0] + wd]
        return dx, dw

    return y, grads


def _direct(y):
    """Whether y came from the direct kernels' recorded op (under the view that drops D)."""
    fn = y.grad_fn
    while fn is not None:
        if fn.name() == "ConvolutionBackward0":
            return True
        nxt = [f for f, _ in fn.next_functions if f is not None]
        fn = nxt[0] if len(nxt) == 1 and fn.name() == "ViewBackward0" else None
    return False


# (N, C, H, W), (O, kh, kw), padding argument, the same as ((t, b), (l, r)), dilation
CASES = [
    ((2, 16, 16, 16), (5, 3, 3), 1, ((1, 1), (1, 1)), (1, 1)),
    ((1, 17, 24, 21), (8, 3, 5), (0, 2), ((0, 0), (2, 2)), (2, 1)),
    ((3, 19, 17, 18), (7, 4, 4), "same", ((1, 2), (1, 2)), (1, 1)),
    ((2, 16, 18, 19), (3, 3, 3), "valid", ((0, 0), (0, 0)), (1, 1)),
    ((2, 20, 16, 17), (6, 1, 3), (0, 1), ((0, 0), (1, 1)), (1, 1)),
    ((2, 16, 16, 16), (4, 3, 3), 4, ((4, 4), (4, 4)), (1, 1)),
    ((5, 24, 16, 16), (33, 3, 3), (1, 2), ((1, 1), (2, 2)), (1, 2)),
]


@pytest.mark.parametrize("case", CASES, ids=[str(c[0]) + str(c[1]) for c in CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
def test_direct_conv2d_matches_reference(case, dtype, bias, rng):
    xs, (o, kh, kw), padding, pad, dil = case
    x0 = rng.uniform(-1, 1, xs)
    w0 = rng.uniform(-1, 1, (o, xs[1], kh, kw))
    b0 = rng.uniform(-1, 1, o) if bias else None
    dt = getattr(rumus, dtype)
    x = rumus.tensor(x0, dtype=dt, requires_grad=True)
    w = rumus.tensor(w0, dtype=dt, requires_grad=True)
    b = rumus.tensor(b0, dtype=dt, requires_grad=True) if bias else None
    y = F.conv2d(x, w, b, padding=padding, dilation=dil)
    assert _direct(y)
    ref, grads = _ref(x0, w0, b0, pad, dil)
    tol = dict(rtol=1e-4, atol=1e-4) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    assert y.shape == ref.shape and y.dtype == dt
    np.testing.assert_allclose(y.detach().numpy(), ref, **tol)
    dy = rng.uniform(-1, 1, ref.shape)
    y.backward(rumus.tensor(dy, dtype=dt))
    dx, dw = grads(dy)
    np.testing.assert_allclose(x.grad.numpy(), dx, **tol)
    np.testing.assert_allclose(w.grad.numpy(), dw, **tol)
    if bias:
        np.testing.assert_allclose(b.grad.numpy(), dy.sum((0, 2, 3)), **tol)


def test_direct_conv1d_and_module(rng):
    x0, w0 = rng.uniform(-1, 1, (2, 16, 300)), rng.uniform(-1, 1, (3, 16, 5))
    x = rumus.tensor(x0, requires_grad=True)
    y = F.conv1d(x, rumus.tensor(w0), padding=2)
    assert _direct(y)
    ref, grads = _ref(x0[:, :, None], w0[:, :, None], None, ((0, 0), (2, 2)), (1, 1))
    np.testing.assert_allclose(y.detach().numpy(), ref[:, :, 0], rtol=1e-10, atol=1e-10)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), grads(np.ones(ref.shape))[0][:, :, 0], atol=1e-10)


def test_direct_conv_gradcheck_and_second_derivative(rng):
    """Finite differences in float64 for w and b, and for x through a second derivative."""
    x = rumus.tensor(rng.uniform(-1, 1, (1, 16, 16, 16)), requires_grad=True)
    w = rumus.tensor(rng.uniform(-1, 1, (2, 16, 3, 3)), requires_grad=True)
    b = rumus.tensor(rng.uniform(-1, 1, 2), requires_grad=True)
    f = lambda w, b: F.conv2d(x.detach(), w, b, padding=1)  # noqa: E731
    assert rumus.autograd.gradcheck(f, (w, b))
    # d/dw and d/dx of <dx, v> with dx = d<y, g>/dx: the input-grad pass differentiated
    g = rumus.tensor(rng.uniform(-1, 1, (1, 2, 16, 16)))
    v = rumus.tensor(rng.uniform(-1, 1, (1, 16, 16, 16)))
    (dx,) = rumus.autograd.grad(F.conv2d(x, w, padding=1), x, g, create_graph=True)
    gw, gx = rumus.autograd.grad((dx * v).sum(), [w, x], allow_unused=True)
    # <dx, v> = <g, conv(v, w)>: its w-gradient is the weight gradient of conv(v) under g
    _, grads = _ref(v.numpy(), w.detach().numpy(), None, ((1, 1), (1, 1)), (1, 1))
    np.testing.assert_allclose(gw.numpy(), grads(g.numpy())[1], rtol=1e-10, atol=1e-10)
    assert gx is None or np.allclose(gx.numpy(), 0)


def test_small_strided_or_grouped_convs_take_other_kernels(rng):
    x = rumus.tensor(rng.uniform(-1, 1, (2, 16, 16, 16)), requires_grad=True)
    w = rumus.tensor(rng.uniform(-1, 1, (4, 16, 3, 3)))
    w2 = rumus.tensor(rng.uniform(-1, 1, (4, 8, 3, 3)))
    assert _direct(F.conv2d(x, w, padding=1))
    # grouped: whole-batch im2col; strided and small planes: conv_cols (tests/test_conv_cols.py)
    assert not _direct(F.conv2d(x, w2, groups=2))
