"""Count distributions: Poisson, Binomial and Multinomial (draws from the engine's
``rumus.poisson`` / ``rumus.binomial`` and the Categorical sampler)."""

import rumus

from . import constraints
from .continuous import _batch_shape, _expand_params
from .discrete import Categorical, _expand_probs_or_logits, _one_of
from .distribution import Distribution
from .utils import broadcast_all, lazy_property, logits_to_probs, probs_to_logits

__all__ = ["Binomial", "Multinomial", "Poisson"]


class Poisson(Distribution):
    """Poisson with ``rate`` λ ≥ 0: P(k) = λ^k e^(-λ) / k!.

    Args:
        rate (float or Tensor): λ.
        validate_args (bool, optional): check the parameters and sample values (the default
            setting when None).
    """

    arg_constraints = {"rate": constraints.nonnegative}
    support = constraints.nonnegative_integer

    def __init__(self, rate, validate_args=None):
        (self.rate,) = broadcast_all(rate)
        super().__init__(_batch_shape((rate,), (self.rate,)), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, Poisson, ("rate",), batch_shape, _instance)

    @property
    def mean(self):
        return self.rate

    @property
    def mode(self):
        return self.rate.floor()

    @property
    def variance(self):
        return self.rate

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with rumus.no_grad():
            return rumus.poisson(self.rate.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        rate, value = broadcast_all(self.rate, value)
        return value.xlogy(rate) - rate - (value + 1).lgamma()


def _clamp_by_zero(x):
    # (max(x, 0) + x - min(x, 0)) / 2 has gradient 1/2 at 0, as PyTorch's.
    return (x.clamp(min=0) + x - x.clamp(max=0)) / 2


class Binomial(Distribution):
    """Binomial with ``total_count`` trials of success probability ``probs`` (or ``logits``).

    Exactly one of probs and logits is given.

    Args:
        total_count (int or Tensor): the number of trials.
        probs (Tensor, optional): the success probability.
        logits (Tensor, optional): the log-odds of success.
        validate_args (bool, optional): check the parameters and sample values (the default
            setting when None).
    """

    arg_constraints = {
        "total_count": constraints.nonnegative_integer,
        "probs": constraints.unit_interval,
        "logits": constraints.real,
    }
    has_enumerate_support = True

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            self.total_count, self.probs = broadcast_all(total_count, probs)
            self.total_count = self.total_count.to(self.probs.dtype)
            param = self.probs
        else:
            self.total_count, self.logits = broadcast_all(total_count, logits)
            self.total_count = self.total_count.to(self.logits.dtype)
            param = self.logits
        self._param = param
        super().__init__(param.shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Binomial, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        new.total_count = self.total_count.expand(batch_shape)
        _expand_probs_or_logits(self, new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self.total_count)

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        """The shape of the probs (or logits) parameter."""
        return self._param.shape

    @property
    def mean(self):
        return self.total_count * self.probs

    @property
    def mode(self):
        return ((self.total_count + 1) * self.probs).floor().clamp(max=self.total_count)

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = tuple(self._extended_shape(sample_shape))
        with rumus.no_grad():
            return rumus.binomial(self.total_count.expand(shape), self.probs.expand(shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        n, k = self.total_count, value
        normalize = (
            n * _clamp_by_zero(self.logits)
            + n * (-self.logits.abs()).exp().log1p()
            - (n + 1).lgamma()
        )
        return k * self.logits - (k + 1).lgamma() - (n - k + 1).lgamma() - normalize

    def entropy(self):
        total = int(self.total_count.max())
        if not bool((self.total_count == total).all()):
            raise NotImplementedError("Inhomogeneous total count not supported by `entropy`.")
        log_prob = self.log_prob(self.enumerate_support(False))
        return -(log_prob.exp() * log_prob).sum(0)

    def enumerate_support(self, expand=True):
        total = int(self.total_count.max())
        if not bool((self.total_count == total).all()):
            raise NotImplementedError(
                "Inhomogeneous total count not supported by `enumerate_support`."
            )
        values = rumus.arange(1 + total, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Multinomial(Distribution):
    """Counts of ``total_count`` draws from a Categorical with ``probs`` or ``logits``.

    The categories are the last dimension. Exactly one of probs and logits is given.

    Args:
        total_count (int): the number of draws.
        probs (Tensor, optional): the category probabilities (normalized to sum to 1).
        logits (Tensor, optional): the unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default
            setting when None).
    """

    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }

    def __init__(self, total_count=1, probs=None, logits=None, validate_args=None):
        if not isinstance(total_count, int):
            raise NotImplementedError("inhomogeneous total_count is not supported")
        self.total_count = total_count
        self._categorical = Categorical(probs=probs, logits=logits)
        self._binomial = Binomial(total_count=total_count, probs=self.probs)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        super().__init__(batch_shape, event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Multinomial, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        new.total_count = self.total_count
        new._categorical = self._categorical.expand(batch_shape)
        new._binomial = Binomial(total_count=self.total_count, probs=new._categorical.probs)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=1)
    def support(self):
        return constraints.multinomial(self.total_count)

    @property
    def logits(self):
        """The normalized log-probabilities of the categories."""
        return self._categorical.logits

    @property
    def probs(self):
        """The probabilities of the categories."""
        return self._categorical.probs

    @property
    def param_shape(self):
        """The shape of the probs (or logits) parameter."""
        return self._categorical.param_shape

    @property
    def mean(self):
        return self.probs * self.total_count

    @property
    def variance(self):
        return self.total_count * self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        sample_shape = rumus.Size([sample_shape] if isinstance(sample_shape, int) else sample_shape)
        k = self._categorical._num_events
        with rumus.no_grad():
            draws = self._categorical.sample(rumus.Size([self.total_count]) + sample_shape)
            # (n, *sample, *batch) draws -> counts over the last dimension.
            counts = rumus.nn.functional.one_hot(draws, k).sum(0)
        return counts.to(self.probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits = self.logits
        shape = rumus.broadcast_shapes(tuple(logits.shape), tuple(value.shape))
        logits, value = logits.expand(shape), value.expand(shape)
        log_factorial_n = (value.sum(-1) + 1).lgamma()
        log_factorial_xs = (value + 1).lgamma().sum(-1)
        # 0 · log 0 = 0 where a category has probability 0 and no draws.
        logits = rumus.where((value == 0) & logits.isinf(), rumus.zeros_like(logits), logits)
        return log_factorial_n - log_factorial_xs + (logits * value).sum(-1)

    def entropy(self):
        n = rumus.tensor(float(self.total_count), dtype=self.probs.dtype, device=self.probs.device)
        term1 = n * self._categorical.entropy() - (n + 1).lgamma()
        support = self._binomial.enumerate_support(expand=False)[1:]
        binomial_probs = self._binomial.log_prob(support).exp()
        term2 = (binomial_probs * (support + 1).lgamma()).sum((0, -1))
        return term1 + term2
