"""The losses of issue 16 (multi_margin, multilabel_margin, multilabel_soft_margin,
triplet_margin, triplet_margin_with_distance, hinge_embedding, poisson_nll,
gaussian_nll) and their modules: values against NumPy references for every reduction,
the legacy size_average/reduce flags, weights and options, gaussian_nll's variance
shapes, bad input, and PyTorch parity when installed. Gradients: the registry rows in
tests/op_db_nn_more.py. ctc_loss: tests/test_ctc.py."""

import math
import warnings

import numpy as np
import pytest
import rumus
import rumus.nn as nn
import rumus.nn.functional as F
from conftest import dt, to_np

REDUCTIONS = ["none", "mean", "sum"]


def red(loss, reduction):
    return {"none": loss, "mean": np.mean(loss), "sum": np.sum(loss)}[reduction]


# ------------------------------------------------------------ NumPy references


def multi_margin_ref(x, y, p=1, margin=1.0, weight=None):
    x2 = np.atleast_2d(x)
    y1 = np.atleast_1d(y)
    n, c = x2.shape
    z = np.maximum(margin - x2[np.arange(n), y1][:, None] + x2, 0) ** p
    if weight is not None:
        z = z * weight[y1][:, None]
    z[np.arange(n), y1] = 0
    out = z.sum(1) / c
    return out if x.ndim == 2 else out[0]


def multilabel_margin_ref(x, y):
    x2, y2 = np.atleast_2d(x), np.atleast_2d(y)
    n, c = x2.shape
    out = np.zeros(n)
    for i in range(n):
        labels = []
        for v in y2[i]:
            if v < 0:
                break
            labels.append(v)
        others = [k for k in range(c) if k not in labels]
        out[i] = sum(max(0, 1 - (x2[i, j] - x2[i, k])) for j in labels for k in others) / c
    return out if x.ndim == 2 else out[0]


def logsig(x):
    return -np.logaddexp(0, -x)


def multilabel_soft_margin_ref(x, y, weight=None):
    loss = -(y * logsig(x) + (1 - y) * logsig(-x))
    if weight is not None:
        loss = loss * weight
    return loss.mean(-1)


def pdist(a, b, p=2, eps=1e-6):
    return (np.abs(a - b + eps) ** p).sum(-1) ** (1 / p)


def triplet_ref(a, pos, neg, margin=1.0, p=2, eps=1e-6, swap=False):
    dp, dn = pdist(a, pos, p, eps), pdist(a, neg, p, eps)
    if swap:
        dn = np.minimum(dn, pdist(pos, neg, p, eps))
    return np.maximum(margin + dp - dn, 0)


def hinge_ref(x, y, margin=1.0):
    return np.where(y == 1, x, 0) + np.where(y == -1, np.maximum(margin - x, 0), 0)


def poisson_ref(x, t, log_input=True, full=False, eps=1e-8):
    loss = np.exp(x) - t * x if log_input else x - t * np.log(x + eps)
    if full:
        with np.errstate(all="ignore"):
            st = t * np.log(t) - t + 0.5 * np.log(2 * np.pi * t)
        loss = loss + np.where(t > 1, st, 0)
    return loss


def gaussian_ref(x, t, var, full=False, eps=1e-6):
    var = np.maximum(var, eps)
    loss = 0.5 * (np.log(var) + (x - t) ** 2 / var)
    return loss + 0.5 * np.log(2 * np.pi) if full else loss


# ------------------------------------------------------------ values

RNG = np.random.default_rng(0)
X = RNG.normal(size=(4, 5))
Y = np.array([0, 3, 4, 1])
ML_Y = np.array([[3, 0, -1, 1, 2], [1, 2, 4, 0, -1], [-1, 0, 0, 0, 0], [0, 0, 2, -1, 3]])
W5 = RNG.uniform(0.5, 2.0, 5)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multi_margin(reduction, device):
    x = dt(X, device=device)
    y = dt(Y, device=device)
    tol = dict(rtol=1e-10 if device == "cpu" else 1e-5)
    for kw in ({}, {"p": 2}, {"margin": 0.3}, {"weight": W5}, {"p": 2, "weight": W5}):
        rkw = {k: dt(v, device=device) if isinstance(v, np.ndarray) else v for k, v in kw.items()}
        got = F.multi_margin_loss(x, y, reduction=reduction, **rkw)
        np.testing.assert_allclose(to_np(got), red(multi_margin_ref(X, Y, **kw), reduction), **tol)
    got = nn.MultiMarginLoss(p=2, margin=0.5, reduction=reduction)(x, y)
    want = red(multi_margin_ref(X, Y, 2, 0.5), reduction)
    np.testing.assert_allclose(to_np(got), want, **tol)
    # unbatched
    got = F.multi_margin_loss(x[1], y[1], reduction=reduction)
    np.testing.assert_allclose(to_np(got), multi_margin_ref(X[1], Y[1]), **tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_margin(reduction, device):
    got = F.multilabel_margin_loss(
        dt(X, device=device), dt(ML_Y, device=device), reduction=reduction
    )
    tol = dict(rtol=1e-10 if device == "cpu" else 1e-5)
    np.testing.assert_allclose(to_np(got), red(multilabel_margin_ref(X, ML_Y), reduction), **tol)
    got = nn.MultiLabelMarginLoss(reduction=reduction)(
        dt(X[0], device=device), dt(ML_Y[0], device=device)
    )
    np.testing.assert_allclose(to_np(got), multilabel_margin_ref(X[0], ML_Y[0]), **tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_multilabel_soft_margin(reduction):
    t = (RNG.uniform(size=X.shape) > 0.5).astype(float)
    got = F.multilabel_soft_margin_loss(rumus.tensor(X), rumus.tensor(t), reduction=reduction)
    np.testing.assert_allclose(to_np(got), red(multilabel_soft_margin_ref(X, t), reduction))
    m = nn.MultiLabelSoftMarginLoss(weight=rumus.tensor(W5), reduction=reduction)
    assert "weight" in m.state_dict()
    got = m(rumus.tensor(X), rumus.tensor(t))
    np.testing.assert_allclose(to_np(got), red(multilabel_soft_margin_ref(X, t, W5), reduction))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_triplet_margin(reduction, device):
    a, p, n = RNG.normal(size=(3, 4, 6))
    ra, rp, rn = (dt(v, device=device) for v in (a, p, n))
    tol = dict(rtol=1e-10 if device == "cpu" else 1e-5, atol=1e-12 if device == "cpu" else 1e-6)
    for kw in ({}, {"margin": 2.0}, {"p": 1}, {"p": 3, "eps": 1e-3}, {"swap": True}):
        got = F.triplet_margin_loss(ra, rp, rn, reduction=reduction, **kw)
        np.testing.assert_allclose(to_np(got), red(triplet_ref(a, p, n, **kw), reduction), **tol)
    got = nn.TripletMarginLoss(margin=1.5, p=1, swap=True, reduction=reduction)(ra, rp, rn)
    want = red(triplet_ref(a, p, n, 1.5, 1, swap=True), reduction)
    np.testing.assert_allclose(to_np(got), want, **tol)
    # unbatched (D,) inputs
    got = F.triplet_margin_loss(ra[0], rp[0], rn[0], reduction=reduction)
    np.testing.assert_allclose(to_np(got), triplet_ref(a[0], p[0], n[0]), **tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_triplet_margin_with_distance(reduction):
    a, p, n = RNG.normal(size=(3, 4, 6))
    ra, rp, rn = (rumus.tensor(v) for v in (a, p, n))
    got = F.triplet_margin_with_distance_loss(ra, rp, rn, reduction=reduction)
    np.testing.assert_allclose(to_np(got), red(triplet_ref(a, p, n), reduction), rtol=1e-10)

    def cos_dist(x, y):
        return 1 - F.cosine_similarity(x, y)

    def cos_ref(x, y):
        return 1 - (x * y).sum(-1) / np.linalg.norm(x, axis=-1) / np.linalg.norm(y, axis=-1)

    m = nn.TripletMarginWithDistanceLoss(
        distance_function=cos_dist, margin=0.5, swap=True, reduction=reduction
    )
    got = m(ra, rp, rn)
    want = np.maximum(0.5 + cos_ref(a, p) - np.minimum(cos_ref(a, n), cos_ref(p, n)), 0)
    np.testing.assert_allclose(to_np(got), red(want, reduction), rtol=1e-10)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_hinge_embedding(reduction, device):
    y = np.where(RNG.uniform(size=X.shape) > 0.5, 1.0, -1.0)
    tol = dict(rtol=1e-10 if device == "cpu" else 1e-5)
    got = F.hinge_embedding_loss(dt(X, device=device), dt(y, device=device), reduction=reduction)
    np.testing.assert_allclose(to_np(got), red(hinge_ref(X, y), reduction), **tol)
    got = nn.HingeEmbeddingLoss(margin=0.5, reduction=reduction)(
        dt(X, device=device), dt(y, device=device)
    )
    np.testing.assert_allclose(to_np(got), red(hinge_ref(X, y, 0.5), reduction), **tol)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_poisson_nll(reduction):
    t = RNG.poisson(2.0, size=X.shape).astype(float)
    rate = np.exp(X)
    for x, kw in [
        (X, {}),
        (X, {"full": True}),
        (rate, {"log_input": False}),
        (rate, {"log_input": False, "full": True, "eps": 1e-3}),
    ]:
        got = F.poisson_nll_loss(rumus.tensor(x), rumus.tensor(t), reduction=reduction, **kw)
        np.testing.assert_allclose(to_np(got), red(poisson_ref(x, t, **kw), reduction), rtol=1e-10)
    m = nn.PoissonNLLLoss(log_input=False, full=True, reduction=reduction)
    got = m(rumus.tensor(rate), rumus.tensor(t))
    np.testing.assert_allclose(to_np(got), red(poisson_ref(rate, t, False, True), reduction))


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_gaussian_nll(reduction):
    t = RNG.normal(size=X.shape)
    var = RNG.uniform(0.1, 2.0, X.shape)
    var[0, 0] = 1e-9  # clamped at eps
    for v, vref in [
        (var, var),
        (var[:, :1], var[:, :1]),  # a trailing dim of 1
        (var[:, 0], var[:, :1]),  # one fewer dim: one variance per sample
        (0.7, np.full(X.shape, 0.7)),  # a number
    ]:
        rv = rumus.tensor(v) if isinstance(v, np.ndarray) else v
        for kw in ({}, {"full": True}, {"eps": 1e-2}):
            got = F.gaussian_nll_loss(
                rumus.tensor(X), rumus.tensor(t), rv, reduction=reduction, **kw
            )
            want = red(gaussian_ref(X, t, vref, **kw), reduction)
            np.testing.assert_allclose(to_np(got), want, rtol=1e-10)
    m = nn.GaussianNLLLoss(full=True, eps=1e-3, reduction=reduction)
    got = m(rumus.tensor(X), rumus.tensor(t), rumus.tensor(var))
    want = red(gaussian_ref(X, t, var, True, 1e-3), reduction)
    np.testing.assert_allclose(to_np(got), want, rtol=1e-10)


def test_gaussian_nll_variance_gradient_passes_the_clamp():
    # PyTorch clamps a clone of var under no_grad: the value is clamped, the gradient is not
    x, t = rumus.tensor(np.array([0.5, 1.0])), rumus.tensor(np.zeros(2))
    var = rumus.tensor(np.array([1e-9, 2.0]), requires_grad=True)
    F.gaussian_nll_loss(x, t, var, eps=1e-3, reduction="sum").backward()
    v = np.array([1e-3, 2.0])
    want = 0.5 * (1 / v - np.array([0.25, 1.0]) / v**2)
    np.testing.assert_allclose(to_np(var.grad), want, rtol=1e-10)


def test_legacy_reduction_flags():
    x = rumus.tensor(X)
    y = rumus.tensor(Y)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        got = F.multi_margin_loss(x, y, size_average=False)
        m = nn.HingeEmbeddingLoss(reduce=False)
    assert any("size_average and reduce args will be deprecated" in str(e.message) for e in w)
    np.testing.assert_allclose(got.item(), multi_margin_ref(X, Y).sum())
    assert m.reduction == "none"
    with pytest.warns(UserWarning, match="size_average and reduce"):
        assert nn.MultiLabelMarginLoss(size_average=False).reduction == "sum"


def test_bad_input():
    x, y = rumus.tensor(X), rumus.tensor(Y)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        F.multi_margin_loss(x, y, p=3)
    with pytest.raises(ValueError, match="only p == 1 and p == 2"):
        nn.MultiMarginLoss(p=3)
    with pytest.raises(RuntimeError, match=r"inconsistent target size: \[3\]"):
        F.multi_margin_loss(x, rumus.tensor([0, 1, 2]))
    with pytest.raises(RuntimeError, match="inconsistent weight size, expected 5"):
        F.multi_margin_loss(x, y, weight=rumus.tensor([1.0, 2.0]))
    with pytest.raises(IndexError, match="out of range"):
        F.multi_margin_loss(x, rumus.tensor([0, 1, 2, 5]))
    with pytest.raises(RuntimeError, match=r"inconsistent target size: \[4, 4\]"):
        F.multilabel_margin_loss(x, rumus.tensor(ML_Y[:, :4]))
    with pytest.raises(RuntimeError, match=r"same number of dimensions.*anchor 2D, positive 1D"):
        F.triplet_margin_loss(x, x[0], x)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        F.triplet_margin_with_distance_loss(x, x, x, margin=0.0)
    with pytest.raises(ValueError, match="expected margin to be greater than 0"):
        nn.TripletMarginLoss(margin=-1.0)
    with pytest.raises(ValueError, match=r"var is of incorrect size: \[4, 2\]"):
        F.gaussian_nll_loss(x, x, rumus.ones(4, 2, dtype=rumus.float64))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, x, -rumus.ones(4, 5, dtype=rumus.float64))
    with pytest.raises(ValueError, match="var has negative entry"):
        F.gaussian_nll_loss(x, x, -1.0)
    with pytest.raises(ValueError, match="not valid"):
        F.gaussian_nll_loss(x, x, x.abs(), reduction="avg")
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.poisson_nll_loss(x, x, reduction="avg")
    for fn in (F.hinge_embedding_loss, F.poisson_nll_loss, F.multilabel_soft_margin_loss):
        with pytest.raises(TypeError):
            fn("x", x)
        with pytest.raises(RuntimeError, match="not implemented for"):
            fn(y, y)


CASES = [
    ("MultiMarginLoss", {"p": 2, "margin": 0.7}, "mm"),
    ("MultiLabelMarginLoss", {}, "ml"),
    ("MultiLabelSoftMarginLoss", {}, "mls"),
    ("TripletMarginLoss", {"margin": 0.5, "swap": True}, "tri"),
    ("TripletMarginWithDistanceLoss", {"margin": 0.5}, "tri"),
    ("HingeEmbeddingLoss", {"margin": 0.5}, "hinge"),
    ("PoissonNLLLoss", {"full": True}, "pois"),
    ("GaussianNLLLoss", {"full": True}, "gauss"),
]


@pytest.mark.parametrize("name, kwargs, kind", CASES, ids=[c[0] for c in CASES])
@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_parity_with_torch(name, kwargs, kind, reduction):
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(5)
    x = rng.normal(size=(4, 5))
    other = {
        "mm": [Y],
        "ml": [ML_Y],
        "mls": [(rng.uniform(size=x.shape) > 0.5).astype(float)],
        "tri": [rng.normal(size=x.shape), rng.normal(size=x.shape)],
        "hinge": [np.where(rng.uniform(size=x.shape) > 0.5, 1.0, -1.0)],
        "pois": [rng.poisson(2.0, size=x.shape).astype(float)],
        "gauss": [rng.normal(size=x.shape), rng.uniform(0.1, 2.0, (4, 1))],
    }[kind]
    rx, tx = rumus.tensor(x, requires_grad=True), torch.tensor(x, requires_grad=True)
    ro = getattr(nn, name)(reduction=reduction, **kwargs)(rx, *map(rumus.tensor, other))
    to = getattr(torch.nn, name)(reduction=reduction, **kwargs)(tx, *map(torch.tensor, other))
    np.testing.assert_allclose(to_np(ro), to.detach().numpy(), rtol=1e-10, atol=1e-12)
    ro.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(to_np(rx.grad), tx.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert math.isfinite(float(to_np(ro).sum()))
