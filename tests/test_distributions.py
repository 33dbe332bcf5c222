"""rumus.distributions: densities against closed forms, sample moments,
reparameterized gradients, shapes, argument validation, KL divergences."""

import math

import numpy as np
import pytest
import rumus
import rumus.distributions as D
from rumus.distributions import constraints, transforms

try:
    import scipy.stats as st
except ImportError:  # scipy is optional
    st = None


def T(x, dtype=rumus.float64, device="cpu"):
    return rumus.tensor(np.asarray(x, dtype=np.float64), dtype=dtype, device=device)


def N(t):
    return t.cpu().numpy() if isinstance(t, rumus.Tensor) else np.asarray(t)


def close(a, b, rtol=1e-6, atol=1e-8):
    np.testing.assert_allclose(N(a), np.asarray(b, dtype=np.float64), rtol=rtol, atol=atol)


@pytest.fixture(autouse=True)
def seed():
    rumus.manual_seed(1234)


LOC = np.array([-1.0, 0.0, 2.5])
SCALE = np.array([0.5, 1.0, 3.0])
X = np.array([-0.3, 1.7, 2.0])


# ---------- closed forms: log_prob, cdf, icdf, entropy, mean, variance ----------


def test_normal_closed_forms():
    d = D.Normal(T(LOC), T(SCALE))
    z = (X - LOC) / SCALE
    close(d.log_prob(T(X)), -0.5 * z**2 - np.log(SCALE) - 0.5 * math.log(2 * math.pi))
    cdf = np.array([0.5 * (1 + math.erf(v / math.sqrt(2))) for v in z])
    close(d.cdf(T(X)), cdf)
    close(d.icdf(T(cdf)), X, rtol=1e-9, atol=1e-9)
    close(d.entropy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log(SCALE))
    close(d.mean, LOC)
    close(d.mode, LOC)
    close(d.variance, SCALE**2)
    close(d.stddev, SCALE)
    if st is not None:
        close(d.log_prob(T(X)), st.norm(LOC, SCALE).logpdf(X))


def test_normal_icdf_tails_and_grad():
    p = np.array([1e-10, 1e-4, 0.02, 0.5, 0.9, 0.9999, 1 - 1e-10])
    d = D.Normal(0.0, 1.0)
    x = d.icdf(T(p))
    back = [0.5 * math.erfc(-v / math.sqrt(2)) for v in N(x)]
    close(back, p, rtol=1e-7)
    q = T([0.1, 0.5, 0.8]).requires_grad_()
    assert rumus.autograd.gradcheck(lambda v: D.Normal(T(0.0), T(1.0)).icdf(v), (q,))
    x32 = d.icdf(rumus.tensor([0.001, 0.3, 0.999]))
    assert x32.dtype == rumus.float32
    close(x32, [-3.090232306, -0.524400513, 3.090232306], rtol=1e-5)


def test_lognormal_halfnormal():
    d = D.LogNormal(T(LOC), T(SCALE))
    x = np.exp(X)
    z = (X - LOC) / SCALE
    close(d.log_prob(T(x)), -0.5 * z**2 - np.log(SCALE) - 0.5 * math.log(2 * math.pi) - X)
    close(d.mean, np.exp(LOC + SCALE**2 / 2))
    close(d.variance, (np.exp(SCALE**2) - 1) * np.exp(2 * LOC + SCALE**2))
    close(d.entropy(), 0.5 + 0.5 * math.log(2 * math.pi) + np.log(SCALE) + LOC)
    close(d.cdf(T(x)), [0.5 * (1 + math.erf(v / math.sqrt(2))) for v in z])
    assert isinstance(d, D.TransformedDistribution)

    h = D.HalfNormal(T(SCALE))
    xs = np.abs(X)
    close(
        h.log_prob(T(xs)),
        math.log(2) - 0.5 * (xs / SCALE) ** 2 - np.log(SCALE) - 0.5 * math.log(2 * math.pi),
    )
    close(h.cdf(T(xs)), [math.erf(v / math.sqrt(2)) for v in xs / SCALE])
    close(h.icdf(h.cdf(T(xs))), xs, rtol=1e-8)
    close(h.mean, SCALE * math.sqrt(2 / math.pi))
    close(h.variance, SCALE**2 * (1 - 2 / math.pi))
    close(h.entropy(), 0.5 * np.log(math.pi * SCALE**2 / 2) + 0.5)
    with pytest.raises(ValueError, match="support"):
        h.log_prob(T([-1.0, 1.0, 1.0]))


def test_uniform_closed_forms():
    d = D.Uniform(T([0.0, -1.0]), T([2.0, 3.0]))
    close(d.log_prob(T([1.0, 0.0])), [-math.log(2), -math.log(4)])
    close(d.cdf(T([0.5, 0.0])), [0.25, 0.25])
    close(d.icdf(T([0.25, 0.5])), [0.5, 1.0])
    close(d.entropy(), [math.log(2), math.log(4)])
    close(d.mean, [1.0, 1.0])
    close(d.variance, [4 / 12, 16 / 12])
    with pytest.raises(ValueError, match="support"):
        d.log_prob(T([2.5, 0.0]))
    nv = D.Uniform(T([0.0]), T([1.0]), validate_args=False)
    assert N(nv.log_prob(T([2.0])))[0] == -np.inf


def test_exponential_laplace_cauchy():
    rate = np.array([0.5, 2.0, 4.0])
    x = np.abs(X)
    e = D.Exponential(T(rate))
    close(e.log_prob(T(x)), np.log(rate) - rate * x)
    close(e.cdf(T(x)), 1 - np.exp(-rate * x))
    close(e.icdf(e.cdf(T(x))), x, rtol=1e-9)
    close(e.entropy(), 1 - np.log(rate))
    close(e.mean, 1 / rate)
    close(e.variance, 1 / rate**2)

    la = D.Laplace(T(LOC), T(SCALE))
    close(la.log_prob(T(X)), -np.log(2 * SCALE) - np.abs(X - LOC) / SCALE)
    cdf = np.where(X < LOC, 0.5 * np.exp((X - LOC) / SCALE), 1 - 0.5 * np.exp(-(X - LOC) / SCALE))
    close(la.cdf(T(X)), cdf)
    close(la.icdf(T(cdf)), X, rtol=1e-9)
    close(la.entropy(), 1 + np.log(2 * SCALE))
    close(la.variance, 2 * SCALE**2)

    c = D.Cauchy(T(LOC), T(SCALE))
    z = (X - LOC) / SCALE
    close(c.log_prob(T(X)), -np.log(math.pi * SCALE * (1 + z**2)))
    close(c.cdf(T(X)), np.arctan(z) / math.pi + 0.5)
    close(c.icdf(c.cdf(T(X))), X, rtol=1e-9)
    close(c.entropy(), np.log(4 * math.pi * SCALE))
    assert np.isnan(N(c.mean)).all() and np.isinf(N(c.variance)).all()


def test_bernoulli_geometric():
    p = np.array([0.1, 0.5, 0.8])
    v = np.array([1.0, 0.0, 1.0])
    for d in (D.Bernoulli(probs=T(p)), D.Bernoulli(logits=T(np.log(p / (1 - p))))):
        close(d.log_prob(T(v)), v * np.log(p) + (1 - v) * np.log(1 - p))
        close(d.entropy(), -(p * np.log(p) + (1 - p) * np.log(1 - p)))
        close(d.mean, p)
        close(d.variance, p * (1 - p))
        close(d.probs, p)
        close(d.logits, np.log(p / (1 - p)))
    close(D.Bernoulli(probs=T(p)).enumerate_support(), [[0.0] * 3, [1.0] * 3])
    with pytest.raises(ValueError, match="support"):
        D.Bernoulli(probs=T(p)).log_prob(T([0.5, 1.0, 0.0]))

    g = D.Geometric(probs=T(p))
    k = np.array([0.0, 3.0, 1.0])
    close(g.log_prob(T(k)), k * np.log1p(-p) + np.log(p))
    close(g.mean, 1 / p - 1)
    close(g.variance, (1 - p) / p**2)
    close(g.entropy(), -((1 - p) * np.log(1 - p) + p * np.log(p)) / p)
    with pytest.raises(ValueError, match="support"):
        g.log_prob(T([0.5, 1.0, 0.0]))


def test_categorical_onehot():
    w = np.array([[1.0, 2.0, 7.0], [3.0, 3.0, 4.0]])
    p = w / w.sum(-1, keepdims=True)
    c = D.Categorical(probs=T(w))
    cl = D.Categorical(logits=T(np.log(w)))
    for d in (c, cl):
        close(d.probs, p)
        close(d.log_prob(T([2, 0])), np.log([p[0, 2], p[1, 0]]))
        close(d.entropy(), -(p * np.log(p)).sum(-1))
        assert d.batch_shape == (2,) and d.event_shape == ()
    close(c.log_prob(T([[0], [1]]).long()), np.log(p[:, [0, 1]]).T)
    assert N(c.mode).tolist() == [2, 2]
    assert N(c.enumerate_support()).tolist() == [[0, 0], [1, 1], [2, 2]]
    with pytest.raises(ValueError, match="support"):
        c.log_prob(T([3, 0]))
    zero = D.Categorical(probs=T([0.0, 0.5, 0.5]))
    close(zero.entropy(), math.log(2))

    o = D.OneHotCategorical(probs=T(w))
    assert o.event_shape == (3,) and o.batch_shape == (2,)
    close(o.log_prob(T([[0, 0, 1], [1, 0, 0]])), np.log([p[0, 2], p[1, 0]]))
    close(o.entropy(), -(p * np.log(p)).sum(-1))
    close(o.mean, p)
    close(o.variance, p * (1 - p))
    assert o.enumerate_support().shape == (3, 2, 3)
    with pytest.raises(ValueError, match="support"):
        o.log_prob(T([[0, 1, 1], [1, 0, 0]]))


def _mvn_logpdf(x, mu, cov):
    k = len(mu)
    d = x - mu
    sol = np.linalg.solve(cov, d)
    return -0.5 * (k * math.log(2 * math.pi) + np.linalg.slogdet(cov)[1] + d @ sol)


def test_multivariate_normal_parametrizations(rng):
    A = rng.standard_normal((3, 3))
    cov = A @ A.T + 3 * np.eye(3)
    mu = rng.standard_normal(3)
    x = rng.standard_normal((4, 3))
    expect = [_mvn_logpdf(xi, mu, cov) for xi in x]
    H = 0.5 * 3 * (1 + math.log(2 * math.pi)) + 0.5 * np.linalg.slogdet(cov)[1]
    for kw in (
        {"covariance_matrix": T(cov)},
        {"scale_tril": T(np.linalg.cholesky(cov))},
        {"precision_matrix": T(np.linalg.inv(cov))},
    ):
        d = D.MultivariateNormal(T(mu), **kw)
        close(d.log_prob(T(x)), expect, rtol=1e-8)
        close(d.entropy(), H)
        close(d.covariance_matrix, cov, rtol=1e-8)
        close(d.precision_matrix, np.linalg.inv(cov), rtol=1e-7, atol=1e-10)
        close(d.scale_tril, np.linalg.cholesky(cov), rtol=1e-8, atol=1e-12)
        close(d.variance, np.diag(cov))
        assert d.batch_shape == () and d.event_shape == (3,)
    with pytest.raises(ValueError, match="Exactly one"):
        D.MultivariateNormal(T(mu), covariance_matrix=T(cov), scale_tril=T(np.eye(3)))
    with pytest.raises(ValueError, match="covariance_matrix"):
        D.MultivariateNormal(T(mu), covariance_matrix=T(-np.eye(3)))
    with pytest.raises(ValueError, match="scale_tril"):
        D.MultivariateNormal(T(mu), scale_tril=T(np.ones((3, 3))))
    # batched: loc (2, 3) broadcast against one matrix
    b = D.MultivariateNormal(T(np.stack([mu, -mu])), covariance_matrix=T(cov))
    assert b.batch_shape == (2,)
    close(b.log_prob(T(x[:2])), [_mvn_logpdf(x[0], mu, cov), _mvn_logpdf(x[1], -mu, cov)])


def test_lowrank_multivariate_normal(rng):
    W = rng.standard_normal((4, 2))
    Dg = rng.uniform(0.5, 2.0, 4)
    mu = rng.standard_normal(4)
    cov = W @ W.T + np.diag(Dg)
    x = rng.standard_normal((5, 4))
    d = D.LowRankMultivariateNormal(T(mu), T(W), T(Dg))
    close(d.log_prob(T(x)), [_mvn_logpdf(xi, mu, cov) for xi in x], rtol=1e-8)
    close(d.covariance_matrix, cov)
    close(d.variance, np.diag(cov))
    close(d.entropy(), 0.5 * 4 * (1 + math.log(2 * math.pi)) + 0.5 * np.linalg.slogdet(cov)[1])
    s = d.sample((20000,))
    close(np.cov(N(s).T), cov, rtol=0.1, atol=0.1)


# ---------- sample moments ----------


@pytest.mark.parametrize(
    "make",
    [
        lambda dt: D.Normal(T(LOC, dt), T(SCALE, dt)),
        lambda dt: D.Uniform(T([0.0, -2.0, 1.0], dt), T([1.0, 2.0, 5.0], dt)),
        lambda dt: D.Exponential(T([0.5, 1.0, 3.0], dt)),
        lambda dt: D.Laplace(T(LOC, dt), T(SCALE, dt)),
        lambda dt: D.Bernoulli(probs=T([0.1, 0.5, 0.9], dt)),
        lambda dt: D.Geometric(probs=T([0.2, 0.5, 0.9], dt)),
        lambda dt: D.LogNormal(T([0.0, 0.2, -0.5], dt), T([0.25, 0.5, 0.3], dt)),
        lambda dt: D.HalfNormal(T(SCALE, dt)),
        lambda dt: D.OneHotCategorical(probs=T([0.2, 0.3, 0.5], dt)),
    ],
    ids=[
        "normal",
        "uniform",
        "exponential",
        "laplace",
        "bernoulli",
        "geometric",
        "lognormal",
        "halfnormal",
        "onehot",
    ],
)
def test_sample_moments(make):
    d = make(rumus.float32)
    s = d.sample((100000,))
    assert s.shape == (100000, 3) and s.dtype == rumus.float32
    assert bool(d.support.check(s).all())
    m, v = N(d.mean), N(d.variance)
    sn = N(s).astype(np.float64)
    np.testing.assert_allclose(sn.mean(0), m, rtol=0.03, atol=0.02 * np.sqrt(v).max())
    np.testing.assert_allclose(sn.var(0), v, rtol=0.06, atol=0.01)


def test_categorical_sample_frequencies():
    p = np.array([[0.1, 0.2, 0.7], [0.5, 0.0, 0.5]])
    d = D.Categorical(probs=T(p, rumus.float32))
    s = N(d.sample((50000,)))
    assert s.shape == (50000, 2) and s.dtype == np.int64
    freq = np.stack([(s == k).mean(0) for k in range(3)], -1)
    np.testing.assert_allclose(freq, p, atol=0.01)
    assert (s[:, 1] != 1).all()


def test_cauchy_and_mvn_sample_quantiles(rng):
    c = D.Cauchy(T([1.0]), T([2.0]))
    s = N(c.sample((100000,)))[:, 0]
    np.testing.assert_allclose(np.quantile(s, [0.25, 0.5, 0.75]), [-1.0, 1.0, 3.0], atol=0.06)
    A = rng.standard_normal((3, 3))
    cov = A @ A.T + np.eye(3)
    mu = np.array([1.0, -2.0, 0.5])
    m = D.MultivariateNormal(T(mu), covariance_matrix=T(cov))
    x = N(m.sample((50000,)))
    np.testing.assert_allclose(x.mean(0), mu, atol=0.05)
    np.testing.assert_allclose(np.cov(x.T), cov, rtol=0.05, atol=0.05)


def test_seed_reproducibility():
    d = D.Normal(T([0.0, 1.0]), T([1.0, 2.0]))
    rumus.manual_seed(7)
    a = N(d.sample((5,)))
    c1 = N(D.Categorical(logits=T([0.0, 1.0, 2.0])).sample((10,)))
    rumus.manual_seed(7)
    b = N(d.sample((5,)))
    c2 = N(D.Categorical(logits=T([0.0, 1.0, 2.0])).sample((10,)))
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(c1, c2)


# ---------- rsample gradients ----------


def _rsample_fn(make, n=4):
    def fn(*params):
        rumus.manual_seed(3)
        return make(*params).rsample((n,))

    return fn


@pytest.mark.parametrize(
    "make,params",
    [
        (D.Normal, ([0.3, -1.0], [1.5, 0.7])),
        (D.Uniform, ([0.0, -1.0], [1.0, 2.0])),
        (D.Exponential, ([0.5, 2.0],)),
        (D.Laplace, ([0.3, -1.0], [1.5, 0.7])),
        (D.Cauchy, ([0.3, -1.0], [1.5, 0.7])),
        (D.LogNormal, ([0.3, -1.0], [0.5, 0.7])),
        (D.HalfNormal, ([1.5, 0.7],)),
    ],
    ids=["normal", "uniform", "exponential", "laplace", "cauchy", "lognormal", "halfnormal"],
)
def test_rsample_gradcheck(make, params):
    ts = tuple(T(p).requires_grad_() for p in params)
    assert make(*ts).has_rsample
    assert rumus.autograd.gradcheck(_rsample_fn(make), ts)


def test_rsample_gradcheck_mvn():
    loc = T([0.5, -1.0]).requires_grad_()
    tril = T([[1.2, 0.0], [0.3, 0.8]]).requires_grad_()
    assert rumus.autograd.gradcheck(
        _rsample_fn(lambda m, L: D.MultivariateNormal(m, scale_tril=L, validate_args=False)),
        (loc, tril),
    )


def test_log_prob_gradcheck():
    loc = T([0.5, -1.0]).requires_grad_()
    scale = T([1.2, 0.4]).requires_grad_()
    x = T([0.1, 0.2])
    assert rumus.autograd.gradcheck(lambda a, b: D.Normal(a, b).log_prob(x), (loc, scale))
    A = T([[2.0, 0.3], [0.3, 1.0]]).requires_grad_()
    assert rumus.autograd.gradcheck(
        lambda m, c: D.MultivariateNormal(
            m, covariance_matrix=(c + c.mT) / 2, validate_args=False
        ).log_prob(x),
        (loc, A),
    )
    assert not D.Bernoulli(0.3).has_rsample and not D.Categorical(T([0.5, 0.5])).has_rsample


# ---------- shapes and expand ----------


def test_shapes_and_expand():
    d = D.Normal(T(np.zeros((2, 1))), T(np.ones(3)))
    assert d.batch_shape == (2, 3) and d.event_shape == ()
    assert d.sample().shape == (2, 3)
    assert d.sample((4, 5)).shape == (4, 5, 2, 3)
    assert D.Normal(0.0, 1.0).batch_shape == ()
    assert D.Normal(0.0, 1.0).sample((3,)).shape == (3,)
    e = D.Normal(T([0.0, 1.0]), T([1.0, 1.0])).expand((4, 2))
    assert e.batch_shape == (4, 2) and e.sample((3,)).shape == (3, 4, 2)
    close(e.log_prob(T(np.zeros((4, 2))))[:, 1], [-0.5 - 0.5 * math.log(2 * math.pi)] * 4)
    for d in (
        D.Uniform(T([0.0]), T([1.0])),
        D.Exponential(T([1.0])),
        D.Laplace(T([0.0]), T([1.0])),
        D.Cauchy(T([0.0]), T([1.0])),
        D.Bernoulli(probs=T([0.5])),
        D.Geometric(probs=T([0.5])),
        D.Categorical(probs=T([[0.5, 0.5]])),
        D.OneHotCategorical(probs=T([[0.5, 0.5]])),
        D.LogNormal(T([0.0]), T([1.0])),
        D.HalfNormal(T([1.0])),
        D.MultivariateNormal(T([[0.0, 0.0]]), scale_tril=T(np.eye(2))),
        D.LowRankMultivariateNormal(T([[0.0, 0.0]]), T(np.ones((1, 2, 1))), T([[1.0, 1.0]])),
        D.Independent(D.Normal(T(np.zeros((1, 3))), T(np.ones((1, 3)))), 1),
        D.Gumbel(T([0.0]), T([1.0])),
        D.Pareto(T([1.0]), T([2.0])),
        D.LogisticNormal(T([[0.0, 0.0]]), T([[1.0, 1.0]])),
        D.RelaxedBernoulli(T(0.5), probs=T([0.3])),
        D.RelaxedOneHotCategorical(T(0.5), probs=T([[0.3, 0.7]])),
        D.ExpRelaxedCategorical(T(0.5), probs=T([[0.3, 0.7]])),
        D.OneHotCategoricalStraightThrough(probs=T([[0.3, 0.7]])),
        D.MixtureSameFamily(D.Categorical(T([[0.3, 0.7]])), D.Normal(T([[0.0, 1.0]]), 1.0)),
    ):
        x = d.expand((3, 1)).expand((3, 4))
        assert x.batch_shape == (3, 4), type(d)
        s = x.sample((2,))
        assert s.shape == (2, 3, 4) + tuple(d.event_shape), type(d)
        assert x.log_prob(s).shape == (2, 3, 4), type(d)


def test_independent():
    base = D.Normal(T(np.zeros((2, 3))), T(np.ones((2, 3))))
    d = D.Independent(base, 1)
    assert d.batch_shape == (2,) and d.event_shape == (3,)
    x = T(np.ones((2, 3)))
    close(d.log_prob(x), N(base.log_prob(x)).sum(-1))
    close(d.entropy(), N(base.entropy()).sum(-1))
    assert d.has_rsample and d.rsample((5,)).shape == (5, 2, 3)
    assert isinstance(d.support, constraints._IndependentConstraint)
    with pytest.raises(ValueError, match="event_shape"):
        d.log_prob(T(np.ones((2, 4))))


def test_log_prob_broadcasting():
    d = D.Normal(T([0.0, 1.0, 2.0]), T([1.0, 1.0, 1.0]))
    assert d.log_prob(T(np.zeros((5, 1)))).shape == (5, 3)
    with pytest.raises(ValueError, match="broadcastable"):
        d.log_prob(T(np.zeros(4)))


# ---------- validation ----------


def test_validate_args_errors():
    with pytest.raises(ValueError, match="scale.*GreaterThan"):
        D.Normal(T([0.0]), T([0.0]))
    with pytest.raises(ValueError, match="loc"):
        D.Normal(T([math.nan]), T([1.0]))
    with pytest.raises(ValueError, match="probs"):
        D.Bernoulli(probs=T([1.5]))
    with pytest.raises(ValueError, match="not both"):
        D.Bernoulli(probs=T([0.5]), logits=T([0.0]))
    with pytest.raises(ValueError, match="rate"):
        D.Exponential(T([-1.0]))
    with pytest.raises(ValueError, match="low"):
        D.Uniform(T([1.0]), T([0.0]))
    with pytest.raises(ValueError, match="Simplex"):
        D.Categorical(probs=T([-0.5, 1.5]))
    with pytest.raises(ValueError, match="probs"):
        D.Geometric(probs=T([0.0]))
    with pytest.raises(ValueError, match="support"):
        D.Exponential(T([1.0])).log_prob(T([-1.0]))
    # validate_args=False skips the checks; the default can be switched off
    D.Normal(T([0.0]), T([-1.0]), validate_args=False)
    D.Distribution.set_default_validate_args(False)
    try:
        D.Normal(T([0.0]), T([-1.0]))
        D.Exponential(T([1.0])).log_prob(T([-1.0]))
    finally:
        D.Distribution.set_default_validate_args(True)
    with pytest.raises(ValueError):
        D.Normal(T([0.0]), T([-1.0]))


def test_constraints():
    x = T([-1.0, 0.0, 0.5, 1.0, 2.0])
    assert N(constraints.real.check(x)).all()
    assert N(constraints.positive.check(x)).tolist() == [False, False, True, True, True]
    assert N(constraints.nonnegative.check(x)).tolist() == [False, True, True, True, True]
    assert N(constraints.unit_interval.check(x)).tolist() == [False, True, True, True, False]
    assert N(constraints.interval(-1.0, 0.5).check(x)).tolist() == [True] * 3 + [False] * 2
    assert N(constraints.boolean.check(x)).tolist() == [False, True, False, True, False]
    assert N(constraints.nonnegative_integer.check(x)).tolist() == [False, True, False, True, True]
    assert N(constraints.integer_interval(0, 1).check(x)).tolist() == [
        False,
        True,
        False,
        True,
        False,
    ]
    assert N(constraints.simplex.check(T([[0.2, 0.8], [0.5, 0.6]]))).tolist() == [True, False]
    assert N(constraints.real_vector.check(T([[0.0, math.nan], [1.0, 2.0]]))).tolist() == [
        False,
        True,
    ]
    assert constraints.real_vector.event_dim == 1
    assert bool(constraints.lower_cholesky.check(T([[1.0, 0.0], [2.0, 3.0]])))
    assert not bool(constraints.lower_cholesky.check(T([[1.0, 1.0], [2.0, 3.0]])))
    assert bool(constraints.positive_definite.check(T([[2.0, 1.0], [1.0, 2.0]])))
    assert not bool(constraints.positive_definite.check(T([[1.0, 2.0], [2.0, 1.0]])))
    assert not bool(constraints.positive_definite.check(T([[2.0, 1.0], [0.0, 2.0]])))
    assert constraints.is_dependent(D.Uniform.support)
    assert "Interval" in repr(D.Uniform(0.0, 1.0).support)


# ---------- transforms ----------


@pytest.mark.parametrize(
    "t,x",
    [
        (transforms.ExpTransform(), [-1.0, 0.5, 2.0]),
        (transforms.AffineTransform(T([1.0, 2.0, 3.0]), T([0.5, -2.0, 3.0])), [-1.0, 0.5, 2.0]),
        (transforms.AffineTransform(1.0, -2.0), [-1.0, 0.5, 2.0]),
        (transforms.SigmoidTransform(), [-1.0, 0.5, 2.0]),
        (transforms.TanhTransform(), [-1.0, 0.5, 2.0]),
        (transforms.PowerTransform(2.5), [0.5, 1.0, 2.0]),
        (transforms.SoftplusTransform(), [-3.0, 0.5, 2.0]),
        (
            transforms.CumulativeDistributionTransform(D.Normal(T(0.5), T(2.0))),
            [-1.0, 0.5, 2.0],
        ),
        (
            transforms.ComposeTransform(
                [transforms.AffineTransform(0.5, 2.0), transforms.TanhTransform()]
            ),
            [-1.0, 0.5, 0.2],
        ),
    ],
    ids=[
        "exp",
        "affine",
        "affine_scalar",
        "sigmoid",
        "tanh",
        "power",
        "softplus",
        "cdf",
        "compose",
    ],
)
def test_elementwise_transforms(t, x):
    x = T(x)
    y = t(x)
    close(t.inv(y), N(x), rtol=1e-7)
    # log|dy/dx| against a central difference
    h = 1e-6
    num = np.log(np.abs((N(t(x + h)) - N(t(x - h))) / (2 * h)))
    close(t.log_abs_det_jacobian(x, y), num, rtol=1e-5, atol=1e-6)
    close(t.inv.log_abs_det_jacobian(y, x), -num, rtol=1e-5, atol=1e-6)
    assert t.bijective
    assert bool(t.codomain.check(y).all())


def test_stick_breaking_and_softmax(rng):
    t = transforms.StickBreakingTransform()
    x = T(rng.standard_normal((2, 3)))
    y = t(x)
    assert y.shape == (2, 4)
    close(N(y).sum(-1), [1.0, 1.0])
    assert bool(constraints.simplex.check(y).all())
    close(t.inv(y), N(x), rtol=1e-8)
    # log|det J| of x -> y[:-1] against a numerical Jacobian
    for b in range(2):
        J = np.zeros((3, 3))
        for j in range(3):
            e = np.zeros(3)
            e[j] = 1e-6
            xp = T(N(x)[b] + e)
            xm = T(N(x)[b] - e)
            J[:, j] = (N(t(xp))[:3] - N(t(xm))[:3]) / 2e-6
        close(t.log_abs_det_jacobian(x, y)[b], np.log(abs(np.linalg.det(J))), rtol=1e-5)
    assert t.forward_shape((2, 3)) == (2, 4) and t.inverse_shape((2, 4)) == (2, 3)
    s = transforms.SoftmaxTransform()
    ys = s(x)
    close(N(ys).sum(-1), [1.0, 1.0])
    close(s(s.inv(ys)), N(ys))


def test_transformed_distribution(rng):
    base = D.Normal(T([0.5, -0.2]), T([1.0, 2.0]))
    aff = transforms.AffineTransform(T([1.0, -1.0]), T([2.0, 3.0]))
    d = D.TransformedDistribution(base, [aff])
    x = T([0.3, 0.9])
    ref = D.Normal(T([2.0, -1.6]), T([2.0, 6.0]))
    close(d.log_prob(x), ref.log_prob(x), rtol=1e-10)
    close(d.cdf(x), ref.cdf(x), rtol=1e-10)
    close(d.icdf(T([0.2, 0.7])), ref.icdf(T([0.2, 0.7])), rtol=1e-8)
    assert d.rsample((5,)).shape == (5, 2) and d.has_rsample
    # decreasing transform: cdf is flipped
    neg = D.TransformedDistribution(D.Normal(0.0, 1.0), transforms.AffineTransform(0.0, -1.0))
    close(neg.cdf(rumus.tensor(1.0)), 0.5 * (1 + math.erf(1 / math.sqrt(2))), rtol=1e-6)
    # logistic-normal on the simplex via stick breaking: event dims move
    sb = D.TransformedDistribution(
        D.Normal(T(np.zeros(3)), T(np.ones(3))), transforms.StickBreakingTransform()
    )
    assert sb.event_shape == (4,) and sb.batch_shape == ()
    v = sb.sample((6,))
    assert v.shape == (6, 4) and sb.log_prob(v).shape == (6,)
    with pytest.raises(ValueError, match="support"):
        sb.log_prob(T([0.5, 0.5, 0.5, 0.5]))


# ---------- KL divergence ----------


def _mc_kl(p, q, n=200000):
    x = p.sample((n,))
    return N(p.log_prob(x) - q.log_prob(x)).mean(0)


@pytest.mark.parametrize(
    "p,q",
    [
        (D.Normal(T([0.0, 1.0]), T([1.0, 0.5])), D.Normal(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.Laplace(T([0.0, 1.0]), T([1.0, 0.5])), D.Laplace(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.Exponential(T([1.0, 3.0])), D.Exponential(T([2.0, 0.5]))),
        (D.HalfNormal(T([1.0, 3.0])), D.HalfNormal(T([2.0, 0.5]))),
        (D.Geometric(T([0.3, 0.7])), D.Geometric(T([0.5, 0.2]))),
        (D.Uniform(T([0.0, 0.2]), T([1.0, 0.5])), D.Uniform(T([-1.0, 0.0]), T([2.0, 1.0]))),
        (
            D.Independent(D.Normal(T([[0.0, 1.0]]), T([[1.0, 0.5]])), 1),
            D.Independent(D.Normal(T([[0.5, -1.0]]), T([[2.0, 1.0]])), 1),
        ),
        (
            D.MultivariateNormal(T([0.0, 1.0]), covariance_matrix=T([[2.0, 0.3], [0.3, 1.0]])),
            D.MultivariateNormal(T([1.0, 0.0]), covariance_matrix=T([[1.0, -0.2], [-0.2, 0.5]])),
        ),
        (
            D.LowRankMultivariateNormal(T([0.0, 1.0]), T([[1.0], [0.5]]), T([1.0, 0.5])),
            D.LowRankMultivariateNormal(T([1.0, 0.0]), T([[0.2], [-0.5]]), T([0.7, 1.5])),
        ),
    ],
    ids=[
        "normal",
        "laplace",
        "exponential",
        "halfnormal",
        "geometric",
        "uniform",
        "independent",
        "mvn",
        "lowrank",
    ],
)
def test_kl_monte_carlo(p, q):
    kl = N(D.kl_divergence(p, q))
    np.testing.assert_allclose(kl, _mc_kl(p, q), rtol=0.05, atol=0.02)
    assert (kl >= 0).all()


def test_kl_discrete_exact():
    p = np.array([[0.2, 0.3, 0.5], [0.1, 0.1, 0.8]])
    q = np.array([[0.3, 0.3, 0.4], [0.6, 0.2, 0.2]])
    expect = (p * np.log(p / q)).sum(-1)
    close(D.kl_divergence(D.Categorical(T(p)), D.Categorical(T(q))), expect)
    close(D.kl_divergence(D.OneHotCategorical(T(p)), D.OneHotCategorical(T(q))), expect)
    a, b = np.array([0.2, 0.9]), np.array([0.5, 0.3])
    close(
        D.kl_divergence(D.Bernoulli(T(a)), D.Bernoulli(T(b))),
        a * np.log(a / b) + (1 - a) * np.log((1 - a) / (1 - b)),
    )
    inf = D.kl_divergence(D.Uniform(T([0.0]), T([2.0])), D.Uniform(T([0.5]), T([3.0])))
    assert np.isinf(N(inf)).all()
    zero_q = D.kl_divergence(D.Categorical(T([0.5, 0.5])), D.Categorical(T([1.0, 0.0])))
    assert np.isinf(N(zero_q))
    with pytest.raises(NotImplementedError):
        D.kl_divergence(D.Laplace(0.0, 1.0), D.Cauchy(0.0, 1.0))


def test_register_kl_dispatch():
    class MyNormal(D.Normal):
        pass

    assert np.isfinite(N(D.kl_divergence(MyNormal(0.0, 1.0), D.Normal(1.0, 2.0))))

    @D.register_kl(MyNormal, MyNormal)
    def _kl(p, q):
        return rumus.tensor(-1.0)

    assert N(D.kl_divergence(MyNormal(0.0, 1.0), MyNormal(0.0, 1.0))) == -1.0


# ---------- MixtureSameFamily ----------


def test_mixture_same_family():
    w = np.array([0.3, 0.7])
    mix = D.Categorical(T(w))
    comp = D.Normal(T([-1.0, 2.0]), T([0.5, 1.0]))
    d = D.MixtureSameFamily(mix, comp)
    x = np.array([-1.0, 0.0, 1.5])
    dens = sum(
        wi * np.exp(-0.5 * ((x - m) / s) ** 2) / (s * math.sqrt(2 * math.pi))
        for wi, m, s in zip(w, [-1.0, 2.0], [0.5, 1.0])
    )
    close(d.log_prob(T(x)), np.log(dens))
    close(d.mean, 0.3 * -1.0 + 0.7 * 2.0)
    s = N(d.sample((100000,)))
    np.testing.assert_allclose(s.mean(), N(d.mean), atol=0.03)
    np.testing.assert_allclose(s.var(), N(d.variance), rtol=0.03)
    # multivariate components
    comp2 = D.Independent(D.Normal(T(np.zeros((4, 2, 3))), T(np.ones((4, 2, 3)))), 1)
    d2 = D.MixtureSameFamily(D.Categorical(T(np.ones((4, 2)))), comp2)
    assert d2.batch_shape == (4,) and d2.event_shape == (3,)
    assert d2.sample((5,)).shape == (5, 4, 3) and d2.log_prob(d2.sample((5,))).shape == (5, 4)


# ---------- GPU ----------


def test_device_sampling(device):
    f32 = rumus.float32
    ds = [
        D.Normal(T([0.0, 1.0], f32, device), T([1.0, 2.0], f32, device)),
        D.Uniform(T([0.0, 1.0], f32, device), T([1.0, 2.0], f32, device)),
        D.Exponential(T([1.0, 2.0], f32, device)),
        D.Laplace(T([0.0, 1.0], f32, device), 1.0),
        D.Cauchy(T([0.0, 1.0], f32, device), 1.0),
        D.Bernoulli(logits=T([0.0, 1.0], f32, device)),
        D.Geometric(probs=T([0.3, 0.6], f32, device)),
        D.Categorical(logits=T([[0.0, 1.0, 2.0]], f32, device)),
        D.OneHotCategorical(logits=T([[0.0, 1.0, 2.0]], f32, device)),
        D.LogNormal(T([0.0, 1.0], f32, device), 0.5),
        D.HalfNormal(T([1.0, 2.0], f32, device)),
        D.MultivariateNormal(T([0.0, 1.0], f32, device), scale_tril=T(np.eye(2), f32, device)),
    ]
    for d in ds:
        s = d.sample((64,))
        assert str(s.device).startswith(device), type(d)
        lp = d.log_prob(s)
        assert str(lp.device).startswith(device), type(d)
        assert np.isfinite(N(lp)).all(), type(d)
    n = ds[0]
    x = T([0.3, -0.4], f32, device)
    close(
        n.log_prob(x), N(D.Normal(T([0.0, 1.0]), T([1.0, 2.0])).log_prob(T([0.3, -0.4]))), rtol=1e-5
    )
    close(n.icdf(T([0.2, 0.9], f32, device)), [-0.8416212, 1 + 2 * 1.2815516], rtol=1e-5)
    big = D.Normal(T([1.0], f32, device), T([2.0], f32, device)).sample((20000,))
    np.testing.assert_allclose([N(big).mean(), N(big).std()], [1.0, 2.0], atol=0.06)


# ---------- Gumbel, Pareto, LogisticNormal, straight-through, constraint registry ----------


def test_gumbel_pareto_closed_forms():
    g = D.Gumbel(T(LOC), T(SCALE))
    z = (X - LOC) / SCALE
    close(g.log_prob(T(X)), -(z + np.exp(-z)) - np.log(SCALE))
    close(g.cdf(T(X)), np.exp(-np.exp(-z)))
    close(g.icdf(g.cdf(T(X))), X, rtol=1e-8)
    close(g.mean, LOC + SCALE * np.euler_gamma)
    close(g.variance, (math.pi**2 / 6) * SCALE**2)
    close(g.entropy(), np.log(SCALE) + 1 + np.euler_gamma)
    s = N(D.Gumbel(T(LOC, rumus.float32), T(SCALE, rumus.float32)).sample((100000,)))
    np.testing.assert_allclose(s.mean(0), N(g.mean), atol=0.05)
    np.testing.assert_allclose(s.var(0), N(g.variance), rtol=0.05)

    xm, a = np.array([1.0, 2.0, 0.5]), np.array([3.0, 1.5, 4.0])
    p = D.Pareto(T(xm), T(a))
    x = np.array([1.5, 2.0, 3.0])
    close(p.log_prob(T(x)), np.log(a) + a * np.log(xm) - (a + 1) * np.log(x))
    close(p.cdf(T(x)), 1 - (xm / x) ** a)
    close(p.mean, a * xm / (a - 1))
    v = N(p.variance)
    assert np.isinf(v[1]) and np.isclose(v[0], xm[0] ** 2 * a[0] / ((a[0] - 1) ** 2 * (a[0] - 2)))
    close(p.entropy(), np.log(xm / a) + 1 / a + 1)
    with pytest.raises(ValueError, match="support"):
        p.log_prob(T([0.5, 2.5, 1.0]))
    q = D.Pareto(T([0.5, 1.0, 0.25]), T([2.0, 1.0, 3.0]))
    kl = N(D.kl_divergence(p, q))
    np.testing.assert_allclose(kl, _mc_kl(p, q), rtol=0.05, atol=0.02)
    assert np.isinf(N(D.kl_divergence(q, p))).all()
    ts = (T(xm).requires_grad_(), T(a).requires_grad_())
    assert rumus.autograd.gradcheck(_rsample_fn(D.Pareto), ts)
    ts = (T(LOC).requires_grad_(), T(SCALE).requires_grad_())
    assert rumus.autograd.gradcheck(_rsample_fn(D.Gumbel), ts)


def test_logistic_normal_and_straight_through(rng):
    loc, scale = rng.standard_normal(3), rng.uniform(0.5, 1.5, 3)
    d = D.LogisticNormal(T(loc), T(scale))
    assert d.batch_shape == () and d.event_shape == (4,)
    y = d.sample((5,))
    assert bool(constraints.simplex.check(y).all())
    # density by change of variables computed by hand
    t = transforms.StickBreakingTransform()
    x = t.inv(y)
    base = N(D.Normal(T(loc), T(scale)).log_prob(x)).sum(-1)
    close(d.log_prob(y), base - N(t.log_abs_det_jacobian(x, y)), rtol=1e-8)

    logits = T([0.1, -0.3, 0.5]).requires_grad_()
    st_ = D.OneHotCategoricalStraightThrough(logits=logits)
    assert st_.has_rsample
    s = st_.rsample((4,))
    assert N(s.detach()).sum(-1).tolist() == [1.0] * 4
    (s * T([1.0, 2.0, 3.0])).sum().backward()
    assert logits.grad is not None and np.abs(N(logits.grad)).sum() > 0


@pytest.mark.parametrize(
    "c",
    [
        constraints.real,
        constraints.positive,
        constraints.greater_than(2.0),
        constraints.less_than(-1.0),
        constraints.unit_interval,
        constraints.interval(-2.0, 3.0),
        constraints.simplex,
        constraints.real_vector,
    ],
    ids=["real", "positive", "greater_than", "less_than", "unit", "interval", "simplex", "vec"],
)
def test_biject_to(c, rng):
    t = D.biject_to(c)
    x = T(rng.standard_normal((5, 3)))
    y = t(x)
    assert bool(c.check(y).all())
    close(t.inv(y), N(x), rtol=1e-7, atol=1e-9)
    assert bool(c.check(D.transform_to(c)(x)).all())


def test_transform_to_lower_cholesky(rng):
    t = D.transform_to(constraints.lower_cholesky)
    y = t(T(rng.standard_normal((2, 3, 3))))
    assert N(constraints.lower_cholesky.check(y)).all()
    with pytest.raises(NotImplementedError):
        D.biject_to(constraints.boolean)


def test_relaxed_distributions():
    # RelaxedBernoulli's density integrates to one over (0, 1)
    r = D.RelaxedBernoulli(T(0.7), probs=T([0.2, 0.6]))
    grid = np.linspace(1e-6, 1 - 1e-6, 200001)
    dens = np.exp(N(r.log_prob(T(grid[:, None]).expand((grid.size, 2)))))
    np.testing.assert_allclose(
        (getattr(np, "trapezoid", None) or np.trapz)(dens, grid, axis=0), [1.0, 1.0], rtol=2e-3
    )
    s = r.sample((1000,))
    assert s.shape == (1000, 2) and bool(((s > 0) & (s < 1)).all())
    ts = (T([0.3, -0.4]).requires_grad_(),)
    assert rumus.autograd.gradcheck(
        _rsample_fn(lambda lg: D.RelaxedBernoulli(T(0.5), logits=lg)), ts
    )
    # RelaxedOneHotCategorical against the Concrete density (Maddison et al.)
    temp, pi = 0.6, np.array([0.2, 0.3, 0.5])
    c = D.RelaxedOneHotCategorical(T(temp), probs=T(pi))
    x = N(c.sample((4,)))
    assert np.allclose(x.sum(-1), 1.0)
    K = 3
    expect = (
        math.lgamma(K)
        + (K - 1) * math.log(temp)
        + (np.log(pi) - (temp + 1) * np.log(x)).sum(-1)
        - K * np.log((pi * x ** (-temp)).sum(-1))
    )
    close(c.log_prob(T(x)), expect, rtol=1e-6)
    assert c.expand((2,)).rsample((3,)).shape == (3, 2, 3)


@pytest.mark.parametrize(
    "p,q",
    [
        (D.Cauchy(T([0.0, 1.0]), T([1.0, 0.5])), D.Cauchy(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.LogNormal(T([0.0, 0.3]), T([0.5, 0.8])), D.LogNormal(T([0.2, -0.1]), T([1.0, 0.6]))),
        (D.Uniform(T([0.0, -1.0]), T([1.0, 2.0])), D.Normal(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.Exponential(T([1.0, 3.0])), D.Normal(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.Laplace(T([0.0, 1.0]), T([1.0, 0.5])), D.Normal(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.Uniform(T([0.0, 0.5]), T([1.0, 2.0])), D.Exponential(T([1.0, 3.0]))),
        (D.Uniform(T([0.0, -1.0]), T([1.0, 2.0])), D.Laplace(T([0.5, 3.0]), T([2.0, 1.0]))),
        (D.Normal(T([0.0, 1.0]), T([1.0, 0.5])), D.Laplace(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.Normal(T([0.0, 1.0]), T([1.0, 0.5])), D.Gumbel(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.Exponential(T([1.0, 3.0])), D.Gumbel(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.Uniform(T([0.0, -1.0]), T([1.0, 2.0])), D.Gumbel(T([0.5, -1.0]), T([2.0, 1.0]))),
        (D.Pareto(T([1.0, 2.0]), T([3.0, 4.0])), D.Exponential(T([1.0, 0.5]))),
        (
            D.MultivariateNormal(T([0.0, 1.0]), covariance_matrix=T([[2.0, 0.3], [0.3, 1.0]])),
            D.LowRankMultivariateNormal(T([1.0, 0.0]), T([[0.2], [-0.5]]), T([0.7, 1.5])),
        ),
    ],
    ids=[
        "cauchy",
        "lognormal",
        "uniform_normal",
        "exponential_normal",
        "laplace_normal",
        "uniform_exponential",
        "uniform_laplace",
        "normal_laplace",
        "normal_gumbel",
        "exponential_gumbel",
        "uniform_gumbel",
        "pareto_exponential",
        "mvn_lowrank",
    ],
)
def test_kl_cross_family_monte_carlo(p, q):
    kl = N(D.kl_divergence(p, q))
    np.testing.assert_allclose(kl, _mc_kl(p, q, 400000), rtol=0.05, atol=0.02)


def test_long_float32_categorical_logits_validate():
    logits = rumus.randn(8, 5000) * 3
    for cls in (D.Categorical, D.OneHotCategorical):
        d = cls(logits=logits)
        assert d._validate_args
    assert D.RelaxedOneHotCategorical(T(0.5), logits=logits).batch_shape == (8,)
    with pytest.raises(ValueError, match="probs"):
        D.OneHotCategorical(probs=T([-1.0, 2.0]))


def test_reshape_and_positive_definite_transforms(rng):
    r = transforms.ReshapeTransform((6,), (2, 3))
    x = T(rng.standard_normal((4, 6)))
    y = r(x)
    assert y.shape == (4, 2, 3) and r.log_abs_det_jacobian(x, y).shape == (4,)
    close(r.inv(y), N(x))
    assert r.forward_shape((5, 6)) == (5, 2, 3) and r.inverse_shape((5, 2, 3)) == (5, 6)
    d = D.TransformedDistribution(D.Normal(T(np.zeros(6)), T(np.ones(6))), r)
    assert d.event_shape == (2, 3) and d.batch_shape == ()
    close(d.log_prob(y), N(D.Normal(0.0, 1.0).log_prob(x)).sum(-1))
    p = D.transform_to(constraints.positive_definite)
    m = p(T(rng.standard_normal((2, 3, 3))))
    assert N(constraints.positive_definite.check(m)).all()
    close(p(p.inv(m)), N(m), rtol=1e-8)


def test_device_parity_kl_mvn_transforms(device, rng):
    f32 = rumus.float32

    def both(fn):
        return N(fn("cpu")), N(fn(device))

    A = rng.standard_normal((3, 3))
    cov = A @ A.T + np.eye(3)
    x = rng.standard_normal((4, 3))
    cases = [
        lambda d: D.kl_divergence(
            D.Normal(T([0.0, 1.0], f32, d), T([1.0, 0.5], f32, d)),
            D.Normal(T([0.5, -1.0], f32, d), T([2.0, 1.0], f32, d)),
        ),
        lambda d: D.kl_divergence(
            D.Categorical(logits=T([[0.0, 1.0, 2.0]], f32, d)),
            D.Categorical(logits=T([[1.0, 0.0, 0.5]], f32, d)),
        ),
        lambda d: D.MultivariateNormal(
            T([0.5, 0.0, -0.5], f32, d), covariance_matrix=T(cov, f32, d)
        ).log_prob(T(x, f32, d)),
        lambda d: D.kl_divergence(
            D.MultivariateNormal(T(np.zeros(3), f32, d), covariance_matrix=T(cov, f32, d)),
            D.MultivariateNormal(T(np.ones(3), f32, d), scale_tril=T(np.eye(3), f32, d)),
        ),
        lambda d: transforms.StickBreakingTransform()(T(x, f32, d)),
        lambda d: D.LogisticNormal(T(np.zeros(3), f32, d), T(np.ones(3), f32, d)).log_prob(
            transforms.StickBreakingTransform()(T(x, f32, d))
        ),
    ]
    for fn in cases:
        a, b = both(fn)
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
