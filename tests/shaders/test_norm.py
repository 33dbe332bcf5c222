"""shaders/norm.wgsl (layer_norm) through wgpu-py against NumPy."""

import numpy as np
import pytest

F = "norm.wgsl"
NP = {"f32": np.float32, "f16": np.float16}
TOL = {"f32": dict(rtol=2e-5, atol=2e-5), "f16": dict(rtol=1e-2, atol=1e-2)}


def dtypes(gpu):
    return ["f32"] + (["f16"] if gpu.has_f16 else [])


def groups_rows(n, max_x=65535):
    x = max(1, min(n, max_x))
    return (x, -(-n // x), 1)


def params(
    rows,
    m,
    flags=0,
    eps=1e-5,
    x_off=0,
    g_off=0,
    w_off=0,
    b_off=0,
    mean_off=0,
    rstd_off=0,
    out_off=0,
):
    return [rows, m, flags, float(eps), x_off, g_off, w_off, b_off, mean_off, rstd_off, out_off]


def ref_forward(x, w, b, eps):
    x = x.astype(np.float64)
    mu = x.mean(axis=1, keepdims=True)
    var = ((x - mu) ** 2).mean(axis=1, keepdims=True)
    rs = 1 / np.sqrt(var + eps)
    y = (x - mu) * rs
    if w is not None:
        y = y * w.astype(np.float64)
    if b is not None:
        y = y + b.astype(np.float64)
    return y, mu[:, 0], rs[:, 0]


def ref_backward(x, g, w, mu, rs):
    x, g = x.astype(np.float64), g.astype(np.float64)
    xh = (x - mu[:, None]) * rs[:, None]
    gh = g * (w.astype(np.float64) if w is not None else 1.0)
    return rs[:, None] * (
        gh - gh.mean(axis=1, keepdims=True) - xh * (gh * xh).mean(axis=1, keepdims=True)
    )


def forward(gpu, x, w, b, eps, dtype, offs=None, groups=None):
    rows, m = x.shape
    offs = offs or {}
    flags = (w is not None) | ((b is not None) << 1)
    dummy = np.zeros(2, NP[dtype])
    xo, yo, mo, ro = (offs.get(k, 0) for k in ("x_off", "out_off", "mean_off", "rstd_off"))
    xa = np.concatenate([np.zeros(xo, NP[dtype]), x.ravel()])
    bufs = [
        xa,
        dummy if w is None else w,
        dummy if b is None else b,
        np.zeros(yo + x.size, NP[dtype]),
        np.zeros(mo + rows, np.float32),
        np.zeros(ro + rows, np.float32),
    ]
    p = params(rows, m, flags, eps, x_off=xo, out_off=yo, mean_off=mo, rstd_off=ro)
    out = gpu.run(F, "layer_norm", bufs, p, groups or groups_rows(rows), dtype=dtype)
    return out[3][yo:].reshape(rows, m), out[4][mo:], out[5][ro:]


SHAPES = [(1, 1), (3, 5), (4, 256), (2, 300), (5, 1000), (7, 33)]


@pytest.mark.parametrize("affine", ["none", "w", "wb", "b"])
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_forward(gpu, shape, affine):
    rows, m = shape
    for dtype in dtypes(gpu):
        rng = np.random.default_rng(rows * 7 + m)
        x = (rng.standard_normal(shape) * 3 + 2).astype(NP[dtype])
        w = rng.standard_normal(m).astype(NP[dtype]) if "w" in affine else None
        b = rng.standard_normal(m).astype(NP[dtype]) if "b" in affine else None
        y, mu, rs = forward(gpu, x, w, b, 1e-5, dtype)
        ry, rmu, rrs = ref_forward(x, w, b, 1e-5)
        np.testing.assert_allclose(y.astype(np.float64), ry, **TOL[dtype])
        np.testing.assert_allclose(mu, rmu, rtol=2e-5, atol=2e-6)
        # m = 1: var = 0, rstd = 1/sqrt(eps) (large, still 2e-5 relative)
        np.testing.assert_allclose(rs, rrs, rtol=2e-5)


def test_forward_offsets_eps_and_spill(gpu):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((5, 70)).astype(np.float32)
    w = rng.standard_normal(70).astype(np.float32)
    y, mu, rs = forward(
        gpu,
        x,
        w,
        None,
        0.5,
        "f32",
        offs=dict(x_off=3, out_off=1, mean_off=2, rstd_off=5),
        groups=(2, 3, 1),
    )
    ry, rmu, rrs = ref_forward(x, w, None, 0.5)
    np.testing.assert_allclose(y, ry, rtol=2e-5, atol=2e-5)
    np.testing.assert_allclose(mu, rmu, rtol=2e-5, atol=2e-6)
    np.testing.assert_allclose(rs, rrs, rtol=2e-5)


def test_forward_constant_rows_and_nan(gpu):
    x = np.array([[2.0] * 6, [1.0, 2.0, np.nan, 4.0, 5.0, 6.0]], np.float32)
    y, mu, rs = forward(gpu, x, None, None, 1e-5, "f32")
    np.testing.assert_array_equal(y[0], 0)
    np.testing.assert_allclose(rs[0], 1 / np.sqrt(np.float32(1e-5)), rtol=1e-6)
    assert np.isnan(y[1]).all() and np.isnan(mu[1]) and np.isnan(rs[1])


def backward(gpu, x, g, w, mu, rs, dtype, offs=None, groups=None):
    rows, m = x.shape
    offs = offs or {}
    dummy = np.zeros(2, NP[dtype])
    xo, go, oo = (offs.get(k, 0) for k in ("x_off", "g_off", "out_off"))
    xa = np.concatenate([np.zeros(xo, NP[dtype]), x.ravel()])
    ga = np.concatenate([np.zeros(go, NP[dtype]), g.ravel()])
    p = params(rows, m, int(w is not None), x_off=xo, g_off=go, out_off=oo)
    bufs = [
        xa,
        ga,
        dummy if w is None else w,
        mu.astype(np.float32),
        rs.astype(np.float32),
        np.zeros(oo + x.size, NP[dtype]),
    ]
    return gpu.run(F, "layer_norm_backward", bufs, p, groups or groups_rows(rows), dtype=dtype)[5][
        oo:
    ].reshape(rows, m)


BSHAPES = [(1, 1), (3, 5), (2, 300), (37, 70), (4, 1000)]


@pytest.mark.parametrize("with_w", [False, True], ids=["no_w", "w"])
@pytest.mark.parametrize("shape", BSHAPES, ids=[str(s) for s in BSHAPES])
def test_backward(gpu, shape, with_w):
    rows, m = shape
    for dtype in dtypes(gpu):
        rng = np.random.default_rng(rows + m)
        x = (rng.standard_normal(shape) * 2 + 1).astype(NP[dtype])
        g = rng.standard_normal(shape).astype(NP[dtype])
        w = rng.standard_normal(m).astype(NP[dtype]) if with_w else None
        _, mu, rs = ref_forward(x, None, None, 1e-5)
        mu, rs = mu.astype(np.float32), rs.astype(np.float32)
        gx = backward(gpu, x, g, w, mu, rs, dtype)
        rgx = ref_backward(x, g, w, mu.astype(np.float64), rs.astype(np.float64))
        tol = dict(TOL[dtype])
        if m == 1:  # gx is rounding noise (exactly 0 in exact arithmetic) scaled by rstd ~ 316
            tol["atol"] = 1e-2 if dtype == "f32" else 1.0
        np.testing.assert_allclose(gx.astype(np.float64), rgx, **tol)


def test_backward_offsets_and_spill(gpu):
    rng = np.random.default_rng(9)
    x = rng.standard_normal((6, 80)).astype(np.float32)
    g = rng.standard_normal((6, 80)).astype(np.float32)
    w = rng.standard_normal(80).astype(np.float32)
    _, mu, rs = ref_forward(x, None, None, 1e-5)
    mu, rs = mu.astype(np.float32), rs.astype(np.float32)
    # groups (2, 3, 1): rows over x and y
    gx = backward(
        gpu, x, g, w, mu, rs, "f32", offs=dict(x_off=4, g_off=1, out_off=3), groups=(2, 3, 1)
    )
    rgx = ref_backward(x, g, w, mu.astype(np.float64), rs.astype(np.float64))
    np.testing.assert_allclose(gx, rgx, rtol=2e-5, atol=2e-5)
