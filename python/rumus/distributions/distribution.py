"""The ``Distribution`` base class (``torch.distributions.Distribution``'s API)."""

import rumus

from . import constraints
from .utils import lazy_property

__all__ = ["Distribution"]


def _size(shape):
    if isinstance(shape, int):
        return rumus.Size([shape])
    return rumus.Size(list(shape))


class Distribution:
    """Base class of probability distributions.

    ``batch_shape`` indexes independent (not identical) distributions;
    ``event_shape`` is the shape of one draw. ``sample(sample_shape)`` returns
    ``sample_shape + batch_shape + event_shape``.

    Args:
        batch_shape (Size or tuple): the batch shape.
        event_shape (Size or tuple): the event shape.
        validate_args (bool, optional): check the parameters and sample values (the default setting
            when None).
    """

    has_rsample = False
    has_enumerate_support = False
    _validate_args = True

    @staticmethod
    def set_default_validate_args(value):
        """Sets whether new distributions validate their arguments by default.

        Args:
            value (bool): True to validate parameters and sample values, False not to.
        """
        if value not in (True, False):
            raise ValueError("set_default_validate_args expects True or False")
        Distribution._validate_args = value

    def __init__(self, batch_shape=(), event_shape=(), validate_args=None):
        self._batch_shape = _size(batch_shape)
        self._event_shape = _size(event_shape)
        if validate_args is not None:
            self._validate_args = validate_args
        if self._validate_args:
            try:
                arg_constraints = self.arg_constraints
            except NotImplementedError:
                arg_constraints = {}
            for param, constraint in arg_constraints.items():
                if constraints.is_dependent(constraint):
                    continue
                if param not in self.__dict__ and isinstance(
                    getattr(type(self), param, None), lazy_property
                ):
                    continue  # the other parametrization was given
                value = getattr(self, param)
                if not bool(constraint.check(value).all()):
                    raise ValueError(
                        f"Expected parameter {param} ({type(value).__name__} of shape "
                        f"{tuple(value.shape)}) of distribution {self!r} to satisfy the "
                        f"constraint {constraint!r}, but found invalid values:\n{value}"
                    )
        super().__init__()

    def expand(self, batch_shape, _instance=None):
        """Returns a new distribution with its batch dimensions expanded to ``batch_shape``.

        The parameters are expanded views, not copies.

        Args:
            batch_shape (Size or tuple): the new batch shape.

        Returns:
            Distribution: an instance of the same class.
        """
        raise NotImplementedError

    @property
    def batch_shape(self):
        """The shape over which parameters are batched (independent distributions)."""
        return self._batch_shape

    @property
    def event_shape(self):
        """The shape of one sample, without the batch dimensions."""
        return self._event_shape

    @property
    def arg_constraints(self):
        """A dict from parameter names to the constraints each must satisfy."""
        raise NotImplementedError

    @property
    def support(self):
        """The constraint that values of ``log_prob`` must satisfy."""
        raise NotImplementedError

    @property
    def mean(self):
        """The mean of the distribution, of shape ``batch_shape + event_shape``."""
        raise NotImplementedError(f"{self.__class__} does not implement mean")

    @property
    def mode(self):
        """The mode of the distribution, of shape ``batch_shape + event_shape``."""
        raise NotImplementedError(f"{self.__class__} does not implement mode")

    @property
    def variance(self):
        """The variance of the distribution, of shape ``batch_shape + event_shape``."""
        raise NotImplementedError(f"{self.__class__} does not implement variance")

    @property
    def stddev(self):
        """The standard deviation of the distribution (the square root of ``variance``)."""
        return self.variance.sqrt()

    def sample(self, sample_shape=()):
        """Draws samples (no gradients flow to the parameters).

        Args:
            sample_shape (Size or tuple): leading shape of the samples.

        Returns:
            Tensor: of shape ``sample_shape + batch_shape + event_shape``.
        """
        with rumus.no_grad():
            return self.rsample(sample_shape)

    def rsample(self, sample_shape=()):
        """Draws reparameterized samples (gradients flow to the parameters).

        Args:
            sample_shape (Size or tuple): leading shape of the samples.

        Returns:
            Tensor: of shape ``sample_shape + batch_shape + event_shape``.
        """
        raise NotImplementedError

    def sample_n(self, n):
        """Draws ``n`` samples (the same as ``sample((n,))``).

        Args:
            n (int): the number of samples.

        Returns:
            Tensor: of shape ``(n,) + batch_shape + event_shape``.
        """
        return self.sample(rumus.Size([n]))

    def log_prob(self, value):
        """The log of the probability density (or mass) at ``value``.

        Args:
            value (Tensor): values broadcastable to ``batch_shape + event_shape``.

        Returns:
            Tensor: the log densities, one per batch element.
        """
        raise NotImplementedError

    def cdf(self, value):
        """The cumulative distribution function at ``value``.

        Args:
            value (Tensor): values broadcastable to the batch shape.

        Returns:
            Tensor: P(X <= value).
        """
        raise NotImplementedError

    def icdf(self, value):
        """The inverse cumulative distribution function (the quantile function).

        Args:
            value (Tensor): probabilities in [0, 1].

        Returns:
            Tensor: the values x with cdf(x) = value.
        """
        raise NotImplementedError

    def enumerate_support(self, expand=True):
        """Every value of a discrete distribution's support.

        Args:
            expand (bool): if True, expand the result over the batch dimensions;
                otherwise it has singleton batch dimensions.

        Returns:
            Tensor: the values along dimension 0.
        """
        raise NotImplementedError

    def entropy(self):
        """The entropy of the distribution.

        Returns:
            Tensor: of shape ``batch_shape``.
        """
        raise NotImplementedError

    def perplexity(self):
        """The perplexity, ``exp(entropy())``.

        Returns:
            Tensor: of shape ``batch_shape``.
        """
        return self.entropy().exp()

    def _extended_shape(self, sample_shape=()):
        return rumus.Size(
            list(_size(sample_shape)) + list(self._batch_shape) + list(self._event_shape)
        )

    def _validate_sample(self, value):
        if not isinstance(value, rumus.Tensor):
            raise ValueError("The value argument to log_prob must be a Tensor")
        n_event = len(self._event_shape)
        if value.dim() < n_event or tuple(value.shape[value.dim() - n_event :]) != tuple(
            self._event_shape
        ):
            raise ValueError(
                f"The right-most size of value must match event_shape: "
                f"{tuple(value.shape)} vs {tuple(self._event_shape)}."
            )
        actual = tuple(value.shape)
        expected = tuple(self._batch_shape) + tuple(self._event_shape)
        for i, j in zip(reversed(actual), reversed(expected)):
            if i != 1 and j != 1 and i != j:
                raise ValueError(
                    f"Value is not broadcastable with batch_shape+event_shape: "
                    f"{actual} vs {expected}."
                )
        try:
            support = self.support
        except NotImplementedError:
            return
        if support is None or constraints.is_dependent(support):
            return
        if not bool(support.check(value).all()):
            raise ValueError(
                f"Expected value argument ({type(value).__name__} of shape {actual}) to be "
                f"within the support ({support!r}) of the distribution {self!r}, "
                f"but found invalid values:\n{value}"
            )

    def _get_checked_instance(self, cls, _instance=None):
        if _instance is None and type(self).__init__ != cls.__init__:
            raise NotImplementedError(
                f"Subclass {self.__class__.__name__} of {cls.__name__} that defines a custom "
                "__init__() method must also define a custom .expand() method."
            )
        return self.__new__(type(self)) if _instance is None else _instance

    def __repr__(self):
        names = [k for k in self.arg_constraints if k in self.__dict__]
        args = ", ".join(
            f"{p}: {self.__dict__[p] if self.__dict__[p].numel() == 1 else self.__dict__[p].shape}"
            for p in names
        )
        return f"{self.__class__.__name__}({args})"
