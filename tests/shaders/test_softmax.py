"""shaders/softmax.wgsl through wgpu-py against NumPy."""

import numpy as np
import pytest

from .conftest import groups_1d

F = "softmax.wgsl"
NP = {"f32": np.float32, "f16": np.float16}
TOL = {"f32": dict(rtol=2e-5, atol=1e-6), "f16": dict(rtol=1e-2, atol=2e-3)}


def dtypes(gpu):
    return ["f32"] + (["f16"] if gpu.has_f16 else [])


def groups_rows(rows, max_x=65535):
    """A workgroup per row, spilling into y past max_x (small max_x tests the spill)."""
    x = max(1, min(rows, max_x))
    return (x, -(-rows // x), 1)


def ref_forward(x, log):
    """(outer, n, inner) float64 reference of the CPU kernel (NaN for a non-finite max)."""
    x = x.astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore"):
        m = np.max(x, axis=1, keepdims=True)  # NaN wins
        e = np.exp(x - m)
        s = e.sum(axis=1, keepdims=True)
        y = (x - m) - np.log(s) if log else e / s
    return np.where(np.isfinite(m), y, np.nan)


def ref_backward(y, g, log):
    y, g = y.astype(np.float64), g.astype(np.float64)
    if log:
        return g - np.exp(y) * g.sum(axis=1, keepdims=True)
    return y * (g - (g * y).sum(axis=1, keepdims=True))


def run(gpu, entry, a, b, shape, dtype, offs=(0, 0, 0), groups=None):
    """a, b: flat inputs (b None forward); shape (outer, n, inner); returns o reshaped."""
    outer, n, inner = shape
    rows = outer * inner
    out = np.zeros(n * rows + offs[2], NP[dtype])
    if groups is None:
        groups = groups_1d(rows) if "cols" in entry else groups_rows(rows)
    params = [outer, n, inner, *offs]
    res = gpu.run(F, entry, [a, b, out], params, groups, dtype=dtype)[2]
    return res[offs[2] :].reshape(shape)


def forward_entry(log, cols):
    return ("log_softmax" if log else "softmax") + ("_cols" if cols else "")


def backward_entry(log, cols):
    return forward_entry(log, cols) + "_backward"


SHAPES = [(3, 1, 1), (5, 7, 1), (2, 300, 1), (1, 1000, 1), (4, 513, 1), (3, 6, 5), (2, 40, 33)]


@pytest.mark.parametrize("cols", [False, True], ids=["rows", "cols"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_forward(gpu, shape, log, cols):
    for dtype in dtypes(gpu):
        rng = np.random.default_rng(sum(shape))
        x = (rng.standard_normal(shape) * 4).astype(NP[dtype])
        got = run(gpu, forward_entry(log, cols), x.ravel(), None, shape, dtype)
        tol = dict(TOL[dtype])
        if log:  # (x - m) - ln s cancels: error relative to the terms' size
            tol["atol"] = max(
                tol["atol"], 4 * float(np.finfo(NP[dtype]).eps) * float(np.abs(x).max() + 8)
            )
        np.testing.assert_allclose(got.astype(np.float64), ref_forward(x, log), **tol)


@pytest.mark.parametrize("cols", [False, True], ids=["rows", "cols"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", SHAPES, ids=[str(s) for s in SHAPES])
def test_backward(gpu, shape, log, cols):
    for dtype in dtypes(gpu):
        rng = np.random.default_rng(sum(shape) + 1)
        y = ref_forward(rng.standard_normal(shape), log).astype(NP[dtype])
        g = rng.standard_normal(shape).astype(NP[dtype])
        got = run(gpu, backward_entry(log, cols), y.ravel(), g.ravel(), shape, dtype)
        np.testing.assert_allclose(got.astype(np.float64), ref_backward(y, g, log), **TOL[dtype])


@pytest.mark.parametrize("cols", [False, True], ids=["rows", "cols"])
@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_special_values(gpu, log, cols):
    inf = np.inf
    x = np.array(
        [
            [1.0, 2.0, 3.0, 4.0],
            [-inf, -inf, -inf, -inf],  # all -inf: NaN, as in PyTorch
            [-inf, 0.0, -inf, 1.0],  # -inf entries give 0 (log: -inf)
            [0.0, inf, 1.0, 2.0],  # +inf: NaN
            [0.0, np.nan, 1.0, 2.0],  # NaN: NaN
            [1000.0, 1000.0, -1000.0, 999.0],  # large magnitudes stay stable
        ],
        np.float32,
    )
    shape = (x.shape[0], x.shape[1], 1)
    got = run(gpu, forward_entry(log, cols), x.ravel(), None, shape, "f32")[:, :, 0]
    want = ref_forward(x[:, :, None], log)[:, :, 0]
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, equal_nan=True)
    assert np.isnan(got[1]).all() and np.isnan(got[3]).all() and np.isnan(got[4]).all()
    assert not np.isnan(got[[0, 2, 5]]).any()


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_offsets_and_grid_spill(gpu, log):
    """Tensors starting at an element offset; rows spread over x and y workgroups."""
    shape = (7, 19, 1)
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    g = rng.standard_normal(shape).astype(np.float32)
    xa = np.concatenate([np.full(3, 99, np.float32), x.ravel()])
    got = run(
        gpu, forward_entry(log, False), xa, None, shape, "f32", offs=(3, 0, 5), groups=(3, 3, 1)
    )
    y = ref_forward(x, log)
    np.testing.assert_allclose(got, y, rtol=2e-5, atol=1e-6)
    ya = y.astype(np.float32).ravel()
    ga = np.concatenate([np.zeros(11, np.float32), g.ravel()])
    got = run(
        gpu, backward_entry(log, False), ya, ga, shape, "f32", offs=(0, 11, 2), groups=(4, 2, 1)
    )
    np.testing.assert_allclose(got, ref_backward(ya.reshape(shape), g, log), rtol=2e-5, atol=1e-6)
    # cols entries: rows over x and y (flat id = gid.x + gid.y * nwg.x * 256)
    shape = (3, 5, 200)
    x = rng.standard_normal(shape).astype(np.float32)
    got = run(gpu, forward_entry(log, True), x.ravel(), None, shape, "f32", groups=(2, 2, 1))
    np.testing.assert_allclose(got, ref_forward(x, log), rtol=2e-5, atol=1e-6)


# Row lengths past 256 whose strided loops run once more in some lanes of a
# SIMD group than in the next ones (n % 256 not a multiple of 8). Every lane
# must still store its outputs after the workgroup reduction: Mesa's llvmpipe
# on OpenGL drops the stores of the lanes that left the first loop early
# (issue 14; the harness keeps to Vulkan, Metal and DX12 since).
UNEVEN = [257, 263, 300, 513]


@pytest.mark.parametrize("log", [False, True], ids=["softmax", "log_softmax"])
def test_rows_every_lane_stores(gpu, log):
    rng = np.random.default_rng(14)
    for n in UNEVEN:
        shape = (3, n, 1)
        x = rng.standard_normal(shape).astype(np.float32)
        y = ref_forward(x, log)
        g = rng.standard_normal(shape).astype(np.float32)
        yf = y.astype(np.float32)
        cases = [
            (forward_entry(log, False), x.ravel(), None, y),
            (backward_entry(log, False), yf.ravel(), g.ravel(), ref_backward(yf, g, log)),
        ]
        for entry, a, b, want in cases:
            got = run(gpu, entry, a, b, shape, "f32")
            lost = np.argwhere((got == 0) & (want != 0))[:, :2]
            assert lost.size == 0, f"{entry} n={n}: zeros at (row, k) {lost[:8].tolist()}"
            np.testing.assert_allclose(got, want, rtol=2e-5, atol=1e-6)
