"""F.grid_sample (bilinear / nearest / bicubic, zeros / border / reflection padding,
align_corners, 4-D and 5-D) and F.affine_grid (2-D and 3-D): values against a per-point NumPy
reference written from PyTorch's definitions, gradients w.r.t. input and grid by gradcheck,
PyTorch cross-checks when it is installed, bad input."""

import itertools

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import assert_close, need_gpu, tensor, to_np, wide

A = -0.75


def _unnorm(g, size, ac):
    return (g + 1) / 2 * (size - 1) if ac else ((g + 1) * size - 1) / 2


def _reflect(x, lo2, hi2):
    if lo2 == hi2:
        return 0.0
    lo, span = lo2 / 2, (hi2 - lo2) / 2
    d = abs(x - lo)
    flips = np.floor(d / span)
    extra = d - flips * span
    return extra + lo if flips % 2 == 0 else span - extra + lo


def _pad(x, size, pm, ac):
    if pm == "border":
        return min(max(x, 0), size - 1)
    if pm == "reflection":
        x = _reflect(x, 0, 2 * (size - 1)) if ac else _reflect(x, -1, 2 * size - 1)
        return min(max(x, 0), size - 1)
    return x


def _cubic(t):
    def near(x):
        return ((A + 2) * x - (A + 3)) * x * x + 1

    def far(x):
        return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A

    return [far(t + 1), near(t), near(1 - t), far(2 - t)]


def grid_sample_ref(x, grid, mode="bilinear", padding_mode="zeros", align_corners=False):
    """Per output point: the taps, their weights, and zero for taps out of range."""
    n, c = x.shape[:2]
    sizes = x.shape[2:]
    nsp = len(sizes)
    out_sp = grid.shape[1:-1]
    out = np.zeros((n, c) + out_sp)
    for b in range(n):
        for o in np.ndindex(*out_sp):
            g = grid[(b,) + o]
            coords = [_unnorm(g[nsp - 1 - a], sizes[a], align_corners) for a in range(nsp)]
            if mode == "bicubic":
                taps = []
                for xx, s in zip(coords, sizes):
                    x0 = np.floor(xx)
                    w = _cubic(xx - x0)
                    taps.append(
                        [(_pad(x0 - 1 + k, s, padding_mode, align_corners), w[k]) for k in range(4)]
                    )
            else:
                coords = [_pad(xx, s, padding_mode, align_corners) for xx, s in zip(coords, sizes)]
                if mode == "nearest":
                    taps = [[(np.round(xx), 1.0)] for xx in coords]
                else:
                    taps = [
                        [
                            (np.floor(xx), 1 - (xx - np.floor(xx))),
                            (np.floor(xx) + 1, xx - np.floor(xx)),
                        ]
                        for xx in coords
                    ]
            val = np.zeros(c)
            for combo in itertools.product(*taps):
                pos = [int(round(p)) for p, _ in combo]
                if all(0 <= p < s for p, s in zip(pos, sizes)):
                    w = np.prod([w for _, w in combo])
                    val += w * x[(b, slice(None)) + tuple(pos)]
            out[(b, slice(None)) + o] = val
    return out


CASES = [
    (mode, pm, ac)
    for mode in ("bilinear", "nearest", "bicubic")
    for pm in ("zeros", "border", "reflection")
    for ac in (False, True)
]


@pytest.mark.parametrize("mode,pm,ac", CASES)
def test_grid_sample_2d_values(mode, pm, ac, rng, device):
    fd = wide(device)
    x = rng.uniform(-1, 1, (2, 3, 4, 5))
    grid = rng.uniform(-1.4, 1.4, (2, 3, 4, 2))
    grid[0, 0, 0] = [1.0, -1.0]  # exactly on the corners
    out = F.grid_sample(
        tensor(x.astype(fd), device=device),
        tensor(grid.astype(fd), device=device),
        mode=mode,
        padding_mode=pm,
        align_corners=ac,
    )
    exp = grid_sample_ref(x, grid, mode, pm, ac).astype(fd)
    if mode == "nearest":  # a float32 grid can round a .5 tie the other way: compare most
        close = np.isclose(to_np(out), exp, rtol=1e-4, atol=1e-5)
        assert close.mean() > 0.9
    else:
        assert_close(out, exp, **({} if fd == "float64" else dict(rtol=1e-4, atol=1e-5)))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
def test_grid_sample_many_points_and_nonfinite_outside(mode, rng):
    """More points than one task takes, several batches and channels; an infinite input
    element is read by no out-of-range tap (zeros padding), as in PyTorch."""
    x = rng.uniform(-1, 1, (3, 5, 9, 11))
    grid = rng.uniform(-1.3, 1.3, (3, 30, 41, 2))
    exp = grid_sample_ref(x, grid, mode, "zeros", False)
    x[:, :, 0, 0] = np.inf
    out = F.grid_sample(tensor(x), tensor(grid), mode=mode, align_corners=False)
    # the reference had a finite corner: compare where no tap reads it
    ix = (grid[..., 0] + 1) * 11 / 2 - 0.5
    iy = (grid[..., 1] + 1) * 9 / 2 - 0.5
    reach = 2 if mode == "bicubic" else 1
    far = ((ix >= reach) | (iy >= reach))[:, None]
    got = to_np(out)
    assert np.isfinite(got[np.broadcast_to(far, got.shape)]).all()
    np.testing.assert_allclose(
        got[np.broadcast_to(far, got.shape)],
        exp[np.broadcast_to(far, exp.shape)],
        rtol=1e-6,
        atol=1e-7,
    )


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("pm", ["zeros", "border", "reflection"])
def test_grid_sample_3d_values(mode, pm, rng, device):
    fd = wide(device)
    x = rng.uniform(-1, 1, (1, 2, 3, 4, 3))
    grid = rng.uniform(-1.3, 1.3, (1, 2, 3, 2, 3))
    for ac in (False, True):
        out = F.grid_sample(
            tensor(x.astype(fd), device=device),
            tensor(grid.astype(fd), device=device),
            mode=mode,
            padding_mode=pm,
            align_corners=ac,
        )
        exp = grid_sample_ref(x, grid, mode, pm, ac).astype(fd)
        assert_close(out, exp, **({} if fd == "float64" else dict(rtol=1e-4, atol=1e-5)))


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("pm", ["zeros", "border", "reflection"])
def test_grid_sample_gradcheck(mode, pm):
    rng = np.random.default_rng(3)
    x = rumus.tensor(rng.uniform(-1, 1, (1, 2, 3, 4)), requires_grad=True)
    # keep the points away from integer taps and the borders (kinks of the piecewise forms)
    g = rng.uniform(-0.8, 0.8, (1, 2, 3, 2))
    grid = rumus.tensor(g, requires_grad=True)
    for ac in (False, True):
        assert rumus.autograd.gradcheck(
            lambda x, grid: F.grid_sample(x, grid, mode, pm, ac), (x, grid), atol=1e-5
        )


def test_grid_sample_3d_gradcheck():
    rng = np.random.default_rng(4)
    x = rumus.tensor(rng.uniform(-1, 1, (1, 2, 3, 3, 2)), requires_grad=True)
    grid = rumus.tensor(rng.uniform(-0.8, 0.8, (1, 2, 2, 1, 3)), requires_grad=True)
    assert rumus.autograd.gradcheck(
        lambda x, g: F.grid_sample(x, g, "bilinear", "border", True), (x, grid), atol=1e-5
    )


@pytest.mark.parametrize("pm", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d_gradcheck_all_paddings(mode, pm):
    # The Rust kernel's gradients (input scatter, grid derivative) in float64; nearest has a
    # zero grid gradient, so gradcheck checks the input's transposed gather there.
    rng = np.random.default_rng(6)
    x = rumus.tensor(rng.uniform(-1, 1, (2, 2, 3, 2, 4)), requires_grad=True)
    grid = rumus.tensor(rng.uniform(-0.9, 0.9, (2, 2, 1, 3, 3)), requires_grad=True)
    for ac in (False, True):
        assert rumus.autograd.gradcheck(
            lambda x, g: F.grid_sample(x, g, mode, pm, ac), (x, grid), atol=1e-5
        )


def test_grid_sample_reflection_outside_gradcheck():
    # Points far outside [-1, 1] fold back several times; the reflection flips the grid
    # gradient's sign on every odd fold.
    rng = np.random.default_rng(7)
    x = rumus.tensor(rng.uniform(-1, 1, (1, 1, 3, 4)), requires_grad=True)
    g = rng.uniform(-3.7, 3.7, (1, 3, 3, 2))
    grid = rumus.tensor(g, requires_grad=True)
    for mode in ("bilinear", "bicubic"):
        assert rumus.autograd.gradcheck(
            lambda x, grid: F.grid_sample(x, grid, mode, "reflection", False), (x, grid), atol=1e-5
        )


def test_grid_sample_is_one_kernel_node():
    x = rumus.zeros(1, 1, 2, 2, requires_grad=True)
    out = F.grid_sample(x, rumus.zeros(1, 1, 1, 2), align_corners=False)
    assert out.grad_fn.name() == "GridSampler2DBackward0"
    with pytest.raises(RuntimeError, match="double backward"):
        rumus.autograd.grad(out.sum(), x, create_graph=True)


@pytest.mark.parametrize("nd", [2, 3])
def test_grid_sample_gpu_gradients_match_cpu(nd, rng):
    need_gpu()
    shape = (2, 3, 4, 5) if nd == 2 else (2, 2, 3, 4, 3)
    gshape = (2, 3, 2, 2) if nd == 2 else (2, 2, 2, 2, 3)
    x = rng.uniform(-1, 1, shape).astype(np.float32)
    # Points land on shared taps, so the GPU's atomic scatter adds into the same elements.
    g = rng.uniform(-1.3, 1.3, gshape).astype(np.float32)
    w = rng.uniform(-1, 1, shape[:2] + gshape[1:-1]).astype(np.float32)
    modes = ["bilinear", "nearest"] + (["bicubic"] if nd == 2 else [])
    for mode, pm, ac in itertools.product(modes, ["zeros", "border", "reflection"], [False, True]):
        res = []
        for dev in ("cpu", "gpu"):
            xt = rumus.tensor(x).to(dev).requires_grad_()
            gt = rumus.tensor(g).to(dev).requires_grad_()
            out = F.grid_sample(xt, gt, mode, pm, ac)
            (out * rumus.tensor(w).to(dev)).sum().backward()
            res.append([to_np(out), to_np(xt.grad), to_np(gt.grad)])
        for name, a, b in zip(("out", "grad input", "grad grid"), res[1], res[0]):
            np.testing.assert_allclose(
                a, b, rtol=1e-4, atol=2e-5, err_msg=f"{mode} {pm} {ac} {name}"
            )


def affine_grid_ref(theta, size, align_corners=False):
    sp = size[2:]

    def base(n):
        if n == 1:
            return np.zeros(1)
        r = np.linspace(-1, 1, n)
        return r if align_corners else r * (n - 1) / n

    axes = [base(m) for m in sp]  # D, H, W order
    mesh = np.meshgrid(*axes, indexing="ij")
    pts = np.stack([*reversed(mesh), np.ones(sp)], -1)  # x, y(, z), 1
    return np.einsum("...k,njk->n...j", pts, theta)


@pytest.mark.parametrize("ac", [False, True])
def test_affine_grid_values_and_gradient(ac, rng, device):
    fd = wide(device)
    for size in ([2, 3, 4, 5], [1, 2, 3, 1, 4]):
        nsp = len(size) - 2
        theta = rng.uniform(-1, 1, (size[0], nsp, nsp + 1))
        out = F.affine_grid(tensor(theta.astype(fd), device=device), size, align_corners=ac)
        assert out.shape == (size[0], *size[2:], nsp)
        assert_close(
            out,
            affine_grid_ref(theta, size, ac).astype(fd),
            **({} if fd == "float64" else dict(rtol=1e-5, atol=1e-6)),
        )
    theta = rumus.tensor(rng.uniform(-1, 1, (2, 2, 3)), requires_grad=True)
    assert rumus.autograd.gradcheck(lambda t: F.affine_grid(t, [2, 1, 3, 4], ac), (theta,))


def test_affine_grid_identity_round_trip(rng):
    x = tensor(rng.uniform(-1, 1, (2, 3, 5, 6)))
    theta = rumus.tensor(np.tile(np.eye(2, 3), (2, 1, 1)))
    for ac in (False, True):
        grid = F.affine_grid(theta, [2, 3, 5, 6], align_corners=ac)
        assert_close(F.grid_sample(x, grid, align_corners=ac), to_np(x))


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_grid_sample_border_nan_coordinate_clips_to_zero(dtype, rng):
    """Border padding clamps a NaN coordinate to 0 as PyTorch does: it samples as a
    coordinate left of the input would; zeros padding keeps the NaN."""
    x = tensor(rng.uniform(-1, 1, (2, 3, 5, 6)).astype(dtype))
    grid = rng.uniform(-0.9, 0.9, (2, 4, 7, 2)).astype(dtype)
    nan = grid.copy()
    nan[:, ::2, :, 0] = np.nan
    left = grid.copy()
    left[:, ::2, :, 0] = -1.5
    got = F.grid_sample(x, tensor(nan), padding_mode="border", align_corners=False)
    exp = F.grid_sample(x, tensor(left), padding_mode="border", align_corners=False)
    np.testing.assert_array_equal(to_np(got), to_np(exp))
    z = to_np(F.grid_sample(x, tensor(nan), align_corners=False))
    assert np.isnan(z[:, :, ::2]).all() and np.isfinite(z[:, :, 1::2]).all()


def test_grid_sample_matches_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.uniform(-1, 1, (2, 3, 5, 4))
    grid = rng.uniform(-1.3, 1.3, (2, 4, 3, 2))
    for mode, pm, ac in CASES:
        exp = torch.nn.functional.grid_sample(
            torch.from_numpy(x), torch.from_numpy(grid), mode, pm, ac
        )
        out = F.grid_sample(tensor(x), tensor(grid), mode, pm, ac)
        assert_close(out, exp.numpy())
    theta = rng.uniform(-1, 1, (2, 3, 4))
    for ac in (False, True):
        exp = torch.nn.functional.affine_grid(torch.from_numpy(theta), [2, 1, 3, 4, 5], ac)
        assert_close(F.affine_grid(tensor(theta), [2, 1, 3, 4, 5], ac), exp.numpy())


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.grid_sample(rumus.zeros(1, 1, 3, 3), rumus.zeros(1, 2, 2)),
            RuntimeError,
            "4D or 5D",
        ),
        (
            lambda: F.grid_sample(rumus.zeros(1, 1, 3, 3), rumus.zeros(1, 2, 2, 3)),
            RuntimeError,
            "size 2 in last",
        ),
        (
            lambda: F.grid_sample(rumus.zeros(2, 1, 3, 3), rumus.zeros(1, 2, 2, 2)),
            RuntimeError,
            "same batch size",
        ),
        (
            lambda: F.grid_sample(rumus.zeros(1, 1, 0, 3), rumus.zeros(1, 2, 2, 2)),
            RuntimeError,
            "non-empty spatial",
        ),
        (
            lambda: F.grid_sample(rumus.zeros(1, 1, 3, 3), rumus.zeros(1, 2, 2, 2), mode="area"),
            ValueError,
            "expected mode",
        ),
        (
            lambda: F.grid_sample(
                rumus.zeros(1, 1, 3, 3), rumus.zeros(1, 2, 2, 2), padding_mode="wrap"
            ),
            ValueError,
            "padding_mode",
        ),
        (
            lambda: F.grid_sample(
                rumus.zeros(1, 1, 2, 3, 3), rumus.zeros(1, 2, 2, 2, 3), mode="bicubic"
            ),
            RuntimeError,
            "only supports 4D",
        ),
        (
            lambda: F.grid_sample(rumus.zeros(1, 1, 3, 3), rumus.zeros(1, 2, 2, 2).double()),
            RuntimeError,
            "dtype",
        ),
        (lambda: F.affine_grid(rumus.zeros(1, 2, 3), [1, 1, 3]), NotImplementedError, "4D and 5D"),
        (lambda: F.affine_grid(rumus.zeros(1, 3, 4), [1, 1, 3, 3]), ValueError, "Nx2x3"),
        (lambda: F.affine_grid(rumus.zeros(2, 2, 3), [1, 1, 3, 3]), ValueError, "Nx2x3"),
        (
            lambda: F.affine_grid(rumus.zeros(1, 2, 3), [1, 1, -3, 3]),
            ValueError,
            "positive output size",
        ),
        (
            lambda: F.affine_grid(rumus.zeros(1, 2, 3, dtype=rumus.int64), [1, 1, 3, 3]),
            ValueError,
            "floating point",
        ),
    ],
)
def test_sample_bad_input(call, exc, match):
    with pytest.raises(exc, match=match):
        call()


def test_align_corners_default_warns():
    theta = rumus.tensor(np.eye(2, 3)[None])
    with pytest.warns(UserWarning, match="align_corners=False"):
        grid = F.affine_grid(theta, [1, 1, 2, 3])
    with pytest.warns(UserWarning, match="align_corners=False"):
        F.grid_sample(rumus.zeros(1, 1, 2, 3, dtype=grid.dtype), grid)
    with pytest.warns(UserWarning, match="unit-size"):
        F.affine_grid(theta, [1, 1, 1, 3], align_corners=True)
