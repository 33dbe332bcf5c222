"""3-D pooling (max_pool3d, avg_pool3d, adaptive_avg_pool3d, adaptive_max_pool3d), max
unpooling (max_unpool1d/2d/3d) and their modules, BatchNorm3d / InstanceNorm3d, and
interpolate(mode='area') on 5-D input: values against the N-d NumPy references of
test_pool.py, indices, gradients (closed forms and gradcheck), ties and NaN as PyTorch,
PyTorch cross-checks when it is installed, bad input."""

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from conftest import assert_close, dleaf, float_dtypes, tensor, to_np, wide
from test_pool import (
    F32,
    _distinct,
    _scatter_max_grad,
    ac,
    adaptive_ref,
    avg_pool_ref,
    max_pool_ref,
    tol,
)

MAX3D = [
    ((2, 2, 4, 5, 4), dict(kernel_size=2)),
    ((1, 2, 5, 6, 5), dict(kernel_size=3, stride=2, padding=1)),
    (
        (1, 2, 7, 5, 6),
        dict(kernel_size=(3, 2, 2), stride=(2, 1, 2), padding=(1, 1, 0), dilation=(2, 1, 2)),
    ),
    ((1, 1, 5, 6, 7), dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)),
    ((1, 2, 3, 4, 5), dict(kernel_size=(1, 3, 2), stride=(3, 1, 2))),
]

AVG3D = [
    ((2, 2, 4, 5, 4), dict(kernel_size=2)),
    ((1, 2, 5, 6, 5), dict(kernel_size=3, stride=2, padding=1)),
    ((1, 2, 5, 6, 5), dict(kernel_size=3, stride=2, padding=1, count_include_pad=False)),
    ((1, 1, 5, 6, 7), dict(kernel_size=(3, 2, 3), stride=2, padding=1, ceil_mode=True)),
    (
        (1, 1, 5, 6, 7),
        dict(kernel_size=3, stride=2, padding=1, ceil_mode=True, count_include_pad=False),
    ),
    ((1, 2, 4, 4, 5), dict(kernel_size=(2, 3, 2), padding=(1, 1, 0), divisor_override=5)),
]


def _ids(cases):
    return [f"{s}-{kw}" for s, kw in cases]


@pytest.mark.parametrize("shape,kw", MAX3D, ids=_ids(MAX3D))
def test_max_pool3d_values_indices_and_gradient(shape, kw, rng, device):
    for dtype in float_dtypes(device):
        x = _distinct(shape, rng, dtype)
        vals, idx = F.max_pool3d(tensor(x, device=device), return_indices=True, **kw)
        ev, ei = max_pool_ref(x, **kw)
        assert_close(vals, ev)
        assert idx.dtype == rumus.int64
        np.testing.assert_array_equal(to_np(idx), ei)
        assert_close(F.max_pool3d(tensor(x, device=device), **kw), ev)
    x = dleaf(_distinct(shape, rng), device)
    out = F.max_pool3d(x, **kw)
    g = rng.uniform(-1, 1, tuple(out.shape))
    out.backward(tensor(g.astype(wide(device)), device=device))
    _, ei = max_pool_ref(to_np(x).astype(np.float64), **kw)
    ac(x.grad, _scatter_max_grad(shape, ei, g), device)


def test_max_pool3d_ties_and_nan(device):
    # ties: the first maximum in (d, h, w) order; NaN wins (the last NaN in scan order)
    x = np.zeros((1, 1, 2, 2, 2), wide(device))
    x[0, 0, 1, 0, 0] = 1.0
    x[0, 0, 1, 1, 1] = 1.0
    _, idx = F.max_pool3d(tensor(x, device=device), 2, return_indices=True)
    assert int(idx.reshape(-1)[0]) == 4
    x[0, 0, 0, 1, 1] = np.nan
    x[0, 0, 1, 0, 1] = np.nan
    v, idx = F.max_pool3d(tensor(x, device=device), 2, return_indices=True)
    assert np.isnan(to_np(v)).all() and int(idx.reshape(-1)[0]) == 5


@pytest.mark.parametrize("shape,kw", AVG3D, ids=_ids(AVG3D))
def test_avg_pool3d_values_and_gradient(shape, kw, rng, device):
    for dtype in float_dtypes(device):
        x = rng.uniform(-1, 1, shape).astype(dtype)
        out = F.avg_pool3d(tensor(x, device=device), **kw)
        assert_close(out, avg_pool_ref(x, **kw), **(F32 if dtype == "float32" else {}))
    x = dleaf(rng.uniform(-1, 1, shape), device)
    out = F.avg_pool3d(x, **kw)
    g = rng.uniform(-1, 1, tuple(out.shape))
    out.backward(tensor(g.astype(wide(device)), device=device))
    ac(x.grad, avg_pool_ref(to_np(x).astype(np.float64), grad=g, **kw), device)


@pytest.mark.parametrize(
    "shape,size",
    [((2, 2, 5, 6, 7), (2, 3, 4)), ((1, 2, 4, 4, 4), 3), ((1, 1, 3, 5, 4), (None, 2, 7))],
)
def test_adaptive_pools_3d(shape, size, rng, device):
    fd = wide(device)
    x = _distinct(shape, rng, fd)
    assert_close(
        F.adaptive_avg_pool3d(tensor(x, device=device), size),
        adaptive_ref(x, size, "avg"),
        **tol(device),
    )
    vals, idx = F.adaptive_max_pool3d(tensor(x, device=device), size, return_indices=True)
    ev, ei = adaptive_ref(x, size, "max")
    assert_close(vals, ev)
    np.testing.assert_array_equal(to_np(idx), ei)
    xl = dleaf(x.astype(np.float64), device)
    out = F.adaptive_avg_pool3d(xl, size)
    g = rng.uniform(-1, 1, tuple(out.shape))
    out.backward(tensor(g.astype(fd), device=device))
    ac(xl.grad, adaptive_ref(x.astype(np.float64), size, "avg", grad=g), device)


def test_pool3d_unbatched_modules_and_empty(rng, device):
    fd = wide(device)
    x = _distinct((2, 4, 5, 4), rng, fd)
    t = tensor(x, device=device)
    assert_close(nn.MaxPool3d(2)(t), max_pool_ref(x[None], 2)[0][0])
    assert_close(nn.AvgPool3d(2, 1)(t), avg_pool_ref(x[None], 2, 1)[0], **tol(device))
    assert_close(
        nn.AdaptiveAvgPool3d((2, 2, 2))(t), adaptive_ref(x[None], 2, "avg")[0], **tol(device)
    )
    v, i = nn.AdaptiveMaxPool3d(2, return_indices=True)(t)
    np.testing.assert_array_equal(to_np(i), adaptive_ref(x[None], 2, "max")[1][0])
    e = tensor(np.zeros((0, 2, 4, 4, 4), fd), device=device)
    assert F.max_pool3d(e, 2).shape == (0, 2, 2, 2, 2)
    assert F.avg_pool3d(e, 2).shape == (0, 2, 2, 2, 2)
    assert F.adaptive_avg_pool3d(tensor(x, device=device), 0).shape == (2, 0, 0, 0)
    assert repr(nn.MaxPool3d(2)) == (
        "MaxPool3d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)"
    )


def test_pool3d_gradcheck():
    rng = np.random.default_rng(1)
    x = rumus.tensor(_distinct((1, 2, 4, 3, 5), rng), requires_grad=True)
    gc = rumus.autograd.gradcheck
    assert gc(lambda x: F.max_pool3d(x, 2, stride=1, padding=1), (x,))
    assert gc(lambda x: F.avg_pool3d(x, (2, 2, 3), 2, 1, True, False), (x,))
    assert gc(lambda x: F.avg_pool3d(x, 2, divisor_override=3), (x,))
    assert gc(lambda x: F.adaptive_avg_pool3d(x, (3, 2, 2)), (x,))
    assert gc(lambda x: F.adaptive_max_pool3d(x, (2, 2, 3)), (x,))
    assert rumus.autograd.gradgradcheck(lambda x: F.avg_pool3d(x, 2, 1), (x,))


# ------------------------------------------------------------------ max_unpool


@pytest.mark.parametrize("nsp", [1, 2, 3])
def test_max_unpool_inverts_max_pool(nsp, rng, device):
    fd = wide(device)
    shape = (2, 3) + (5, 4, 6)[:nsp]
    pool = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[nsp - 1]
    unpool = (F.max_unpool1d, F.max_unpool2d, F.max_unpool3d)[nsp - 1]
    x = tensor(_distinct(shape, rng, fd), device=device)
    v, i = pool(x, 2, return_indices=True)
    out = unpool(v, i, 2)
    # default size (in - 1)·stride + kernel drops the odd last element
    sp = tuple((n // 2) * 2 for n in shape[2:])
    assert out.shape == shape[:2] + sp
    exp = np.zeros(shape[:2] + (int(np.prod(sp)),), fd)
    vv, ii = to_np(v).reshape(2, 3, -1), to_np(i).reshape(2, 3, -1)
    for a in range(2):
        for b in range(3):
            exp[a, b, ii[a, b]] = vv[a, b]
    assert_close(out, exp.reshape(out.shape))
    # output_size restores the odd element; with the batch dims too
    full = unpool(v, i, 2, output_size=shape)
    assert full.shape == shape
    mask = to_np(full) != 0
    assert_close(full, np.where(mask, to_np(x), 0))
    # module form, unbatched input
    mod = (nn.MaxUnpool1d, nn.MaxUnpool2d, nn.MaxUnpool3d)[nsp - 1](2)
    assert_close(mod(v[0], i[0], output_size=shape[2:]), to_np(full)[0])


def test_max_unpool_gradient():
    rng = np.random.default_rng(2)
    x = rumus.tensor(_distinct((1, 2, 4, 4), rng))
    v, i = F.max_pool2d(x, 2, return_indices=True)
    v = v.detach().requires_grad_()
    assert rumus.autograd.gradcheck(lambda v: F.max_unpool2d(v, i, 2), (v,))


def test_max_unpool_bad_input():
    v, i = F.max_pool2d(rumus.rand(1, 1, 4, 4), 2, return_indices=True)
    with pytest.raises(RuntimeError, match="same as that of the input"):
        F.max_unpool2d(v, i[..., :1], 2)
    with pytest.raises(RuntimeError, match="invalid max index"):
        F.max_unpool2d(v, i + 100, 2)
    with pytest.raises(RuntimeError, match="int64"):
        F.max_unpool2d(v, i.int(), 2)
    with pytest.raises(ValueError, match="invalid output_size"):
        F.max_unpool2d(v, i, 2, output_size=(9, 4))
    with pytest.raises(ValueError, match="2 or 4 elements"):
        F.max_unpool2d(v, i, 2, output_size=(4, 4, 4))
    with pytest.raises(RuntimeError, match="3D or 4D"):
        F.max_unpool2d(v[0, 0], i[0, 0], 2)


# ------------------------------------------------------------------ norms, interpolate


def test_batch_norm3d_and_instance_norm3d(rng, device):
    fd = wide(device)
    x = rng.uniform(-1, 1, (2, 3, 3, 4, 2)).astype(fd)
    bn = nn.BatchNorm3d(3).to(device)
    mean, var = x.mean((0, 2, 3, 4), keepdims=True), x.var((0, 2, 3, 4), keepdims=True)
    assert_close(bn(tensor(x, device=device)), (x - mean) / np.sqrt(var + 1e-5), **tol(device))
    with pytest.raises(ValueError, match="5D"):
        bn(tensor(x[0], device=device))
    inn = nn.InstanceNorm3d(3, affine=True).to(device)
    mean, var = x.mean((2, 3, 4), keepdims=True), x.var((2, 3, 4), keepdims=True)
    exp = (x - mean) / np.sqrt(var + 1e-5)
    assert_close(inn(tensor(x, device=device)), exp, **tol(device))
    assert_close(inn(tensor(x[0], device=device)), exp[0], **tol(device))
    with pytest.raises(ValueError, match="4D or 5D"):
        inn(tensor(x[0, 0], device=device))


def test_interpolate_area_5d(rng, device):
    fd = wide(device)
    x = rng.uniform(-1, 1, (1, 2, 6, 4, 5)).astype(fd)
    out = F.interpolate(tensor(x, device=device), size=(3, 2, 2), mode="area")
    assert_close(out, adaptive_ref(x, (3, 2, 2), "avg"), **tol(device))
    up = nn.Upsample(scale_factor=0.5, mode="area")(tensor(x, device=device))
    assert up.shape == (1, 2, 3, 2, 2)


# ------------------------------------------------------------------ PyTorch, bad input


def test_pool3d_matches_torch(rng):
    torch = pytest.importorskip("torch")
    x = rng.uniform(-1, 1, (2, 2, 5, 6, 7))
    tx = torch.from_numpy(x)
    kw = dict(kernel_size=3, stride=2, padding=1, ceil_mode=True)
    ev, ei = torch.nn.functional.max_pool3d(tx, return_indices=True, **kw)
    v, i = F.max_pool3d(tensor(x), return_indices=True, **kw)
    assert_close(v, ev.numpy())
    np.testing.assert_array_equal(to_np(i), ei.numpy())
    ka = dict(kernel_size=(3, 2, 3), stride=2, padding=1, ceil_mode=True, count_include_pad=False)
    assert_close(F.avg_pool3d(tensor(x), **ka), torch.nn.functional.avg_pool3d(tx, **ka).numpy())
    assert_close(
        F.adaptive_avg_pool3d(tensor(x), (2, 4, 3)),
        torch.nn.functional.adaptive_avg_pool3d(tx, (2, 4, 3)).numpy(),
    )
    assert_close(
        F.max_unpool3d(v, i, 3, 2, 1),
        torch.nn.functional.max_unpool3d(ev, ei, 3, 2, 1).numpy(),
    )


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: F.max_pool3d(rumus.zeros(2, 4, 4), 2), r"4D or 5D.*\[2, 4, 4\]"),
        (lambda: F.avg_pool3d(rumus.zeros(1, 1, 2, 4, 4, 4), 2), r"4D or 5D"),
        (lambda: F.max_pool3d(rumus.zeros(1, 1, 4, 4, 4), 0), "non-positive kernel_size"),
        (lambda: F.max_pool3d(rumus.zeros(1, 1, 4, 4, 4), 2, padding=-1), "negative padding"),
        (lambda: F.max_pool3d(rumus.zeros(1, 1, 4, 4, 4), (2, 2)), "tuple of 3 ints"),
        (lambda: F.max_pool3d(rumus.zeros(1, 1, 4, 4, 4), 2, padding=2), "at most half"),
        (lambda: F.max_pool3d(rumus.zeros(1, 1, 1, 4, 4), 2), "Output size is too small"),
        (lambda: F.avg_pool3d(rumus.zeros(1, 1, 4, 4, 4), 2, divisor_override=0), "not zero"),
        (lambda: F.avg_pool3d(rumus.zeros(1, 0, 4, 4, 4), 2), "positive length"),
        (
            lambda: F.max_pool3d(rumus.zeros(1, 1, 4, 4, 4, dtype=rumus.int64), 2),
            "not implemented for 'int64'",
        ),
        (lambda: F.adaptive_avg_pool3d(rumus.zeros(1, 1, 4, 4, 4), -1), "greater than or equal"),
        (
            lambda: F.adaptive_max_pool3d(rumus.zeros(1, 1, 4, 4, 4), (2, 2)),
            "output_size must be 3",
        ),
    ],
)
def test_pool3d_bad_input(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()
