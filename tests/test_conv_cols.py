"""Convolutions on the CPU through per-chunk columns in cache
(rust/backend/cpu/conv_cols.rs: the strided, small-plane, few-channel, 1x1 and
3-D cases the direct kernels do not take): forward, input gradient and weight
gradient against a NumPy float64 reference, float32 and float64, batches that
do not divide into chunks or threads, finite differences in float64."""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F


def _ref(x, w, b, stride, pad, dil):
    """y and dy -> (dx, dw) of a 2-D convolution with symmetric padding `pad`."""
    n, c, h, wd = x.shape
    o, _, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (pad[0], pad[0]), (pad[1], pad[1])))
    oh = (h + 2 * pad[0] - dil[0] * (kh - 1) - 1) // stride[0] + 1
    ow = (wd + 2 * pad[1] - dil[1] * (kw - 1) - 1) // stride[1] + 1

    def window(i, j):
        r0, c0 = i * dil[0], j * dil[1]
        return (
            slice(None),
            slice(None),
            slice(r0, r0 + stride[0] * (oh - 1) + 1, stride[0]),
            slice(c0, c0 + stride[1] * (ow - 1) + 1, stride[1]),
        )

    taps = [(i, j, window(i, j)) for i in range(kh) for j in range(kw)]
    y = sum(np.einsum("oc,nchw->nohw", w[:, :, i, j], xp[s]) for i, j, s in taps)
    if b is not None:
        y = y + b[None, :, None, None]

    def grads(dy):
        dxp, dw = np.zeros_like(xp), np.zeros_like(w)
        for i, j, s in taps:
            dw[:, :, i, j] = np.einsum("nohw,nchw->oc", dy, xp[s])
            dxp[s] += np.einsum("oc,nohw->nchw", w[:, :, i, j], dy)
        return dxp[:, :, pad[0] : pad[0] + h, pad[1] : pad[1] + wd], dw

    return y, grads


# (N, C, H, W), (O, kh, kw), stride, padding, dilation
CASES = [
    ((3, 32, 8, 8), (64, 3, 3), (1, 1), (1, 1), (1, 1)),  # small planes (bench_nn's CNN)
    ((2, 1, 9, 7), (5, 3, 3), (1, 1), (1, 1), (1, 1)),  # one input channel
    ((5, 7, 13, 11), (6, 3, 3), (2, 2), (1, 1), (1, 1)),  # strided, odd sizes
    ((3, 6, 17, 16), (9, 1, 1), (2, 2), (0, 0), (1, 1)),  # 1x1 stride 2 (ResNet's skip)
    ((4, 5, 12, 14), (3, 3, 5), (1, 3), (2, 1), (2, 1)),  # mixed strides, dilation
    ((2, 3, 6, 6), (4, 7, 7), (2, 2), (3, 3), (1, 1)),  # kernel larger than the stride
    ((130, 2, 4, 4), (3, 2, 2), (2, 2), (0, 0), (1, 1)),  # many chunks, a partial one
]


def _recorded(y):
    """Whether y came from the recorded convolution op (conv_igemm), not im2col + matmul."""
    fn = y.grad_fn
    if fn is not None and fn.name() == "ViewBackward0":  # the view that drops D
        fn = next(f for f, _ in fn.next_functions if f is not None)
    return fn is not None and fn.name() == "ConvolutionBackward0"


@pytest.mark.parametrize("case", CASES, ids=[str(c[0]) + str(c[1]) + str(c[2]) for c in CASES])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
def test_cols_conv2d_matches_reference(case, dtype, bias, rng):
    xs, (o, kh, kw), stride, pad, dil = case
    x0 = rng.uniform(-1, 1, xs)
    w0 = rng.uniform(-1, 1, (o, xs[1], kh, kw))
    b0 = rng.uniform(-1, 1, o) if bias else None
    dt = getattr(rumus, dtype)
    x = rumus.tensor(x0, dtype=dt, requires_grad=True)
    w = rumus.tensor(w0, dtype=dt, requires_grad=True)
    b = rumus.tensor(b0, dtype=dt, requires_grad=True) if bias else None
    y = F.conv2d(x, w, b, stride=stride, padding=pad, dilation=dil)
    assert _recorded(y)
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


def test_cols_conv1d_and_conv3d_match_the_2d_reference(rng):
    x0, w0 = rng.uniform(-1, 1, (3, 4, 11)), rng.uniform(-1, 1, (5, 4, 3))
    x = rumus.tensor(x0, requires_grad=True)
    y = F.conv1d(x, rumus.tensor(w0), stride=2, padding=1)
    ref, grads = _ref(x0[:, :, None], w0[:, :, None], None, (1, 2), (0, 1), (1, 1))
    np.testing.assert_allclose(y.detach().numpy(), ref[:, :, 0], rtol=1e-10, atol=1e-10)
    y.sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), grads(np.ones(ref.shape))[0][:, :, 0], atol=1e-10)
    # 3-D with a depth-1 kernel is the 2-D convolution of every depth slice
    x0 = rng.uniform(-1, 1, (2, 3, 4, 7, 6))
    w0 = rng.uniform(-1, 1, (4, 3, 1, 3, 3))
    x = rumus.tensor(x0, requires_grad=True)
    y = F.conv3d(x, rumus.tensor(w0), stride=(1, 2, 2), padding=(0, 1, 1))
    per = [_ref(x0[:, :, d], w0[:, :, 0], None, (2, 2), (1, 1), (1, 1)) for d in range(4)]
    np.testing.assert_allclose(
        y.detach().numpy(), np.stack([r for r, _ in per], 2), rtol=1e-10, atol=1e-10
    )
    y.sum().backward()
    dx = np.stack([g(np.ones(r.shape))[0] for r, g in per], 2)
    np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-10, atol=1e-10)


def test_cols_conv_gradcheck(rng):
    x = rumus.tensor(rng.uniform(-1, 1, (3, 2, 5, 6)), requires_grad=True)
    w = rumus.tensor(rng.uniform(-1, 1, (3, 2, 3, 2)), requires_grad=True)
    b = rumus.tensor(rng.uniform(-1, 1, 3), requires_grad=True)
    f = lambda x, w, b: F.conv2d(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2))  # noqa: E731
    assert rumus.autograd.gradcheck(f, (x, w, b))
    assert rumus.autograd.gradgradcheck(f, (x, w, b))


def test_one_image_keeps_the_whole_batch_gemm(rng):
    """With fewer images than threads the whole-batch route splits its GEMM instead."""
    x = rumus.tensor(rng.uniform(-1, 1, (1, 3, 8, 8)), requires_grad=True)
    w = rumus.tensor(rng.uniform(-1, 1, (4, 3, 3, 3)))
    y = F.conv2d(x, w, stride=2, padding=1)
    ref, _ = _ref(x.detach().numpy(), w.numpy(), None, (2, 2), (1, 1), (1, 1))
    np.testing.assert_allclose(y.detach().numpy(), ref, rtol=1e-5, atol=1e-5)
    assert _recorded(y) == (rumus.get_num_threads() == 1)
