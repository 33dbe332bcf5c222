"""Depthwise convolutions on the CPU (groups = input channels) through their own
kernels (rust/backend/cpu/conv_depthwise.rs: shifted copies of each plane, split
into stride phases, no GEMM and no im2col columns): forward, input gradient and
weight gradient against a NumPy float64 reference on odd shapes (strides, dilation,
padding larger than the kernel, asymmetric 'same', channel multipliers, 1-D, tiny
planes), float32 and float64, finite differences and a second derivative."""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from test_conv_direct import _direct as _conv_op  # the recorded convolution op


def _ref(x, w, b, stride, pad, dil):
    """y, and dy -> (dx, dw) for a depthwise convolution (w: (C·m, 1, kh, kw));
    pad = ((top, bottom), (left, right))."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    m = o // c
    xp = np.pad(x, ((0, 0), (0, 0), pad[0], pad[1]))
    oh = (h + sum(pad[0]) - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + sum(pad[1]) - dil[1] * (kw - 1) - 1) // stride[1] + 1
    src = np.repeat(np.arange(c), m)  # the input channel of each output channel

    def window(i, j):
        r, q = i * dil[0], j * dil[1]
        return np.s_[
            :,
            :,
            r : r + stride[0] * (oh - 1) + 1 : stride[0],
            q : q + stride[1] * (ow - 1) + 1 : stride[1],
        ]

    y = np.zeros((n, o, oh, ow))
    for i in range(kh):
        for j in range(kw):
            y += w[None, :, 0, i, j, None, None] * xp[window(i, j)][:, src]
    if b is not None:
        y = y + b[None, :, None, None]

    def grads(dy):
        dxp, dw = np.zeros_like(xp), np.zeros_like(w)
        for i in range(kh):
            for j in range(kw):
                dw[:, 0, i, j] = (dy * xp[window(i, j)][:, src]).sum((0, 2, 3))
                contrib = w[None, :, 0, i, j, None, None] * dy
                sl = dxp[window(i, j)]
                sl += contrib.reshape(n, c, m, oh, ow).sum(2)
        dx = dxp[:, :, pad[0][0] : pad[0][0] + h, pad[1][0] : pad[1][0] + wd]
        return dx, dw

    return y, grads


# (N, C, H, W), multiplier, (kh, kw), stride, padding argument, ((t, b), (l, r)), dilation
CASES = [
    ((2, 16, 32, 32), 1, (3, 3), (1, 1), 1, ((1, 1), (1, 1)), (1, 1)),
    ((3, 5, 17, 19), 1, (3, 3), (2, 2), 1, ((1, 1), (1, 1)), (1, 1)),
    ((2, 6, 15, 14), 2, (5, 3), (2, 3), (2, 1), ((2, 2), (1, 1)), (1, 2)),
    ((1, 7, 9, 11), 3, (7, 7), (1, 1), 3, ((3, 3), (3, 3)), (1, 1)),
    ((2, 4, 12, 13), 1, (4, 4), (1, 1), "same", ((1, 2), (1, 2)), (1, 1)),
    ((2, 3, 6, 5), 1, (3, 3), (3, 2), 4, ((4, 4), (4, 4)), (2, 1)),
    ((1, 8, 4, 4), 1, (1, 1), (2, 2), 0, ((0, 0), (0, 0)), (1, 1)),
    ((4, 3, 2, 3), 2, (2, 2), (1, 1), 0, ((0, 0), (0, 0)), (1, 1)),
]


@pytest.mark.parametrize("case", CASES, ids=[f"{c[0]}x{c[1]}k{c[2]}s{c[3]}" for c in CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
def test_depthwise_conv2d_matches_reference(case, dtype, bias, rng):
    xs, m, (kh, kw), stride, padding, pad, dil = case
    c = xs[1]
    x0 = rng.uniform(-1, 1, xs)
    w0 = rng.uniform(-1, 1, (c * m, 1, kh, kw))
    b0 = rng.uniform(-1, 1, c * m) if bias else None
    dt = getattr(rumus, dtype)
    x = rumus.tensor(x0, dtype=dt, requires_grad=True)
    w = rumus.tensor(w0, dtype=dt, requires_grad=True)
    b = rumus.tensor(b0, dtype=dt, requires_grad=True) if bias else None
    y = F.conv2d(x, w, b, stride=stride, padding=padding, dilation=dil, groups=c)
    assert _conv_op(y)
    ref, grads = _ref(x0, w0, b0, stride, pad, dil)
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


def test_depthwise_conv1d_and_module(rng):
    conv = rumus.nn.Conv1d(6, 12, 5, stride=2, padding=2, groups=6, dtype=rumus.float64)
    x0 = rng.uniform(-1, 1, (3, 6, 41))
    x = rumus.tensor(x0, requires_grad=True)
    y = conv(x)
    w0, b0 = conv.weight.detach().numpy(), conv.bias.detach().numpy()
    ref, grads = _ref(x0[:, :, None], w0[:, :, None], b0, (1, 2), ((0, 0), (2, 2)), (1, 1))
    np.testing.assert_allclose(y.detach().numpy(), ref[:, :, 0], rtol=1e-10, atol=1e-10)
    y.sum().backward()
    dx, dw = grads(np.ones(ref.shape))
    np.testing.assert_allclose(x.grad.numpy(), dx[:, :, 0], rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(conv.weight.grad.numpy(), dw[:, :, 0], rtol=1e-10, atol=1e-10)


def test_depthwise_gradcheck_and_second_derivative(rng):
    """Finite differences in float64 for x, w and b, and the input-gradient pass
    differentiated again (its weight gradient) against the reference."""
    x = rumus.tensor(rng.uniform(-1, 1, (2, 3, 7, 6)), requires_grad=True)
    w = rumus.tensor(rng.uniform(-1, 1, (6, 1, 3, 3)), requires_grad=True)
    b = rumus.tensor(rng.uniform(-1, 1, 6), requires_grad=True)
    f = lambda x, w, b: F.conv2d(x, w, b, stride=2, padding=1, groups=3)  # noqa: E731
    assert rumus.autograd.gradcheck(f, (x, w, b))
    g = rumus.tensor(rng.uniform(-1, 1, (2, 6, 4, 3)))
    v = rumus.tensor(rng.uniform(-1, 1, (2, 3, 7, 6)))
    (dx,) = rumus.autograd.grad(f(x, w, None), x, g, create_graph=True)
    (gw,) = rumus.autograd.grad((dx * v).sum(), [w])
    # <dx, v> = <g, conv(v, w)>: its w-gradient is the weight gradient of conv(v) under g
    _, grads = _ref(v.numpy(), w.detach().numpy(), None, (2, 2), ((1, 1), (1, 1)), (1, 1))
    np.testing.assert_allclose(gw.numpy(), grads(g.numpy())[1], rtol=1e-10, atol=1e-10)


def test_depthwise_weight_grad_is_the_same_on_any_thread_count(rng):
    """Each output channel's weight gradient sums the images in one fixed order."""
    x = rumus.tensor(rng.uniform(-1, 1, (9, 4, 20, 20)).astype("float32"))
    w = rumus.tensor(rng.uniform(-1, 1, (4, 1, 3, 3)).astype("float32"), requires_grad=True)
    grads, old = [], rumus.get_num_threads()
    try:
        for threads in (1, 2):
            rumus.set_num_threads(threads)
            w.grad = None
            F.conv2d(x, w, padding=1, groups=4).square().sum().backward()
            grads.append(w.grad.numpy().copy())
    finally:
        rumus.set_num_threads(old)
    np.testing.assert_array_equal(grads[0], grads[1])
