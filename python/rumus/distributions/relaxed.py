"""Relaxed (Concrete / Gumbel-softmax) versions of Bernoulli and Categorical:
reparameterizable, with a ``temperature`` that sharpens samples towards
the discrete ones as it goes to 0."""

import math

import rumus

from . import constraints
from .discrete import Categorical
from .distribution import Distribution
from .transformed_distribution import TransformedDistribution
from .transforms import ExpTransform, SigmoidTransform
from .utils import (
    as_param,
    broadcast_all,
    clamp_probs,
    is_number,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    uniform,
)

__all__ = [
    "ExpRelaxedCategorical",
    "LogitRelaxedBernoulli",
    "RelaxedBernoulli",
    "RelaxedOneHotCategorical",
]


class LogitRelaxedBernoulli(Distribution):
    """Logit of a RelaxedBernoulli sample: ``(logit(U) + logits) / temperature``.

    Args:
        temperature (float or Tensor): the relaxation temperature.
        probs (float or Tensor, optional): the probabilities (exactly one of probs and logits).
        logits (float or Tensor, optional): the log-odds or unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.real
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        if (probs is None) == (logits is None):
            raise ValueError("Either `probs` or `logits` must be specified, but not both.")
        given = probs if probs is not None else logits
        is_scalar = is_number(given)
        (param,) = broadcast_all(given)
        if probs is not None:
            self.probs = param
        else:
            self.logits = param
        self._param = param
        self.temperature = as_param(temperature, like=param)
        batch_shape = rumus.Size([]) if is_scalar else param.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(LogitRelaxedBernoulli, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        new.temperature = self.temperature
        if "probs" in self.__dict__:
            new.probs = self.probs.expand(batch_shape)
            new._param = new.probs
        if "logits" in self.__dict__:
            new.logits = self.logits.expand(batch_shape)
            new._param = new.logits
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self):
        """Log-odds of success."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """Probability of success."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        """The shape of the parameter tensors (``probs`` or ``logits``)."""
        return self._param.shape

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        probs = clamp_probs(self.probs.expand(shape))
        u = clamp_probs(uniform(shape, probs))
        return (u.log() - (-u).log1p() + probs.log() - (-probs).log1p()) / self.temperature

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        diff = logits - value * self.temperature
        return self.temperature.log() + diff - 2 * diff.exp().log1p()


class RelaxedBernoulli(TransformedDistribution):
    """Concrete relaxation of Bernoulli on (0, 1): ``sigmoid`` of a
    LogitRelaxedBernoulli sample.

    Args:
        temperature (float or Tensor): the relaxation temperature.
        probs (float or Tensor, optional): the probabilities (exactly one of probs and logits).
        logits (float or Tensor, optional): the log-odds or unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.unit_interval
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = LogitRelaxedBernoulli(temperature, probs, logits, validate_args=validate_args)
        super().__init__(base_dist, SigmoidTransform(), validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedBernoulli, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        """The relaxation temperature (lower is closer to a Bernoulli)."""
        return self.base_dist.temperature

    @property
    def logits(self):
        """Log-odds of success."""
        return self.base_dist.logits

    @property
    def probs(self):
        """Probability of success."""
        return self.base_dist.probs


class ExpRelaxedCategorical(Distribution):
    """Log of a RelaxedOneHotCategorical sample: ``log_softmax((logits + G) / T)``
    with Gumbel noise ``G``; event_shape (K,).

    Args:
        temperature (float or Tensor): the relaxation temperature.
        probs (float or Tensor, optional): the probabilities (exactly one of probs and logits).
        logits (float or Tensor, optional): the log-odds or unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.real_vector
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        self.temperature = as_param(temperature, like=self._categorical._param)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        # Parameters were validated by the inner Categorical (see OneHotCategorical).
        super().__init__(batch_shape, event_shape, validate_args=False)
        if validate_args is not None:
            self._validate_args = validate_args
        else:
            self.__dict__.pop("_validate_args", None)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(ExpRelaxedCategorical, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        new.temperature = self.temperature
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def param_shape(self):
        """The shape of the parameter tensors (``probs`` or ``logits``)."""
        return self._categorical.param_shape

    @property
    def logits(self):
        """Normalized log-probabilities of the categories."""
        return self._categorical.logits

    @property
    def probs(self):
        """Probabilities of the categories."""
        return self._categorical.probs

    def rsample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        u = clamp_probs(uniform(shape, self.logits))
        gumbels = -((-u.log()).log())
        scores = (self.logits + gumbels) / self.temperature
        return scores - scores.logsumexp(-1, keepdim=True)

    def log_prob(self, value):
        K = self._categorical._num_events
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        log_scale = math.lgamma(K) + (K - 1) * self.temperature.log()
        score = logits - value * self.temperature
        score = (score - score.logsumexp(-1, keepdim=True)).sum(-1)
        return score + log_scale


class RelaxedOneHotCategorical(TransformedDistribution):
    """Concrete / Gumbel-softmax relaxation of OneHotCategorical on the simplex.

    Args:
        temperature (float or Tensor): the relaxation temperature.
        probs (float or Tensor, optional): the probabilities (exactly one of probs and logits).
        logits (float or Tensor, optional): the log-odds or unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"probs": constraints.simplex, "logits": constraints.real_vector}
    support = constraints.simplex
    has_rsample = True

    def __init__(self, temperature, probs=None, logits=None, validate_args=None):
        base_dist = ExpRelaxedCategorical(temperature, probs, logits, validate_args=validate_args)
        # The base validated the given parameter (see OneHotCategorical).
        super().__init__(base_dist, ExpTransform(), validate_args=False)
        if validate_args is not None:
            self._validate_args = validate_args
        else:
            self.__dict__.pop("_validate_args", None)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(RelaxedOneHotCategorical, _instance)
        return super().expand(batch_shape, _instance=new)

    @property
    def temperature(self):
        """The relaxation temperature (lower is closer to a one-hot Categorical)."""
        return self.base_dist.temperature

    @property
    def logits(self):
        """Normalized log-probabilities of the categories."""
        return self.base_dist.logits

    @property
    def probs(self):
        """Probabilities of the categories."""
        return self.base_dist.probs
