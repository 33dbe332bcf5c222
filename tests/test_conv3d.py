"""3-D convolutions (conv3d, conv_transpose3d, Conv3d, ConvTranspose3d): the 1-D/2-D im2col +
GEMM path run with a depth axis. Values against the N-d NumPy loop references of
test_conv.py (stride, padding ints/tuples/'same'/'valid', padding_mode, dilation, groups,
output_padding, bias, unbatched, non-contiguous), gradients against closed forms and by
gradcheck, PyTorch cross-checks when it is installed, bad input."""

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from conftest import assert_close, dleaf, float_dtypes, noncontig, ntuple, tensor, to_np, wide
from test_conv import (
    F32,
    _pads,
    _rand,
    ac,
    conv_ref,
    conv_transpose_ref,
    conv_weight_grad_ref,
    tol,
)

# (x shape, weight shape, kwargs)
CONV3D = [
    ((2, 3, 4, 5, 4), (4, 3, 3, 3, 3), {}),
    ((1, 2, 5, 4, 6), (3, 2, 2, 3, 2), dict(stride=2, padding=1)),
    (
        (1, 4, 5, 6, 5),
        (6, 2, 2, 3, 2),
        dict(stride=(2, 1, 2), padding=(1, 0, 1), dilation=(2, 1, 2), groups=2),
    ),
    ((2, 4, 4, 4, 4), (4, 1, 3, 3, 3), dict(padding=1, groups=4)),  # depthwise
    ((1, 2, 4, 5, 6), (3, 2, 2, 2, 3), dict(padding="same", dilation=(1, 2, 1))),
    ((1, 2, 4, 5, 6), (3, 2, 2, 2, 3), dict(padding="valid")),
    ((1, 2, 3, 3, 3), (2, 2, 3, 3, 3), dict(padding=(1, 0, 1))),  # kernel as big as the input
]

CONVT3D = [
    ((2, 3, 3, 2, 3), (3, 2, 2, 3, 2), {}),
    ((1, 3, 2, 3, 2), (3, 2, 3, 2, 3), dict(stride=2, padding=1, output_padding=1)),
    (
        (1, 4, 3, 2, 3),
        (4, 1, 2, 3, 2),
        dict(stride=(2, 1, 3), padding=(1, 0, 1), output_padding=(1, 0, 2), groups=2),
    ),
    ((1, 2, 2, 3, 2), (2, 3, 2, 2, 2), dict(dilation=(2, 1, 2))),
]


def _ids(cases):
    return [f"{x}-{w}-{kw}" for x, w, kw in cases]


def _T(a, device):
    return None if a is None else tensor(a, device=device)


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xs,ws,kw", CONV3D, ids=_ids(CONV3D))
def test_conv3d_values(xs, ws, kw, bias, rng, device):
    for dtype in float_dtypes(device):
        x, w = _rand(xs, rng, dtype), _rand(ws, rng, dtype)
        b = _rand((ws[0],), rng, dtype) if bias else None
        out = F.conv3d(_T(x, device), _T(w, device), _T(b, device), **kw)
        assert_close(out, conv_ref(x, w, b, **kw), **(F32 if dtype == "float32" else {}))


@pytest.mark.parametrize("xs,ws,kw", CONVT3D, ids=_ids(CONVT3D))
def test_conv_transpose3d_values(xs, ws, kw, rng, device):
    for dtype in float_dtypes(device):
        x, w = _rand(xs, rng, dtype), _rand(ws, rng, dtype)
        b = _rand((ws[1] * kw.get("groups", 1),), rng, dtype)
        out = F.conv_transpose3d(_T(x, device), _T(w, device), _T(b, device), **kw)
        assert_close(out, conv_transpose_ref(x, w, b, **kw), **(F32 if dtype == "float32" else {}))


def test_conv3d_unbatched_positional_and_noncontiguous(rng, device):
    fd = wide(device)
    x, w, b = _rand((3, 4, 5, 4), rng, fd), _rand((2, 3, 2, 3, 2), rng, fd), _rand((2,), rng, fd)
    T = lambda a: _T(a, device)  # noqa: E731
    exp = conv_ref(x[None], w, b, stride=(1, 2, 1), padding=1)[0]
    assert_close(F.conv3d(T(x), T(w), T(b), (1, 2, 1), 1), exp, **tol(device))
    assert_close(F.conv3d(T(x), T(w), T(b), [1, 2, 1], [1, 1, 1], [1, 1, 1], 1), exp, **tol(device))
    xb = _rand((2, 4, 4, 5, 3), rng, fd)
    wg = _rand((4, 2, 3, 2, 2), rng, fd)
    for kind, xt, xe in noncontig(xb, fd, device):
        out = F.conv3d(xt, T(wg), padding=1, groups=2)
        assert_close(out, conv_ref(xe, wg, padding=1, groups=2), **tol(device)), kind
    # unbatched transposed convolution
    xt_ = _rand((3, 2, 3, 2), rng, fd)
    wt = _rand((3, 2, 2, 2, 2), rng, fd)
    assert_close(
        F.conv_transpose3d(T(xt_), T(wt), stride=2),
        conv_transpose_ref(xt_[None], wt, stride=2)[0],
        **tol(device),
    )


def test_conv3d_empty_batch(rng, device):
    fd = wide(device)
    w = tensor(_rand((4, 3, 3, 3, 3), rng, fd), device=device)
    out = F.conv3d(tensor(np.zeros((0, 3, 5, 5, 5), fd), device=device), w)
    assert tuple(out.shape) == (0, 4, 3, 3, 3)


@pytest.mark.parametrize("xs,ws,kw", CONV3D[:5], ids=_ids(CONV3D[:5]))
def test_conv3d_gradients_closed_form(xs, ws, kw, rng, device):
    fd = wide(device)
    x, w, b = (
        dleaf(_rand(xs, rng), device),
        dleaf(_rand(ws, rng), device),
        dleaf(_rand((ws[0],), rng), device),
    )
    out = F.conv3d(x, w, b, **kw)
    g = _rand(tuple(out.shape), rng, fd)
    out.backward(tensor(g, device=device))
    xv, wv, g = to_np(x).astype(np.float64), to_np(w).astype(np.float64), g.astype(np.float64)
    ac(w.grad, conv_weight_grad_ref(xv, g, ws, **kw), device)
    ac(b.grad, g.sum(axis=(0, 2, 3, 4)), device)
    k = ws[2:]
    stride, dilation = ntuple(kw.get("stride", 1), 3), ntuple(kw.get("dilation", 1), 3)
    pads = _pads(kw.get("padding", 0), k, dilation)
    full = conv_transpose_ref(g, wv, stride=stride, dilation=dilation, groups=kw.get("groups", 1))
    grad_xp = np.zeros(xs[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(xs[2:], pads)))
    grad_xp[(Ellipsis,) + tuple(slice(0, f) for f in full.shape[2:])] = full
    crop = tuple(slice(lo, lo + n) for n, (lo, hi) in zip(xs[2:], pads))
    ac(x.grad, grad_xp[(Ellipsis,) + crop], device)


def test_conv3d_gradcheck():
    rng = np.random.default_rng(0)

    def leaf(*shape):
        return rumus.tensor(rng.uniform(-1, 1, shape), requires_grad=True)

    x, w, b = leaf(1, 2, 3, 4, 3), leaf(4, 1, 2, 2, 2), leaf(4)
    assert rumus.autograd.gradcheck(
        lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2), (x, w, b)
    )
    assert rumus.autograd.gradgradcheck(
        lambda x, w: F.conv3d(x, w, padding="same", groups=2), (x, w)
    )
    xt, wt, bt = leaf(1, 2, 2, 3, 2), leaf(2, 2, 2, 2, 3), leaf(2)
    assert rumus.autograd.gradcheck(
        lambda x, w, b: F.conv_transpose3d(x, w, b, stride=2, padding=1, output_padding=1),
        (xt, wt, bt),
    )


# ------------------------------------------------------------------ modules


@pytest.mark.parametrize("mode", ["zeros", "reflect", "replicate", "circular"])
def test_conv3d_module_padding_modes(mode, rng, device):
    fd = wide(device)
    m = nn.Conv3d(2, 3, (3, 2, 3), padding=(1, 1, 2), padding_mode=mode, dtype=rumus.float64)
    m = m.to(rumus.float32) if device != "cpu" else m
    m = m.to(device)
    x = _rand((2, 2, 4, 5, 5), rng, fd)
    w, b = to_np(m.weight).astype(np.float64), to_np(m.bias).astype(np.float64)
    pad = {"zeros": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[mode]
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0), (1, 1), (1, 1), (2, 2)], mode=pad)
    assert_close(m(tensor(x, device=device)), conv_ref(xp, w, b).astype(fd), **tol(device))


def test_conv3d_module_same_and_repr(rng):
    m = nn.Conv3d(2, 4, 4, padding="same", bias=False, dtype=rumus.float64)
    assert m.weight.shape == (4, 2, 4, 4, 4) and m.bias is None
    x = _rand((1, 2, 5, 4, 6), rng)
    # even kernel: PyTorch pads the odd element on the right
    assert_close(m(tensor(x)), conv_ref(x, to_np(m.weight), padding="same"))
    assert (
        repr(nn.Conv3d(2, 4, 3, stride=2))
        == "Conv3d(2, 4, kernel_size=(3, 3, 3), stride=(2, 2, 2))"
    )
    with pytest.raises(ValueError, match="strided"):
        nn.Conv3d(2, 4, 3, stride=2, padding="same")
    with pytest.raises(ValueError, match="divisible by groups"):
        nn.Conv3d(3, 4, 3, groups=2)


def test_conv_transpose3d_module_output_size(rng):
    m = nn.ConvTranspose3d(2, 3, 3, stride=2, padding=1, dtype=rumus.float64)
    x = tensor(_rand((1, 2, 3, 4, 2), rng))
    assert m(x).shape == (1, 3, 5, 7, 3)
    out = m(x, output_size=(6, 8, 4))
    assert out.shape == (1, 3, 6, 8, 4)
    exp = conv_transpose_ref(
        to_np(x), to_np(m.weight), to_np(m.bias), stride=2, padding=1, output_padding=1
    )
    assert_close(out, exp)
    with pytest.raises(ValueError, match="output size"):
        m(x, output_size=(9, 8, 4))
    with pytest.raises(ValueError, match="zeros"):
        nn.ConvTranspose3d(2, 3, 3, padding_mode="reflect")


def test_conv3d_module_trains(rng):
    m = nn.Conv3d(2, 4, 3, padding=1)
    x = tensor(_rand((2, 2, 4, 4, 4), rng, "float32"))
    m(x).square().mean().backward()
    assert m.weight.grad.shape == m.weight.shape and m.bias.grad.shape == (4,)
    assert float(m.weight.grad.abs().sum()) > 0


# ------------------------------------------------------------------ PyTorch


def test_conv3d_matches_torch(rng):
    torch = pytest.importorskip("torch")
    x, w, b = _rand((2, 4, 5, 4, 6), rng), _rand((6, 2, 3, 2, 3), rng), _rand((6,), rng)
    kw = dict(stride=(1, 2, 1), padding=(1, 0, 2), dilation=(1, 1, 2), groups=2)
    exp = torch.nn.functional.conv3d(
        torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), **kw
    )
    assert_close(F.conv3d(tensor(x), tensor(w), tensor(b), **kw), exp.numpy())
    wt = _rand((4, 3, 2, 3, 2), rng)
    kt = dict(stride=2, padding=1, output_padding=(1, 0, 1), groups=2, dilation=(1, 2, 1))
    exp = torch.nn.functional.conv_transpose3d(torch.from_numpy(x), torch.from_numpy(wt), **kt)
    assert_close(F.conv_transpose3d(tensor(x), tensor(wt), **kt), exp.numpy())


# ------------------------------------------------------------------ bad input


def _x(*shape):
    return rumus.zeros(*shape)


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda: F.conv3d(_x(4, 7, 6), _x(6, 2, 3, 2, 2)),
            r"4D \(unbatched\) or 5D.*\[4, 7, 6\]",
        ),
        (lambda: F.conv3d(_x(1, 2, 4, 4, 7, 6), _x(6, 2, 3, 2, 2)), r"\[1, 2, 4, 4, 7, 6\]"),
        (lambda: F.conv3d(_x(2, 4, 7, 6, 5), _x(6, 2, 3, 2)), r"5-dimensional weight"),
        (
            lambda: F.conv3d(_x(2, 4, 7, 6, 5), _x(6, 2, 3, 2, 2)),
            r"weight of size \[6, 2, 3, 2, 2\].*input\[2, 4, 7, 6, 5\].*2 channels",
        ),
        (
            lambda: F.conv3d(_x(1, 2, 2, 5, 5), _x(3, 2, 3, 3, 3)),
            r"\(2 x 5 x 5\). Kernel size: \(3 x 3 x 3\)",
        ),
        (
            lambda: F.conv3d(_x(1, 2, 4, 4, 4), _x(3, 2, 2, 2, 2), stride=(1, 0, 1)),
            "non-positive stride",
        ),
        (lambda: F.conv3d(_x(1, 2, 4, 4, 4), _x(3, 2, 2, 2, 2), padding=-1), "negative padding"),
        (lambda: F.conv3d(_x(1, 2, 4, 4, 4), _x(3, 2, 2, 2, 2), stride=(1, 1)), "stride"),
        (
            lambda: F.conv3d(_x(1, 2, 4, 4, 4), _x(3, 2, 2, 2, 2), stride=2, padding="same"),
            "strided",
        ),
        (lambda: F.conv3d(_x(1, 2, 4, 4, 4), _x(3, 2, 2, 2, 2), _x(2)), r"bias.*3 elements"),
        (
            lambda: F.conv_transpose3d(
                _x(1, 2, 3, 3, 3), _x(2, 2, 2, 2, 2), stride=2, output_padding=2
            ),
            "output padding must be smaller",
        ),
        (
            lambda: F.conv_transpose3d(_x(1, 3, 3, 3, 3), _x(2, 2, 2, 2, 2)),
            r"weight of size \[2, 2, 2, 2, 2\].*input\[1, 3, 3, 3, 3\]",
        ),
        (
            lambda: F.conv_transpose3d(_x(1, 2, 1, 1, 1), _x(2, 2, 2, 2, 2), padding=2),
            "output size",
        ),
    ],
)
def test_conv3d_bad_input(call, match):
    with pytest.raises(RuntimeError, match=match):
        call()


def test_conv3d_bad_types():
    with pytest.raises(RuntimeError, match="float64|[Dd]ouble"):
        F.conv3d(_x(1, 2, 4, 4, 4).double(), _x(3, 2, 2, 2, 2))
    with pytest.raises(RuntimeError, match="floating point"):
        F.conv3d(rumus.zeros(1, 2, 4, 4, 4, dtype=rumus.int64), _x(3, 2, 2, 2, 2).long())
    with pytest.raises(ValueError, match="string"):
        F.conv_transpose3d(_x(1, 2, 3, 3, 3), _x(2, 2, 2, 2, 2), padding="same")
