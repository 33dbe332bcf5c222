"""Activations and softmax family against NumPy closed forms: values, first
derivatives, options (alpha, slope, beta/threshold, approximate, dim, dtype), the
inplace= forms (same tensor back, autograd through them), views and float32;
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
    log_softmax_ref,
    noncontig,
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


SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
_erf = np.vectorize(math.erf)


def _sigmoid(x):
    return np.exp(-np.logaddexp(0, -x))


def _softplus(x):
    return np.logaddexp(0, x)


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def _d_gelu_tanh(x):
    k = math.sqrt(2 / math.pi)
    u = k * (x + 0.044715 * x**3)
    return 0.5 * (1 + np.tanh(u)) + 0.5 * x * (1 - np.tanh(u) ** 2) * k * (1 + 3 * 0.044715 * x**2)


def _mish(x):
    return x * np.tanh(_softplus(x))


def _d_mish(x):
    t = np.tanh(_softplus(x))
    return t + x * (1 - t * t) * _sigmoid(x)


# name: (call, numpy value, numpy derivative); inputs avoid the kinks (0, +-1, +-3, 6)
ACTS = {
    "relu": (lambda t: F.relu(t), lambda x: np.maximum(x, 0), lambda x: (x > 0) * 1.0),
    "relu6": (
        lambda t: F.relu6(t),
        lambda x: np.clip(x, 0, 6),
        lambda x: ((x > 0) & (x < 6)) * 1.0,
    ),
    "hardtanh": (
        lambda t: F.hardtanh(t),
        lambda x: np.clip(x, -1, 1),
        lambda x: (np.abs(x) < 1) * 1.0,
    ),
    "hardtanh_range": (
        lambda t: F.hardtanh(t, -0.5, 2.0),
        lambda x: np.clip(x, -0.5, 2),
        lambda x: ((x > -0.5) & (x < 2)) * 1.0,
    ),
    "elu": (
        lambda t: F.elu(t),
        lambda x: np.where(x > 0, x, np.expm1(x)),
        lambda x: np.where(x > 0, 1, np.exp(x)),
    ),
    "elu_alpha": (
        lambda t: F.elu(t, alpha=0.5),
        lambda x: np.where(x > 0, x, 0.5 * np.expm1(x)),
        lambda x: np.where(x > 0, 1, 0.5 * np.exp(x)),
    ),
    "selu": (
        lambda t: F.selu(t),
        lambda x: SELU_SCALE * np.where(x > 0, x, SELU_ALPHA * np.expm1(x)),
        lambda x: SELU_SCALE * np.where(x > 0, 1, SELU_ALPHA * np.exp(x)),
    ),
    "celu": (
        lambda t: F.celu(t, alpha=0.7),
        lambda x: np.where(x > 0, x, 0.7 * np.expm1(x / 0.7)),
        lambda x: np.where(x > 0, 1, np.exp(x / 0.7)),
    ),
    "leaky_relu": (
        lambda t: F.leaky_relu(t),
        lambda x: np.where(x > 0, x, 0.01 * x),
        lambda x: np.where(x > 0, 1, 0.01),
    ),
    "leaky_relu_slope": (
        lambda t: F.leaky_relu(t, 0.2),
        lambda x: np.where(x > 0, x, 0.2 * x),
        lambda x: np.where(x > 0, 1, 0.2),
    ),
    "gelu": (
        lambda t: F.gelu(t),
        lambda x: 0.5 * x * (1 + _erf(x / math.sqrt(2))),
        lambda x: (
            0.5 * (1 + _erf(x / math.sqrt(2))) + x * np.exp(-x * x / 2) / math.sqrt(2 * math.pi)
        ),
    ),
    "gelu_tanh": (lambda t: F.gelu(t, approximate="tanh"), _gelu_tanh, _d_gelu_tanh),
    "silu": (
        lambda t: F.silu(t),
        lambda x: x * _sigmoid(x),
        lambda x: _sigmoid(x) * (1 + x * (1 - _sigmoid(x))),
    ),
    "mish": (lambda t: F.mish(t), _mish, _d_mish),
    "hardsigmoid": (
        lambda t: F.hardsigmoid(t),
        lambda x: np.clip(x / 6 + 0.5, 0, 1),
        lambda x: (np.abs(x) < 3) / 6,
    ),
    "hardswish": (
        lambda t: F.hardswish(t),
        lambda x: x * np.clip(x / 6 + 0.5, 0, 1),
        lambda x: np.where(x < -3, 0, np.where(x > 3, 1, x / 3 + 0.5)),
    ),
    "logsigmoid": (lambda t: F.logsigmoid(t), lambda x: -_softplus(-x), lambda x: 1 - _sigmoid(x)),
    "softsign": (
        lambda t: F.softsign(t),
        lambda x: x / (1 + np.abs(x)),
        lambda x: 1 / (1 + np.abs(x)) ** 2,
    ),
    "softplus": (lambda t: F.softplus(t), _softplus, _sigmoid),
    "softplus_beta": (
        lambda t: F.softplus(t, beta=2.0, threshold=3.0),
        lambda x: np.where(2 * x > 3, x, _softplus(2 * x) / 2),
        lambda x: np.where(2 * x > 3, 1, _sigmoid(2 * x)),
    ),
    "sigmoid": (lambda t: F.sigmoid(t), _sigmoid, lambda x: _sigmoid(x) * (1 - _sigmoid(x))),
    "tanh": (lambda t: F.tanh(t), np.tanh, lambda x: 1 - np.tanh(x) ** 2),
    "threshold": (
        lambda t: F.threshold(t, 0.5, -2.0),
        lambda x: np.where(x > 0.5, x, -2.0),
        lambda x: (x > 0.5) * 1.0,
    ),
}


def _inputs(rng, shape=(3, 5), dtype="float64"):
    x = rng.uniform(-4, 7, shape)
    kinks = np.array([-3, -1, -0.5, 0, 0.5, 1, 1.5, 2, 3, 6])
    near = np.abs(x[..., None] - kinks).min(-1) < 0.1
    x[near] += 0.25
    return x.astype(dtype)


@pytest.mark.parametrize("name", list(ACTS))
def test_activation_values(name, rng, device):
    call, fn, _ = ACTS[name]
    for dtype in float_dtypes(device):
        x = _inputs(rng, dtype=dtype)
        assert_close(
            call(tensor(x, device=device)),
            fn(x.astype(np.float64)).astype(dtype),
            **(F32 if dtype == "float32" else {}),
        )


@pytest.mark.parametrize("name", list(ACTS))
def test_activation_derivatives(name, rng, device):
    call, _, dfn = ACTS[name]
    x = dleaf(_inputs(rng), device)
    g = rng.uniform(-1, 1, (3, 5)).astype(wide(device))
    call(x).backward(tensor(g, device=device))
    ac(x.grad, g.astype(np.float64) * dfn(to_np(x).astype(np.float64)), device)


# float32 on the CPU runs vectorized kernels (rust/backend/cpu/vmath.rs), and the backward of
# these is one fused pass unless it is differentiated again: checked over wide ranges, with the
# vector blocks and their tails, against float64 closed forms and against the recorded formulas.
FAST = ["gelu", "gelu_tanh", "silu", "mish", "elu", "elu_alpha", "softplus", "softplus_beta"]
FAST += ["leaky_relu", "sigmoid", "tanh", "hardsigmoid", "hardswish"]


def _wide_inputs(rng, n=1037):
    x = np.concatenate([rng.uniform(-15, 15, n - 37), rng.normal(0, 1, 37)])
    kinks = np.array([-3, -1.5, 0, 1.5, 3])  # softplus_beta switches at 1.5
    near = np.abs(x[:, None] - kinks).min(-1) < 1e-3
    x[near] += 0.01
    return x.astype(np.float32)


@pytest.mark.parametrize("name", FAST)
def test_activation_float32_kernels(name, rng):
    call, fn, dfn = ACTS[name]
    x = _wide_inputs(rng)
    ref = fn(x.astype(np.float64))
    assert_close(call(tensor(x)), ref.astype(np.float32), rtol=4e-6, atol=1e-7)
    g = rng.uniform(-1, 1, x.shape).astype(np.float32)
    dref = g.astype(np.float64) * dfn(x.astype(np.float64))
    for view in (False, True):  # contiguous, and a strided view of x and g
        xs, gs = (x, g) if not view else (np.repeat(x, 2)[::2], np.repeat(g, 2)[::2])
        xt = rumus.tensor(np.repeat(xs, 2) if view else xs, requires_grad=True)
        leaf = xt[::2] if view else xt
        gt = rumus.tensor(np.repeat(gs, 2))[::2] if view else rumus.tensor(gs)
        (dx,) = rumus.autograd.grad(call(leaf), leaf if not view else xt, gt)
        got = to_np(dx)[::2] if view else to_np(dx)
        np.testing.assert_allclose(got, dref, rtol=2e-5, atol=2e-6)
    # The backward of a sum: one gradient value broadcast.
    xt = rumus.tensor(x, requires_grad=True)
    call(xt).sum().backward()
    np.testing.assert_allclose(to_np(xt.grad), dfn(x.astype(np.float64)), rtol=2e-5, atol=2e-6)
    # The recorded formulas (create_graph) give the same first derivative.
    xt = rumus.tensor(x, requires_grad=True)
    (fused,) = rumus.autograd.grad(call(xt), xt, rumus.tensor(g))
    (recorded,) = rumus.autograd.grad(call(xt), xt, rumus.tensor(g), create_graph=True)
    np.testing.assert_allclose(to_np(fused), to_np(recorded.detach()), rtol=2e-5, atol=2e-6)


def test_activation_float32_special_values():
    x = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-30, -1e-30, -50.0, 50.0], np.float32)
    out = {n: to_np(ACTS[n][0](tensor(x))) for n in ("gelu", "elu", "softplus", "mish", "silu")}
    np.testing.assert_array_equal(out["gelu"][[0, 2, 7, 8]], [0, np.inf, -0.0, 50])
    assert np.isnan(out["gelu"][4]) and np.signbit(out["gelu"][1])
    np.testing.assert_array_equal(out["elu"][[0, 2, 3, 7, 8]], [0, np.inf, -1, -1, 50])
    np.testing.assert_array_equal(out["softplus"][[2, 3, 8]], [np.inf, 0, 50])
    np.testing.assert_allclose(out["softplus"][[5, 6, 7]], [math.log(2)] * 2 + [math.exp(-50)])
    np.testing.assert_allclose(
        out["mish"][[5, 6, 8]],
        [1e-30 * math.tanh(math.log(2))] * 1 + [-1e-30 * math.tanh(math.log(2)), 50],
        rtol=1e-6,
    )
    assert all(np.isnan(v[4]) for v in out.values())
    # GELU keeps relative accuracy in its lower tail, where 1 + erf(x/sqrt 2) cancels.
    tail = np.array([-5.0, -8.0, -12.0], np.float32)
    ref = [v * 0.5 * math.erfc(-v / math.sqrt(2)) for v in tail.astype(np.float64)]
    np.testing.assert_allclose(to_np(F.gelu(tensor(tail))), ref, rtol=2e-6)


def test_hard_activations_at_their_kinks(device):
    # PyTorch's values and its backward kernels' one-sided choices at -3 and 3.
    x = dleaf(np.array([-4.0, -3.0, -1.5, 0.0, 3.0, 4.0]), device)
    F.hardswish(x).backward(tensor(np.ones(6, wide(device)), device=device))
    ac(F.hardswish(x), [0, 0, -0.375, 0, 3, 4], device)
    ac(x.grad, [0, -0.5, 0, 0.5, 1.5, 1], device)
    x.grad = None
    F.hardsigmoid(x).backward(tensor(np.ones(6, wide(device)), device=device))
    ac(F.hardsigmoid(x), [0, 0, 0.25, 0.5, 1, 1], device)
    ac(x.grad, [0, 0, 1 / 6, 1 / 6, 0, 0], device)
    # Differentiated again: hardswish'' is 1/3 between the kinks.
    x = dleaf(np.array([-4.0, -1.5, 1.0, 4.0]), device)
    (g,) = rumus.autograd.grad(F.hardswish(x).sum(), x, create_graph=True)
    g.sum().backward()
    ac(x.grad, [0, 1 / 3, 1 / 3, 0], device)
    nan = F.hardswish(tensor(np.array([np.nan], np.float32), device=device))
    assert np.isnan(to_np(nan)).all()


@pytest.mark.parametrize("name", ["relu", "gelu", "silu", "elu", "hardswish"])
def test_activation_views(name, rng, device):
    call, fn, _ = ACTS[name]
    x = _inputs(rng, (4, 3), wide(device))
    for kind, t, e in noncontig(x, wide(device), device):
        assert_close(call(t), fn(e.astype(np.float64)).astype(wide(device)), **tol(device)), kind


def test_activation_empty_and_0d(device):
    assert tuple(F.relu(rumus.zeros(0, 3).to(device)).shape) == (0, 3)
    fd = np.dtype(wide(device)).type
    assert_close(F.silu(tensor(fd(1.5), device=device)), fd(1.5 * _sigmoid(1.5)), **tol(device))


# inplace: name -> call with inplace=True
INPLACE = {
    "relu": lambda t: F.relu(t, inplace=True),
    "relu6": lambda t: F.relu6(t, True),
    "hardtanh": lambda t: F.hardtanh(t, inplace=True),
    "elu": lambda t: F.elu(t, inplace=True),
    "elu_alpha": lambda t: F.elu(t, 0.5, True),
    "selu": lambda t: F.selu(t, inplace=True),
    "celu": lambda t: F.celu(t, 0.7, True),
    "leaky_relu_slope": lambda t: F.leaky_relu(t, 0.2, True),
    "silu": lambda t: F.silu(t, inplace=True),
    "mish": lambda t: F.mish(t, inplace=True),
    "hardsigmoid": lambda t: F.hardsigmoid(t, inplace=True),
    "hardswish": lambda t: F.hardswish(t, inplace=True),
    "threshold": lambda t: F.threshold(t, 0.5, -2.0, True),
}


@pytest.mark.parametrize("name", list(INPLACE))
def test_inplace_activations(name, rng, device):
    _, fn, dfn = ACTS[name]
    x = _inputs(rng, dtype=wide(device))
    t = tensor(x, device=device)
    out = INPLACE[name](t)
    assert out is t
    x64 = x.astype(np.float64)
    assert_close(t, fn(x64).astype(wide(device)), **tol(device))
    # in place on a non-leaf that is part of a graph: the gradient flows through
    xl = dleaf(x, device)
    y = xl * 1.0
    assert INPLACE[name](y) is y
    y.sum().backward()
    ac(xl.grad, dfn(x64), device)


def test_inplace_on_leaf_requiring_grad_raises(rng, device):
    x = dleaf(_inputs(rng), device)
    for call in (INPLACE["relu"], INPLACE["elu"], INPLACE["leaky_relu_slope"]):
        with pytest.raises(RuntimeError, match="leaf Variable that requires grad"):
            call(x)


def test_prelu(rng, device):
    fd = wide(device)
    x = _inputs(rng, (2, 3, 4), fd)
    w = rng.uniform(0.1, 0.5, 3).astype(fd)
    xl, wl = dleaf(x, device), dleaf(w, device)
    out = F.prelu(xl, wl)
    x, w = x.astype(np.float64), w.astype(np.float64)
    ac(out, np.where(x > 0, x, w[:, None] * x), device)
    g = rng.uniform(-1, 1, x.shape).astype(fd)
    out.backward(tensor(g, device=device))
    g = g.astype(np.float64)
    ac(xl.grad, g * np.where(x > 0, 1, w[:, None]), device)
    ac(wl.grad, (g * np.minimum(x, 0)).sum((0, 2)), device)
    T = lambda a: tensor(np.asarray(a, fd), device=device)  # noqa: E731
    assert_close(
        F.prelu(T(x), T(np.array([0.25]))), np.where(x > 0, x, 0.25 * x).astype(fd), **tol(device)
    )
    assert_close(
        F.prelu(T(x[0, 0]), T(np.array([0.25]))),
        np.where(x[0, 0] > 0, x[0, 0], 0.25 * x[0, 0]).astype(fd),
        **tol(device),
    )


def test_glu(rng, device):
    fd = wide(device)
    x = _inputs(rng, (2, 6), fd)
    xl = dleaf(x, device)
    out = F.glu(xl)
    x = x.astype(np.float64)
    a, b = x[:, :3], x[:, 3:]
    ac(out, a * _sigmoid(b), device)
    out.sum().backward()
    ac(xl.grad, np.concatenate([_sigmoid(b), a * _sigmoid(b) * (1 - _sigmoid(b))], 1), device)
    assert_close(
        F.glu(tensor(x.T.astype(fd), device=device), 0),
        (a * _sigmoid(b)).T.astype(fd),
        **tol(device),
    )


# -------------------------------------------------------- softmax family


@pytest.mark.parametrize("dim", [0, 1, -1, 2])
def test_softmax_log_softmax_softmin(dim, rng, device):
    for dtype in float_dtypes(device):
        x = rng.uniform(-5, 5, (3, 4, 5)).astype(dtype)
        x64 = x.astype(np.float64)
        tol = F32 if dtype == "float32" else {}
        assert_close(
            F.softmax(tensor(x, device=device), dim),
            np.exp(log_softmax_ref(x64, dim)).astype(dtype),
            **tol,
        )
        assert_close(
            F.log_softmax(tensor(x, device=device), dim=dim),
            log_softmax_ref(x64, dim).astype(dtype),
            **tol,
        )
        assert_close(
            F.softmin(tensor(x, device=device), dim),
            np.exp(log_softmax_ref(-x64, dim)).astype(dtype),
            **tol,
        )


def test_softmax_dtype_argument(rng, device):
    # the point is a float64 result (dtype=rumus.float64)
    if device == "gpu":
        pytest.skip("float64 is not supported on the GPU (by design)")
    x = rng.uniform(-5, 5, (3, 4)).astype(np.float32)
    out = F.softmax(tensor(x), 1, dtype=rumus.float64)
    assert_close(out, np.exp(log_softmax_ref(x.astype(np.float64), 1)))
    assert_close(
        F.log_softmax(tensor(x), -1, dtype=rumus.float64), log_softmax_ref(x.astype(np.float64), 1)
    )
    assert_close(
        F.softmin(tensor(x), 1, dtype=rumus.float64),
        np.exp(log_softmax_ref(-x.astype(np.float64), 1)),
    )


def test_softmax_extreme_values_are_stable(device):
    x = np.array([[1000.0, 0.0, -1000.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    assert_close(
        F.softmax(tensor(x, device=device), 1),
        np.array([[1, 0, 0], [1 / 3, 1 / 3, 1 / 3]], np.float32),
    )
    assert_close(
        F.log_softmax(tensor(x, device=device), 1),
        np.array([[0, -1000, -2000], [-np.log(3)] * 3], np.float32),
    )


@pytest.mark.parametrize("n", [64, 300, 4096, 4097])
def test_softmax_rows_long_and_nonfinite(n, rng, device):
    # On the GPU rows up to 4096 stay in registers between the passes, longer ones
    # are read twice: both agree with the reference, with NaN for a row holding a
    # NaN or +inf or only -inf, forward and backward.
    x = rng.uniform(-8, 8, (5, n)).astype(np.float32)
    x[1, n // 3] = np.nan
    x[2, n - 1] = np.inf
    x[3, :] = -np.inf
    x[4, : n // 2] = -np.inf
    t = tensor(x, device=device).requires_grad_()
    with np.errstate(invalid="ignore"):
        ls = log_softmax_ref(x.astype(np.float64), 1)
    ls[1:4] = np.nan
    assert_close(F.log_softmax(t, 1), ls.astype(np.float32), rtol=1e-5, atol=1e-5)
    y = F.softmax(t, 1)
    s = np.exp(ls)
    assert_close(y, s.astype(np.float32), rtol=1e-5, atol=1e-6)
    g = rng.uniform(-1, 1, (5, n)).astype(np.float32)
    y.backward(tensor(g, device=device))
    ref = s * (g - (g * s).sum(1, keepdims=True))
    assert_close(t.grad[[0, 4]], ref[[0, 4]].astype(np.float32), rtol=1e-4, atol=1e-6)
    t.grad = None
    F.log_softmax(t, 1).backward(tensor(g, device=device))
    ref = g - s * g.sum(1, keepdims=True)
    assert_close(t.grad[[0, 4]], ref[[0, 4]].astype(np.float32), rtol=1e-4, atol=1e-5)


def test_softmax_gradients_closed_form(rng, device):
    x = dleaf(rng.uniform(-2, 2, (3, 4)), device)
    g = rng.uniform(-1, 1, (3, 4)).astype(wide(device))
    F.softmax(x, 1).backward(tensor(g, device=device))
    s = np.exp(log_softmax_ref(to_np(x).astype(np.float64), 1))
    ac(x.grad, s * (g - (g * s).sum(1, keepdims=True)), device)
    x.grad = None
    F.log_softmax(x, 1).backward(tensor(g, device=device))
    ac(x.grad, g - s * g.sum(1, keepdims=True), device)


def test_softmax_views(rng, device):
    fd = wide(device)
    x = rng.uniform(-2, 2, (4, 5)).astype(fd)
    for kind, t, e in noncontig(x, fd, device):
        e = e.astype(np.float64)
        assert_close(F.softmax(t, 1), np.exp(log_softmax_ref(e, 1)).astype(fd), **tol(device)), kind
        assert_close(F.log_softmax(t, 0), log_softmax_ref(e, 0).astype(fd), **tol(device)), kind


# ------------------------------------------------------------------ bad input


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.hardtanh(rumus.zeros(3), 1.0, 0.0),
            ValueError,
            r"min_val cannot be greater than max_val",
        ),
        (
            lambda: F.gelu(rumus.zeros(3), approximate="foo"),
            RuntimeError,
            r"approximate argument must be either none or tanh",
        ),
        (
            lambda: F.glu(rumus.zeros(2, 3)),
            RuntimeError,
            r"Halving dimension must be even, but dimension -1 is size 3",
        ),
        (lambda: F.glu(rumus.zeros(())), RuntimeError, r"glu does not support scalars"),
        (
            lambda: F.prelu(rumus.zeros(2, 4), rumus.ones(3)),
            RuntimeError,
            r"parameter numbers = 3 and channel size = 4",
        ),
        (lambda: F.softmax(rumus.zeros(2, 3), 2), IndexError, r"Dimension out of range"),
        (lambda: F.log_softmax(rumus.zeros(2, 3), -3), IndexError, r"Dimension out of range"),
    ],
)
def test_activation_bad_input(call, exc, match, device):
    with default_device(device), pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------------- PyTorch cross-checks


TORCH_ACTS = [
    ("relu", {}),
    ("relu6", {}),
    ("hardtanh", dict(min_val=-0.5, max_val=2.0)),
    ("elu", dict(alpha=0.5)),
    ("selu", {}),
    ("celu", dict(alpha=0.7)),
    ("leaky_relu", dict(negative_slope=0.2)),
    ("gelu", {}),
    ("gelu", dict(approximate="tanh")),
    ("silu", {}),
    ("mish", {}),
    ("hardsigmoid", {}),
    ("hardswish", {}),
    ("logsigmoid", {}),
    ("softsign", {}),
    ("softplus", {}),
    ("softplus", dict(beta=2.0, threshold=3.0)),
    ("sigmoid", {}),
    ("tanh", {}),
    ("threshold", dict(threshold=0.5, value=-2.0)),
    ("glu", dict(dim=1)),
    ("softmax", dict(dim=1)),
    ("log_softmax", dict(dim=0)),
    ("softmin", dict(dim=1)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_activations_vs_torch(dtype, rng, device):
    if device == "gpu" and dtype == "float64":
        pytest.skip("float64 is not supported on the GPU (by design)")
    torch = pytest.importorskip("torch")
    # PyTorch's float64 kernels of a few activations use float constants: compare at 1e-7
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == "float32" else dict(rtol=1e-7, atol=1e-9)
    for name, kw in TORCH_ACTS:
        x = _inputs(rng, (4, 6), dtype)
        g = rng.uniform(-1, 1, (4, 3) if name == "glu" else (4, 6)).astype(dtype)
        xr, xt = (
            rumus.tensor(x, requires_grad=True, device=device),
            torch.tensor(x, requires_grad=True),
        )
        out, ref = getattr(F, name)(xr, **kw), getattr(torch.nn.functional, name)(xt, **kw)
        np.testing.assert_allclose(to_np(out), ref.detach().numpy(), err_msg=name, **tol)
        out.backward(rumus.tensor(g, device=device))
        ref.backward(torch.tensor(g))
        np.testing.assert_allclose(to_np(xr.grad), xt.grad.numpy(), err_msg=name, **tol)
    x, w = _inputs(rng, (2, 3, 4), dtype), rng.uniform(0.1, 0.5, 3).astype(dtype)
    np.testing.assert_allclose(
        to_np(F.prelu(rumus.tensor(x, device=device), rumus.tensor(w, device=device))),
        torch.nn.functional.prelu(torch.tensor(x), torch.tensor(w)).numpy(),
        **tol,
    )
