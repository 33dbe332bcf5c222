"""Univariate continuous families with closed-form samplers: Uniform,
Exponential, Laplace, Cauchy."""

import math

import rumus

from . import constraints
from .distribution import Distribution
from .utils import broadcast_all, eps_of, is_number, uniform

__all__ = ["Cauchy", "Exponential", "Laplace", "Uniform"]


def _expand_params(self, cls, names, batch_shape, _instance):
    new = self._get_checked_instance(cls, _instance)
    batch_shape = rumus.Size(list(batch_shape))
    for name in names:
        setattr(new, name, getattr(self, name).expand(batch_shape))
    Distribution.__init__(new, batch_shape, validate_args=False)
    new._validate_args = self._validate_args
    return new


def _batch_shape(params, tensors):
    return rumus.Size([]) if all(is_number(p) for p in params) else tensors[0].shape


class Uniform(Distribution):
    """Uniform on the half-open interval ``[low, high)``.

    Args:
        low (float or Tensor): the lower bound (inclusive).
        high (float or Tensor): the upper bound (exclusive).
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {
        "low": constraints.dependent(is_discrete=False, event_dim=0),
        "high": constraints.dependent(is_discrete=False, event_dim=0),
    }
    has_rsample = True

    def __init__(self, low, high, validate_args=None):
        self.low, self.high = broadcast_all(low, high)
        super().__init__(_batch_shape((low, high), (self.low,)), validate_args=validate_args)
        if self._validate_args and not bool((self.low < self.high).all()):
            raise ValueError(
                "Uniform is not defined when low >= high: expected parameter low "
                f"to be less than high, but found low={self.low} and high={self.high}"
            )

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Uniform, ("low", "high"), batch_shape, _instance)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.interval(self.low, self.high)

    @property
    def mean(self):
        return (self.high + self.low) / 2

    @property
    def mode(self):
        return rumus.full_like(self.high, math.nan)

    @property
    def stddev(self):
        return (self.high - self.low) / 12**0.5

    @property
    def variance(self):
        return (self.high - self.low).pow(2) / 12

    def rsample(self, sample_shape=()):
        u = uniform(self._extended_shape(sample_shape), self.low)
        return self.low + u * (self.high - self.low)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        lb = self.low.le(value).to(self.low.dtype)
        ub = self.high.gt(value).to(self.low.dtype)
        return (lb * ub).log() - (self.high - self.low).log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return ((value - self.low) / (self.high - self.low)).clamp(0, 1)

    def icdf(self, value):
        return value * (self.high - self.low) + self.low

    def entropy(self):
        return (self.high - self.low).log()


class Exponential(Distribution):
    """Exponential with ``rate`` (inverse scale).

    Args:
        rate (float or Tensor): the rate (inverse scale).
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(_batch_shape((rate,), (self.rate,)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Exponential, ("rate",), batch_shape, _instance)

    @property
    def mean(self):
        return self.rate.reciprocal()

    @property
    def mode(self):
        return rumus.zeros_like(self.rate)

    @property
    def stddev(self):
        return self.rate.reciprocal()

    @property
    def variance(self):
        return self.rate.pow(-2)

    def rsample(self, sample_shape=()):
        u = uniform(self._extended_shape(sample_shape), self.rate)
        return -(-u).log1p() / self.rate

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self.rate.log() - self.rate * value

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return 1 - (-self.rate * value).exp()

    def icdf(self, value):
        return -(-value).log1p() / self.rate

    def entropy(self):
        return 1.0 - self.rate.log()


class Laplace(Distribution):
    """Laplace (double exponential) with location ``loc`` and scale ``scale``.

    Args:
        loc (float or Tensor): the location (mean for Normal).
        scale (float or Tensor): the scale.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape((loc, scale), (self.loc,)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Laplace, ("loc", "scale"), batch_shape, _instance)

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return 2 * self.scale.pow(2)

    @property
    def stddev(self):
        return 2**0.5 * self.scale

    def rsample(self, sample_shape=()):
        eps = eps_of(self.loc.dtype)
        # u uniform on [eps - 1, 1): log1p(-|u|) stays finite.
        u = uniform(self._extended_shape(sample_shape), self.loc) * (2 - eps) + (eps - 1)
        return self.loc - self.scale * u.sign() * (-u.abs()).log1p()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return -(2 * self.scale).log() - (value - self.loc).abs() / self.scale

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = value - self.loc
        return 0.5 - 0.5 * z.sign() * (-z.abs() / self.scale).expm1()

    def icdf(self, value):
        term = value - 0.5
        return self.loc - self.scale * term.sign() * (-2 * term.abs()).log1p()

    def entropy(self):
        return 1 + (2 * self.scale).log()


class Cauchy(Distribution):
    """Cauchy (Lorentz) with location ``loc`` and half-width ``scale``;
    its mean and variance are undefined (nan and inf, as in PyTorch).

    Args:
        loc (float or Tensor): the location (mean for Normal).
        scale (float or Tensor): the scale.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.real
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        self.loc, self.scale = broadcast_all(loc, scale)
        super().__init__(_batch_shape((loc, scale), (self.loc,)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Cauchy, ("loc", "scale"), batch_shape, _instance)

    @property
    def mean(self):
        return rumus.full(
            tuple(self._extended_shape()), math.nan, dtype=self.loc.dtype, device=self.loc.device
        )

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        return rumus.full(
            tuple(self._extended_shape()), math.inf, dtype=self.loc.dtype, device=self.loc.device
        )

    def rsample(self, sample_shape=()):
        u = uniform(self._extended_shape(sample_shape), self.loc)
        return self.loc + self.scale * (math.pi * (u - 0.5)).tan()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return -math.log(math.pi) - self.scale.log() - (z * z).log1p()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (value - self.loc) / self.scale
        return rumus.atan(z) / math.pi + 0.5

    def icdf(self, value):
        return (math.pi * (value - 0.5)).tan() * self.scale + self.loc

    def entropy(self):
        return math.log(4 * math.pi) + self.scale.log()
