"""Normalization functions against NumPy: batch_norm (eval with running stats,
training with batch stats and the in-place running-stat update using the unbiased
variance), layer_norm (Rust kernel), group_norm, instance_norm, rms_norm; gradients
against the closed form of a normalization's backward; PyTorch cross-checks when
installed; bad input."""

import contextlib

import numpy as np
import pytest
import rumus
import rumus.nn.functional as F
from conftest import assert_close, noncontig, tensor, to_np

F32 = dict(rtol=1e-5, atol=1e-5)


def _tol(dtype):
    return F32 if dtype == "float32" else {}


# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU (``device`` fixture)
# --------------------------------------------------------------------------


def wide(device):
    """float64 on the CPU, float32 on the GPU (which has no float64): for tests
    that use float64 only as "a float"."""
    return "float64" if device == "cpu" else "float32"


def float_dtypes(device):
    """The float dtypes a test loops over on ``device`` (the GPU has no float64)."""
    return ("float64", "float32") if device == "cpu" else ("float32",)


def tol(device):
    """Tolerances of a ``wide(device)`` result: the defaults on the CPU, F32 on the GPU."""
    return _tol(wide(device))


def leaf(a, device):
    """Leaf tensor on ``device`` that requires grad, holding ``a`` in ``wide(device)``."""
    t = tensor(np.asarray(a, dtype=wide(device)), device=device)
    t.requires_grad_()
    return t


def ac(t, expected, device):
    """assert_close on the detached tensor; on the GPU against float32 with F32 tolerances."""
    assert t is not None, "expected a tensor, got None"
    assert_close(t.detach(), np.asarray(expected).astype(wide(device)), **tol(device))


@contextlib.contextmanager
def default_device(device):
    prev = rumus.get_default_device()
    rumus.set_default_device(device)
    try:
        yield
    finally:
        rumus.set_default_device(prev)


def _bcast(v, ndim):
    return None if v is None else v.reshape((1, -1) + (1,) * (ndim - 2))


def norm_ref(x, axes, eps, weight=None, bias=None, mean=None, var=None):
    """(x - mean) / sqrt(var + eps) * weight + bias; batch statistics over ``axes`` unless given."""
    x64 = x.astype(np.float64)
    if mean is None:
        mean = x64.mean(axes, keepdims=True)
        var = x64.var(axes, keepdims=True)
    out = (x64 - mean) / np.sqrt(var + eps)
    if weight is not None:
        out = out * weight
    if bias is not None:
        out = out + bias
    return out.astype(x.dtype)


def norm_grad_ref(x, g, axes, eps, scale=None):
    """Input gradient of sum(g * norm(x) * scale) for batch statistics over ``axes``:
    invstd * (h - mean(h) - xhat * mean(h * xhat)) with h = g * scale."""
    mean = x.mean(axes, keepdims=True)
    invstd = 1 / np.sqrt(x.var(axes, keepdims=True) + eps)
    xhat = (x - mean) * invstd
    h = g if scale is None else g * scale
    return invstd * (h - h.mean(axes, keepdims=True) - xhat * (h * xhat).mean(axes, keepdims=True))


def _rand(shape, rng, dtype="float64", lo=-2.0, hi=2.0):
    return rng.uniform(lo, hi, shape).astype(dtype)


BN_SHAPES = [(4, 3), (3, 2, 5), (2, 3, 4, 3)]

# ---------------------------------------------------------------- batch_norm


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape", BN_SHAPES, ids=str)
def test_batch_norm_eval_uses_running_stats(shape, affine, rng, device):
    c = shape[1]
    T = lambda a: None if a is None else tensor(a, device=device)  # noqa: E731
    for dtype in float_dtypes(device):
        x = _rand(shape, rng, dtype)
        rm, rv = _rand((c,), rng, dtype), _rand((c,), rng, dtype, 0.5, 2.0)
        w, b = (_rand((c,), rng, dtype), _rand((c,), rng, dtype)) if affine else (None, None)
        out = F.batch_norm(T(x), T(rm), T(rv), T(w), T(b), eps=1e-3)
        exp = norm_ref(
            x,
            None,
            1e-3,
            _bcast(w, x.ndim),
            _bcast(b, x.ndim),
            _bcast(rm, x.ndim),
            _bcast(rv, x.ndim),
        )
        assert_close(out, exp, **_tol(dtype))


@pytest.mark.parametrize("shape", BN_SHAPES, ids=str)
def test_batch_norm_training_values_and_running_update(shape, rng, device):
    c = shape[1]
    axes = (0,) + tuple(range(2, len(shape)))
    n = np.prod(shape) // c
    T = lambda a: tensor(a, device=device)  # noqa: E731
    for dtype in float_dtypes(device):
        x = _rand(shape, rng, dtype)
        w, b = _rand((c,), rng, dtype), _rand((c,), rng, dtype)
        rm0, rv0 = _rand((c,), rng, dtype), _rand((c,), rng, dtype, 0.5, 2.0)
        rm, rv = T(rm0), T(rv0)
        out = F.batch_norm(T(x), rm, rv, T(w), T(b), training=True, momentum=0.3, eps=1e-4)
        assert_close(
            out, norm_ref(x, axes, 1e-4, _bcast(w, x.ndim), _bcast(b, x.ndim)), **_tol(dtype)
        )
        x64 = x.astype(np.float64)
        assert_close(rm, (0.7 * rm0 + 0.3 * x64.mean(axes)).astype(dtype), **_tol(dtype))
        assert_close(
            rv, (0.7 * rv0 + 0.3 * x64.var(axes) * n / (n - 1)).astype(dtype), **_tol(dtype)
        )


def test_batch_norm_training_without_running_stats(rng, device):
    x = _rand((5, 3, 2), rng, wide(device))
    assert_close(
        F.batch_norm(tensor(x, device=device), None, None, training=True),
        norm_ref(x, (0, 2), 1e-5),
        **tol(device),
    )


def test_batch_norm_running_stats_stay_out_of_the_graph(rng, device):
    x = leaf(_rand((4, 3), rng), device)
    rm, rv = (
        tensor(np.zeros(3, wide(device)), device=device),
        tensor(np.ones(3, wide(device)), device=device),
    )
    F.batch_norm(x * 2, rm, rv, training=True).sum().backward()
    assert not rm.requires_grad and rm.grad_fn is None and not rv.requires_grad
    # the running-stat update is the momentum average of the detached batch statistics
    ac(rm, 0.1 * (2 * to_np(x).astype(np.float64)).mean(0), device)


def test_batch_norm_momentum_one_and_zero(rng, device):
    x = _rand((6, 2), rng, wide(device))
    T = lambda a: tensor(np.asarray(a, wide(device)), device=device)  # noqa: E731
    rm, rv = T(np.full(2, 5.0)), T(np.full(2, 7.0))
    F.batch_norm(T(x), rm, rv, training=True, momentum=0.0)
    ac(rm, np.full(2, 5.0), device)
    ac(rv, np.full(2, 7.0), device)
    F.batch_norm(T(x), rm, rv, training=True, momentum=1.0)
    x = x.astype(np.float64)
    ac(rm, x.mean(0), device)
    ac(rv, x.var(0, ddof=1), device)


@pytest.mark.parametrize("shape", BN_SHAPES, ids=str)
def test_batch_norm_training_gradient_closed_form(shape, rng, device):
    c = shape[1]
    axes = (0,) + tuple(range(2, len(shape)))
    x, w, b = (
        leaf(_rand(shape, rng), device),
        leaf(_rand((c,), rng), device),
        leaf(_rand((c,), rng), device),
    )
    out = F.batch_norm(x, None, None, w, b, training=True, eps=1e-3)
    g = _rand(shape, rng, wide(device))
    out.backward(tensor(g, device=device))
    xv, wv, g = to_np(x).astype(np.float64), to_np(w).astype(np.float64), g.astype(np.float64)
    xhat = (xv - xv.mean(axes, keepdims=True)) / np.sqrt(xv.var(axes, keepdims=True) + 1e-3)
    ac(x.grad, norm_grad_ref(xv, g, axes, 1e-3, _bcast(wv, len(shape))), device)
    ac(w.grad, (g * xhat).sum(axes), device)
    ac(b.grad, g.sum(axes), device)


def test_batch_norm_eval_gradient(rng, device):
    x, w = leaf(_rand((3, 2, 4), rng), device), leaf(_rand((2,), rng), device)
    rm, rv = _rand((2,), rng, wide(device)), _rand((2,), rng, wide(device), lo=0.5)
    F.batch_norm(
        x, tensor(rm, device=device), tensor(rv, device=device), w, training=False
    ).sum().backward()
    rm, rv = rm.astype(np.float64), rv.astype(np.float64)
    xv, wv = to_np(x).astype(np.float64), to_np(w).astype(np.float64)
    ac(x.grad, np.broadcast_to((wv / np.sqrt(rv + 1e-5))[None, :, None], (3, 2, 4)), device)
    ac(w.grad, ((xv - rm[None, :, None]) / np.sqrt(rv + 1e-5)[None, :, None]).sum((0, 2)), device)


def test_batch_norm_noncontiguous(rng, device):
    x = _rand((4, 3, 5), rng, wide(device))
    for kind, t, e in noncontig(x, wide(device), device):
        (
            assert_close(
                F.batch_norm(t, None, None, training=True), norm_ref(e, (0, 2), 1e-5), **tol(device)
            ),
            kind,
        )


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.batch_norm(rumus.zeros(1, 3), rumus.zeros(3), rumus.ones(3), training=True),
            ValueError,
            r"Expected more than 1 value per channel when training, got input size .*\[1, 3\]",
        ),
        (
            lambda: F.batch_norm(rumus.zeros(4, 3), None, None),
            RuntimeError,
            r"running_mean must be defined in evaluation mode",
        ),
        (
            lambda: F.batch_norm(rumus.zeros(4, 3), rumus.zeros(3), None),
            RuntimeError,
            r"running_var must be defined",
        ),
        (
            lambda: F.batch_norm(rumus.zeros(4, 3), rumus.zeros(3), None, training=True),
            ValueError,
            r"both be None",
        ),
        (
            lambda: F.batch_norm(rumus.zeros(4, 3), rumus.zeros(4), rumus.ones(4)),
            RuntimeError,
            r"running_mean should contain 3 elements not 4",
        ),
        (
            lambda: F.batch_norm(rumus.zeros(4, 3), rumus.zeros(3), rumus.ones(3), rumus.ones(2)),
            RuntimeError,
            r"weight should contain 3 elements not 2",
        ),
        (
            lambda: F.batch_norm(
                rumus.zeros(4, 3), rumus.zeros(3), rumus.ones(3), None, rumus.ones(5)
            ),
            RuntimeError,
            r"bias should contain 3 elements not 5",
        ),
        (
            lambda: F.batch_norm(rumus.zeros(4), rumus.zeros(4), rumus.ones(4)),
            RuntimeError,
            r"\[4\]",
        ),
    ],
)
def test_batch_norm_bad_input(call, exc, match, device):
    with default_device(device), pytest.raises(exc, match=match):
        call()


# ---------------------------------------------------------------- layer_norm


# (70, 37): rows in several tasks, rows of whole 16-lane chunks plus a tail.
LN_CASES = [((70, 37), (37,)), ((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((2, 3, 4), [4]), ((6,), (6,))]


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,ns", LN_CASES, ids=str)
def test_layer_norm_values(shape, ns, affine, rng, device):
    axes = tuple(range(-len(ns), 0))
    T = lambda a: None if a is None else tensor(a, device=device)  # noqa: E731
    for dtype in float_dtypes(device):
        x = _rand(shape, rng, dtype)
        w, b = (
            (_rand(tuple(ns), rng, dtype), _rand(tuple(ns), rng, dtype)) if affine else (None, None)
        )
        out = F.layer_norm(T(x), ns, T(w), T(b), 1e-3)
        assert_close(out, norm_ref(x, axes, 1e-3, w, b), **_tol(dtype))


def test_layer_norm_weight_without_bias_and_keywords(rng, device):
    x, w = _rand((3, 4), rng, wide(device)), _rand((4,), rng, wide(device))
    T = lambda a: tensor(a, device=device)  # noqa: E731
    assert_close(F.layer_norm(T(x), (4,), weight=T(w)), norm_ref(x, -1, 1e-5, w), **tol(device))
    assert_close(
        F.layer_norm(T(x), normalized_shape=[4], bias=T(w), eps=0.1),
        norm_ref(x, -1, 0.1, None, w),
        **tol(device),
    )


@pytest.mark.parametrize("shape,ns", LN_CASES[:4], ids=str)
def test_layer_norm_gradient_closed_form(shape, ns, rng, device):
    axes = tuple(range(-len(ns), 0))
    x, w, b = (
        leaf(_rand(shape, rng), device),
        leaf(_rand(tuple(ns), rng), device),
        leaf(_rand(tuple(ns), rng), device),
    )
    out = F.layer_norm(x, ns, w, b)
    g = _rand(shape, rng, wide(device))
    out.backward(tensor(g, device=device))
    xv, g = to_np(x).astype(np.float64), g.astype(np.float64)
    xhat = (xv - xv.mean(axes, keepdims=True)) / np.sqrt(xv.var(axes, keepdims=True) + 1e-5)
    batch = tuple(range(len(shape) - len(ns)))
    ac(x.grad, norm_grad_ref(xv, g, axes, 1e-5, to_np(w).astype(np.float64)), device)
    ac(w.grad, (g * xhat).sum(batch), device)
    ac(b.grad, g.sum(batch), device)


def test_layer_norm_noncontiguous(rng, device):
    x = _rand((4, 3, 5), rng, wide(device))
    for kind, t, e in noncontig(x, wide(device), device):
        if kind != "expanded":
            assert_close(F.layer_norm(t, (3, 5)), norm_ref(e, (1, 2), 1e-5), **tol(device)), kind


@pytest.mark.parametrize(
    "call,match",
    [
        (lambda: F.layer_norm(rumus.zeros(4, 6), (5,)), r"normalized_shape=\[5\].*\[4, 6\]"),
        (lambda: F.layer_norm(rumus.zeros(4, 6), (4, 6, 1)), r"\[4, 6\]"),
        (lambda: F.layer_norm(rumus.zeros(4, 6), (6,), rumus.ones(5)), r"weight"),
        (lambda: F.layer_norm(rumus.zeros(4, 6), (6,), None, rumus.ones(5)), r"bias"),
    ],
)
def test_layer_norm_bad_input(call, match, device):
    with default_device(device), pytest.raises(RuntimeError, match=match):
        call()


# ---------------------------------------------------------------- group_norm


GN_CASES = [((2, 6, 3), 3), ((2, 6, 3), 1), ((2, 6, 3), 6), ((3, 4, 2, 3), 2), ((2, 4), 2)]


@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("shape,groups", GN_CASES, ids=str)
def test_group_norm_values(shape, groups, affine, rng, device):
    n, c = shape[:2]
    T = lambda a: None if a is None else tensor(a, device=device)  # noqa: E731
    for dtype in float_dtypes(device):
        x = _rand(shape, rng, dtype)
        w, b = (_rand((c,), rng, dtype), _rand((c,), rng, dtype)) if affine else (None, None)
        out = F.group_norm(T(x), groups, T(w), T(b), 1e-3)
        exp = norm_ref(x.reshape(n, groups, -1), -1, 1e-3).reshape(shape).astype(np.float64)
        if affine:
            exp = exp * _bcast(w, x.ndim) + _bcast(b, x.ndim)
        assert_close(out, exp.astype(dtype), **_tol(dtype))


def test_group_norm_gradient_closed_form(rng, device):
    x = leaf(_rand((2, 6, 3), rng), device)
    out = F.group_norm(x, 3)
    g = _rand((2, 6, 3), rng, wide(device))
    out.backward(tensor(g, device=device))
    xv, g = to_np(x).astype(np.float64).reshape(2, 3, 6), g.astype(np.float64)
    ac(x.grad, norm_grad_ref(xv, g.reshape(2, 3, 6), -1, 1e-5).reshape(2, 6, 3), device)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.group_norm(rumus.zeros(4, 6, 2), 4),
            RuntimeError,
            r"divisible by num_groups.*\[4, 6, 2\].*num_groups=4",
        ),
        (
            lambda: F.group_norm(rumus.zeros(4, 6, 2), 3, rumus.ones(3)),
            RuntimeError,
            r"weight of shape \[3\].*\[4, 6, 2\]",
        ),
        (
            lambda: F.group_norm(rumus.zeros(4, 6, 2), 3, None, rumus.ones(4)),
            RuntimeError,
            r"bias of shape \[4\]",
        ),
        (lambda: F.group_norm(rumus.zeros(4), 2), RuntimeError, r"at least 2 dimensions"),
        (
            lambda: F.group_norm(rumus.zeros(1, 6), 6),
            ValueError,
            r"Expected more than 1 value per channel",
        ),
    ],
)
def test_group_norm_bad_input(call, exc, match, device):
    with default_device(device), pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------------- instance_norm


@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 2, 3)], ids=str)
def test_instance_norm_values_and_running_update(shape, rng, device):
    c = shape[1]
    axes = tuple(range(2, len(shape)))
    fd, T = wide(device), lambda a: tensor(a, device=device)
    x, w, b = _rand(shape, rng, fd), _rand((c,), rng, fd), _rand((c,), rng, fd)
    assert_close(F.instance_norm(T(x)), norm_ref(x, axes, 1e-5), **tol(device))
    rm0, rv0 = _rand((c,), rng, fd), _rand((c,), rng, fd, lo=0.5)
    rm, rv = T(rm0), T(rv0)
    out = F.instance_norm(T(x), rm, rv, T(w), T(b), momentum=0.2, eps=1e-3)
    assert_close(out, norm_ref(x, axes, 1e-3, _bcast(w, x.ndim), _bcast(b, x.ndim)), **tol(device))
    # running stats: momentum average of the batch mean of the per-instance statistics
    x, rm0, rv0 = x.astype(np.float64), rm0.astype(np.float64), rv0.astype(np.float64)
    ac(rm, 0.8 * rm0 + 0.2 * x.mean(axes).mean(0), device)
    ac(rv, 0.8 * rv0 + 0.2 * x.var(axes, ddof=1).mean(0), device)


def test_instance_norm_with_running_stats(rng, device):
    fd, T = wide(device), lambda a: tensor(a, device=device)
    x, rm, rv = _rand((2, 3, 4), rng, fd), _rand((3,), rng, fd), _rand((3,), rng, fd, lo=0.5)
    out = F.instance_norm(T(x), T(rm), T(rv), use_input_stats=False)
    assert_close(out, norm_ref(x, None, 1e-5, mean=_bcast(rm, 3), var=_bcast(rv, 3)), **tol(device))


def test_instance_norm_gradient_closed_form(rng, device):
    x = leaf(_rand((2, 3, 5), rng), device)
    out = F.instance_norm(x)
    g = _rand((2, 3, 5), rng, wide(device))
    out.backward(tensor(g, device=device))
    ac(x.grad, norm_grad_ref(to_np(x).astype(np.float64), g.astype(np.float64), -1, 1e-5), device)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.instance_norm(rumus.zeros(4, 3, 1)),
            ValueError,
            r"more than 1 spatial element.*\[4, 3, 1\]",
        ),
        (lambda: F.instance_norm(rumus.zeros(3, 5)), ValueError, r"more than 1 spatial element"),
        (
            lambda: F.instance_norm(rumus.zeros(4, 3, 2), use_input_stats=False),
            RuntimeError,
            r"running_mean and running_var to be defined",
        ),
        (
            lambda: F.instance_norm(rumus.zeros(4, 3, 2), weight=rumus.ones(2)),
            RuntimeError,
            r"weight should contain 3",
        ),
    ],
)
def test_instance_norm_bad_input(call, exc, match, device):
    with default_device(device), pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------------------ rms_norm


@pytest.mark.parametrize(
    "shape,ns", [((4, 5), (5,)), ((2, 3, 4), (3, 4)), ((2, 3, 4), [4])], ids=str
)
def test_rms_norm_values(shape, ns, rng, device):
    axes = tuple(range(-len(ns), 0))
    T = lambda a: tensor(a, device=device)  # noqa: E731
    for dtype in float_dtypes(device):
        eps_default = np.finfo(dtype).eps
        x, w = _rand(shape, rng, dtype), _rand(tuple(ns), rng, dtype)
        x64 = x.astype(np.float64)
        rms = np.sqrt((x64**2).mean(axes, keepdims=True) + eps_default)
        assert_close(F.rms_norm(T(x), ns), (x64 / rms).astype(dtype), **_tol(dtype))
        rms = np.sqrt((x64**2).mean(axes, keepdims=True) + 0.1)
        assert_close(
            F.rms_norm(T(x), ns, T(w), eps=0.1), (x64 / rms * w).astype(dtype), **_tol(dtype)
        )


def test_rms_norm_eps_default_is_dtype_epsilon(device):
    # all-zero rows: out = 0 * rsqrt(eps); a row of tiny values shows eps directly
    fd = wide(device)
    x = np.full((1, 4), 1e-4, fd)
    exp = x.astype(np.float64) / np.sqrt(1e-8 + np.finfo(fd).eps)
    assert_close(F.rms_norm(tensor(x, device=device), (4,)), exp.astype(fd), **tol(device))


def test_rms_norm_gradient_closed_form(rng, device):
    x, w = leaf(_rand((3, 4), rng), device), leaf(_rand((4,), rng), device)
    out = F.rms_norm(x, (4,), w, eps=1e-3)
    g = _rand((3, 4), rng, wide(device))
    out.backward(tensor(g, device=device))
    xv, wv, g = to_np(x).astype(np.float64), to_np(w).astype(np.float64), g.astype(np.float64)
    r = 1 / np.sqrt((xv**2).mean(-1, keepdims=True) + 1e-3)
    h = g * wv
    ac(x.grad, r * h - xv * r**3 * (h * xv).mean(-1, keepdims=True), device)
    ac(w.grad, (g * xv * r).sum(0), device)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.rms_norm(rumus.zeros(4, 6), (5,)),
            RuntimeError,
            r"normalized_shape=\[5\].*\[4, 6\]",
        ),
        (
            lambda: F.rms_norm(rumus.zeros(4, 6), (6,), rumus.ones(5)),
            RuntimeError,
            r"weight of shape \[5\].*\[6\]",
        ),
        (lambda: F.rms_norm(rumus.zeros(4, 6), 6), TypeError, r"normalized_shape"),
    ],
)
def test_rms_norm_bad_input(call, exc, match, device):
    with default_device(device), pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------------- PyTorch cross-checks


def _grads_vs_torch(torch, rfn, tfn, arrays, rng, tol, device="cpu"):
    """Values and gradients of every array input (None passes through)."""
    rin = [
        None if a is None else rumus.tensor(a, requires_grad=True, device=device) for a in arrays
    ]
    tin = [None if a is None else torch.tensor(a, requires_grad=True) for a in arrays]
    out, ref = rfn(*rin), tfn(*tin)
    np.testing.assert_allclose(to_np(out), ref.detach().numpy(), **tol)
    g = rng.uniform(-1, 1, tuple(ref.shape)).astype(arrays[0].dtype)
    out.backward(rumus.tensor(g, device=device))
    ref.backward(torch.tensor(g))
    for r, t in zip(rin, tin):
        if r is not None:
            np.testing.assert_allclose(to_np(r.grad), t.grad.numpy(), **tol)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_norms_vs_torch(dtype, rng, device):
    if device == "gpu" and dtype == "float64":
        pytest.skip("float64 is not supported on the GPU (by design)")
    torch = pytest.importorskip("torch")
    tf = torch.nn.functional
    tol = dict(rtol=1e-4, atol=1e-5) if dtype == "float32" else dict(rtol=1e-9, atol=1e-10)
    for shape in BN_SHAPES:
        c = shape[1]
        x, w, b = _rand(shape, rng, dtype), _rand((c,), rng, dtype), _rand((c,), rng, dtype)
        rm, rv = _rand((c,), rng, dtype), _rand((c,), rng, dtype, 0.5, 2.0)
        for training in (False, True):
            rr = [rumus.tensor(rm, device=device), rumus.tensor(rv, device=device)]
            tr = [torch.tensor(rm), torch.tensor(rv)]
            _grads_vs_torch(
                torch,
                lambda x, w, b: F.batch_norm(x, *rr, w, b, training, 0.2, 1e-3),
                lambda x, w, b: tf.batch_norm(x, *tr, w, b, training, 0.2, 1e-3),
                [x, w, b],
                rng,
                tol,
                device,
            )
            for r, t in zip(rr, tr):
                np.testing.assert_allclose(to_np(r), t.numpy(), **tol)
        _grads_vs_torch(
            torch,
            lambda x: F.batch_norm(x, None, None, training=True),
            lambda x: tf.batch_norm(x, None, None, training=True),
            [x],
            rng,
            tol,
            device,
        )
    for shape, ns in LN_CASES:
        x, w, b = (
            _rand(shape, rng, dtype),
            _rand(tuple(ns), rng, dtype),
            _rand(tuple(ns), rng, dtype),
        )
        _grads_vs_torch(
            torch,
            lambda x, w, b: F.layer_norm(x, ns, w, b),
            lambda x, w, b: tf.layer_norm(x, ns, w, b),
            [x, w, b],
            rng,
            tol,
            device,
        )
        _grads_vs_torch(
            torch,
            lambda x, w: F.rms_norm(x, ns, w),
            lambda x, w: tf.rms_norm(x, ns, w),
            [x, w],
            rng,
            tol,
            device,
        )
        _grads_vs_torch(
            torch,
            lambda x: F.rms_norm(x, ns, eps=0.01),
            lambda x: tf.rms_norm(x, ns, eps=0.01),
            [x],
            rng,
            tol,
            device,
        )
    for shape, groups in GN_CASES:
        c = shape[1]
        x, w, b = _rand(shape, rng, dtype), _rand((c,), rng, dtype), _rand((c,), rng, dtype)
        _grads_vs_torch(
            torch,
            lambda x, w, b: F.group_norm(x, groups, w, b, 1e-3),
            lambda x, w, b: tf.group_norm(x, groups, w, b, 1e-3),
            [x, w, b],
            rng,
            tol,
            device,
        )
    for shape in [(2, 3, 4), (2, 3, 2, 3)]:
        c = shape[1]
        x, w, b = _rand(shape, rng, dtype), _rand((c,), rng, dtype), _rand((c,), rng, dtype)
        rm, rv = _rand((c,), rng, dtype), _rand((c,), rng, dtype, 0.5, 2.0)
        for use_input_stats in (True, False):
            rr = [rumus.tensor(rm, device=device), rumus.tensor(rv, device=device)]
            tr = [torch.tensor(rm), torch.tensor(rv)]
            _grads_vs_torch(
                torch,
                lambda x, w, b: F.instance_norm(x, *rr, w, b, use_input_stats, 0.3),
                lambda x, w, b: tf.instance_norm(x, *tr, w, b, use_input_stats, 0.3),
                [x, w, b],
                rng,
                tol,
                device,
            )
            for r, t in zip(rr, tr):
                np.testing.assert_allclose(to_np(r), t.numpy(), **tol)
