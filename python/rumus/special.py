"""rumus.special: PyTorch's torch.special.

The gamma family (lgamma, digamma, polygamma), erfc, erfinv and the modified Bessel
functions i0, i0e, i1, i1e are engine kernels (CPU and GPU, with backward). The Bessel
J, Y and K functions, spherical_bessel_j0, airy_ai, erfcx, zeta, gammainc/gammaincc and
the orthogonal polynomials compute in float64 on the host (GPU tensors go there and
back), with PyTorch's gradients. The rest are compositions of engine ops, so they run
on the input's device and differentiate."""

import math

import rumus

from . import _rumus
from ._rumus import Tensor

__all__ = [
    "airy_ai",
    "bessel_j0",
    "bessel_j1",
    "bessel_y0",
    "bessel_y1",
    "chebyshev_polynomial_t",
    "chebyshev_polynomial_u",
    "chebyshev_polynomial_v",
    "chebyshev_polynomial_w",
    "digamma",
    "entr",
    "erf",
    "erfc",
    "erfcx",
    "erfinv",
    "exp2",
    "expit",
    "expm1",
    "gammainc",
    "gammaincc",
    "gammaln",
    "hermite_polynomial_h",
    "hermite_polynomial_he",
    "i0",
    "i0e",
    "i1",
    "i1e",
    "laguerre_polynomial_l",
    "legendre_polynomial_p",
    "log1p",
    "log_ndtr",
    "log_softmax",
    "logit",
    "logsumexp",
    "modified_bessel_i0",
    "modified_bessel_i1",
    "modified_bessel_k0",
    "modified_bessel_k1",
    "multigammaln",
    "ndtr",
    "ndtri",
    "polygamma",
    "psi",
    "round",
    "scaled_modified_bessel_k0",
    "scaled_modified_bessel_k1",
    "shifted_chebyshev_polynomial_t",
    "shifted_chebyshev_polynomial_u",
    "shifted_chebyshev_polynomial_v",
    "shifted_chebyshev_polynomial_w",
    "sinc",
    "softmax",
    "spherical_bessel_j0",
    "xlog1py",
    "xlogy",
    "zeta",
]


def _tensor(op, x, what="input"):
    if not isinstance(x, Tensor):
        raise TypeError(f"special.{op}(): argument '{what}' must be Tensor, not {type(x).__name__}")
    return x


def _float(x):
    return x if x.is_floating_point() else x.float()


def digamma(input):
    """ψ(input), the logarithmic derivative of the gamma function (ψ(0) = -inf).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("digamma", input).digamma()


psi = digamma


def gammaln(input):
    """ln|Γ(input)|, elementwise.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("gammaln", input).lgamma()


def polygamma(n, input):
    """The n-th derivative of the digamma function, ψ⁽ⁿ⁾(input), for n >= 0.

    Args:
        n: the order of the derivative (a non-negative int).
        input: the input tensor.

    Returns:
        A tensor of the same shape as input.
    """
    return _tensor("polygamma", input).polygamma(n)


def multigammaln(input, p):
    """The multivariate log-gamma function of dimension p.

    Computes p(p-1)/4 ln π + Σ_{j<p} ln Γ(input - j/2). Every element must exceed (p-1)/2.

    Args:
        input: a floating-point tensor.
        p: the dimension (an int >= 1).

    Returns:
        A tensor of the same shape as input.
    """
    return _tensor("multigammaln", input).mvlgamma(p)


def erf(input):
    """The error function, elementwise.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("erf", input).erf()


def erfc(input):
    """The complementary error function 1 - erf(input), accurate in the tails.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("erfc", input).erfc()


def erfinv(input):
    """The inverse error function on [-1, 1] (±inf at ±1, nan outside).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("erfinv", input).erfinv()


def i0(input):
    """The modified Bessel function of the first kind of order 0.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("i0", input).i0()


def i0e(input):
    """The exponentially scaled i0, exp(-|input|) · i0(input), which does not overflow.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _rumus._special_unary("i0e", input)


def i1(input):
    """The modified Bessel function of the first kind of order 1.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _rumus._special_unary("i1", input)


def i1e(input):
    """The exponentially scaled i1, exp(-|input|) · i1(input), which does not overflow.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _rumus._special_unary("i1e", input)


def ndtr(input):
    """The standard normal CDF, Φ(input) = erfc(-input/√2)/2.

    Args:
        input: the input tensor.

    Returns:
        A floating-point tensor of the same shape.
    """
    return (_float(_tensor("ndtr", input)) * -math.sqrt(0.5)).erfc() * 0.5


def ndtri(input):
    """The inverse of the standard normal CDF, √2 · erfinv(2p - 1).

    Args:
        input: probabilities in [0, 1].

    Returns:
        A floating-point tensor of the same shape.
    """
    return (_float(_tensor("ndtri", input)) * 2 - 1).erfinv() * math.sqrt(2.0)


# log Φ(x) for x < _LOG_NDTR_SWITCH from the asymptotic series of Mills' ratio:
# Φ(x) ≈ φ(x)/(-x) · Σ_k (-1)^k (2k-1)!! / x^2k (below -10 the terms after the
# seventh are under 1e-11); above it log(erfc(-x/√2)/2), whose float32 erfc is
# still normal there.
_LOG_NDTR_SWITCH = -10.0
_MILLS = (1.0, -1.0, 3.0, -15.0, 105.0, -945.0, 10395.0, -135135.0)


def log_ndtr(input):
    """log Φ(input), accurate far into the lower tail.

    Args:
        input: the input tensor.

    Returns:
        A floating-point tensor of the same shape.
    """
    x = _float(_tensor("log_ndtr", input))
    near = x.clamp(min=_LOG_NDTR_SWITCH)
    direct = ((near * -math.sqrt(0.5)).erfc() * 0.5).log()
    far = x.clamp(max=_LOG_NDTR_SWITCH)
    inv2 = far.square().reciprocal()
    series = inv2 * _MILLS[-1]
    for c in reversed(_MILLS[1:-1]):
        series = (series + c) * inv2
    tail = -0.5 * far.square() - (-far).log() - 0.5 * math.log(2 * math.pi) + series.log1p()
    return _rumus.where(x > _LOG_NDTR_SWITCH, direct, tail)


def entr(input):
    """Elementwise entropy: -x ln x for x > 0, 0 at 0, -inf for x < 0.

    Args:
        input: the input tensor.

    Returns:
        A floating-point tensor of the same shape.
    """
    x = _float(_tensor("entr", input))
    safe = _rumus.where(x > 0, x, _rumus.ones_like(x))
    value = -x * safe.log()
    value = _rumus.where(x == 0, _rumus.zeros_like(x), value)
    return _rumus.where(x < 0, _rumus.full_like(x, -math.inf), value)


def sinc(input):
    """The normalized sinc, sin(πx)/(πx), 1 at 0.

    Args:
        input: the input tensor.

    Returns:
        A floating-point tensor of the same shape.
    """
    return _tensor("sinc", input).sinc()


def xlog1py(input, other):
    """input · log1p(other), 0 where input is 0 (unless other is nan).

    Args:
        input: a tensor or number.
        other: a tensor or number, broadcast against input.

    Returns:
        A floating-point tensor of the broadcast shape.
    """
    if not isinstance(input, Tensor):
        input = _rumus.tensor(input, device=other.device)
    if not isinstance(other, Tensor):
        other = _rumus.tensor(other, device=input.device)
    x, y = _float(input), _float(other)
    value = x * y.log1p()
    zero = (x == 0) & ~y.isnan()
    return _rumus.where(zero, _rumus.zeros_like(value), value)


def xlogy(input, other):
    """input · log(other), 0 where input is 0 (unless other is nan).

    Args:
        input: a tensor or number.
        other: a tensor or number, broadcast against input.

    Returns:
        A tensor of the broadcast shape.
    """
    return rumus.xlogy(input, other)


def expit(input):
    """The logistic sigmoid, 1 / (1 + exp(-input)).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("expit", input).sigmoid()


def exp2(input):
    """2 raised to the power of each element.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("exp2", input).exp2()


def expm1(input):
    """exp(input) - 1, accurate for small inputs.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("expm1", input).expm1()


def log1p(input):
    """log(1 + input), accurate for small inputs.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape.
    """
    return _tensor("log1p", input).log1p()


def logit(input, eps=None):
    """The logit log(p / (1 - p)), the inverse of the sigmoid.

    Args:
        input: probabilities.
        eps: if given, input is first clamped to [eps, 1 - eps].

    Returns:
        A tensor of the same shape.
    """
    return rumus.logit(input, eps)


def round(input, decimals=0):  # noqa: A001 - PyTorch's name
    """Rounds each element to the nearest value with decimals decimals (half to even).

    Args:
        input: the input tensor.
        decimals: the number of decimal places (may be negative).

    Returns:
        A tensor of the same shape.
    """
    return rumus.round(input, decimals=decimals)


def logsumexp(input, dim, keepdim=False):
    """log Σ exp(input) along dim, computed stably.

    Args:
        input: the input tensor.
        dim: the dimension or dimensions to reduce.
        keepdim: whether to keep the reduced dimensions with size 1.

    Returns:
        The reduced tensor.
    """
    return rumus.logsumexp(input, dim, keepdim)


def softmax(input, dim, *, dtype=None):
    """The softmax exp(x) / Σ exp(x) along dim.

    Args:
        input: the input tensor.
        dim: the dimension along which the values sum to 1.
        dtype: if given, input is cast to this dtype first.

    Returns:
        A tensor of the same shape.
    """
    return rumus.nn.functional.softmax(input, dim, dtype=dtype)


def log_softmax(input, dim, *, dtype=None):
    """The log of the softmax along dim, computed stably.

    Args:
        input: the input tensor.
        dim: the dimension to normalize over.
        dtype: if given, input is cast to this dtype first.

    Returns:
        A tensor of the same shape.
    """
    return rumus.nn.functional.log_softmax(input, dim, dtype=dtype)


def airy_ai(input):
    """The Airy function Ai(input).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("airy_ai", input)


def bessel_j0(input):
    """The Bessel function of the first kind of order 0, J0(input).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("bessel_j0", input)


def bessel_j1(input):
    """The Bessel function of the first kind of order 1, J1(input).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("bessel_j1", input)


def bessel_y0(input):
    """The Bessel function of the second kind of order 0, Y0(input) (NaN below 0, -inf at 0).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("bessel_y0", input)


def bessel_y1(input):
    """The Bessel function of the second kind of order 1, Y1(input) (NaN below 0, -inf at 0).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("bessel_y1", input)


def modified_bessel_i0(input):
    """The modified Bessel function of the first kind of order 0 (the same as i0).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _tensor("modified_bessel_i0", input).i0()


def modified_bessel_i1(input):
    """The modified Bessel function of the first kind of order 1 (the same as i1).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_unary("i1", input)


def modified_bessel_k0(input):
    """The modified Bessel function of the second kind of order 0, K0(input).

    NaN below 0, inf at 0.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("modified_bessel_k0", input)


def modified_bessel_k1(input):
    """The modified Bessel function of the second kind of order 1, K1(input).

    NaN below 0, inf at 0.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("modified_bessel_k1", input)


def scaled_modified_bessel_k0(input):
    """exp(input) · K0(input), which does not underflow for large inputs.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("scaled_modified_bessel_k0", input)


def scaled_modified_bessel_k1(input):
    """exp(input) · K1(input), which does not underflow for large inputs.

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("scaled_modified_bessel_k1", input)


def spherical_bessel_j0(input):
    """The spherical Bessel function of the first kind of order 0, sin(x)/x (1 at 0).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("spherical_bessel_j0", input)


def erfcx(input):
    """The scaled complementary error function, exp(input²) · erfc(input).

    Args:
        input: the input tensor.

    Returns:
        A tensor of the same shape (floating point).
    """
    return _rumus._special_fn("erfcx", input)


def zeta(input, other):
    """The Hurwitz zeta function ζ(input, other) = Σ_k (other + k)^-input.

    +inf at input = 1 and where other is 0, -1, -2, ...; NaN for input < 1. Differentiable in
    other (the derivative in input is not implemented, as in PyTorch).

    Args:
        input: a tensor or number.
        other: a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("zeta", input, other)


def gammainc(input, other):
    """The regularized lower incomplete gamma function P(input, other).

    NaN for negative arguments. Differentiable in other (the derivative in input is not
    implemented, as in PyTorch).

    Args:
        input: a tensor or number.
        other: a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("gammainc", input, other)


def gammaincc(input, other):
    """The regularized upper incomplete gamma function Q(input, other) = 1 - P(input, other).

    NaN for negative arguments. Differentiable in other (the derivative in input is not
    implemented, as in PyTorch).

    Args:
        input: a tensor or number.
        other: a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("gammaincc", input, other)


def chebyshev_polynomial_t(input, n):
    """The Chebyshev polynomial of the first kind T_n(input).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("chebyshev_polynomial_t", input, n)


def chebyshev_polynomial_u(input, n):
    """The Chebyshev polynomial of the second kind U_n(input).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("chebyshev_polynomial_u", input, n)


def chebyshev_polynomial_v(input, n):
    """The Chebyshev polynomial of the third kind V_n(input).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("chebyshev_polynomial_v", input, n)


def chebyshev_polynomial_w(input, n):
    """The Chebyshev polynomial of the fourth kind W_n(input).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("chebyshev_polynomial_w", input, n)


def shifted_chebyshev_polynomial_t(input, n):
    """The shifted Chebyshev polynomial of the first kind T_n(2·input - 1).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("shifted_chebyshev_polynomial_t", input, n)


def shifted_chebyshev_polynomial_u(input, n):
    """The shifted Chebyshev polynomial of the second kind U_n(2·input - 1).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("shifted_chebyshev_polynomial_u", input, n)


def shifted_chebyshev_polynomial_v(input, n):
    """The shifted Chebyshev polynomial of the third kind V_n(2·input - 1).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("shifted_chebyshev_polynomial_v", input, n)


def shifted_chebyshev_polynomial_w(input, n):
    """The shifted Chebyshev polynomial of the fourth kind W_n(2·input - 1).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("shifted_chebyshev_polynomial_w", input, n)


def hermite_polynomial_h(input, n):
    """The physicists' Hermite polynomial H_n(input).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("hermite_polynomial_h", input, n)


def hermite_polynomial_he(input, n):
    """The probabilists' Hermite polynomial He_n(input).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("hermite_polynomial_he", input, n)


def laguerre_polynomial_l(input, n):
    """The Laguerre polynomial L_n(input).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("laguerre_polynomial_l", input, n)


def legendre_polynomial_p(input, n):
    """The Legendre polynomial P_n(input).

    n is truncated to an integer; n < 0 gives 0. Not differentiable, as in PyTorch.

    Args:
        input: a tensor or number.
        n: the degree, a tensor or number (one of the two must be a tensor).

    Returns:
        A tensor of the broadcast shape (floating point).
    """
    return _rumus._special_fn("legendre_polynomial_p", input, n)


def _inplace_float(op, self):
    if not self.is_floating_point():
        raise RuntimeError(
            f"{op}: result type Float can't be cast to the desired output type {self.dtype}"
        )


def _mvlgamma(self, p):
    """The multivariate log-gamma function of dimension p, elementwise.

    Args:
        p: the dimension (an int >= 1); every element must exceed (p-1)/2.

    Returns:
        A tensor of the same shape.
    """
    _tensor("mvlgamma", self)
    if not self.is_floating_point():
        raise RuntimeError(f"mvlgamma: expected a floating point tensor, got {self.dtype}")
    if not isinstance(p, int) or p < 1:
        raise RuntimeError(f"mvlgamma: p has to be greater than or equal to 1, got {p}")
    x = self
    if not bool((x > (p - 1) / 2).all()):
        raise RuntimeError(f"All elements must be greater than (p-1)/2 = {(p - 1) / 2}")
    shift = _rumus.arange(p, dtype=x.dtype, device=x.device) * -0.5
    terms = (x.unsqueeze(-1) + shift).lgamma().sum(-1)
    return terms + p * (p - 1) / 4 * math.log(math.pi)


def _mvlgamma_(self, p):
    """In-place ``mvlgamma``.

    Args:
        p: the dimension (an int >= 1); every element must exceed (p-1)/2.

    Returns:
        This tensor.
    """
    _inplace_float("mvlgamma_", self)
    self.copy_(_mvlgamma(self, p))
    return self


def _sinc(self):
    """The normalized sinc, sin(πx)/(πx), 1 at 0.

    Returns:
        A floating-point tensor of the same shape.
    """
    x = _float(_tensor("sinc", self))
    zero = x == 0
    px = _rumus.where(zero, _rumus.ones_like(x), x) * math.pi
    return _rumus.where(zero, _rumus.ones_like(x), px.sin() / px)


def _sinc_(self):
    """In-place ``sinc`` (floating-point tensors only).

    Returns:
        This tensor.
    """
    _inplace_float("sinc_", self)
    self.copy_(_sinc(self))
    return self


def _polygamma(n, input):
    """The n-th derivative of the digamma function (torch.polygamma).

    Args:
        n: the order of the derivative (a non-negative int).
        input: the input tensor.

    Returns:
        A tensor of the same shape as input.
    """
    return _tensor("polygamma", input).polygamma(n)


def _install(namespace):
    """Tensor.mvlgamma/sinc (and in-place forms), rumus.mvlgamma/polygamma/sinc."""
    Tensor.mvlgamma, Tensor.mvlgamma_ = _mvlgamma, _mvlgamma_
    if not hasattr(Tensor, "sinc"):
        Tensor.sinc, Tensor.sinc_ = _sinc, _sinc_
    namespace["mvlgamma"] = _mvlgamma
    namespace["polygamma"] = _polygamma
    namespace.setdefault("sinc", _sinc)
