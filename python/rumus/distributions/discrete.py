"""Discrete families: Bernoulli, Geometric, Categorical, OneHotCategorical."""

import math

import rumus
import rumus.nn.functional as F

from . import constraints
from .distribution import Distribution
from .utils import (
    broadcast_all,
    is_number,
    lazy_property,
    logits_to_probs,
    probs_to_logits,
    tiny_of,
    uniform,
)

__all__ = [
    "Bernoulli",
    "Categorical",
    "Geometric",
    "OneHotCategorical",
    "OneHotCategoricalStraightThrough",
]


def _one_of(probs, logits):
    if (probs is None) == (logits is None):
        raise ValueError("Either `probs` or `logits` must be specified, but not both.")


def _expand_probs_or_logits(self, new, batch_shape, event_shape=()):
    shape = tuple(batch_shape) + tuple(event_shape)
    if "probs" in self.__dict__:
        new.probs = self.probs.expand(shape)
        new._param = new.probs
    if "logits" in self.__dict__:
        new.logits = self.logits.expand(shape)
        new._param = new.logits


class Bernoulli(Distribution):
    """Bernoulli with success probability ``probs`` or log-odds ``logits``
    (exactly one). Samples are 0.0/1.0 in the parameter's dtype.

    Args:
        probs (float or Tensor, optional): the probabilities (exactly one of probs and logits).
        logits (float or Tensor, optional): the log-odds or unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.boolean
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            is_scalar = is_number(probs)
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            is_scalar = is_number(logits)
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        batch_shape = rumus.Size([]) if is_scalar else self._param.shape
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Bernoulli, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        _expand_probs_or_logits(self, new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @lazy_property
    def logits(self):
        """Log-odds of success, log(p / (1 - p))."""
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        """Probability of success."""
        return logits_to_probs(self.logits, is_binary=True)

    @property
    def param_shape(self):
        """The shape of the parameter tensors (``probs`` or ``logits``)."""
        return self._param.shape

    @property
    def mean(self):
        return self.probs

    @property
    def mode(self):
        mode = (self.probs >= 0.5).to(self.probs.dtype)
        return rumus.where(self.probs == 0.5, float("nan"), mode)

    @property
    def variance(self):
        return self.probs * (1 - self.probs)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with rumus.no_grad():
            probs = self.probs.expand(shape)
            return (uniform(shape, probs) < probs).to(probs.dtype)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        logits, value = broadcast_all(self.logits, value)
        # -binary_cross_entropy_with_logits, written out: v*l - softplus(l).
        return value * logits - F.softplus(logits)

    def entropy(self):
        return F.softplus(self.logits) - self.probs * self.logits

    def enumerate_support(self, expand=True):
        values = rumus.arange(2, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


class Geometric(Distribution):
    """Number of failures before the first success in Bernoulli(``probs``)
    trials; support {0, 1, 2, ...}.

    Args:
        probs (float or Tensor, optional): the probabilities (exactly one of probs and logits).
        logits (float or Tensor, optional): the log-odds or unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {"probs": constraints.unit_interval, "logits": constraints.real}
    support = constraints.nonnegative_integer

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            is_scalar = is_number(probs)
            (self.probs,) = broadcast_all(probs)
            self._param = self.probs
        else:
            is_scalar = is_number(logits)
            (self.logits,) = broadcast_all(logits)
            self._param = self.logits
        batch_shape = rumus.Size([]) if is_scalar else self._param.shape
        super().__init__(batch_shape, validate_args=validate_args)
        if self._validate_args and probs is not None:
            if not bool((self.probs > 0).all()):
                raise ValueError(
                    f"Expected parameter probs ({type(self.probs).__name__} of shape "
                    f"{tuple(self.probs.shape)}) of distribution {self!r} to be positive "
                    f"but found invalid values:\n{self.probs}"
                )

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Geometric, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        _expand_probs_or_logits(self, new, batch_shape)
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def mean(self):
        return 1.0 / self.probs - 1.0

    @property
    def mode(self):
        return rumus.zeros_like(self.probs)

    @property
    def variance(self):
        return (1.0 / self.probs - 1.0) / self.probs

    @lazy_property
    def logits(self):
        return probs_to_logits(self.probs, is_binary=True)

    @lazy_property
    def probs(self):
        return logits_to_probs(self.logits, is_binary=True)

    def sample(self, sample_shape=()):
        shape = self._extended_shape(sample_shape)
        with rumus.no_grad():
            probs = self.probs
            u = uniform(shape, probs).clamp(min=tiny_of(probs.dtype))
            return (u.log() / (-probs).log1p()).floor()

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value, probs = broadcast_all(value, self.probs)
        # value * log(1 - p) with 0 * log(0) = 0 when p == 1 and value == 0.
        probs = rumus.where((probs == 1) & (value == 0), 0.0, probs)
        return value * (-probs).log1p() + self.probs.log()

    def entropy(self):
        return F.binary_cross_entropy_with_logits(self.logits, self.probs, reduction="none") / (
            self.probs
        )


class Categorical(Distribution):
    """Categorical over ``{0, ..., K-1}`` with (unnormalized) ``probs`` or
    ``logits`` over the last dimension (exactly one). Samples are int64.

    Args:
        probs (float or Tensor, optional): the probabilities (exactly one of probs and logits).
        logits (float or Tensor, optional): the log-odds or unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        _one_of(probs, logits)
        if probs is not None:
            if probs.dim() < 1:
                raise ValueError("`probs` parameter must be at least one-dimensional.")
            self.probs = probs / probs.sum(-1, keepdim=True)
        else:
            if logits.dim() < 1:
                raise ValueError("`logits` parameter must be at least one-dimensional.")
            self.logits = logits - logits.logsumexp(dim=-1, keepdim=True)
        self._param = self.probs if probs is not None else self.logits
        self._num_events = self._param.shape[-1]
        batch_shape = self._param.shape[:-1] if self._param.dim() > 1 else rumus.Size([])
        super().__init__(batch_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(Categorical, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        _expand_probs_or_logits(self, new, batch_shape, (self._num_events,))
        new._num_events = self._num_events
        Distribution.__init__(new, batch_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property(is_discrete=True, event_dim=0)
    def support(self):
        return constraints.integer_interval(0, self._num_events - 1)

    @lazy_property
    def logits(self):
        """Normalized log-probabilities of the categories (the last dimension)."""
        return probs_to_logits(self.probs)

    @lazy_property
    def probs(self):
        """Probabilities of the categories (the last dimension), summing to 1."""
        return logits_to_probs(self.logits)

    @property
    def param_shape(self):
        """The shape of the parameter tensors (``probs`` or ``logits``)."""
        return self._param.shape

    @property
    def mean(self):
        return rumus.full(
            tuple(self._extended_shape()),
            float("nan"),
            dtype=self.probs.dtype,
            device=self.probs.device,
        )

    @property
    def mode(self):
        return self.probs.argmax(-1)

    @property
    def variance(self):
        return rumus.full(
            tuple(self._extended_shape()),
            float("nan"),
            dtype=self.probs.dtype,
            device=self.probs.device,
        )

    def sample(self, sample_shape=()):
        if isinstance(sample_shape, int):
            sample_shape = (sample_shape,)
        sample_shape = tuple(sample_shape)
        n = math.prod(sample_shape)
        with rumus.no_grad():
            # Inverse CDF: binary search of uniform draws in the cumulative
            # probabilities, with the draws on the last axis (batch first).
            cdf = self.probs.cumsum(-1).contiguous()
            shape = tuple(self._batch_shape) + (n,)
            u = uniform(shape, cdf) * cdf[..., -1:]
            index = rumus.searchsorted(cdf, u, right=True).clamp(max=self._num_events - 1)
            index = index.movedim(-1, 0) if index.dim() > 1 else index
            return index.reshape(sample_shape + tuple(self._batch_shape))

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        value = value.long().unsqueeze(-1)
        shape = rumus.broadcast_shapes(tuple(value.shape), tuple(self.logits.shape[:-1]) + (1,))
        value = value.expand(shape)
        log_pmf = self.logits.expand(tuple(shape[:-1]) + (self._num_events,))
        return log_pmf.gather(-1, value).squeeze(-1)

    def entropy(self):
        # -inf logits (zero probabilities) contribute 0, not nan.
        min_real = -3.4028234663852886e38 if "float32" in str(self.logits.dtype) else -1.7e308
        logits = self.logits.clamp(min=min_real)
        return -(logits * self.probs).sum(-1)

    def enumerate_support(self, expand=True):
        n = self._num_events
        values = rumus.arange(n, dtype=rumus.int64, device=self._param.device)
        values = values.reshape((-1,) + (1,) * len(self._batch_shape))
        if expand:
            values = values.expand((-1,) + tuple(self._batch_shape))
        return values


def _one_hot(indices, probs):
    """One-hot vectors for ``indices`` with ``probs``' length, dtype and device."""
    k = rumus.arange(probs.shape[-1], dtype=rumus.int64, device=probs.device)
    return (indices.unsqueeze(-1) == k).to(probs.dtype)


class OneHotCategorical(Distribution):
    """Categorical whose samples are one-hot vectors of length K (event_shape (K,)).

    Args:
        probs (float or Tensor, optional): the probabilities (exactly one of probs and logits).
        logits (float or Tensor, optional): the log-odds or unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {
        "probs": constraints.simplex,
        "logits": constraints.independent(constraints.real, 1),
    }
    support = constraints.one_hot
    has_enumerate_support = True

    def __init__(self, probs=None, logits=None, validate_args=None):
        self._categorical = Categorical(probs, logits, validate_args=validate_args)
        batch_shape = self._categorical.batch_shape
        event_shape = self._categorical.param_shape[-1:]
        # The inner Categorical has validated the parameter that was given;
        # the other one is derived (checking a softmax's sum against the
        # simplex tolerance would fail spuriously for long float32 vectors).
        super().__init__(batch_shape, event_shape, validate_args=False)
        if validate_args is not None:
            self._validate_args = validate_args
        else:
            self.__dict__.pop("_validate_args", None)

    def expand(self, batch_shape, _instance=None):
        new = self._get_checked_instance(OneHotCategorical, _instance)
        batch_shape = rumus.Size(list(batch_shape))
        new._categorical = self._categorical.expand(batch_shape)
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @property
    def _param(self):
        return self._categorical._param

    @property
    def probs(self):
        """Probabilities of the categories (the last dimension), summing to 1."""
        return self._categorical.probs

    @property
    def logits(self):
        """Normalized log-probabilities of the categories (the last dimension)."""
        return self._categorical.logits

    @property
    def mean(self):
        return self._categorical.probs

    @property
    def mode(self):
        probs = self._categorical.probs
        return _one_hot(probs.argmax(-1), probs)

    @property
    def variance(self):
        return self._categorical.probs * (1 - self._categorical.probs)

    @property
    def param_shape(self):
        """The shape of the parameter tensors (``probs`` or ``logits``)."""
        return self._categorical.param_shape

    def sample(self, sample_shape=()):
        probs = self._categorical.probs
        indices = self._categorical.sample(sample_shape)
        return _one_hot(indices, probs)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        indices = value.argmax(-1)
        return self._categorical.log_prob(indices)

    def entropy(self):
        return self._categorical.entropy()

    def enumerate_support(self, expand=True):
        n = self.event_shape[0]
        values = rumus.eye(n, dtype=self._param.dtype, device=self._param.device)
        values = values.reshape((n,) + (1,) * len(self.batch_shape) + (n,))
        if expand:
            values = values.expand((n,) + tuple(self.batch_shape) + (n,))
        return values


class OneHotCategoricalStraightThrough(OneHotCategorical):
    """OneHotCategorical whose ``rsample`` passes gradients straight through:
    the forward value is a one-hot sample, the gradient is that of ``probs``.

    Args:
        probs (float or Tensor, optional): the probabilities (exactly one of probs and logits).
        logits (float or Tensor, optional): the log-odds or unnormalized log-probabilities.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    has_rsample = True

    def rsample(self, sample_shape=()):
        samples = self.sample(sample_shape)
        probs = self._categorical.probs
        return samples + (probs - probs.detach())
