"""Families defined by pushing a simple base through transforms: Gumbel,
Pareto, LogisticNormal."""

import math

import rumus

from . import constraints
from .continuous import Exponential, Uniform
from .normal import Normal
from .transformed_distribution import TransformedDistribution
from .transforms import AffineTransform, ExpTransform, StickBreakingTransform
from .utils import broadcast_all, eps_of, tiny_of

__all__ = ["Gumbel", "LogisticNormal", "Pareto"]

_EULER_GAMMA = 0.57721566490153286061


class Gumbel(TransformedDistribution):
    """Gumbel (type-I extreme value) with location ``loc`` and scale ``scale``:
    ``loc - scale * log(-log(U))`` for ``U ~ Uniform(0, 1)``.

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
        dt = self.loc.dtype
        lo = rumus.full_like(self.loc, tiny_of(dt))
        hi = rumus.full_like(self.loc, 1 - eps_of(dt))
        base_dist = Uniform(lo, hi, validate_args=validate_args)
        transforms = [
            ExpTransform().inv,
            AffineTransform(loc=0, scale=-1),
            ExpTransform().inv,
            AffineTransform(loc=self.loc, scale=-self.scale),
        ]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Gumbel, _instance)
        new.loc = self.loc.expand(tuple(batch_shape))
        new.scale = self.scale.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        z = (self.loc - value) / self.scale
        return (z - z.exp()) - self.scale.log()

    def cdf(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return (-(-(value - self.loc) / self.scale).exp()).exp()

    def icdf(self, value):
        return self.loc - self.scale * (-value.log()).log()

    @property
    def mean(self):
        return self.loc + self.scale * _EULER_GAMMA

    @property
    def mode(self):
        return self.loc

    @property
    def stddev(self):
        return (math.pi / math.sqrt(6)) * self.scale

    @property
    def variance(self):
        return self.stddev.pow(2)

    def entropy(self):
        return self.scale.log() + (1 + _EULER_GAMMA)


class Pareto(TransformedDistribution):
    """Pareto type I with minimum ``scale`` and tail index ``alpha``:
    ``scale * exp(E)`` for ``E ~ Exponential(alpha)``.

    Args:
        scale (float or Tensor): the minimum value.
        alpha (float or Tensor): the tail index.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"alpha": constraints.positive, "scale": constraints.positive}
    has_rsample = True

    def __init__(self, scale, alpha, validate_args=None):
        self.scale, self.alpha = broadcast_all(scale, alpha)
        base_dist = Exponential(self.alpha, validate_args=validate_args)
        transforms = [ExpTransform(), AffineTransform(loc=0, scale=self.scale)]
        super().__init__(base_dist, transforms, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Pareto, _instance)
        new.scale = self.scale.expand(tuple(batch_shape))
        new.alpha = self.alpha.expand(tuple(batch_shape))
        return super().expand(batch_shape, _instance=new)

    @constraints.dependent_property(is_discrete=False, event_dim=0)
    def support(self):
        return constraints.greater_than_eq(self.scale)

    @property
    def mean(self):
        a = self.alpha.clamp(min=1)
        return rumus.where(self.alpha > 1, a * self.scale / (a - 1), math.inf)

    @property
    def mode(self):
        return self.scale

    @property
    def variance(self):
        a = self.alpha.clamp(min=2)
        var = self.scale.pow(2) * a / ((a - 1).pow(2) * (a - 2))
        return rumus.where(self.alpha > 2, var, math.inf)

    def entropy(self):
        return (self.scale / self.alpha).log() + (1 + self.alpha.reciprocal())


class LogisticNormal(TransformedDistribution):
    """Logistic-normal on the simplex: ``StickBreakingTransform`` of
    ``Normal(loc, scale)`` over the last dimension (K-1 values -> K).

    Args:
        loc (float or Tensor): the mean of the underlying normal.
        scale (float or Tensor): its standard deviation.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"loc": constraints.real, "scale": constraints.positive}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, loc, scale, validate_args=None):
        base_dist = Normal(loc, scale, validate_args=validate_args)
        if not base_dist.batch_shape:
            base_dist = base_dist.expand([1])
        super().__init__(base_dist, StickBreakingTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogisticNormal, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def loc(self):
        """The mean of the underlying normal distribution."""
        return self.base_dist.base_dist.loc

    @property
    def scale(self):
        """The standard deviation of the underlying normal distribution."""
        return self.base_dist.base_dist.scale
