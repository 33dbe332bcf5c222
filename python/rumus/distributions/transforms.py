"""Invertible transforms between constrained spaces, each with its inverse
and ``log_abs_det_jacobian`` (``torch.distributions.transforms``' API)."""

import math
import numbers

import rumus
import rumus.nn.functional as F

from . import constraints
from .utils import sum_rightmost

__all__ = [
    "AbsTransform",
    "AffineTransform",
    "ComposeTransform",
    "CumulativeDistributionTransform",
    "ExpTransform",
    "IndependentTransform",
    "LowerCholeskyTransform",
    "PositiveDefiniteTransform",
    "PowerTransform",
    "ReshapeTransform",
    "SigmoidTransform",
    "SoftmaxTransform",
    "SoftplusTransform",
    "StickBreakingTransform",
    "TanhTransform",
    "Transform",
    "identity_transform",
]


class Transform:
    """``y = t(x)``; ``t.inv(y)``; ``t.log_abs_det_jacobian(x, y)``.

    ``domain``/``codomain`` are constraints; ``bijective`` says the inverse is
    exact; ``sign`` (for elementwise bijections) is +1 or -1 for monotone
    increasing or decreasing transforms. ``cache_size=1`` remembers the last
    ``(x, y)`` pair so ``inv(t(x))`` returns ``x`` itself.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    bijective = False
    domain = constraints.real
    codomain = constraints.real

    def __init__(self, cache_size=0):
        if cache_size not in (0, 1):
            raise ValueError("cache_size must be 0 or 1")
        self._cache_size = cache_size
        self._inv = None
        self._cached_x_y = (None, None)

    @property
    def event_dim(self):
        """The number of rightmost dimensions that form one event of the transform."""
        if self.domain.event_dim == self.codomain.event_dim:
            return self.domain.event_dim
        raise ValueError("Please use either .domain.event_dim or .codomain.event_dim")

    @property
    def inv(self):
        """The inverse transform: ``t.inv(t(x))`` is ``x``."""
        inv = self._inv
        if inv is None:
            inv = _InverseTransform(self)
            self._inv = inv
        return inv

    @property
    def sign(self):
        """+1 or -1: whether a monotone elementwise transform increases or decreases."""
        raise NotImplementedError

    def with_cache(self, cache_size=1):
        """This transform with a cache of the last ``(x, y)`` pair.

        Args:
            cache_size (int): 0 (no cache) or 1.

        Returns:
            Transform: ``self`` when the cache size already matches, else a copy.
        """
        if self._cache_size == cache_size:
            return self
        if type(self).__init__ is Transform.__init__:
            return type(self)(cache_size=cache_size)
        raise NotImplementedError(f"{type(self)}.with_cache is not implemented")

    def __eq__(self, other):
        return self is other

    def __ne__(self, other):
        return not self.__eq__(other)

    __hash__ = object.__hash__

    def __call__(self, x):
        if self._cache_size == 0:
            return self._call(x)
        x_old, y_old = self._cached_x_y
        if x is x_old:
            return y_old
        y = self._call(x)
        self._cached_x_y = (x, y)
        return y

    def _inv_call(self, y):
        if self._cache_size == 0:
            return self._inverse(y)
        x_old, y_old = self._cached_x_y
        if y is y_old:
            return x_old
        x = self._inverse(y)
        self._cached_x_y = (x, y)
        return x

    def _call(self, x):
        raise NotImplementedError

    def _inverse(self, y):
        raise NotImplementedError

    def log_abs_det_jacobian(self, x, y):
        """The log of the absolute determinant of the Jacobian, ``log |dy/dx|``.

        Args:
            x (Tensor): inputs of the transform.
            y (Tensor): the outputs ``t(x)``.

        Returns:
            Tensor: summed over the event dimensions.
        """
        raise NotImplementedError

    def forward_shape(self, shape):
        """The shape of ``t(x)`` for an input of shape ``shape``.

        Args:
            shape (tuple): the input shape.

        Returns:
            tuple: the output shape.
        """
        return shape

    def inverse_shape(self, shape):
        """The shape of ``t.inv(y)`` for an output of shape ``shape``.

        Args:
            shape (tuple): the output shape.

        Returns:
            tuple: the input shape.
        """
        return shape

    def __repr__(self):
        return self.__class__.__name__ + "()"


class _InverseTransform(Transform):
    def __init__(self, transform):
        super().__init__(cache_size=transform._cache_size)
        self._inv = transform

    @property
    def domain(self):
        return self._inv.codomain

    @property
    def codomain(self):
        return self._inv.domain

    @property
    def bijective(self):
        return self._inv.bijective

    @property
    def sign(self):
        return self._inv.sign

    @property
    def inv(self):
        return self._inv

    def with_cache(self, cache_size=1):
        return self.inv.with_cache(cache_size).inv

    def __eq__(self, other):
        return isinstance(other, _InverseTransform) and self._inv == other._inv

    __hash__ = object.__hash__

    def __repr__(self):
        return f"{self.__class__.__name__}({self._inv!r})"

    def __call__(self, x):
        return self._inv._inv_call(x)

    def log_abs_det_jacobian(self, x, y):
        return -self._inv.log_abs_det_jacobian(y, x)

    def forward_shape(self, shape):
        return self._inv.inverse_shape(shape)

    def inverse_shape(self, shape):
        return self._inv.forward_shape(shape)


class ComposeTransform(Transform):
    """Applies ``parts`` in order; an empty list is the identity.

    Args:
        parts (list[Transform]): the transforms, applied in order.
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    def __init__(self, parts, cache_size=0):
        if cache_size:
            parts = [part.with_cache(cache_size) for part in parts]
        super().__init__(cache_size=cache_size)
        self.parts = list(parts)

    def __eq__(self, other):
        return isinstance(other, ComposeTransform) and self.parts == other.parts

    __hash__ = object.__hash__

    @property
    def domain(self):
        """The domain of the first transform, widened to the event dimensions of the chain."""
        if not self.parts:
            return constraints.real
        domain = self.parts[0].domain
        event_dim = self.parts[-1].codomain.event_dim
        for part in reversed(self.parts):
            event_dim += part.domain.event_dim - part.codomain.event_dim
            event_dim = max(event_dim, part.domain.event_dim)
        if event_dim > domain.event_dim:
            domain = constraints.independent(domain, event_dim - domain.event_dim)
        return domain

    @property
    def codomain(self):
        """The codomain of the last transform, widened to the event dimensions of the chain."""
        if not self.parts:
            return constraints.real
        codomain = self.parts[-1].codomain
        event_dim = self.parts[0].domain.event_dim
        for part in self.parts:
            event_dim += part.codomain.event_dim - part.domain.event_dim
            event_dim = max(event_dim, part.codomain.event_dim)
        if event_dim > codomain.event_dim:
            codomain = constraints.independent(codomain, event_dim - codomain.event_dim)
        return codomain

    @property
    def bijective(self):
        return all(p.bijective for p in self.parts)

    @property
    def sign(self):
        sign = 1
        for p in self.parts:
            sign = sign * p.sign
        return sign

    @property
    def inv(self):
        inv = self._inv
        if inv is None:
            inv = ComposeTransform([p.inv for p in reversed(self.parts)])
            self._inv = inv
            inv._inv = self
        return inv

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ComposeTransform(self.parts, cache_size=cache_size)

    def __call__(self, x):
        for part in self.parts:
            x = part(x)
        return x

    def log_abs_det_jacobian(self, x, y):
        if not self.parts:
            return rumus.zeros_like(x)
        xs = [x]
        for part in self.parts[:-1]:
            xs.append(part(xs[-1]))
        xs.append(y)
        terms = []
        event_dim = self.domain.event_dim
        for part, a, b in zip(self.parts, xs[:-1], xs[1:]):
            terms.append(
                sum_rightmost(part.log_abs_det_jacobian(a, b), event_dim - part.domain.event_dim)
            )
            event_dim += part.codomain.event_dim - part.domain.event_dim
        total = terms[0]
        for t in terms[1:]:
            total = total + t
        return total

    def forward_shape(self, shape):
        for part in self.parts:
            shape = part.forward_shape(shape)
        return shape

    def inverse_shape(self, shape):
        for part in reversed(self.parts):
            shape = part.inverse_shape(shape)
        return shape

    def __repr__(self):
        inner = ",\n    ".join(repr(p) for p in self.parts)
        return f"{self.__class__.__name__}(\n    {inner}\n)"


identity_transform = ComposeTransform([])


class IndependentTransform(Transform):
    """Treats ``reinterpreted_batch_ndims`` more dimensions of ``base_transform``
    as one event (its log-det-Jacobian sums over them).

    Args:
        base_transform (Transform): the transform to wrap.
        reinterpreted_batch_ndims (int): how many batch dimensions become event dimensions.
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    def __init__(self, base_transform, reinterpreted_batch_ndims, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.base_transform = base_transform.with_cache(cache_size)
        self.reinterpreted_batch_ndims = reinterpreted_batch_ndims

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return IndependentTransform(
            self.base_transform, self.reinterpreted_batch_ndims, cache_size=cache_size
        )

    @property
    def domain(self):
        """The base transform's domain with ``reinterpreted_batch_ndims`` more event dimensions."""
        return constraints.independent(self.base_transform.domain, self.reinterpreted_batch_ndims)

    @property
    def codomain(self):
        """The base transform's codomain with ``reinterpreted_batch_ndims`` more event
        dimensions."""
        return constraints.independent(self.base_transform.codomain, self.reinterpreted_batch_ndims)

    @property
    def bijective(self):
        return self.base_transform.bijective

    @property
    def sign(self):
        return self.base_transform.sign

    def _call(self, x):
        return self.base_transform(x)

    def _inverse(self, y):
        return self.base_transform.inv(y)

    def log_abs_det_jacobian(self, x, y):
        result = self.base_transform.log_abs_det_jacobian(x, y)
        return sum_rightmost(result, self.reinterpreted_batch_ndims)

    def forward_shape(self, shape):
        return self.base_transform.forward_shape(shape)

    def inverse_shape(self, shape):
        return self.base_transform.inverse_shape(shape)


class ExpTransform(Transform):
    """``y = exp(x)``.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, ExpTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.exp()

    def _inverse(self, y):
        return y.log()

    def log_abs_det_jacobian(self, x, y):
        return x


class PowerTransform(Transform):
    """``y = x ** exponent`` on positive reals.

    Args:
        exponent (float or Tensor): the power.
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.positive
    codomain = constraints.positive
    bijective = True

    def __init__(self, exponent, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.exponent = exponent

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return PowerTransform(self.exponent, cache_size=cache_size)

    @property
    def sign(self):
        e = self.exponent
        return (1 if e > 0 else -1) if isinstance(e, numbers.Number) else e.sign()

    def _call(self, x):
        return x.pow(self.exponent)

    def _inverse(self, y):
        return y.pow(1 / self.exponent)

    def log_abs_det_jacobian(self, x, y):
        e = self.exponent
        log_abs_e = math.log(abs(e)) if isinstance(e, numbers.Number) else e.abs().log()
        return log_abs_e + (y / x).log()


class SigmoidTransform(Transform):
    """``y = 1 / (1 + exp(-x))``.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.real
    codomain = constraints.unit_interval
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SigmoidTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        from .utils import eps_of

        eps = eps_of(x.dtype)
        return x.sigmoid().clamp(eps, 1 - eps)

    def _inverse(self, y):
        from .utils import eps_of

        eps = eps_of(y.dtype)
        y = y.clamp(eps, 1 - eps)
        return y.log() - (-y).log1p()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x) - F.softplus(x)


class TanhTransform(Transform):
    """``y = tanh(x)``.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.real
    codomain = constraints.interval(-1.0, 1.0)
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, TanhTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.tanh()

    def _inverse(self, y):
        # atanh(y) = (log1p(y) - log1p(-y)) / 2; the ends map to +-inf.
        return 0.5 * (y.log1p() - (-y).log1p())

    def log_abs_det_jacobian(self, x, y):
        # log(1 - tanh(x)^2) written stably: 2 (log 2 - x - softplus(-2x)).
        return 2.0 * (math.log(2.0) - x - F.softplus(-2.0 * x))


class AbsTransform(Transform):
    """``y = |x|`` (not bijective; its inverse picks the nonnegative root).

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.real
    codomain = constraints.nonnegative

    def __eq__(self, other):
        return isinstance(other, AbsTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return x.abs()

    def _inverse(self, y):
        return y


class AffineTransform(Transform):
    """``y = loc + scale * x``; ``event_dim`` dimensions form one event.

    Args:
        loc (float or Tensor): the shift.
        scale (float or Tensor): the scale.
        event_dim (int): the number of rightmost dimensions forming one event.
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    bijective = True

    def __init__(self, loc, scale, event_dim=0, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.loc = loc
        self.scale = scale
        self._event_dim = event_dim

    @property
    def event_dim(self):
        """The number of rightmost dimensions transformed together."""
        return self._event_dim

    @property
    def domain(self):
        """The real numbers, with ``event_dim`` event dimensions."""
        if self._event_dim == 0:
            return constraints.real
        return constraints.independent(constraints.real, self._event_dim)

    @property
    def codomain(self):
        """The real numbers, with ``event_dim`` event dimensions."""
        return self.domain

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return AffineTransform(self.loc, self.scale, self._event_dim, cache_size=cache_size)

    def __eq__(self, other):
        if not isinstance(other, AffineTransform):
            return False

        def same(a, b):
            if isinstance(a, numbers.Number) and isinstance(b, numbers.Number):
                return a == b
            if isinstance(a, rumus.Tensor) and isinstance(b, rumus.Tensor):
                return tuple(a.shape) == tuple(b.shape) and bool((a == b).all())
            return False

        return same(self.loc, other.loc) and same(self.scale, other.scale)

    __hash__ = object.__hash__

    @property
    def sign(self):
        if isinstance(self.scale, numbers.Real):
            return 1 if float(self.scale) > 0 else -1 if float(self.scale) < 0 else 0
        return self.scale.sign()

    def _call(self, x):
        return self.loc + self.scale * x

    def _inverse(self, y):
        return (y - self.loc) / self.scale

    def log_abs_det_jacobian(self, x, y):
        shape = tuple(x.shape)
        scale = self.scale
        if isinstance(scale, numbers.Real):
            result = rumus.full_like(x, math.log(abs(scale)))
        else:
            result = scale.abs().log()
        if self._event_dim:
            result_size = tuple(result.shape[: result.dim() - self._event_dim]) + (-1,)
            result = result.reshape(result_size).sum(-1)
            shape = shape[: len(shape) - self._event_dim]
        return result.expand(shape)

    def forward_shape(self, shape):
        for p in (self.loc, self.scale):
            if isinstance(p, rumus.Tensor):
                shape = tuple(rumus.broadcast_shapes(tuple(shape), tuple(p.shape)))
        return shape

    def inverse_shape(self, shape):
        return self.forward_shape(shape)


class SoftmaxTransform(Transform):
    """Real vectors to the simplex by ``softmax`` (not bijective; the inverse
    is ``log`` up to an additive constant).

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.real_vector
    codomain = constraints.simplex

    def __eq__(self, other):
        return isinstance(other, SoftmaxTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return F.softmax(x, dim=-1)

    def _inverse(self, y):
        return y.log()

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return shape


class StickBreakingTransform(Transform):
    """Real vectors of length K-1 to the K-simplex by stick breaking; bijective.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.real_vector
    codomain = constraints.simplex
    bijective = True

    def __eq__(self, other):
        return isinstance(other, StickBreakingTransform)

    __hash__ = object.__hash__

    def _offset(self, x):
        k = x.shape[-1]
        return rumus.arange(k, 0, -1, dtype=x.dtype, device=x.device).log()

    def _call(self, x):
        z = (x - self._offset(x)).sigmoid()
        z_cumprod = (1 - z).cumprod(-1)
        pad_one = rumus.ones(tuple(x.shape[:-1]) + (1,), dtype=x.dtype, device=x.device)
        left = rumus.cat([z, pad_one], -1)
        right = rumus.cat([pad_one, z_cumprod], -1)
        return left * right

    def _inverse(self, y):
        y_crop = y[..., :-1]
        k = y_crop.shape[-1]
        offset = rumus.arange(k, 0, -1, dtype=y.dtype, device=y.device).log()
        from .utils import tiny_of

        sf = (1 - y_crop.cumsum(-1)).clamp(min=tiny_of(y.dtype))
        return y_crop.log() - sf.log() + offset

    def log_abs_det_jacobian(self, x, y):
        xs = x - self._offset(x)
        detj = -xs + F.logsigmoid(xs) + y[..., :-1].log()
        return detj.sum(-1)

    def forward_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] + 1,)

    def inverse_shape(self, shape):
        if len(shape) < 1:
            raise ValueError("Too few dimensions on input")
        return tuple(shape[:-1]) + (shape[-1] - 1,)


class LowerCholeskyTransform(Transform):
    """Unconstrained square matrices to lower-triangular matrices with a
    positive diagonal: keeps the strict lower part, exponentiates the diagonal.
    Not bijective (the upper triangle is dropped).

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.lower_cholesky

    def __eq__(self, other):
        return isinstance(other, LowerCholeskyTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        n = x.shape[-1]
        eye = rumus.eye(n, dtype=x.dtype, device=x.device)
        diag = x.diagonal(0, -2, -1).exp().unsqueeze(-1) * eye
        return x.tril(-1) + diag

    def _inverse(self, y):
        n = y.shape[-1]
        eye = rumus.eye(n, dtype=y.dtype, device=y.device)
        diag = y.diagonal(0, -2, -1).log().unsqueeze(-1) * eye
        return y.tril(-1) + diag


class SoftplusTransform(Transform):
    """``y = log(1 + exp(x))``, reals to positive reals.

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.real
    codomain = constraints.positive
    bijective = True
    sign = +1

    def __eq__(self, other):
        return isinstance(other, SoftplusTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        return F.softplus(x)

    def _inverse(self, y):
        return y + (-(-y).expm1()).log()

    def log_abs_det_jacobian(self, x, y):
        return -F.softplus(-x)


class PositiveDefiniteTransform(Transform):
    """Unconstrained square matrices to positive-definite ones: ``L L^T`` with
    ``L`` from LowerCholeskyTransform (not bijective).

    Args:
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    domain = constraints.independent(constraints.real, 2)
    codomain = constraints.positive_definite

    def __eq__(self, other):
        return isinstance(other, PositiveDefiniteTransform)

    __hash__ = object.__hash__

    def _call(self, x):
        L = LowerCholeskyTransform()(x)
        return L.matmul(L.mT)

    def _inverse(self, y):
        return LowerCholeskyTransform().inv(rumus.linalg.cholesky(y))


class ReshapeTransform(Transform):
    """Reshapes the rightmost ``in_shape`` dimensions to ``out_shape`` (same
    number of elements); the log-det-Jacobian is zero.

    Args:
        in_shape (Sequence[int]): the event shape of the input.
        out_shape (Sequence[int]): the event shape of the output (same number of elements).
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    bijective = True

    def __init__(self, in_shape, out_shape, cache_size=0):
        self.in_shape = tuple(in_shape)
        self.out_shape = tuple(out_shape)
        if math.prod(self.in_shape) != math.prod(self.out_shape):
            raise ValueError("in_shape, out_shape have different numbers of elements")
        super().__init__(cache_size=cache_size)

    @property
    def domain(self):
        """Real tensors with ``len(in_shape)`` event dimensions."""
        return constraints.independent(constraints.real, len(self.in_shape))

    @property
    def codomain(self):
        """Real tensors with ``len(out_shape)`` event dimensions."""
        return constraints.independent(constraints.real, len(self.out_shape))

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return ReshapeTransform(self.in_shape, self.out_shape, cache_size=cache_size)

    def _call(self, x):
        batch = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return x.reshape(batch + self.out_shape)

    def _inverse(self, y):
        batch = tuple(y.shape[: y.dim() - len(self.out_shape)])
        return y.reshape(batch + self.in_shape)

    def log_abs_det_jacobian(self, x, y):
        batch = tuple(x.shape[: x.dim() - len(self.in_shape)])
        return rumus.zeros(batch, dtype=x.dtype, device=x.device)

    def forward_shape(self, shape):
        shape = tuple(shape)
        n = len(self.in_shape)
        if len(shape) < n or shape[len(shape) - n :] != self.in_shape:
            raise ValueError(f"Expected shape ending in {self.in_shape}, got {shape}")
        return shape[: len(shape) - n] + self.out_shape

    def inverse_shape(self, shape):
        shape = tuple(shape)
        n = len(self.out_shape)
        if len(shape) < n or shape[len(shape) - n :] != self.out_shape:
            raise ValueError(f"Expected shape ending in {self.out_shape}, got {shape}")
        return shape[: len(shape) - n] + self.in_shape


class CumulativeDistributionTransform(Transform):
    """``y = distribution.cdf(x)`` onto the unit interval; the inverse is
    ``icdf`` and the log-det-Jacobian is ``log_prob``.

    Args:
        distribution (Distribution): the distribution whose CDF to apply.
        cache_size (int): 0 (no cache) or 1 (remember the last ``(x, y)``).
    """

    bijective = True
    codomain = constraints.unit_interval
    sign = +1

    def __init__(self, distribution, cache_size=0):
        super().__init__(cache_size=cache_size)
        self.distribution = distribution

    @property
    def domain(self):
        """The support of the distribution whose CDF this transform applies."""
        return self.distribution.support

    def with_cache(self, cache_size=1):
        if self._cache_size == cache_size:
            return self
        return CumulativeDistributionTransform(self.distribution, cache_size=cache_size)

    def _call(self, x):
        return self.distribution.cdf(x)

    def _inverse(self, y):
        return self.distribution.icdf(y)

    def log_abs_det_jacobian(self, x, y):
        return self.distribution.log_prob(x)
