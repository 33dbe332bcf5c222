"""MixtureSameFamily: a batch of components of one family mixed by a Categorical."""

import rumus

from . import constraints
from .discrete import Categorical
from .distribution import Distribution

__all__ = ["MixtureSameFamily"]


class MixtureSameFamily(Distribution):
    """Mixture whose components are the rightmost batch dimension of
    ``component_distribution`` (size K), weighted by
    ``mixture_distribution`` (a Categorical over K).

    Args:
        mixture_distribution (Categorical): the weights of the components.
        component_distribution (Distribution): the components (rightmost batch dimension).
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    arg_constraints = {}
    has_rsample = False

    def __init__(self, mixture_distribution, component_distribution, validate_args=None):
        self._mixture_distribution = mixture_distribution
        self._component_distribution = component_distribution
        if not isinstance(mixture_distribution, Categorical):
            raise ValueError("The Mixture distribution needs to be an instance of Categorical")
        if not isinstance(component_distribution, Distribution):
            raise ValueError(
                "The Component distribution needs to be an instance of torch.distributions"
            )
        mdbs = tuple(mixture_distribution.batch_shape)
        cdbs = tuple(component_distribution.batch_shape)[:-1]
        for size1, size2 in zip(reversed(mdbs), reversed(cdbs)):
            if size1 != 1 and size2 != 1 and size1 != size2:
                raise ValueError(
                    f"`mixture_distribution.batch_shape` ({mdbs}) is not compatible with "
                    f"`component_distribution.batch_shape` ({cdbs})"
                )
        km = mixture_distribution.logits.shape[-1]
        kc = component_distribution.batch_shape[-1]
        if km != kc:
            raise ValueError(
                f"`mixture_distribution` component ({km}) does not equal "
                f"`component_distribution.batch_shape[-1]` ({kc})"
            )
        self._num_component = km
        self._event_ndims = len(component_distribution.event_shape)
        super().__init__(cdbs, component_distribution.event_shape, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        batch_shape = tuple(batch_shape)
        new = self._get_checked_instance(MixtureSameFamily, _instance)
        new._component_distribution = self._component_distribution.expand(
            batch_shape + (self._num_component,)
        )
        new._mixture_distribution = self._mixture_distribution.expand(batch_shape)
        new._num_component = self._num_component
        new._event_ndims = self._event_ndims
        Distribution.__init__(new, batch_shape, self.event_shape, validate_args=False)
        new._validate_args = self._validate_args
        return new

    @constraints.dependent_property
    def support(self):
        return self._component_distribution.support

    @property
    def mixture_distribution(self):
        """The Categorical distribution over the mixture components."""
        return self._mixture_distribution

    @property
    def component_distribution(self):
        """The batched distribution of the components (the rightmost batch dimension indexes
        them)."""
        return self._component_distribution

    def _pad_mixture(self, probs):
        # (..., K) -> (..., K, 1, ..., 1) with one 1 per event dimension
        return probs.reshape(tuple(probs.shape) + (1,) * self._event_ndims)

    @property
    def mean(self):
        probs = self._pad_mixture(self.mixture_distribution.probs)
        return (probs * self.component_distribution.mean).sum(-1 - self._event_ndims)

    @property
    def variance(self):
        probs = self._pad_mixture(self.mixture_distribution.probs)
        d = -1 - self._event_ndims
        mean_cond_var = (probs * self.component_distribution.variance).sum(d)
        comp_mean = self.component_distribution.mean
        var_cond_mean = (probs * (comp_mean - self._pad(self.mean)).pow(2)).sum(d)
        return mean_cond_var + var_cond_mean

    def _pad(self, x):
        return x.unsqueeze(-1 - self._event_ndims)

    def cdf(self, x):
        x = self._pad(x)
        cdf_x = self.component_distribution.cdf(x)
        return (cdf_x * self.mixture_distribution.probs).sum(-1)

    def log_prob(self, x):
        if self._validate_args:
            self._validate_sample(x)
        x = self._pad(x)
        log_prob_x = self.component_distribution.log_prob(x)  # (S, B, K)
        log_mix_prob = self.mixture_distribution.logits.log_softmax(-1)
        return (log_prob_x + log_mix_prob).logsumexp(-1)

    def sample(self, sample_shape=()):
        sample_shape = (sample_shape,) if isinstance(sample_shape, int) else tuple(sample_shape)
        with rumus.no_grad():
            n_batch = len(self.batch_shape)
            mix_sample = self.mixture_distribution.sample(sample_shape)  # (S, B)
            comp_samples = self.component_distribution.sample(sample_shape)  # (S, B, K, E)
            es = tuple(self.event_shape)
            index = mix_sample.reshape(tuple(mix_sample.shape) + (1,) * (len(es) + 1))
            index = index.expand(tuple(mix_sample.shape) + (1,) + es)
            picked = comp_samples.gather(len(sample_shape) + n_batch, index)
            return picked.squeeze(len(sample_shape) + n_batch)
