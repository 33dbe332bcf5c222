"""Parameter initialization (PyTorch's ``torch.nn.init``).

Every function fills its tensor in place without recording autograd history and returns it.
Random draws come from rumus's generators (``generator=`` or the default one seeded by
``rumus.manual_seed``), so results are reproducible.
"""

import math
import warnings
from typing import Optional, Union

import numpy as np

from .. import _rumus
from .._rumus import Generator, Tensor
from ..autograd.grad_mode import no_grad

__all__ = [
    "calculate_gain",
    "uniform_",
    "normal_",
    "trunc_normal_",
    "constant_",
    "ones_",
    "zeros_",
    "eye_",
    "dirac_",
    "xavier_uniform_",
    "xavier_normal_",
    "kaiming_uniform_",
    "kaiming_normal_",
    "orthogonal_",
    "sparse_",
]


def calculate_gain(nonlinearity: str, param: Optional[Union[int, float]] = None) -> float:
    """Recommended gain for a nonlinearity (``param``: leaky_relu's negative slope, default
    0.01).

    Args:
        nonlinearity (str): the nonlinearity's name (``'relu'``, ``'leaky_relu'``...).
        param (Parameter or None): the parameter.

    Returns:
        float: the gain.
    """
    if nonlinearity in (
        "linear",
        "conv1d",
        "conv2d",
        "conv3d",
        "conv_transpose1d",
        "conv_transpose2d",
        "conv_transpose3d",
        "sigmoid",
    ):
        return 1
    if nonlinearity == "tanh":
        return 5.0 / 3
    if nonlinearity == "relu":
        return math.sqrt(2.0)
    if nonlinearity == "leaky_relu":
        if param is None:
            slope = 0.01
        elif isinstance(param, (int, float)) and not isinstance(param, bool):
            slope = param
        else:
            raise ValueError(f"negative_slope {param} not a valid number")
        return math.sqrt(2.0 / (1 + slope**2))
    if nonlinearity == "selu":
        return 3.0 / 4
    raise ValueError(f"Unsupported nonlinearity {nonlinearity}")


def _calculate_fan_in_and_fan_out(tensor):
    """(fan_in, fan_out) = (size(1), size(0)) times the receptive field (product of dims 2..)."""
    if tensor.dim() < 2:
        raise ValueError(
            "Fan in and fan out can not be computed for tensor with fewer than 2 dimensions"
        )
    receptive = math.prod(tensor.shape[2:])
    return tensor.shape[1] * receptive, tensor.shape[0] * receptive


def _calculate_correct_fan(tensor, mode):
    mode = mode.lower()
    if mode not in ("fan_in", "fan_out"):
        raise ValueError(f"Mode {mode} not supported, please use one of ['fan_in', 'fan_out']")
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return fan_in if mode == "fan_in" else fan_out


def _fill_from_numpy(tensor, array):
    with no_grad():
        tensor.copy_(_rumus.from_numpy(np.ascontiguousarray(array)))
    return tensor


def _draw(shape, kind, generator, *params):
    """float64 NumPy array of uniform or normal draws from a rumus generator."""
    t = _rumus.empty(tuple(shape), dtype=_rumus.float64)
    getattr(t, kind)(*params, generator=generator)
    return t.numpy()


def uniform_(
    tensor: Tensor, a: float = 0.0, b: float = 1.0, generator: Optional[Generator] = None
) -> Tensor:
    """Fills with U(a, b).

    Args:
        tensor (Tensor): the tensor to fill (in place).
        a (float): the lower bound.
        b (float): the upper bound.
        generator (Generator, optional): the random generator.
    """
    with no_grad():
        return tensor.uniform_(a, b, generator=generator)


def normal_(
    tensor: Tensor, mean: float = 0.0, std: float = 1.0, generator: Optional[Generator] = None
) -> Tensor:
    """Fills with N(mean, std^2).

    Args:
        tensor (Tensor): the tensor to fill (in place).
        mean (float): the mean.
        std (float): the standard deviation.
        generator (Generator, optional): the random generator.
    """
    with no_grad():
        return tensor.normal_(mean, std, generator=generator)


def constant_(tensor: Tensor, val: float) -> Tensor:
    """Fills ``tensor`` with ``val`` in place (not recorded by autograd).

    Args:
        tensor (Tensor): the tensor to fill.
        val (float): the value.

    Returns:
        Tensor: ``tensor``.
    """
    with no_grad():
        return tensor.fill_(val)


def ones_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with ones in place (not recorded by autograd).

    Args:
        tensor (Tensor): the tensor to fill.

    Returns:
        Tensor: ``tensor``.
    """
    return constant_(tensor, 1.0)


def zeros_(tensor: Tensor) -> Tensor:
    """Fills ``tensor`` with zeros in place (not recorded by autograd).

    Args:
        tensor (Tensor): the tensor to fill.

    Returns:
        Tensor: ``tensor``.
    """
    with no_grad():
        return tensor.zero_()


def eye_(tensor: Tensor) -> Tensor:
    """Fills a 2-D tensor with the identity (ones on the main diagonal).

    Args:
        tensor (Tensor): the tensor to fill (in place).
    """
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    return _fill_from_numpy(tensor, np.eye(*tensor.shape))


def dirac_(tensor: Tensor, groups: int = 1) -> Tensor:
    """Fills a 3/4/5-D conv weight so that the convolution is the identity (per group).

    Args:
        tensor (Tensor): the tensor to fill (in place).
        groups (int): the number of groups of output channels.
    """
    if tensor.dim() not in (3, 4, 5):
        raise ValueError("Only tensors with 3, 4, or 5 dimensions are supported")
    shape = tuple(tensor.shape)
    if shape[0] % groups != 0:
        raise ValueError("dim 0 must be divisible by groups")
    out_per_group = shape[0] // groups
    centre = tuple(s // 2 for s in shape[2:])
    w = np.zeros(shape)
    for g in range(groups):
        for d in range(min(out_per_group, shape[1])):
            w[(g * out_per_group + d, d) + centre] = 1
    return _fill_from_numpy(tensor, w)


def xavier_uniform_(
    tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None
) -> Tensor:
    """U(-a, a) with a = gain * sqrt(6 / (fan_in + fan_out)) (Glorot & Bengio, 2010).

    Args:
        tensor (Tensor): the tensor to fill (in place).
        gain (float): the scaling factor.
        generator (Generator, optional): the random generator.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    a = math.sqrt(3.0) * gain * math.sqrt(2.0 / float(fan_in + fan_out))
    return uniform_(tensor, -a, a, generator)


def xavier_normal_(
    tensor: Tensor, gain: float = 1.0, generator: Optional[Generator] = None
) -> Tensor:
    """N(0, std^2) with std = gain * sqrt(2 / (fan_in + fan_out)).

    Args:
        tensor (Tensor): the tensor to fill (in place).
        gain (float): the scaling factor.
        generator (Generator, optional): the random generator.
    """
    fan_in, fan_out = _calculate_fan_in_and_fan_out(tensor)
    return normal_(tensor, 0.0, gain * math.sqrt(2.0 / float(fan_in + fan_out)), generator)


def _kaiming_std(tensor, a, mode, nonlinearity):
    return calculate_gain(nonlinearity, a) / math.sqrt(_calculate_correct_fan(tensor, mode))


def kaiming_uniform_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Optional[Generator] = None,
) -> Tensor:
    """U(-b, b) with b = gain * sqrt(3 / fan) (He et al., 2015); ``a`` is leaky_relu's slope.

    Args:
        tensor (Tensor): the tensor to fill (in place).
        a (float): the negative slope of the rectifier after this layer (leaky_relu).
        mode (str): ``'fan_in'`` or ``'fan_out'``.
        nonlinearity (str): the nonlinearity's name (``'relu'``, ``'leaky_relu'``...).
        generator (Generator, optional): the random generator.
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op")
        return tensor
    bound = math.sqrt(3.0) * _kaiming_std(tensor, a, mode, nonlinearity)
    return uniform_(tensor, -bound, bound, generator)


def kaiming_normal_(
    tensor: Tensor,
    a: float = 0,
    mode: str = "fan_in",
    nonlinearity: str = "leaky_relu",
    generator: Optional[Generator] = None,
) -> Tensor:
    """N(0, std^2) with std = gain / sqrt(fan).

    Args:
        tensor (Tensor): the tensor to fill (in place).
        a (float): the negative slope of the rectifier after this layer (leaky_relu).
        mode (str): ``'fan_in'`` or ``'fan_out'``.
        nonlinearity (str): the nonlinearity's name (``'relu'``, ``'leaky_relu'``...).
        generator (Generator, optional): the random generator.
    """
    if 0 in tensor.shape:
        warnings.warn("Initializing zero-element tensors is a no-op")
        return tensor
    return normal_(tensor, 0.0, _kaiming_std(tensor, a, mode, nonlinearity), generator)


# Acklam's rational approximation of the standard normal quantile (relative error < 1.2e-9).
_A = (
    -3.969683028665376e01,
    2.209460984245205e02,
    -2.759285104469687e02,
    1.383577518672690e02,
    -3.066479806614716e01,
    2.506628277459239e00,
)
_B = (
    -5.447609879822406e01,
    1.615858368580409e02,
    -1.556989798598866e02,
    6.680131188771972e01,
    -1.328068155288572e01,
)
_C = (
    -7.784894002430293e-03,
    -3.223964580411365e-01,
    -2.400758277161838e00,
    -2.549732539343734e00,
    4.374664141464968e00,
    2.938163982698783e00,
)
_D = (7.784695709041462e-03, 3.224671290700398e-01, 2.445134137142996e00, 3.754408661907416e00)
_P_LOW = 0.02425


def _ndtri(p):
    """Standard normal quantile of probabilities ``p`` in (0, 1) (float64 array)."""
    out = np.empty_like(p)
    low, high = p < _P_LOW, p > 1 - _P_LOW
    mid = ~(low | high)
    q = p[mid] - 0.5
    r = q * q
    num = ((((_A[0] * r + _A[1]) * r + _A[2]) * r + _A[3]) * r + _A[4]) * r + _A[5]
    den = ((((_B[0] * r + _B[1]) * r + _B[2]) * r + _B[3]) * r + _B[4]) * r + 1
    out[mid] = q * num / den
    for mask, sign, tail in ((low, 1.0, p[low]), (high, -1.0, 1 - p[high])):
        q = np.sqrt(-2 * np.log(tail))
        num = ((((_C[0] * q + _C[1]) * q + _C[2]) * q + _C[3]) * q + _C[4]) * q + _C[5]
        den = (((_D[0] * q + _D[1]) * q + _D[2]) * q + _D[3]) * q + 1
        out[mask] = sign * num / den
    return out


def _ndtr(x):
    """Standard normal CDF of a float (exact in the tails through erfc)."""
    return 0.5 * math.erfc(-x / math.sqrt(2.0))


def trunc_normal_(
    tensor: Tensor,
    mean: float = 0.0,
    std: float = 1.0,
    a: float = -2.0,
    b: float = 2.0,
    generator: Optional[Generator] = None,
) -> Tensor:
    """Fills with N(mean, std^2) truncated to [a, b] (absolute bounds, not in units of std).

    Inverse-CDF sampling in float64: u ~ U(Phi(alpha), Phi(beta)), x = mean + std * Phi^-1(u).
    An interval in the upper tail is sampled mirrored in the lower one, where the CDF keeps
    its precision.

    Args:
        tensor (Tensor): the tensor to fill (in place).
        mean (float): the mean.
        std (float): the standard deviation.
        a (float): the lower cut-off.
        b (float): the upper cut-off.
        generator (Generator, optional): the random generator.
    """
    if mean < a - 2 * std or mean > b + 2 * std:
        warnings.warn(
            "mean is more than 2 std from [a, b] in nn.init.trunc_normal_. "
            "The distribution of values may be incorrect.",
            stacklevel=2,
        )
    if a > b:
        raise ValueError(f"trunc_normal_: expected a <= b, got a={a}, b={b}")
    alpha, beta = (a - mean) / std, (b - mean) / std
    flip = alpha > 0
    if flip:
        alpha, beta = -beta, -alpha
    lo, hi = _ndtr(alpha), _ndtr(beta)
    u = lo + (hi - lo) * _draw(tensor.shape, "uniform_", generator, 0.0, 1.0)
    z = _ndtri(np.clip(u, np.nextafter(0.0, 1.0), np.nextafter(1.0, 0.0)))
    if flip:
        z = -z
    return _fill_from_numpy(tensor, np.clip(mean + std * z, a, b))


def orthogonal_(tensor: Tensor, gain: float = 1, generator: Optional[Generator] = None) -> Tensor:
    """Fills with a (semi-)orthogonal matrix, viewed as (size(0), numel // size(0)), times
    ``gain`` (Saxe et al., 2013): QR of a Gaussian matrix, signs fixed so Q is uniformly
    distributed.

    Args:
        tensor (Tensor): the tensor to fill (in place).
        gain (float): the scaling factor.
        generator (Generator, optional): the random generator.
    """
    if tensor.dim() < 2:
        raise ValueError("Only tensors with 2 or more dimensions are supported")
    if tensor.numel() == 0:
        return tensor
    rows = tensor.shape[0]
    cols = tensor.numel() // rows
    flat = _draw((rows, cols), "normal_", generator, 0.0, 1.0)
    if rows < cols:
        flat = flat.T
    q, r = np.linalg.qr(flat)
    q = q * np.sign(np.diag(r))
    if rows < cols:
        q = q.T
    return _fill_from_numpy(tensor, gain * q.reshape(tuple(tensor.shape)))


def sparse_(
    tensor: Tensor, sparsity: float, std: float = 0.01, generator: Optional[Generator] = None
) -> Tensor:
    """Fills a 2-D tensor with N(0, std^2) values, then zeros ceil(sparsity * rows) random
    entries in every column (Martens, 2010).

    Args:
        tensor (Tensor): the tensor to fill (in place).
        sparsity (float): the fraction of each column set to zero.
        std (float): the standard deviation.
        generator (Generator, optional): the random generator.
    """
    if tensor.dim() != 2:
        raise ValueError("Only tensors with 2 dimensions are supported")
    rows, cols = tensor.shape
    num_zeros = int(math.ceil(sparsity * rows))
    w = _draw((rows, cols), "normal_", generator, 0.0, std)
    for col in range(cols):
        w[_rumus.randperm(rows, generator=generator).numpy()[:num_zeros], col] = 0
    return _fill_from_numpy(tensor, w)


def _deprecated(new):
    old = new.__name__[:-1]

    def deprecated_init(*args, **kwargs):
        warnings.warn(
            f"`nn.init.{old}` is now deprecated in favor of `nn.init.{new.__name__}`.",
            FutureWarning,
            stacklevel=2,
        )
        return new(*args, **kwargs)

    deprecated_init.__name__ = deprecated_init.__qualname__ = old
    deprecated_init.__doc__ = f"Deprecated: warns (FutureWarning) and calls ``{new.__name__}``."
    return deprecated_init


# PyTorch's deprecated spellings without the trailing underscore.
uniform = _deprecated(uniform_)
normal = _deprecated(normal_)
constant = _deprecated(constant_)
xavier_uniform = _deprecated(xavier_uniform_)
xavier_normal = _deprecated(xavier_normal_)
kaiming_uniform = _deprecated(kaiming_uniform_)
kaiming_normal = _deprecated(kaiming_normal_)
orthogonal = _deprecated(orthogonal_)
sparse = _deprecated(sparse_)
