"""The lgamma-based distribution families (Gamma, Chi2, Beta, Dirichlet, StudentT, Poisson,
Binomial, Multinomial, VonMises) and the samplers under them (rumus._standard_gamma,
rumus.poisson, rumus.binomial): densities, moments and entropies against scipy.stats, sample
moments, reparameterized gradients, KL divergences and bad input."""

import math

import numpy as np
import pytest
import rumus
import rumus.distributions as D
import scipy.integrate as si
import scipy.stats as st

f64 = rumus.float64


def t64(x):
    return rumus.tensor(np.asarray(x, dtype=np.float64), dtype=f64)


A = [0.4, 1.0, 2.5, 7.0]
B = [0.5, 2.0, 1.0, 3.0]
CASES = [
    (lambda: D.Gamma(t64(A), t64(B)), st.gamma(A, scale=1 / np.array(B)), [0.3, 1.2, 2.0, 4.5]),
    (lambda: D.Chi2(t64(A)), st.chi2(A), [0.3, 1.2, 2.0, 4.5]),
    (lambda: D.Beta(t64(A), t64(B)), st.beta(A, B), [0.1, 0.35, 0.6, 0.95]),
    (lambda: D.StudentT(t64(A), t64(B), t64([1.0, 0.5, 2.0, 1.5])), None, [-2.0, 0.3, 1.0, 4.0]),
    (lambda: D.Poisson(t64(A)), st.poisson(A), [0.0, 1.0, 3.0, 9.0]),
    (lambda: D.Binomial(t64([3, 5, 10, 1]), t64([0.2, 0.5, 0.9, 0.3])), None, [0, 4, 7, 1]),
    (lambda: D.VonMises(t64(B), t64(A)), st.vonmises(A, loc=B), [-3.0, 0.0, 1.0, 2.5]),
]
STUDENT = st.t(A, loc=B, scale=[1.0, 0.5, 2.0, 1.5])
BINOM = st.binom([3, 5, 10, 1], [0.2, 0.5, 0.9, 0.3])


def _scipy(i, ref):
    return {3: STUDENT, 5: BINOM}.get(i, ref)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_log_prob_moments_entropy_against_scipy(i):
    make, ref, values = CASES[i]
    d, ref = make(), _scipy(i, ref)
    logp = d.log_prob(t64(values)).numpy()
    want = ref.logpmf(values) if hasattr(ref, "logpmf") else ref.logpdf(values)
    np.testing.assert_allclose(logp, want, rtol=1e-10, atol=1e-12)
    if isinstance(d, D.VonMises):
        return  # scipy's vonmises mean/var are of the unwrapped angle
    mean, var = ref.stats("mv")
    if isinstance(d, D.StudentT):
        # PyTorch's conventions where scipy differs: an undefined mean (df <= 1) is nan,
        # and so is the variance; 1 < df <= 2 has an infinite variance.
        df = np.array(A)
        mean, var = np.where(df > 1, mean, np.nan), np.where(df > 1, var, np.nan)
    np.testing.assert_allclose(d.mean.numpy(), mean, rtol=1e-12)
    np.testing.assert_allclose(d.variance.numpy(), var, rtol=1e-12)
    if isinstance(d, (D.Poisson, D.Binomial)):
        # PyTorch's Poisson has no entropy; Binomial's needs one total_count (below)
        with pytest.raises(NotImplementedError):
            d.entropy()
        return
    np.testing.assert_allclose(d.entropy().numpy(), ref.entropy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("i", range(len(CASES)))
def test_sample_moments(i):
    make, ref, _ = CASES[i]
    d, ref = make(), _scipy(i, ref)
    rumus.manual_seed(123)
    n = 20000
    x = d.sample((n,)).numpy()
    assert x.shape == (n, 4)
    if isinstance(d, D.VonMises):
        # circular mean direction and mean resultant length I1(κ)/I0(κ)
        z = np.exp(1j * x).mean(0)
        k = np.array(A)
        from scipy.special import i0e, i1e

        np.testing.assert_allclose(np.abs(z), i1e(k) / i0e(k), atol=0.02)
        return
    mean, var = ref.stats("mv")
    finite = np.isfinite(var)
    se = np.sqrt(np.where(finite, var, 1.0) / n)
    assert np.all(np.abs(x.mean(0) - mean)[finite] < 5 * se[finite] + 1e-9), (x.mean(0), mean)


def test_gamma_rsample_gradient_is_the_reparameterization():
    # E[x] = α / β: the mean of d x / d α over many draws is 1 / β.
    rumus.manual_seed(0)
    a = t64([0.3, 1.0, 4.0, 600.0]).requires_grad_()
    b = t64([2.0, 1.0, 0.5, 1.0])
    x = D.Gamma(a, b).rsample((40000,))
    x.sum().backward()
    np.testing.assert_allclose(a.grad.numpy() / 40000, 1 / b.numpy(), rtol=0.03)


def test_dirichlet_and_beta_rsample():
    rumus.manual_seed(1)
    c = t64([[0.5, 1.5, 3.0]]).requires_grad_()
    x = D.Dirichlet(c).rsample((20000,))
    np.testing.assert_allclose(x.sum(-1).detach().numpy(), 1.0, rtol=1e-12)
    np.testing.assert_allclose(x.mean(0).detach().numpy(), [[0.1, 0.3, 0.6]], atol=0.01)
    x[..., 0].mean().backward()  # E[x0] = c0 / Σc: d/dc0 = (Σc - c0) / (Σc)²
    np.testing.assert_allclose(c.grad.numpy()[0, 0], 4.5 / 25, rtol=0.05)
    d = D.Dirichlet(t64([[0.5, 1.5, 3.0]]))
    v = t64([[0.2, 0.3, 0.5]])
    np.testing.assert_allclose(
        d.log_prob(v).numpy(), st.dirichlet([0.5, 1.5, 3.0]).logpdf([0.2, 0.3, 0.5]), rtol=1e-10
    )
    np.testing.assert_allclose(d.entropy().numpy(), st.dirichlet([0.5, 1.5, 3.0]).entropy())
    s = D.Beta(t64([2.0]), t64([3.0])).rsample((5,))
    assert s.shape == (5, 1) and bool(((s > 0) & (s < 1)).all())


def test_standard_gamma_grad_matches_a_quantile_difference():
    a = t64([0.2, 1.0, 3.0, 40.0])
    x = t64(st.gamma(a.numpy()).ppf(0.37))
    h = 1e-6
    fd = (st.gamma(a.numpy() + h).ppf(0.37) - st.gamma(a.numpy() - h).ppf(0.37)) / (2 * h)
    np.testing.assert_allclose(rumus._standard_gamma_grad(a, x).numpy(), fd, rtol=1e-5)


def test_binomial_entropy_and_support():
    d = D.Binomial(t64([6.0, 6.0]), t64([0.3, 0.8]))
    np.testing.assert_allclose(d.entropy().numpy(), st.binom(6, [0.3, 0.8]).entropy(), rtol=1e-10)
    assert d.enumerate_support().shape == (7, 2)


def test_multinomial():
    p = t64([[0.2, 0.3, 0.5], [0.6, 0.1, 0.3]])
    d = D.Multinomial(10, probs=p)
    rumus.manual_seed(2)
    s = d.sample((4000,))
    assert s.shape == (4000, 2, 3)
    np.testing.assert_allclose(s.sum(-1).numpy(), 10)
    np.testing.assert_allclose(s.mean(0).numpy(), 10 * p.numpy(), atol=0.1)
    v = [[2.0, 3.0, 5.0], [6.0, 0.0, 4.0]]
    want = [st.multinomial(10, p.numpy()[i]).logpmf(v[i]) for i in range(2)]
    np.testing.assert_allclose(d.log_prob(t64(v)).numpy(), want, rtol=1e-10)
    ent = [st.multinomial(10, p.numpy()[i]).entropy() for i in range(2)]
    np.testing.assert_allclose(d.entropy().numpy(), ent, rtol=1e-9)


def _kl_numeric(p, q, lo, hi):
    def f(x):
        lp = p.logpdf(x)
        return 0.0 if lp == -math.inf else math.exp(lp) * (lp - q.logpdf(x))

    return si.quad(f, lo, hi)[0]


def test_kl_closed_forms():
    cases = [
        (D.Gamma(t64(2.0), t64(1.5)), D.Gamma(t64(3.0), t64(0.7)), st.gamma(2.0, scale=1 / 1.5),
         st.gamma(3.0, scale=1 / 0.7), 0, np.inf),
        (D.Beta(t64(2.0), t64(3.0)), D.Beta(t64(1.5), t64(1.2)), st.beta(2, 3), st.beta(1.5, 1.2),
         0, 1),
        (D.Exponential(t64(1.3)), D.Gamma(t64(2.0), t64(0.8)), st.expon(scale=1 / 1.3),
         st.gamma(2.0, scale=1 / 0.8), 0, np.inf),
        (D.Gamma(t64(2.0), t64(0.8)), D.Exponential(t64(1.3)), st.gamma(2.0, scale=1 / 0.8),
         st.expon(scale=1 / 1.3), 0, np.inf),
    ]  # fmt: skip
    for p, q, sp, sq, lo, hi in cases:
        want = _kl_numeric(sp, sq, lo, hi)
        np.testing.assert_allclose(D.kl_divergence(p, q).numpy(), want, rtol=1e-6)
    pp, pq = D.Poisson(t64(2.0)), D.Poisson(t64(3.5))
    ks = np.arange(60)
    want = np.sum(
        st.poisson(2.0).pmf(ks) * (st.poisson(2.0).logpmf(ks) - st.poisson(3.5).logpmf(ks))
    )
    np.testing.assert_allclose(D.kl_divergence(pp, pq).numpy(), want, rtol=1e-10)
    bp, bq = D.Binomial(t64(6.0), t64(0.3)), D.Binomial(t64(6.0), t64(0.6))
    ks = np.arange(7)
    want = np.sum(
        st.binom(6, 0.3).pmf(ks) * (st.binom(6, 0.3).logpmf(ks) - st.binom(6, 0.6).logpmf(ks))
    )
    np.testing.assert_allclose(D.kl_divergence(bp, bq).numpy(), want, rtol=1e-10)
    dp, dq = D.Dirichlet(t64([1.0, 2.0, 3.0])), D.Dirichlet(t64([2.0, 2.0, 0.5]))
    mc = dp.sample((200000,))
    np.testing.assert_allclose(
        D.kl_divergence(dp, dq).numpy(),
        (dp.log_prob(mc) - dq.log_prob(mc)).mean().numpy(),
        rtol=0.02,
    )


def test_bad_input():
    with pytest.raises(ValueError, match="concentration"):
        D.Gamma(t64([-1.0]), t64([1.0]))
    with pytest.raises(ValueError, match="rate"):
        D.Poisson(t64([-0.5]))
    with pytest.raises(ValueError):
        D.Gamma(t64([1.0]), t64([1.0])).log_prob(t64([-1.0]))
    with pytest.raises(ValueError):
        D.Beta(t64([1.0]), t64([1.0])).log_prob(t64([1.5]))
    with pytest.raises(RuntimeError, match="non-negative"):
        rumus.poisson(t64([-1.0]))
    with pytest.raises(RuntimeError, match="prob"):
        rumus.binomial(t64([3.0]), t64([1.5]))
    with pytest.raises(RuntimeError, match="same shape"):
        rumus.binomial(t64([3.0, 2.0]), t64([0.5]))
    with pytest.raises(RuntimeError, match="not implemented for 'Long'|int64"):
        rumus._standard_gamma(rumus.tensor([1, 2]))
    with pytest.raises(TypeError):
        rumus.poisson([1.0, 2.0])


def test_gpu_samplers(gpu):
    rumus.manual_seed(5)
    a = rumus.tensor([0.5, 2.0, 9.0], device=gpu, dtype=rumus.float32).requires_grad_()
    x = rumus._standard_gamma(a.expand(4000, 3))
    assert x.device.type == "gpu"
    np.testing.assert_allclose(x.mean(0).detach().cpu().numpy(), [0.5, 2.0, 9.0], rtol=0.1)
    x.sum().backward()
    assert a.grad.device.type == "gpu"
    np.testing.assert_allclose(a.grad.cpu().numpy() / 4000, 1.0, rtol=0.05)
    r = rumus.poisson(rumus.full((4000,), 3.0, device=gpu))
    assert r.device.type == "gpu" and abs(float(r.mean()) - 3.0) < 0.15
    d = D.VonMises(rumus.tensor([0.5], device=gpu), rumus.tensor([4.0], device=gpu))
    s = d.sample((2000,))
    assert s.device.type == "gpu" and abs(float(s.mean()) - 0.5) < 0.05
