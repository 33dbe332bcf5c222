"""The remaining functional ops against NumPy references: linear, bilinear,
pad (constant / reflect / replicate / circular, negative padding), interpolate
(nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area; size or
scale_factor, align_corners), unfold / fold, pixel_shuffle / pixel_unshuffle,
one_hot, normalize, cosine_similarity, pairwise_distance, embedding (padding_idx,
max_norm, scale_grad_by_freq) and dropout (plain, 1-D and 2-D channel-wise);
gradients against closed forms; PyTorch cross-checks when installed; bad input."""

import importlib.util
import math
import warnings

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import (
    dac,
    dleaf,
    dnp,
    dt,
    fd,
    need_gpu,
    noncontig,
    skip_f64_on_gpu,
    to_np,
    val,
    wide,
)

# ------------------------------------------------------------------ devices
# Every test runs on the CPU and on the GPU (``device`` fixture). float64 is not on the GPU (by
# design): where a test uses float64 only as "a float", the GPU run uses float32 with the CPU's
# float32 tolerances.

F32 = dict(rtol=1e-5, atol=1e-6)


def _rand(shape, rng, lo=-1.0, hi=1.0, dtype="float64"):
    return rng.uniform(lo, hi, shape).astype(dtype)


# ------------------------------------------------------------ linear, bilinear


@pytest.mark.parametrize("xshape", [(5, 3), (2, 4, 3), (3,)], ids=str)
def test_linear(xshape, rng, device):
    for dtype in (("float64",) if device == "cpu" else ()) + ("float32",):  # no float64 on the GPU
        x, w, b = (
            _rand(xshape, rng, dtype=dtype),
            _rand((4, 3), rng, dtype=dtype),
            _rand((4,), rng, dtype=dtype),
        )
        tol = F32 if dtype == "float32" else {}
        x64 = x.astype(np.float64)
        dac(
            F.linear(dt(x, device=device), dt(w, device=device), dt(b, device=device)),
            (x64 @ w.T + b).astype(dtype),
            **tol,
            device=device,
        )
        dac(
            F.linear(dt(x, device=device), dt(w, device=device)),
            (x64 @ w.T).astype(dtype),
            **tol,
            device=device,
        )
    dac(
        F.linear(dt(x, device=device), dt(w[0], device=device)), x @ w[0], device=device
    )  # 1-D weight: a dot product


def test_linear_gradients_and_views(rng, device):
    x, w, b = (
        dleaf(_rand((2, 5, 3), rng), device=device),
        dleaf(_rand((4, 3), rng), device=device),
        dleaf(_rand((4,), rng), device=device),
    )
    out = F.linear(x, w, b)
    g = _rand((2, 5, 4), rng)
    out.backward(dt(g, device=device))
    dac(x.grad, g @ val(w), device=device)
    dac(w.grad, np.einsum("nlo,nli->oi", g, val(x)), device=device)
    dac(b.grad, g.sum((0, 1)), device=device)
    # a 2-D batch (one GEMM onto rows of the bias on the CPU), input without grad
    x2, w2, b2 = (
        _rand((5, 3), rng),
        dleaf(_rand((4, 3), rng), device=device),
        dleaf(_rand((4,), rng), device=device),
    )
    g2 = _rand((5, 4), rng)
    F.linear(dt(x2, device=device), w2, b2).backward(dt(g2, device=device))
    dac(w2.grad, g2.T @ x2, device=device)
    dac(b2.grad, g2.sum(0), device=device)
    xv, wv = _rand((5, 3), rng), _rand((4, 3), rng)
    for kind, t, e in noncontig(xv, wide(device), device=device):
        dac(F.linear(t, dt(wv, device=device)), e @ wv.T, device=device), kind
    for kind, t, e in noncontig(wv, wide(device), device=device):
        dac(F.linear(dt(xv, device=device), t), xv @ e.T, device=device), kind


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda device: F.linear(
                rumus.zeros(2, 3, device=device), rumus.zeros(4, 2, device=device)
            ),
            r"2x3 and 2x4|\[2, 3\].*\[4, 2\]",
        ),
        (
            lambda device: F.linear(
                rumus.zeros(2, 3, device=device),
                rumus.zeros(4, 3, device=device),
                rumus.zeros(3, device=device),
            ),
            r"4.*3",
        ),
        (
            lambda device: F.linear(
                rumus.zeros(2, 3, device=device), rumus.zeros(2, 4, 3, device=device)
            ),
            r"\[2, 4, 3\]",
        ),
        (
            lambda device: F.linear(
                rumus.zeros(2, 3, device=device).double(), rumus.zeros(4, 3, device=device)
            ),
            r"dtype",
        ),
    ],
)
def test_linear_bad_input(call, match, device):
    if device != "cpu" and match == r"dtype":
        pytest.skip("float64 is not supported on the GPU (by design)")
    with pytest.raises(RuntimeError, match=match):
        call(device)


@pytest.mark.parametrize("shape", [(5,), (2, 3)], ids=str)
def test_bilinear(shape, rng, device):
    x1, x2 = _rand(shape + (3,), rng), _rand(shape + (4,), rng)
    w, b = _rand((2, 3, 4), rng), _rand((2,), rng)
    exp = np.einsum("...i,oij,...j->...o", x1, w, x2)
    dac(
        F.bilinear(dt(x1, device=device), dt(x2, device=device), dt(w, device=device)),
        exp,
        device=device,
    )
    a1, a2, aw, ab = (
        dleaf(x1, device=device),
        dleaf(x2, device=device),
        dleaf(w, device=device),
        dleaf(b, device=device),
    )
    out = F.bilinear(a1, a2, aw, ab)
    dac(out, exp + b, device=device)
    g = _rand(shape + (2,), rng)
    out.backward(dt(g, device=device))
    dac(a1.grad, np.einsum("...o,oij,...j->...i", g, w, x2), device=device)
    dac(a2.grad, np.einsum("...o,oij,...i->...j", g, w, x1), device=device)
    dac(
        aw.grad,
        np.einsum("no,ni,nj->oij", g.reshape(-1, 2), x1.reshape(-1, 3), x2.reshape(-1, 4)),
        device=device,
    )
    dac(ab.grad, g.reshape(-1, 2).sum(0), device=device)
    f32 = [a.astype(np.float32) for a in (x1, x2, w)]
    dac(
        F.bilinear(*[dt(a, device=device) for a in f32]),
        exp.astype(np.float32),
        **F32,
        device=device,
    )


def test_bilinear_unbatched(rng, device):
    x1, x2, w = _rand((3,), rng), _rand((4,), rng), _rand((5, 3, 4), rng)
    dac(
        F.bilinear(dt(x1, device=device), dt(x2, device=device), dt(w, device=device)),
        np.einsum("i,oij,j->o", x1, w, x2),
        device=device,
    )


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda device: F.bilinear(
                rumus.zeros(2, 3, device=device),
                rumus.zeros(2, 4, device=device),
                rumus.zeros(5, 3, 3, device=device),
            ),
            r"input2 size does not match weight size: got 4 but expected 3",
        ),
        (
            lambda device: F.bilinear(
                rumus.zeros(2, 2, device=device),
                rumus.zeros(2, 4, device=device),
                rumus.zeros(5, 3, 4, device=device),
            ),
            r"input1 size does not match weight size: got 2 but expected 3",
        ),
        (
            lambda device: F.bilinear(
                rumus.zeros(2, 3, device=device),
                rumus.zeros(3, 4, device=device),
                rumus.zeros(5, 3, 4, device=device),
            ),
            r"batch dimensions do not match at dim 0: got 2 and 3",
        ),
        (
            lambda device: F.bilinear(
                rumus.zeros(2, 3, device=device),
                rumus.zeros(2, 4, device=device),
                rumus.zeros(5, 3, 4, device=device),
                rumus.zeros(4, device=device),
            ),
            r"bias size does not match weight size: got 4 but expected 5",
        ),
        (
            lambda device: F.bilinear(
                rumus.zeros(2, 3, device=device),
                rumus.zeros(2, 4, device=device),
                rumus.zeros(3, 4, device=device),
            ),
            r"weight must be 3-dimensional",
        ),
        (
            lambda device: F.bilinear(
                rumus.zeros(2, 3, device=device),
                rumus.zeros(2, 1, 4, device=device),
                rumus.zeros(5, 3, 4, device=device),
            ),
            r"input dimensions do not match: got 2 and 3",
        ),
    ],
)
def test_bilinear_bad_input(call, match, device):
    with pytest.raises(RuntimeError, match=match):
        call(device)


# ------------------------------------------------------------------------ pad


def pad_ref(x, pad, mode="constant", value=0.0):
    """Pads (or crops, for negative amounts) the last len(pad) // 2 dims, last dim first."""
    out = x
    for i in range(len(pad) // 2):
        axis = x.ndim - 1 - i
        before, after = pad[2 * i], pad[2 * i + 1]
        if mode == "circular":  # wraps around the cropped part
            out = np.take(out, range(max(-before, 0), out.shape[axis] - max(-after, 0)), axis)
            before, after = max(before, 0), max(after, 0)
        widths = [(0, 0)] * x.ndim
        widths[axis] = (max(before, 0), max(after, 0))
        kw = dict(constant_values=value) if mode == "constant" else {}
        padded = np.pad(
            out,
            widths,
            {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}[
                mode
            ],
            **kw,
        )
        out = np.take(padded, range(max(-before, 0), padded.shape[axis] - max(-after, 0)), axis)
    return out


PAD_CASES = [
    ((2, 3), (1, 2), "constant"),
    ((2, 3, 4), (1, 0, 2, 1), "constant"),
    ((2, 3, 4), (1, 1, 0, 2, 1, 0), "constant"),
    ((2, 3, 4), (-1, 2, 1, -1), "constant"),
    ((2, 3), (-1, -1), "constant"),
    ((2, 3), (0, 0), "constant"),
    ((2, 5), (2, 3), "reflect"),
    ((1, 2, 4, 5), (1, 2, 3, 0), "reflect"),
    ((2, 5), (-2, 3), "reflect"),
    ((2, 3, 4), (2, 3), "replicate"),
    ((2, 3, 4, 5), (1, 2, 2, 1, 0, 3), "replicate"),
    ((2, 5), (-1, 4), "replicate"),
    ((1, 2, 5), (5, 3), "circular"),
    ((2, 3, 4), (1, 2, 3, 0), "circular"),
    ((2, 5), (-2, 3), "circular"),
    ((2, 5), (3, -2), "circular"),
]


@pytest.mark.parametrize("shape,pad,mode", PAD_CASES, ids=str)
def test_pad_values_and_gradient(shape, pad, mode, rng, device):
    for dtype in (("float64",) if device == "cpu" else ()) + ("float32",):  # no float64 on the GPU
        x = _rand(shape, rng, dtype=dtype)
        dac(F.pad(dt(x, device=device), pad, mode=mode), pad_ref(x, pad, mode), device=device)
    # the gradient of a pad is the sum of the output gradient over every copy of each input element
    x = dleaf(np.arange(float(np.prod(shape))).reshape(shape), device=device)
    out = F.pad(x, pad, mode)
    g = _rand(tuple(out.shape), rng)
    out.backward(dt(g, device=device))
    idx = pad_ref(np.arange(np.prod(shape)).reshape(shape), pad, mode, value=-1)
    exp = np.zeros(int(np.prod(shape)))
    np.add.at(exp, idx[idx >= 0], g[idx >= 0])
    dac(x.grad, exp.reshape(shape), device=device)


@pytest.mark.parametrize(
    "pad,mode",
    [
        ((1, 2, 3, 0), "constant"),
        ((-2, 3, 1, -1), "constant"),
        ((3, 2, 1, 4), "reflect"),
        ((2, 5, 0, 3), "replicate"),
        ((4, 1, 2, 2), "circular"),
        ((1, 1, 2, 0, 1, 1), "reflect"),
    ],
)
def test_pad_large_and_views(pad, mode, rng, device):
    """Inputs big enough to split over threads, contiguous and transposed; the gradient is the
    output gradient summed over every copy of each input element."""
    x = _rand((6, 5, 33, 40), rng, dtype="float32")
    for t, e in (
        (dt(x, device=device), x),
        (dt(x, device=device).transpose(2, 3), x.swapaxes(2, 3)),
    ):
        dac(F.pad(t, pad, mode=mode), pad_ref(e, pad, mode), device=device)
    xl = dleaf(x, device=device)
    out = F.pad(xl, pad, mode=mode)
    g = _rand(tuple(out.shape), rng, dtype="float32")
    out.backward(dt(g, device=device))
    idx = pad_ref(np.arange(x.size).reshape(x.shape), pad, mode, value=-1)
    exp = np.zeros(x.size)
    np.add.at(exp, idx[idx >= 0], g[idx >= 0].astype(np.float64))
    dac(xl.grad, exp.reshape(x.shape), rtol=1e-5, atol=1e-5, device=device)


def test_pad_half_gradient_adds_in_float32(rng):
    """float16 gradients of a reflect pad add up their copies in float32 and round once."""
    x = rumus.tensor(_rand((2, 9), rng, dtype="float16"), requires_grad=True)
    out = F.pad(x, (3, 3), mode="replicate")
    g = _rand(tuple(out.shape), rng, dtype="float16")
    out.backward(rumus.tensor(g))
    idx = pad_ref(np.arange(18).reshape(2, 9), (3, 3), "replicate")
    exp = np.zeros(18)
    np.add.at(exp, idx.ravel(), g.astype(np.float64).ravel())
    assert x.grad.dtype == rumus.float16
    np.testing.assert_array_equal(to_np(x.grad), exp.reshape(2, 9).astype(np.float16))


def test_pad_constant_value_and_dtypes(rng, device):
    x = _rand((2, 3), rng)
    dac(
        F.pad(dt(x, device=device), (1, 1, 2, 0), value=3.5),
        pad_ref(x, (1, 1, 2, 0), value=3.5),
        device=device,
    )
    dac(
        F.pad(dt(x, device=device), [1, 1], "constant", -2.0),
        pad_ref(x, (1, 1), value=-2.0),
        device=device,
    )
    xi = np.arange(6).reshape(2, 3)
    dac(F.pad(dt(xi, device=device), (1, 2), value=7), pad_ref(xi, (1, 2), value=7), device=device)
    xb = np.array([[True, False]])
    dac(F.pad(dt(xb, device=device), (1, 0)), np.array([[False, True, False]]), device=device)


def test_pad_views_and_result_is_new(rng, device):
    x = _rand((3, 4), rng)
    for kind, t, e in noncontig(x, wide(device), device=device):
        dac(F.pad(t, (1, 2, 1, 0)), pad_ref(e, (1, 2, 1, 0)), device=device), kind
        (
            dac(
                F.pad(t.unsqueeze(0), (2, 1), "reflect"),
                pad_ref(e[None], (2, 1), "reflect"),
                device=device,
            ),
            kind,
        )
    t = dt(x, device=device)
    out = F.pad(t, (0, 0))
    out[0, 0] = 100.0
    assert t[0, 0].item() == x.astype(wide(device))[0, 0]


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda device: F.pad(rumus.zeros(2, 3, device=device), (1, 2, 3)),
            RuntimeError,
            r"Padding length must be divisible by 2",
        ),
        (
            lambda device: F.pad(rumus.zeros(2, 3, device=device), (1, 2, 3, 4, 5, 6)),
            RuntimeError,
            r"Padding length should be less than or equal to two times the input dimension.*6.*2",
        ),
        (
            lambda device: F.pad(rumus.zeros(2, 5, device=device), (-6, 2)),
            RuntimeError,
            r"\[2, 5\]",
        ),
        (
            lambda device: F.pad(rumus.zeros(2, 5, device=device), (5, 1), mode="reflect"),
            RuntimeError,
            r"Padding size should be less than the corresponding input dimension, but got: "
            r"padding \(5, 1\) at dimension 1 of input \[2, 5\]",
        ),
        (
            lambda device: F.pad(rumus.zeros(2, 5, device=device), (6, 1), mode="circular"),
            RuntimeError,
            r"wrapping around more than once",
        ),
        (
            lambda device: F.pad(rumus.zeros(2, 5, device=device), (1, 1), mode="foo"),
            NotImplementedError,
            r"Unrecognised padding mode foo",
        ),
        (
            lambda device: F.pad(
                rumus.zeros(2, 5, device=device), (1, 1), mode="reflect", value=1.0
            ),
            RuntimeError,
            r"doesn't take in value argument",
        ),
        (
            lambda device: F.pad(rumus.zeros(5, device=device), (1, 1), mode="reflect"),
            NotImplementedError,
            r"Padding size 2 is not supported for 1D input",
        ),
        (
            lambda device: F.pad(rumus.zeros(2, 2, 2, 5, device=device), (1, 1), mode="replicate"),
            NotImplementedError,
            r"not supported for 4D input",
        ),
        (
            lambda device: F.pad(rumus.zeros(2, 0, device=device), (1, 2), mode="replicate"),
            RuntimeError,
            r"\[2, 0\]",
        ),
    ],
)
def test_pad_bad_input(call, exc, match, device):
    with pytest.raises(exc, match=match):
        call(device)


# ---------------------------------------------------------------- interpolate


def _src_linear(n, m, scale, align_corners, cubic=False):
    """Source coordinate of every output position (PyTorch's convention, float64)."""
    dst = np.arange(m, dtype=np.float64)
    if align_corners:
        return dst * ((n - 1) / (m - 1) if m > 1 else 0.0)
    ratio = 1 / scale if scale else n / m
    src = (dst + 0.5) * ratio - 0.5
    return src if cubic else np.maximum(src, 0)


def _cubic(t):
    a = -0.75
    t = np.abs(t)
    near = ((a + 2) * t - (a + 3)) * t * t + 1
    far = ((a * t - 5 * a) * t + 8 * a) * t - 4 * a
    return np.where(t <= 1, near, np.where(t < 2, far, 0))


def resize_ref(x, axis, m, scale, mode, align_corners):
    """One axis of interpolate by explicit per-output sums of weighted taps."""
    n = x.shape[axis]
    if m == n:
        return x
    xm = np.moveaxis(x, axis, -1)
    out = np.zeros(xm.shape[:-1] + (m,))
    for j in range(m):
        if mode == "nearest":
            taps = [(min(int(math.floor(j * (1 / scale if scale else n / m))), n - 1), 1.0)]
            if m == 2 * n and x.ndim == 4:
                taps = [(j // 2, 1.0)]
        elif mode == "nearest-exact":
            taps = [(min(int(math.floor((j + 0.5) * (1 / scale if scale else n / m))), n - 1), 1.0)]
        elif mode == "bicubic":
            src = _src_linear(n, m, scale, align_corners, cubic=True)[j]
            i0 = math.floor(src)
            taps = [(min(max(i0 + k, 0), n - 1), _cubic(src - (i0 + k))) for k in (-1, 0, 1, 2)]
        else:
            src = _src_linear(n, m, scale, align_corners)[j]
            i0 = min(int(src), n - 1)
            lam = src - i0
            taps = [(i0, 1 - lam), (min(i0 + 1, n - 1), lam)]
        for i, wgt in taps:
            out[..., j] += wgt * xm[..., i]
    return np.moveaxis(out, -1, axis)


def interpolate_ref(x, size=None, scale_factor=None, mode="nearest", align_corners=False):
    nsp = x.ndim - 2
    if size is not None:
        sizes = [size] * nsp if isinstance(size, int) else list(size)
        scales = [None] * nsp
    else:
        scales = [scale_factor] * nsp if np.isscalar(scale_factor) else list(scale_factor)
        sizes = [int(math.floor(n * s)) for n, s in zip(x.shape[2:], scales)]
    base = mode.replace("bi", "").replace("tri", "") if mode not in ("bicubic",) else mode
    out = x.astype(np.float64)
    for i in range(nsp):
        out = resize_ref(out, 2 + i, sizes[i], scales[i], base, align_corners)
    return out


INTERP_CASES = [
    ((1, 2, 5), dict(size=7, mode="nearest")),
    ((1, 2, 5), dict(size=3, mode="nearest")),
    ((1, 2, 5), dict(scale_factor=1.7, mode="nearest")),
    ((1, 2, 5), dict(scale_factor=2.1, mode="nearest")),
    ((2, 1, 4, 3), dict(scale_factor=2.1, mode="nearest")),
    ((2, 1, 4, 3), dict(size=(5, 2), mode="nearest")),
    ((1, 2, 5), dict(size=8, mode="nearest-exact")),
    ((2, 1, 4, 3), dict(scale_factor=0.6, mode="nearest-exact")),
    ((1, 2, 5), dict(size=8, mode="linear")),
    ((1, 2, 5), dict(size=8, mode="linear", align_corners=True)),
    ((1, 2, 5), dict(scale_factor=0.5, mode="linear")),
    ((1, 1, 5), dict(size=1, mode="linear", align_corners=True)),
    ((2, 1, 4, 3), dict(size=(6, 5), mode="bilinear")),
    ((2, 1, 4, 3), dict(scale_factor=(1.5, 2.5), mode="bilinear")),
    ((2, 1, 4, 3), dict(size=(3, 7), mode="bilinear", align_corners=True)),
    ((1, 2, 4, 4), dict(size=(6, 3), mode="bicubic")),
    ((1, 2, 4, 4), dict(scale_factor=1.7, mode="bicubic", align_corners=True)),
    ((1, 1, 2, 3, 4), dict(size=(3, 4, 2), mode="trilinear")),
    ((1, 1, 2, 3, 4), dict(scale_factor=1.5, mode="nearest")),
]


@pytest.mark.parametrize("shape,kw", INTERP_CASES, ids=str)
def test_interpolate_values_and_gradient(shape, kw, rng, device):
    ref_kw = dict(kw, align_corners=kw.get("align_corners", False))
    for dtype in (("float64",) if device == "cpu" else ()) + ("float32",):  # no float64 on the GPU
        x = _rand(shape, rng, dtype=dtype)
        dac(
            F.interpolate(dt(x, device=device), **kw),
            interpolate_ref(x, **ref_kw).astype(dtype),
            **(F32 if dtype == "float32" else {}),
            device=device,
        )
    # interpolation is linear in x: the gradient is the transposed map, read off with unit inputs
    x = dleaf(_rand(shape, rng), device=device)
    out = F.interpolate(x, **kw)
    g = _rand(tuple(out.shape), rng)
    out.backward(dt(g, device=device))
    n = int(np.prod(shape))
    basis = np.eye(n).reshape((n,) + shape)
    exp = np.array([(interpolate_ref(b, **ref_kw) * g).sum() for b in basis]).reshape(shape)
    dac(x.grad, exp, device=device)


@pytest.mark.parametrize(
    "shape,kw",
    [
        ((3, 6, 30, 41), dict(scale_factor=2, mode="bilinear")),
        ((3, 6, 30, 41), dict(size=(17, 90), mode="bilinear", align_corners=True)),
        ((2, 5, 24, 20), dict(size=(50, 13), mode="bicubic")),
        ((4, 7, 300), dict(size=777, mode="linear")),
        ((2, 3, 9, 12, 14), dict(scale_factor=1.5, mode="trilinear")),
    ],
    ids=str,
)
def test_interpolate_large(shape, kw, rng, device):
    """Sizes that split over threads. The gradient is checked as the adjoint of the map:
    <interpolate(v), g> = <v, x.grad> for random v."""
    x = _rand(shape, rng, dtype="float32")
    ref_kw = dict(kw, align_corners=kw.get("align_corners", False))
    # float32 source coordinates (as PyTorch computes them) against the float64 reference
    exp = interpolate_ref(x, **ref_kw).astype("float32")
    dac(F.interpolate(dt(x, device=device), **kw), exp, rtol=1e-5, atol=3e-5, device=device)
    xl = dleaf(x, device=device)
    out = F.interpolate(xl, **kw)
    g = _rand(tuple(out.shape), rng)
    out.backward(dt(g, device=device))
    grad = to_np(xl.grad).astype(np.float64)
    for _ in range(3):
        v = _rand(shape, rng)
        exp = (interpolate_ref(v, **ref_kw) * g).sum()
        # float32 gradients: error relative to the sum's terms, not to its (cancelling) value
        np.testing.assert_allclose((v * grad).sum(), exp, atol=1e-5 * np.abs(v * grad).sum())


def test_interpolate_area_and_recompute_scale_factor(rng, device):
    x = _rand((1, 2, 6, 4), rng)
    # area = adaptive average pooling to the output size
    exp = x.reshape(1, 2, 3, 2, 2, 2).mean((3, 5))
    dac(F.interpolate(dt(x, device=device), size=(3, 2), mode="area"), exp, device=device)
    dac(F.interpolate(dt(x, device=device), scale_factor=0.5, mode="area"), exp, device=device)
    x1 = _rand((1, 2, 5), rng)
    # recompute_scale_factor: coordinates from the sizes (5 -> 8), not from 1 / 1.7
    dac(
        F.interpolate(
            dt(x1, device=device), scale_factor=1.7, mode="linear", recompute_scale_factor=True
        ),
        interpolate_ref(x1, size=8, mode="linear"),
        device=device,
    )


def test_interpolate_views_and_new_result(rng, device):
    x = _rand((2, 3, 4, 5), rng)
    for kind, t, e in noncontig(x, wide(device), device=device):
        (
            dac(
                F.interpolate(t, size=(3, 7), mode="bilinear"),
                interpolate_ref(e, (3, 7), mode="bilinear"),
                device=device,
            ),
            kind,
        )
    t = dt(x, device=device)
    out = F.interpolate(t, size=(4, 5))  # same size: a copy, not the input
    assert out is not t
    dac(out, x, device=device)


def test_interpolate_integer_dtypes(rng):
    # As PyTorch: the nearest modes take uint8 images (the values the float path picks), the
    # interpolating modes and the other integer dtypes raise.
    x = rng.integers(0, 256, (1, 2, 3, 5)).astype(np.uint8)
    for kw in (dict(size=(7, 8)), dict(scale_factor=1.7, mode="nearest-exact")):
        got = F.interpolate(rumus.tensor(x), **kw)
        assert got.dtype == rumus.uint8
        exp = F.interpolate(rumus.tensor(x.astype(np.float32)), **kw).numpy()
        np.testing.assert_array_equal(got.numpy(), exp.astype(np.uint8))
    with pytest.raises(NotImplementedError, match="uint8"):
        F.interpolate(rumus.tensor(x), size=(4, 4), mode="bilinear")
    with pytest.raises(NotImplementedError, match="int64"):
        F.interpolate(rumus.tensor(x.astype(np.int64)), size=(4, 4))


def test_composed_ops_check_their_arguments():
    # PyTorch's wording for a non-tensor, naming the argument and its position
    with pytest.raises(
        TypeError, match=r"relu6\(\): argument 'input' \(position 1\) must be Tensor"
    ):
        F.relu6("x")
    with pytest.raises(
        TypeError, match=r"argument 'target' \(position 2\) must be Tensor, not list"
    ):
        F.mse_loss(rumus.zeros(2), [0.0, 1.0])
    ints = rumus.tensor([-3, 0, 1, 5, 9])
    # integer clamps and thresholds truncate their float bounds, keep the dtype
    np.testing.assert_array_equal(F.hardtanh(ints, -1.5, 1.5).numpy(), [-1, 0, 1, 1, 1])
    np.testing.assert_array_equal(F.relu6(ints).numpy(), [0, 0, 1, 5, 6])
    np.testing.assert_array_equal(F.threshold(ints, -0.5, 7).numpy(), [7, 7, 1, 5, 9])
    u8 = rumus.tensor(np.array([0, 3, 200], np.uint8))
    np.testing.assert_array_equal(F.hardtanh(u8, 2, 300).numpy(), [2, 3, 200])
    np.testing.assert_array_equal(F.threshold(u8, 1, -1).numpy(), [255, 3, 200])  # int wraps
    with pytest.raises(RuntimeError, match="overflow"):
        F.threshold(u8, 0.5, -1.0)  # a float out of range does not
    np.testing.assert_allclose(F.softsign(u8).numpy(), [0, 0.75, 200 / 201], rtol=1e-6)
    for fn in (F.hardtanh, F.relu6, F.softsign):
        with pytest.raises(NotImplementedError, match="bool"):
            fn(rumus.tensor([True, False]))
    with pytest.raises(NotImplementedError, match="int64"):
        F.selu(ints)
    with pytest.raises(RuntimeError, match="int64"):
        F.kl_div(ints, ints)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda device: F.interpolate(
                rumus.zeros(1, 2, 5, device=device), size=3, scale_factor=2.0
            ),
            ValueError,
            r"only one of size or scale_factor",
        ),
        (
            lambda device: F.interpolate(rumus.zeros(1, 2, 5, device=device)),
            ValueError,
            r"either size or scale_factor should be defined",
        ),
        (
            lambda device: F.interpolate(rumus.zeros(1, 2, 5, device=device), size=(3, 4)),
            ValueError,
            r"spatial dimensions of \[5\] and output size of \(3, 4\)",
        ),
        (
            lambda device: F.interpolate(
                rumus.zeros(1, 2, 5, device=device), scale_factor=(1.5, 2.0)
            ),
            ValueError,
            r"scale_factor",
        ),
        (
            lambda device: F.interpolate(
                rumus.zeros(1, 2, 5, device=device), scale_factor=1.5, mode="bilinear"
            ),
            NotImplementedError,
            r"Got 3D input, but bilinear mode needs 4D input",
        ),
        (
            lambda device: F.interpolate(
                rumus.zeros(1, 2, 5, device=device), size=3, align_corners=True
            ),
            ValueError,
            r"align_corners option can only be set with the interpolating modes",
        ),
        (
            lambda device: F.interpolate(rumus.zeros(1, 2, 5, device=device), size=3, mode="foo"),
            NotImplementedError,
            r"got foo",
        ),
        (
            lambda device: F.interpolate(rumus.zeros(5, device=device), size=3),
            NotImplementedError,
            r"got 1D",
        ),
        (
            lambda device: F.interpolate(rumus.zeros(1, 2, 5, device=device), size=0),
            RuntimeError,
            r"Input and output sizes should be greater than 0",
        ),
        (
            lambda device: F.interpolate(rumus.zeros(1, 2, 5, device=device), scale_factor=0.1),
            RuntimeError,
            r"greater than 0",
        ),
        (
            lambda device: F.interpolate(
                rumus.zeros(1, 2, 5, device=device), size=3, recompute_scale_factor=True
            ),
            ValueError,
            r"recompute_scale_factor is not meaningful with an explicit size",
        ),
        (
            lambda device: F.interpolate(
                rumus.zeros(1, 2, 5, device=device), size=3, mode="linear", antialias=True
            ),
            ValueError,
            r"Anti-alias option is restricted",
        ),
        (
            lambda device: F.interpolate(
                rumus.zeros(1, 2, 5, 5, device=device), size=3, mode="bilinear", antialias=True
            ),
            NotImplementedError,
            r"antialias",
        ),
    ],
)
def test_interpolate_bad_input(call, exc, match, device):
    with pytest.raises(exc, match=match):
        call(device)


# --------------------------------------------------------------- unfold, fold


def unfold_ref(x, kernel_size, dilation=1, padding=0, stride=1):
    kh, kw = (kernel_size,) * 2 if isinstance(kernel_size, int) else kernel_size
    dh, dw = (dilation,) * 2 if isinstance(dilation, int) else dilation
    ph, pw = (padding,) * 2 if isinstance(padding, int) else padding
    sh, sw = (stride,) * 2 if isinstance(stride, int) else stride
    xp = np.pad(x, [(0, 0), (0, 0), (ph, ph), (pw, pw)])
    n, c, h, w = xp.shape
    oh, ow = (h - dh * (kh - 1) - 1) // sh + 1, (w - dw * (kw - 1) - 1) // sw + 1
    out = np.zeros((n, c * kh * kw, oh * ow), x.dtype)
    for ci in range(c):
        for i in range(kh):
            for j in range(kw):
                patch = xp[
                    :,
                    ci,
                    i * dh : i * dh + sh * (oh - 1) + 1 : sh,
                    j * dw : j * dw + sw * (ow - 1) + 1 : sw,
                ]
                out[:, (ci * kh + i) * kw + j] = patch.reshape(n, -1)
    return out


UNFOLD_CASES = [
    ((2, 3, 5, 4), dict(kernel_size=2)),
    ((1, 2, 6, 5), dict(kernel_size=(2, 3), dilation=(1, 2), padding=1, stride=(2, 1))),
    ((1, 1, 4, 4), dict(kernel_size=3, padding=1)),
    ((2, 2, 5, 5), dict(kernel_size=1, stride=2)),
]


@pytest.mark.parametrize("shape,kw", UNFOLD_CASES, ids=str)
def test_unfold_and_fold(shape, kw, rng, device):
    for dtype in (("float64",) if device == "cpu" else ()) + ("float32",):  # no float64 on the GPU
        x = _rand(shape, rng, dtype=dtype)
        dac(
            F.unfold(dt(x, device=device), **kw),
            unfold_ref(x, **kw),
            **(F32 if dtype == "float32" else {}),
            device=device,
        )
    # fold is the adjoint of unfold: <unfold(x), y> == <x, fold(y)>, and the gradients follow
    x = dleaf(_rand(shape, rng), device=device)
    cols = F.unfold(x, **kw)
    y = _rand(tuple(cols.shape), rng)
    yl = dleaf(y, device=device)
    folded = F.fold(yl, shape[2:], **kw)
    assert tuple(folded.shape) == shape
    np.testing.assert_allclose(
        (val(cols) * y).sum(), (val(x) * val(folded)).sum(), **dnp(device, 1e-12, 0)
    )
    cols.backward(dt(y, device=device))
    dac(x.grad, val(folded), device=device)
    g = _rand(shape, rng)
    folded.backward(dt(g, device=device))
    dac(yl.grad, unfold_ref(g, **kw), device=device)


def test_unfold_fold_unbatched(rng, device):
    x = _rand((2, 4, 5), rng)
    cols = F.unfold(dt(x, device=device), 2)
    dac(cols, unfold_ref(x[None], 2)[0], device=device)
    assert tuple(F.fold(cols, (4, 5), 2).shape) == (2, 4, 5)
    # fold(unfold(x)) counts every pixel once per window covering it
    ones = to_np(F.fold(F.unfold(rumus.ones(1, 1, 3, 3, device=device), 2), (3, 3), 2))
    np.testing.assert_array_equal(ones[0, 0], [[1, 2, 1], [2, 4, 2], [1, 2, 1]])


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda device: F.unfold(rumus.zeros(7, 6, device=device), 2), r"3D or 4D"),
        (lambda device: F.unfold(rumus.zeros(2, 4, 7, 6, device=device), 8), r"\(7, 6\)"),
        (lambda device: F.fold(rumus.zeros(2, 12, 20, device=device), (6, 7), (2, 3)), r"25.*20"),
        (
            lambda device: F.fold(rumus.zeros(2, 13, 30, device=device), (6, 7), (2, 3)),
            r"divisible by the product of kernel_size.*13",
        ),
        (
            lambda device: F.fold(rumus.zeros(2, 4, 7, 6, device=device), (6, 7), (2, 3)),
            r"2D or 3D.*\[2, 4, 7, 6\]",
        ),
    ],
)
def test_unfold_fold_bad_input(call, match, device):
    with pytest.raises(RuntimeError, match=match):
        call(device)


# ------------------------------------------------------ pixel (un)shuffle


def test_pixel_shuffle_and_unshuffle(rng, device):
    r = 2
    x = _rand((2, 3, 2 * r * r, 3, 2), rng)  # two batch dims
    out = F.pixel_shuffle(dt(x, device=device), r)
    exp = np.zeros((2, 3, 2, 3 * r, 2 * r))
    for c in range(2):
        for i in range(r):
            for j in range(r):
                exp[:, :, c, i::r, j::r] = x[:, :, c * r * r + i * r + j]
    dac(out, exp, device=device)
    dac(F.pixel_unshuffle(out, r), x, device=device)
    dac(F.pixel_unshuffle(dt(exp[0], device=device), r), x[0], device=device)
    xl = dleaf(x[0], device=device)
    g = _rand((3, 2, 6, 4), rng)
    F.pixel_shuffle(xl, r).backward(dt(g, device=device))
    dac(xl.grad, to_np(F.pixel_unshuffle(dt(g, device=device), r)), device=device)


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda device: F.pixel_shuffle(rumus.zeros(1, 8, 2, 2, device=device), 3),
            r"input.size\(-3\)=8 is not divisible by 9",
        ),
        (
            lambda device: F.pixel_shuffle(rumus.zeros(8, 2, device=device), 2),
            r"at least 3 dimensions",
        ),
        (
            lambda device: F.pixel_shuffle(rumus.zeros(1, 4, 2, 2, device=device), 0),
            r"positive upscale_factor",
        ),
        (
            lambda device: F.pixel_unshuffle(rumus.zeros(1, 2, 3, 4, device=device), 2),
            r"height to be divisible by downscale_factor.*size\(-2\)=3",
        ),
        (
            lambda device: F.pixel_unshuffle(rumus.zeros(1, 2, 4, 3, device=device), 2),
            r"width to be divisible",
        ),
    ],
)
def test_pixel_shuffle_bad_input(call, match, device):
    with pytest.raises(RuntimeError, match=match):
        call(device)


# ------------------------------------------------------------------- one_hot


def test_one_hot(rng, device):
    t = rng.integers(0, 5, (3, 4))
    dac(F.one_hot(dt(t, device=device)), np.eye(t.max() + 1, dtype=np.int64)[t], device=device)
    dac(F.one_hot(dt(t, device=device), 7), np.eye(7, dtype=np.int64)[t], device=device)
    dac(
        F.one_hot(dt(t, device=device), num_classes=-1),
        np.eye(t.max() + 1, dtype=np.int64)[t],
        device=device,
    )
    assert tuple(F.one_hot(rumus.zeros(0, dtype=rumus.int64, device=device), 3).shape) == (0, 3)


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda device: F.one_hot(rumus.tensor([1, 2], device=device), 2),
            r"Class values must be smaller than num_classes",
        ),
        (lambda device: F.one_hot(rumus.tensor([1, -1], device=device)), r"non-negative"),
        (
            lambda device: F.one_hot(rumus.tensor([1.0, 2.0], device=device)),
            r"index tensor of type LongTensor",
        ),
        (
            lambda device: F.one_hot(rumus.zeros(0, dtype=rumus.int64, device=device)),
            r"Can not infer total number of classes from empty tensor",
        ),
    ],
)
def test_one_hot_bad_input(call, match, device):
    with pytest.raises(RuntimeError, match=match):
        call(device)


# ------------------------------------------ normalize, cosine similarity, distance


def _norm(x, p, axis, keepdims=True):
    a = np.abs(x)
    if p == math.inf:
        return a.max(axis, keepdims=keepdims)
    if p == 0:
        return (x != 0).sum(axis, keepdims=keepdims).astype(x.dtype)
    return (a**p).sum(axis, keepdims=keepdims) ** (1 / p)


@pytest.mark.parametrize("p", [2.0, 1, 3, 0.5, math.inf, 0])
def test_normalize(p, rng, device):
    x = _rand((3, 4), rng)
    for dim in (1, 0, -1):
        dac(
            F.normalize(dt(x, device=device), p, dim),
            x / np.maximum(_norm(x, p, dim), 1e-12),
            device=device,
        )
    xf = x.astype(np.float32)
    dac(
        F.normalize(dt(xf, device=device), p=p),
        (x / np.maximum(_norm(x, p, 1), 1e-12)).astype(np.float32),
        **F32,
        device=device,
    )


def test_normalize_zero_vector_and_eps(rng, device):
    x = np.zeros((2, 3))
    x[1] = [3.0, 4.0, 0.0]
    xl = dleaf(x, device=device)
    out = F.normalize(xl, dim=1)
    dac(out, np.array([[0, 0, 0], [0.6, 0.8, 0]]), device=device)
    out.sum().backward()
    dac(xl.grad[0], np.full(3, 1e12), device=device)  # x / eps there: finite, 1 / eps
    dac(F.normalize(dt(x, device=device), dim=1, eps=10.0), x / 10.0, device=device)
    out = rumus.zeros(2, 3, dtype=fd(device), device=device)
    assert F.normalize(dt(x, device=device), out=out) is out
    dac(out, np.array([[0, 0, 0], [0.6, 0.8, 0]]), device=device)


def test_normalize_gradient_closed_form(rng, device):
    x = dleaf(_rand((3, 4), rng), device=device)
    g = _rand((3, 4), rng)
    F.normalize(x).backward(dt(g, device=device))
    xv = val(x)
    n = np.linalg.norm(xv, axis=1, keepdims=True)
    dac(x.grad, g / n - xv * (g * xv).sum(1, keepdims=True) / n**3, device=device)


@pytest.mark.parametrize("p", [3.0, 0.5])
def test_normalize_general_p_gradient_vs_torch(p, rng, device):
    torch = pytest.importorskip("torch")
    x, g = _rand((3, 4), rng), _rand((3, 4), rng)
    if device != "cpu":  # float64 is not on the GPU: float32 on both sides
        x, g = x.astype(np.float32), g.astype(np.float32)
    xr, xt = rumus.tensor(x, requires_grad=True, device=device), torch.tensor(x, requires_grad=True)
    F.normalize(xr, p=p, dim=0).backward(rumus.tensor(g, device=device))
    torch.nn.functional.normalize(xt, p=p, dim=0).backward(torch.tensor(g))
    np.testing.assert_allclose(to_np(xr.grad), xt.grad.numpy(), **dnp(device, 1e-10, 1e-12))


def test_engine_pow_float_exponent_gradient_is_float64_exact(device):
    skip_f64_on_gpu(device, "float64 (this checks float64 exactness)")
    # Minimal form of the engine bug behind the test above: d/dx x**(1/3) in float64 is off by ~1e-8
    # (the exponent seems to pass through float32 in the backward; the forward value is exact)
    x = np.array([0.5, 2.0, 3.0])
    xr = rumus.tensor(x, requires_grad=True, device=device)
    (xr ** (1 / 3)).sum().backward()
    np.testing.assert_allclose(to_np(xr.grad), (1 / 3) * x ** (-2 / 3), rtol=1e-13)


def test_cosine_similarity(rng, device):
    x1, x2 = _rand((3, 4), rng), _rand((3, 4), rng)
    cos = (x1 * x2).sum(1) / (np.linalg.norm(x1, axis=1) * np.linalg.norm(x2, axis=1))
    dac(F.cosine_similarity(dt(x1, device=device), dt(x2, device=device)), cos, device=device)
    dac(
        F.cosine_similarity(dt(x1, device=device), dt(x2[0], device=device), dim=-1),
        (x1 * x2[0]).sum(1) / (np.linalg.norm(x1, axis=1) * np.linalg.norm(x2[0])),
        device=device,
    )
    dac(
        F.cosine_similarity(dt(x1, device=device), dt(x2, device=device), dim=0),
        (x1 * x2).sum(0) / (np.linalg.norm(x1, axis=0) * np.linalg.norm(x2, axis=0)),
        device=device,
    )
    # eps bounds each norm from below
    z = np.zeros((1, 4))
    dac(
        F.cosine_similarity(dt(z, device=device), dt(x2[:1], device=device)),
        np.zeros(1),
        device=device,
    )
    a1, a2 = dleaf(x1, device=device), dleaf(x2, device=device)
    F.cosine_similarity(a1, a2).sum().backward()
    n1, n2 = np.linalg.norm(x1, axis=1, keepdims=True), np.linalg.norm(x2, axis=1, keepdims=True)
    dac(a1.grad, x2 / (n1 * n2) - cos[:, None] * x1 / n1**2, device=device)


@pytest.mark.parametrize("p", [2.0, 1.0, 3.0])
def test_pairwise_distance(p, rng, device):
    x1, x2 = _rand((3, 4), rng), _rand((3, 4), rng)
    exp = _norm(x1 - x2 + 1e-6, p, -1, keepdims=False)
    dac(F.pairwise_distance(dt(x1, device=device), dt(x2, device=device), p), exp, device=device)
    dac(
        F.pairwise_distance(dt(x1, device=device), dt(x2, device=device), p, keepdim=True),
        exp[:, None],
        device=device,
    )
    dac(
        F.pairwise_distance(dt(x1, device=device), dt(x2[0], device=device), p, eps=0.0),
        _norm(x1 - x2[0], p, -1, keepdims=False),
        device=device,
    )
    dac(
        F.pairwise_distance(dt(x1[0], device=device), dt(x2[0], device=device), p),
        np.asarray(exp[0]),
        device=device,
    )


# ------------------------------------------------------------------ embedding


def test_embedding_values_and_gradient(rng, device):
    w = _rand((7, 3), rng)
    idx = np.array([[1, 4, 1], [6, 0, 4]])
    wl = dleaf(w, device=device)
    out = F.embedding(dt(idx, device=device), wl)
    dac(out, w[idx], device=device)
    g = _rand((2, 3, 3), rng)
    out.backward(dt(g, device=device))
    exp = np.zeros_like(w)
    np.add.at(exp, idx, g)
    dac(wl.grad, exp, device=device)
    dac(
        F.embedding(dt(idx.astype(np.int32), device=device), dt(w, device=device)),
        w[idx],
        device=device,
    )
    dac(F.embedding(dt(np.array(2), device=device), dt(w, device=device)), w[2], device=device)
    dac(
        F.embedding(
            dt(w[:, 0].astype(np.float32) * 0 + 1, device=device).long(),
            dt(w.astype(np.float32), device=device),
        ),
        w.astype(np.float32)[np.ones(7, np.int64)],
        device=device,
    )


@pytest.mark.parametrize("padding_idx", [2, -5])
def test_embedding_padding_idx_gets_no_gradient(padding_idx, rng, device):
    w = _rand((7, 3), rng)
    idx = np.array([[2, 4, 2], [6, 2, 1]])
    wl = dleaf(w, device=device)
    out = F.embedding(dt(idx, device=device), wl, padding_idx=padding_idx)
    dac(out, w[idx], device=device)  # the padding row still returns its values
    g = _rand((2, 3, 3), rng)
    out.backward(dt(g, device=device))
    exp = np.zeros_like(w)
    np.add.at(exp, idx, g)
    exp[2] = 0.0
    dac(wl.grad, exp, device=device)


def test_embedding_max_norm_renormalizes_rows_in_place(rng, device):
    w = _rand((6, 3), rng, -3, 3)
    w[5] = [0.1, 0.1, 0.1]  # already within the norm
    wt = dleaf(w, device=device)
    idx = np.array([0, 5, 3, 0])
    out = F.embedding(dt(idx, device=device), wt, max_norm=1.5)
    norms = np.linalg.norm(w, axis=1, keepdims=True)
    renormed = np.where(norms > 1.5, w * 1.5 / (norms + 1e-7), w)
    touched = np.isin(np.arange(6), idx)[:, None]
    dac(wt, np.where(touched, renormed, w), device=device)  # only the looked-up rows change
    dac(out, renormed[idx], device=device)
    out.sum().backward()
    assert wt.grad is not None
    w1 = np.abs(_rand((4, 2), rng)) + 1
    dac(
        F.embedding(
            dt(np.array([1]), device=device), dt(w1, device=device), max_norm=2.0, norm_type=1.0
        ),
        w1[[1]] * 2.0 / (np.abs(w1[1]).sum() + 1e-7),
        device=device,
    )


def test_embedding_scale_grad_by_freq(rng, device):
    w = _rand((5, 2), rng)
    idx = np.array([1, 3, 1, 1, 0])
    wl = dleaf(w, device=device)
    out = F.embedding(dt(idx, device=device), wl, scale_grad_by_freq=True)
    dac(out, w[idx], device=device)
    g = _rand((5, 2), rng)
    out.backward(dt(g, device=device))
    exp = np.zeros_like(w)
    counts = np.bincount(idx, minlength=5)
    np.add.at(exp, idx, g / counts[idx][:, None])
    dac(wl.grad, exp, device=device)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda device: F.embedding(
                rumus.tensor([1, 7], device=device), rumus.zeros(5, 3, device=device)
            ),
            IndexError,
            r"7",
        ),
        (
            lambda device: F.embedding(
                rumus.tensor([1.0, 2.0], device=device), rumus.zeros(5, 3, device=device)
            ),
            RuntimeError,
            r"Long, Int",
        ),
        (
            lambda device: F.embedding(
                rumus.tensor([1, 2], device=device), rumus.zeros(5, 3, device=device), padding_idx=5
            ),
            AssertionError,
            r"Padding_idx must be within num_embeddings",
        ),
        (
            lambda device: F.embedding(
                rumus.tensor([1, 2], device=device),
                rumus.zeros(5, 3, device=device),
                padding_idx=-6,
            ),
            AssertionError,
            r"Padding_idx",
        ),
        (
            lambda device: F.embedding(
                rumus.tensor([1, 2], device=device), rumus.zeros(5, device=device)
            ),
            RuntimeError,
            r"'weight' must be 2-D",
        ),
        (
            lambda device: F.embedding(
                rumus.tensor([1, 2], device=device), rumus.zeros(5, 3, device=device), sparse=True
            ),
            RuntimeError,
            r"sparse",
        ),
    ],
)
def test_embedding_bad_input(call, exc, match, device):
    if device != "cpu" and exc is IndexError:
        # Index values stay on the GPU and are checked there: the error comes with the next read.
        with pytest.raises(RuntimeError, match="out of range.*detected on the GPU"):
            call(device)
            rumus.gpu.synchronize()
        return
    with pytest.raises(exc, match=match):
        call(device)


def test_embedding_negative_index_raises(device):
    # PyTorch: IndexError("index out of range in self"); rumus' index_select wraps -1 to the
    # last row
    if device != "cpu":
        with pytest.raises(RuntimeError, match="out of range.*detected on the GPU"):
            F.embedding(rumus.tensor([1, -1], device=device), rumus.zeros(5, 3, device=device))
            rumus.gpu.synchronize()
        return
    with pytest.raises(IndexError):
        F.embedding(rumus.tensor([1, -1], device=device), rumus.zeros(5, 3, device=device))


# -------------------------------------------------------------------- dropout


def test_dropout_statistics_and_scaling(rng, device):
    x = _rand((200, 50), rng, 1.0, 2.0)
    rumus.manual_seed(1)
    out = to_np(F.dropout(dt(x, device=device), 0.3))
    kept = out != 0
    assert abs(kept.mean() - 0.7) < 0.02
    np.testing.assert_allclose(out[kept], x[kept] / 0.7, **dnp(device, 1e-12, 0))
    rumus.manual_seed(1)
    np.testing.assert_array_equal(to_np(F.dropout(dt(x, device=device), 0.3)), out)


def test_dropout_mask_is_the_same_on_cpu_and_gpu(rng):
    """The CPU mask is Philox-drawn as the GPU's is: one seed drops the same elements on both
    devices (sizes straddling the CPU kernel's 64-element groups and 16K-element chunks)."""
    need_gpu()
    for shape in [(3,), (67,), (130, 257)]:
        x = _rand(shape, rng, 1.0, 2.0).astype(np.float32)
        outs = []
        for dev in ("cpu", "gpu"):
            rumus.manual_seed(11)
            outs.append(to_np(F.dropout(rumus.tensor(x, device=dev), 0.25)))
        np.testing.assert_array_equal(outs[0] != 0, outs[1] != 0)
        np.testing.assert_allclose(outs[0], outs[1], rtol=1e-6)


def test_dropout_float64_and_many_threads_statistics(rng):
    """float64 gets a float64 scale; a mask over many chunks keeps p and is seed-determined."""
    x = rumus.ones(1 << 18, dtype=rumus.float64)
    rumus.manual_seed(2)
    out = to_np(F.dropout(x, 0.1))
    assert abs((out != 0).mean() - 0.9) < 0.003
    np.testing.assert_array_equal(np.unique(out), [0.0, 1 / 0.9])
    halves = out.reshape(2, -1)  # no chunk repeats another's numbers
    assert not np.array_equal(halves[0], halves[1])
    rumus.manual_seed(2)
    np.testing.assert_array_equal(to_np(F.dropout(x, 0.1)), out)


def test_dropout_gradient_is_the_mask(rng, device):
    x = dleaf(_rand((20, 30), rng, 1.0, 2.0), device=device)
    rumus.manual_seed(3)
    out = F.dropout(x, p=0.4)
    out.sum().backward()
    mask = val(out) != 0
    dac(x.grad, mask / 0.6, device=device)


def test_dropout_eval_p0_p1_and_inplace(rng, device):
    x = _rand((4, 5), rng, 1.0, 2.0)
    t = dt(x, device=device)
    assert F.dropout(t, 0.5, training=False) is t
    assert F.dropout(t, 0.0) is t
    dac(F.dropout(t, 1.0), np.zeros((4, 5)), device=device)
    xl = dleaf(x, device=device)
    F.dropout(xl, 1.0).sum().backward()
    dac(xl.grad, np.zeros((4, 5)), device=device)
    t2 = dt(x, device=device)
    assert F.dropout(t2, 0.5, inplace=True) is t2
    v = to_np(t2)
    assert ((v == 0) | np.isclose(v, 2 * x)).all() and (v == 0).any()
    for fn in (F.dropout, F.dropout1d, F.dropout2d):
        with pytest.raises(
            ValueError, match=r"dropout probability has to be between 0 and 1, but got 1.5"
        ):
            fn(rumus.zeros(2, 3, 4, 5, device=device), 1.5)


@pytest.mark.parametrize(
    "fn,shape,zero_axes",
    [
        (F.dropout2d, (8, 16, 3, 4), (2, 3)),
        (
            F.dropout2d,
            (16, 3, 4),
            (2,),
        ),  # 3-D input: channel-wise 1-D dropout (N, C, L), with a warning
        (F.dropout1d, (8, 16, 5), (2,)),
        (F.dropout1d, (16, 5), (1,)),  # unbatched (C, L)
    ],
)
def test_channel_dropout_zeroes_whole_channels(fn, shape, zero_axes, rng, device):
    x = _rand(shape, rng, 1.0, 2.0)
    rumus.manual_seed(5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # dropout2d's note on 3-D inputs
        out = to_np(fn(dt(x, device=device), 0.5))
        evaluated = to_np(fn(dt(x, device=device), 0.5, training=False))
    dropped = (out == 0).all(zero_axes)
    kept = (out != 0).all(zero_axes)
    assert (dropped | kept).all()  # a channel is dropped entirely or kept entirely
    assert 0.2 < dropped.mean() < 0.8
    ratio = np.where(out != 0, out / x, 2.0)
    np.testing.assert_allclose(ratio, 2.0, **dnp(device, 1e-12, 0))
    np.testing.assert_array_equal(evaluated, x.astype(wide(device)))


def test_dropout2d_warnings(device):
    with pytest.warns(UserWarning, match="Received a 3D input to dropout2d"):
        F.dropout2d(rumus.ones(2, 3, 4, device=device))
    with pytest.warns(UserWarning, match="Received a 5-D input to dropout2d"):
        F.dropout2d(rumus.ones(2, 3, 4, 5, 6, device=device))
    with pytest.warns(UserWarning, match="Received a 1-D input"):
        with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
            F.dropout2d(rumus.ones(3, device=device))
    with pytest.raises(
        RuntimeError, match="dropout1d: Expected 2D or 3D input, but received a 4D input"
    ):
        F.dropout1d(rumus.ones(2, 3, 4, 5, device=device))


# ------------------------------------------------------------- PyTorch cross-checks


def _cmp_torch(torch, rfn, tfn, arrays, dtype, rng, msg="", grads=True, device="cpu"):
    """Values and gradients of the float array inputs, rumus vs PyTorch."""
    rin = [rumus.tensor(a, requires_grad=a.dtype.kind == "f", device=device) for a in arrays]
    tin = [torch.tensor(a, requires_grad=a.dtype.kind == "f") for a in arrays]
    out, ref = rfn(*rin), tfn(*tin)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_np(out), ref.detach().numpy(), err_msg=msg, **tol)
    if not grads:
        return
    g = rng.uniform(-1, 1, tuple(ref.shape)).astype(dtype)
    out.backward(rumus.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    for r, t in zip(rin, tin):
        if r.requires_grad:
            np.testing.assert_allclose(to_np(r.grad), t.grad.numpy(), err_msg=msg, **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_functional_vs_torch(dtype, rng, device):
    torch = pytest.importorskip("torch")
    if dtype == "float64":
        skip_f64_on_gpu(device)
    tf = torch.nn.functional

    def run(name, arrays, *args, grads=True, **kw):
        _cmp_torch(
            torch,
            lambda *a: getattr(F, name)(*a, *args, **kw),
            lambda *a: getattr(tf, name)(*a, *args, **kw),
            arrays,
            dtype,
            rng,
            f"{name} {args} {kw}",
            grads,
            device,
        )

    r = lambda *shape: _rand(shape, rng, dtype=dtype)  # noqa: E731
    run("linear", [r(2, 5, 3), r(4, 3), r(4)])
    run("linear", [r(3), r(4, 3)])
    run("bilinear", [r(2, 3, 3), r(2, 3, 4), r(5, 3, 4), r(5)])
    for shape, pad, mode in PAD_CASES:
        if mode == "circular" and min(pad) < 0:
            continue  # PyTorch's circular pad reads out of bounds with negative amounts
        run("pad", [r(*shape)], pad, mode)
    for shape, kw in INTERP_CASES:
        # PyTorch's 1-D/3-D nearest backward maps an exact doubling (5 -> 10 by 2.1) to dst // 2
        # while its forward uses floor(dst / 2.1); rumus' gradient follows its forward
        quirk = kw["mode"] == "nearest" and len(shape) != 4 and kw.get("scale_factor") == 2.1
        run("interpolate", [r(*shape)], grads=not quirk, **kw)
    for kw in (
        dict(scale_factor=0.5, mode="area"),
        dict(size=(4, 3), mode="area"),
        dict(scale_factor=1.7, mode="bilinear", recompute_scale_factor=True),
    ):
        run("interpolate", [r(1, 2, 6, 4)], **kw)
    for shape, kw in UNFOLD_CASES:
        run("unfold", [r(*shape)], **kw)
    run("fold", [r(2, 12, 30)], (6, 7), (2, 3), dilation=(2, 1), padding=(1, 0))
    run("pixel_shuffle", [r(2, 8, 3, 2)], 2)
    run("pixel_unshuffle", [r(2, 2, 4, 6)], 2)
    for p in (2.0, 1.0, math.inf):
        run("normalize", [r(3, 4)], p=p, dim=0)
        run("pairwise_distance", [r(3, 4), r(3, 4)], p=p)
    run("cosine_similarity", [r(3, 4), r(4)], dim=-1)
    w = r(7, 3)
    idx = np.array([[2, 4, 2], [6, 2, 1]])
    _cmp_torch(
        torch,
        lambda w: F.embedding(rumus.tensor(idx, device=device), w, padding_idx=2),
        lambda w: tf.embedding(torch.tensor(idx), w, padding_idx=2),
        [w],
        dtype,
        rng,
        device=device,
    )
    _cmp_torch(
        torch,
        lambda w: F.embedding(rumus.tensor(idx, device=device), w, scale_grad_by_freq=True),
        lambda w: tf.embedding(torch.tensor(idx), w, scale_grad_by_freq=True),
        [w],
        dtype,
        rng,
        device=device,
    )


# ------------------------------------------------------------------ the module


def test_rust_kernels_bound_and_public():
    for name in (
        "conv2d",
        "max_pool2d",
        "softmax",
        "log_softmax",
        "layer_norm",
        "linear",
        "one_hot",
    ):
        assert getattr(F, name) is getattr(rumus._rumus, name)
        assert name in F.__all__


def test_missing_rust_kernel_fails_the_import(monkeypatch):
    # A kernel the engine lacks is an import error naming it, not a silently missing F.<name>.
    # The module is executed again under another name so the real rumus.nn.functional is untouched.
    monkeypatch.delattr(rumus._rumus, "log_softmax")
    spec = importlib.util.spec_from_file_location("rumus.nn._functional_probe", F.__file__)
    with pytest.raises(AttributeError, match="log_softmax"):
        spec.loader.exec_module(importlib.util.module_from_spec(spec))
