"""Pooling (max/avg/adaptive, 1-D and 2-D: Rust kernels) against NumPy loop
references: kernel/stride/padding/dilation, ceil_mode, count_include_pad,
divisor_override, return_indices, unbatched and non-contiguous inputs; gradients
against closed forms (max routes g to the argmax, averages spread g / divisor);
PyTorch cross-checks when installed; bad input."""

import math

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import (
    assert_close,
    default_device,
    dleaf,
    float_dtypes,
    noncontig,
    ntuple,
    tensor,
    to_np,
    wide,
)

F32 = dict(rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU (``device`` fixture)
# --------------------------------------------------------------------------


def tol(device):
    """Tolerances of a ``wide(device)`` result: the defaults on the CPU, F32 on the GPU."""
    return {} if device == "cpu" else F32


def ac(t, expected, device):
    """assert_close on the detached tensor; on the GPU against float32 with F32 tolerances."""
    assert t is not None, "expected a tensor, got None"
    assert_close(t.detach(), np.asarray(expected).astype(wide(device)), **tol(device))


def _out_size(n, k, s, p, d, ceil_mode):
    span = n + 2 * p - d * (k - 1) - 1
    out = (-(-span // s) if ceil_mode else span // s) + 1
    if (
        ceil_mode and (out - 1) * s >= n + p
    ):  # the last window must start inside the input or the left padding
        out -= 1
    return out


def _windows(x, kernel_size, stride, padding, dilation, ceil_mode):
    """Yields (output index, list of input indices in the window) for the spatial dims of x."""
    sp = x.shape[2:]
    nsp = len(sp)
    k = ntuple(kernel_size, nsp)
    s = ntuple(stride if stride not in (None, []) else kernel_size, nsp)
    p, d = ntuple(padding, nsp), ntuple(dilation, nsp)
    out = [_out_size(n, *a, ceil_mode) for n, *a in zip(sp, k, s, p, d)]
    for o in np.ndindex(*out):
        axes = [[o[i] * s[i] - p[i] + t * d[i] for t in range(k[i])] for i in range(nsp)]
        axes = [[j for j in ax if 0 <= j < n] for ax, n in zip(axes, sp)]
        yield o, out, _cells(axes)


def _cells(axes):
    """All index tuples of the product of per-dim index lists."""
    return [tuple(a[i] for a, i in zip(axes, c)) for c in np.ndindex(*[len(a) for a in axes])]


def max_pool_ref(x, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False):
    """Values and flat (per-plane) argmax indices."""
    sp = x.shape[2:]
    vals = idx = None
    for o, out, cells in _windows(x, kernel_size, stride, padding, dilation, ceil_mode):
        if vals is None:
            vals = np.zeros(x.shape[:2] + tuple(out), x.dtype)
            idx = np.zeros(x.shape[:2] + tuple(out), np.int64)
        w = np.stack([x[(Ellipsis,) + c] for c in cells], -1)
        best = w.argmax(-1)
        vals[(Ellipsis,) + o] = np.take_along_axis(w, best[..., None], -1)[..., 0]
        flat = np.array([np.ravel_multi_index(c, sp) for c in cells])
        idx[(Ellipsis,) + o] = flat[best]
    return vals, idx


def avg_pool_ref(
    x,
    kernel_size,
    stride=None,
    padding=0,
    ceil_mode=False,
    count_include_pad=True,
    divisor_override=None,
    grad=None,
):
    """Values, or with ``grad`` the input gradient of sum(avg_pool(x) * grad)."""
    sp = x.shape[2:]
    nsp = len(sp)
    k, p = ntuple(kernel_size, nsp), ntuple(padding, nsp)
    s = ntuple(stride if stride not in (None, []) else kernel_size, nsp)
    out = vals = None
    gx = np.zeros(x.shape)
    for o, out, cells in _windows(x, kernel_size, stride, padding, 1, ceil_mode):
        if vals is None:
            vals = np.zeros(x.shape[:2] + tuple(out))
        # the window clipped to input + padding counts for count_include_pad
        padded = math.prod(
            min(o[i] * s[i] - p[i] + k[i], sp[i] + p[i]) - (o[i] * s[i] - p[i]) for i in range(nsp)
        )
        div = divisor_override or (padded if count_include_pad else len(cells))
        vals[(Ellipsis,) + o] = sum(x[(Ellipsis,) + c].astype(np.float64) for c in cells) / div
        if grad is not None:
            for c in cells:
                gx[(Ellipsis,) + c] += grad[(Ellipsis,) + o] / div
    return gx if grad is not None else vals.astype(x.dtype)


def _adaptive_cells(sp, out):
    for o in np.ndindex(*out):
        yield (
            o,
            _cells(
                [
                    range(o[i] * sp[i] // out[i], -(-(o[i] + 1) * sp[i] // out[i]))
                    for i in range(len(sp))
                ]
            ),
        )


def adaptive_ref(x, output_size, op, grad=None):
    """Adaptive avg ('avg') or max ('max', values and indices) pooling; with ``grad``
    and 'avg', the input gradient of sum(pool(x) * grad)."""
    sp = x.shape[2:]
    out = [n if o is None else o for n, o in zip(sp, ntuple(output_size, len(sp)))]
    vals = np.zeros(x.shape[:2] + tuple(out), x.dtype)
    idx = np.zeros(x.shape[:2] + tuple(out), np.int64)
    gx = np.zeros(x.shape)
    for o, cells in _adaptive_cells(sp, out):
        w = np.stack([x[(Ellipsis,) + c] for c in cells], -1)
        if op == "avg":
            vals[(Ellipsis,) + o] = w.astype(np.float64).mean(-1)
            if grad is not None:
                for c in cells:
                    gx[(Ellipsis,) + c] += grad[(Ellipsis,) + o] / len(cells)
        else:
            best = w.argmax(-1)
            vals[(Ellipsis,) + o] = np.take_along_axis(w, best[..., None], -1)[..., 0]
            idx[(Ellipsis,) + o] = np.array([np.ravel_multi_index(c, sp) for c in cells])[best]
    if grad is not None:
        return gx
    return vals if op == "avg" else (vals, idx)


def _distinct(shape, rng, dtype="float64"):
    """Values without ties (argmax is unique), spaced by >= 0.05."""
    n = math.prod(shape)
    return (
        ((rng.permutation(n) - n / 2) * 0.1 + rng.uniform(0, 0.05, n)).reshape(shape).astype(dtype)
    )


def _scatter_max_grad(shape, idx, g):
    gx = np.zeros(shape[:2] + (math.prod(shape[2:]),))
    n, c = shape[:2]
    flat_idx, flat_g = idx.reshape(n, c, -1), g.reshape(n, c, -1)
    for i in range(n):
        for j in range(c):
            np.add.at(gx[i, j], flat_idx[i, j], flat_g[i, j])
    return gx.reshape(shape)


# (input shape, kwargs) for max_pool
MAX2D = [
    ((2, 3, 6, 5), dict(kernel_size=2)),
    ((2, 3, 6, 5), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 2, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), dilation=(2, 1))),
    ((1, 2, 7, 6), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ((2, 1, 5, 5), dict(kernel_size=2, stride=2, ceil_mode=True)),
    ((1, 2, 4, 4), dict(kernel_size=(1, 3), stride=(3, 1))),
]
MAX1D = [
    ((2, 3, 9), dict(kernel_size=2)),
    ((2, 3, 9), dict(kernel_size=3, stride=2, padding=1, dilation=2)),
    ((1, 2, 8), dict(kernel_size=3, stride=2, ceil_mode=True)),
    ((1, 2, 8), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
]


def _ids(cases):
    return [f"{s}-{kw}" for s, kw in cases]


@pytest.mark.parametrize("shape,kw", MAX2D + MAX1D, ids=_ids(MAX2D + MAX1D))
def test_max_pool_values_and_indices(shape, kw, rng, device):
    fn = F.max_pool2d if len(shape) == 4 else F.max_pool1d
    for dtype in float_dtypes(device):
        x = _distinct(shape, rng, dtype)
        vals, idx = max_pool_ref(x, **kw)
        assert_close(fn(tensor(x, device=device), **kw), vals)
        out, ind = fn(tensor(x, device=device), **kw, return_indices=True)
        assert_close(out, vals)
        assert_close(ind, idx)


@pytest.mark.parametrize("shape,kw", MAX2D[1:4] + MAX1D[1:3], ids=_ids(MAX2D[1:4] + MAX1D[1:3]))
def test_max_pool_gradient_goes_to_the_argmax(shape, kw, rng, device):
    fn = F.max_pool2d if len(shape) == 4 else F.max_pool1d
    x = dleaf(_distinct(shape, rng), device)
    out = fn(x, **kw)
    g = rng.uniform(-1, 1, tuple(out.shape)).astype(wide(device))
    out.backward(tensor(g, device=device))
    _, idx = max_pool_ref(to_np(x), **kw)
    ac(x.grad, _scatter_max_grad(shape, idx, g.astype(np.float64)), device)


def test_max_pool_half_gradient(device):
    # All four overlapping windows route their gradient to the centre: float16
    # gradients add up in float32 and round once.
    x = tensor(
        np.array([[[[0.0, 0.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, 0.0]]]], np.float16), device=device
    )
    x.requires_grad_()
    out = F.max_pool2d(x, 2, stride=1)
    out.backward(rumus.full(tuple(out.shape), 0.1, dtype=rumus.float16, device=device))
    assert x.grad.dtype == rumus.float16
    want = np.zeros((1, 1, 3, 3), np.float16)
    want[0, 0, 1, 1] = np.float16(np.float32(np.float16(0.1)) * 4)
    np.testing.assert_array_equal(to_np(x.grad), want)


def test_max_pool_positional_and_unbatched(rng, device):
    x = _distinct((3, 7, 6), rng, wide(device))
    # (input, kernel_size, stride, padding, dilation, ceil_mode, return_indices)
    out, ind = F.max_pool2d(tensor(x, device=device), 3, 2, 1, 1, True, True)
    vals, idx = max_pool_ref(x[None], 3, 2, 1, 1, True)
    assert_close(out, vals[0])
    assert_close(ind, idx[0])
    x1 = _distinct((3, 7), rng, wide(device))
    assert_close(F.max_pool1d(tensor(x1, device=device), 2), max_pool_ref(x1[None], 2)[0][0])


def test_max_pool_noncontiguous(rng, device):
    x = _distinct((2, 3, 6, 5), rng, wide(device))
    for kind, t, e in noncontig(x, wide(device), device):
        assert_close(F.max_pool2d(t, 3, 2, 1), max_pool_ref(e, 3, 2, 1)[0]), kind


# (input shape, kwargs) for avg_pool
AVG2D = [
    ((2, 3, 6, 5), dict(kernel_size=2)),
    ((2, 3, 6, 5), dict(kernel_size=3, stride=2, padding=1)),
    ((2, 3, 6, 5), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ((1, 2, 7, 6), dict(kernel_size=(3, 2), stride=(2, 1), padding=(1, 1), ceil_mode=True)),
    (
        (1, 2, 7, 6),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    ),
    ((1, 2, 5, 5), dict(kernel_size=2, stride=2, ceil_mode=True, divisor_override=3)),
]
AVG1D = [
    ((2, 3, 9), dict(kernel_size=2)),
    ((2, 3, 9), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 2, 8), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False)),
    ((1, 2, 8), dict(kernel_size=4, stride=3, padding=2, ceil_mode=True)),
]


@pytest.mark.parametrize("shape,kw", AVG2D + AVG1D, ids=_ids(AVG2D + AVG1D))
def test_avg_pool_values_and_gradient(shape, kw, rng, device):
    fn = F.avg_pool2d if len(shape) == 4 else F.avg_pool1d
    for dtype in float_dtypes(device):
        x = rng.uniform(-1, 1, shape).astype(dtype)
        assert_close(
            fn(tensor(x, device=device), **kw),
            avg_pool_ref(x, **kw),
            **(F32 if dtype == "float32" else {}),
        )
    x = dleaf(rng.uniform(-1, 1, shape), device)
    out = fn(x, **kw)
    g = rng.uniform(-1, 1, tuple(out.shape)).astype(wide(device))
    out.backward(tensor(g, device=device))
    ac(x.grad, avg_pool_ref(to_np(x), **kw, grad=g.astype(np.float64)), device)


def test_avg_pool_positional_and_unbatched(rng, device):
    x = rng.uniform(-1, 1, (3, 7, 6)).astype(wide(device))
    # (input, kernel_size, stride, padding, ceil_mode, count_include_pad, divisor_override)
    assert_close(
        F.avg_pool2d(tensor(x, device=device), 3, 2, 1, True, False, None),
        avg_pool_ref(x[None], 3, 2, 1, True, False)[0],
        **tol(device),
    )
    assert_close(
        F.avg_pool2d(tensor(x, device=device), 2, None, 0, False, True, 7),
        avg_pool_ref(x[None], 2, divisor_override=7)[0],
        **tol(device),
    )
    x1 = rng.uniform(-1, 1, (3, 7)).astype(wide(device))
    assert_close(
        F.avg_pool1d(tensor(x1, device=device), 3, 1, 1, False, False),
        avg_pool_ref(x1[None], 3, 1, 1, count_include_pad=False)[0],
        **tol(device),
    )


# (input shape, output_size)
ADAPTIVE = [
    ((2, 3, 6, 5), (3, 2)),
    ((2, 3, 7, 5), (3, 4)),
    ((1, 2, 5, 5), 1),
    ((1, 2, 4, 3), (6, 5)),  # bigger than the input: windows overlap
    ((1, 2, 7, 6), (None, 4)),
    ((2, 3, 9), 4),
    ((2, 3, 5), 5),
    ((1, 2, 3), 7),
]


@pytest.mark.parametrize("shape,size", ADAPTIVE, ids=[f"{s}-{o}" for s, o in ADAPTIVE])
def test_adaptive_pools(shape, size, rng, device):
    two = len(shape) == 4
    avg, mx = (
        (F.adaptive_avg_pool2d, F.adaptive_max_pool2d)
        if two
        else (F.adaptive_avg_pool1d, F.adaptive_max_pool1d)
    )
    x = _distinct(shape, rng, wide(device))
    assert_close(avg(tensor(x, device=device), size), adaptive_ref(x, size, "avg"), **tol(device))
    vals, idx = adaptive_ref(x, size, "max")
    assert_close(mx(tensor(x, device=device), size), vals)
    out, ind = mx(tensor(x, device=device), size, return_indices=True)
    assert_close(out, vals)
    assert_close(ind, idx)
    xf = x.astype(np.float32)
    assert_close(avg(tensor(xf, device=device), size), adaptive_ref(xf, size, "avg"), **F32)
    # gradients: spread over the window for avg, to the argmax for max
    xl = dleaf(x, device)
    out = avg(xl, size)
    g = rng.uniform(-1, 1, tuple(out.shape)).astype(wide(device))
    out.backward(tensor(g, device=device))
    g = g.astype(np.float64)
    ac(xl.grad, adaptive_ref(x, size, "avg", grad=g), device)
    xl = dleaf(x, device)
    mx(xl, size).backward(tensor(g.astype(wide(device)), device=device))
    ac(xl.grad, _scatter_max_grad(shape, idx, g), device)


def test_adaptive_pools_unbatched_and_views(rng, device):
    fd, T = wide(device), lambda a: tensor(a, device=device)
    x = _distinct((3, 6, 5), rng, fd)
    assert_close(
        F.adaptive_avg_pool2d(T(x), (2, 3)), adaptive_ref(x[None], (2, 3), "avg")[0], **tol(device)
    )
    assert_close(F.adaptive_max_pool2d(T(x), 2), adaptive_ref(x[None], 2, "max")[0][0])
    x1 = _distinct((3, 7), rng, fd)
    assert_close(
        F.adaptive_avg_pool1d(T(x1), 3), adaptive_ref(x1[None], 3, "avg")[0], **tol(device)
    )
    xb = _distinct((2, 3, 6, 5), rng, fd)
    for kind, t, e in noncontig(xb, fd, device):
        (
            assert_close(
                F.adaptive_avg_pool2d(t, (4, 2)), adaptive_ref(e, (4, 2), "avg"), **tol(device)
            ),
            kind,
        )


def test_pool_empty_batch(device):
    x = rumus.zeros(0, 3, 6, 5).to(device)
    assert tuple(F.max_pool2d(x, 2).shape) == (0, 3, 3, 2)
    assert tuple(F.avg_pool2d(x, 2).shape) == (0, 3, 3, 2)
    assert tuple(F.adaptive_avg_pool2d(x, 2).shape) == (0, 3, 2, 2)


# ------------------------------------------------------------------ bad input


def _x(*shape):
    return rumus.zeros(*shape)


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: F.max_pool2d(_x(7, 6), 2), r"3D or 4D.*\[7, 6\]"),
        (lambda: F.max_pool2d(_x(2, 4, 7, 6), 2, padding=2), r"pad should be at most half"),
        (lambda: F.max_pool2d(_x(2, 4, 7, 6), 8), r"Output size is too small"),
        (lambda: F.max_pool2d(_x(2, 4, 7, 6), 2, stride=0), r"stride"),
        (lambda: F.max_pool2d(_x(2, 4, 7, 6), 2, dilation=0), r"dilation"),
        (lambda: F.max_pool1d(_x(2, 4, 7, 6), 2), r"2D or 3D.*\[2, 4, 7, 6\]"),
        (lambda: F.max_pool1d(_x(2, 4, 6), 8), r"[Oo]utput size"),
        (lambda: F.avg_pool2d(_x(2, 4, 7, 6), 2, padding=2), r"pad should be at most half"),
        (lambda: F.avg_pool2d(_x(2, 4, 7, 6), 8), r"Output size is too small"),
        (lambda: F.avg_pool2d(_x(2, 4, 7, 6), 2, divisor_override=0), r"divisor must be not zero"),
        (lambda: F.avg_pool1d(_x(2, 4, 7, 6), 2), r"\[2, 4, 7, 6\]"),
        (lambda: F.adaptive_avg_pool2d(_x(7, 6), 2), r"\[7, 6\]"),
        (lambda: F.adaptive_avg_pool2d(_x(2, 4, 7, 6), (2, 2, 2)), r"output_size must be 2"),
        (lambda: F.adaptive_max_pool1d(_x(2, 4, 7, 6), 2), r"\[2, 4, 7, 6\]"),
    ],
)
def test_pool_bad_input(call, match, device):
    with default_device(device), pytest.raises(RuntimeError, match=match):
        call()


# ------------------------------------------------------------- PyTorch cross-checks


def _torch_pool(torch, name, x, *args, device="cpu", **kw):
    """Values (and indices) and the input gradient of rumus vs PyTorch."""
    rng = np.random.default_rng(3)
    xr = rumus.tensor(x, requires_grad=True, device=device)
    xt = torch.tensor(x, requires_grad=True)
    out = getattr(F, name)(xr, *args, **kw)
    ref = getattr(torch.nn.functional, name)(xt, *args, **kw)
    if isinstance(ref, tuple):
        np.testing.assert_array_equal(to_np(out[1]), ref[1].numpy())
        out, ref = out[0], ref[0]
    tol = dict(rtol=1e-5, atol=1e-6) if x.dtype == np.float32 else dict(rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(to_np(out), ref.detach().numpy(), **tol)
    g = rng.uniform(-1, 1, tuple(ref.shape)).astype(x.dtype)
    out.backward(rumus.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    np.testing.assert_allclose(to_np(xr.grad), xt.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_pools_vs_torch(dtype, rng, device):
    if device == "gpu" and dtype == "float64":
        pytest.skip("float64 is not supported on the GPU (by design)")
    torch = pytest.importorskip("torch")
    for shape, kw in MAX2D + MAX1D:
        name = "max_pool2d" if len(shape) == 4 else "max_pool1d"
        _torch_pool(
            torch, name, _distinct(shape, rng, dtype), **kw, return_indices=True, device=device
        )
    for shape, kw in AVG2D + AVG1D:
        name = "avg_pool2d" if len(shape) == 4 else "avg_pool1d"
        _torch_pool(torch, name, rng.uniform(-1, 1, shape).astype(dtype), **kw, device=device)
    for shape, size in ADAPTIVE:
        dims = "2d" if len(shape) == 4 else "1d"
        x = _distinct(shape, rng, dtype)
        _torch_pool(torch, "adaptive_avg_pool" + dims, x, size, device=device)
        _torch_pool(torch, "adaptive_max_pool" + dims, x, size, return_indices=True, device=device)


def test_pool_random_configs_vs_torch(device):
    torch = pytest.importorskip("torch")
    fd = wide(device)
    rng = np.random.default_rng(11)
    for _ in range(30):
        k = tuple(int(v) for v in rng.integers(1, 4, 2))
        s = tuple(int(v) for v in rng.integers(1, 4, 2))
        d = tuple(int(v) for v in rng.integers(1, 3, 2))
        p = tuple(int(rng.integers(0, kk // 2 + 1)) for kk in k)
        size = tuple(int(v) + (kk - 1) * dd for v, kk, dd in zip(rng.integers(1, 6, 2), k, d))
        x = _distinct((2, 2) + size, rng, fd)
        ceil = bool(rng.integers(0, 2))
        _torch_pool(torch, "max_pool2d", x, k, s, p, d, ceil, True, device=device)
        _torch_pool(
            torch, "max_pool1d", x[:, :, 0], k[1], s[1], p[1], d[1], ceil, True, device=device
        )
        size = tuple(int(v) + kk for v, kk in zip(rng.integers(0, 5, 2), k))
        x = rng.uniform(-1, 1, (2, 2) + size).astype(fd)
        _torch_pool(torch, "avg_pool2d", x, k, s, p, ceil, bool(rng.integers(0, 2)), device=device)
        _torch_pool(
            torch,
            "avg_pool1d",
            x[:, :, 0],
            k[1],
            s[1],
            p[1],
            ceil,
            bool(rng.integers(0, 2)),
            device=device,
        )
        out = tuple(int(v) for v in rng.integers(1, 7, 2))
        _torch_pool(torch, "adaptive_avg_pool2d", x, out, device=device)
        _torch_pool(
            torch, "adaptive_max_pool2d", _distinct(x.shape, rng, fd), out, True, device=device
        )


@pytest.mark.parametrize("shape", [(3, 4, 6, 8), (2, 5, 2, 2), (1, 3, 7, 9), (64, 2, 8, 8)])
def test_max_pool2d_2x2_ties_and_nan_follow_row_major_order(shape, rng):
    """Integer values (many ties) and NaNs: each window's index is the first
    maximum in row-major order, or its last NaN, as PyTorch's CPU kernel; the
    exact 2x2 tiling takes its own two-pass kernel, 7x9 the general one."""
    x0 = rng.integers(0, 3, shape).astype(np.float32)
    x0[rng.random(shape) < 0.1] = np.nan
    v, i = F.max_pool2d(rumus.tensor(x0), 2, return_indices=True)
    n, c, h, w = shape
    oh, ow = h // 2, w // 2
    ev, ei = np.zeros((n, c, oh, ow), np.float32), np.zeros((n, c, oh, ow), np.int64)
    for a, b, y, z in np.ndindex(n, c, oh, ow):
        best, at = x0[a, b, 2 * y, 2 * z], (2 * y) * w + 2 * z
        for dy, dz in ((0, 1), (1, 0), (1, 1)):
            val = x0[a, b, 2 * y + dy, 2 * z + dz]
            if val > best or np.isnan(val):
                best, at = val, (2 * y + dy) * w + 2 * z + dz
        ev[a, b, y, z], ei[a, b, y, z] = best, at
    np.testing.assert_array_equal(i.numpy(), ei)
    np.testing.assert_array_equal(v.numpy(), ev)


@pytest.mark.parametrize("kw", [2, 3, 4, 5])
@pytest.mark.parametrize("shape", [(3, 4, 35), (1, 2, 7), (2, 9000)])
def test_max_pool1d_tiling_ties_and_nan(shape, kw, rng):
    """Windows that tile the rows (kernel = stride, the row a multiple of it) take
    the flat kernel: the first maximum or the last NaN, indices within each plane,
    across task blocks (9000 windows) and plane boundaries."""
    shape = (*shape[:-1], shape[-1] // kw * kw)
    x0 = rng.integers(0, 3, shape).astype(np.float32)
    x0[rng.random(shape) < 0.1] = np.nan
    v, i = F.max_pool1d(rumus.tensor(x0), kw, return_indices=True)
    rows = x0.reshape(-1, shape[-1] // kw, kw)
    ev, ei = rows[..., 0].copy(), np.zeros(rows.shape[:-1], np.int64)
    for j in range(1, kw):
        take = (rows[..., j] > ev) | np.isnan(rows[..., j])
        ev, ei = np.where(take, rows[..., j], ev), np.where(take, j, ei)
    ei += np.arange(rows.shape[1]) * kw
    out = (*shape[:-1], shape[-1] // kw)
    np.testing.assert_array_equal(i.numpy(), ei.reshape(out))
    np.testing.assert_array_equal(v.numpy(), ev.reshape(out))
