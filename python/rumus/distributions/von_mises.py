"""The von Mises distribution on the circle."""

import math

import rumus

from . import constraints
from .continuous import _batch_shape, _expand_params
from .distribution import Distribution
from .utils import broadcast_all, lazy_property

__all__ = ["VonMises"]


class VonMises(Distribution):
    """Von Mises with mean direction ``loc`` and ``concentration`` κ.

    Density exp(κ cos(x - loc)) / (2π I0(κ)) on [-π, π). Not reparameterized (no ``rsample``).

    Args:
        loc (float or Tensor): the mean direction.
        concentration (float or Tensor): κ > 0.
        validate_args (bool, optional): check the parameters and sample values (the default
            setting when None).
    """

    arg_constraints = {"loc": constraints.real, "concentration": constraints.positive}
    support = constraints.real
    has_rsample = False

    def __init__(self, loc, concentration, validate_args=None):
        self.loc, self.concentration = broadcast_all(loc, concentration)
        batch = _batch_shape((loc, concentration), (self.loc,))
        super().__init__(batch, validate_args=validate_args)

    def expand(self, batch_shape, _instance=None):
        return _expand_params(self, VonMises, ("loc", "concentration"), batch_shape, _instance)

    def log_prob(self, value):
        if self._validate_args:
            self._validate_sample(value)
        k = self.concentration
        # log I0(κ) = log i0e(κ) + κ does not overflow.
        log_i0 = rumus.special.i0e(k).log() + k
        return k * (value - self.loc).cos() - math.log(2 * math.pi) - log_i0

    @lazy_property
    def _proposal_r(self):
        # Best and Fisher's wrapped-Cauchy envelope; 1/κ + κ is its expansion near 0.
        k = self.concentration
        tau = 1 + (1 + 4 * k.square()).sqrt()
        rho = (tau - (2 * tau).sqrt()) / (2 * k)
        r = (1 + rho.square()) / (2 * rho)
        return rumus.where(k < 1e-5, k.reciprocal() + k, r)

    def sample(self, sample_shape=()):
        """Draws with Best and Fisher's (1979) rejection sampler, run on every element at once.

        Each round keeps the first accepted proposal of each element.

        Args:
            sample_shape: the shape of the batch of draws.

        Returns:
            A tensor of shape sample_shape + batch_shape.
        """
        shape = tuple(self._extended_shape(sample_shape))
        with rumus.no_grad():
            k = self.concentration.expand(shape)
            r = self._proposal_r.expand(shape)
            x = rumus.zeros(shape, dtype=k.dtype, device=k.device)
            done = rumus.zeros(shape, dtype=rumus.bool, device=k.device)
            while not bool(done.all()):
                u1, u2, u3 = rumus.rand((3,) + shape, dtype=k.dtype, device=k.device)
                z = (math.pi * u1).cos()
                f = (1 + r * z) / (r + z)
                c = k * (r - f)
                accept = ((c * (2 - c) - u2) > 0) | ((c / u2).log() + 1 - c >= 0)
                accept = accept & ~done
                x = rumus.where(accept, (u3 - 0.5).sign() * f.clamp(-1, 1).acos(), x)
                done = done | accept
            return (x + math.pi + self.loc).remainder(2 * math.pi) - math.pi

    @property
    def mean(self):
        return self.loc

    @property
    def mode(self):
        return self.loc

    @lazy_property
    def variance(self):
        k = self.concentration
        return 1 - rumus.special.i1e(k) / rumus.special.i0e(k)
