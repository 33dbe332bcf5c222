"""Activation layers (module forms of the functions in rumus.nn.functional)."""

import warnings
from typing import Any, Optional

import rumus

from .. import functional as F
from .. import init
from ..parameter import Parameter
from .module import Module

__all__ = [
    "ReLU",
    "ReLU6",
    "LeakyReLU",
    "ELU",
    "GELU",
    "SiLU",
    "Mish",
    "Sigmoid",
    "Tanh",
    "Hardtanh",
    "Softplus",
    "Softmax",
    "LogSoftmax",
    "PReLU",
    "RReLU",
    "CELU",
    "SELU",
    "GLU",
    "Hardswish",
    "Hardsigmoid",
    "Hardshrink",
    "Softshrink",
    "Tanhshrink",
    "LogSigmoid",
    "Softmin",
    "Softmax2d",
    "Threshold",
    "Softsign",
]


def _inplace_repr(inplace):
    return "inplace=True" if inplace else ""


class ReLU(Module):
    """max(0, x).

    Args:
        inplace (bool): modify the input in place.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.relu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Hardtanh(Module):
    """x clamped to [min_val, max_val].

    Args:
        min_val (float): the lower bound.
        max_val (float): the upper bound.
        inplace (bool): modify the input in place.
    """

    def __init__(
        self,
        min_val: float = -1.0,
        max_val: float = 1.0,
        inplace: bool = False,
        min_value: Optional[float] = None,
        max_value: Optional[float] = None,
    ) -> None:
        super().__init__()
        # PyTorch's deprecated spellings of min_val / max_val
        if min_value is not None:
            warnings.warn(
                "keyword argument `min_value` is deprecated and rename to `min_val`",
                FutureWarning,
                stacklevel=2,
            )
            min_val = min_value
        if max_value is not None:
            warnings.warn(
                "keyword argument `max_value` is deprecated and rename to `max_val`",
                FutureWarning,
                stacklevel=2,
            )
            max_val = max_value
        if not max_val > min_val:
            raise AssertionError(
                f"Hardtanh: max_val ({max_val}) must be greater than min_val ({min_val})"
            )
        self.min_val = min_val
        self.max_val = max_val
        self.inplace = inplace

    def forward(self, input):
        return F.hardtanh(input, self.min_val, self.max_val, self.inplace)

    def extra_repr(self):
        return f"min_val={self.min_val}, max_val={self.max_val}" + (
            ", inplace=True" if self.inplace else ""
        )


class ReLU6(Hardtanh):
    """min(max(0, x), 6): a Hardtanh with bounds 0 and 6, as in PyTorch.

    Args:
        inplace (bool): modify the input in place.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__(0.0, 6.0, inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class LeakyReLU(Module):
    """x for x >= 0, negative_slope * x otherwise.

    Args:
        negative_slope (float): the slope for negative inputs.
        inplace (bool): modify the input in place.
    """

    def __init__(self, negative_slope: float = 1e-2, inplace: bool = False) -> None:
        super().__init__()
        self.negative_slope = negative_slope
        self.inplace = inplace

    def forward(self, input):
        return F.leaky_relu(input, self.negative_slope, self.inplace)

    def extra_repr(self):
        return f"negative_slope={self.negative_slope}" + (", inplace=True" if self.inplace else "")


class ELU(Module):
    """x for x > 0, alpha * (exp(x) - 1) otherwise.

    Args:
        alpha (float): the negative saturation value.
        inplace (bool): modify the input in place.
    """

    def __init__(self, alpha: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.elu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class GELU(Module):
    """x * Phi(x); approximate='tanh' uses the tanh approximation.

    Args:
        approximate (str): ``'none'`` (exact, with erf) or ``'tanh'``.
    """

    def __init__(self, approximate: str = "none") -> None:
        super().__init__()
        self.approximate = approximate

    def forward(self, input):
        return F.gelu(input, approximate=self.approximate)

    def extra_repr(self):
        return f"approximate={self.approximate!r}"


class SiLU(Module):
    """x * sigmoid(x).

    Args:
        inplace (bool): modify the input in place.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.silu(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Mish(Module):
    """x * tanh(softplus(x)).

    Args:
        inplace (bool): modify the input in place.
    """

    def __init__(self, inplace: bool = False) -> None:
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.mish(input, inplace=self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Sigmoid(Module):
    """1 / (1 + exp(-x))."""

    def forward(self, input):
        return F.sigmoid(input)


class Tanh(Module):
    """tanh(x)."""

    def forward(self, input):
        return F.tanh(input)


class Softplus(Module):
    """log(1 + exp(beta * x)) / beta, linear above beta * x > threshold.

    Args:
        beta (float): the sharpness.
        threshold (float): above ``beta * x > threshold`` the result is x.
    """

    def __init__(self, beta: float = 1.0, threshold: float = 20.0) -> None:
        super().__init__()
        self.beta = beta
        self.threshold = threshold

    def forward(self, input):
        return F.softplus(input, self.beta, self.threshold)

    def extra_repr(self):
        return f"beta={self.beta}, threshold={self.threshold}"


def _implicit_dim(name, ndim):
    # PyTorch's legacy rule for dim=None, kept with its deprecation warning.
    warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=3,
    )
    return 0 if ndim in (0, 1, 3) else 1


class Softmax(Module):
    """exp(x) / sum(exp(x)) along dim.

    Args:
        dim (int, optional): the dimension that sums to 1.
    """

    def __init__(self, dim: Optional[int] = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim if self.dim is not None else _implicit_dim("softmax", input.dim())
        return F.softmax(input, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class LogSoftmax(Module):
    """log(softmax(x)) along dim, computed stably.

    Args:
        dim (int, optional): the dimension.
    """

    def __init__(self, dim: Optional[int] = None) -> None:
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim if self.dim is not None else _implicit_dim("log_softmax", input.dim())
        return F.log_softmax(input, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class PReLU(Module):
    """LeakyReLU with a learnt slope: one shared (num_parameters=1) or one per channel (dim 1).

    Args:
        num_parameters (int): 1 (a shared slope) or the number of channels.
        init (float): the initial slope.
        device (str or device, optional): where to create the parameters.
        dtype (dtype, optional): the parameters' dtype.
    """

    def __init__(
        self, num_parameters: int = 1, init: float = 0.25, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        self.num_parameters = num_parameters
        self.init = init
        self.weight = Parameter(rumus.empty(num_parameters, device=device, dtype=dtype))
        self.reset_parameters()

    def reset_parameters(self):
        """Re-initializes the parameters as the constructor does (PyTorch's defaults)."""
        init.constant_(self.weight, self.init)

    def forward(self, input):
        weight = self.weight
        if self.num_parameters > 1:
            channel_dim = 1 if input.dim() >= 2 else 0
            channels = input.size(channel_dim) if input.dim() > 0 else 1
            if channels != self.num_parameters:
                raise RuntimeError(
                    f"Mismatch of parameter numbers and input channel size. Found parameter "
                    f"numbers = {self.num_parameters} and channel size = {channels}."
                )
            weight = weight.reshape((-1,) + (1,) * (input.dim() - channel_dim - 1))
        # where() gives slope `weight` at x == 0, like PyTorch's prelu backward.
        return rumus.where(input > 0, input, weight * input)

    def extra_repr(self):
        return f"num_parameters={self.num_parameters}"


class RReLU(Module):
    """Randomized leaky ReLU.

    Slopes are drawn from U(lower, upper) per element in training; in evaluation the slope
    is the fixed (lower + upper) / 2.

    Args:
        lower (float): the lower bound of the slope.
        upper (float): the upper bound of the slope.
        inplace (bool): overwrite the input.
    """

    def __init__(self, lower=1.0 / 8, upper=1.0 / 3, inplace=False):
        super().__init__()
        self.lower = lower
        self.upper = upper
        self.inplace = inplace

    def forward(self, input):
        return F.rrelu(input, self.lower, self.upper, self.training, self.inplace)

    def extra_repr(self):
        return f"lower={self.lower}, upper={self.upper}" + (
            ", inplace=True" if self.inplace else ""
        )


class CELU(Module):
    """max(0, x) + min(0, alpha * (exp(x / alpha) - 1)).

    Args:
        alpha (float): the alpha of the formula.
        inplace (bool): overwrite the input.
    """

    def __init__(self, alpha=1.0, inplace=False):
        super().__init__()
        self.alpha = alpha
        self.inplace = inplace

    def forward(self, input):
        return F.celu(input, self.alpha, self.inplace)

    def extra_repr(self):
        return f"alpha={self.alpha}" + (", inplace=True" if self.inplace else "")


class SELU(Module):
    """scale * elu(x, alpha) with the self-normalizing constants.

    Args:
        inplace (bool): overwrite the input.
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.selu(input, self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class GLU(Module):
    """The gated linear unit a * sigmoid(b), where a and b are the halves of the input along dim.

    Args:
        dim (int): the dimension to split (its size must be even).
    """

    def __init__(self, dim=-1):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        return F.glu(input, self.dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Hardswish(Module):
    """x * relu6(x + 3) / 6.

    Args:
        inplace (bool): overwrite the input.
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardswish(input, self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Hardsigmoid(Module):
    """relu6(x + 3) / 6.

    Args:
        inplace (bool): overwrite the input.
    """

    def __init__(self, inplace=False):
        super().__init__()
        self.inplace = inplace

    def forward(self, input):
        return F.hardsigmoid(input, self.inplace)

    def extra_repr(self):
        return _inplace_repr(self.inplace)


class Hardshrink(Module):
    """x where |x| > lambd, else 0.

    Args:
        lambd (float): the threshold.
    """

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.hardshrink(input, self.lambd)

    def extra_repr(self):
        return f"{self.lambd}"


class Softshrink(Module):
    """x - lambd above lambd, x + lambd below -lambd, 0 between.

    Args:
        lambd (float): the threshold (>= 0).
    """

    def __init__(self, lambd=0.5):
        super().__init__()
        self.lambd = lambd

    def forward(self, input):
        return F.softshrink(input, self.lambd)

    def extra_repr(self):
        return str(self.lambd)


class Tanhshrink(Module):
    """x - tanh(x)."""

    def forward(self, input):
        return F.tanhshrink(input)


class LogSigmoid(Module):
    """log(sigmoid(x)), computed as -softplus(-x)."""

    def forward(self, input):
        return F.logsigmoid(input)


class Softsign(Module):
    """x / (1 + |x|)."""

    def forward(self, input):
        return F.softsign(input)


class Threshold(Module):
    """x where x > threshold, else value.

    Args:
        threshold (float): the threshold.
        value (float): the replacement for elements at or below the threshold.
        inplace (bool): overwrite the input.
    """

    def __init__(self, threshold, value, inplace=False):
        super().__init__()
        self.threshold = threshold
        self.value = value
        self.inplace = inplace

    def forward(self, input):
        return F.threshold(input, self.threshold, self.value, self.inplace)

    def extra_repr(self):
        return f"threshold={self.threshold}, value={self.value}" + (
            ", inplace=True" if self.inplace else ""
        )


class Softmin(Module):
    """softmax(-x) along dim.

    Args:
        dim (int, optional): the dimension along which the outputs sum to 1 (when None,
            PyTorch's implicit choice, with a warning).
    """

    def __init__(self, dim=None):
        super().__init__()
        self.dim = dim

    def forward(self, input):
        dim = self.dim if self.dim is not None else _implicit_dim("softmin", input.dim())
        return F.softmin(input, dim)

    def extra_repr(self):
        return f"dim={self.dim}"


class Softmax2d(Module):
    """softmax over the channels at every location of a (N, C, H, W) or (C, H, W) input."""

    def forward(self, input):
        if input.dim() not in (3, 4):
            raise ValueError(
                f"Softmax2d: expected input to be 3D or 4D, got {input.dim()}D instead "
                f"(shape {list(input.shape)})"
            )
        return F.softmax(input, -3)


# PyTorch defines MultiheadAttention in activation.py; rumus keeps it with the
# Transformer (transformer.py does not import this file, so there is no cycle).
from .transformer import MultiheadAttention  # noqa: E402

__all__ += ["MultiheadAttention"]
