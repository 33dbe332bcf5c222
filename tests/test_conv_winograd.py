"""Float32 stride-1 3x3 convolutions on the CPU through Winograd F(2x2, 3x3)
(rust/backend/cpu/conv_winograd.rs): forward, input gradient and weight
gradient against a NumPy float64 reference on odd shapes (partial tiles,
channels not a multiple of 8, padding 0 to 2 and per axis, planes whose tile
rows are not a multiple of the vector width, blocks of tile rows that do not
divide the image), a second derivative, and RUMUS_CONV_WINOGRAD=0 as the A/B
switch to the direct kernels. Batches of a group of 16 images per thread run
the kernels on vectors across images (conv_winograd_lanes.rs): partial groups,
the same odd shapes, planes too narrow for the row-wise kernels."""

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from test_conv_direct import _direct, _ref

# (N, C, H, W), O, padding argument, the same as ((t, b), (l, r))
CASES = [
    ((2, 16, 16, 16), 16, 1, ((1, 1), (1, 1))),
    ((3, 17, 9, 15), 20, 1, ((1, 1), (1, 1))),  # odd sizes: partial tiles
    ((2, 16, 6, 17), 24, 0, ((0, 0), (0, 0))),
    ((2, 32, 5, 14), 16, 2, ((2, 2), (2, 2))),  # the input gradient pads by 0
    ((1, 16, 12, 15), 17, (0, 2), ((0, 0), (2, 2))),
    ((2, 18, 7, 16), 16, "same", ((1, 1), (1, 1))),
    ((1, 16, 6, 54), 16, 1, ((1, 1), (1, 1))),  # 27 tiles a row: 16 + 11 lanes
    ((2, 64, 29, 32), 64, 1, ((1, 1), (1, 1))),  # 15 tile rows in blocks of 8 and 7
    ((2, 128, 8, 8), 128, 1, ((1, 1), (1, 1))),  # small planes, many channels
    ((7, 128, 8, 8), 128, 1, ((1, 1), (1, 1))),  # images grouped per block: 4 + 3
    ((5, 64, 12, 13), 64, 1, ((1, 1), (1, 1))),  # groups of 3 + 2, odd width
]

# Batches of at least 16 images per thread (two threads): partial last groups
# of 5, 1, 2 and 12 images (12: one 8-lane transpose block and 4 lanes left);
# 8x8 at 32 channels and 7x7 are too narrow for the row-wise kernels, so only
# these can have run there.
LANES_CASES = [
    ((32, 32, 8, 8), 64, 1, ((1, 1), (1, 1))),
    ((37, 17, 9, 15), 20, 1, ((1, 1), (1, 1))),
    ((33, 16, 6, 17), 24, 0, ((0, 0), (0, 0))),
    ((32, 20, 5, 14), 16, 2, ((2, 2), (2, 2))),
    ((34, 16, 12, 15), 17, (0, 2), ((0, 0), (2, 2))),
    ((32, 16, 7, 7), 18, "same", ((1, 1), (1, 1))),
    ((32, 16, 4, 4), 16, 1, ((1, 1), (1, 1))),
    ((32, 16, 13, 40), 16, 1, ((1, 1), (1, 1))),  # 20 tiles a row: a block per tile row
    ((44, 16, 11, 19), 16, 1, ((1, 1), (1, 1))),
]


@pytest.fixture
def two_threads():
    before = rumus.get_num_threads()
    rumus.set_num_threads(2)
    yield
    rumus.set_num_threads(before)


def _conv(x0, w0, b0, padding, dtype):
    dt = getattr(rumus, dtype)
    x = rumus.tensor(x0, dtype=dt, requires_grad=True)
    w = rumus.tensor(w0, dtype=dt, requires_grad=True)
    b = rumus.tensor(b0, dtype=dt, requires_grad=True) if b0 is not None else None
    return x, w, b, F.conv2d(x, w, b, padding=padding)


@pytest.mark.parametrize("case", CASES, ids=[str(c[0]) + str(c[1]) for c in CASES])
@pytest.mark.parametrize("bias", [True, False])
def test_winograd_conv2d_matches_reference(case, bias, rng, monkeypatch):
    _check(case, bias, rng, monkeypatch)


@pytest.mark.parametrize("case", LANES_CASES, ids=[str(c[0]) + str(c[1]) for c in LANES_CASES])
@pytest.mark.parametrize("bias", [True, False])
def test_winograd_across_images_matches_reference(case, bias, rng, monkeypatch, two_threads):
    _check(case, bias, rng, monkeypatch)


def _check(case, bias, rng, monkeypatch):
    """Forward, input and weight gradients (and the bias's) against float64 NumPy."""
    xs, o, padding, pad = case
    x0 = rng.uniform(-1, 1, xs)
    w0 = rng.uniform(-1, 1, (o, xs[1], 3, 3))
    b0 = rng.uniform(-1, 1, o) if bias else None
    x, w, b, y = _conv(x0, w0, b0, padding, "float32")
    assert _direct(y)
    with monkeypatch.context() as m:
        m.setenv("RUMUS_CONV_WINOGRAD", "0")
        other = _conv(x0, w0, b0, padding, "float32")[3].detach().numpy()
    assert np.any(y.detach().numpy() != other)  # this case took Winograd's kernels
    ref, grads = _ref(x0, w0, b0, pad, (1, 1))
    # Values are sums of up to 9·C terms of size 1: errors relative to that scale.
    tol = dict(rtol=1e-4, atol=1e-4 * np.sqrt(9 * xs[1]))
    assert y.shape == ref.shape and y.dtype == rumus.float32
    np.testing.assert_allclose(y.detach().numpy(), ref, **tol)
    dy = rng.uniform(-1, 1, ref.shape)
    y.backward(rumus.tensor(dy, dtype=rumus.float32))
    dx, dw = grads(dy)
    np.testing.assert_allclose(x.grad.numpy(), dx, rtol=1e-4, atol=1e-4 * np.sqrt(9 * o))
    n_terms = xs[0] * ref.shape[2] * ref.shape[3]
    np.testing.assert_allclose(w.grad.numpy(), dw, rtol=1e-4, atol=1e-5 * n_terms)
    if bias:
        np.testing.assert_allclose(b.grad.numpy(), dy.sum((0, 2, 3)), rtol=1e-4, atol=1e-3)


def test_narrow_planes_take_the_other_kernels(rng, monkeypatch):
    """8x8 planes with 64 channels run the other kernels: the same bits with the switch off."""
    x0, w0 = rng.uniform(-1, 1, (2, 64, 8, 8)), rng.uniform(-1, 1, (64, 64, 3, 3))
    y = _conv(x0, w0, None, 1, "float32")[3].detach().numpy()
    monkeypatch.setenv("RUMUS_CONV_WINOGRAD", "0")
    np.testing.assert_array_equal(y, _conv(x0, w0, None, 1, "float32")[3].detach().numpy())


def test_winograd_is_switched_off_by_the_environment(rng, monkeypatch):
    """RUMUS_CONV_WINOGRAD=0 runs the direct kernels: other roundings, the same values."""
    x0, w0 = rng.uniform(-1, 1, (2, 16, 16, 16)), rng.uniform(-1, 1, (16, 16, 3, 3))
    out = {}
    for flag in ["1", "0"]:
        monkeypatch.setenv("RUMUS_CONV_WINOGRAD", flag)
        x, w, _, y = _conv(x0, w0, None, 1, "float32")
        y.backward(rumus.tensor(np.cos(np.arange(y.numel())).reshape(y.shape), dtype=rumus.float32))
        out[flag] = [y.detach().numpy(), x.grad.numpy(), w.grad.numpy()]
    ref, grads = _ref(x0, w0, None, ((1, 1), (1, 1)), (1, 1))
    for a, d, r in zip(
        out["1"], out["0"], [ref, *grads(np.cos(np.arange(ref.size)).reshape(ref.shape))]
    ):
        np.testing.assert_allclose(a, r, rtol=1e-4, atol=1e-3)
        np.testing.assert_allclose(d, r, rtol=1e-4, atol=1e-3)
        assert np.any(a != d)  # two different kernels ran


def test_winograd_second_derivative_matches_float64(rng):
    """d/dw of <dx, v> with dx from the input-gradient pass: every pass is differentiated."""
    x0, w0 = rng.uniform(-1, 1, (2, 16, 9, 10)), rng.uniform(-1, 1, (16, 16, 3, 3))
    g0, v0 = rng.uniform(-1, 1, (2, 16, 9, 10)), rng.uniform(-1, 1, (2, 16, 9, 10))
    res = {}
    for dtype in ["float32", "float64"]:
        x, w, _, y = _conv(x0, w0, None, 1, dtype)
        dt = getattr(rumus, dtype)
        (dx,) = rumus.autograd.grad(y, x, rumus.tensor(g0, dtype=dt), create_graph=True)
        (gw,) = rumus.autograd.grad((dx * rumus.tensor(v0, dtype=dt)).sum(), w)
        res[dtype] = gw.numpy()
    np.testing.assert_allclose(res["float32"], res["float64"], rtol=1e-4, atol=1e-3)
