"""Helpers shared by the distribution families: parameter broadcasting,
probs/logits conversions, standard samples and a differentiable erfinv."""

import math
import numbers

import rumus

_EPS = {"float32": 1.1920928955078125e-07, "float64": 2.220446049250313e-16}
_TINY = {"float32": 1.1754943508222875e-38, "float64": 2.2250738585072014e-308}


def _dname(dtype):
    return str(dtype).rsplit(".", 1)[-1]


def eps_of(dtype):
    return _EPS.get(_dname(dtype), _EPS["float32"])


def tiny_of(dtype):
    return _TINY.get(_dname(dtype), _TINY["float32"])


def is_number(x):
    return isinstance(x, numbers.Number) and not isinstance(x, bool)


def broadcast_all(*values):
    """Turns numbers into tensors (dtype and device of the first tensor among
    ``values``, float32 on the default device when there is none) and
    broadcasts every value to one shape."""
    like = next((v for v in values if isinstance(v, rumus.Tensor)), None)
    out = []
    for v in values:
        if isinstance(v, rumus.Tensor):
            out.append(v)
        elif isinstance(v, numbers.Number):
            if like is None:
                out.append(rumus.tensor(float(v), dtype=rumus.float32))
            else:
                out.append(rumus.tensor(float(v), dtype=like.dtype, device=like.device))
        else:
            raise ValueError("Input arguments must all be instances of numbers.Number or Tensor.")
    shape = rumus.broadcast_shapes(*[v.shape for v in out])
    return tuple(v if tuple(v.shape) == tuple(shape) else v.expand(shape) for v in out)


def as_param(x, like=None):
    """A parameter as a tensor (numbers become float32, or ``like``'s dtype)."""
    if isinstance(x, rumus.Tensor):
        return x
    if like is not None:
        return rumus.tensor(x, dtype=like.dtype, device=like.device)
    t = rumus.tensor(x)
    return t if t.is_floating_point() else t.float()


def sum_rightmost(value, dim):
    """Sums the ``dim`` rightmost dimensions of ``value``."""
    if dim == 0:
        return value
    if not isinstance(value, rumus.Tensor):
        return value
    return value.reshape(tuple(value.shape[: value.dim() - dim]) + (-1,)).sum(-1)


def clamp_probs(probs):
    eps = eps_of(probs.dtype)
    return probs.clamp(eps, 1.0 - eps)


def probs_to_logits(probs, is_binary=False):
    ps = clamp_probs(probs)
    if is_binary:
        return ps.log() - (-ps).log1p()
    return ps.log()


def logits_to_probs(logits, is_binary=False):
    if is_binary:
        return logits.sigmoid()
    return rumus.nn.functional.softmax(logits, dim=-1)


def uniform(shape, like):
    """Uniform [0, 1) samples with ``like``'s dtype and device."""
    return rumus.rand(tuple(shape), dtype=like.dtype, device=like.device)


def standard_normal(shape, like):
    return rumus.randn(tuple(shape), dtype=like.dtype, device=like.device)


def _erfinv_guess(x):
    # Single-precision rational approximation of erfinv (M. Giles, 2010),
    # refined below with Newton steps.
    w = -((1.0 - x) * (1.0 + x)).log()
    a = w - 2.5
    p = 2.81022636e-08
    for c in (
        3.43273939e-07,
        -3.5233877e-06,
        -4.39150654e-06,
        0.00021858087,
        -0.00125372503,
        -0.00417768164,
        0.246640727,
        1.50140941,
    ):
        p = c + p * a
    b = w.sqrt() - 3.0
    q = -0.000200214257
    for c in (
        0.000100950558,
        0.00134934322,
        -0.00367342844,
        0.00573950773,
        -0.0076224613,
        0.00943887047,
        1.00167406,
        2.83297682,
    ):
        q = c + q * b
    return rumus.where(w < 5.0, p, q) * x


def erfinv(x):
    """Inverse error function, elementwise; differentiable in ``x``."""
    k = 2.0 / math.sqrt(math.pi)
    with rumus.no_grad():
        y = _erfinv_guess(x.detach())
        for _ in range(2):
            y = y - (y.erf() - x.detach()) / (k * (-y * y).exp())
    # One Newton step with gradients on: it leaves the value unchanged (up to
    # rounding) and gives exactly dy/dx = 1 / erf'(y).
    return y - (y.erf() - x) / (k * (-y * y).exp())


class lazy_property:
    """A property computed once per instance, then stored in its __dict__."""

    def __init__(self, fn):
        self.fn = fn
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    def __get__(self, instance, owner=None):
        if instance is None:
            return self
        value = self.fn(instance)
        instance.__dict__[self.fn.__name__] = value
        return value
