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

    def __init__(self, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> None:
        super().__init__()
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


# PyTorch defines MultiheadAttention in activation.py; rumus keeps it with the
# Transformer (transformer.py does not import this file, so there is no cycle).
from .transformer import MultiheadAttention  # noqa: E402

__all__ += ["MultiheadAttention"]
