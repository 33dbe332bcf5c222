"""shaders/rnn.wgsl (the fused gate kernels of one time step, forward and backward)
through wgpu-py against NumPy, with nonzero binding offsets."""

import numpy as np
import pytest

from .conftest import groups_1d

F = "rnn.wgsl"
TOL = dict(rtol=2e-5, atol=2e-6)
ROWS, H = 3, 5


def sig(x):
    return 1 / (1 + np.exp(-x))


def padded(a, off):
    return np.concatenate([np.full(off, 7.0, np.float32), a.astype(np.float32).ravel()])


def run(gpu, entry, arrays, outs, relu=0):
    """arrays: binding -> input array (0..3); outs: binding -> element count (4..6).
    Every tensor starts at offset 2 + binding; returns binding -> output (rows, -1)."""
    bufs, offs = [None] * 7, [0] * 7
    for b, a in {**arrays, **{k: np.zeros(n) for k, n in outs.items()}}.items():
        offs[b] = 2 + b
        bufs[b] = padded(a, offs[b])
    res = gpu.run(F, entry, bufs, [ROWS, H, relu, *offs], groups_1d(ROWS * H))
    return {b: res[b][offs[b] :].reshape(ROWS, -1) for b in outs}


def rand(rng, *shape):
    return rng.standard_normal(shape).astype(np.float32) * 2


@pytest.mark.parametrize("relu", [0, 1])
def test_rnn_cell(gpu, relu):
    rng = np.random.default_rng(0)
    a, b, dh = rand(rng, ROWS, H), rand(rng, ROWS, H), rand(rng, ROWS, H)
    v = a.astype(np.float64) + b
    h = np.maximum(v, 0) if relu else np.tanh(v)
    out = run(gpu, "rnn_cell", {0: a, 1: b}, {4: ROWS * H, 6: ROWS * H}, relu)
    np.testing.assert_allclose(out[4], h, **TOL)
    np.testing.assert_allclose(out[6], h, **TOL)
    d = run(gpu, "rnn_cell_backward", {0: out[6], 2: dh}, {4: ROWS * H}, relu)[4]
    np.testing.assert_allclose(d, dh * ((h > 0) if relu else 1 - h * h), **TOL)


def test_lstm_cell(gpu):
    rng = np.random.default_rng(1)
    a, b, c0 = rand(rng, ROWS, 4 * H), rand(rng, ROWS, 4 * H), rand(rng, ROWS, H)
    i, f, g, o = np.split(a.astype(np.float64) + b, 4, axis=1)
    i, f, g, o = sig(i), sig(f), np.tanh(g), sig(o)
    c = f * c0 + i * g
    tc = np.tanh(c)
    out = run(gpu, "lstm_cell", {0: a, 1: b, 2: c0}, {4: ROWS * H, 5: ROWS * H, 6: 5 * ROWS * H})
    np.testing.assert_allclose(out[4], o * tc, **TOL)
    np.testing.assert_allclose(out[5], c, **TOL)
    np.testing.assert_allclose(out[6], np.concatenate([i, f, g, o, tc], 1), **TOL)
    dm, dc = rand(rng, ROWS, H), rand(rng, ROWS, H)
    got = run(
        gpu, "lstm_cell_backward", {0: out[6], 1: c0, 2: dm, 3: dc}, {4: 4 * ROWS * H, 6: ROWS * H}
    )
    dct = dc + dm * o * (1 - tc * tc)
    want = [dct * g * i * (1 - i), dct * c0 * f * (1 - f), dct * i * (1 - g * g)]
    want.append(dm * tc * o * (1 - o))
    np.testing.assert_allclose(got[4], np.concatenate(want, 1), **TOL)
    np.testing.assert_allclose(got[6], dct * f, **TOL)


def test_gru_cell(gpu):
    rng = np.random.default_rng(2)
    a, b, h0 = rand(rng, ROWS, 3 * H), rand(rng, ROWS, 3 * H), rand(rng, ROWS, H)
    ar, az, an = np.split(a.astype(np.float64), 3, axis=1)
    br, bz, bn = np.split(b.astype(np.float64), 3, axis=1)
    r, z = sig(ar + br), sig(az + bz)
    n = np.tanh(an + r * bn)
    out = run(gpu, "gru_cell", {0: a, 1: b, 2: h0}, {4: ROWS * H, 6: 4 * ROWS * H})
    np.testing.assert_allclose(out[4], (1 - z) * n + z * h0, **TOL)
    np.testing.assert_allclose(out[6], np.concatenate([r, z, n, bn], 1), **TOL)
    dh = rand(rng, ROWS, H)
    got = run(
        gpu,
        "gru_cell_backward",
        {0: out[6], 1: h0, 2: dh},
        {4: 3 * ROWS * H, 5: 3 * ROWS * H, 6: ROWS * H},
    )
    dn = dh * (1 - z) * (1 - n * n)
    dz = dh * (h0 - n) * z * (1 - z)
    dr = dn * bn * r * (1 - r)
    np.testing.assert_allclose(got[4], np.concatenate([dr, dz, dn], 1), **TOL)
    np.testing.assert_allclose(got[5], np.concatenate([dr, dz, dn * r], 1), **TOL)
    np.testing.assert_allclose(got[6], dh * z, **TOL)
