"""kl_divergence(p, q) and the register_kl registry of closed forms."""

import math

import rumus

from .continuous import Cauchy, Exponential, Laplace, Uniform
from .counts import Binomial, Poisson
from .discrete import Bernoulli, Categorical, Geometric, OneHotCategorical
from .gamma import Beta, Dirichlet, Gamma
from .independent import Independent
from .multivariate_normal import LowRankMultivariateNormal, MultivariateNormal, _batch_mahalanobis
from .normal import HalfNormal, Normal
from .transformed_distribution import TransformedDistribution
from .transformed_families import Gumbel, Pareto
from .utils import sum_rightmost

__all__ = ["kl_divergence", "register_kl"]

_KL_REGISTRY = {}
_KL_MEMOIZE = {}


def register_kl(type_p, type_q):
    """Decorator registering ``fn(p, q)`` as KL(p || q) for instances of
    ``type_p`` and ``type_q`` (and their subclasses).

    Args:
        type_p (type): a Distribution subclass.
        type_q (type): a Distribution subclass.
    """

    if not isinstance(type_p, type) or not isinstance(type_q, type):
        raise TypeError("Expected type_p and type_q to be Distribution subclasses")

    def decorator(fn):
        _KL_REGISTRY[type_p, type_q] = fn
        _KL_MEMOIZE.clear()
        return fn

    return decorator


def _dispatch_kl(type_p, type_q):
    matches = [
        (super_p, super_q)
        for super_p, super_q in _KL_REGISTRY
        if issubclass(type_p, super_p) and issubclass(type_q, super_q)
    ]
    if not matches:
        return NotImplemented
    # The most specific match: closest classes in each MRO (p first).
    mro_p, mro_q = type_p.__mro__, type_q.__mro__

    def rank(m):
        return (mro_p.index(m[0]) + mro_q.index(m[1]), mro_p.index(m[0]))

    return _KL_REGISTRY[min(matches, key=rank)]


def kl_divergence(p, q):
    """KL(p || q), batched over ``batch_shape``; raises NotImplementedError
    when no closed form is registered for the pair of types.

    Args:
        p (Distribution): the first distribution.
        q (Distribution): the second distribution.

    Returns:
        Tensor: of shape ``batch_shape``.
    """
    try:
        fun = _KL_MEMOIZE[type(p), type(q)]
    except KeyError:
        fun = _dispatch_kl(type(p), type(q))
        _KL_MEMOIZE[type(p), type(q)] = fun
    if fun is NotImplemented:
        raise NotImplementedError(
            f"No KL(p || q) is implemented for p type {type(p).__name__} "
            f"and q type {type(q).__name__}"
        )
    return fun(p, q)


def _inf_like(t):
    return rumus.full_like(t, math.inf)


@register_kl(Bernoulli, Bernoulli)
def _kl_bernoulli_bernoulli(p, q):
    import rumus.nn.functional as F

    t1 = p.probs * (F.softplus(-q.logits) - F.softplus(-p.logits))
    t1 = rumus.where(q.probs == 0, math.inf, t1)
    t1 = rumus.where(p.probs == 0, 0.0, t1)
    t2 = (1 - p.probs) * (F.softplus(q.logits) - F.softplus(p.logits))
    t2 = rumus.where(q.probs == 1, math.inf, t2)
    t2 = rumus.where(p.probs == 1, 0.0, t2)
    return t1 + t2


@register_kl(Categorical, Categorical)
def _kl_categorical_categorical(p, q):
    t = p.probs * (p.logits - q.logits)
    t = rumus.where(q.probs.expand(t.shape) == 0, math.inf, t)
    t = rumus.where(p.probs.expand(t.shape) == 0, 0.0, t)
    return t.sum(-1)


@register_kl(OneHotCategorical, OneHotCategorical)
def _kl_onehotcategorical_onehotcategorical(p, q):
    return _kl_categorical_categorical(p._categorical, q._categorical)


@register_kl(Exponential, Exponential)
def _kl_exponential_exponential(p, q):
    rate_ratio = q.rate / p.rate
    return rate_ratio - 1 - rate_ratio.log()


@register_kl(Geometric, Geometric)
def _kl_geometric_geometric(p, q):
    return -p.entropy() - (-q.probs).log1p() / p.probs - q.logits


@register_kl(HalfNormal, HalfNormal)
def _kl_halfnormal_halfnormal(p, q):
    return _kl_normal_normal(p.base_dist, q.base_dist)


@register_kl(Independent, Independent)
def _kl_independent_independent(p, q):
    if p.reinterpreted_batch_ndims != q.reinterpreted_batch_ndims:
        raise NotImplementedError
    result = kl_divergence(p.base_dist, q.base_dist)
    return sum_rightmost(result, p.reinterpreted_batch_ndims)


@register_kl(Laplace, Laplace)
def _kl_laplace_laplace(p, q):
    scale_ratio = p.scale / q.scale
    loc_abs_diff = (p.loc - q.loc).abs()
    t1 = -scale_ratio.log()
    t2 = loc_abs_diff / q.scale
    t3 = scale_ratio * (-loc_abs_diff / p.scale).exp()
    return t1 + t2 + t3 - 1


@register_kl(Normal, Normal)
def _kl_normal_normal(p, q):
    var_ratio = (p.scale / q.scale).pow(2)
    t1 = ((p.loc - q.loc) / q.scale).pow(2)
    return 0.5 * (var_ratio + t1 - 1 - var_ratio.log())


@register_kl(Pareto, Pareto)
def _kl_pareto_pareto(p, q):
    # From p's support [p.scale, inf) into q's; infinite where p.scale < q.scale.
    scale_ratio = p.scale / q.scale
    alpha_ratio = q.alpha / p.alpha
    result = q.alpha * scale_ratio.log() - alpha_ratio.log() + alpha_ratio - 1
    return rumus.where(p.scale < q.scale, math.inf, result)


@register_kl(Uniform, Uniform)
def _kl_uniform_uniform(p, q):
    result = ((q.high - q.low) / (p.high - p.low)).log()
    outside = (q.low > p.low) | (q.high < p.high)
    return rumus.where(outside, math.inf, result)


def _tril_inverse_frobenius(Lq, Lp):
    """``|Lq^-1 Lp|_F^2``, broadcasting batch dimensions."""
    n = Lp.shape[-1]
    batch = rumus.broadcast_shapes(tuple(Lq.shape[:-2]), tuple(Lp.shape[:-2]))
    A = rumus.linalg.solve_triangular(
        Lq.expand(tuple(batch) + (n, n)), Lp.expand(tuple(batch) + (n, n)), upper=False
    )
    return A.pow(2).sum((-2, -1))


@register_kl(MultivariateNormal, MultivariateNormal)
def _kl_multivariatenormal_multivariatenormal(p, q):
    if p.event_shape != q.event_shape:
        raise ValueError(
            "KL-divergence between two Multivariate Normals with different event shapes "
            "cannot be computed"
        )
    Lp = p._unbroadcasted_scale_tril
    Lq = q._unbroadcasted_scale_tril
    half_term1 = Lq.diagonal(0, -2, -1).log().sum(-1) - Lp.diagonal(0, -2, -1).log().sum(-1)
    term2 = _tril_inverse_frobenius(Lq, Lp)
    term3 = _batch_mahalanobis(Lq, q.loc - p.loc)
    n = p.event_shape[0]
    result = half_term1 + 0.5 * (term2 + term3 - n)
    batch = rumus.broadcast_shapes(tuple(p.batch_shape), tuple(q.batch_shape))
    return result.expand(tuple(batch)) if len(batch) else result


@register_kl(LowRankMultivariateNormal, LowRankMultivariateNormal)
def _kl_lowrank_lowrank(p, q):
    mp = MultivariateNormal(p.loc, scale_tril=p.scale_tril, validate_args=False)
    mq = MultivariateNormal(q.loc, scale_tril=q.scale_tril, validate_args=False)
    return _kl_multivariatenormal_multivariatenormal(mp, mq)


@register_kl(MultivariateNormal, LowRankMultivariateNormal)
@register_kl(LowRankMultivariateNormal, MultivariateNormal)
def _kl_mvn_lowrank_mixed(p, q):
    def full(d):
        if isinstance(d, MultivariateNormal):
            return d
        return MultivariateNormal(d.loc, scale_tril=d.scale_tril, validate_args=False)

    return _kl_multivariatenormal_multivariatenormal(full(p), full(q))


@register_kl(Cauchy, Cauchy)
def _kl_cauchy_cauchy(p, q):
    # Chyzak & Nielsen (2019): log(((s_p + s_q)^2 + (l_p - l_q)^2) / (4 s_p s_q))
    num = (p.scale + q.scale).pow(2) + (p.loc - q.loc).pow(2)
    return (num / (4 * p.scale * q.scale)).log()


@register_kl(TransformedDistribution, TransformedDistribution)
def _kl_transformed_transformed(p, q):
    if p.transforms != q.transforms:
        raise NotImplementedError
    if p.event_shape != q.event_shape:
        raise NotImplementedError
    return kl_divergence(p.base_dist, q.base_dist)


# ---- pairs of different families: KL = -H(p) - E_p[log q], E_p in closed form ----

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)


def _normal_cross(p, q, second_moment_about_q_loc):
    return (
        -p.entropy()
        + q.scale.log()
        + _HALF_LOG_2PI
        + second_moment_about_q_loc / (2 * q.scale.pow(2))
    )


@register_kl(Uniform, Normal)
def _kl_uniform_normal(p, q):
    w = p.high - p.low
    m2 = ((p.high - q.loc).pow(3) - (p.low - q.loc).pow(3)) / (3 * w)
    return _normal_cross(p, q, m2)


@register_kl(Exponential, Normal)
def _kl_exponential_normal(p, q):
    mean = p.rate.reciprocal()
    return _normal_cross(p, q, mean.pow(2) + (mean - q.loc).pow(2))


@register_kl(Laplace, Normal)
def _kl_laplace_normal(p, q):
    return _normal_cross(p, q, 2 * p.scale.pow(2) + (p.loc - q.loc).pow(2))


@register_kl(Uniform, Exponential)
def _kl_uniform_exponential(p, q):
    result = -p.entropy() - q.rate.log() + q.rate * (p.high + p.low) / 2
    return rumus.where(p.low < 0, math.inf, result)


@register_kl(Uniform, Laplace)
def _kl_uniform_laplace(p, q):
    # E|x - m| for x ~ U[l, h]: the antiderivative of |x - m| is (x - m)|x - m| / 2.
    a, b = p.low - q.loc, p.high - q.loc
    mean_abs = (b * b.abs() - a * a.abs()) / (2 * (p.high - p.low))
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


@register_kl(Normal, Laplace)
def _kl_normal_laplace(p, q):
    d = p.loc - q.loc
    s = p.scale
    mean_abs = (
        s * math.sqrt(2 / math.pi) * (-d.pow(2) / (2 * s.pow(2))).exp()
        + d * (d / (s * math.sqrt(2))).erf()
    )
    return -p.entropy() + (2 * q.scale).log() + mean_abs / q.scale


def _gumbel_cross(p, q, mean, mean_exp_neg_z):
    # -log q(x) = log(scale) + z + exp(-z) with z = (x - loc) / scale
    return -p.entropy() + q.scale.log() + (mean - q.loc) / q.scale + mean_exp_neg_z


@register_kl(Normal, Gumbel)
def _kl_normal_gumbel(p, q):
    e = (-(p.loc - q.loc) / q.scale + p.scale.pow(2) / (2 * q.scale.pow(2))).exp()
    return _gumbel_cross(p, q, p.loc, e)


@register_kl(Exponential, Gumbel)
def _kl_exponential_gumbel(p, q):
    e = (q.loc / q.scale).exp() * p.rate / (p.rate + q.scale.reciprocal())
    return _gumbel_cross(p, q, p.rate.reciprocal(), e)


@register_kl(Uniform, Gumbel)
def _kl_uniform_gumbel(p, q):
    e = (
        q.scale
        * ((-(p.low - q.loc) / q.scale).exp() - (-(p.high - q.loc) / q.scale).exp())
        / (p.high - p.low)
    )
    return _gumbel_cross(p, q, (p.low + p.high) / 2, e)


@register_kl(Pareto, Exponential)
def _kl_pareto_exponential(p, q):
    result = -p.entropy() - q.rate.log() + q.rate * p.mean
    return rumus.where(p.alpha > 1, result, math.inf)


_EULER_GAMMA = 0.57721566490153286060


@register_kl(Gamma, Gamma)
def _kl_gamma_gamma(p, q):
    t1 = q.concentration * (p.rate / q.rate).log()
    t2 = q.concentration.lgamma() - p.concentration.lgamma()
    t3 = (p.concentration - q.concentration) * p.concentration.digamma()
    t4 = (q.rate - p.rate) * (p.concentration / p.rate)
    return t1 + t2 + t3 + t4


@register_kl(Exponential, Gamma)
def _kl_exponential_gamma(p, q):
    ratio = q.rate / p.rate
    a = q.concentration
    return -a * ratio.log() + ratio + a.lgamma() + a * _EULER_GAMMA - (1 + _EULER_GAMMA)


@register_kl(Gamma, Exponential)
def _kl_gamma_exponential(p, q):
    return -p.entropy() - q.rate.log() + q.rate * (p.concentration / p.rate)


@register_kl(Dirichlet, Dirichlet)
def _kl_dirichlet_dirichlet(p, q):
    a, b = p.concentration, q.concentration
    sum_a = a.sum(-1)
    t1 = sum_a.lgamma() - b.sum(-1).lgamma()
    t2 = (a.lgamma() - b.lgamma()).sum(-1)
    t3 = (a - b) * (a.digamma() - sum_a.digamma().unsqueeze(-1))
    return t1 - t2 + t3.sum(-1)


@register_kl(Beta, Beta)
def _kl_beta_beta(p, q):
    return _kl_dirichlet_dirichlet(p._dirichlet, q._dirichlet)


@register_kl(Poisson, Poisson)
def _kl_poisson_poisson(p, q):
    return p.rate * (p.rate.log() - q.rate.log()) - (p.rate - q.rate)


@register_kl(Binomial, Binomial)
def _kl_binomial_binomial(p, q):
    # Only defined when q has at least p's trials; infinite where it has more.
    if bool((p.total_count < q.total_count).any()):
        raise NotImplementedError(
            "KL between Binomials where q.total_count > p.total_count is not implemented"
        )
    kl = p.total_count * (p.probs * (p.logits - q.logits) + (-p.probs).log1p() - (-q.probs).log1p())
    return rumus.where(p.total_count > q.total_count, _inf_like(kl), kl)
