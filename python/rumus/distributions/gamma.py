"""The gamma family: Gamma, Chi2, Beta, Dirichlet and StudentT.

Their samples start from ``rumus._standard_gamma`` (rand_distr's sampler in the engine),
whose gradient with respect to the concentration is the implicit reparameterization
d x / d α, so ``rsample`` differentiates as PyTorch's does."""

import math

import rumus

from . import constraints
from .continuous import _batch_shape, _expand_params
from .distribution import Distribution
from .utils import broadcast_all, eps_of, standard_normal, tiny_of

__all__ = ["Beta", "Chi2", "Dirichlet", "Gamma", "StudentT"]


def _standard_gamma(concentration):
    """Γ(α, 1) draws, kept at or above the dtype's smallest normal number (tiny α
    underflows to 0, where log densities and Beta/Dirichlet ratios break)."""
    return rumus._standard_gamma(concentration).clamp(min=tiny_of(concentration.dtype))


class Gamma(Distribution):
    """Gamma with shape ``concentration`` (α) and ``rate`` (β): density β^α x^(α-1) e^(-βx) / Γ(α).

    Args:
        concentration (float or Tensor): the shape α > 0.
        rate (float or Tensor): the rate β > 0 (1 / scale).
        validate_args (bool, optional): check the parameters and sample values (the default
            setting when None).
    """

    arg_constraints = {"concentration": constraints.positive, "rate": constraints.positive}
    support = constraints.nonnegative
    has_rsample = True

    def __init__(self, concentration, rate, validate_args=None):
        self.concentration, self.rate = broadcast_all(concentration, rate)
        batch = _batch_shape((concentration, rate), (self.concentration,))
        super().__init__(batch, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Gamma, ("concentration", "rate"), batch_shape, _instance)

    @property
    def mean(self):
        return self.concentration / self.rate

    @property
    def mode(self):
        return ((self.concentration - 1) / self.rate).clamp(min=0)

    @property
    def variance(self):
        return self.concentration / self.rate.pow(2)

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        return _standard_gamma(self.concentration.expand(shape)) / self.rate.expand(shape)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a, b = self.concentration, self.rate
        return rumus.xlogy(a, b) + rumus.xlogy(a - 1, value) - b * value - a.lgamma()

    def entropy(self):
        a = self.concentration
        return a - self.rate.log() + a.lgamma() + (1.0 - a) * a.digamma()


class Chi2(Gamma):
    """Chi-squared with ``df`` degrees of freedom: Gamma(df / 2, 1 / 2).

    Args:
        df (float or Tensor): the degrees of freedom (> 0).
        validate_args (bool, optional): check the parameters and sample values (the default
            setting when None).
    """

    arg_constraints = {"df": constraints.positive}

    def __init__(self, df, validate_args=None):
        (df,) = broadcast_all(df)
        super().__init__(0.5 * df, 0.5, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Chi2, _instance)
        return super().expand(batch_shape, new)

    @property
    def df(self):
        """The degrees of freedom, 2 * concentration."""
        return self.concentration * 2


class Dirichlet(Distribution):
    """Dirichlet over the simplex of the last dimension, with ``concentration`` α > 0.

    Args:
        concentration (Tensor): α, shape (..., K).
        validate_args (bool, optional): check the parameters and sample values (the default
            setting when None).
    """

    arg_constraints = {"concentration": constraints.independent(constraints.positive, 1)}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, concentration, validate_args=None):
        if concentration.dim() < 1:
            raise ValueError("`concentration` parameter must be at least one-dimensional.")
        self.concentration = concentration
        batch_shape, event_shape = concentration.shape[:-1], concentration.shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Dirichlet, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        new.concentration = self.concentration.expand(tuple(batch_shape) + tuple(self.event_shape))
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    def rsample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        g = _standard_gamma(self.concentration.expand(shape))
        x = g / g.sum(-1, keepdim=True)
        return x.clamp(min=tiny_of(x.dtype), max=1 - eps_of(x.dtype))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        a = self.concentration
        return rumus.xlogy(a - 1.0, value).sum(-1) + a.sum(-1).lgamma() - a.lgamma().sum(-1)

    @property
    def mean(self):
        return self.concentration / self.concentration.sum(-1, keepdim=True)

    @property
    def mode(self):
        a = self.concentration
        k = a.shape[-1]
        inner = (a - 1).clamp(min=0)
        mode = inner / inner.sum(-1, keepdim=True)
        # Where every α <= 1 the density peaks at the vertices: PyTorch returns the
        # one-hot vertex of the largest α.
        below = (a < 1).all(-1)
        vertex = rumus.nn.functional.one_hot(a.argmax(-1), k).to(mode.dtype)
        return rumus.where(below.unsqueeze(-1), vertex, mode)

    @property
    def variance(self):
        a = self.concentration
        a0 = a.sum(-1, keepdim=True)
        return a * (a0 - a) / (a0.pow(2) * (a0 + 1))

    def entropy(self):
        a = self.concentration
        k = a.shape[-1]
        a0 = a.sum(-1)
        return (
            a.lgamma().sum(-1)
            - a0.lgamma()
            - (k - a0) * a0.digamma()
            - ((a - 1.0) * a.digamma()).sum(-1)
        )


class Beta(Distribution):
    """Beta on [0, 1] with ``concentration1`` (α) and ``concentration0`` (β).

    Args:
        concentration1 (float or Tensor): α > 0.
        concentration0 (float or Tensor): β > 0.
        validate_args (bool, optional): check the parameters and sample values (the default
            setting when None).
    """

    arg_constraints = {
        "concentration1": constraints.positive,
        "concentration0": constraints.positive,
    }
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, concentration1, concentration0, validate_args=None):
        c1, c0 = broadcast_all(concentration1, concentration0)
        self._dirichlet = Dirichlet(rumus.stack([c1, c0], -1), validate_args=validate_args)
        super().__init__(self._dirichlet._batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Beta, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        new._dirichlet = self._dirichlet.expand(batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def concentration1(self):
        """α, the first concentration (the exponent of x)."""
        return self._dirichlet.concentration[..., 0]

    @property
    def concentration0(self):
        """β, the second concentration (the exponent of 1 - x)."""
        return self._dirichlet.concentration[..., 1]

    @property
    def mean(self):
        return self.concentration1 / (self.concentration1 + self.concentration0)

    @property
    def mode(self):
        return self._dirichlet.mode[..., 0]

    @property
    def variance(self):
        total = self.concentration1 + self.concentration0
        return self.concentration1 * self.concentration0 / (total.pow(2) * (total + 1))

    def rsample(self, sample_shape=()):
        return self._dirichlet.rsample(sample_shape).select(-1, 0)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        return self._dirichlet.log_prob(rumus.stack([value, 1.0 - value], -1))

    def entropy(self):
        return self._dirichlet.entropy()


class StudentT(Distribution):
    """Student's t with ``df`` degrees of freedom, location ``loc`` and ``scale``.

    Args:
        df (float or Tensor): the degrees of freedom (> 0).
        loc (float or Tensor): the location.
        scale (float or Tensor): the scale (> 0).
        validate_args (bool, optional): check the parameters and sample values (the default
            setting when None).
    """

    arg_constraints = {
        "df": constraints.positive,
        "loc": constraints.real,
        "scale": constraints.positive,
    }
    support = constraints.real
    has_rsample = True

    def __init__(self, df, loc=0.0, scale=1.0, validate_args=None):
        self.df, self.loc, self.scale = broadcast_all(df, loc, scale)
        self._chi2 = Chi2(self.df)
        super().__init__(self.df.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = _expand_params(self, StudentT, ("df", "loc", "scale"), batch_shape, _instance)
        new._chi2 = self._chi2.expand(batch_shape)
        return new

    @property
    def mean(self):
        return rumus.where(self.df > 1, self.loc, rumus.full_like(self.loc, math.nan))

    @property
    def mode(self):
        return self.loc

    @property
    def variance(self):
        df = self.df
        var = self.scale.pow(2) * df / (df - 2).clamp(min=eps_of(df.dtype))
        var = rumus.where(df > 2, var, rumus.full_like(var, math.inf))
        return rumus.where(df > 1, var, rumus.full_like(var, math.nan))

    def rsample(self, sample_shape=()):
        # X / sqrt(Z / df) with X ~ N(0, 1) and Z ~ Chi2(df).
        shape = tuple(self._extended_shape(sample_shape))
        x = standard_normal(shape, self.df)
        z = self._chi2.rsample(sample_shape)
        return self.loc + self.scale * x * (z / self.df).rsqrt()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        df = self.df
        y = (value - self.loc) / self.scale
        norm = (
            self.scale.log()
            + 0.5 * df.log()
            + 0.5 * math.log(math.pi)
            + (0.5 * df).lgamma()
            - (0.5 * (df + 1.0)).lgamma()
        )
        return -0.5 * (df + 1.0) * (y.pow(2) / df).log1p() - norm

    def entropy(self):
        df = self.df
        lbeta = (0.5 * df).lgamma() + math.lgamma(0.5) - (0.5 * (df + 1)).lgamma()
        return (
            self.scale.log()
            + 0.5 * (df + 1) * ((0.5 * (df + 1)).digamma() - (0.5 * df).digamma())
            + 0.5 * df.log()
            + lbeta
        )
