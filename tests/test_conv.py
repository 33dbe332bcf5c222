"""Convolutions (conv1d, conv2d, conv_transpose1d, conv_transpose2d: Rust kernels)
against NumPy loop references: stride, padding (ints, tuples, 'same', 'valid'),
dilation, groups, bias, unbatched and non-contiguous inputs, float32/float64;
gradients against closed forms (the input gradient of a convolution is the
transposed convolution of the output gradient, and back); PyTorch cross-checks
when it is installed; bad input."""

import warnings

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

F32 = dict(rtol=1e-5, atol=1e-5)


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


def _taps(k, stride, dilation, out_sp):
    """For each kernel tap: the tap index and the slices of the padded input it reads."""
    for tap in np.ndindex(*k):
        yield (
            tap,
            tuple(
                slice(t * d, t * d + s * (o - 1) + 1, s)
                for t, d, s, o in zip(tap, dilation, stride, out_sp)
            ),
        )


def _pads(padding, k, dilation):
    if padding == "valid":
        return [(0, 0)] * len(k)
    if padding == "same":  # PyTorch puts the odd element on the right
        return [(d * (kk - 1) // 2, d * (kk - 1) - d * (kk - 1) // 2) for kk, d in zip(k, dilation)]
    return [(p, p) for p in ntuple(padding, len(k))]


def conv_ref(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """Cross-correlation by a loop over the kernel taps (batched input)."""
    nsp = x.ndim - 2
    k = w.shape[2:]
    stride, dilation = ntuple(stride, nsp), ntuple(dilation, nsp)
    xp = np.pad(x.astype(np.float64), [(0, 0), (0, 0)] + _pads(padding, k, dilation))
    out_sp = [(xp.shape[2 + i] - dilation[i] * (k[i] - 1) - 1) // stride[i] + 1 for i in range(nsp)]
    cin, cout = x.shape[1] // groups, w.shape[0] // groups
    out = np.zeros((x.shape[0], w.shape[0], *out_sp))
    for g in range(groups):
        xs, ws = xp[:, g * cin : (g + 1) * cin], w[g * cout : (g + 1) * cout].astype(np.float64)
        for tap, sl in _taps(k, stride, dilation, out_sp):
            out[:, g * cout : (g + 1) * cout] += np.einsum(
                "nc...,oc->no...", xs[(Ellipsis,) + sl], ws[(Ellipsis,) + tap]
            )
    if b is not None:
        out += b.reshape((1, -1) + (1,) * nsp)
    return out.astype(x.dtype)


def conv_weight_grad_ref(x, g, wshape, stride=1, padding=0, dilation=1, groups=1):
    """d(sum(conv(x, w) * g)) / dw."""
    nsp = x.ndim - 2
    k = wshape[2:]
    stride, dilation = ntuple(stride, nsp), ntuple(dilation, nsp)
    xp = np.pad(x, [(0, 0), (0, 0)] + _pads(padding, k, dilation))
    cin, cout = x.shape[1] // groups, wshape[0] // groups
    dw = np.zeros(wshape)
    for gr in range(groups):
        xs, gs = xp[:, gr * cin : (gr + 1) * cin], g[:, gr * cout : (gr + 1) * cout]
        for tap, sl in _taps(k, stride, dilation, g.shape[2:]):
            dw[(slice(gr * cout, (gr + 1) * cout), slice(None)) + tap] = np.einsum(
                "ncp,nop->oc",
                xs[(Ellipsis,) + sl].reshape(x.shape[0], cin, -1),
                gs.reshape(x.shape[0], cout, -1),
            )
    return dw


def conv_transpose_ref(x, w, b=None, stride=1, padding=0, output_padding=0, groups=1, dilation=1):
    """Transposed convolution by scattering every input position through every tap."""
    nsp = x.ndim - 2
    k = w.shape[2:]
    stride, padding, dilation = ntuple(stride, nsp), ntuple(padding, nsp), ntuple(dilation, nsp)
    output_padding = ntuple(output_padding, nsp)
    in_sp = x.shape[2:]
    full_sp = [
        (i - 1) * s + d * (kk - 1) + 1 + op
        for i, s, d, kk, op in zip(in_sp, stride, dilation, k, output_padding)
    ]
    cin, cout = x.shape[1] // groups, w.shape[1]
    full = np.zeros((x.shape[0], cout * groups, *full_sp))
    for g in range(groups):
        xs, ws = (
            x[:, g * cin : (g + 1) * cin].astype(np.float64),
            w[g * cin : (g + 1) * cin].astype(np.float64),
        )
        for tap, sl in _taps(k, stride, dilation, in_sp):
            contrib = np.einsum("nc...,co->no...", xs, ws[(Ellipsis,) + tap])
            full[(slice(None), slice(g * cout, (g + 1) * cout)) + sl] += contrib
    out = full[(Ellipsis,) + tuple(slice(p, f - p) for p, f in zip(padding, full_sp))]
    if b is not None:
        out = out + b.reshape((1, -1) + (1,) * nsp)
    return np.ascontiguousarray(out).astype(x.dtype)


def _rand(shape, rng, dtype="float64"):
    return rng.uniform(-1, 1, shape).astype(dtype)


# (x shape, weight shape, kwargs)
CONV2D = [
    ((2, 3, 6, 5), (4, 3, 3, 3), {}),
    ((2, 3, 6, 5), (4, 3, 3, 2), dict(stride=2, padding=1)),
    ((1, 4, 7, 6), (6, 2, 3, 2), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2)),
    ((2, 4, 5, 5), (4, 1, 3, 3), dict(padding=1, groups=4)),  # depthwise
    ((2, 2, 5, 6), (3, 2, 2, 3), dict(padding="same", dilation=(2, 1))),
    ((2, 2, 5, 6), (3, 2, 2, 3), dict(padding="valid")),
    ((1, 2, 4, 4), (3, 2, 1, 1), dict(stride=3)),
    ((2, 2, 3, 3), (2, 2, 3, 3), dict(padding=(0, 1))),  # kernel as big as the input
]
CONV1D = [
    ((2, 3, 9), (4, 3, 3), {}),
    ((2, 4, 9), (6, 2, 3), dict(stride=2, padding=2, dilation=2, groups=2)),
    ((1, 2, 8), (3, 2, 4), dict(padding="same")),
    ((1, 2, 8), (3, 2, 4), dict(padding="same", dilation=2)),
    ((3, 1, 5), (2, 1, 5), dict(padding="valid")),
]


def _ids(cases):
    return [f"{x}-{w}-{kw}" for x, w, kw in cases]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xs,ws,kw", CONV2D, ids=_ids(CONV2D))
def test_conv2d_values(xs, ws, kw, bias, rng, device):
    for dtype in float_dtypes(device):
        x, w = _rand(xs, rng, dtype), _rand(ws, rng, dtype)
        b = _rand((ws[0],), rng, dtype) if bias else None
        out = F.conv2d(
            tensor(x, device=device),
            tensor(w, device=device),
            None if b is None else tensor(b, device=device),
            **kw,
        )
        assert_close(out, conv_ref(x, w, b, **kw), **(F32 if dtype == "float32" else {}))


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xs,ws,kw", CONV1D, ids=_ids(CONV1D))
def test_conv1d_values(xs, ws, kw, bias, rng, device):
    for dtype in float_dtypes(device):
        x, w = _rand(xs, rng, dtype), _rand(ws, rng, dtype)
        b = _rand((ws[0],), rng, dtype) if bias else None
        out = F.conv1d(
            tensor(x, device=device),
            tensor(w, device=device),
            None if b is None else tensor(b, device=device),
            **kw,
        )
        assert_close(out, conv_ref(x, w, b, **kw), **(F32 if dtype == "float32" else {}))


def test_conv_positional_arguments(rng, device):
    fd, T = wide(device), lambda a: tensor(a, device=device)
    x, w, b = _rand((1, 4, 7, 6), rng, fd), _rand((6, 2, 3, 2), rng, fd), _rand((6,), rng, fd)
    exp = conv_ref(x, w, b, stride=(2, 1), padding=1, dilation=(1, 2), groups=2)
    assert_close(F.conv2d(T(x), T(w), T(b), (2, 1), 1, (1, 2), 2), exp, **tol(device))
    assert_close(F.conv2d(T(x), T(w), T(b), [2, 1], [1, 1], [1, 2], 2), exp, **tol(device))


def test_conv_unbatched(rng, device):
    fd, T = wide(device), lambda a: tensor(a, device=device)
    x, w, b = _rand((3, 6, 5), rng, fd), _rand((4, 3, 3, 3), rng, fd), _rand((4,), rng, fd)
    assert_close(
        F.conv2d(T(x), T(w), T(b), padding=1), conv_ref(x[None], w, b, padding=1)[0], **tol(device)
    )
    x1, w1 = _rand((3, 7), rng, fd), _rand((2, 3, 2), rng, fd)
    assert_close(
        F.conv1d(T(x1), T(w1), stride=2), conv_ref(x1[None], w1, stride=2)[0], **tol(device)
    )


def test_conv_noncontiguous(rng, device):
    fd, T = wide(device), lambda a: tensor(a, device=device)
    x, w, b = _rand((2, 4, 6, 5), rng, fd), _rand((4, 2, 3, 2), rng, fd), _rand((4,), rng, fd)
    exp_w = conv_ref(x, w, b, padding=1, groups=2)
    for kind, xt, xe in noncontig(x, fd, device):
        exp = conv_ref(xe, w, b, padding=1, groups=2)
        assert_close(F.conv2d(xt, T(w), T(b), padding=1, groups=2), exp, **tol(device)), kind
    for kind, wt, _ in noncontig(w, fd, device):
        if kind != "expanded":
            assert_close(F.conv2d(T(x), wt, T(b), padding=1, groups=2), exp_w, **tol(device)), kind


def test_conv_empty_batch(rng, device):
    fd = wide(device)
    w = _rand((4, 3, 3, 3), rng, fd)
    out = F.conv2d(tensor(np.zeros((0, 3, 5, 5), fd), device=device), tensor(w, device=device))
    assert tuple(out.shape) == (0, 4, 3, 3)


@pytest.mark.parametrize("xs,ws,kw", CONV2D[:5] + CONV1D[:2], ids=_ids(CONV2D[:5] + CONV1D[:2]))
def test_conv_gradients_closed_form(xs, ws, kw, rng, device):
    fn = F.conv2d if len(xs) == 4 else F.conv1d
    fd = wide(device)
    x, w, b = (
        dleaf(_rand(xs, rng), device),
        dleaf(_rand(ws, rng), device),
        dleaf(_rand((ws[0],), rng), device),
    )
    out = fn(x, w, b, **kw)
    g = _rand(tuple(out.shape), rng, fd)
    out.backward(tensor(g, device=device))
    xv, wv, g = to_np(x).astype(np.float64), to_np(w).astype(np.float64), g.astype(np.float64)
    ac(w.grad, conv_weight_grad_ref(xv, g, ws, **kw), device)
    ac(b.grad, g.sum(axis=(0,) + tuple(range(2, g.ndim))), device)
    # d/dx of a convolution is the transposed convolution of g, written into the padded input
    k = ws[2:]
    stride, dilation = ntuple(kw.get("stride", 1), len(k)), ntuple(kw.get("dilation", 1), len(k))
    pads = _pads(kw.get("padding", 0), k, dilation)
    full = conv_transpose_ref(g, wv, stride=stride, dilation=dilation, groups=kw.get("groups", 1))
    grad_xp = np.zeros(xs[:2] + tuple(n + lo + hi for n, (lo, hi) in zip(xs[2:], pads)))
    grad_xp[(Ellipsis,) + tuple(slice(0, f) for f in full.shape[2:])] = full
    crop = tuple(slice(lo, lo + n) for n, (lo, hi) in zip(xs[2:], pads))
    ac(x.grad, grad_xp[(Ellipsis,) + crop], device)


# (x shape, weight shape, kwargs) for the transposed convolutions
CONVT2D = [
    ((2, 3, 4, 3), (3, 2, 3, 3), {}),
    ((2, 3, 4, 3), (3, 2, 3, 2), dict(stride=2, padding=1, output_padding=1)),
    (
        (1, 4, 3, 4),
        (4, 3, 2, 3),
        dict(stride=(2, 3), padding=(0, 1), output_padding=(1, 2), groups=2),
    ),
    ((2, 2, 3, 3), (2, 2, 3, 3), dict(stride=2, dilation=2, output_padding=1)),
    ((1, 2, 2, 2), (2, 1, 2, 2), dict(dilation=(1, 3), groups=2)),
]
CONVT1D = [
    ((2, 3, 5), (3, 2, 3), {}),
    ((2, 4, 5), (4, 3, 3), dict(stride=3, padding=1, output_padding=2, groups=2)),
    ((1, 2, 4), (2, 2, 2), dict(stride=2, dilation=3, output_padding=1)),
]


@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("xs,ws,kw", CONVT2D + CONVT1D, ids=_ids(CONVT2D + CONVT1D))
def test_conv_transpose_values(xs, ws, kw, bias, rng, device):
    fn = F.conv_transpose2d if len(xs) == 4 else F.conv_transpose1d
    groups = kw.get("groups", 1)
    for dtype in float_dtypes(device):
        x, w = _rand(xs, rng, dtype), _rand(ws, rng, dtype)
        b = _rand((ws[1] * groups,), rng, dtype) if bias else None
        out = fn(
            tensor(x, device=device),
            tensor(w, device=device),
            None if b is None else tensor(b, device=device),
            **kw,
        )
        assert_close(out, conv_transpose_ref(x, w, b, **kw), **(F32 if dtype == "float32" else {}))


def test_conv_transpose_positional_and_unbatched(rng, device):
    fd, T = wide(device), lambda a: tensor(a, device=device)
    x, w, b = _rand((4, 3, 4), rng, fd), _rand((4, 3, 2, 3), rng, fd), _rand((6,), rng, fd)
    exp = conv_transpose_ref(x[None], w, b, (2, 3), (0, 1), (1, 2), 2, 1)[0]
    # (input, weight, bias, stride, padding, output_padding, groups, dilation)
    assert_close(
        F.conv_transpose2d(T(x), T(w), T(b), (2, 3), (0, 1), (1, 2), 2, 1), exp, **tol(device)
    )
    x1, w1 = _rand((3, 5), rng, fd), _rand((3, 2, 3), rng, fd)
    assert_close(
        F.conv_transpose1d(T(x1), T(w1), None, 2),
        conv_transpose_ref(x1[None], w1, stride=2)[0],
        **tol(device),
    )


@pytest.mark.parametrize(
    "xs,ws,kw", CONVT2D[:3] + CONVT1D[1:2], ids=_ids(CONVT2D[:3] + CONVT1D[1:2])
)
def test_conv_transpose_input_gradient_is_conv(xs, ws, kw, rng, device):
    # d/dx sum(conv_transpose(x, w) * g) = conv(g, w) with the same stride/padding/dilation/groups
    fn = F.conv_transpose2d if len(xs) == 4 else F.conv_transpose1d
    x, w = dleaf(_rand(xs, rng), device), dleaf(_rand(ws, rng), device)
    out = fn(x, w, **kw)
    g = _rand(tuple(out.shape), rng, wide(device))
    out.backward(tensor(g, device=device))
    g = g.astype(np.float64)
    groups = kw.get("groups", 1)
    wv = to_np(w).astype(np.float64)
    # conv weight layout (out=in_t, in=out_t/groups): regroup (in_t, out_t/g, k) as is
    exp = conv_ref(
        g,
        wv,
        stride=kw.get("stride", 1),
        padding=kw.get("padding", 0),
        dilation=kw.get("dilation", 1),
        groups=groups,
    )
    ac(x.grad, exp[(Ellipsis,) + tuple(slice(0, n) for n in xs[2:])], device)


def test_conv_float32_gradients(rng, device):
    x = rumus.tensor(_rand((2, 3, 5, 5), rng, "float32"), requires_grad=True, device=device)
    w = rumus.tensor(_rand((4, 3, 3, 3), rng, "float32"), requires_grad=True, device=device)
    F.conv2d(x, w, padding=1).sum().backward()
    assert x.grad.dtype == rumus.float32 and w.grad.dtype == rumus.float32
    g = np.ones((2, 4, 5, 5))
    np.testing.assert_allclose(
        to_np(w.grad),
        conv_weight_grad_ref(to_np(x).astype(np.float64), g, (4, 3, 3, 3), padding=1),
        rtol=1e-4,
        atol=1e-4,
    )


# ------------------------------------------------------------------ bad input


def _x(*shape):
    return rumus.zeros(*shape)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.conv2d(_x(7, 6), _x(6, 2, 3, 2)),
            RuntimeError,
            r"3D \(unbatched\) or 4D.*\[7, 6\]",
        ),
        (lambda: F.conv2d(_x(1, 2, 4, 7, 6), _x(6, 2, 3, 2)), RuntimeError, r"\[1, 2, 4, 7, 6\]"),
        (
            lambda: F.conv2d(_x(2, 4, 7, 6), _x(6, 2, 3, 2)),
            RuntimeError,
            r"weight of size \[6, 2, 3, 2\].*input\[2, 4, 7, 6\].*2 channels",
        ),
        (lambda: F.conv2d(_x(2, 4, 7, 6), _x(2, 3, 2)), RuntimeError, r"weight.*\[2, 3, 2\]"),
        (
            lambda: F.conv2d(_x(2, 2, 2, 2), _x(6, 2, 3, 2)),
            RuntimeError,
            r"Kernel size can't be greater than actual input size",
        ),
        (lambda: F.conv2d(_x(2, 4, 7, 6), _x(6, 2, 3, 2), groups=3), RuntimeError, r"groups=3"),
        (
            lambda: F.conv2d(_x(2, 4, 7, 6), _x(6, 2, 3, 2), _x(5), groups=2),
            RuntimeError,
            r"bias.*6 elements.*\[5\]",
        ),
        (
            lambda: F.conv2d(_x(2, 4, 7, 6), _x(6, 2, 3, 2), stride=0, groups=2),
            RuntimeError,
            r"non-positive stride",
        ),
        (
            lambda: F.conv2d(_x(2, 4, 7, 6), _x(6, 2, 3, 2), padding=-1, groups=2),
            RuntimeError,
            r"negative padding",
        ),
        (
            lambda: F.conv2d(_x(2, 4, 7, 6), _x(6, 2, 3, 2), stride=2, padding="same", groups=2),
            RuntimeError,
            r"strided",
        ),
        (
            lambda: F.conv2d(_x(2, 4, 7, 6), _x(6, 2, 3, 2), stride=(1, 1, 1), groups=2),
            RuntimeError,
            r"stride",
        ),
        (
            lambda: F.conv2d(_x(2, 4, 7, 6).double(), _x(6, 2, 3, 2), groups=2),
            RuntimeError,
            r"float64|[Dd]ouble",
        ),
        (lambda: F.conv1d(_x(2, 4, 7, 6), _x(6, 2, 3)), RuntimeError, r"\[2, 4, 7, 6\]"),
        (lambda: F.conv1d(_x(2, 4, 2), _x(6, 4, 3)), RuntimeError, r"Kernel size can't be greater"),
        (
            lambda: F.conv_transpose2d(_x(2, 4, 7, 6), _x(4, 3, 3, 2), stride=2, output_padding=2),
            RuntimeError,
            r"output padding must be smaller than either stride or dilation",
        ),
        (
            lambda: F.conv_transpose2d(_x(2, 3, 7, 6), _x(4, 3, 3, 2)),
            RuntimeError,
            r"weight of size \[4, 3, 3, 2\].*input\[2, 3, 7, 6\]",
        ),
        (
            lambda: F.conv_transpose2d(_x(2, 4, 1, 1), _x(4, 3, 3, 2), padding=3),
            RuntimeError,
            r"[Oo]utput size",
        ),
        (
            lambda: F.conv_transpose2d(_x(2, 4, 7, 6), _x(4, 3, 3, 2), _x(6)),
            RuntimeError,
            r"bias.*3 elements.*\[6\]",
        ),
        (lambda: F.conv_transpose1d(_x(2, 4, 7, 6), _x(4, 3, 3)), RuntimeError, r"\[2, 4, 7, 6\]"),
    ],
)
def test_conv_bad_input(call, exc, match, device):
    if device == "gpu" and "float64" in match:
        pytest.skip("float64 is not supported on the GPU (by design)")
    with default_device(device), pytest.raises(exc, match=match):
        call()


def test_conv_bad_padding_string_is_runtime_error(device):
    # PyTorch raises RuntimeError("Invalid padding string: 'foo'")
    with default_device(device), pytest.raises(RuntimeError, match="foo"):
        F.conv2d(_x(2, 4, 7, 6), _x(6, 2, 3, 2), padding="foo", groups=2)


def test_conv_transpose_groups_not_dividing_names_groups(device):
    # PyTorch: "Given groups=3, expected weight to be divisible by 3 at dimension 0, ..."
    with default_device(device), pytest.raises(RuntimeError, match="groups=3"):
        F.conv_transpose2d(_x(2, 4, 7, 6), _x(4, 3, 3, 2), groups=3)


# ------------------------------------------------------------- PyTorch cross-checks


def _torch_check(torch, name, xs, ws, kw, bias, rng, dtype, device="cpu"):
    tf = getattr(torch.nn.functional, name)
    groups = kw.get("groups", 1)
    x, w = _rand(xs, rng, dtype), _rand(ws, rng, dtype)
    nb = ws[1] * groups if "transpose" in name else ws[0]
    b = _rand((nb,), rng, dtype) if bias else None
    rt = [
        rumus.tensor(a, requires_grad=True, device=device) if a is not None else None
        for a in (x, w, b)
    ]
    tt = [torch.tensor(a, requires_grad=True) if a is not None else None for a in (x, w, b)]
    out = getattr(F, name)(*rt, **kw)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # PyTorch's note on padding='same' with even kernels
        ref = tf(*tt, **kw)
    tol = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(to_np(out), ref.detach().numpy(), **tol)
    g = _rand(tuple(ref.shape), rng, dtype)
    out.backward(rumus.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    for r, t in zip(rt, tt):
        if r is not None:
            np.testing.assert_allclose(to_np(r.grad), t.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_conv_vs_torch(dtype, rng, device):
    if device == "gpu" and dtype == "float64":
        pytest.skip("float64 is not supported on the GPU (by design)")
    torch = pytest.importorskip("torch")
    for xs, ws, kw in CONV2D:
        for bias in (True, False):
            _torch_check(torch, "conv2d", xs, ws, kw, bias, rng, dtype, device)
    for xs, ws, kw in CONV1D:
        _torch_check(torch, "conv1d", xs, ws, kw, True, rng, dtype, device)
    for xs, ws, kw in CONVT2D:
        _torch_check(torch, "conv_transpose2d", xs, ws, kw, True, rng, dtype, device)
    for xs, ws, kw in CONVT1D:
        _torch_check(torch, "conv_transpose1d", xs, ws, kw, False, rng, dtype, device)


def test_conv_random_configs_vs_torch(device):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(7)
    for _ in range(25):
        groups = int(rng.choice([1, 2, 3]))
        cin, cout = groups * int(rng.integers(1, 3)), groups * int(rng.integers(1, 3))
        k = tuple(int(v) for v in rng.integers(1, 4, 2))
        dil = tuple(int(v) for v in rng.integers(1, 3, 2))
        stride = tuple(int(v) for v in rng.integers(1, 3, 2))
        pad = tuple(int(rng.integers(0, (kk * d) // 2 + 1)) for kk, d in zip(k, dil))
        size = tuple(int(v) + (kk - 1) * d for v, kk, d in zip(rng.integers(1, 5, 2), k, dil))
        _torch_check(
            torch,
            "conv2d",
            (2, cin) + size,
            (cout, cin // groups) + k,
            dict(stride=stride, padding=pad, dilation=dil, groups=groups),
            True,
            rng,
            wide(device),
            device,
        )
        op = tuple(int(rng.integers(0, max(s, d))) for s, d in zip(stride, dil))
        _torch_check(
            torch,
            "conv_transpose2d",
            (2, cin) + size[:1] + (3,),
            (cin, cout // groups) + k,
            dict(
                stride=stride,
                padding=tuple(min(p, kk - 1) for p, kk in zip(pad, k)),
                output_padding=op,
                dilation=dil,
                groups=groups,
            ),
            True,
            rng,
            wide(device),
            device,
        )
