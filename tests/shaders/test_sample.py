"""shaders/sample.wgsl (grid_sample forward and backward) through wgpu-py against the NumPy
reference of tests/test_sample.py: values, the input gradient as the adjoint of sampling
(points share taps, so the CAS scatter adds into the same elements), and the grid gradient
against central differences of the reference."""

import numpy as np
import pytest
from test_sample import grid_sample_ref

from .conftest import CODES, groups_1d

F = "sample.wgsl"
MODES = {m: CODES[f"GRID_MODE_{m.upper()}"] for m in ("bilinear", "nearest", "bicubic")}
PADS = {m: CODES[f"GRID_PAD_{m.upper()}"] for m in ("zeros", "border", "reflection")}
OFF = [1, 2, 3, 4, 5]  # element offsets of bindings 0..4


def run(gpu, entry, x, grid, mode, pm, ac, go=None, need=0):
    n, c = x.shape[:2]
    sizes = x.shape[2:] if x.ndim == 5 else (1,) + x.shape[2:]
    nd = x.ndim - 2
    pts = int(np.prod(grid.shape[1:-1]))

    def buf(a, k):
        return np.concatenate([np.zeros(OFF[k], np.float32), np.ravel(a).astype(np.float32)])

    bufs = [buf(x, 0), buf(grid, 1), None, None, buf(np.zeros(n * c * pts), 4)]
    if go is not None:
        bufs[2], bufs[3] = buf(go, 2), buf(np.zeros(x.size), 3)
        bufs[4] = buf(np.zeros(grid.size), 4)
    p = [n, c, *sizes, pts, nd, MODES[mode], PADS[pm], int(ac), need, *OFF]
    res = gpu.run(F, entry, bufs, p, groups_1d(n * pts))
    return [None if r is None else r[OFF[k] :] for k, r in enumerate(res)]


def inputs(rng, nd):
    x = rng.uniform(-1, 1, (2, 2, 4, 5) if nd == 2 else (1, 2, 3, 4, 3))
    # a few points near each other so several threads add into the same input elements
    grid = rng.uniform(-1.3, 1.3, (2, 3, 2, 2) if nd == 2 else (1, 2, 3, 2, 3))
    grid[..., 1, :] = grid[..., 0, :] + 0.01
    return x, grid


CASES = [
    (nd, mode, pm, ac)
    for nd in (2, 3)
    for mode in MODES
    for pm in PADS
    for ac in (False, True)
    if not (nd == 3 and mode == "bicubic")
]


@pytest.mark.parametrize("nd,mode,pm,ac", CASES)
def test_forward_and_input_gradient(gpu, nd, mode, pm, ac):
    rng = np.random.default_rng(1)
    x, grid = inputs(rng, nd)
    out = run(gpu, "grid_sample", x, grid, mode, pm, ac)[4]
    want = grid_sample_ref(x, grid, mode, pm, ac)
    close = np.isclose(out, want.ravel(), rtol=1e-4, atol=1e-5)
    # nearest: a float32 grid may round a .5 tie the other way
    assert close.all() if mode != "nearest" else close.mean() > 0.9
    if ac:
        return  # the adjoint check below is slow in NumPy: once per mode and padding
    go = rng.uniform(-1, 1, want.shape)
    gx = run(gpu, "grid_sample_backward", x, grid, mode, pm, ac, go=go, need=1)[3]
    # <gx, v> = <go, sample(v)> for every v: check it on the unit vectors
    want_gx = np.zeros(x.size)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = 1
        want_gx[i] = (go * grid_sample_ref(e.reshape(x.shape), grid, mode, pm, ac)).sum()
    np.testing.assert_allclose(gx, want_gx, rtol=1e-4, atol=2e-5)


@pytest.mark.parametrize(
    "nd,mode,pm",
    [
        (2, "bilinear", "zeros"),
        (2, "bicubic", "reflection"),
        (3, "bilinear", "border"),
        (2, "bilinear", "reflection"),
    ],
)
def test_grid_gradient(gpu, nd, mode, pm):
    rng = np.random.default_rng(2)
    x, grid = inputs(rng, nd)
    grid = np.clip(grid, -0.9, 0.9)
    go = rng.uniform(-1, 1, x.shape[:2] + grid.shape[1:-1])
    gg = run(gpu, "grid_sample_backward", x, grid, mode, pm, False, go=go, need=2)[4]
    want = np.zeros(grid.size)
    eps = 1e-6
    for i in range(grid.size):
        d = np.zeros(grid.size)
        d[i] = eps
        d = d.reshape(grid.shape)
        hi = grid_sample_ref(x, grid + d, mode, pm, False)
        lo = grid_sample_ref(x, grid - d, mode, pm, False)
        want[i] = (go * (hi - lo)).sum() / (2 * eps)
    np.testing.assert_allclose(gg, want, rtol=1e-3, atol=1e-4)
