"""The special functions beyond the registry's generic checks (tests/op_db_special.py):
poles, tails and large arguments against scipy.special, the float32 GPU kernels against the
float64 CPU ones, and gradients from their closed forms."""

import math

import numpy as np
import pytest
import rumus
import rumus.special as S
import scipy.special as sc

f64 = rumus.float64


def t64(values):
    return rumus.tensor(np.asarray(values, dtype=np.float64), dtype=f64)


WIDE = [-7.3, -2.5, -0.5, 1e-6, 0.1, 0.5, 1.0, 1.5, 2.0, 3.7, 9.5, 25.0, 170.2, 1e4]


@pytest.mark.parametrize(
    "fn, ref",
    [
        (rumus.lgamma, sc.gammaln),
        (rumus.digamma, sc.digamma),
        (lambda x: rumus.polygamma(1, x), lambda x: sc.polygamma(1, x)),
        (lambda x: rumus.polygamma(4, x), lambda x: sc.polygamma(4, x)),
        (rumus.erfc, sc.erfc),
        (rumus.i0, sc.i0),
        (S.i0e, sc.i0e),
        (S.i1, sc.i1),
        (S.i1e, sc.i1e),
    ],
)
def test_float64_over_a_wide_range(fn, ref):
    xs = np.array(WIDE)
    if fn in (rumus.i0, S.i1):
        xs = xs[np.abs(xs) < 700]  # beyond, both overflow to inf
    got = fn(t64(xs)).numpy()
    np.testing.assert_allclose(got, ref(xs), rtol=1e-12, atol=1e-300)


def test_poles_and_special_values():
    x = t64([0.0, -1.0, -2.0, math.inf, math.nan])
    lg = rumus.lgamma(x).numpy()
    assert np.isposinf(lg[:4]).all() and np.isnan(lg[4])
    dg = rumus.digamma(x).numpy()
    assert dg[0] == -math.inf and np.isnan(dg[1]) and np.isnan(dg[2])
    assert np.isposinf(rumus.polygamma(1, t64([0.0, -3.0])).numpy()).all()
    e = rumus.erfinv(t64([-1.0, 1.0, 1.5, 0.0])).numpy()
    assert e[0] == -math.inf and e[1] == math.inf and np.isnan(e[2]) and e[3] == 0.0


def test_erfinv_inverts_erf_in_the_tails():
    y = np.array([-1 + 1e-12, -0.999999, -0.3, 1e-10, 0.7, 0.999999, 1 - 1e-12])
    x = rumus.erfinv(t64(y)).numpy()
    np.testing.assert_allclose(x, sc.erfinv(y), rtol=1e-13)


def test_log_ndtr_deep_in_the_lower_tail():
    x = np.array([-40.0, -20.0, -10.5, -9.9, -5.0, 0.0, 3.0, 8.0])
    for dt, rtol in ((f64, 1e-10), (rumus.float32, 1e-5)):
        got = S.log_ndtr(rumus.tensor(x, dtype=dt)).numpy()
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, sc.log_ndtr(x), rtol=rtol, atol=1e-7)


def test_multigammaln_and_errors():
    x = t64([[2.5, 3.0], [4.2, 10.0]])
    np.testing.assert_allclose(S.multigammaln(x, 4).numpy(), sc.multigammaln(x.numpy(), 4))
    with pytest.raises(RuntimeError, match=r"\(p-1\)/2"):
        rumus.mvlgamma(t64([1.0]), 3)
    with pytest.raises(RuntimeError, match="negative n"):
        rumus.polygamma(-1, t64([1.0]))
    with pytest.raises(TypeError, match="Tensor"):
        S.i0e([1.0])


def test_gradients_from_closed_forms():
    x = t64([0.3, 1.7, 4.0]).requires_grad_()
    rumus.lgamma(x).sum().backward()
    np.testing.assert_allclose(x.grad.numpy(), sc.digamma(x.detach().numpy()), rtol=1e-12)
    x = t64([-0.9, 0.0, 0.4]).requires_grad_()
    S.i1(x).sum().backward()
    xs = x.detach().numpy()
    # d i1 / dx = (i0 + i2) / 2 (its value at 0 is 1/2)
    np.testing.assert_allclose(x.grad.numpy(), (sc.i0(xs) + sc.iv(2, xs)) / 2, rtol=1e-12)
    x = t64([-0.5, 0.2]).requires_grad_()
    rumus.erfinv(x).sum().backward()
    d = math.sqrt(math.pi) / 2 * np.exp(sc.erfinv(x.detach().numpy()) ** 2)
    np.testing.assert_allclose(x.grad.numpy(), d, rtol=1e-12)


# The float32 GPU kernels against scipy, over their whole branches (series/asymptotic
# switches, reflection, the erfc form of erfinv near ±1).
GPU_CASES = [
    (rumus.lgamma, sc.gammaln, [-7.3, -2.5, -0.5, 1e-3, 0.5, 1.0, 2.0, 3.7, 7.9, 8.1, 30.0, 1e5]),
    (rumus.digamma, sc.digamma, [-7.3, -2.5, -0.5, 1e-3, 0.5, 1.0, 5.9, 6.1, 30.0, 1e5]),
    (lambda x: rumus.polygamma(2, x), lambda x: sc.polygamma(2, x), [-1.5, 0.3, 1.0, 4.0, 20.0]),
    (rumus.erfc, sc.erfc, [-3.0, -0.5, 0.0, 0.5, 2.0, 5.0, 9.0]),
    (rumus.erfinv, sc.erfinv, [-0.9999, -0.6, -1e-4, 0.2, 0.49, 0.51, 0.97, 0.999]),
    (rumus.i0, sc.i0, [-20.0, -3.0, 0.0, 1.0, 14.9, 15.1, 40.0]),
    (S.i0e, sc.i0e, [-100.0, -3.0, 0.0, 1.0, 14.9, 15.1, 40.0, 1e4]),
    (S.i1, sc.i1, [-20.0, -3.0, 0.0, 1.0, 14.9, 15.1, 40.0]),
    (S.i1e, sc.i1e, [-100.0, -3.0, 0.0, 1.0, 14.9, 15.1, 40.0, 1e4]),
]


@pytest.mark.parametrize("fn, ref, xs", GPU_CASES)
def test_gpu_float32_kernels(gpu, fn, ref, xs):
    x = np.array(xs, dtype=np.float32)
    got = fn(rumus.tensor(x, device=gpu)).cpu().numpy()
    want = ref(x.astype(np.float64))
    # relative to the value, or to the scale of the terms where the result cancels to ~0
    scale = np.maximum(np.abs(want), np.abs(np.log(np.abs(x) + 2)))
    assert np.all(np.abs(got - want) <= 2e-5 * scale), (got, want)


def test_aliases_forward_to_the_rumus_ops():
    x = t64([[0.2, -1.3, 0.7], [1.5, 0.05, -0.4]])
    p = t64([[0.2, 0.3, 0.7], [0.5, 0.05, 0.9]])
    pairs = [
        (S.erf(x), rumus.erf(x)),
        (S.exp2(x), rumus.exp2(x)),
        (S.expm1(x), rumus.expm1(x)),
        (S.log1p(p), rumus.log1p(p)),
        (S.round(x * 10, decimals=1), rumus.round(x * 10, decimals=1)),
        (S.logit(p, eps=1e-3), rumus.logit(p, 1e-3)),
        (S.softmax(x, 1), rumus.nn.functional.softmax(x, 1)),
        (S.log_softmax(x, 0), rumus.nn.functional.log_softmax(x, 0)),
        (S.logsumexp(x, 1, keepdim=True), rumus.logsumexp(x, 1, keepdim=True)),
        (S.xlogy(x, p), rumus.xlogy(x, p)),
        (S.psi(p), rumus.digamma(p)),
        (S.gammaln(p), rumus.lgamma(p)),
    ]
    for got, want in pairs:
        np.testing.assert_array_equal(got.numpy(), want.numpy())
    np.testing.assert_allclose(S.erf(x).numpy(), sc.erf(x.numpy()), rtol=1e-15)
