"""Loss functions against NumPy references: reductions ('none', 'mean', 'sum'),
weights, ignore_index, label smoothing, class-index and class-probability targets,
N-d inputs, numerical stability at extreme inputs, the legacy size_average/reduce
arguments; gradients against closed forms; PyTorch cross-checks when installed;
bad input."""

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
    log_softmax_ref,
    tensor,
    to_np,
    wide,
)

REDUCTIONS = ["none", "mean", "sum"]
F32 = dict(rtol=1e-5, atol=1e-6)


# --------------------------------------------------------------------------
# devices: every test runs on the CPU and on the GPU (``device`` fixture)
# --------------------------------------------------------------------------


def tol(device):
    """Tolerances of a ``wide(device)`` result: the defaults on the CPU, F32 on the GPU."""
    return {} if device == "cpu" else F32


def dev(device):
    """numpy array -> rumus tensor on ``device``; float64 arrays become float32 on the GPU."""

    def T(a):
        a = np.asarray(a)
        return tensor(
            a.astype(np.float32) if device == "gpu" and a.dtype == np.float64 else a, device=device
        )

    return T


def ac(t, expected, device):
    """assert_close on the detached tensor; on the GPU against float32 with F32 tolerances."""
    assert t is not None, "expected a tensor, got None"
    assert_close(t.detach(), np.asarray(expected).astype(wide(device)), **tol(device))


def acw(t, expected, device, **kw):
    """assert_close of a ``wide(device)`` result: float64 ``expected`` as is on the CPU,
    cast to float32 with F32 tolerances on the GPU."""
    if device == "cpu":
        assert_close(t, np.asarray(expected), **kw)
    else:
        assert_close(t, np.asarray(expected).astype(np.float32), **(kw or F32))


def f64(*arrays):
    """The arrays in float64 (references are computed from the values the device saw)."""
    return [np.asarray(a, np.float64) for a in arrays]


def _reduce(loss, reduction):
    if reduction == "mean":
        return np.asarray(loss.mean())
    if reduction == "sum":
        return np.asarray(loss.sum())
    return loss


def ce_ref(x, t, weight=None, ignore_index=-100, reduction="mean", label_smoothing=0.0):
    """cross_entropy by its definition (class indices or class probabilities)."""
    cdim = 0 if x.ndim == 1 else 1
    c = x.shape[cdim]
    lp = np.moveaxis(log_softmax_ref(x, cdim), cdim, -1)  # classes last
    w = np.ones(c) if weight is None else weight
    if t.dtype.kind == "f":
        tt = np.moveaxis(t, cdim, -1) * (1 - label_smoothing) + label_smoothing / c
        return _reduce(-(lp * tt * w).sum(-1), reduction)
    valid = t != ignore_index
    safe = np.where(valid, t, 0)
    wt = w[safe] * valid
    nll = -np.take_along_axis(lp, safe[..., None], -1)[..., 0] * wt
    smooth = -(lp * w).sum(-1) * valid
    if reduction == "none":
        return (1 - label_smoothing) * nll + label_smoothing / c * smooth
    total = (1 - label_smoothing) * nll.sum() + label_smoothing / c * smooth.sum()
    return np.asarray(total / wt.sum() if reduction == "mean" else total)


def softmax_ref(x, axis):
    return np.exp(log_softmax_ref(x, axis))


def _rand(shape, rng, lo=-2.0, hi=2.0, dtype="float64"):
    return rng.uniform(lo, hi, shape).astype(dtype)


# --------------------------------------------------------- regression losses


def _pointwise(name, d, beta):
    a = np.abs(d)
    if name == "mse_loss":
        return d * d
    if name == "l1_loss":
        return a
    huber = np.where(a < beta, 0.5 * d * d, beta * (a - 0.5 * beta))
    return huber / beta if name == "smooth_l1_loss" else huber


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "name,kw",
    [
        ("mse_loss", {}),
        ("l1_loss", {}),
        ("smooth_l1_loss", {}),
        ("smooth_l1_loss", dict(beta=0.5)),
        ("huber_loss", {}),
        ("huber_loss", dict(delta=0.3)),
    ],
    ids=str,
)
def test_regression_losses(name, kw, reduction, rng, device):
    beta = kw.get("beta", kw.get("delta", 1.0))
    T = dev(device)
    for dtype in float_dtypes(device):
        x, y = _rand((3, 4), rng, dtype=dtype), _rand((3, 4), rng, dtype=dtype)
        exp = _reduce(_pointwise(name, x.astype(np.float64) - y, beta), reduction).astype(dtype)
        assert_close(
            getattr(F, name)(T(x), T(y), reduction=reduction, **kw),
            exp,
            **(F32 if dtype == "float32" else {}),
        )


def test_smooth_l1_beta_zero_is_l1(rng, device):
    T = dev(device)
    x, y = f64(*(a.astype(wide(device)) for a in (_rand((3, 4), rng), _rand((3, 4), rng))))
    acw(F.smooth_l1_loss(T(x), T(y), beta=0.0), np.asarray(np.abs(x - y).mean()), device)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_weighted_regression_losses(reduction, rng, device):
    T = dev(device)
    x, y, w = _rand((3, 4), rng), _rand((3, 4), rng), _rand((3, 4), rng, 0.1, 2.0)
    x, y, w = f64(*(a.astype(wide(device)) for a in (x, y, w)))
    for name in ("mse_loss", "l1_loss"):
        loss = _pointwise(name, x - y, 1.0) * w
        # PyTorch's weighted mean divides by the sum of the weights for mse and l1 ...
        exp = loss.sum() / w.sum() if reduction == "mean" else _reduce(loss, reduction)
        acw(getattr(F, name)(T(x), T(y), reduction=reduction, weight=T(w)), np.asarray(exp), device)
    # ... and by the number of elements for huber
    loss = _pointwise("huber_loss", x - y, 0.7) * w
    acw(F.huber_loss(T(x), T(y), reduction, 0.7, T(w)), _reduce(loss, reduction), device)


def test_regression_gradients_closed_form(rng, device):
    x, y = dleaf(_rand((3, 4), rng), device), dleaf(_rand((3, 4), rng), device)
    F.mse_loss(x, y).backward()
    d = to_np(x).astype(np.float64) - to_np(y).astype(np.float64)
    ac(x.grad, 2 * d / 12, device)
    ac(y.grad, -2 * d / 12, device)
    x.grad = None
    F.smooth_l1_loss(x, y, reduction="sum", beta=0.8).backward()
    ac(x.grad, np.where(np.abs(d) < 0.8, d / 0.8, np.sign(d)), device)
    x.grad = None
    F.huber_loss(x, y, reduction="sum", delta=0.8).backward()
    ac(x.grad, np.clip(d, -0.8, 0.8), device)


def test_smooth_l1_and_huber_gradients_at_the_threshold(device):
    # |d| == beta takes the linear side, as PyTorch's backward does.
    x = dleaf(np.array([-2.0, -0.5, 0.25, 0.5, 2.0]), device)
    y = tensor(np.zeros(5, wide(device)), device=device)
    F.smooth_l1_loss(x, y, reduction="sum", beta=0.5).backward()
    ac(x.grad, [-1, -1, 0.5, 1, 1], device)
    x.grad = None
    F.huber_loss(x, y, reduction="sum", delta=0.5).backward()
    ac(x.grad, [-0.5, -0.5, 0.25, 0.5, 0.5], device)
    # Differentiated again: 1/beta (1 for huber) inside, 0 outside.
    x.grad = None
    (g,) = rumus.autograd.grad(
        F.smooth_l1_loss(x, y, reduction="sum", beta=0.5), x, create_graph=True
    )
    g.sum().backward()
    ac(x.grad, [0, 0, 2, 0, 0], device)


def test_broadcast_target_warns(rng, device):
    T = dev(device)
    x, y = f64(*(a.astype(wide(device)) for a in (_rand((3, 4), rng), _rand((4,), rng))))
    with pytest.warns(
        UserWarning, match=r"target size .*\[4\].* different to the input size .*\[3, 4\]"
    ):
        out = F.mse_loss(T(x), T(y))
    acw(out, np.asarray(((x - y) ** 2).mean()), device)


def test_legacy_size_average_and_reduce(rng, device):
    T = dev(device)
    x, y = f64(*(a.astype(wide(device)) for a in (_rand((3, 4), rng), _rand((3, 4), rng))))
    cases = [
        (dict(size_average=False), "sum"),
        (dict(reduce=False), "none"),
        (dict(size_average=True), "mean"),
        (dict(size_average=False, reduce=True), "sum"),
    ]
    for kw, reduction in cases:
        with pytest.warns(UserWarning, match=f"reduction='{reduction}'"):
            out = F.mse_loss(T(x), T(y), **kw)
        acw(out, _reduce((x - y) ** 2, reduction), device)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.mse_loss(rumus.zeros(3), rumus.zeros(3), reduction="avg"),
            ValueError,
            r"avg is not a valid value for reduction",
        ),
        (
            lambda: F.l1_loss(rumus.zeros(3), rumus.zeros(3), reduction="batchmean"),
            ValueError,
            r"not a valid value",
        ),
        (
            lambda: F.mse_loss(rumus.zeros(3, 4), rumus.zeros(3, 4), weight=rumus.ones(4)),
            ValueError,
            r"Weights and input must have the same size",
        ),
        (
            lambda: F.smooth_l1_loss(rumus.zeros(3), rumus.zeros(3), beta=-1.0),
            RuntimeError,
            r"negative values for beta",
        ),
        (
            lambda: F.huber_loss(rumus.zeros(3), rumus.zeros(3), delta=0.0),
            RuntimeError,
            r"non-positive values for delta",
        ),
        (lambda: F.mse_loss(rumus.zeros(3), rumus.zeros(4)), RuntimeError, r"3|4"),
    ],
)
def test_regression_bad_input(call, exc, match, device):
    with warnings.catch_warnings(), default_device(device):
        warnings.simplefilter("ignore")
        with pytest.raises(exc, match=match):
            call()


# --------------------------------------------------- cross_entropy / nll_loss


CE_CASES = [
    ((5, 4), dict()),
    ((5, 4), dict(weight=True)),
    ((5, 4), dict(ignore_index=2)),
    ((5, 4), dict(weight=True, ignore_index=1, label_smoothing=0.2)),
    ((5, 4), dict(label_smoothing=0.1)),
    ((2, 4, 3), dict(weight=True)),
    ((2, 4, 3, 2), dict(ignore_index=0, label_smoothing=0.3)),
    ((4,), dict()),
    ((4,), dict(weight=True, label_smoothing=0.4)),
]


def _ce_inputs(shape, kw, rng, dtype="float64"):
    c = shape[0] if len(shape) == 1 else shape[1]
    x = _rand(shape, rng, -3, 3, dtype)
    tshape = () if len(shape) == 1 else (shape[0],) + shape[2:]
    t = rng.integers(0, c, tshape)
    if "ignore_index" in kw and t.ndim:
        t.flat[0] = kw["ignore_index"]
    w = _rand((c,), rng, 0.2, 2.0, dtype) if kw.get("weight") else None
    return x, t, w, {k: v for k, v in kw.items() if k != "weight"}


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("shape,kw", CE_CASES, ids=str)
def test_cross_entropy_class_indices(shape, kw, reduction, rng, device):
    T = dev(device)
    for dtype in float_dtypes(device):
        x, t, w, kw2 = _ce_inputs(shape, kw, rng, dtype)
        out = F.cross_entropy(T(x), T(t), None if w is None else T(w), reduction=reduction, **kw2)
        exp = ce_ref(x.astype(np.float64), t, w, reduction=reduction, **kw2).astype(dtype)
        assert_close(out, exp, **(F32 if dtype == "float32" else {}))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "shape,kw",
    [
        ((5, 4), {}),
        ((5, 4), dict(weight=True, label_smoothing=0.3)),
        ((2, 4, 3), dict(label_smoothing=0.2)),
        ((4,), dict(weight=True)),
    ],
    ids=str,
)
def test_cross_entropy_class_probabilities(shape, kw, reduction, rng, device):
    T = dev(device)
    x, _, w, kw2 = _ce_inputs(shape, kw, rng)
    cdim = 0 if len(shape) == 1 else 1
    p = rng.dirichlet(np.ones(shape[cdim]), int(np.prod(shape)) // shape[cdim])
    p = np.moveaxis(
        p.reshape((shape[0],) + shape[2:] + (shape[cdim],)) if len(shape) > 1 else p[0], -1, cdim
    )
    x, p = f64(*(a.astype(wide(device)) for a in (x, p)))
    w = None if w is None else w.astype(wide(device)).astype(np.float64)
    out = F.cross_entropy(T(x), T(p), None if w is None else T(w), reduction=reduction, **kw2)
    acw(out, ce_ref(x, p, w, reduction=reduction, **kw2), device)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "shape,kw", [c for c in CE_CASES if "label_smoothing" not in c[1]], ids=str
)
def test_nll_loss(shape, kw, reduction, rng, device):
    T = dev(device)
    x, t, w, kw2 = _ce_inputs(shape, kw, rng)
    lp = log_softmax_ref(x, 0 if len(shape) == 1 else 1)
    out = F.nll_loss(T(lp), T(t), None if w is None else T(w), reduction=reduction, **kw2)
    if device == "cpu":
        assert_close(out, ce_ref(x, t, w, reduction=reduction, **kw2))
    else:  # the nll of the float32 values the GPU saw
        lp, w = f64(lp.astype(np.float32), np.ones(1) if w is None else w.astype(np.float32))
        wt = np.ones(lp.shape[0 if lp.ndim == 1 else 1]) if kw.get("weight") is None else w
        exp = ce_ref(
            lp, t, wt, reduction=reduction, **kw2
        )  # log_softmax of log-probabilities is a no-op
        acw(out, exp, device)


def test_nll_loss_uint8_target_and_arbitrary_input(rng, device):
    # nll_loss just picks -input[target]; the input need not be log-probabilities
    x = _rand((4, 3), rng, dtype=wide(device))
    t = np.array([0, 2, 1, 2], np.uint8)
    assert_close(
        F.nll_loss(tensor(x, device=device), tensor(t, device=device), reduction="none"),
        -x[np.arange(4), t],
        **tol(device),
    )


def test_cross_entropy_all_targets_ignored_is_nan(rng, device):
    T = dev(device)
    x = _rand((3, 4), rng, dtype=wide(device))
    t = np.full(3, -100)
    assert np.isnan(F.cross_entropy(T(x), T(t)).item())
    assert F.cross_entropy(T(x), T(t), reduction="sum").item() == 0.0
    assert_close(F.cross_entropy(T(x), T(t), reduction="none"), np.zeros(3, wide(device)))


def test_cross_entropy_extreme_logits_are_finite(device):
    x = np.array([[1000.0, -1000.0, 0.0], [-1000.0, -1000.0, -1000.0]], np.float32)
    out = F.cross_entropy(
        tensor(x, device=device), tensor(np.array([1, 2]), device=device), reduction="none"
    )
    assert_close(out, np.array([2000.0, np.log(3)], np.float32), rtol=1e-6)


@pytest.mark.parametrize(
    "kw",
    [dict(), dict(weight=True, ignore_index=1), dict(weight=True, label_smoothing=0.25)],
    ids=str,
)
def test_cross_entropy_gradient_closed_form(kw, rng, device):
    T = dev(device)
    x, t, w, kw2 = _ce_inputs((5, 4), kw, rng)
    x = x.astype(wide(device)).astype(np.float64)
    w = None if w is None else w.astype(wide(device)).astype(np.float64)
    xl = dleaf(x, device)
    F.cross_entropy(xl, T(t), None if w is None else T(w), **kw2).backward()
    ls = kw2.get("label_smoothing", 0.0)
    wv = np.ones(4) if w is None else w
    valid = t != kw2.get("ignore_index", -100)
    safe = np.where(valid, t, 0)
    wt = wv[safe] * valid
    onehot = np.eye(4)[safe]
    sm = softmax_ref(x, 1)
    # d nll_i = w_t (softmax - onehot);
    # d smooth_i = sum_c w_c (softmax - e_c) = softmax * sum(w) - w
    g = (1 - ls) * wt[:, None] * (sm - onehot) + ls / 4 * valid[:, None] * (sm * wv.sum() - wv)
    ac(xl.grad, g / wt.sum(), device)


def test_cross_entropy_probability_target_gradient(rng, device):
    x, p = dleaf(_rand((3, 4), rng), device), dleaf(rng.dirichlet(np.ones(4), 3), device)
    F.cross_entropy(x, p, reduction="sum").backward()
    pv, xv = to_np(p).astype(np.float64), to_np(x).astype(np.float64)
    ac(x.grad, softmax_ref(xv, 1) * pv.sum(1, keepdims=True) - pv, device)
    ac(p.grad, -log_softmax_ref(xv, 1), device)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.nll_loss(rumus.zeros(3, 5), rumus.tensor([1, 2])),
            ValueError,
            r"Expected input batch_size \(3\) to match target batch_size \(2\)",
        ),
        (
            lambda: F.cross_entropy(rumus.zeros(3, 5), rumus.tensor([1, 2])),
            ValueError,
            r"batch_size \(3\).*\(2\)",
        ),
        (
            lambda: F.nll_loss(rumus.zeros(3, 5), rumus.tensor([1, 2, 5])),
            IndexError,
            r"Target 5 is out of bounds",
        ),
        (
            lambda: F.cross_entropy(rumus.zeros(3, 5), rumus.tensor([1, -1, 2])),
            IndexError,
            r"Target -1 is out of bounds",
        ),
        (
            lambda: F.nll_loss(rumus.zeros(3, 5), rumus.tensor([1, 2, 3], dtype=rumus.int32)),
            RuntimeError,
            r"expected target dtype to be Long or Byte",
        ),
        (
            lambda: F.nll_loss(rumus.zeros(3, 5), rumus.tensor([1.0, 2.0, 3.0])),
            RuntimeError,
            r"Long or Byte",
        ),
        (
            lambda: F.cross_entropy(rumus.zeros(3, 5), rumus.tensor([1.0, 2.0, 3.0])),
            RuntimeError,
            r"\[3, 5\].*\[3\]",
        ),
        (
            lambda: F.nll_loss(rumus.zeros(()), rumus.tensor(1)),
            ValueError,
            r"Expected 1 or more dimensions \(got 0\)",
        ),
        (
            lambda: F.nll_loss(rumus.zeros(3, 5), rumus.tensor([1, 2, 3]), rumus.ones(3)),
            RuntimeError,
            r"weight tensor should be defined either for all 5 classes or no classes but got "
            r"weight tensor of shape: \[3\]",
        ),
        (
            lambda: F.nll_loss(rumus.zeros(3, 5, 2), rumus.tensor([1, 2, 3])),
            RuntimeError,
            r"Expected target size \[3, 2\], got \[3\]",
        ),
        (
            lambda: F.nll_loss(rumus.zeros(3, 5), rumus.zeros(3, 1, dtype=rumus.int64)),
            RuntimeError,
            r"multi-target not supported",
        ),
        (
            lambda: F.cross_entropy(
                rumus.zeros(3, 5), rumus.tensor([1, 2, 3]), label_smoothing=1.5
            ),
            RuntimeError,
            r"label_smoothing must be between 0.0 and 1.0. Got: 1.5",
        ),
        (
            lambda: F.cross_entropy(rumus.zeros(3, 5), rumus.zeros(3, 5), ignore_index=2),
            RuntimeError,
            r"ignore_index is not supported for floating point target",
        ),
        (
            lambda: F.cross_entropy(rumus.zeros(3, 5), rumus.zeros(3, 4)),
            RuntimeError,
            r"\[3, 5\].*\[3, 4\]",
        ),
        (
            lambda: F.cross_entropy(rumus.zeros(3, 5), rumus.tensor([1, 2, 3]), reduction="avg"),
            ValueError,
            r"not a valid",
        ),
    ],
)
def test_cross_entropy_bad_input(call, exc, match, device):
    if "out of bounds" in match and device == "gpu":
        # Targets stay on the GPU and are checked there: the error comes with the next read.
        with (
            default_device(device),
            pytest.raises(RuntimeError, match="out of bounds.*detected on the GPU"),
        ):
            call()
            rumus.gpu.synchronize()
        return
    with default_device(device), pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------- binary cross entropy


def bce_ref(p, t, weight=None):
    loss = -(t * np.maximum(np.log(p), -100) + (1 - t) * np.maximum(np.log1p(-p), -100))
    return loss if weight is None else loss * weight


def bce_logits_ref(x, t, weight=None, pos_weight=None):
    lw = 1 if pos_weight is None else 1 + (pos_weight - 1) * t
    loss = (1 - t) * x + lw * np.logaddexp(0, -x)
    return loss if weight is None else loss * weight


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction, rng, device):
    T = dev(device)
    for dtype in float_dtypes(device):
        p, t = _rand((3, 4), rng, 0.02, 0.98, dtype), _rand((3, 4), rng, 0, 1, dtype)
        w = _rand((4,), rng, 0.5, 2.0, dtype)
        tol = F32 if dtype == "float32" else {}
        exp = _reduce(bce_ref(p.astype(np.float64), t), reduction).astype(dtype)
        assert_close(F.binary_cross_entropy(T(p), T(t), reduction=reduction), exp, **tol)
        exp = _reduce(bce_ref(p.astype(np.float64), t, w), reduction).astype(dtype)
        assert_close(F.binary_cross_entropy(T(p), T(t), T(w), reduction=reduction), exp, **tol)


def test_binary_cross_entropy_log_clamped_at_minus_100(device):
    p = dleaf(np.array([0.0, 1.0, 0.0, 1.0]), device)
    t = np.array([1.0, 0.0, 0.0, 1.0])
    out = F.binary_cross_entropy(p, dev(device)(t), reduction="none")
    ac(out, np.array([100.0, 100.0, 0.0, 0.0]), device)
    out.sum().backward()
    assert np.isfinite(to_np(p.grad)).all()
    p32, t32 = tensor(np.float32([0.0]), device=device), tensor(np.float32([1.0]), device=device)
    assert_close(F.binary_cross_entropy(p32, t32), np.float32(100.0))


def test_binary_cross_entropy_gradient_closed_form(rng, device):
    p, t = dleaf(_rand((3, 4), rng, 0.05, 0.95), device), dleaf(_rand((3, 4), rng, 0, 1), device)
    F.binary_cross_entropy(p, t, reduction="sum").backward()
    pv, tv = to_np(p).astype(np.float64), to_np(t).astype(np.float64)
    ac(p.grad, (pv - tv) / (pv * (1 - pv)), device)
    ac(t.grad, np.log1p(-pv) - np.log(pv), device)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction, rng, device):
    T = dev(device)
    for dtype in float_dtypes(device):
        x, t = _rand((3, 4), rng, -5, 5, dtype), _rand((3, 4), rng, 0, 1, dtype)
        w, pw = _rand((3, 1), rng, 0.5, 2.0, dtype), _rand((4,), rng, 0.5, 3.0, dtype)
        tol = F32 if dtype == "float32" else {}
        x64 = x.astype(np.float64)
        assert_close(
            F.binary_cross_entropy_with_logits(T(x), T(t), reduction=reduction),
            _reduce(bce_logits_ref(x64, t), reduction).astype(dtype),
            **tol,
        )
        out = F.binary_cross_entropy_with_logits(
            T(x), T(t), T(w), reduction=reduction, pos_weight=T(pw)
        )
        assert_close(out, _reduce(bce_logits_ref(x64, t, w, pw), reduction).astype(dtype), **tol)


def test_binary_cross_entropy_with_logits_is_stable(device):
    x = np.array([1000.0, -1000.0, 50.0, -50.0, 0.0], np.float32)
    t = np.array([0.0, 1.0, 1.0, 0.0, 0.5], np.float32)
    xl = rumus.tensor(x, requires_grad=True, device=device)
    out = F.binary_cross_entropy_with_logits(xl, tensor(t, device=device), reduction="none")
    assert_close(out, bce_logits_ref(x.astype(np.float64), t).astype(np.float32), rtol=1e-6)
    out.sum().backward()
    # d/dx = sigmoid(x) - t, also at x = 0 (0.5 - 0.5)
    sigmoid = np.exp(-np.logaddexp(0, -x.astype(np.float64)))
    assert_close(xl.grad, (sigmoid - t).astype(np.float32), atol=1e-7)


def test_engine_gradient_of_a_leaf_used_directly_and_through_earlier_ops(device):
    # Minimal form of an autograd bug that breaks binary_cross_entropy_with_logits' gradient:
    # y = (x - 2x) + 3x with the 3x branch recorded first, reduced by mean. PyTorch: x.grad = 1.
    x = rumus.tensor([1.0, 2.0], requires_grad=True, device=device)
    e = x * 3
    ((x - x * 2) + e).mean().backward()
    assert x.grad.tolist() == [1.0, 1.0]


def test_binary_cross_entropy_with_logits_gradient_closed_form(rng, device):
    T = dev(device)
    x, t = dleaf(_rand((3, 4), rng, -4, 4), device), _rand((3, 4), rng, 0, 1)
    pw = _rand((4,), rng, 0.5, 3.0)
    t, pw = f64(t.astype(wide(device)), pw.astype(wide(device)))
    F.binary_cross_entropy_with_logits(x, T(t), pos_weight=T(pw)).backward()
    s = 1 / (1 + np.exp(-to_np(x).astype(np.float64)))
    ac(x.grad, ((1 + (pw - 1) * t) * s - pw * t) / 12, device)


@pytest.mark.parametrize(
    "call,exc,match",
    [
        (
            lambda: F.binary_cross_entropy(rumus.zeros(3) + 0.5, rumus.zeros(3, 1)),
            ValueError,
            r"target size .*\[3, 1\].* different to the input size .*\[3\]",
        ),
        (
            lambda: F.binary_cross_entropy(rumus.ones(3) * 1.5, rumus.zeros(3)),
            RuntimeError,
            r"all elements of input should be between 0 and 1",
        ),
        (
            lambda: F.binary_cross_entropy(rumus.tensor([0.5, float("nan")]), rumus.zeros(2)),
            RuntimeError,
            r"between 0 and 1",
        ),
        (
            lambda: F.binary_cross_entropy_with_logits(rumus.zeros(3), rumus.zeros(3, 1)),
            ValueError,
            r"Target size .*\[3, 1\].* must be the same as input size .*\[3\]",
        ),
        (
            lambda: F.binary_cross_entropy_with_logits(
                rumus.zeros(3), rumus.zeros(3), reduction="x"
            ),
            ValueError,
            r"x is not a valid",
        ),
    ],
)
def test_binary_cross_entropy_bad_input(call, exc, match, device):
    with default_device(device), pytest.raises(exc, match=match):
        call()


# ------------------------------------------------------------------- kl_div


def kl_ref(x, t, log_target=False):
    if log_target:
        return np.exp(t) * (t - x)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(t == 0, 0.0, t * (np.log(np.where(t == 0, 1, t)) - x))


@pytest.mark.parametrize("reduction", ["none", "sum", "batchmean", "mean"])
def test_kl_div(reduction, rng, device):
    T = dev(device)
    x = log_softmax_ref(_rand((3, 4), rng), 1)
    t = rng.dirichlet(np.ones(4), 3)
    t[0, 1] = 0.0  # 0 * log 0 = 0
    lt = log_softmax_ref(_rand((3, 4), rng), 1)
    x, t, lt = f64(*(a.astype(wide(device)) for a in (x, t, lt)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for log_target, tt in ((False, t), (True, lt)):
            loss = kl_ref(x, tt, log_target)
            exp = loss.sum() / 3 if reduction == "batchmean" else _reduce(loss, reduction)
            acw(
                F.kl_div(T(x), T(tt), reduction=reduction, log_target=log_target),
                np.asarray(exp),
                device,
            )


def test_kl_div_mean_warns_and_gradient(rng, device):
    T = dev(device)
    x, t = dleaf(_rand((3, 4), rng), device), rng.dirichlet(np.ones(4), 3).astype(wide(device))
    with pytest.warns(UserWarning, match="'batchmean' divides only by the batch size"):
        F.kl_div(x, T(t)).backward()
    ac(x.grad, -t.astype(np.float64) / 12, device)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        F.kl_div(x, T(t), reduction="batchmean")


# -------------------------------------------------- embedding / ranking losses


def cos_emb_ref(x1, x2, y, margin):
    axis = x1.ndim - 1
    cos = (x1 * x2).sum(axis) / np.sqrt(
        ((x1 * x1).sum(axis) + 1e-12) * ((x2 * x2).sum(axis) + 1e-12)
    )
    return np.where(y == 1, 1 - cos, 0.0) + np.where(y == -1, np.maximum(cos - margin, 0), 0.0)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cosine_embedding_loss(reduction, rng, device):
    T = dev(device)
    x1, x2 = _rand((5, 3), rng), _rand((5, 3), rng)
    x1, x2 = f64(x1.astype(wide(device)), x2.astype(wide(device)))
    y = np.array([1, -1, 1, -1, -1])
    for margin in (0.0, 0.3, -0.5):
        exp = _reduce(cos_emb_ref(x1, x2, y, margin), reduction)
        acw(F.cosine_embedding_loss(T(x1), T(x2), T(y), margin, reduction=reduction), exp, device)
    # unbatched: 1-D inputs, 0-d target
    exp = _reduce(cos_emb_ref(x1[0], x2[0], np.array(-1), 0.1), reduction)
    acw(
        F.cosine_embedding_loss(T(x1[0]), T(x2[0]), T(np.array(-1.0)), 0.1, reduction=reduction),
        exp,
        device,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_margin_ranking_loss(reduction, rng, device):
    T = dev(device)
    x1, x2 = _rand((6,), rng), _rand((6,), rng)
    x1, x2 = f64(x1.astype(wide(device)), x2.astype(wide(device)))
    y = rng.choice([-1.0, 1.0], 6)
    for margin in (0.0, 0.5):
        exp = _reduce(np.maximum(-y * (x1 - x2) + margin, 0), reduction)
        acw(
            F.margin_ranking_loss(T(x1), T(x2), T(y), margin=margin, reduction=reduction),
            exp,
            device,
        )


def test_margin_ranking_gradient(rng, device):
    x1, x2 = dleaf(_rand((6,), rng), device), dleaf(_rand((6,), rng), device)
    y = rng.choice([-1.0, 1.0], 6)
    F.margin_ranking_loss(x1, x2, dev(device)(y), 0.1, reduction="sum").backward()
    active = (-y * (to_np(x1).astype(np.float64) - to_np(x2).astype(np.float64)) + 0.1) > 0
    ac(x1.grad, -y * active, device)
    ac(x2.grad, y * active, device)


@pytest.mark.parametrize(
    "call,match",
    [
        (
            lambda: F.cosine_embedding_loss(rumus.zeros(3, 2), rumus.zeros(3, 2), rumus.tensor(1)),
            r"0D target tensor expects 1D input tensors, but found inputs with sizes \[3, 2\] and "
            r"\[3, 2\]",
        ),
        (
            lambda: F.cosine_embedding_loss(rumus.zeros(2), rumus.zeros(2), rumus.tensor([1])),
            r"1D target tensor expects 2D input tensors",
        ),
        (
            lambda: F.cosine_embedding_loss(rumus.zeros(3, 2), rumus.zeros(3, 2), rumus.ones(3, 1)),
            r"multi-target not supported",
        ),
        (
            lambda: F.margin_ranking_loss(rumus.zeros(3), rumus.zeros(3, 1), rumus.ones(3)),
            r"All input tensors should have same dimension but got sizes: input1: "
            r".*\[3\].*input2: .*\[3, 1\]",
        ),
    ],
)
def test_ranking_losses_bad_input(call, match, device):
    with default_device(device), pytest.raises(RuntimeError, match=match):
        call()


# ------------------------------------------------------------- PyTorch cross-checks


def _vs_torch(torch, name, arrays, kw, grads=True, rtol=1e-10, atol=1e-12, device="cpu"):
    """Value and the gradient of every float array input, rumus vs PyTorch."""
    rng = np.random.default_rng(4)
    rin = [
        rumus.tensor(a, requires_grad=grads and a.dtype.kind == "f", device=device)
        if isinstance(a, np.ndarray)
        else a
        for a in arrays
    ]
    tin = [
        torch.tensor(a, requires_grad=grads and a.dtype.kind == "f")
        if isinstance(a, np.ndarray)
        else a
        for a in arrays
    ]
    tkw = {k: torch.tensor(v) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
    rkw = {
        k: rumus.tensor(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kw.items()
    }
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = getattr(F, name)(*rin, **rkw)
        ref = getattr(torch.nn.functional, name)(*tin, **tkw)
    np.testing.assert_allclose(
        to_np(out), ref.detach().numpy(), rtol=rtol, atol=atol, err_msg=f"{name} {kw}"
    )
    if grads:
        g = rng.uniform(0.5, 1.5, tuple(ref.shape))
        out.backward(rumus.tensor(g).to(out.dtype).to(device))
        ref.backward(torch.tensor(g).to(ref.dtype))
        for r, t in zip(rin, tin):
            if not (isinstance(r, rumus.Tensor) and r.requires_grad):
                continue
            if t.grad is None:  # no path to this input (a target used only in comparisons)
                assert r.grad is None or not to_np(r.grad).any()
            else:
                np.testing.assert_allclose(
                    to_np(r.grad), t.grad.numpy(), rtol=rtol, atol=atol, err_msg=f"{name} {kw}"
                )


def _torch_cases(family, rng):
    """(name, arrays, kwargs) cross-check cases of one loss family, every reduction."""
    for reduction in REDUCTIONS:
        x, y, w = _rand((3, 4), rng), _rand((3, 4), rng), _rand((3, 4), rng, 0.1, 2.0)
        if family == "regression":
            for name in ("mse_loss", "l1_loss", "huber_loss"):
                yield name, [x, y], dict(reduction=reduction)
                yield name, [x, y], dict(reduction=reduction, weight=w)
            yield "smooth_l1_loss", [x, y], dict(reduction=reduction, beta=0.6)
            yield "huber_loss", [x, y], dict(reduction=reduction, delta=0.6)
        elif family in ("cross_entropy", "nll_loss"):
            for shape, kw in CE_CASES:
                xc, t, wc, kw2 = _ce_inputs(shape, kw, rng)
                if wc is not None:
                    kw2["weight"] = wc
                if family == "nll_loss":
                    if "label_smoothing" not in kw2:
                        yield "nll_loss", [xc, t], dict(kw2, reduction=reduction)
                    continue
                yield "cross_entropy", [xc, t], dict(kw2, reduction=reduction)
                p = softmax_ref(_rand(shape, rng), 0 if len(shape) == 1 else 1)
                yield (
                    "cross_entropy",
                    [xc, p],
                    dict(
                        {k: v for k, v in kw2.items() if k != "ignore_index"}, reduction=reduction
                    ),
                )
        elif family == "binary_cross_entropy":
            p, t = _rand((3, 4), rng, 0.02, 0.98), _rand((3, 4), rng, 0, 1)
            yield family, [p, t], dict(reduction=reduction, weight=w)
        elif family == "binary_cross_entropy_with_logits":
            t = _rand((3, 4), rng, 0, 1)
            yield family, [x * 3, t], dict(reduction=reduction)
            yield family, [x * 3, t], dict(reduction=reduction, weight=w[0], pos_weight=w[1])
        elif family == "kl_div":
            yield family, [log_softmax_ref(x, 1), softmax_ref(y, 1)], dict(reduction=reduction)
            yield (
                family,
                [log_softmax_ref(x, 1), log_softmax_ref(y, 1)],
                dict(reduction=reduction, log_target=True),
            )
        else:
            yy = rng.choice([-1.0, 1.0], 3)
            yield "cosine_embedding_loss", [x, y, yy], dict(margin=0.2, reduction=reduction)
            yield (
                "margin_ranking_loss",
                [x[:, 0], y[:, 0], yy],
                dict(margin=0.3, reduction=reduction),
            )
    if family == "kl_div":
        yield family, [log_softmax_ref(x, 1), softmax_ref(y, 1)], dict(reduction="batchmean")


@pytest.mark.parametrize(
    "family",
    [
        "regression",
        "cross_entropy",
        "nll_loss",
        "binary_cross_entropy",
        "binary_cross_entropy_with_logits",
        "kl_div",
        "ranking",
    ],
)
def test_losses_vs_torch(family, rng, device):
    torch = pytest.importorskip("torch")

    def f32(a):
        return a.astype(np.float32) if isinstance(a, np.ndarray) and a.dtype == np.float64 else a

    for name, arrays, kw in _torch_cases(family, rng):
        if device == "cpu":
            _vs_torch(torch, name, arrays, kw)
        else:  # float64 is "a float" here: float32 on the GPU (and in PyTorch), float32 tolerances
            _vs_torch(
                torch,
                name,
                [f32(a) for a in arrays],
                {k: f32(v) for k, v in kw.items()},
                rtol=1e-5,
                atol=1e-6,
                device=device,
            )


def test_losses_float32_vs_torch(rng, device):
    torch = pytest.importorskip("torch")
    tol = dict(rtol=1e-5, atol=1e-6, device=device)
    x, t = _rand((8, 10), rng, -3, 3, "float32"), rng.integers(0, 10, 8)
    w = _rand((10,), rng, 0.5, 2.0, "float32")
    _vs_torch(torch, "cross_entropy", [x, t], dict(weight=w, label_smoothing=0.1), **tol)
    _vs_torch(
        torch,
        "binary_cross_entropy_with_logits",
        [x, _rand((8, 10), rng, 0, 1, "float32")],
        {},
        **tol,
    )
    _vs_torch(torch, "mse_loss", [x, _rand((8, 10), rng, dtype="float32")], {}, **tol)
